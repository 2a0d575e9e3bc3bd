//! `sluice ctl save` keeps the NAT: a daemon started with [nat44] (a pool and timeouts), two
//! [[nat44-interface]] and a [[nat44-static]], changed by the CLI (a static mapping, a
//! third interface's role, a pool address, a timeout, the limits), saves a file that starts
//! a daemon whose `show nat44 summary` is the first's, and saving that one again gives the
//! same file. Pcap interfaces only: no namespaces, no root needed.

mod common;

use common::{ctl, ctl_json, save_body, tmpdir, Daemon};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn config(dir: &Path) -> PathBuf {
    let cfg = dir.join("start.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[dataplane]
workers = 1
hugepages = "never"
buffers = 2048

[control]
socket = "{0}/cli.sock"

[[interface]]
name = "p0"
driver = "pcap"
tx-file = "{0}/p0.pcap"
address = ["10.0.0.1/24"]

[[interface]]
name = "p1"
driver = "pcap"
tx-file = "{0}/p1.pcap"
address = ["203.0.113.1/24"]

[[interface]]
name = "p2"
driver = "pcap"
tx-file = "{0}/p2.pcap"
address = ["10.0.2.1/24"]

[nat44]
addresses = ["198.51.100.8-198.51.100.9"]
udp-timeout = 30
icmp-timeout = 20

[[nat44-interface]]
interface = "p0"
role = "inside"

[[nat44-interface]]
interface = "p1"
role = "outside"

[[nat44-static]]
protocol = "tcp"
local = "10.0.0.3:8080"
external = "198.51.100.8:80"
"#,
            dir.display()
        ),
    )
    .unwrap();
    cfg
}

const CHANGES: &[&str] = &[
    "nat44 add static mapping udp local 10.0.2.5 5353 external 198.51.100.9 53",
    "set interface nat44 in p2",
    "nat44 add address 198.51.100.20",
    "set nat44 timeout tcp-transitory 100",
    "set nat44 timeout udp 45",
    "set nat44 limits sessions 65536 per-host 512",
];

/// The summary without what happened since start (each worker's counters and memory).
fn summary(sock: &Path) -> Value {
    let mut v = ctl_json(sock, "show nat44 summary");
    for w in v["workers"].as_array_mut().unwrap() {
        let w = w.as_object_mut().unwrap();
        for k in ["created", "expired", "memory_bytes"] {
            assert!(w.remove(k).is_some(), "{k} in the summary");
        }
    }
    v
}

#[test]
fn saved_nat_starts_the_same_nat() {
    let dir = tmpdir("nat-save-rt");
    let cfg = config(&dir);
    let sock = dir.join("cli.sock");
    let saved = dir.join("saved.toml");
    let first = {
        let _d = Daemon::start_here(&cfg, &sock);
        for c in CHANGES {
            ctl(&sock, c).unwrap_or_else(|e| panic!("{c}: {e}"));
        }
        ctl(&sock, &format!("save {}", saved.display())).unwrap();
        summary(&sock)
    };
    // The summary has what the file and the changes made, so comparing it means something.
    let all = first.to_string();
    for want in [
        r#""interface":"p2","role":"in""#,
        r#""interface":"p1","role":"out""#,
        r#""pool":["198.51.100.8","198.51.100.9","198.51.100.20"]"#,
        r#""external":"198.51.100.9:53","local":"10.0.2.5:5353","protocol":"udp""#,
        r#""external":"198.51.100.8:80","local":"10.0.0.3:8080","protocol":"tcp""#,
        r#""icmp":20"#,
        r#""tcp_transitory":100"#,
        r#""udp":45"#,
        r#""max_sessions":65536"#,
        r#""max_sessions_per_host":512"#,
    ] {
        assert!(all.contains(want), "{want} in {all}");
    }
    let text = std::fs::read_to_string(&saved).unwrap();
    for want in [
        "udp-timeout = 45\n",
        "tcp-transitory-timeout = 100\n",
        "icmp-timeout = 20\n",
        "max-sessions = 65536\n",
        "max-sessions-per-host = 512\n",
        "[[nat44-interface]]\ninterface = \"p2\"\nrole = \"inside\"\n",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
    // Defaults are not written.
    assert!(!text.contains("tcp-established-timeout"), "{text}");

    let _d = Daemon::start_here(&saved, &sock);
    assert_eq!(summary(&sock), first, "before and after the restart");
    let again = dir.join("again.toml");
    ctl(&sock, &format!("save {}", again.display())).unwrap();
    assert_eq!(
        save_body(&std::fs::read_to_string(&again).unwrap()),
        save_body(&text)
    );
    drop(_d);
    std::fs::remove_dir_all(&dir).ok();
}
