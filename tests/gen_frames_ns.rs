//! The generator's IPv6 and TCP frames (issue 35), sent port to port over a veth pair: the
//! receiver counts every one with no loss, duplicate, reordering within a flow or corruption,
//! and scapy — an implementation independent of sluice's — reads the captured frames and
//! finds their headers, lengths, checksums and TCP segments right (tests/gen_frames/check.py).

mod common;
use common::*;

/// Debian's interpreter, which has python3-scapy.
const PYTHON: &str = "/usr/bin/python3";

fn scapy_present() -> bool {
    std::process::Command::new(PYTHON)
        .args(["-c", "import scapy.all"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A veth pair with IPv6 off, so the kernel sends nothing of its own (neighbour discovery,
/// MLD) that a count would have to leave out.
fn quiet_pair(tag: &str) -> Netns {
    let ns = Netns::new(tag);
    ns.sysctl("net.ipv6.conf.all.disable_ipv6", "1");
    ns.sysctl("net.ipv6.conf.default.disable_ipv6", "1");
    ns.veth_pair("g0", "g1");
    ns
}

/// Send `count` frames of FAMILY/L4 with `extra` options and the receiver checking every
/// byte; require them all counted, then have scapy check the capture.
fn send_and_check(ns: &Netns, family: &str, l4: &str, extra: &[&str], tags: &str) {
    let dir = tmpdir("genframes");
    let pcap = dir.join(format!("{family}-{l4}-{}.pcap", extra.join("_")));
    let (count, flows) = ("520", "4");
    let mut args = vec![
        "--tx",
        "g0",
        "--rx",
        "g1",
        "--family",
        family,
        "--l4",
        l4,
        "--flows",
        flows,
        "--count",
        count,
        "--rate",
        "20000",
        "--verify",
        "all",
        "--rx-pcap",
    ];
    args.push(pcap.to_str().unwrap());
    args.extend_from_slice(extra);
    let gen = gen_json(ns, &args);
    let what = format!("{family}/{l4} {extra:?}: {gen}");
    assert_eq!(gen["family"], family, "{what}");
    assert_eq!(gen["l4"], l4, "{what}");
    assert_eq!(gen["tx_packets"], 520, "{what}");
    assert_eq!(gen["rx_packets"], 520, "{what}");
    assert_eq!(gen["rx_verified"], 520, "{what}");
    for zero in [
        "rx_corrupt",
        "rx_dup",
        "rx_flow_reorder",
        "rx_other",
        "lost",
    ] {
        assert_eq!(gen[zero], 0, "{zero}: {what}");
    }
    assert!(gen["latency_ns"]["median"].as_u64().unwrap() > 0, "{what}");
    let out = std::process::Command::new(PYTHON)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/gen_frames/check.py"
        ))
        .args([pcap.to_str().unwrap(), family, l4, flows, count, tags])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scapy on {what}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    // Every frame, and for TCP the FIN+ACK closing each flow too.
    let closing = if l4 == "tcp" { 4 } else { 0 };
    assert_eq!(said.trim(), format!("ok {}", 520 + closing), "{what}");
    std::fs::remove_dir_all(&dir).ok();
}

/// IPv6/UDP, IPv4/TCP and IPv6/TCP; each in IMIX (which holds the kind's smallest size: 78,
/// 70, 90 bytes, the short test header) untagged and 802.1Q, and at its smallest size QinQ.
#[test]
fn ipv6_and_tcp_frames_pass_scapy_and_the_receiver() {
    if !needs_root() || !prerequisite(scapy_present(), "python3-scapy") {
        return;
    }
    let ns = quiet_pair("genfr");
    for (family, l4) in [("ipv6", "udp"), ("ipv4", "tcp"), ("ipv6", "tcp")] {
        send_and_check(&ns, family, l4, &["--size", "imix"], "none");
        send_and_check(
            &ns,
            family,
            l4,
            &["--size", "imix", "--vlan", "100"],
            "vlan:100",
        );
        // Smallest size only: IMIX's 1518-byte frames with 8 bytes of tags are past what the
        // kernel lets a packet socket send on a 1500-byte MTU.
        send_and_check(&ns, family, l4, &["--qinq", "10,20"], "qinq:10,20");
    }
}

/// Many flows both ways: var2 IPv6/TCP and 1000 IPv6/UDP flows, every frame counted in order
/// within its flow.
#[test]
fn ipv6_var2_and_tcp_both_ways_lose_nothing() {
    if !needs_root() {
        return;
    }
    let ns = quiet_pair("genbi");
    for (l4, flows) in [("tcp", "var2"), ("udp", "1000")] {
        let gen = gen_json(
            &ns,
            &[
                "--tx", "g0", "--rx", "g1", "--bi", "--family", "ipv6", "--l4", l4, "--flows",
                flows, "--size", "imix", "--count", "20000", "--rate", "50000",
            ],
        );
        assert_eq!(gen["direction"], "bi", "{gen}");
        assert_eq!(gen["tx_packets"], 40000, "{gen}");
        assert_eq!(gen["rx_packets"], 40000, "{gen}");
        for zero in ["rx_corrupt", "rx_dup", "rx_flow_reorder", "rx_other"] {
            assert_eq!(gen[zero], 0, "{zero}: {gen}");
        }
    }
}

/// The XDP live-frames engine sends IPv6/UDP (var2, IMIX) and every frame reaches the peer
/// (counted by the interface; the frames' checksums are checked in xdp_live's unit test).
#[test]
fn xdp_engine_sends_ipv6() {
    if !needs_root() {
        return;
    }
    let ns = quiet_pair("genx6");
    // XDP frames into a veth need the peer in NAPI mode.
    let o = ns
        .exec("ethtool", &["-K", "g1", "gro", "on"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let gen = gen_json(
        &ns,
        &[
            "--tx", "g0", "--rx", "g1", "--engine", "xdp", "--family", "ipv6", "--flows", "var2",
            "--size", "imix", "--count", "100000",
        ],
    );
    assert_eq!(gen["family"], "ipv6", "{gen}");
    assert_eq!(gen["frame_size"], "imix", "{gen}");
    assert_eq!(gen["tx_packets"], 100000, "{gen}");
    assert_eq!(gen["rx_packets"], 100000, "{gen}");
}
