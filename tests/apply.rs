//! `sluice ctl diff FILE` / `apply FILE` and SIGHUP: a saved file applies as no change on
//! every section; a file that changes one route, one ACL rule and one bridge member changes
//! exactly those; a file whose third line fails leaves the running state as it was; a bad
//! file changes nothing; SIGHUP applies the edited start-up file. Pcap interfaces only.

mod common;

use common::{ctl, ctl_json, diff_entries, edit, saved, snapshot, tmpdir, Daemon, BIN};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Four pcap interfaces (p0 replays a capture), a bridge domain, a route, an ACL on p0,
/// the NAT on p1/p2, and [sessions].
fn config(dir: &Path) -> PathBuf {
    let input = dir.join("in.pcap");
    common::frames::one_frame_pcap(&input);
    std::fs::write(dir.join("routes.txt"), "10.0.0.0/8 via 192.0.2.2 dev p0\n").unwrap();
    let cfg = dir.join("start.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[dataplane]
workers = 2
hugepages = "never"
buffers = 2048

[control]
socket = "{0}/cli.sock"

[[interface]]
name = "p0"
driver = "pcap"
rx-file = "{0}/in.pcap"
tx-file = "{0}/p0.pcap"
address = ["192.0.2.1/24"]

[[interface]]
name = "p1"
driver = "pcap"
tx-file = "{0}/p1.pcap"
address = ["198.51.100.1/24", "2001:db8::1/64"]

[[interface]]
name = "p2"
driver = "pcap"
tx-file = "{0}/p2.pcap"
address = ["10.0.2.1/24"]

[[interface]]
name = "p3"
driver = "pcap"
tx-file = "{0}/p3.pcap"

[[interface]]
name = "p4"
driver = "pcap"
tx-file = "{0}/p4.pcap"

[[interface]]
name = "p5"
driver = "pcap"
tx-file = "{0}/p5.pcap"

[[xconnect]]
rx = "p4"
tx = "p5"

[[bridge-domain]]
id = 10
members = ["p3"]

[[route]]
prefix = "172.16.0.0/12"
via = ["192.0.2.2"]

[fib]
route-file = "{0}/routes.txt"

[[acl]]
name = "edge"
rules = ["deny proto icmp", "permit"]

[[acl-input]]
interface = "p0"
acl = "edge"

[sessions]
udp = 60

[nat44]
addresses = ["198.51.100.8-198.51.100.9"]

[[nat44-interface]]
interface = "p2"
role = "inside"

[[nat44-interface]]
interface = "p1"
role = "outside"

[[nat44-static]]
protocol = "tcp"
local = "10.0.2.3:8080"
external = "198.51.100.8:80"
"#,
            dir.display()
        ),
    )
    .unwrap();
    cfg
}

/// CLI changes that give every live section an entry.
const CHANGES: &[&str] = &[
    "ip table add 7",
    "create sub-interface p3 100 dot1q 100",
    "set interface ip table p3.100 7",
    "set interface ip6 table p3.100 7",
    "set interface ip address p3.100 10.7.0.1/24",
    "ip route add 0.0.0.0/0 table 7 via 10.7.0.254",
    "create bridge-domain 20 arp-term on mac-limit 500",
    "bvi create instance 20",
    "set interface l2 bridge bvi20 20 bvi",
    "set interface ip address bvi20 172.20.0.1/24",
    "set bridge-domain arp entry 20 172.20.0.9 02:00:00:00:00:09",
    "l2fib add 02:00:00:00:00:42 10 p3 static",
    "set acl-plugin interface p1 output acl edge",
    "set interface rx-placement p0 queue 0 worker 1",
    "set interface handoff p1 workers 0-1 key standard",
];

/// Sections this test's daemon cannot have, and why.
const NOT_HERE: &[(&str, &str)] = &[
    ("metrics", "it listens on a TCP port"),
    (
        "watchdog",
        "read at start only, like [sessions], which is here",
    ),
    (
        "neighbors",
        "read at start only, like [sessions], which is here",
    ),
    (
        "lcp",
        "a pair needs a tap in a namespace: tests/lcp_ns.rs saves and applies one",
    ),
    ("punt", "it goes with [[lcp]]"),
    ("dpdk", "it needs DPDK devices"),
];

fn save_to(sock: &Path, file: &Path) -> String {
    ctl(sock, &format!("save {}", file.display())).unwrap();
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn a_saved_file_applies_as_no_change_on_every_section() {
    let dir = tmpdir("apply-noop");
    let cfg = config(&dir);
    let sock = dir.join("cli.sock");
    let _d = Daemon::start_here(&cfg, &sock);
    for c in CHANGES {
        ctl(&sock, c).unwrap_or_else(|e| panic!("{c}: {e}"));
    }
    let file = dir.join("saved.toml");
    let text = save_to(&sock, &file);
    // Every section of the reference is in the file, or said here why not.
    for name in sluice::config::reference::sections().iter().map(|s| s.name) {
        let header = |h: &str| text.lines().any(|l| l == h);
        let here = header(&format!("[{name}]")) || header(&format!("[[{name}]]"));
        let excused = NOT_HERE.iter().any(|(n, _)| *n == name);
        assert!(
            here != excused,
            "[{name}]: in the file {here}, excused {excused}"
        );
    }
    let before = snapshot(&sock);
    let d = ctl_json(&sock, &format!("diff {}", file.display()));
    assert_eq!(d["changes"], Value::Array(vec![]), "{d}");
    assert_eq!(d["operations"], Value::Array(vec![]), "{d}");
    let out = ctl(&sock, &format!("apply {}", file.display())).unwrap();
    assert_eq!(out, "no change\n");
    assert_eq!(snapshot(&sock), before);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn apply_changes_only_what_differs_and_rolls_back_a_failure() {
    let dir = tmpdir("apply-change");
    let cfg = config(&dir);
    // Traffic through a path the apply does not touch: p4 replays its capture forever into
    // the cross-connect to p5 (written to /dev/null).
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = edit(
        &text,
        &format!("tx-file = \"{}/p4.pcap\"", dir.display()),
        &format!("rx-file = \"{}/in.pcap\"\nloop = true", dir.display()),
    );
    let text = edit(
        &text,
        &format!("tx-file = \"{}/p5.pcap\"", dir.display()),
        "tx-file = \"/dev/null\"",
    );
    std::fs::write(&cfg, text).unwrap();
    let sock = dir.join("cli.sock");
    let _d = Daemon::start_here(&cfg, &sock);
    for c in CHANGES {
        ctl(&sock, c).unwrap_or_else(|e| panic!("{c}: {e}"));
    }
    let start = save_to(&sock, &dir.join("start-saved.toml"));
    let body = saved(&sock);
    let changed = edit(
        &start,
        "members = [\"p3\"]",
        "members = [\"p3\", { interface = \"p0\", shg = 1 }]",
    );
    let changed = edit(
        &changed,
        "prefix = \"172.16.0.0/12\"\nvia = [\"192.0.2.2\"]\ninterface = \"p0\"",
        "prefix = \"172.16.0.0/12\"\nvia = [\"198.51.100.2\"]\ninterface = \"p1\"",
    );
    let changed = edit(
        &changed,
        "rules = [\"deny proto icmp\", \"permit\"]",
        "rules = [\"deny proto icmp\", \"deny proto udp dport 53\", \"permit\"]",
    );
    // p0 bridges now: its address and its ACL go (the config check refuses both on a port).
    let changed = edit(&changed, "address = [\"192.0.2.1/24\"]\n", "");
    let changed = edit(
        &changed,
        "\n[[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n",
        "",
    );
    let file = dir.join("changed.toml");
    std::fs::write(&file, &changed).unwrap();

    // A bad file: the error names its line, and nothing changes.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, changed.replacen("[[route]]", "[[route]\n", 1)).unwrap();
    let e = ctl(&sock, &format!("apply {}", bad.display())).unwrap_err();
    assert!(e.contains(&format!("{}:", bad.display())), "{e}");
    // A relative path: `sluice ctl` makes it absolute in its own working directory; the
    // daemon refuses one a raw socket client sends.
    let e = ctl(&sock, "apply relative.toml").unwrap_err();
    let cwd = std::env::current_dir().unwrap();
    assert!(
        e.contains(&format!(
            "cannot read {}",
            cwd.join("relative.toml").display()
        )),
        "{e}"
    );
    let raw = sluice::control::client::request(&sock, "apply relative.toml").unwrap();
    assert!(
        raw["error"]
            .as_str()
            .unwrap()
            .contains("not an absolute path"),
        "{raw}"
    );
    // A section read at start only: refused whole, with the reason.
    let restart = dir.join("restart.toml");
    std::fs::write(&restart, edit(&changed, "udp = 60", "udp = 61")).unwrap();
    let e = ctl(&sock, &format!("apply {}", restart.display())).unwrap_err();
    assert!(
        e.contains("[sessions] differs: it is read at start only") && e.contains("nothing changed"),
        "{e}"
    );
    // A route over p1's own address fails at its line, after others were done: undone.
    let failing = dir.join("failing.toml");
    std::fs::write(
        &failing,
        format!("{changed}\n[[route]]\nprefix = \"198.51.100.1/32\"\nvia = [\"10.0.2.9\"]\n"),
    )
    .unwrap();
    let e = ctl(&sock, &format!("apply {}", failing.display())).unwrap_err();
    assert!(
        e.contains("is a local route of an interface address")
            && e.contains("lines done before it were undone, the running state is as it was"),
        "{e}"
    );
    assert_eq!(saved(&sock), body, "after the failed apply");

    let before = snapshot(&sock);
    let (entries, d) = diff_entries(&sock, &file);
    assert_eq!(
        entries,
        [
            "interface name=p0",
            "bridge-domain id=10",
            "route prefix=172.16.0.0/12 table=0",
            "acl name=edge",
            "acl-input interface=p0"
        ],
        "{d}"
    );
    let p5 = |key: &str| -> u64 {
        let v = ctl_json(&sock, "show interface p5");
        let v = if v.is_array() { v[0].clone() } else { v };
        v[key].as_u64().unwrap()
    };
    let sent = p5("tx_packets");
    let out = ctl(&sock, &format!("apply {}", file.display())).unwrap();
    assert!(out.contains("applied:\n"), "{out}");
    // The untouched path kept forwarding through the apply, and keeps on after it, with no
    // error.
    let through = p5("tx_packets");
    assert!(through > sent, "p5 sent {sent}, then {through}");
    wait_for(|| p5("tx_packets") > through, "p5 to go on sending");
    assert_eq!((p5("drops"), p5("tx_errors")), (0, 0));
    let after = snapshot(&sock);
    let mut differ = Vec::new();
    for ((c, a), (_, b)) in before.iter().zip(&after) {
        if a != b {
            differ.push(c.as_str());
        }
    }
    // p0 lost its address: its connected and local routes leave the FIB, and it no
    // longer routes in table 0 (show ip table).
    assert_eq!(
        differ,
        [
            "show ip fib",
            "show ip table",
            "show bridge-domain",
            "show acl"
        ]
    );
    let fib = serde_json::to_string(&after[1].1).unwrap();
    assert!(fib.contains("198.51.100.2"), "{fib}");
    let acl = serde_json::to_string(&after[7].1).unwrap();
    assert!(acl.contains("deny proto udp dport 53"), "{acl}");
    let bd = serde_json::to_string(&after[5].1).unwrap();
    assert!(bd.contains("\"interface\":\"p0\",\"shg\":1"), "{bd}");
    // Applied: the running state is the file (named relative to the client's directory).
    let rel = Command::new(BIN)
        .current_dir(&dir)
        .args(["ctl", "-s", sock.to_str().unwrap(), "diff", "changed.toml"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&rel.stdout),
        "no change\n",
        "{rel:?}"
    );
    // And back.
    ctl(
        &sock,
        &format!("apply {}", dir.join("start-saved.toml").display()),
    )
    .unwrap();
    assert_eq!(saved(&sock), body);
    std::fs::remove_dir_all(&dir).ok();
}

/// The daemon with its stderr in `log`, so the test reads it while it runs.
fn start_logged(cfg: &Path, sock: &Path, log: &Path) -> Daemon {
    let mut run = Command::new(BIN);
    run.args(["run", "-c", cfg.to_str().unwrap()])
        .stderr(std::fs::File::create(log).unwrap())
        .stdout(Stdio::null());
    let d = Daemon {
        child: run.spawn().unwrap(),
    };
    wait_for(|| ctl(sock, "show version").is_ok(), "the daemon answers");
    d
}

fn wait_for(mut ok: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < deadline, "waited for: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hup(d: &Daemon) {
    let s = Command::new("kill")
        .args(["-HUP", &d.child.id().to_string()])
        .status()
        .unwrap();
    assert!(s.success());
}

#[test]
fn sighup_applies_the_start_up_file_after_it_was_edited() {
    let dir = tmpdir("apply-hup");
    let cfg = config(&dir);
    let sock = dir.join("cli.sock");
    let log = dir.join("stderr.log");
    let d = start_logged(&cfg, &sock, &log);
    let text = std::fs::read_to_string(&cfg).unwrap();
    let logged = |s: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(s)
    };
    // A bad edit: logged, nothing changes.
    std::fs::write(&cfg, format!("{text}\n[[route]]\nprefix = \"nonsense\"\n")).unwrap();
    let body = saved(&sock);
    hup(&d);
    wait_for(|| logged("not applied"), "the bad file's error in the log");
    assert_eq!(saved(&sock), body);
    // A good edit: one more route, applied and logged.
    std::fs::write(
        &cfg,
        format!("{text}\n[[route]]\nprefix = \"198.18.0.0/15\"\nvia = [\"198.51.100.3\"]\n"),
    )
    .unwrap();
    hup(&d);
    wait_for(
        || ctl(&sock, "show ip fib 198.18.0.0/15").is_ok_and(|t| t.contains("198.51.100.3")),
        "the route of the edited file",
    );
    wait_for(
        || logged("ip route add 198.18.0.0/15 via 198.51.100.3"),
        "the line in the log",
    );
    drop(d);
    std::fs::remove_dir_all(&dir).ok();
}
