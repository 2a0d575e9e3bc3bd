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
