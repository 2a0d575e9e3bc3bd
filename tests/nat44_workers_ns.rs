//! NAT44 on two workers: d0 (inside) and d1 (outside) spread over both by [[handoff]], so
//! that a reply often arrives on the worker that does not own its session and nat44-in hands
//! it to the owner (by the port it is sent to). An inside host opens 200 UDP flows to an
//! outside host that answers each; every answer must come back translated, some must have
//! been handed over, both workers must hold sessions (`show nat44 summary` and the metrics
//! endpoint agree), and a shorter UDP timeout set at run time expires them.
//!
//! Topology: inside namespace (t0, 10.0.0.2, default route via sluice's d0) — DUT namespace
//! (sluice on d0 10.0.0.1 and d1 203.0.113.1, af_packet) — outside namespace (t1,
//! 203.0.113.2, a UDP echo that answers with the source it saw). Both testers are the
//! kernel's own sockets (python3, no scapy).

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Instant;

const D0: &str = "10.0.0.1";
const INSIDE: &str = "10.0.0.2";
const D1: &str = "203.0.113.1";
const OUTSIDE: &str = "203.0.113.2";
const ECHO_PORT: u16 = 7;
/// The flows: inside source ports FIRST_PORT.. (all in worker 1's slice of 1024-65535, so a
/// flow that starts on worker 0 gets another port), one datagram each.
const FLOWS: u16 = 200;
const FIRST_PORT: u16 = 40000;
const PYTHON: &str = "/usr/bin/python3";
/// The metrics endpoint, on the DUT namespace's loopback.
const METRICS_PORT: u16 = 9482;

/// The outside host: answers each datagram with "ADDRESS:PORT" of its sender as it saw it.
const ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    data, peer = s.recvfrom(2048)
    s.sendto(("%s:%d" % peer).encode(), peer)
"#;

/// The inside host: one warm-up flow (neighbours resolved), answered, then one datagram from
/// each of N ports, sent once; prints JSON: per port the answer's source and its payload.
const CLIENT: &str = r#"
import json, select, socket, sys, time
src, dst, dport, first, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def sock(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, port))
    s.setblocking(False)
    return s
warm = sock(first - 1)
warm_answered = False
deadline = time.time() + 10
while not warm_answered and time.time() < deadline:
    warm.sendto(b"warm", (dst, dport))
    r, _, _ = select.select([warm], [], [], 0.5)
    warm_answered = bool(r)
socks = {}
for p in range(first, first + n):
    s = sock(p)
    socks[s.fileno()] = (s, p)
for s, p in socks.values():
    s.sendto(b"%d" % p, (dst, dport))
answers = {}
deadline = time.time() + 5
while len(answers) < n and time.time() < deadline:
    r, _, _ = select.select(list(socks), [], [], 0.1)
    for fd in r:
        s, p = socks[fd]
        data, peer = s.recvfrom(2048)
        answers[p] = {"from": "%s:%d" % peer, "seen": data.decode()}
print(json.dumps({"warm": warm_answered, "answers": answers}))
"#;

/// Inside, DUT and outside namespaces, wired t0–d0 and d1–t1.
struct Lab {
    inside: Netns,
    dut: Netns,
    outside: Netns,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let inside = Netns::new(&format!("{tag}i"));
        let dut = Netns::new(&format!("{tag}d"));
        let outside = Netns::new(&format!("{tag}o"));
        veth(&inside, "t0", &dut, "d0", 1500);
        veth(&dut, "d1", &outside, "t1", 1500);
        inside.ip(&["addr", "add", &format!("{INSIDE}/24"), "dev", "t0"]);
        inside.ip(&["route", "add", "default", "via", D0]);
        outside.ip(&["addr", "add", &format!("{OUTSIDE}/24"), "dev", "t1"]);
        // sluice alone routes between d0 and d1.
        dut.sysctl("net.ipv4.ip_forward", "0");
        Lab {
            inside,
            dut,
            outside,
        }
    }
}

/// sluice with two workers, both interfaces spread over both, NAT44 from d0 out of d1 (to
/// d1's own address).
fn dut_config(dir: &Path) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("nat.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 2\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"af_packet\"\nhost = \"d0\"\n\
             ring-size = 4096\naddress = [\"{D0}/24\"]\n\
             [[interface]]\nname = \"d1\"\ndriver = \"af_packet\"\nhost = \"d1\"\n\
             ring-size = 4096\naddress = [\"{D1}/24\"]\n\
             [metrics]\nlisten = \"127.0.0.1:{METRICS_PORT}\"\n\
             [[handoff]]\ninterface = \"d0\"\nworkers = [0, 1]\n\
             [[handoff]]\ninterface = \"d1\"\nworkers = [0, 1]\n\
             [[nat44-interface]]\ninterface = \"d0\"\nrole = \"inside\"\n\
             [[nat44-interface]]\ninterface = \"d1\"\nrole = \"outside\"\n",
            socket.display()
        ),
    )
    .unwrap();
    (cfg, socket)
}

/// The echo in the outside namespace, once it listens.
fn start_echo(ns: &Netns) -> Child {
    use std::io::{BufRead, BufReader};
    let mut child = ns
        .exec(PYTHON, &["-c", ECHO, OUTSIDE, &ECHO_PORT.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "the echo did not start");
    child
}

/// The sum of `reason`'s counts in `show errors --json` on nodes named `node`.
fn error_count(socket: &Path, node: &str, reason: &str) -> u64 {
    ctl_json(socket, "show errors")
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["node"] == node && e["reason"] == reason)
        .map(|e| e["count"].as_u64().unwrap_or(0))
        .sum()
}

/// The metrics endpoint's samples whose series starts with `prefix` (bash's /dev/tcp in the
/// DUT's namespace, whose loopback the daemon listens on).
fn scrape(ns: &Netns, prefix: &str) -> Vec<(String, u64)> {
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{METRICS_PORT} && \
         printf 'GET /metrics HTTP/1.1\\r\\nHost: sluice\\r\\n\\r\\n' >&3 && timeout 10 cat <&3"
    );
    let o = ns.exec("bash", &["-c", &script]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| {
            let (series, v) = l.rsplit_once(' ')?;
            Some((series.to_string(), v.parse().ok()?))
        })
        .collect()
}

#[test]
fn replies_reach_the_worker_owning_their_session() {
    if !needs_root() {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !prerequisite(cpus >= 2, "two CPUs (two workers)") {
        return;
    }
    let lab = Lab::new("n4w");
    let dir = tmpdir("nat44-workers");
    let (cfg, socket) = dut_config(&dir);
    let mut daemon = Daemon::start(&lab.dut, &cfg, &socket);
    let mut echo = start_echo(&lab.outside);

    let started = Instant::now();
    let out = lab
        .inside
        .exec(
            PYTHON,
            &[
                "-c",
                CLIENT,
                INSIDE,
                OUTSIDE,
                &ECHO_PORT.to_string(),
                &FIRST_PORT.to_string(),
                &FLOWS.to_string(),
            ],
        )
        .output()
        .unwrap();
    let _ = echo.kill();
    let _ = echo.wait();
    let got = json_output(&out);
    let errors = ctl(&socket, "show errors").unwrap_or_default();
    assert_eq!(
        got["warm"], true,
        "the warm-up flow got no answer:\n{errors}"
    );
    let answers = got["answers"].as_object().unwrap();
    let missing: Vec<u16> = (FIRST_PORT..FIRST_PORT + FLOWS)
        .filter(|p| !answers.contains_key(&p.to_string()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {FLOWS} flows got no answer within {:?} (ports {missing:?}):\n{errors}",
        missing.len(),
        started.elapsed()
    );
    // Each answer came from the outside host, translated back; it saw the flow from d1's
    // address, from a port of its own (no two flows share one).
    let mut outside_ports = std::collections::BTreeSet::new();
    for (port, a) in answers {
        assert_eq!(a["from"], format!("{OUTSIDE}:{ECHO_PORT}"), "flow {port}");
        let seen = a["seen"].as_str().unwrap();
        let (addr, p) = seen.split_once(':').unwrap();
        assert_eq!(addr, D1, "flow {port} was seen from {seen}");
        assert!(outside_ports.insert(p.to_string()), "port {p} used twice");
    }

    let handed = error_count(
        &socket,
        "nat44-in",
        "nat44: handed to the worker owning the port",
    );
    assert!(handed > 0, "no reply was handed to its owner:\n{errors}");
    // The workers refresh their ports in use every 100 ms, between frames.
    let ports_on_d1 = |summary: &Value| -> Option<u64> {
        summary["ports_in_use"]
            .as_array()?
            .iter()
            .find(|p| p["address"] == D1)?["ports"]
            .as_u64()
    };
    let deadline = Instant::now() + std::time::Duration::from_secs(3);
    let mut summary = ctl_json(&socket, "show nat44 summary");
    while ports_on_d1(&summary) != Some(FLOWS as u64 + 1) && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        summary = ctl_json(&socket, "show nat44 summary");
    }
    assert_eq!(ports_on_d1(&summary), Some(FLOWS as u64 + 1), "{summary}");
    let per_worker: Vec<u64> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["sessions"].as_u64().unwrap())
        .collect();
    eprintln!("{handed} replies handed over; sessions per worker {per_worker:?}");
    assert_eq!(per_worker.len(), 2, "{summary}");
    assert!(
        per_worker.iter().all(|&n| n > 0),
        "sessions per worker {per_worker:?}: {summary}"
    );
    assert_eq!(
        summary["sessions"].as_u64(),
        Some(FLOWS as u64 + 1),
        "{summary}"
    );
    let udp: u64 = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w: &Value| w["udp"].as_u64().unwrap())
        .sum();
    assert_eq!(udp, FLOWS as u64 + 1, "{summary}");
    // The metrics endpoint shows the same, per worker.
    let metrics = scrape(&lab.dut, "nat44_");
    let sum = |name: &str| -> u64 {
        metrics
            .iter()
            .filter(|(s, _)| s.starts_with(name))
            .map(|(_, v)| v)
            .sum()
    };
    let udp_series: Vec<u64> = (0..2)
        .map(|w| {
            sum(&format!(
                "nat44_sessions{{worker=\"{w}\",protocol=\"udp\"}}"
            ))
        })
        .collect();
    assert_eq!(udp_series, per_worker, "{metrics:?}");
    assert_eq!(
        sum("nat44_sessions_created_total"),
        FLOWS as u64 + 1,
        "{metrics:?}"
    );
    assert!(sum("nat44_table_memory_bytes{") > 0, "{metrics:?}");
    assert_eq!(
        sum(&format!("nat44_ports_in_use{{address=\"{D1}\"}}")),
        FLOWS as u64 + 1,
        "{metrics:?}"
    );
    // A shorter UDP timeout applies to the live sessions: they expire (counted as expired,
    // not closed by a new configuration) on the worker that holds them.
    ctl(&socket, "set nat44 timeout udp 1").unwrap();
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    let mut summary = ctl_json(&socket, "show nat44 summary");
    while summary["sessions"] != 0 && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        summary = ctl_json(&socket, "show nat44 summary");
    }
    assert_eq!(summary["timeouts"]["udp"], 1, "{summary}");
    let expired: Vec<u64> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["expired"].as_u64().unwrap())
        .collect();
    assert_eq!(expired, per_worker, "{summary}");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
