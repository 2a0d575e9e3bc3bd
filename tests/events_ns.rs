//! Events caused by the kernel and by traffic (docs/api.md "Events"), in namespaces of the
//! test's own making: a route Linux adds behind an lcp tap is a `route` event with source
//! `netlink` (and its delete one too); a host that ARPs for the router is a neighbour
//! `learnt` from traffic and aged out; UDP flows through a permit+reflect ACL that fill a
//! small session table are `sessions` events `high` and then `full`.

mod common;
use common::routed::*;
use common::*;

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Send one UDP datagram to ADDR:7 from each of N source ports (20000 on), waiting briefly
/// for its echo: N flows, each answered while the session table has room.
const UDP_FLOWS: &str = "import socket,sys
for i in range(int(sys.argv[2])):
    s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
    s.bind(('',20000+i))
    s.settimeout(0.05)
    s.sendto(b'x',(sys.argv[1],7))
    try:
        s.recv(10)
    except socket.timeout:
        pass
    s.close()
";

/// Echo UDP on port 7 until 15 s pass without a datagram.
const UDP_ECHO: &str = "import socket
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
s.bind(('',7))
s.settimeout(15)
try:
    while True:
        d,a=s.recvfrom(100)
        s.sendto(d,a)
except socket.timeout:
    pass
";

/// A watching connection.
struct Watcher(BufReader<UnixStream>);

impl Watcher {
    fn start(sock: &Path, line: &str) -> Watcher {
        let s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        (&s).write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        let mut first = String::new();
        r.read_line(&mut first).unwrap();
        assert!(first.contains("\"ok\":true"), "{first}");
        Watcher(r)
    }

    /// Events until one for which `want` holds (panics after 20 s with what came).
    fn until(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            let mut l = String::new();
            let n = self.0.read_line(&mut l).unwrap_or(0);
            assert!(
                n > 0,
                "no {what} event (stream ended or timed out); saw {seen:?}"
            );
            let e: Value = serde_json::from_str(&l).unwrap();
            if want(&e) {
                return e;
            }
            seen.push(e);
        }
        panic!("no {what} event; saw {seen:?}");
    }
}

#[test]
fn kernel_routes_traffic_neighbours_and_a_full_session_table_are_events() {
    if !needs_root() {
        return;
    }
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !prerequisite(python, "python3 (to send the UDP flows)") {
        return;
    }
    ensure_ping();
    let (left, right, dut) = routed_lab("evn");
    let dir = tmpdir("events-ns");
    let (cfg, socket) = router_config(
        &dir,
        "[[lcp]]\ninterface = \"d1\"\nhost-if = \"tap-d1\"\n\
         [[acl]]\nname = \"in\"\nrules = [\"permit+reflect proto udp\", \
         \"permit+reflect proto icmp\", \"permit\"]\n\
         [[acl]]\nname = \"out\"\nrules = [\"permit ipv6\"]\n\
         [[acl-input]]\ninterface = \"d0\"\nacl = \"in\"\n\
         [[acl-input]]\ninterface = \"d1\"\nacl = \"out\"\n\
         [sessions]\nper-worker = 1024\n\
         [neighbors]\nreachable-time = 1\nstale-time = 1\n",
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let mut w = Watcher::start(&socket, "watch route neighbor sessions");
    // The watcher's first look is its baseline: give it one before the changes.
    std::thread::sleep(Duration::from_millis(300));

    // Linux adds a route through the tap: sluice's netlink listener takes it.
    let prefix = "203.0.113.0/24";
    let o = dut.ip(&["route", "add", prefix, "via", T1_V4, "dev", "tap-d1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let e = w.until("netlink route added", |e| {
        e["kind"] == "route" && e["prefix"] == prefix && e["event"] == "added"
    });
    assert_eq!(
        (&e["source"], &e["table"]),
        (&"netlink".into(), &0.into()),
        "{e}"
    );
    let o = dut.ip(&["route", "del", prefix]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let e = w.until("netlink route removed", |e| {
        e["kind"] == "route" && e["prefix"] == prefix && e["event"] == "removed"
    });
    assert_eq!(e["source"], "netlink", "{e}");

    // t0 pings through sluice: its ARP for the router teaches sluice t0 on d0 (no tap
    // there, so no kernel neighbour: learnt from the traffic itself).
    let (ok, out) = ping(&left, &["-c", "2", "-i", "0.2", "-W", "2", T1_V4]);
    assert!(ok, "{out}");
    let e = w.until("neighbour learnt", |e| {
        e["kind"] == "neighbor" && e["ip"] == T0_V4 && e["event"] == "learnt"
    });
    assert_eq!(e["interface"], "d0", "{e}");
    assert_eq!(e["mac"], mac_of(&left, "t0"), "{e}");
    // Unused from now on, the entry ages out ([neighbors] reachable-time and stale-time 1 s).
    let e = w.until("neighbour aged out", |e| {
        e["kind"] == "neighbor" && e["ip"] == T0_V4 && e["event"] == "removed"
    });
    assert_eq!(e["interface"], "d0", "{e}");

    // 2200 UDP flows from t0 through the permit+reflect ACL, each answered by t1's echo
    // (through its session: d1 lets in no other IPv4): an answered session may not be
    // evicted, so the table (per-worker 1024 makes 2048 slots: `show sessions` capacity)
    // goes over 90 % and then refuses the rest.
    let mut echo = right.exec("python3", &["-c", UDP_ECHO]).spawn().unwrap();
    let o = left
        .exec("python3", &["-c", UDP_FLOWS, T1_V4, "2200"])
        .output()
        .unwrap();
    let _ = echo.kill();
    let _ = echo.wait();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let e = w.until("sessions high", |e| {
        e["kind"] == "sessions" && e["event"] == "high"
    });
    let capacity = &ctl_json(&socket, "show sessions summary")["workers"][0]["capacity"];
    assert_eq!(
        (&e["table"], &e["capacity"]),
        (&"acl".into(), capacity),
        "{e}"
    );
    assert!(
        e["entries"].as_u64() > capacity.as_u64().map(|c| c * 9 / 10),
        "{e}"
    );
    let e = w.until("sessions full", |e| {
        e["kind"] == "sessions" && e["event"] == "full"
    });
    assert!(e["refused"].as_u64().unwrap() >= 1, "{e}");
    let shown = ctl_json(&socket, "show sessions");
    assert!(
        shown["workers"][0]["table_full"].as_u64().unwrap() >= 1,
        "{shown}"
    );
    assert!(daemon.stop(), "daemon exits cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
