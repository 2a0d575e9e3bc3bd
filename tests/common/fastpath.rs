//! What the XDP fast path's namespace tests share: the two-port lab with the tester's ports
//! in NAPI mode, an af_xdp port's config, waiting, and reading the tester's captures.

use super::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Namespaces `{prefix}t{tag}` and `{prefix}d{tag}`, t0-d0 and t1-d1 at MTU 1500, the
/// tester's ports in NAPI mode: frames XDP redirects into a veth reach its peer only then,
/// which an XDP program or GRO gives it (docs/xdp-fastpath.md).
pub fn napi_lab(prefix: &str, tag: &str) -> Lab {
    let l = Lab::new(
        &format!("{prefix}t{tag}"),
        &format!("{prefix}d{tag}"),
        2,
        1500,
        &format!("fastpath-{prefix}{tag}"),
    );
    for t in ["t0", "t1"] {
        let out = l
            .tester
            .exec("ethtool", &["-K", t, "gro", "on"])
            .output()
            .unwrap();
        assert!(out.status.success(), "ethtool: {out:?}");
    }
    l
}

/// An af_xdp `[[interface]]` with `fast-path` = `mode` and `more` lines after it.
pub fn port(name: &str, mode: &str, more: &str) -> String {
    format!(
        "[[interface]]\nname = \"{name}\"\ndriver = \"af_xdp\"\nmtu = 1500\n\
         xdp-mode = \"native\"\nring-size = 4096\nfast-path = \"{mode}\"\n{more}"
    )
}

pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Frames the generator saw arrive (or missed in its own ring), checked intact.
pub fn all_arrived(gen: &Value, count: u64, what: &str) {
    let seen = u(&gen["rx_packets"]) + u(&gen["rx_ring_drops"]);
    assert_eq!(seen, count, "{what}: not every frame arrived: {gen}");
    assert_eq!(gen["rx_corrupt"], 0, "{what}: byte-identical: {gen}");
    assert_eq!(gen["rx_dup"], 0, "{what}: {gen}");
}

pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The frames of a pcap file (classic format, as the generator writes it).
pub fn pcap_frames(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= b.len() {
        let len = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(b[at + 16..at + 16 + len].to_vec());
        at += 16 + len;
    }
    out
}

/// A device's MAC address as bytes.
pub fn mac_bytes(ns: &Netns, dev: &str) -> Vec<u8> {
    super::routed::mac_of(ns, dev)
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}
