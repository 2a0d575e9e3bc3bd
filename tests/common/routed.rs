//! Helpers for the routing namespace tests: the two tester ports with IPv4 and IPv6
//! addresses, a router configuration over them, ping and the testers' ICMP counters.

use super::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const D0_V4: &str = "192.0.2.1";
pub const T0_V4: &str = "192.0.2.2";
pub const D1_V4: &str = "198.51.100.1";
pub const T1_V4: &str = "198.51.100.2";
pub const D0_V6: &str = "2001:db8::1";
pub const T0_V6: &str = "2001:db8::2";
pub const D1_V6: &str = "2001:db8:1::1";
pub const T1_V6: &str = "2001:db8:1::2";

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// ping is part of the test; install it as the lab installs ethtool when it is missing.
pub fn ensure_ping() {
    if Command::new("ping").arg("-V").output().is_ok() {
        return;
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "iputils-ping"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !install() {
        let _ = Command::new("apt-get").args(["update", "-qq"]).output();
        assert!(
            install(),
            "ping is missing and apt-get cannot install iputils-ping"
        );
    }
}

/// A tester port with IPv4 and IPv6 addresses (the helpers turn IPv6 off; a router needs it
/// here), answering neighbour solicitations at once (no duplicate address detection).
pub fn address_port(ns: &Netns, dev: &str, v4: &str, v6: &str) {
    for (k, v) in [
        ("accept_ra", "0"),
        ("accept_dad", "0"),
        ("disable_ipv6", "0"),
    ] {
        ns.sysctl(&format!("net.ipv6.conf.{dev}.{k}"), v);
    }
    ns.ip(&["addr", "add", &format!("{v4}/24"), "dev", dev]);
    ns.ip(&["addr", "add", &format!("{v6}/64"), "dev", dev, "nodad"]);
}

pub fn mac_of(ns: &Netns, dev: &str) -> String {
    let o = ns
        .exec("cat", &[&format!("/sys/class/net/{dev}/address")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// sluice routing between d0 and d1 (af_packet on the veths), with `extra` config after.
/// 4 096 receive slots: a worker kept off its CPU by a loaded machine loses nothing.
pub fn router_config(dir: &Path, extra: &str) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("router.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"af_packet\"\nhost = \"d0\"\nring-size = 4096\n\
             address = [\"{D0_V4}/24\", \"{D0_V6}/64\"]\n\
             [[interface]]\nname = \"d1\"\ndriver = \"af_packet\"\nhost = \"d1\"\nring-size = 4096\n\
             address = [\"{D1_V4}/24\", \"{D1_V6}/64\"]\n{extra}",
            socket.display()
        ),
    )
    .unwrap();
    (cfg, socket)
}

/// `ping` in `ns`; its output, and whether it got every reply.
pub fn ping(ns: &Netns, args: &[&str]) -> (bool, String) {
    let o = ns.exec("ping", args).output().unwrap();
    (o.status.success(), text(&o))
}

/// Echo requests the namespace's kernel received: (ICMP, ICMPv6).
pub fn in_echos(ns: &Netns) -> (u64, u64) {
    let read = |f: &str| {
        let o = ns.exec("cat", &[f]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // /proc/net/snmp: an "Icmp:" line of names, then one of values.
    let snmp = read("/proc/net/snmp");
    let icmp: Vec<Vec<&str>> = snmp
        .lines()
        .filter(|l| l.starts_with("Icmp:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let v4 = icmp[0]
        .iter()
        .position(|k| *k == "InEchos")
        .map(|i| icmp[1][i].parse().unwrap())
        .unwrap();
    let v6 = read("/proc/net/snmp6")
        .lines()
        .find_map(|l| l.strip_prefix("Icmp6InEchos"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap();
    (v4, v6)
}

/// Tester namespaces `{tag}l` (port t0) and `{tag}r` (port t1) on either side of the DUT
/// namespace `{tag}d` (ports d0, d1, the kernel's forwarding off), each tester addressed and
/// routed through the DUT's addresses, so that t0 to t1 must cross the router.
pub fn routed_lab(tag: &str) -> (Netns, Netns, Netns) {
    let left = Netns::new(&format!("{tag}l"));
    let right = Netns::new(&format!("{tag}r"));
    let dut = Netns::new(&format!("{tag}d"));
    veth(&left, "t0", &dut, "d0", 1500);
    veth(&right, "t1", &dut, "d1", 1500);
    dut.sysctl("net.ipv4.ip_forward", "0");
    address_port(&left, "t0", T0_V4, T0_V6);
    address_port(&right, "t1", T1_V4, T1_V6);
    for (ns, v4, v6) in [(&left, D0_V4, D0_V6), (&right, D1_V4, D1_V6)] {
        ns.ip(&["route", "add", "default", "via", v4]);
        ns.ip(&["-6", "route", "add", "default", "via", v6]);
    }
    (left, right, dut)
}

/// Keep the DUT's own stack off `dev`'s frames: with the router's address on the tap, Linux
/// would accept a segment that arrives on the port itself and answer it there, past sluice
/// (and its punt policy). A drop at the port's netfilter ingress hook, which runs after the
/// packet sockets' copy, stops that.
pub fn kernel_off(dut: &Netns, dev: &str) {
    let rules = format!(
        "table netdev lab_{dev} {{ chain in {{ type filter hook ingress device \"{dev}\" \
         priority 0; policy drop; }}; }}"
    );
    let o = dut.exec("nft", &[&rules]).output().unwrap();
    assert!(
        o.status.success(),
        "nft: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
