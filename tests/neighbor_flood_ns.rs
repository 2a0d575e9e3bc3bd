//! One host on a connected /16 and /64 floods the router with spoofed ARP and neighbour
//! discovery (requests for the router, unsolicited replies and advertisements, from tens of
//! thousands of addresses, more than the neighbour table holds). A host that appears on the
//! link afterwards must still be reached through sluice, as it is through Linux: the table's
//! stale entries make room for it, and answers nobody asked for make no entries at all.

mod common;

use common::routed::*;
use common::*;
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

/// Spoofed hosts per round, of each family; more than the table's 65 536 entries together.
const SPOOFED: &str = "40000";
const TABLE: usize = 65_536;

fn neighbors(socket: &std::path::Path) -> usize {
    let v: Value = ctl_json(socket, "show ip neighbors");
    v["neighbors"].as_array().map_or(0, |a| a.len())
}

#[test]
fn a_spoofed_arp_and_nd_flood_does_not_keep_a_new_host_out() {
    if !needs_root() {
        return;
    }
    if !prerequisite(
        Command::new("python3").arg("--version").output().is_ok(),
        "python3 (raw sockets for the flood)",
    ) {
        return;
    }
    ensure_ping();
    let left = Netns::new("nfl");
    let right = Netns::new("nfr");
    let dut = Netns::new("nfd");
    veth(&left, "t0", &dut, "d0", 1500);
    veth(&right, "t1", &dut, "d1", 1500);
    dut.sysctl("net.ipv4.ip_forward", "0");
    address_port(&right, "t1", T1_V4, T1_V6);
    right.ip(&["route", "add", "default", "via", D1_V4]);
    right.ip(&["-6", "route", "add", "default", "via", D1_V6]);
    let dir = tmpdir("neighbor-flood");
    let socket = dir.join("cli.sock");
    let cfg = dir.join("router.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"af_packet\"\nhost = \"d0\"\n\
             ring-size = 4096\naddress = [\"10.0.0.1/16\", \"2001:db8::1/64\"]\n\
             [[interface]]\nname = \"d1\"\ndriver = \"af_packet\"\nhost = \"d1\"\n\
             ring-size = 4096\naddress = [\"{D1_V4}/24\", \"{D1_V6}/64\"]\n",
            socket.display()
        ),
    )
    .unwrap();
    let _daemon = Daemon::start(&dut, &cfg, &socket);

    // Flood until the table is full (a slow control plane takes only part of each round),
    // then until what it holds stops changing.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/neighbor/flood.py");
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut rounds = 0;
    while neighbors(&socket) < TABLE && Instant::now() < deadline {
        let o = left
            .exec("python3", &[script, "t0", SPOOFED])
            .output()
            .unwrap();
        assert!(o.status.success(), "flood: {}", text(&o));
        rounds += 1;
    }
    let mut last = usize::MAX;
    while neighbors(&socket) != last {
        last = neighbors(&socket);
        std::thread::sleep(Duration::from_millis(500));
    }
    let table: Value = ctl_json(&socket, "show ip neighbors");
    assert!(
        last >= TABLE - 64,
        "the flood filled the table ({last} entries after {rounds} rounds): {}",
        table["table"]
    );

    // A host appears on the link, and is reached from the other side of the router.
    for (k, v) in [("accept_dad", "0"), ("disable_ipv6", "0")] {
        left.sysctl(&format!("net.ipv6.conf.t0.{k}"), v);
    }
    left.ip(&["addr", "add", "10.0.255.200/16", "dev", "t0"]);
    left.ip(&["addr", "add", "2001:db8::ff:200/64", "dev", "t0", "nodad"]);
    left.ip(&["route", "add", "default", "via", "10.0.0.1"]);
    left.ip(&["-6", "route", "add", "default", "via", "2001:db8::1"]);
    let (ok4, out4) = ping(&right, &["-c", "5", "-i", "0.3", "-W", "2", "10.0.255.200"]);
    let (ok6, out6) = ping(
        &right,
        &["-6", "-c", "5", "-i", "0.3", "-W", "2", "2001:db8::ff:200"],
    );
    let after = ctl(&socket, "show ip neighbors").unwrap_or_default();
    let summary = after.lines().rev().take(2).collect::<Vec<_>>().join("\n");
    assert!(
        ok4,
        "IPv4 host unreachable after the flood: {out4}\n{summary}"
    );
    assert!(
        ok6,
        "IPv6 host unreachable after the flood: {out6}\n{summary}"
    );
    // The new hosts are in the table, confirmed by their answers.
    let v: Value = ctl_json(&socket, "show ip neighbors");
    for ip in ["10.0.255.200", "2001:db8::ff:200"] {
        let e = v["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["ip"] == ip)
            .unwrap_or_else(|| panic!("{ip} not in the table: {summary}"));
        assert!(
            ["reachable", "stale", "delay", "probe"].contains(&e["state"].as_str().unwrap()),
            "{e}"
        );
    }
    // The flood was refused where it must be: unsolicited answers made nothing, requests
    // made stale entries that were evicted for newer ones.
    let t = &v["table"];
    assert!(t["unsolicited"].as_u64().unwrap() > 0, "{t}");
    assert!(t["evicted"].as_u64().unwrap() > 0, "{t}");
    assert_eq!(t["max_entries"].as_u64().unwrap() as usize, TABLE, "{t}");
    let _ = Command::new("rm")
        .args(["-rf", dir.to_str().unwrap()])
        .status();
}
