//! The fast path's program run by the kernel (BPF_PROG_TEST_RUN) for every action and every
//! miss reason, with the maps as the program sees them.

use super::maps::{Key, Maps, RouteRewrite, Value};
use super::program::{fast_path_program, Reason, XDP_PASS, XDP_REDIRECT};
use crate::sys::bpf::{load_xdp_program, map_create, prog_test_run_action, MapKind, TestRun};

pub(super) const LO: u32 = 1;

/// The program over fresh maps, or None where BPF is not allowed (not root) outside CI.
pub(super) fn setup() -> Option<(Maps, crate::sys::bpf::BpfMap, crate::sys::bpf::BpfFd)> {
    let maps = match Maps::create(64) {
        Ok(m) => m,
        Err(e) if std::env::var_os("CI").is_none() && e.contains("CAP_BPF") => return None,
        Err(e) => panic!("{e}"),
    };
    let xsks = map_create(MapKind::XskMap, 4, 4, 1).unwrap();
    let insns = fast_path_program(&maps, xsks.raw_fd()).unwrap();
    let prog = load_xdp_program(&insns, "sluice_fp_test").unwrap();
    Some((maps, xsks, prog))
}

/// One run on a 60-byte frame received on lo's queue 0: the action.
fn run(prog: &crate::sys::bpf::BpfFd) -> u32 {
    run_frame(prog, &[0x5au8; 60])
}

fn run_frame(prog: &crate::sys::bpf::BpfFd, frame: &[u8]) -> u32 {
    run_out(prog, frame).0
}

#[test]
fn each_action_and_miss_reason() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(7, 41).unwrap();
    let reasons = |maps: &Maps| maps.reason_counts();
    // No entry: to the socket, whose map has none for the queue: the fallback, XDP_PASS.
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::NoEntry as usize], 1);

    let key = Key::xconnect(LO);
    let mut value = Value {
        epoch: 7,
        out_slot: 3,
        in_stat: 1,
        out_stat: 2,
        hits: 0,
        seen: 0,
        route: None,
        nat: None,
    };
    // An entry whose egress is not in the devmap.
    maps.insert(&key, &value).unwrap();
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::NoEgress as usize], 1);

    // The egress known: redirected, counted on both interfaces, the flow stamped.
    maps.set_egress(3, LO).unwrap();
    assert_eq!(run(&prog), XDP_REDIRECT as u32);
    assert_eq!(run(&prog), XDP_REDIRECT as u32);
    assert_eq!(reasons(&maps)[Reason::Hit as usize], 2);
    // What the graph treats apart goes to it even so: a short frame, tagged frames.
    assert_eq!(run_frame(&prog, &[0x5a; 59]), XDP_PASS as u32);
    for tpid in [[0x81, 0x00], [0x88, 0xa8]] {
        let mut tagged = [0x5au8; 64];
        tagged[12..14].copy_from_slice(&tpid);
        assert_eq!(run_frame(&prog, &tagged), XDP_PASS as u32);
    }
    assert_eq!(reasons(&maps)[Reason::Graph as usize], 3);
    let rx = maps.interface_counts(1);
    let tx = maps.interface_counts(2);
    assert_eq!((rx.rx_packets, rx.rx_bytes, rx.tx_packets), (2, 120, 0));
    assert_eq!((tx.tx_packets, tx.tx_bytes, tx.rx_packets), (2, 120, 0));
    let flows = maps.flows(10);
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].1.hits, 2, "{flows:?}");
    // Each frame forwarded marks the entry with the sweep's generation.
    assert_eq!(flows[0].1.seen, 41, "{flows:?}");
    maps.set_epoch(7, 42).unwrap();
    assert_eq!(run_frame(&prog, &[0x5a; 59]), XDP_PASS as u32);
    assert_eq!(
        maps.flows(10)[0].1.seen,
        41,
        "a frame for the graph does not"
    );
    assert_eq!(run(&prog), XDP_REDIRECT as u32);
    assert_eq!(maps.flows(10)[0].1.seen, 42);

    // A change of epoch makes the entry stale: to the socket again.
    maps.set_epoch(8, 1).unwrap();
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::Stale as usize], 1);
    value.epoch = 8;
    maps.insert(&key, &value).unwrap();
    assert_eq!(run(&prog), XDP_REDIRECT as u32);

    // Removed: no entry.
    assert!(maps.remove(&key));
    assert_eq!(run(&prog), XDP_PASS as u32);
    assert_eq!(reasons(&maps)[Reason::NoEntry as usize], 2);
}

/// A UDP frame from 198.18.0.1 to 198.19.0.1 for `mac`, TTL `ttl`, with a valid checksum.
fn routed_frame(mac: [u8; 6], ttl: u8) -> Vec<u8> {
    routed_to(mac, ttl, [198, 19, 0, 1])
}

/// The same to `dst`.
fn routed_to(mac: [u8; 6], ttl: u8, dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&mac);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x11]);
    f[12..14].copy_from_slice(&[8, 0]);
    f[14..34].copy_from_slice(&[
        0x45, 0, 0, 46, 0, 1, 0, 0, ttl, 17, 0, 0, 198, 18, 0, 1, dst[0], dst[1], dst[2], dst[3],
    ]);
    let sum = crate::wire::ipv4::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&sum.to_be_bytes());
    f
}

pub(super) fn run_out(prog: &crate::sys::bpf::BpfFd, frame: &[u8]) -> (u32, Vec<u8>) {
    let mut ctx = [0u8; 24];
    ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
    ctx[12..16].copy_from_slice(&LO.to_ne_bytes());
    let mut out = vec![0u8; frame.len()];
    let (action, len) = prog_test_run_action(
        prog,
        TestRun {
            data_in: frame,
            data_out: Some(&mut out),
            ctx_in: Some(&ctx),
            repeat: 1,
            flags: 0,
        },
    )
    .unwrap();
    out.truncate(len);
    (action, out)
}

#[test]
fn a_routed_frame_is_rewritten_as_ip4_rewrite_does_and_the_graphs_cases_stay_its() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(3, 1).unwrap();
    maps.set_egress(0, LO).unwrap();
    let ours = [2, 0, 0, 0, 0, 0xd0];
    let route = RouteRewrite {
        dst_mac: [2, 0, 0, 0, 0, 0x22],
        src_mac: [2, 0, 0, 0, 0, 0xd1],
        max_len: 1514,
        in_mac: ours,
        use_slot: 9,
    };
    let value = Value {
        epoch: 3,
        out_slot: 0,
        in_stat: 4,
        out_stat: 5,
        hits: 0,
        seen: 0,
        route: Some(route),
        nat: None,
    };
    maps.insert(&Key::route4(LO, [198, 19, 0, 1]), &value)
        .unwrap();
    for ttl in [64u8, 2, 255] {
        let frame = routed_frame(ours, ttl);
        let (action, out) = run_out(&prog, &frame);
        assert_eq!(action, XDP_REDIRECT as u32, "ttl {ttl}");
        let mut want = routed_frame(ours, ttl - 1);
        want[..6].copy_from_slice(&route.dst_mac);
        want[6..12].copy_from_slice(&route.src_mac);
        assert_eq!(
            out, want,
            "ttl {ttl}: the checksum as a full recomputation gives it"
        );
    }
    let graph_before = maps.reason_counts()[Reason::Graph as usize];
    let bad: Vec<(&str, Vec<u8>)> = vec![
        ("ttl 1", routed_frame(ours, 1)),
        ("another MAC", routed_frame([2, 0, 0, 0, 0, 0x99], 64)),
        ("bad checksum", {
            let mut f = routed_frame(ours, 64);
            f[25] ^= 1;
            f
        }),
        ("options", {
            let mut f = routed_frame(ours, 64);
            f[14] = 0x46;
            f
        }),
        ("a fragment", {
            let mut f = routed_frame(ours, 64);
            f[20] = 0x20; // MF
            f
        }),
        ("a martian source", {
            let mut f = routed_frame(ours, 64);
            f[26] = 127;
            f
        }),
        ("padding", {
            let mut f = routed_frame(ours, 64);
            f.extend_from_slice(&[0; 4]);
            f
        }),
    ];
    // A source the router refuses (198.18.0.1 made one of ours) is the graph's too; once no
    // longer refused, the same frame is forwarded.
    maps.set_refused(0xc612_0001, true).unwrap();
    assert_eq!(run_out(&prog, &routed_frame(ours, 64)).0, XDP_PASS as u32);
    maps.set_refused(0xc612_0001, false).unwrap();
    assert_eq!(
        run_out(&prog, &routed_frame(ours, 64)).0,
        XDP_REDIRECT as u32
    );
    let graph_before = graph_before + 1;
    for (what, frame) in &bad {
        assert_eq!(run_out(&prog, frame).0, XDP_PASS as u32, "{what}");
    }
    let graph = maps.reason_counts()[Reason::Graph as usize] - graph_before;
    // The bad checksum, options and fragment stay out before the lookup, the others after.
    assert_eq!(
        graph,
        bad.len() as u64,
        "every case left to the graph, counted"
    );
    // Another destination has no entry.
    let mut other = routed_frame(ours, 64);
    other[33] = 2;
    let sum = crate::wire::ipv4::checksum(&{
        let mut h = other[14..34].to_vec();
        h[10] = 0;
        h[11] = 0;
        h
    });
    other[24..26].copy_from_slice(&sum.to_be_bytes());
    let before = maps.reason_counts()[Reason::NoEntry as usize];
    assert_eq!(run_out(&prog, &other).0, XDP_PASS as u32);
    assert_eq!(maps.reason_counts()[Reason::NoEntry as usize], before + 1);
    let rx = maps.interface_counts(4);
    assert_eq!((rx.rx_packets, rx.rx_bytes), (4, 240));
    assert_eq!(maps.interface_counts(5).tx_packets, 4);
    let flows = maps.flows(4);
    assert_eq!(
        flows[0].1.route.map(|r| r.use_slot),
        Some(9),
        "read back whole"
    );
}

#[test]
fn a_route_entry_covers_its_prefix_and_the_longest_entry_wins() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(2, 1).unwrap();
    maps.set_egress(0, LO).unwrap();
    let ours = [2, 0, 0, 0, 0, 0xd0];
    let value = |last: u8| Value {
        epoch: 2,
        out_slot: 0,
        in_stat: 1,
        out_stat: 2,
        hits: 0,
        seen: 0,
        route: Some(RouteRewrite {
            dst_mac: [2, 0, 0, 0, 0, last],
            src_mac: [2, 0, 0, 0, 0, 0xd1],
            max_len: 1514,
            in_mac: ours,
            use_slot: 0,
        }),
        nat: None,
    };
    // 198.19/16 by one next hop, 198.19.7.7 by another; the host bits of a prefix go.
    maps.insert(&Key::route4_prefix(LO, [198, 19, 3, 3], 16), &value(0x22))
        .unwrap();
    maps.insert(&Key::route4(LO, [198, 19, 7, 7]), &value(0x77))
        .unwrap();
    let next_hop = |dst: [u8; 4]| {
        let (action, out) = run_out(&prog, &routed_to(ours, 64, dst));
        (action == XDP_REDIRECT as u32).then(|| out[5])
    };
    assert_eq!(next_hop([198, 19, 0, 1]), Some(0x22));
    assert_eq!(next_hop([198, 19, 250, 9]), Some(0x22));
    assert_eq!(next_hop([198, 19, 7, 7]), Some(0x77), "the longest prefix");
    assert_eq!(next_hop([198, 20, 0, 1]), None, "outside the prefix");
    let listed: Vec<(u8, [u8; 4])> = maps
        .flows(8)
        .iter()
        .map(|(k, _)| (k.plen, k.addr[..4].try_into().unwrap()))
        .collect();
    assert_eq!(listed, vec![(16, [198, 19, 0, 0]), (32, [198, 19, 7, 7])]);

    // Even under a route for everything, what no route carries alike is the graph's:
    // 0/8, 127/8, multicast, class E, the limited broadcast.
    maps.insert(&Key::route4_prefix(LO, [0; 4], 0), &value(0x55))
        .unwrap();
    assert_eq!(next_hop([10, 0, 0, 1]), Some(0x55));
    let before = maps.reason_counts()[Reason::Graph as usize];
    let refused = [
        [0, 1, 2, 3],
        [127, 0, 0, 1],
        [224, 0, 0, 5],
        [240, 0, 0, 1],
        [255; 4],
    ];
    for dst in refused {
        assert_eq!(next_hop(dst), None, "{dst:?}");
    }
    let graph = maps.reason_counts()[Reason::Graph as usize] - before;
    assert_eq!(graph, refused.len() as u64);
    // Removed, the prefix no longer matches.
    assert!(maps.remove(&Key::route4_prefix(LO, [0; 4], 0)));
    assert!(maps.remove(&Key::route4_prefix(LO, [198, 19, 0, 0], 16)));
    assert_eq!(next_hop([198, 19, 0, 1]), None);
    assert_eq!(next_hop([198, 19, 7, 7]), Some(0x77));
}

#[test]
fn a_bridge_entry_carries_one_source_to_one_destination() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(4, 1).unwrap();
    maps.set_egress(0, LO).unwrap();
    let (dst, src) = ([2, 0, 0, 0, 0, 0xb1], [2, 0, 0, 0, 0, 0xa1]);
    let value = Value {
        epoch: 4,
        out_slot: 0,
        in_stat: 6,
        out_stat: 7,
        hits: 0,
        seen: 0,
        route: None,
        nat: None,
    };
    maps.insert(&Key::bridge(LO, dst, src), &value).unwrap();
    let frame = |dst: [u8; 6], src: [u8; 6]| {
        let mut f = vec![0x5au8; 64];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f[12..14].copy_from_slice(&[0x88, 0xb5]);
        f
    };
    // Sent on unchanged; IPv4 too (no route or NAT entry: on to the bridge's).
    let (action, out) = run_out(&prog, &frame(dst, src));
    assert_eq!((action, &out), (XDP_REDIRECT as u32, &frame(dst, src)));
    let mut ipv4 = routed_to(dst, 64, [198, 19, 0, 1]);
    ipv4[6..12].copy_from_slice(&src);
    assert_eq!(run_out(&prog, &ipv4), (XDP_REDIRECT as u32, ipv4.clone()));
    // Another source, or another destination, is not the entry's.
    let before = maps.reason_counts()[Reason::NoEntry as usize];
    assert_eq!(
        run_out(&prog, &frame(dst, [2, 0, 0, 0, 0, 0xa2])).0,
        XDP_PASS as u32
    );
    assert_eq!(
        run_out(&prog, &frame([2, 0, 0, 0, 0, 0xb2], src)).0,
        XDP_PASS as u32
    );
    assert_eq!(maps.reason_counts()[Reason::NoEntry as usize], before + 2);
    assert_eq!(maps.interface_counts(7).tx_packets, 2);
    let listed = maps.flows(4);
    assert_eq!(listed[0].0, Key::bridge(LO, dst, src));
    assert_eq!(listed[0].1.hits, 2);
}

/// A UDP/IPv6 frame from 2001:db8::7 to `dst` for `mac`, hop limit `hops`, 6 payload bytes.
fn routed6(mac: [u8; 6], hops: u8, dst: [u8; 16]) -> Vec<u8> {
    let mut f = vec![0u8; 62];
    f[..6].copy_from_slice(&mac);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x11]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    f[14] = 0x60;
    f[18..20].copy_from_slice(&8u16.to_be_bytes());
    f[20] = 17;
    f[21] = hops;
    f[22..38].copy_from_slice(
        &"2001:db8::7"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    f[38..54].copy_from_slice(&dst);
    f
}

#[test]
fn an_ipv6_route_entry_rewrites_as_ip6_rewrite_does_and_the_graphs_cases_stay_its() {
    let Some((maps, _xsks, prog)) = setup() else {
        return;
    };
    maps.set_epoch(9, 1).unwrap();
    maps.set_egress(0, LO).unwrap();
    let ours = [2, 0, 0, 0, 0, 0xd0];
    let route = RouteRewrite {
        dst_mac: [2, 0, 0, 0, 0, 0x66],
        src_mac: [2, 0, 0, 0, 0, 0xd1],
        max_len: 1514,
        in_mac: ours,
        use_slot: 0,
    };
    let value = Value {
        epoch: 9,
        out_slot: 0,
        in_stat: 8,
        out_stat: 9,
        hits: 0,
        seen: 0,
        route: Some(route),
        nat: None,
    };
    let a6 = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().octets();
    maps.insert(&Key::route6_prefix(LO, a6("2001:db8:19::"), 48), &value)
        .unwrap();
    let far = a6("2001:db8:19:5::9");
    let (action, out) = run_out(&prog, &routed6(ours, 64, far));
    assert_eq!(action, XDP_REDIRECT as u32);
    let mut want = routed6(ours, 63, far);
    want[..6].copy_from_slice(&route.dst_mac);
    want[6..12].copy_from_slice(&route.src_mac);
    assert_eq!(
        out, want,
        "the header, the hop limit one less, the rest as sent"
    );
    let graph = maps.reason_counts()[Reason::Graph as usize];
    let with = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut f = routed6(ours, 64, far);
        edit(&mut f);
        f
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("hop limit 1", routed6(ours, 1, far)),
        ("another MAC", routed6([2, 0, 0, 0, 0, 0x99], 64, far)),
        ("hop-by-hop", with(&|f| f[20] = 0)),
        ("padding", with(&|f| f.extend_from_slice(&[0; 4]))),
        ("short payload", with(&|f| f[19] = 16)),
        ("version", with(&|f| f[14] = 0x40)),
        ("multicast source", with(&|f| f[22] = 0xff)),
        (
            "link-local source",
            with(&|f| f[22..24].copy_from_slice(&[0xfe, 0x80])),
        ),
        ("unspecified source", with(&|f| f[22..38].fill(0))),
        (
            "loopback source",
            with(&|f| f[22..38].copy_from_slice(&a6("::1"))),
        ),
    ];
    for (what, f) in &cases {
        assert_eq!(run_out(&prog, f).0, XDP_PASS as u32, "{what}");
    }
    assert_eq!(
        maps.reason_counts()[Reason::Graph as usize] - graph,
        cases.len() as u64,
        "every case left to the graph, counted"
    );
    // Under a route for everything, destinations no route carries alike are the graph's.
    maps.insert(&Key::route6_prefix(LO, [0; 16], 0), &value)
        .unwrap();
    assert_eq!(
        run_out(&prog, &routed6(ours, 64, a6("2001:db8:77::1"))).0,
        XDP_REDIRECT as u32
    );
    for dst in ["ff02::1", "fe80::1", "::1", "::"] {
        assert_eq!(
            run_out(&prog, &routed6(ours, 64, a6(dst))).0,
            XDP_PASS as u32,
            "{dst}"
        );
    }
    // Outside every entry: no entry.
    assert!(maps.remove(&Key::route6_prefix(LO, [0; 16], 0)));
    let no_entry = maps.reason_counts()[Reason::NoEntry as usize];
    assert_eq!(
        run_out(&prog, &routed6(ours, 64, a6("2001:db8:20::1"))).0,
        XDP_PASS as u32
    );
    assert_eq!(maps.reason_counts()[Reason::NoEntry as usize], no_entry + 1);
    let listed = maps.flows(4);
    assert_eq!(
        (listed[0].0.plen, listed[0].0.addr),
        (48, a6("2001:db8:19::"))
    );
}
