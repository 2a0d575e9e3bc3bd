//! lcp: a Linux tap mirroring a sluice interface, as a routing daemon behind it would use it.
//! Linux pings out through sluice (its ARP goes out by the tap, the reply's copy and the echo
//! replies come back up), a TCP connection from a tester reaches a listener in Linux on the
//! router's address (as BGP would), link state follows both ways, and the tap goes when the
//! daemon stops.

mod common;
use common::routed::*;
use common::*;
use std::time::{Duration, Instant};

/// A TCP listener on ADDR:PORT that answers one line with it reversed, then exits.
const ECHO_SERVER: &str = "import socket,sys
s=socket.socket(socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)
s.bind((sys.argv[1],int(sys.argv[2])))
s.listen(1)
s.settimeout(20)
c,_=s.accept()
c.settimeout(10)
d=c.recv(100)
c.sendall(d[::-1])
c.close()
";

/// Connect to ADDR:PORT, send a word, print the answer.
const CLIENT: &str = "import socket,sys,time
for i in range(100):
    try:
        c=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=5)
        break
    except ConnectionRefusedError:
        time.sleep(0.1)
c.sendall(b'sluice')
print(c.recv(100).decode())
";

/// Join 224.0.0.5 on tap-d0 and print the protocol of the first OSPF (89) packet Linux gets.
const OSPF_LISTENER: &str = "import socket,struct
s=socket.socket(socket.AF_INET,socket.SOCK_RAW,89)
m=struct.pack('4s4si',socket.inet_aton('224.0.0.5'),socket.inet_aton('0.0.0.0'),socket.if_nametoindex('tap-d0'))
s.setsockopt(socket.IPPROTO_IP,socket.IP_ADD_MEMBERSHIP,m)
s.settimeout(10)
print(s.recv(2000)[9])
";

/// Send OSPF-like packets (protocol 89) to 224.0.0.5 from ADDR, TTL 1, for a few seconds.
const OSPF_SENDER: &str = "import socket,sys,time
s=socket.socket(socket.AF_INET,socket.SOCK_RAW,89)
s.setsockopt(socket.IPPROTO_IP,socket.IP_MULTICAST_IF,socket.inet_aton(sys.argv[1]))
s.setsockopt(socket.IPPROTO_IP,socket.IP_MULTICAST_TTL,1)
for i in range(40):
    s.sendto(b'hello, ospf',('224.0.0.5',0))
    time.sleep(0.1)
";

fn link_flags(ns: &Netns, dev: &str) -> Option<String> {
    let o = ns
        .exec("ip", &["-o", "link", "show", dev])
        .output()
        .unwrap();
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A listener in Linux (the DUT) on the router's address and `port` answers a client in
/// `tester` through the tap: what a BGP session does.
fn echo_through_the_tap(tester: &Netns, dut: &Netns, port: &str) {
    let mut server = dut
        .exec("python3", &["-c", ECHO_SERVER, D0_V4, port])
        .spawn()
        .unwrap();
    let client = tester
        .exec("python3", &["-c", CLIENT, D0_V4, port])
        .output()
        .unwrap();
    let _ = server.wait();
    assert_eq!(
        String::from_utf8_lossy(&client.stdout).trim(),
        "eciuls",
        "{}",
        String::from_utf8_lossy(&client.stderr)
    );
}

/// The routed lab for a tap test, with the DUT's stack kept off d0; `None` (the test does
/// not apply here) without root or, outside CI, without python3 for the listeners.
fn tap_lab(tag: &str) -> Option<(Netns, Netns, Netns)> {
    if !needs_root() {
        return None;
    }
    ensure_ping();
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !prerequisite(python, "python3 (for TCP listeners behind the tap)") {
        return None;
    }
    let (left, right, dut) = routed_lab(tag);
    kernel_off(&dut, "d0");
    Some((left, right, dut))
}

#[test]
fn linux_behind_a_tap_speaks_through_sluice() {
    let Some((left, right, dut)) = tap_lab("lcp") else {
        return;
    };
    // The tap takes the router's IPv6 address too: IPv6 must be on for new devices there.
    dut.sysctl("net.ipv6.conf.default.disable_ipv6", "0");
    dut.sysctl("net.ipv6.conf.default.accept_dad", "0");
    let dir = tmpdir("lcp");
    let (cfg, socket) = router_config(&dir, "[[lcp]]\ninterface = \"d0\"\nhost-if = \"tap-d0\"\n");
    let mut daemon = Daemon::start(&dut, &cfg, &socket);

    // The tap mirrors d0: its MAC, its MTU, its addresses.
    let flags = link_flags(&dut, "tap-d0").expect("tap-d0 made in the daemon's namespace");
    assert!(flags.contains(&mac_of(&dut, "d0")), "{flags}");
    assert!(flags.contains("mtu 1500"), "{flags}");
    let addrs = dut.ip(&["-o", "addr", "show", "dev", "tap-d0"]);
    let addrs = String::from_utf8_lossy(&addrs.stdout).into_owned();
    assert!(addrs.contains(&format!("{D0_V4}/24")), "{addrs}");
    assert!(addrs.contains(&format!("{D0_V6}/64")), "{addrs}");
    // Addresses given to d0 in sluice later follow onto the tap, and go with their deletion.
    let tap_addrs = || {
        let o = dut.ip(&["-o", "addr", "show", "dev", "tap-d0"]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    for (addr, shown) in [
        ("203.0.113.7/24", "203.0.113.7/24"),
        ("2001:db8:77::7/64", "2001:db8:77::7/64"),
    ] {
        ctl(&socket, &format!("set interface ip address d0 {addr}")).unwrap();
        assert!(
            tap_addrs().contains(shown),
            "{addr} on the tap: {}",
            tap_addrs()
        );
        ctl(&socket, &format!("set interface ip address del d0 {addr}")).unwrap();
        assert!(!tap_addrs().contains(shown), "{addr} gone: {}", tap_addrs());
    }

    // Linux pings a tester through sluice: its ARP and echo requests leave by the tap and d0,
    // the tester's ARP reply (a copy) and echo replies come back up. IPv6 likewise, by ND.
    let (ok, out) = ping(&dut, &["-c", "2", "-W", "2", "-I", "tap-d0", T0_V4]);
    assert!(ok, "Linux's ping through the tap: {out}");
    let (ok, out) = ping(&dut, &["-6", "-c", "2", "-W", "2", "-I", "tap-d0", T0_V6]);
    assert!(ok, "Linux's ping6 through the tap: {out}");
    // The router still answers pings to its address itself.
    let (ok, out) = ping(&left, &["-c", "1", "-W", "2", D0_V4]);
    assert!(ok, "{out}");

    // A TCP connection from the tester to a listener in Linux on the router's address (what
    // a BGP session is): punted up, answered down.
    echo_through_the_tap(&left, &dut, "1790");

    // Link-local multicast (OSPF's 224.0.0.5) goes up to Linux too.
    let listener = dut
        .exec("python3", &["-c", OSPF_LISTENER])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut sender = left
        .exec("python3", &["-c", OSPF_SENDER, T0_V4])
        .spawn()
        .unwrap();
    let got = listener.wait_with_output().unwrap();
    let _ = sender.kill();
    let _ = sender.wait();
    assert_eq!(
        String::from_utf8_lossy(&got.stdout).trim(),
        "89",
        "OSPF to 224.0.0.5 reached Linux behind the tap"
    );

    let errors = ctl_json(&socket, "show errors");
    let count = |reason: &str| -> u64 {
        errors
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"] == "host-punt" && e["reason"] == reason)
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    assert!(count("arp copied to the host (lcp)") >= 1, "{errors}");
    assert!(count("ip4 to the host (lcp)") >= 4, "{errors}");
    assert!(count("ip6 to the host (lcp)") >= 2, "{errors}");
    assert!(
        count("neighbour discovery copied to the host (lcp)") >= 1,
        "{errors}"
    );
    let lcp = ctl_json(&socket, "show lcp");
    let pair = &lcp["pairs"][0];
    assert_eq!(pair["host_if"], "tap-d0");
    assert!(pair["to_host"].as_u64().unwrap() >= 7, "{lcp}");
    assert!(pair["from_host"].as_u64().unwrap() >= 6, "{lcp}");
    assert_eq!(pair["to_host_errors"], 0, "{lcp}");

    // Link state: sluice's admin state sets the tap's; Linux's change sets sluice's.
    ctl(&socket, "set interface state d0 down").unwrap();
    wait_for("tap-d0 down", || {
        !link_flags(&dut, "tap-d0").unwrap().contains(",UP")
    });
    dut.ip(&["link", "set", "tap-d0", "up"]);
    wait_for("d0 up again", || {
        ctl_json(&socket, "show interface d0")
            .to_string()
            .contains("\"state\":\"up\"")
    });
    let (ok, out) = ping(&dut, &["-c", "1", "-W", "2", "-I", "tap-d0", T0_V4]);
    assert!(ok, "after the link came back: {out}");

    // A second pair by CLI, a bad one, and the pair's removal.
    let e = ctl(&socket, "lcp create d0 host-if tap-x").unwrap_err();
    assert!(e.contains("already has tap 'tap-d0'"), "{e}");
    let e = ctl(&socket, "lcp create d1 host-if bad/name").unwrap_err();
    assert!(e.contains("not a Linux interface name"), "{e}");
    ctl(&socket, "lcp create d1 host-if tap-d1").unwrap();
    assert!(link_flags(&dut, "tap-d1").is_some());
    ctl(&socket, "lcp delete d1").unwrap();
    assert!(
        link_flags(&dut, "tap-d1").is_none(),
        "the tap goes with its pair"
    );
    // A tap in another namespace, with a listener of its own.
    let line = format!("lcp create d1 host-if tap-n1 netns {}", right.name);
    ctl(&socket, &line).unwrap();
    assert!(
        link_flags(&right, "tap-n1").is_some(),
        "tap-n1 in {}",
        right.name
    );
    assert!(link_flags(&dut, "tap-n1").is_none());
    let lcp = ctl_json(&socket, "show lcp");
    assert_eq!(lcp["netlink"].as_array().unwrap().len(), 2, "{lcp}");
    ctl(&socket, "lcp delete d1").unwrap();
    wait_for("tap-n1 to go with its pair", || {
        link_flags(&right, "tap-n1").is_none()
    });

    // `save` then `apply` of the saved file changes nothing, lcp pairs included; a file with
    // one more pair makes its tap, and the saved file again takes it away.
    let saved = dir.join("saved.toml");
    ctl(&socket, &format!("save {}", saved.display())).unwrap();
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("[[lcp]]"), "{text}");
    let out = ctl(&socket, &format!("apply {}", saved.display())).unwrap();
    assert!(out.contains("no change"), "{out}");
    let more = dir.join("more.toml");
    let pair = "[[lcp]]\ninterface = \"d1\"\nhost-if = \"tap-d1\"\n";
    std::fs::write(&more, text + pair).unwrap();
    ctl(&socket, &format!("apply {}", more.display())).unwrap();
    assert!(
        link_flags(&dut, "tap-d1").is_some(),
        "apply made the pair's tap"
    );
    ctl(&socket, &format!("apply {}", saved.display())).unwrap();
    assert!(link_flags(&dut, "tap-d1").is_none(), "apply took it away");

    assert!(daemon.stop(), "daemon exits cleanly");
    assert!(
        link_flags(&dut, "tap-d0").is_none(),
        "the tap goes with the daemon"
    );
}

/// Try one TCP connection to ADDR:PORT for 2 s; print `connected` or the error's name.
const ONE_TRY: &str = "import socket,sys
try:
    socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=2)
    print('connected')
except Exception as e:
    print(type(e).__name__)
";

/// `[punt] allow` lets up only what it names: a listener in Linux on an allowed port is
/// reached, one on another port is not (its SYNs are dropped and counted), and Linux still
/// resolves its neighbours and pings through the tap (ARP copies and ICMP allowed).
#[test]
fn the_punt_policy_lets_up_only_what_it_allows() {
    let Some((left, _right, dut)) = tap_lab("lpp") else {
        return;
    };
    let dir = tmpdir("lcp-policy");
    let (cfg, socket) = router_config(
        &dir,
        "[[lcp]]\ninterface = \"d0\"\nhost-if = \"tap-d0\"\n\
         [punt]\nrate = 500\nallow = [\"tcp/1790\", \"arp\", \"icmp\"]\n",
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let lcp = ctl_json(&socket, "show lcp");
    // `rate` is every class's; each keeps its own burst.
    assert_eq!(
        lcp["punt"]["classes"]["tcp-udp"],
        serde_json::json!({"rate": 500, "burst": 200}),
        "{lcp}"
    );
    assert_eq!(
        lcp["punt"]["allow"],
        serde_json::json!(["tcp/1790", "arp", "icmp"]),
        "{lcp}"
    );
    let (ok, out) = ping(&dut, &["-c", "2", "-W", "2", "-I", "tap-d0", T0_V4]);
    assert!(
        ok,
        "Linux's ping through the tap (arp and icmp allowed): {out}"
    );

    let mut refused = dut
        .exec("python3", &["-c", ECHO_SERVER, D0_V4, "2222"])
        .spawn()
        .unwrap();
    echo_through_the_tap(&left, &dut, "1790");
    let other = left
        .exec("python3", &["-c", ONE_TRY, D0_V4, "2222"])
        .output()
        .unwrap();
    let _ = refused.kill();
    let _ = refused.wait();
    let other = String::from_utf8_lossy(&other.stdout).trim().to_string();
    assert_ne!(other, "connected", "port 2222 is outside the policy");
    let errors = ctl_json(&socket, "show errors");
    let refused_count: u64 = errors
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["node"] == "host-punt" && e["reason"] == "outside the punt policy (dropped)")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert!(refused_count >= 1, "{errors}");
    assert!(daemon.stop(), "daemon exits cleanly");
}

/// `show ip fib summary`'s IPv4 route count.
fn v4_routes(socket: &std::path::Path) -> u64 {
    ctl_json(socket, "show ip fib summary")["v4_routes"]
        .as_u64()
        .unwrap()
}

/// The check: 100 000 IPv4 routes added in Linux via the tap with `ip -batch` reach
/// sluice's FIB (and forward traffic), and leave it when deleted.
#[test]
fn routes_linux_adds_via_the_tap_reach_the_fib_and_leave_it() {
    if !needs_root() {
        return;
    }
    ensure_ping();
    let (left, right, dut) = routed_lab("lcpr");
    let dir = tmpdir("lcp-routes");
    let (cfg, socket) = router_config(&dir, "[[lcp]]\ninterface = \"d1\"\nhost-if = \"tap-d1\"\n");
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let base = v4_routes(&socket);
    let n = 100_000u32;
    let mut text = String::new();
    for k in 0..n {
        text.push_str(&format!(
            "route add {}.{}.{}.0/24 via {T1_V4} dev tap-d1\n",
            10 + (k >> 16),
            (k >> 8) & 0xff,
            k & 0xff
        ));
    }
    let add = dir.join("add.batch");
    std::fs::write(&add, &text).unwrap();
    std::fs::write(
        dir.join("del.batch"),
        text.replace("route add", "route del"),
    )
    .unwrap();

    let t = Instant::now();
    let o = dut.ip(&["-batch", add.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let kernel = t.elapsed();
    let deadline = Instant::now() + Duration::from_secs(60);
    while v4_routes(&socket) < base + n as u64 {
        assert!(
            Instant::now() < deadline,
            "sluice has {} of {n} routes",
            v4_routes(&socket) - base
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "{n} routes: in the kernel after {:.2} s, in sluice's FIB after {:.2} s",
        kernel.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(v4_routes(&socket), base + n as u64);
    let route = ctl(&socket, "show ip fib 10.1.2.3").unwrap();
    assert!(route.contains(T1_V4) && route.contains("d1"), "{route}");

    // Traffic follows them: the right tester holds 10.1.2.3, the left pings it through
    // sluice.
    right.ip(&["addr", "add", "10.1.2.3/32", "dev", "lo"]);
    let (ok, out) = ping(&left, &["-c", "2", "-W", "2", "10.1.2.3"]);
    assert!(ok, "{out}");

    // The ping made sluice learn both testers (host routes of their own): the count to
    // come back to is the one before the deletes, less the deleted.
    let end = v4_routes(&socket) - n as u64;
    let o = dut.ip(&["-batch", dir.join("del.batch").to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let deadline = Instant::now() + Duration::from_secs(60);
    while v4_routes(&socket) != end {
        assert!(
            Instant::now() < deadline,
            "{} routes left",
            v4_routes(&socket) - end
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(daemon.stop());
}

/// On the tester's port (no 802.1Q devices in this kernel): wait for an ARP request tagged
/// VLAN 100 (the tag, which the kernel takes off into the packet's metadata, read from
/// PACKET_AUXDATA), print it, and answer it with a tagged ARP reply from MAC argv[1].
const TAGGED_ARP_PEER: &str = "import socket,struct,sys
s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW,socket.htons(3))
s.bind(('t0',0))
s.setsockopt(263,8,1)
s.settimeout(10)
while True:
    f,anc,_,_=s.recvmsg(2000,socket.CMSG_SPACE(24))
    vid=None
    for lvl,typ,data in anc:
        if lvl==263 and typ==8:
            st,ln,sn,mac,net,tci,tpid=struct.unpack('IIIHHHH',data[:20])
            if st & (1<<4): vid=tci&0xfff
    if f[12:14]==b'\\x81\\x00':
        vid=int.from_bytes(f[14:16],'big')&0xfff; f=f[:12]+f[16:]
    if vid==100 and f[12:14]==b'\\x08\\x06' and f[20:22]==b'\\x00\\x01':
        break
print('tagged arp request for', socket.inet_ntoa(f[38:42]))
me=bytes.fromhex(sys.argv[1].replace(':',''))
arp=f[14:42]
reply=f[6:12]+me+b'\\x81\\x00\\x00\\x64\\x08\\x06'+bytes.fromhex('0001080006040002')+me+arp[24:28]+arp[8:14]+arp[14:18]
s.send(reply)
";

/// A sub-interface's tap: Linux's ARP leaves through d0 tagged VLAN 100, the tagged reply
/// comes back up to the tap untagged and Linux learns the neighbour.
#[test]
fn a_sub_interface_tap_sends_tagged_and_hears_untagged() {
    if !needs_root() {
        return;
    }
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !prerequisite(python, "python3 (a tagged ARP peer)") {
        return;
    }
    let (left, _right, dut) = routed_lab("lcpv");
    let dir = tmpdir("lcp-vlan");
    let (cfg, socket) = router_config(
        &dir,
        "[[subinterface]]\nparent = \"d0\"\nid = 100\ndot1q = 100\n\
         address = [\"10.100.0.1/24\"]\n\
         [[lcp]]\ninterface = \"d0.100\"\nhost-if = \"tap-v100\"\n",
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let addrs = dut.ip(&["-o", "addr", "show", "dev", "tap-v100"]);
    assert!(String::from_utf8_lossy(&addrs.stdout).contains("10.100.0.1/24"));
    let tester_mac = mac_of(&left, "t0");
    let peer = left
        .exec("python3", &["-c", TAGGED_ARP_PEER, &tester_mac])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Linux resolves 10.100.0.2 through the tap (the ping itself goes unanswered).
    let _ = ping(
        &dut,
        &["-c", "2", "-W", "1", "-I", "tap-v100", "10.100.0.2"],
    );
    let out = peer.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "tagged arp request for 10.100.0.2"
    );
    wait_for("Linux to learn the neighbour from the tagged reply", || {
        let n = dut.ip(&["neigh", "show", "dev", "tap-v100"]);
        String::from_utf8_lossy(&n.stdout).contains(&tester_mac)
    });
    let e = ctl(&socket, "lcp create d0.100 host-if tap-x").unwrap_err();
    assert!(e.contains("already has tap"), "{e}");
    assert!(daemon.stop());
}
