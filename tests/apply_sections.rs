//! `sluice ctl apply FILE` on the sections made by CLI commands beyond addresses, routes,
//! bridges and ACLs: sub-interfaces and BVIs, receive-queue placement and handoff, NAT44.
//! For each group: a file that changes them applies, `show` says the change, `diff` of the
//! file is then no change, and the file saved before applies back to exactly the state it
//! was saved from. Pcap interfaces only.

mod common;

use common::{ctl, ctl_json, diff_entries, edit, saved, tmpdir, Daemon};
use std::path::{Path, PathBuf};

/// Four pcap interfaces (p0 reads a capture of one frame: it has a receive queue), two
/// workers.
fn config(dir: &Path) -> PathBuf {
    let input = dir.join("in.pcap");
    common::frames::one_frame_pcap(&input);
    let cfg = dir.join("start.toml");
    let mut text = format!(
        "[dataplane]\nworkers = 2\nhugepages = \"never\"\nbuffers = 2048\n\n\
         [control]\nsocket = \"{}/cli.sock\"\n",
        dir.display()
    );
    for (i, addr) in ["192.0.2.1/24", "198.51.100.1/24", "10.0.2.1/24", ""]
        .iter()
        .enumerate()
    {
        text.push_str(&format!(
            "\n[[interface]]\nname = \"p{i}\"\ndriver = \"pcap\"\ntx-file = \"{}/p{i}.pcap\"\n",
            dir.display()
        ));
        if i == 0 {
            text.push_str(&format!("rx-file = \"{}\"\n", input.display()));
        }
        if !addr.is_empty() {
            text.push_str(&format!("address = [\"{addr}\"]\n"));
        }
    }
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// The daemon, changed by `lines`, and its state saved to start-saved.toml.
fn started(tag: &str, lines: &[&str]) -> (PathBuf, Daemon, PathBuf, String) {
    let dir = tmpdir(&format!("apply-{tag}"));
    let cfg = config(&dir);
    let sock = dir.join("cli.sock");
    let d = Daemon::start_here(&cfg, &sock);
    for l in lines {
        ctl(&sock, l).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    let file = dir.join("start-saved.toml");
    ctl(&sock, &format!("save {}", file.display())).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    (dir, d, file, text)
}

/// Apply `changed`: the entries `diff` names are `entries`, the apply runs, and the file is
/// then no change. Returns the lines it ran.
fn apply(sock: &Path, dir: &Path, changed: &str, entries: &[&str]) -> Vec<String> {
    let file = dir.join("changed.toml");
    std::fs::write(&file, changed).unwrap();
    let (named, d) = diff_entries(sock, &file);
    assert_eq!(named, entries, "{d}");
    let out = ctl_json(sock, &format!("apply {}", file.display()));
    assert_eq!(out["applied"], true, "{out}");
    let again = ctl(sock, &format!("diff {}", file.display())).unwrap();
    assert_eq!(again, "no change\n", "after applying {changed}");
    out["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["line"].as_str().unwrap().to_string())
        .collect()
}

/// The saved file applies back to the state it was saved from.
fn back(sock: &Path, file: &Path, body: &str) {
    let out = ctl(sock, &format!("apply {}", file.display())).unwrap();
    assert_eq!(saved(sock), body, "after {out}");
}

#[test]
fn sub_interfaces_and_bvis_change_live() {
    let (dir, _d, file, start) = started(
        "soft",
        &[
            "ip table add 7",
            "create sub-interface p3 100 dot1q 100",
            "set interface ip table p3.100 7",
            "set interface ip6 table p3.100 7",
            "set interface ip address p3.100 10.7.0.1/24",
            "ip route add 0.0.0.0/0 table 7 via 10.7.0.254",
            "create bridge-domain 20",
            "bvi create instance 20",
            "set interface l2 bridge bvi20 20 bvi",
            "set interface ip address bvi20 172.20.0.1/24",
        ],
    );
    let sock = dir.join("cli.sock");
    let body = saved(&sock);
    // p3.100 goes, p3.200 (down) takes its table, address and route; bvi20 moves to a new
    // domain 21, and bvi22 comes in domain 20.
    let changed = start.replace("p3.100", "p3.200");
    let changed = edit(
        &changed,
        "id = 100\ndot1q = 100\nstate = \"up\"",
        "id = 200\ndot1q = 200\nstate = \"down\"",
    );
    let changed = edit(
        &changed,
        "[[bvi]]\ninstance = 20\nbridge-domain = 20\n",
        "[[bridge-domain]]\nid = 21\n\n[[bvi]]\ninstance = 20\nbridge-domain = 21\n",
    );
    let changed = format!(
        "{changed}\n[[bvi]]\ninstance = 22\nbridge-domain = 20\naddress = [\"172.22.0.1/24\"]\n"
    );
    let lines = apply(
        &sock,
        &dir,
        &changed,
        &[
            "subinterface parent=p3 id=100",
            "subinterface parent=p3 id=200",
            "bridge-domain id=21",
            "bvi instance=20",
            "bvi instance=22",
            "ip-table id=7",
            "route prefix=0.0.0.0/0 table=7",
        ],
    );
    // The old sub-interface loses its address before its table, and is deleted after both;
    // the new one is made before its table is set, and gets its address after.
    let at = |l: &str| {
        lines
            .iter()
            .position(|x| x.starts_with(l))
            .unwrap_or_else(|| panic!("{l} in {lines:?}"))
    };
    assert!(
        at("set interface ip address del p3.100 10.7.0.1/24")
            < at("set interface ip table p3.100 0")
    );
    assert!(at("set interface ip table p3.100 0") < at("delete sub-interface p3.100"));
    assert!(at("create sub-interface p3 200 dot1q 200") < at("set interface ip table p3.200 7"));
    assert!(
        at("set interface ip table p3.200 7") < at("set interface ip address p3.200 10.7.0.1/24")
    );
    assert!(at("create bridge-domain 21") < at("set interface l2 bridge bvi20 21 bvi"));
    let itfs = ctl(&sock, "show interface").unwrap();
    assert!(itfs.contains("p3.200") && itfs.contains("bvi22"), "{itfs}");
    assert!(!itfs.contains("p3.100"), "{itfs}");
    let p3 = ctl_json(&sock, "show interface p3.200");
    let p3 = if p3.is_array() { p3[0].clone() } else { p3 };
    assert_eq!(p3["admin"], "down", "{p3}");
    let fib = ctl(&sock, "show ip fib table 7 0.0.0.0/0").unwrap();
    assert!(fib.contains("p3.200"), "{fib}");
    let bd = ctl(&sock, "show bridge-domain 21 detail").unwrap();
    assert!(bd.contains("bvi20"), "{bd}");
    let fib = ctl(&sock, "show ip fib 172.22.0.0/24").unwrap();
    assert!(fib.contains("bvi22"), "{fib}");
    back(&sock, &file, &body);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn placement_and_handoff_change_live() {
    let (dir, _d, file, start) = started(
        "workers",
        &[
            "set interface rx-placement p0 queue 0 worker 1",
            "set interface handoff p1 workers 0-1 key standard",
        ],
    );
    let sock = dir.join("cli.sock");
    let body = saved(&sock);
    // p0's queue 0 goes back to worker 0 (no entry); p1 hands off by the symmetric key; p2
    // hands off too.
    let changed = edit(
        &start,
        "[[rx-placement]]\ninterface = \"p0\"\nqueue = 0\nworker = 1\n",
        "",
    );
    let changed = edit(
        &changed,
        "key = \"standard\"",
        "key = \"symmetric\"\n\n[[handoff]]\ninterface = \"p2\"\nworkers = [1]",
    );
    let lines = apply(
        &sock,
        &dir,
        &changed,
        &[
            "rx-placement interface=p0 queue=0",
            "handoff interface=p1",
            "handoff interface=p2",
        ],
    );
    assert!(
        lines.contains(&"set interface rx-placement p0 queue 0 worker 0".to_string()),
        "{lines:?}"
    );
    let placed = ctl_json(&sock, "show interface rx-placement");
    let p0 = placed
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["interface"] == "p0")
        .unwrap_or_else(|| panic!("{placed}"));
    assert_eq!(p0["worker"], 0, "{placed}");
    let h = ctl(&sock, "show interface handoff").unwrap();
    assert!(h.contains("symmetric") && h.contains("p2"), "{h}");
    assert!(!h.contains("standard"), "{h}");
    back(&sock, &file, &body);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn nat44_changes_live() {
    let (dir, _d, file, start) = started(
        "nat",
        &[
            "nat44 add address 198.51.100.8-198.51.100.9",
            "set interface nat44 in p2",
            "set interface nat44 out p1",
            "nat44 add static mapping tcp local 10.0.2.3 8080 external 198.51.100.8 80",
        ],
    );
    let sock = dir.join("cli.sock");
    let body = saved(&sock);
    // The pool loses .8 and gains .20-.21 (written as a range), a timeout and the limits
    // change, p0 is inside instead of p2, and the port forward moves to port 8000.
    let changed = edit(
        &start,
        "addresses = [\"198.51.100.8\", \"198.51.100.9\"]",
        "addresses = [\"198.51.100.9\", \"198.51.100.20-198.51.100.21\"]\nudp-timeout = 120\n\
         max-sessions = 4096\nmax-sessions-per-host = 100",
    );
    let changed = edit(
        &changed,
        "interface = \"p2\"\nrole = \"inside\"",
        "interface = \"p0\"\nrole = \"inside\"",
    );
    let changed = edit(&changed, "198.51.100.8:80", "198.51.100.9:8000");
    let lines = apply(
        &sock,
        &dir,
        &changed,
        &[
            "nat44",
            "nat44-interface interface=p2",
            "nat44-interface interface=p0",
            "nat44-static",
            "nat44-static",
        ],
    );
    // What goes, then what comes: mappings and interfaces before the pool they use; a
    // changed pool is made again in address order.
    assert_eq!(
        lines,
        [
            "nat44 del static mapping tcp local 10.0.2.3 8080 external 198.51.100.8 80",
            "set interface nat44 in p2 del",
            "nat44 del address 198.51.100.8-198.51.100.9",
            "nat44 add address 198.51.100.9",
            "nat44 add address 198.51.100.20-198.51.100.21",
            "set nat44 timeout udp 120",
            "set nat44 limits sessions 4096 per-host 100",
            "set interface nat44 in p0",
            "nat44 add static mapping tcp local 10.0.2.3 8080 external 198.51.100.9 8000",
        ]
    );
    let s = ctl(&sock, "show nat44 summary").unwrap();
    for want in [
        "interface p0: in",
        "pool: 198.51.100.9 198.51.100.20 198.51.100.21\n",
        "udp 120 s",
        "4096 sessions, 100 per inside host",
    ] {
        assert!(s.contains(want), "{want} in {s}");
    }
    assert!(!s.contains("interface p2"), "{s}");
    back(&sock, &file, &body);
    std::fs::remove_dir_all(&dir).ok();
}
