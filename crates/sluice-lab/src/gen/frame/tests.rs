//! The frame builder's unit tests.

use super::*;
use sluice::wire::ipv4::checksum;

fn profile() -> Profile {
    profile_of(Family::Ipv4, L4::Udp, &[64, 1514, 9000])
}

/// Four flows of `family` and `l4` in `sizes`, from 198.18/16 (or `SRC_NET6`) to 198.19/16
/// (`DST_NET6`), MAC 02:00:00:00:00:01 to :02, untagged.
pub(super) fn profile_of(family: Family, l4: L4, sizes: &[usize]) -> Profile {
    Profile {
        sizes: sizes.to_vec(),
        flows: 4,
        var2: false,
        src_net: [198, 18],
        dst_net: [198, 19],
        family,
        l4,
        src_net6: SRC_NET6,
        dst_net6: DST_NET6,
        routed: false,
        translated: false,
        src_mac: "02:00:00:00:00:01".parse().unwrap(),
        dst_mac: "02:00:00:00:00:02".parse().unwrap(),
        macs: 1,
        vlans: Vec::new(),
        vlan_spread: 1,
    }
}

#[test]
fn vlan_tags_add_to_the_size_and_stamps_read_through_them() {
    let mut p = profile();
    p.vlans = vec![(0x88a8, 10), (0x8100, 20)];
    let mut f = Vec::new();
    p.build(3, 77, &mut f);
    assert_eq!(f.len(), p.frame_len(3));
    assert_eq!(f.len(), 60 + 8);
    assert_eq!(&f[12..22], &[0x88, 0xa8, 0, 10, 0x81, 0, 0, 20, 8, 0]);
    assert_eq!(
        stamp(&f),
        Some(Stamp {
            seq: 3,
            tx_ns: 77,
            short: false
        })
    );
    let mut scratch = Vec::new();
    assert!(verify(
        &p,
        &f,
        Stamp {
            seq: 3,
            tx_ns: 77,
            short: false
        },
        &mut scratch
    ));
}

/// With a spread, flow f's inner tag is the id + f % spread; the outer one stays.
#[test]
fn vlan_spread_gives_each_flow_its_tenant() {
    let mut p = profile();
    p.vlans = vec![(0x88a8, 10), (0x8100, 100)];
    p.vlan_spread = 3;
    let mut f = Vec::new();
    for seq in 0..8u64 {
        p.build(seq, 0, &mut f);
        let flow = seq % p.flows as u64;
        let vid = u16::from_be_bytes([f[18], f[19]]);
        assert_eq!(vid, 100 + (flow % 3) as u16, "seq {seq}");
        assert_eq!(&f[12..16], &[0x88, 0xa8, 0, 10]);
        assert!(verify(&p, &f, stamp(&f).unwrap(), &mut Vec::new()));
    }
}

#[test]
fn macs_step_through_the_low_bytes() {
    let mut p = profile();
    p.macs = 1000;
    let mut f = Vec::new();
    p.build(1001, 0, &mut f);
    assert_eq!(&f[..12], &[2, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 3]);
    p.build(999, 0, &mut f);
    assert_eq!(&f[..12], &[2, 0, 0, 0, 0x07, 0xd0, 2, 0, 0, 0, 0x07, 0xcf]);
    assert!(!p.macs_overlap(), "odd difference: apart");
    p.dst_mac = MacAddress([2, 0, 0, 0, 0, 9]);
    assert!(p.macs_overlap(), "01 + 2k meets 09 + 2j");
    p.dst_mac = MacAddress([2, 0, 0, 0x10, 0, 1]);
    assert!(!p.macs_overlap(), "far apart");
    assert_eq!(
        mac_plus(MacAddress([2, 0, 0, 0xff, 0xff, 0xff]), 2).0,
        [2, 0, 0, 0, 0, 1]
    );
}

#[test]
fn sizes_exclude_fcs_and_checksum_verifies() {
    let p = profile();
    let mut f = Vec::new();
    for (seq, want) in [(0u64, 60usize), (1, 1510), (2, 8996)] {
        p.build(seq, 123, &mut f);
        assert_eq!(f.len(), want);
        // A correct header sums to zero with its checksum.
        assert_eq!(checksum(&f[14..34]), 0);
        assert_eq!(u16::from_be_bytes([f[16], f[17]]) as usize, want - 14);
    }
}

#[test]
fn flows_vary_source() {
    let p = profile();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    p.build(0, 0, &mut a);
    p.build(1, 0, &mut b);
    assert_ne!(a[26..30], b[26..30]);
    p.build(4, 0, &mut b);
    assert_eq!(a[26..30], b[26..30], "flow repeats after 4");
}

/// The (source address, source port) of flow `k` among `flows`.
fn source_of(flows: u32, k: u32) -> ([u8; 4], [u8; 2]) {
    let p = Profile { flows, ..profile() };
    let mut f = Vec::new();
    p.build(k as u64, 0, &mut f);
    (f[26..30].try_into().unwrap(), f[34..36].try_into().unwrap())
}

/// Flows whose address or port alone would repeat (65 536 apart: the same address;
/// 64 512 apart: the same port) still differ by the other, up to `MAX_FLOWS`, where the
/// pair of flow 0 comes back.
#[test]
fn a_million_flows_are_a_million_tuples() {
    let n = MAX_FLOWS;
    for k in [0, 1, 999, 64_511, 300_000] {
        for step in [65_536, 64_512, 65_536 * 7, 64_512 * 11] {
            let (a, b) = (source_of(n, k), source_of(n, k + step));
            assert_ne!(a, b, "flows {k} and {}", k + step);
        }
    }
    let mut seen = std::collections::HashSet::new();
    for k in (0..1_000_000).step_by(97) {
        assert!(seen.insert(source_of(n, k)), "flow {k}");
    }
    let mut f = Vec::new();
    let p = Profile {
        flows: n + 1,
        ..profile()
    };
    p.build(n as u64, 0, &mut f);
    let wrapped: ([u8; 4], [u8; 2]) =
        (f[26..30].try_into().unwrap(), f[34..36].try_into().unwrap());
    assert_eq!(wrapped, source_of(n, 0), "the pairs repeat at MAX_FLOWS");
}

#[test]
fn verify_accepts_good_and_rejects_flipped_byte() {
    let p = profile();
    let mut f = Vec::new();
    let mut scratch = Vec::new();
    p.build(77, 999, &mut f);
    let st = stamp(&f).unwrap();
    assert_eq!(
        st,
        Stamp {
            seq: 77,
            tx_ns: 999,
            short: false,
        }
    );
    assert!(verify(&p, &f, st, &mut scratch));
    for at in [0, 20, 40, 60, f.len() - 1] {
        let mut bad = f.clone();
        bad[at] ^= 0x10;
        let ok = stamp(&bad)
            .map(|s| verify(&p, &bad, s, &mut scratch))
            .unwrap_or(false);
        assert!(!ok, "flip at {at} not caught");
    }
    assert!(stamp(&f[..40]).is_none());
}

#[test]
fn a_sampled_check_catches_wrong_lengths_and_a_full_one_every_byte() {
    let mut p = profile();
    p.sizes = vec![64, 128];
    let (mut f, mut scratch) = (Vec::new(), Vec::new());
    p.build(3, 5, &mut f);
    let st = stamp(&f).unwrap();
    assert!(check(&p, &f, st, false, &mut scratch));
    assert!(check(&p, &f, st, true, &mut scratch));
    // Frame 3 is 128 bytes with FCS: cut short, both checks see it.
    assert!(!check(&p, &f[..f.len() - 4], st, false, &mut scratch));
    assert!(!check(&p, &f[..f.len() - 4], st, true, &mut scratch));
    // A flipped payload byte: only the full check compares bytes.
    let last = f.len() - 1;
    f[last] ^= 1;
    assert!(check(&p, &f, st, false, &mut scratch));
    assert!(!check(&p, &f, st, true, &mut scratch));
}

#[test]
fn var2_varies_source_and_destination() {
    let mut p = profile();
    p.var2 = true;
    p.flows = VAR2_FLOWS;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    p.build(0, 0, &mut a);
    p.build(300, 0, &mut b);
    assert_eq!(a[26..34], [198, 18, 0, 1, 198, 19, 0, 1]);
    assert_eq!(b[26..34], [198, 18, 1, 45, 198, 19, 1, 45]);
    p.build(VAR2_FLOWS as u64, 0, &mut b);
    assert_eq!(a[26..34], b[26..34], "wraps after the /16");
}

#[test]
fn imix_cycles_have_the_stated_ratio_spread_out() {
    let c = weighted_cycle(&TREX_IMIX);
    assert_eq!(c.len(), 52);
    assert_eq!(c.iter().filter(|&&s| s == 64).count(), 28);
    assert_eq!(c.iter().filter(|&&s| s == 594).count(), 20);
    assert_eq!(c.iter().filter(|&&s| s == 1518).count(), 4);
    // Spread: no run of more than two equal sizes.
    assert!(
        c.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])),
        "{c:?}"
    );
    let s = parse_sizes("simple-imix").unwrap();
    assert_eq!(s.len(), 12);
    assert_eq!(s.iter().filter(|&&x| x == 1518).count(), 1);
}

#[test]
fn routed_verification_accepts_a_routers_rewrite_only() {
    let mut p = profile();
    p.routed = true;
    let mut f = Vec::new();
    let mut scratch = Vec::new();
    p.build(5, 1, &mut f);
    let st = stamp(&f).unwrap();
    // As a router forwards it: new MACs, TTL 63, checksum updated.
    let mut routed = f.clone();
    routed[0..12].copy_from_slice(&[9; 12]);
    routed[22] = 63;
    routed[24..26].copy_from_slice(&[0, 0]);
    let sum = checksum(&routed[14..34]);
    routed[24..26].copy_from_slice(&sum.to_be_bytes());
    assert!(verify(&p, &routed, st, &mut scratch));
    // Unchanged TTL, a stale checksum, or a changed payload are not a router's doing.
    assert!(!verify(&p, &f, st, &mut scratch));
    let mut stale = routed.clone();
    stale[22] = 62;
    assert!(!verify(&p, &stale, st, &mut scratch));
    let mut payload = routed.clone();
    payload[50] ^= 1;
    assert!(!verify(&p, &payload, st, &mut scratch));
}

/// An IPv4 frame (no tags, no options) as a NAT44 router forwards it: new MACs, TTL less
/// one, `src` and `sport` for the source (`dst` and `dport` for the destination, when
/// given: a reply translated back), both checksums recomputed (a UDP checksum of 0 left
/// 0), as Linux's conntrack or sluice's NAT leave it.
pub(in crate::gen) fn nat44(
    f: &[u8],
    src: Option<([u8; 4], u16)>,
    dst: Option<([u8; 4], u16)>,
) -> Vec<u8> {
    let mut n = f.to_vec();
    let (ip, l4) = (14, 34);
    n[0..12].copy_from_slice(&[0x0a; 12]);
    n[ip + 8] -= 1;
    if let Some((a, p)) = src {
        n[ip + 12..ip + 16].copy_from_slice(&a);
        n[l4..l4 + 2].copy_from_slice(&p.to_be_bytes());
    }
    if let Some((a, p)) = dst {
        n[ip + 16..ip + 20].copy_from_slice(&a);
        n[l4 + 2..l4 + 4].copy_from_slice(&p.to_be_bytes());
    }
    n[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let c = checksum(&n[ip..l4]);
    n[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    let at = l4 + if n[ip + 9] == 6 { 16 } else { 6 };
    if n[ip + 9] == 6 || n[at..at + 2] != [0, 0] {
        n[at..at + 2].copy_from_slice(&[0, 0]);
        let total = u16::from_be_bytes([n[ip + 2], n[ip + 3]]) as usize;
        let mut pseudo = n[ip + 12..ip + 20].to_vec();
        pseudo.extend_from_slice(&[0, n[ip + 9]]);
        pseudo.extend_from_slice(&((total - 20) as u16).to_be_bytes());
        pseudo.extend_from_slice(&n[l4..ip + total]);
        let c = checksum(&pseudo);
        n[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }
    n
}

/// d1's address in the NAT tests.
pub(in crate::gen) const NAT_ADDRESS: [u8; 4] = [198, 51, 100, 1];

#[test]
fn translated_verification_accepts_a_nat_rewrite_only() {
    for l4 in [L4::Udp, L4::Tcp] {
        let mut p = kind(Family::Ipv4, l4, &[70, 1514], 4);
        (p.routed, p.translated) = (true, true);
        let mut scratch = Vec::new();
        for seq in [5, 6] {
            let mut f = Vec::new();
            p.build(seq, 1, &mut f);
            let st = stamp(&f).unwrap();
            let nat = nat44(&f, Some((NAT_ADDRESS, 61_000)), None);
            assert!(verify(&p, &nat, st, &mut scratch), "{l4:?} {seq}");
            // As a plain router would have it: the source kept (any source is accepted).
            assert!(verify(&p, &nat44(&f, None, None), st, &mut scratch));
            // The destination changed, a stale checksum, a changed payload, a TTL kept: no.
            let other = nat44(&f, None, Some(([198, 19, 9, 9], 7)));
            assert!(!verify(&p, &other, st, &mut scratch), "{l4:?}: destination");
            let mut stale = nat.clone();
            stale[14 + 12] ^= 1;
            assert!(!verify(&p, &stale, st, &mut scratch), "{l4:?}: IP checksum");
            let mut payload = nat.clone();
            *payload.last_mut().unwrap() ^= 1;
            let payload = nat44(&payload, None, None);
            assert!(!verify(&p, &payload, st, &mut scratch), "{l4:?}: payload");
            let mut ttl = nat.clone();
            ttl[14 + 8] += 1;
            assert!(!verify(&p, &ttl, st, &mut scratch), "{l4:?}: TTL");
            // Without --translated, the new source is not accepted.
            p.translated = false;
            assert!(
                !verify(&p, &nat, st, &mut scratch),
                "{l4:?}: not translated"
            );
            p.translated = true;
        }
    }
    // A bad L4 checksum after translation (TCP, whose checksum is always filled in).
    let mut p = kind(Family::Ipv4, L4::Tcp, &[70], 4);
    (p.routed, p.translated) = (true, true);
    let mut f = Vec::new();
    p.build(3, 1, &mut f);
    let st = stamp(&f).unwrap();
    let mut nat = nat44(&f, Some((NAT_ADDRESS, 61_000)), None);
    nat[14 + 20 + 16] ^= 1;
    assert!(!verify(&p, &nat, st, &mut Vec::new()));
}

#[test]
fn size_parsing() {
    assert_eq!(parse_sizes("64").unwrap(), vec![64]);
    assert_eq!(parse_sizes("64,1514").unwrap(), vec![64, 1514]);
    assert_eq!(parse_sizes("mixed").unwrap().len(), 6);
    assert!(parse_sizes("63").is_err());
    assert!(parse_sizes("9019").is_err());
    assert!(parse_sizes("64,x").is_err());
}

fn kind(family: Family, l4: L4, sizes: &[usize], flows: u32) -> Profile {
    Profile {
        family,
        l4,
        sizes: sizes.to_vec(),
        flows,
        ..profile()
    }
}

/// The L4 checksum of a built frame (no tags) summed naively with its pseudo-header: 0 when
/// right.
fn l4_sum_is_valid(p: &Profile, f: &[u8]) -> bool {
    let ip = 14;
    let l4_at = ip + p.family.header_len();
    let mut pseudo = Vec::new();
    match p.family {
        Family::Ipv4 => pseudo.extend_from_slice(&f[ip + 12..ip + 20]),
        Family::Ipv6 => pseudo.extend_from_slice(&f[ip + 8..ip + 40]),
    }
    pseudo.extend_from_slice(&[0, p.l4.proto()]);
    pseudo.extend_from_slice(&((f.len() - l4_at) as u16).to_be_bytes());
    pseudo.extend_from_slice(&f[l4_at..]);
    checksum(&pseudo) == 0
}

#[test]
fn each_kind_has_its_smallest_size() {
    assert_eq!(min_size(Family::Ipv4, L4::Udp), 64);
    assert_eq!(min_size(Family::Ipv6, L4::Udp), 78);
    assert_eq!(min_size(Family::Ipv4, L4::Tcp), 70);
    assert_eq!(min_size(Family::Ipv6, L4::Tcp), 90);
    // Named mixes take the kind's smallest size for their 64-byte frames; numbers below it
    // are errors.
    let imix6 = sizes_for("imix", 78, "IPV6/UDP").unwrap();
    assert_eq!(imix6.iter().filter(|&&s| s == 78).count(), 28);
    assert!(!imix6.contains(&64));
    assert_eq!(
        sizes_for("imix", 64, "IPV4/UDP").unwrap(),
        parse_sizes("imix").unwrap()
    );
    let e = sizes_for("64,1518", 78, "IPV6/UDP").unwrap_err();
    assert!(e.contains("78"), "{e}");
    assert_eq!(
        sizes_for("78,1518", 78, "IPV6/UDP").unwrap(),
        vec![78, 1518]
    );
}

/// Every new kind at its smallest size (a short test header), a size with a full one, and
/// IMIX: valid L4 checksums, lengths, and a stamp that reads back and verifies.
#[test]
fn ipv6_and_tcp_frames_are_whole_and_read_back() {
    for (family, l4) in [
        (Family::Ipv6, L4::Udp),
        (Family::Ipv4, L4::Tcp),
        (Family::Ipv6, L4::Tcp),
    ] {
        let min = min_size(family, l4);
        let mut sizes = vec![min, min + 3, min + 4, 1518, 9018];
        sizes.extend(sizes_for("imix", min, "x").unwrap());
        let p = kind(family, l4, &sizes, 7);
        let (mut f, mut scratch) = (Vec::new(), Vec::new());
        for seq in 0..sizes.len() as u64 * 3 {
            let ts = 0x1234_5678_9abc_def0 + seq;
            p.build(seq, ts, &mut f);
            assert_eq!(f.len(), p.size_of(seq) - 4, "{family:?}/{l4:?} {seq}");
            assert!(l4_sum_is_valid(&p, &f), "{family:?}/{l4:?} {seq}");
            let st = stamp(&f).unwrap_or_else(|| panic!("{family:?}/{l4:?} {seq}"));
            assert_eq!(st.seq, seq);
            let short = f.len() - p.headers_len() < STAMP_LEN;
            assert_eq!(st.short, short, "{family:?}/{l4:?} {seq}");
            assert_eq!(st.tx_ns, if short { ts & 0xffff_ffff } else { ts });
            assert_eq!(st.latency(ts + 500), 500);
            assert!(verify(&p, &f, st, &mut scratch));
            let mut bad = f.clone();
            let last = bad.len() - 1;
            bad[last] ^= 4;
            assert!(!verify(&p, &bad, st, &mut scratch));
        }
    }
}

#[test]
fn short_stamps_measure_latency_across_the_wrap() {
    let st = Stamp {
        seq: 1,
        tx_ns: 0xffff_fff0,
        short: true,
    };
    assert_eq!(st.latency(0x1_0000_0010), 0x20);
}

#[test]
fn ipv6_addresses_carry_the_flow_as_ipv4_ones_do() {
    let mut p = kind(Family::Ipv6, L4::Udp, &[78], 300);
    let mut f = Vec::new();
    p.build(258, 0, &mut f);
    assert_eq!(&f[12..14], &[0x86, 0xdd]);
    assert_eq!(f[20], 17, "next header");
    assert_eq!(f[21], 64, "hop limit");
    assert_eq!(u16::from_be_bytes([f[18], f[19]]) as usize, 74 - 54);
    let src: std::net::Ipv6Addr = <[u8; 16]>::try_from(&f[22..38]).unwrap().into();
    let dst: std::net::Ipv6Addr = <[u8; 16]>::try_from(&f[38..54]).unwrap().into();
    assert_eq!(src.to_string(), "2001:db8:198:18::102");
    assert_eq!(dst.to_string(), "2001:db8:198:19::1");
    assert_eq!(u16::from_be_bytes([f[54], f[55]]), 1024 + 258);
    p.var2 = true;
    p.flows = VAR2_FLOWS;
    p.build(300, 0, &mut f);
    let src: std::net::Ipv6Addr = <[u8; 16]>::try_from(&f[22..38]).unwrap().into();
    let dst: std::net::Ipv6Addr = <[u8; 16]>::try_from(&f[38..54]).unwrap().into();
    assert_eq!(
        (src.to_string(), dst.to_string()),
        ("2001:db8:198:18::12d".into(), "2001:db8:198:19::12d".into())
    );
}

#[test]
fn routed_ipv6_accepts_a_lower_hop_limit_only() {
    let mut p = kind(Family::Ipv6, L4::Tcp, &[128], 3);
    p.routed = true;
    let (mut f, mut scratch) = (Vec::new(), Vec::new());
    p.build(4, 9, &mut f);
    let st = stamp(&f).unwrap();
    let mut routed = f.clone();
    routed[0..12].copy_from_slice(&[7; 12]);
    routed[21] = 63;
    assert!(verify(&p, &routed, st, &mut scratch));
    assert!(
        !verify(&p, &f, st, &mut scratch),
        "hop limit not decremented"
    );
    routed[40] ^= 1;
    assert!(!verify(&p, &routed, st, &mut scratch), "address changed");
}

/// The TCP fields of frame `seq`, read from the frame.
fn tcp_of(p: &Profile, seq: u64) -> (u32, u32, u8, usize) {
    let mut f = Vec::new();
    p.build(seq, 0, &mut f);
    let t = 14 + p.family.header_len();
    let word = |at: usize| u32::from_be_bytes(f[at..at + 4].try_into().unwrap());
    (word(t + 4), word(t + 8), f[t + 13], f.len() - t - 20)
}

/// Each flow opens with a SYN, then ACKs whose sequence numbers advance by the payload sent
/// before them (the SYN's payload and the SYN itself included), with sizes mixed; the
/// closing frame is a FIN+ACK at the next sequence number; warm-up frames are the same
/// segments.
#[test]
fn tcp_flows_open_with_a_syn_and_advance() {
    let flows = 5u32;
    let imix = sizes_for("imix", 70, "IPV4/TCP").unwrap();
    let p = kind(Family::Ipv4, L4::Tcp, &imix, flows);
    for flow in 0..flows as u64 {
        let (isn, ack, flags, len) = tcp_of(&p, flow);
        assert_eq!((flags, ack), (l4::SYN, 0), "flow {flow}");
        let mut next = isn.wrapping_add(1).wrapping_add(len as u32);
        for n in 1..200u64 {
            let seq = flow + n * flows as u64;
            let (s, a, fl, l) = tcp_of(&p, seq);
            assert_eq!(fl, l4::ACK, "flow {flow} segment {n}");
            assert_eq!(s, next, "flow {flow} segment {n}");
            assert_eq!(a, l4::isn(flow as u32, true).wrapping_add(1));
            assert_eq!(
                tcp_of(&p, WARMUP_SEQ | seq),
                (s, a, fl, l),
                "warm-up replays"
            );
            next = s.wrapping_add(l as u32);
        }
        let close = tcp_of(&p, CLOSE_SEQ | (flow + 200 * flows as u64));
        assert_eq!((close.0, close.2), (next, l4::FIN | l4::ACK));
    }
}

/// An answering side can build its reply from the frame's flow: the reversed tuple, a SYN+ACK
/// acknowledging the SYN, then ACKs of everything received.
#[test]
fn answers_follow_from_the_flow() {
    let p = kind(Family::Ipv6, L4::Tcp, &[200], 3);
    let t = p.tuple(2);
    let r = t.reversed();
    assert_eq!(
        (r.src, r.dst, r.sport, r.dport),
        (t.dst, t.src, t.dport, t.sport)
    );
    let syn = p.segment(2);
    let payload = 200 - 4 - p.headers_len();
    let syn_ack = syn.answer(2, payload);
    assert_eq!(syn_ack.flags, l4::SYN | l4::ACK);
    assert_eq!(syn_ack.ack, syn.seq.wrapping_add(1 + payload as u32));
    let data = p.segment(5);
    assert_eq!(
        data.ack,
        syn_ack.seq.wrapping_add(1),
        "acknowledges the SYN+ACK"
    );
    assert_eq!(
        data.seq, syn_ack.ack,
        "starts where the answer acknowledged"
    );
}
