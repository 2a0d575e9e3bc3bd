//! The answering side's frames: a generator frame in, its answer out, with every header
//! field an answer must have (checked field by field here, not by rebuilding it).

use super::super::{l4, stamp, Family, Profile, CLOSE_SEQ, L4, WARMUP_SEQ};
use super::*;
use sluice::wire::ipv4::checksum as ip_checksum;

/// The frame builder tests' profile with three flows.
fn profile(family: Family, l4: L4, sizes: &[usize]) -> Profile {
    Profile {
        flows: 3,
        ..super::super::tests::profile_of(family, l4, sizes)
    }
}

/// The L4 checksum of an untagged frame, summed naively with its pseudo-header: 0 when
/// right.
fn l4_sum(family: Family, proto: u8, f: &[u8]) -> u16 {
    let l4_at = 14 + family.header_len();
    let mut pseudo = Vec::new();
    match family {
        Family::Ipv4 => pseudo.extend_from_slice(&f[14 + 12..14 + 20]),
        Family::Ipv6 => pseudo.extend_from_slice(&f[14 + 8..14 + 40]),
    }
    pseudo.extend_from_slice(&[0, proto]);
    pseudo.extend_from_slice(&((f.len() - l4_at) as u16).to_be_bytes());
    pseudo.extend_from_slice(&f[l4_at..]);
    ip_checksum(&pseudo)
}

/// (source, destination) address bytes of an untagged frame.
fn addrs(family: Family, f: &[u8]) -> (Vec<u8>, Vec<u8>) {
    match family {
        Family::Ipv4 => (f[26..30].to_vec(), f[30..34].to_vec()),
        Family::Ipv6 => (f[22..38].to_vec(), f[38..54].to_vec()),
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Every kind: the answer goes back to the sender's MAC and address from the address the
/// frame was sent to, ports swapped, TTL 64, checksums right, the test header the frame's;
/// UDP the same size, TCP a SYN+ACK to the SYN and ACKs after it, each acknowledging the
/// segment it answers.
#[test]
fn a_frame_in_its_answer_out() {
    for (family, proto) in [
        (Family::Ipv4, L4::Udp),
        (Family::Ipv6, L4::Udp),
        (Family::Ipv4, L4::Tcp),
        (Family::Ipv6, L4::Tcp),
    ] {
        let min = super::super::min_size(family, proto);
        let p = profile(family, proto, &[min, 594, 1518]);
        let l4_at = 14 + family.header_len();
        let (mut f, mut a) = (Vec::new(), Vec::new());
        // Flow 1's SYN (seq 1), later segments, a warm-up one and the closing FIN.
        for seq in [1u64, 4, 7, 8, WARMUP_SEQ | 4, CLOSE_SEQ | 10] {
            let what = format!("{family:?}/{proto:?} frame {seq:#x}");
            p.build(seq, 1_000_000 + seq, &mut f);
            let st = stamp(&f).unwrap();
            assert!(answer(&p, &f, st, &mut a), "{what}");
            assert_eq!((&a[0..6], &a[6..12]), (&f[6..12], &f[0..6]), "{what}: MACs");
            assert_eq!(&a[12..14], &f[12..14], "{what}: ethertype");
            let ((fs, fd), (as_, ad)) = (addrs(family, &f), addrs(family, &a));
            assert_eq!((as_, ad), (fd, fs), "{what}: addresses");
            assert_eq!(&a[l4_at..l4_at + 2], &f[l4_at + 2..l4_at + 4], "{what}");
            assert_eq!(&a[l4_at + 2..l4_at + 4], &f[l4_at..l4_at + 2], "{what}");
            assert_eq!(a[14 + family.ttl_at()], 64, "{what}: TTL");
            if family == Family::Ipv4 {
                assert_eq!(ip_checksum(&a[14..34]), 0, "{what}: IPv4 checksum");
                let total = u16::from_be_bytes([a[16], a[17]]) as usize;
                assert_eq!(total, a.len() - 14, "{what}: IPv4 length");
            } else {
                let payload = u16::from_be_bytes([a[18], a[19]]) as usize;
                assert_eq!(payload, a.len() - l4_at, "{what}: IPv6 payload length");
            }
            let got = stamp(&a).unwrap();
            assert_eq!(got, st, "{what}: the frame's test header");
            assert_eq!(a.len(), answer_len(&p, seq), "{what}");
            match proto {
                L4::Udp => {
                    assert_eq!(a.len(), f.len(), "{what}: same size");
                    assert_eq!(&a[l4_at + 4..], &f[l4_at + 4..], "{what}: same payload");
                    if family == Family::Ipv6 {
                        assert_eq!(l4_sum(family, 17, &a), 0, "{what}: UDP checksum");
                    }
                }
                L4::Tcp => {
                    assert_eq!(l4_sum(family, 6, &a), 0, "{what}: TCP checksum");
                    let (ft, at) = (&f[l4_at..], &a[l4_at..]);
                    let flow = p.flow_of(seq);
                    let payload = f.len() - l4_at - 20;
                    let syn = ft[13] & l4::SYN != 0;
                    let fin = ft[13] & l4::FIN != 0;
                    let upto =
                        be32(&ft[4..]).wrapping_add(payload as u32 + syn as u32 + fin as u32);
                    assert_eq!(be32(&at[8..]), upto, "{what}: acknowledges the segment");
                    if syn {
                        assert_eq!(at[13], l4::SYN | l4::ACK, "{what}");
                        assert_eq!(be32(&at[4..]), l4::isn(flow, true), "{what}");
                    } else {
                        assert_eq!(at[13], l4::ACK, "{what}");
                        assert_eq!(be32(&at[4..]), l4::isn(flow, true).wrapping_add(1));
                        // What the sender acknowledges: the answering side's ISN + 1.
                        assert_eq!(be32(&ft[8..]), be32(&at[4..]), "{what}");
                    }
                    assert_eq!(at[12] >> 4, 5, "{what}: no options");
                }
            }
            let (mut sent, mut scratch) = (Vec::new(), Vec::new());
            assert!(
                verify_answer(&p, &a, got, &mut sent, &mut scratch),
                "{what}"
            );
            // One byte off is caught.
            let mut bad = a.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(
                !verify_answer(&p, &bad, got, &mut sent, &mut scratch),
                "{what}"
            );
        }
    }
}

/// Through a router both ways: the frame arrives with the router's MACs and a lower TTL, the
/// answer goes back to the router's MAC, and arrives with new MACs and a lower TTL again:
/// still the answer the routed profile expects. VLAN tags stay as they came.
#[test]
fn answers_through_a_router_and_with_tags() {
    for family in [Family::Ipv4, Family::Ipv6] {
        let mut p = profile(family, L4::Tcp, &[200]);
        p.routed = true;
        p.vlans = vec![(0x8100, 7)];
        let ip = 18;
        let ttl = ip + family.ttl_at();
        let route = |f: &mut Vec<u8>| {
            f[0..12].copy_from_slice(&[0xaa, 0, 0, 0, 0, 1, 0xbb, 0, 0, 0, 0, 2]);
            f[ttl] -= 1;
            if family == Family::Ipv4 {
                f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
                let c = ip_checksum(&f[ip..ip + 20]);
                f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
            }
        };
        let (mut f, mut a) = (Vec::new(), Vec::new());
        p.build(5, 42, &mut f);
        route(&mut f);
        let st = stamp(&f).unwrap();
        assert!(answer(&p, &f, st, &mut a));
        assert_eq!(&a[0..6], &[0xbb, 0, 0, 0, 0, 2], "back to the router");
        assert_eq!(&a[12..18], &f[12..18], "the same tag");
        assert_eq!(a[ttl], 64);
        route(&mut a);
        let (mut sent, mut scratch) = (Vec::new(), Vec::new());
        assert!(
            verify_answer(&p, &a, st, &mut sent, &mut scratch),
            "{family:?}"
        );
    }
}

/// What is not a generator frame gets no answer.
#[test]
fn no_answer_to_what_is_not_ours() {
    let p = profile(Family::Ipv4, L4::Udp, &[64]);
    let mut a = Vec::new();
    let st = super::super::Stamp {
        seq: 0,
        tx_ns: 0,
        short: false,
    };
    assert!(!answer(&p, &[0u8; 60], st, &mut a));
    let mut arp = vec![0u8; 60];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert!(!answer(&p, &arp, st, &mut a));
    let mut f = Vec::new();
    p.build(0, 0, &mut f);
    f[23] = 1; // ICMP
    assert!(!answer(&p, &f, st, &mut a));
}
