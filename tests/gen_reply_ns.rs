//! The generator's answering far side (`sluice gen --reply`, issue 35): over a veth pair,
//! every frame is answered and every answer counted, both directions without loss, for
//! UDP and TCP over IPv4 and IPv6; and through a Linux router whose nftables ruleset lets
//! TCP through only as conntrack's established flows opened by a SYN, the flows open with
//! SYN, SYN+ACK, ACK and everything passes (without `--reply`, only the SYNs do); and
//! through the same router masquerading what leaves by d1 (NAT44), where the far side
//! answers the translated address and every frame and answer is counted and checked.

mod common;
use common::*;
use serde_json::Value;

/// A veth pair with IPv6 off, so the kernel sends nothing of its own.
fn quiet_pair(tag: &str) -> Netns {
    let ns = Netns::new(tag);
    ns.sysctl("net.ipv6.conf.all.disable_ipv6", "1");
    ns.sysctl("net.ipv6.conf.default.disable_ipv6", "1");
    ns.veth_pair("g0", "g1");
    ns
}

/// Both directions counted: `n` frames sent, received, answered, the answers received; no
/// loss, corruption, duplicate or reordering within a flow either way. `strays`: frames not
/// of the test a port may also see (through a router: its ARP and ND probes of the tester).
fn both_ways(gen: &Value, n: u64, what: &str, strays: u64) {
    assert_eq!(gen["reply"], true, "{what}: {gen}");
    let (fwd, rev) = (&gen["forward"], &gen["reverse"]);
    // The top-level fields are the forward direction's, as without --reply.
    for k in ["tx_packets", "rx_packets", "lost", "rx_corrupt"] {
        assert_eq!(gen[k], fwd[k], "{what}: {k}: {gen}");
    }
    // The answers go back from the port that received.
    assert_eq!(fwd["tx_interface"], gen["tx_interface"], "{what}");
    assert_eq!(rev["tx_interface"], gen["rx_interface"], "{what}");
    assert_eq!(rev["rx_interface"], gen["tx_interface"], "{what}");
    assert_eq!(fwd["latency"], "one-way", "{what}");
    assert_eq!(rev["latency"], "round-trip", "{what}");
    for dir in [fwd, rev] {
        assert_eq!(dir["tx_packets"], n, "{what}: {gen}");
        assert_eq!(dir["rx_packets"], n, "{what}: {gen}");
        for zero in ["lost", "rx_corrupt", "rx_dup", "rx_flow_reorder"] {
            assert_eq!(dir[zero], 0, "{what}: {zero}: {gen}");
        }
        let other = dir["rx_other"].as_u64().unwrap();
        assert!(other <= strays, "{what}: rx_other {other}: {gen}");
        assert!(
            dir["latency_ns"]["median"].as_u64().unwrap() > 0,
            "{what}: {gen}"
        );
    }
    assert_eq!(rev["tx_not_sent"], 0, "{what}: {gen}");
    assert_eq!(rev["tx_errors"], 0, "{what}: {gen}");
}

/// UDP and TCP, IPv4 and IPv6, mixed sizes (the kinds' smallest frames, with the short test
/// header, among them), every frame and every answer compared byte for byte.
#[test]
fn every_frame_is_answered_and_every_answer_counted() {
    if !needs_root() {
        return;
    }
    let ns = quiet_pair("reply");
    for family in ["ipv4", "ipv6"] {
        for l4 in ["udp", "tcp"] {
            let gen = gen_json(
                &ns,
                &[
                    "--tx", "g0", "--rx", "g1", "--reply", "--family", family, "--l4", l4,
                    "--flows", "16", "--size", "imix", "--count", "2000", "--rate", "20000",
                    "--verify", "all",
                ],
            );
            let what = format!("{family}/{l4}");
            both_ways(&gen, 2000, &what, 0);
            assert_eq!(gen["reverse"]["rx_verified"], 2000, "{what}: {gen}");
            // Nothing else on the pair: every frame is ours.
            assert_eq!(gen["forward"]["rx_other"], 0, "{what}: {gen}");
            assert_eq!(gen["reverse"]["rx_other"], 0, "{what}: {gen}");
            // TCP: the FIN+ACK closing each flow is answered too, not counted.
            let closing = if l4 == "tcp" { 16 } else { 0 };
            assert_eq!(gen["reverse"]["tx_uncounted"], closing, "{what}: {gen}");
        }
    }
}

/// The router namespace: d0 (192.0.2.1, 2001:db8::1) towards the tester's t0, d1
/// (198.51.100.1, 2001:db8:1::1) towards t1, the generator's networks routed to each side
/// through fixed neighbours, and an nftables forward chain that drops what conntrack calls
/// invalid, accepts established flows and new ones only by a SYN, and drops the rest.
fn router(tester: &Netns, tag: &str) -> Netns {
    let r = Netns::new(tag);
    veth(tester, "t0", &r, "d0", 1500);
    veth(tester, "t1", &r, "d1", 1500);
    let t0 = routed::mac_of(tester, "t0");
    let t1 = routed::mac_of(tester, "t1");
    for dev in ["d0", "d1"] {
        for (k, v) in [("accept_dad", "0"), ("disable_ipv6", "0")] {
            r.sysctl(&format!("net.ipv6.conf.{dev}.{k}"), v);
        }
    }
    for args in [
        vec!["addr", "add", "192.0.2.1/24", "dev", "d0"],
        vec!["addr", "add", "198.51.100.1/24", "dev", "d1"],
        vec!["addr", "add", "2001:db8::1/64", "dev", "d0", "nodad"],
        vec!["addr", "add", "2001:db8:1::1/64", "dev", "d1", "nodad"],
        vec!["route", "add", "198.19.0.0/16", "via", "198.51.100.2"],
        vec!["route", "add", "198.18.0.0/16", "via", "192.0.2.2"],
        vec![
            "route",
            "add",
            "2001:db8:198:19::/64",
            "via",
            "2001:db8:1::2",
        ],
        vec!["route", "add", "2001:db8:198:18::/64", "via", "2001:db8::2"],
        vec![
            "neigh",
            "replace",
            "198.51.100.2",
            "lladdr",
            &t1,
            "dev",
            "d1",
            "nud",
            "permanent",
        ],
        vec![
            "neigh",
            "replace",
            "192.0.2.2",
            "lladdr",
            &t0,
            "dev",
            "d0",
            "nud",
            "permanent",
        ],
        vec![
            "neigh",
            "replace",
            "2001:db8:1::2",
            "lladdr",
            &t1,
            "dev",
            "d1",
            "nud",
            "permanent",
        ],
        vec![
            "neigh",
            "replace",
            "2001:db8::2",
            "lladdr",
            &t0,
            "dev",
            "d0",
            "nud",
            "permanent",
        ],
    ] {
        let o = r.ip(&args);
        assert!(o.status.success(), "ip {args:?}: {}", routed::text(&o));
    }
    for key in ["net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"] {
        r.sysctl(key, "1");
    }
    for key in [
        "net.ipv4.conf.all.rp_filter",
        "net.ipv4.conf.d0.rp_filter",
        "net.ipv4.conf.d1.rp_filter",
    ] {
        r.sysctl(key, "0");
    }
    let rules = "table inet ct_test {\n chain forward {\n  type filter hook forward priority 0; policy drop;\n  \
                 ct state invalid counter drop\n  ct state established counter accept\n  \
                 ct state new tcp flags & (syn | ack) == syn counter accept\n  counter drop\n }\n}\n";
    let mut nft = r.exec("nft", &["-f", "-"]);
    let mut child = nft
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(rules.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "nft -f");
    r
}

/// The packets each rule of the forward chain counted: invalid, established, new, dropped.
fn ct_counters(r: &Netns) -> Vec<u64> {
    let o = r
        .exec("nft", &["list", "table", "inet", "ct_test"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    s.split("packets ")
        .skip(1)
        .map(|t| t.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// TCP through conntrack: without `--reply`, the ACKs of flows that never saw a SYN+ACK are
/// invalid and dropped, only the SYNs get through; with it, every flow opens (SYN, SYN+ACK,
/// ACK) and every segment and answer passes as established, nothing invalid, and the flows are
/// in conntrack's table as assured (they reached ESTABLISHED).
#[test]
fn tcp_flows_become_established_through_conntrack() {
    if !needs_root() || !prerequisite(nft_present(), "nft") {
        return;
    }
    let tester = Netns::new("rtgen");
    let r = router(&tester, "rtct");
    let d0 = routed::mac_of(&r, "d0");
    let t0 = routed::mac_of(&tester, "t0");
    // 100 flows at 2000 pps: a flow's next segment leaves 50 ms after its SYN, long after
    // the SYN+ACK is back through the router.
    let (flows, count) = (100u64, 1000u64);
    for family in ["ipv4", "ipv6"] {
        let gen = |reply: bool| {
            let (c, f) = (count.to_string(), flows.to_string());
            let mut args = vec![
                "--tx",
                "t0",
                "--rx",
                "t1",
                "--family",
                family,
                "--l4",
                "tcp",
                "--flows",
                &f,
                "--count",
                &c,
                "--rate",
                "2000",
                "--routed",
                "--src-mac",
                &t0,
                "--dst-mac",
                &d0,
            ];
            if reply {
                args.push("--reply");
            }
            gen_json(&tester, &args)
        };
        // First without the answers: the flows never open.
        let g = gen(false);
        assert_eq!(g["rx_packets"], flows, "{family}: only the SYNs pass: {g}");
        let before = ct_counters(&r);
        let g = gen(true);
        both_ways(&g, count, family, 4);
        let after = ct_counters(&r);
        let d: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        // Rules: invalid, established, new by a SYN, the rest dropped.
        assert_eq!(d[0], 0, "{family}: invalid packets: {d:?}");
        assert_eq!(d[3], 0, "{family}: dropped: {d:?}");
        assert_eq!(d[2], flows, "{family}: a SYN per flow: {d:?}");
        // The other segments, every answer, the closing FIN+ACKs and their answers.
        assert_eq!(d[1], 2 * count + flows, "{family}: {d:?}");
        let ct = r.exec("cat", &["/proc/net/nf_conntrack"]).output().unwrap();
        let ct = String::from_utf8_lossy(&ct.stdout);
        let ours: Vec<&str> = ct
            .lines()
            .filter(|l| l.starts_with(family) && l.contains(" tcp ") && l.contains("dport=1024 "))
            .collect();
        assert_eq!(ours.len() as u64, flows, "{family}: {ct}");
        assert!(
            ours.iter().all(|l| l.contains("[ASSURED]")),
            "{family}: {ct}"
        );
    }
}

fn nft_present() -> bool {
    std::process::Command::new("nft")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Through NAT44 (nftables `masquerade` out of d1): the frames reach t1 from d1's address,
/// the far side answers that address and conntrack translates the answers back; with
/// `--translated` every frame and every answer is counted and checked, nothing corrupt.
/// Without it, the frames compared byte for byte (one in 16) count as corrupt: the
/// receiver counts by the test header, the check is what needs to know of the NAT.
#[test]
fn every_frame_is_counted_through_masquerade() {
    if !needs_root() || !prerequisite(nft_present(), "nft") {
        return;
    }
    let tester = Netns::new("natgen");
    let r = router(&tester, "natrt");
    // No filter (it lets TCP SYNs only open flows), the NAT instead.
    let o = r
        .exec("nft", &["delete", "table", "inet", "ct_test"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", routed::text(&o));
    let rules =
        "table ip nat_test {\n chain post {\n  type nat hook postrouting priority srcnat;\n  \
                 oifname \"d1\" masquerade\n }\n}\n";
    let mut child = r
        .exec("nft", &["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(rules.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "nft -f");
    let d0 = routed::mac_of(&r, "d0");
    let t0 = routed::mac_of(&tester, "t0");
    let (flows, count) = (100u64, 1000u64);
    for l4 in ["udp", "tcp"] {
        let gen = |translated: bool| {
            let (c, f) = (count.to_string(), flows.to_string());
            let mut args = vec![
                "--tx",
                "t0",
                "--rx",
                "t1",
                "--l4",
                l4,
                "--flows",
                &f,
                "--count",
                &c,
                "--rate",
                "2000",
                "--size",
                "70,1514",
                "--routed",
                "--src-mac",
                &t0,
                "--dst-mac",
                &d0,
                "--reply",
            ];
            if translated {
                args.push("--translated");
            }
            gen_json(&tester, &args)
        };
        let g = gen(true);
        both_ways(&g, count, l4, 4);
        assert!(
            g["forward"]["rx_verified"].as_u64().unwrap() > 0,
            "{l4}: {g}"
        );
        // Translated by conntrack: each flow from its 198.18 source, answered to d1.
        let ct = r.exec("cat", &["/proc/net/nf_conntrack"]).output().unwrap();
        let ct = String::from_utf8_lossy(&ct.stdout);
        let ours = ct
            .lines()
            .filter(|l| {
                l.contains(&format!(" {l4} "))
                    && l.contains("src=198.18.")
                    && l.contains("dst=198.51.100.1 ")
            })
            .count();
        assert_eq!(ours as u64, flows, "{l4}: {ct}");
        let g = gen(false);
        assert_eq!(
            g["forward"]["rx_packets"], count,
            "{l4}: counted all the same: {g}"
        );
        assert!(
            g["forward"]["rx_corrupt"].as_u64().unwrap() > 0,
            "{l4}: {g}"
        );
    }
}
