//! Router conformance: the same crafted packets (tests/conformance/cases.py, scapy) sent
//! through Linux forwarding in a namespace and through sluice, case by case. The RFCs are
//! RFC 1812 (IPv4 routers), RFC 4443 (ICMPv6), RFC 8200 and 4291 (IPv6), RFC 4861 (ND).
//!
//! Every case where Linux and the RFCs agree must come out of sluice exactly as out of
//! Linux. Where sluice deliberately differs, `DELIBERATE` says why and gives what sluice
//! must do instead; where Linux itself departs from an RFC, `LINUX_DEPARTS` says so and
//! sluice must follow the RFC. After the cases a burst of random and mutated frames must
//! leave sluice answering, with every buffer back and every dropped packet's trace naming
//! the counter it was dropped under.
//!
//! Topology: tester namespace (t0, t1) — DUT namespace (d0, d1); the t1–d1 link has MTU
//! 1400, smaller than t0–d0's 1500, for the too-big cases.

mod common;
use common::cases::{json_lines, observations, Seen};
use common::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

const D0_V4: &str = "192.0.2.1";
const T0_V4: &str = "192.0.2.2";
const D1_V4: &str = "198.51.100.1";
const T1_V4: &str = "198.51.100.2";
const D0_V6: &str = "2001:db8::1";
const T0_V6: &str = "2001:db8::2";
const D1_V6: &str = "2001:db8:1::1";
const T1_V6: &str = "2001:db8:1::2";
/// Routed to t1's side by both DUTs.
const FAR_NET4: &str = "198.19.0.0/16";
const FAR_NET6: &str = "2001:db8:ff::/48";

/// Debian's interpreter, which has python3-scapy (not whatever python3 comes first in PATH).
const PYTHON: &str = "/usr/bin/python3";
const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/cases.py");
/// Random and mutated frames sent after the cases.
const FUZZ_FRAMES: usize = 1200;

/// Where sluice differs from Linux on purpose: case, what sluice sends (t0, t1), and why.
const DELIBERATE: &[(&str, &[&str], &[&str], &str)] = &[
    (
        "frag_to_router4",
        &[],
        &[],
        "sluice reassembles nothing: its own services (echo, ND) fit one packet; a fragment \
         to it is a counted drop (ip4-local 'fragment to us')",
    ),
    (
        "frag_to_router6",
        &[],
        &[],
        "as frag_to_router4 (ip6-local 'fragment for us')",
    ),
    (
        "options_to_router4",
        &["icmp4 echo-reply code 0 d0v4>t0v4 ttl64 len64 opts01010101"],
        &[],
        "sluice answers an echo in place and keeps the request's options (RFC 1122 3.2.2.6 \
         only asks that record route and timestamp be updated); Linux rebuilds the options \
         and leaves out the NOPs",
    ),
    (
        "arp_other_interface",
        &[],
        &[],
        "sluice answers ARP only for addresses of the interface asked (like Linux with \
         arp_ignore=1): it does not advertise d1's address on d0's link; RFC 826 asks no more",
    ),
    (
        "ext_hbh_unknown_option_through",
        &[],
        &["ip6 t0v6>far6 nh17 hlim63 plen36 hbh"],
        "RFC 8200 4: a router examines hop-by-hop options only when configured to; sluice \
         forwards without looking at them, Linux processes them and sends a parameter problem",
    ),
    (
        "ns_ours_unicast",
        &["na d0v6>t0v6 target d0v6 flags RSO lla d0mac hlim255"],
        &[],
        "RFC 4861 7.2.4 lets the target link-layer option be left out of an answer to a \
         unicast solicitation (Linux does, so it clears Override); sluice always includes it, \
         and with it Override is set",
    ),
];

/// Where Linux departs from the RFCs and sluice follows them: case, what sluice sends (t0,
/// t1), and the rule.
const LINUX_DEPARTS: &[(&str, &[&str], &[&str], &str)] = &[
    (
        "martian_src_zero4",
        &[],
        &[],
        "RFC 1812 5.3.7: no forwarding from a source on network 0 (Linux treats 0/8 as unicast)",
    ),
    (
        "martian_src_class_e4",
        &[],
        &[],
        "RFC 1812 4.2.2.11, 5.3.7: a class E source is invalid (Linux forwards it)",
    ),
    (
        "martian_src_directed_bcast4",
        &[],
        &[],
        "RFC 1812 4.2.2.11: a subnet's broadcast address {net,-1} is never a source (Linux \
         forwards it)",
    ),
    (
        "martian_dst_zero4",
        &[],
        &[],
        "RFC 1812 5.3.7: a destination on network 0 is not forwarded; sluice drops it as a \
         martian (Linux routes it like any address and, having no route, says unreachable)",
    ),
    (
        "martian_dst_class_e4",
        &[],
        &[],
        "RFC 1812 5.3.7: a class E destination is invalid; dropped as a martian (Linux routes \
         it and says unreachable)",
    ),
];

/// The cases run again after the fuzz burst: the router must still answer and forward.
const STILL_ALIVE: &[&str] = &[
    "echo4_router",
    "echo6_router",
    "echo4_through",
    "echo6_through",
];

fn scapy_present() -> bool {
    std::process::Command::new(PYTHON)
        .args(["-c", "import scapy.all"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn mac_of(ns: &Netns, dev: &str) -> String {
    let o = ns
        .exec("cat", &[&format!("/sys/class/net/{dev}/address")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// IPv6 on (the veth helper turns it off) with no duplicate address detection.
fn ipv6_on(ns: &Netns, dev: &str) {
    for (k, v) in [
        ("accept_ra", "0"),
        ("accept_dad", "0"),
        ("disable_ipv6", "0"),
    ] {
        ns.sysctl(&format!("net.ipv6.conf.{dev}.{k}"), v);
    }
}

fn address(ns: &Netns, dev: &str, v4: &str, v6: &str) {
    ipv6_on(ns, dev);
    ns.ip(&["addr", "add", &format!("{v4}/24"), "dev", dev]);
    ns.ip(&["addr", "add", &format!("{v6}/64"), "dev", dev, "nodad"]);
}

/// The tester (t0, t1, addressed, forwarding off so that it never passes a packet on) and
/// the DUT namespace (d0, d1, nothing configured yet).
struct Lab {
    tester: Netns,
    dut: Netns,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let tester = Netns::new(&format!("{tag}t"));
        let dut = Netns::new(&format!("{tag}d"));
        veth(&tester, "t0", &dut, "d0", 1500);
        veth(&tester, "t1", &dut, "d1", 1400);
        tester.sysctl("net.ipv4.ip_forward", "0");
        tester.sysctl("net.ipv6.conf.all.forwarding", "0");
        address(&tester, "t0", T0_V4, T0_V6);
        address(&tester, "t1", T1_V4, T1_V6);
        Lab { tester, dut }
    }

    /// Run cases.py in the tester namespace; one JSON value per line it printed.
    fn run(&self, dir: &Path, args: &[&str]) -> Vec<Value> {
        let cfg = json!({
            "mac": {
                "t0mac": mac_of(&self.tester, "t0"), "t1mac": mac_of(&self.tester, "t1"),
                "d0mac": mac_of(&self.dut, "d0"), "d1mac": mac_of(&self.dut, "d1"),
            },
            "addr": {
                "d0v4": D0_V4, "t0v4": T0_V4, "d1v4": D1_V4, "t1v4": T1_V4,
                "d0v6": D0_V6, "t0v6": T0_V6, "d1v6": D1_V6, "t1v6": T1_V6,
                "far4": "198.19.0.5", "far6": "2001:db8:ff::5",
                "noroute4": "203.0.113.9", "noroute6": "2001:db8:dead::9",
                "t0bcast4": "192.0.2.255", "t1bcast4": "198.51.100.255",
            },
        });
        let path = dir.join("lab.json");
        std::fs::write(&path, cfg.to_string()).unwrap();
        let mut a = vec![CASES, path.to_str().unwrap()];
        a.extend_from_slice(args);
        let o = self.tester.exec(PYTHON, &a).output().unwrap();
        json_lines(&o, &format!("cases.py {args:?}"))
    }
}

/// Linux as the DUT: the same addresses and routes, forwarding on, ICMP not rate limited
/// (each case sends one packet; the limits would hide answers, not show behaviour).
fn linux_dut(lab: &Lab) {
    let d = &lab.dut;
    for (k, v) in [
        ("net.ipv4.ip_forward", "1"),
        ("net.ipv6.conf.all.forwarding", "1"),
        ("net.ipv4.icmp_ratelimit", "0"),
        ("net.ipv6.icmp.ratelimit", "0"),
        ("net.ipv4.icmp_msgs_per_sec", "100000"),
        ("net.ipv4.icmp_msgs_burst", "100000"),
        ("net.ipv4.conf.all.rp_filter", "0"),
        ("net.ipv4.conf.default.rp_filter", "0"),
    ] {
        d.sysctl(k, v);
    }
    address(d, "d0", D0_V4, D0_V6);
    address(d, "d1", D1_V4, D1_V6);
    d.ip(&["route", "add", FAR_NET4, "via", T1_V4]);
    d.ip(&["-6", "route", "add", FAR_NET6, "via", T1_V6]);
}

/// How sluice's ports are driven: AF_PACKET, or AF_XDP with the XDP fast path on (issue 39:
/// the flows the first cases route are offloaded, and the later cases' frames to the same
/// destination meet the fast path's own checks first).
const AF_PACKET: &str = "driver = \"af_packet\"\n";
const FAST_PATH: &str = "driver = \"af_xdp\"\nxdp-mode = \"native\"\nfast-path = \"on\"\n";

/// sluice as the DUT, its ports driven as `driver` says, with the kernel of its namespace
/// forwarding nothing.
fn sluice_dut(lab: &Lab, dir: &Path, driver: &str) -> (Daemon, std::path::PathBuf) {
    lab.dut.sysctl("net.ipv4.ip_forward", "0");
    let socket = dir.join("cli.sock");
    let cfg = dir.join("router.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\n{driver}host = \"d0\"\n\
             address = [\"{D0_V4}/24\", \"{D0_V6}/64\"]\n\
             [[interface]]\nname = \"d1\"\n{driver}host = \"d1\"\n\
             address = [\"{D1_V4}/24\", \"{D1_V6}/64\"]\n\
             [[route]]\nprefix = \"{FAR_NET4}\"\nvia = [\"{T1_V4}\"]\n\
             [[route]]\nprefix = \"{FAR_NET6}\"\nvia = [\"{T1_V6}\"]\n",
            socket.display()
        ),
    )
    .unwrap();
    let daemon = Daemon::start(&lab.dut, &cfg, &socket);
    (daemon, socket)
}

/// Check sluice's observations against Linux's and the two tables; every mismatch, one line.
fn compare(linux: &BTreeMap<String, Seen>, sluice: &BTreeMap<String, Seen>) -> Vec<String> {
    let mut bad = Vec::new();
    let names: BTreeSet<&String> = linux.keys().chain(sluice.keys()).collect();
    let table: BTreeMap<&str, (Seen, &str)> = DELIBERATE
        .iter()
        .chain(LINUX_DEPARTS)
        .map(|(case, t0, t1, why)| {
            let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
            (*case, ((v(t0), v(t1)), *why))
        })
        .collect();
    for case in table.keys() {
        if !linux.contains_key(*case) {
            bad.push(format!("{case}: in a table but not a case"));
        }
    }
    for case in names {
        let (Some(l), Some(s)) = (linux.get(case), sluice.get(case)) else {
            bad.push(format!("{case}: ran against one DUT only"));
            continue;
        };
        let (want, source) = match table.get(case.as_str()) {
            Some((expected, _)) => (expected, "its table"),
            None => (l, "Linux"),
        };
        if s != want {
            bad.push(format!(
                "{case}: sluice {s:?}, want {want:?} ({source}); Linux {l:?}"
            ));
        }
    }
    bad
}

/// Counter names by node from `show errors --json`.
fn reasons(errors: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut by_node: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in errors.as_array().unwrap() {
        by_node
            .entry(e["node"].as_str().unwrap().to_string())
            .or_default()
            .insert(e["reason"].as_str().unwrap().to_string());
    }
    by_node
}

/// Every traced packet is accounted for by name: it was sent (a `-tx` line), or each of its
/// drops is matched by a line naming a counter of the node that wrote it, or (consumed,
/// held) its last line names one. Returns the packets that are not, and how many were seen.
fn unexplained(trace: &Value, names: &BTreeMap<String, BTreeSet<String>>) -> (Vec<String>, usize) {
    let named = |line: &str| {
        line.split_once(": ").is_some_and(|(node, text)| {
            names
                .get(node)
                .is_some_and(|rs| rs.iter().any(|r| text.contains(r.as_str())))
        })
    };
    let mut bad = Vec::new();
    let mut seen = 0;
    for thread in trace.as_array().unwrap() {
        for p in thread["packets"].as_array().unwrap() {
            seen += 1;
            let lines: Vec<&str> = p["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap())
                .collect();
            let drops = lines
                .iter()
                .filter(|l| l.starts_with("error-drop:"))
                .count();
            let explained = lines.iter().filter(|l| named(l)).count();
            let sent = lines
                .iter()
                .any(|l| l.split_once(": ").is_some_and(|(n, _)| n.ends_with("-tx")));
            let ok = if drops > 0 {
                explained >= drops
            } else {
                sent || lines.last().is_some_and(|l| named(l))
            };
            if !ok {
                bad.push(lines.join(" | "));
            }
        }
    }
    (bad, seen)
}

fn buffers(socket: &Path) -> (i64, u64) {
    let b = ctl_json(socket, "show buffers");
    (
        b["unaccounted"].as_i64().unwrap(),
        b["in_use"].as_u64().unwrap(),
    )
}

/// The same cases through sluice with the XDP fast path on: the same observations, and the
/// fast path took part (frames forwarded in XDP, and frames it left to the graph).
fn fast_path_treats_packets_as_linux_does(linux: &BTreeMap<String, Seen>, dir: &Path) {
    let lab = Lab::new("cx");
    // Frames XDP redirects into a veth reach its peer in NAPI mode, which GRO gives it.
    for t in ["t0", "t1"] {
        let out = lab
            .tester
            .exec("ethtool", &["-K", t, "gro", "on"])
            .output()
            .unwrap();
        assert!(out.status.success(), "ethtool: {out:?}");
    }
    let (mut daemon, socket) = sluice_dut(&lab, dir, FAST_PATH);
    let sluice = observations(&lab.run(dir, &[]));
    let mismatches = compare(linux, &sluice);
    let flows = ctl_json(&socket, "show xdp flows");
    assert!(
        mismatches.is_empty(),
        "with the fast path on, {} of {} cases differ:\n{}\n\n{flows}",
        mismatches.len(),
        linux.len(),
        mismatches.join("\n")
    );
    let reason = |r: &str| flows["reasons"][r].as_u64().unwrap_or(0);
    assert!(
        reason("forwarded in XDP") > 0,
        "no case took the fast path: {flows}"
    );
    // Both families' routes were offloaded (the cases' later frames met the entries).
    for kind in ["route4", "route6"] {
        let made = flows["flows"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["kind"] == kind));
        assert!(made, "no {kind} entry: {flows}");
    }
    let graph = flows["reasons"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("for the graph"))
        .map(|(_, v)| v.as_u64().unwrap_or(0))
        .sum::<u64>();
    assert!(
        graph > 0,
        "no case was left to the graph by the fast path: {flows}"
    );
    assert!(daemon.stop(), "daemon did not exit cleanly");
}

#[test]
fn sluice_treats_packets_as_linux_and_the_rfcs_do() {
    if !needs_root()
        || !prerequisite(
            scapy_present(),
            "Debian's python3-scapy (/usr/bin/python3 -c 'import scapy.all')",
        )
    {
        return;
    }
    let dir = tmpdir("conformance");

    // The reference: Linux forwarding.
    let linux = {
        let lab = Lab::new("cl");
        linux_dut(&lab);
        observations(&lab.run(&dir, &[]))
    };
    assert!(linux.len() >= 90, "only {} cases ran", linux.len());

    fast_path_treats_packets_as_linux_does(&linux, &dir);

    let lab = Lab::new("cs");
    let (mut daemon, socket) = sluice_dut(&lab, &dir, AF_PACKET);
    let sluice = observations(&lab.run(&dir, &[]));
    let mismatches = compare(&linux, &sluice);
    let errors_after_cases = ctl(&socket, "show errors").unwrap_or_default();
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ:\n{}\n\nsluice's counters:\n{errors_after_cases}",
        mismatches.len(),
        linux.len(),
        mismatches.join("\n")
    );

    // The burst: traced, so that what became of each frame can be read afterwards.
    let (_, idle) = buffers(&socket);
    ctl(&socket, "clear trace").unwrap();
    ctl(
        &socket,
        &format!("trace add af-packet-input {}", FUZZ_FRAMES + 500),
    )
    .unwrap();
    let out = lab.run(&dir, &["--only", "", "--fuzz", &FUZZ_FRAMES.to_string()]);
    assert_eq!(
        out.last().and_then(|v| v["fuzz_sent"].as_u64()),
        Some(FUZZ_FRAMES as u64)
    );
    // Held packets wait for their neighbour's third unanswered request (3 s) at most.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mut unaccounted, mut in_use) = buffers(&socket);
    while (unaccounted != 0 || in_use > idle) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        (unaccounted, in_use) = buffers(&socket);
    }
    assert_eq!(unaccounted, 0, "{}", ctl(&socket, "show buffers").unwrap());
    assert_eq!(in_use, idle, "{}", ctl(&socket, "show buffers").unwrap());

    let errors = ctl_json(&socket, "show errors");
    let names = reasons(&errors);
    let (bad, traced) = unexplained(&ctl_json(&socket, "show trace"), &names);
    assert!(
        traced >= FUZZ_FRAMES / 2,
        "only {traced} frames of the burst were traced"
    );
    assert!(
        bad.is_empty(),
        "{} of {traced} traced packets vanished without a named counter, e.g.:\n{}",
        bad.len(),
        bad.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
    for node in ["ethernet-input", "ip4-input", "ip6-input", "arp-input"] {
        assert!(
            names.contains_key(node),
            "no drops counted by {node}: {errors}"
        );
    }
    ctl(&socket, "clear trace").unwrap();

    // Still a router.
    let again = observations(&lab.run(&dir, &["--only", &STILL_ALIVE.join(",")]));
    for case in STILL_ALIVE {
        assert_eq!(again.get(*case), linux.get(*case), "{case} after the burst");
    }
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
