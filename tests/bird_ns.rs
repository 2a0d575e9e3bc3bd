//! BIRD 2 as sluice's control plane, as an operator would run it: BIRD in the DUT namespace
//! behind the taps that mirror sluice's ports (`[[lcp]]`) exports its routes into Linux's
//! main table and sluice learns them over netlink. A static protocol announces routes via the
//! right tester and a BGP session with a second BIRD in the left tester's namespace, which
//! crosses sluice's punt path, brings routes via the left tester; traffic follows both, a
//! withdrawal leaves the FIB, and the session stays up.

mod common;
use common::routed::*;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Routes the DUT's static protocol announces (IPv4 /24s via the right tester, IPv6 /64s).
const STATIC4: u32 = 10_000;
const STATIC6: u32 = 1_000;
/// Routes the left tester's BIRD announces over BGP.
const BGP4: u32 = 1_000;

/// A BIRD in a namespace, stopped when dropped.
struct Bird {
    child: Child,
    socket: PathBuf,
    pid: PathBuf,
}

impl Bird {
    fn start(ns: &Netns, dir: &Path, name: &str, config: &str) -> Bird {
        let conf = dir.join(format!("{name}.conf"));
        std::fs::write(&conf, config).unwrap();
        let socket = dir.join(format!("{name}.ctl"));
        let pid = dir.join(format!("{name}.pid"));
        let child = ns
            .exec(
                "bird",
                &[
                    "-f",
                    "-c",
                    conf.to_str().unwrap(),
                    "-s",
                    socket.to_str().unwrap(),
                    "-P",
                    pid.to_str().unwrap(),
                ],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let bird = Bird { child, socket, pid };
        wait_for(&format!("bird {name} to answer"), 10, || {
            bird.birdc("show status").contains("Daemon is up")
        });
        bird
    }

    fn birdc(&self, line: &str) -> String {
        let mut args = vec!["-s", self.socket.to_str().unwrap()];
        args.extend(line.split_whitespace());
        let o = std::process::Command::new("birdc")
            .args(&args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

impl Drop for Bird {
    fn drop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(&self.pid)
            .ok()
            .filter(|p| !p.trim().is_empty())
        {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", pid.trim()])
                .status();
        }
        let _ = self.child.wait();
    }
}

fn wait_for(what: &str, seconds: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn fib_counts(socket: &Path) -> (u64, u64) {
    let v = ctl_json(socket, "show ip fib summary");
    (
        v["v4_routes"].as_u64().unwrap(),
        v["v6_routes"].as_u64().unwrap(),
    )
}

/// The DUT's BIRD: the kernel protocols export everything into the main table; static
/// routes via the right tester; a BGP session with the left tester.
fn dut_config(dir: &Path) -> String {
    let mut c = format!(
        "log \"{}\" all;\nrouter id {D0_V4};\n\
         protocol device {{ scan time 1; }}\n\
         protocol kernel {{ ipv4 {{ import none; export all; }}; }}\n\
         protocol kernel {{ ipv6 {{ import none; export all; }}; }}\n\
         protocol bgp left {{ local {D0_V4} as 65000; neighbor {T0_V4} as 65001; \
         hold time 9; ipv4 {{ import all; export none; }}; }}\n\
         protocol static static4 {{ ipv4;\n",
        dir.join("dut.log").display()
    );
    for k in 0..STATIC4 {
        c.push_str(&format!(
            "  route {}.{}.{}.0/24 via {T1_V4};\n",
            10 + (k >> 16),
            (k >> 8) & 0xff,
            k & 0xff
        ));
    }
    c.push_str("}\nprotocol static static6 { ipv6;\n");
    for k in 0..STATIC6 {
        c.push_str(&format!("  route 2001:db8:100:{k:x}::/64 via {T1_V6};\n"));
    }
    c.push_str("}\n");
    c
}

/// The left tester's BIRD: blackhole routes of its own, announced over BGP (with itself as
/// the next hop, as eBGP does).
fn left_config(dir: &Path) -> String {
    let mut c = format!(
        "log \"{}\" all;\nrouter id {T0_V4};\nprotocol device {{ scan time 1; }}\n\
         protocol bgp dut {{ local {T0_V4} as 65001; neighbor {D0_V4} as 65000; \
         hold time 9; ipv4 {{ import none; export all; }}; }}\n\
         protocol static {{ ipv4;\n",
        dir.join("left.log").display()
    );
    for k in 0..BGP4 {
        c.push_str(&format!(
            "  route 172.20.{}.{}/32 blackhole;\n",
            k >> 8,
            k & 0xff
        ));
    }
    c.push_str("}\n");
    c
}

#[test]
fn bird_routes_reach_sluice_by_static_and_by_bgp_through_the_punt_path() {
    if !needs_root() {
        return;
    }
    ensure_ping();
    let bird = std::process::Command::new("bird")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !prerequisite(bird, "bird (Debian's bird2)") {
        return;
    }
    let (left, right, dut) = routed_lab("bird");
    // The taps take the ports' IPv6 addresses too.
    dut.sysctl("net.ipv6.conf.default.disable_ipv6", "0");
    dut.sysctl("net.ipv6.conf.default.accept_dad", "0");
    let dir = tmpdir("bird");
    let (cfg, socket) = router_config(
        &dir,
        "[[lcp]]\ninterface = \"d0\"\nhost-if = \"tap-d0\"\n\
         [[lcp]]\ninterface = \"d1\"\nhost-if = \"tap-d1\"\n",
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let base = fib_counts(&socket);

    // Static routes: announced, in sluice's FIB, forwarding.
    let t = Instant::now();
    let dut_bird = Bird::start(&dut, &dir, "dut", &dut_config(&dir));
    let left_bird = Bird::start(&left, &dir, "left", &left_config(&dir));
    wait_for("the static routes in sluice's FIB", 60, || {
        let (v4, v6) = fib_counts(&socket);
        v4 >= base.0 + STATIC4 as u64 && v6 >= base.1 + STATIC6 as u64
    });
    eprintln!(
        "{STATIC4} + {STATIC6} static routes in sluice's FIB {:.2} s after BIRD started",
        t.elapsed().as_secs_f64()
    );
    let route = ctl(&socket, "show ip fib 10.1.2.3").unwrap();
    assert!(route.contains(T1_V4) && route.contains("d1"), "{route}");
    let route = ctl(&socket, "show ip fib 2001:db8:100:3e7::1").unwrap();
    assert!(route.contains(T1_V6), "{route}");
    right.ip(&["addr", "add", "10.1.2.3/32", "dev", "lo"]);
    let (ok, out) = ping(&left, &["-c", "2", "-W", "2", "10.1.2.3"]);
    assert!(ok, "through a route BIRD announced: {out}");

    // BGP: the session crosses sluice (punted up to tap-d0, sent down through d0), and the
    // left tester's routes arrive via it.
    wait_for("the BGP session", 30, || {
        dut_bird
            .birdc("show protocols left")
            .contains("Established")
    });
    wait_for("the BGP routes in sluice's FIB", 30, || {
        fib_counts(&socket).0 >= base.0 + (STATIC4 + BGP4) as u64
    });
    let route = ctl(&socket, "show ip fib 172.20.3.7").unwrap();
    assert!(route.contains(T0_V4) && route.contains("d0"), "{route}");
    left.ip(&["addr", "add", "172.20.3.7/32", "dev", "lo"]);
    let (ok, out) = ping(&right, &["-c", "2", "-W", "2", "172.20.3.7"]);
    assert!(ok, "through a route learnt by BGP: {out}");

    // A withdrawal leaves sluice's FIB.
    let before = fib_counts(&socket);
    let t = Instant::now();
    assert!(dut_bird.birdc("disable static4").contains("disabled"));
    wait_for("the withdrawal", 60, || {
        fib_counts(&socket).0 == before.0 - STATIC4 as u64
    });
    eprintln!(
        "{STATIC4} routes withdrawn from sluice's FIB in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let route = ctl(&socket, "show ip fib 10.1.2.3").unwrap();
    assert!(!route.contains(T1_V4), "{route}");

    // The session outlives more than its hold time (9 s) with keepalives through sluice.
    std::thread::sleep(Duration::from_secs(10));
    let state = dut_bird.birdc("show protocols all left");
    assert!(state.contains("Established"), "{state}");
    let lcp = ctl_json(&socket, "show lcp");
    assert_eq!(lcp["netlink"][0]["overflows"], 0, "{lcp}");
    drop(left_bird);
    drop(dut_bird);
    assert!(daemon.stop());
}

/// Send TCP SYNs from SRC to DST:PORT at PPS packets a second for SECS seconds by a raw
/// socket (any source address, so a stranger can be played), then print how many were sent.
const SYN_FLOOD: &str = "import socket,struct,sys,time
src,dst,port,pps,secs=sys.argv[1],sys.argv[2],int(sys.argv[3]),int(sys.argv[4]),float(sys.argv[5])
s=socket.socket(socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_RAW)
def csum(b):
    t=sum(struct.unpack('!%dH'%(len(b)//2),b))
    while t>>16: t=(t&0xffff)+(t>>16)
    return ~t&0xffff
a,d=socket.inet_aton(src),socket.inet_aton(dst)
pkts=[]
for k in range(256):
    tcp=struct.pack('!HHIIBBHHH',40000+k,port,k,0,5<<4,2,65535,0,0)
    c=csum(a+d+struct.pack('!BBH',0,6,20)+tcp)
    tcp=tcp[:16]+struct.pack('!H',c)+tcp[18:]
    pkts.append(struct.pack('!BBHHHBBH4s4s',0x45,0,40,0,0,64,6,0,a,d)+tcp)
sent=0
start=time.monotonic()
while True:
    now=time.monotonic()
    if now-start>=secs: break
    due=int((now-start)*pps)
    while sent<due:
        s.sendto(pkts[sent&255],(dst,0))
        sent+=1
    time.sleep(0.0005)
print(sent)
";

/// Offered SYNs a second, and how long each flood lasts (past BGP's 9 s hold time): 60
/// times the punt rate the test gives (more only starves BIRD of CPU on a 2-core machine).
const FLOOD_PPS: u64 = 3_000;
const FLOOD_SECS: u64 = 15;

/// A BGP session's `show protocols` line: (state, since).
fn bgp_state(bird: &Bird, name: &str) -> (String, String) {
    let out = bird.birdc(&format!("show protocols {name}"));
    let line = out
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_default();
    let f: Vec<&str> = line.split_whitespace().collect();
    (
        f.get(5..).map(|s| s.join(" ")).unwrap_or_default(),
        f.get(4).map(|s| s.to_string()).unwrap_or_default(),
    )
}

/// host-punt's count of `reason` in `show errors`.
fn punt_count(socket: &Path, reason: &str) -> u64 {
    ctl_json(socket, "show errors")
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["node"] == "host-punt" && e["reason"] == reason)
        .map(|e| e["count"].as_u64().unwrap())
        .sum()
}

/// A flood, stopped if the test fails before it ends.
struct Flood(Option<Child>);

impl Drop for Flood {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A `show protocols` time of day, HH:MM:SS.mmm, in milliseconds (0 when unreadable).
fn millis(t: &str) -> u64 {
    let mut parts = t.split([':', '.']).map(|p| p.parse::<u64>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    ((next() * 60 + next()) * 60 + next()) * 1000 + next()
}

/// Flood from `from` while the session lives; it must stay Established throughout, its
/// "since" unchanged.
fn flood_keeps_the_session(from: &Netns, bird: &Bird, src: &str, port: u16) -> u64 {
    // A session just (re)established changes its "since" once more as its channels come up:
    // start from one that has held still for a second.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (state, since) = loop {
        let before = bgp_state(bird, "left");
        std::thread::sleep(Duration::from_secs(1));
        let after = bgp_state(bird, "left");
        if before == after || Instant::now() > deadline {
            break after;
        }
    };
    assert!(state.contains("Established"), "{state}");
    let (pps, secs) = (FLOOD_PPS.to_string(), FLOOD_SECS.to_string());
    let mut flood = Flood(Some(
        from.exec(
            "python3",
            &["-c", SYN_FLOOD, src, D0_V4, &port.to_string(), &pps, &secs],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap(),
    ));
    let end = Instant::now() + Duration::from_secs(FLOOD_SECS + 1);
    while Instant::now() < end {
        let now = bgp_state(bird, "left");
        // BIRD may restamp "since" by a millisecond as the session's channels settle; a
        // session that was lost and made again is seconds later (9 s hold time, then Connect).
        assert!(
            now.0.contains("Established") && millis(&now.1).abs_diff(millis(&since)) < 1000,
            "BGP session lost under a SYN flood to port {port} from {src}: {now:?}, up since {since}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let out = flood.0.take().unwrap().wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Item 5 of issue 33: a SYN flood at the router's address, 200 times the punt rate, first
/// to another port from the peer's own address, then to tcp/179 from a stranger on the link,
/// does not take down a BGP session with a configured peer (`[punt] peers`): the floods empty
/// the `tcp-udp` and `routing` buckets, the peer's segments pass in `protected`. With one
/// bucket for everything (before classes) the session's segments lost the race and its hold
/// timer expired.
#[test]
fn a_peers_bgp_session_outlives_syn_floods_at_the_router() {
    if !needs_root() {
        return;
    }
    let have = |cmd: &str, arg: &str| {
        std::process::Command::new(cmd)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !prerequisite(have("bird", "--version"), "bird (Debian's bird2)")
        || !prerequisite(have("python3", "--version"), "python3 (the SYN flood)")
        || !prerequisite(have("nft", "--version"), "nft (the DUT's stack off d0)")
    {
        return;
    }
    let (left, _right, dut) = routed_lab("bfl");
    // Only sluice sees what arrives on d0: the session and the floods cross the punt path.
    kernel_off(&dut, "d0");
    let dir = tmpdir("bird-flood");
    let (cfg, socket) = router_config(
        &dir,
        &format!(
            "[[lcp]]\ninterface = \"d0\"\nhost-if = \"tap-d0\"\n\
             [punt]\nrate = 50\nburst = 5\npeers = [\"{T0_V4}\"]\n"
        ),
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let session = |local: &str, las: u32, peer: &str, pas: u32, export: &str| {
        format!(
            "router id {local};\nprotocol device {{ scan time 1; }}\n\
             protocol bgp left {{ local {local} as {las}; neighbor {peer} as {pas}; \
             hold time 9; ipv4 {{ import all; export {export}; }}; }}\n"
        )
    };
    let dut_bird = Bird::start(
        &dut,
        &dir,
        "dut",
        &(session(D0_V4, 65000, T0_V4, 65001, "none")
            + "protocol kernel { ipv4 { import none; export all; }; }\n"),
    );
    let left_bird = Bird::start(
        &left,
        &dir,
        "left",
        &(session(T0_V4, 65001, D0_V4, 65000, "all")
            + "protocol static { ipv4; route 172.20.0.0/16 blackhole; }\n"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bgp_state(&dut_bird, "left").0.contains("Established") {
        assert!(
            Instant::now() < deadline,
            "no BGP session: {}\n{}\n{}",
            dut_bird.birdc("show protocols all left"),
            left_bird.birdc("show protocols all left"),
            ctl(&socket, "show errors").unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    wait_for("the peer's route in sluice's FIB", 30, || {
        ctl(&socket, "show ip fib 172.20.1.1").is_ok_and(|r| r.contains(T0_V4))
    });
    // At the test's rate the session's first exchange may have lost a few segments; the
    // floods must not cost it any more.
    let limit = |class: &str| format!("punt rate limit exceeded: {class} (dropped)");
    let protected = punt_count(&socket, &limit("protected"));

    // To a closed port, from the peer's own address: other TCP.
    let sent = flood_keeps_the_session(&left, &dut_bird, T0_V4, 22);
    let dropped = punt_count(&socket, &limit("tcp-udp"));
    eprintln!("{sent} SYNs to port 22: {dropped} dropped in class tcp-udp");
    assert!(dropped > sent / 2, "the flood exceeded its class's rate");

    // To tcp/179, from a host on the link that is not a peer: routing, not protected.
    let sent = flood_keeps_the_session(&left, &dut_bird, "192.0.2.99", 179);
    let dropped = punt_count(&socket, &limit("routing"));
    eprintln!("{sent} SYNs to port 179 from a stranger: {dropped} dropped in class routing");
    assert!(dropped > sent / 2, "the flood exceeded its class's rate");
    assert_eq!(punt_count(&socket, &limit("protected")), protected);
    drop(left_bird);
    drop(dut_bird);
    assert!(daemon.stop());
}
