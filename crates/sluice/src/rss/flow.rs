//! The flow of an Ethernet frame as RSS hashes it: past up to two VLAN tags, the IPv4 or
//! IPv6 source and destination, and the ports when the frame carries the first fragment-free
//! TCP, UDP or SCTP header right after the IP header (an IPv4 fragment, or an IPv6 header
//! followed by extension headers, hashes by its addresses only, as NICs do). Anything else
//! (ARP, a frame too short for its headers) has no flow: hash 0.
//!
//! Parsing is safe code over the frame's bytes, and fuzzed (`fuzz_targets/rss_flow.rs`).

use super::{fold16, Toeplitz, MAX_INPUT};

const TPID_8021Q: u16 = 0x8100;
const TPID_8021AD: u16 = 0x88a8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const TCP: u8 = 6;
const UDP: u8 = 17;
const SCTP: u8 = 132;

/// The fields of a frame that its flow hash covers, in the order they are hashed.
#[derive(Debug, PartialEq, Eq)]
pub struct FlowFields<'a> {
    /// Source then destination address (8 or 32 bytes).
    pub addrs: &'a [u8],
    /// Source then destination port (4 bytes), or empty.
    pub ports: &'a [u8],
}

/// The hash input of `frame`'s flow and its length (0: no flow): the fields one after the
/// other.
pub fn flow_input(frame: &[u8]) -> ([u8; MAX_INPUT], usize) {
    let mut input = [0u8; MAX_INPUT];
    let Some(f) = flow_fields(frame) else {
        return (input, 0);
    };
    let n = f.addrs.len();
    input[..n].copy_from_slice(f.addrs);
    input[n..n + f.ports.len()].copy_from_slice(f.ports);
    (input, n + f.ports.len())
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Where `frame`'s flow fields are, or `None` if it has no flow.
#[inline]
pub fn flow_fields(frame: &[u8]) -> Option<FlowFields<'_>> {
    // The common case first, with constant offsets: untagged IPv4, a 20-byte header and
    // four bytes after it. Anything else takes the general path below, which agrees.
    if let Some(h) = frame.get(12..38) {
        if h[..3] == [0x08, 0x00, 0x45] {
            let fragment = u16::from_be_bytes([h[8], h[9]]) & 0x3fff != 0;
            let ports: &[u8] = if !fragment && matches!(h[11], TCP | UDP | SCTP) {
                &h[22..26]
            } else {
                &[]
            };
            return Some(FlowFields {
                addrs: &h[14..22],
                ports,
            });
        }
    }
    general_flow_fields(frame)
}

/// `flow_fields` for any frame: tags, IPv4 with options, IPv6.
fn general_flow_fields(frame: &[u8]) -> Option<FlowFields<'_>> {
    let mut at = 12;
    let mut ethertype = be16(frame, at)?;
    for _ in 0..2 {
        if ethertype != TPID_8021Q && ethertype != TPID_8021AD {
            break;
        }
        at += 4;
        ethertype = be16(frame, at)?;
    }
    let ip = frame.get(at + 2..)?;
    let (addrs, proto, l4) = match ethertype {
        ETHERTYPE_IPV4 => {
            let ihl = (*ip.first()? & 0x0f) as usize * 4;
            if ihl < 20 || ip.len() < ihl || ip[0] >> 4 != 4 {
                return None;
            }
            let fragment = be16(ip, 6)? & 0x3fff != 0;
            let proto = if fragment { 0 } else { ip[9] };
            (&ip[12..20], proto, &ip[ihl..])
        }
        ETHERTYPE_IPV6 => {
            if ip.len() < 40 || ip[0] >> 4 != 6 {
                return None;
            }
            (&ip[8..40], ip[6], &ip[40..])
        }
        _ => return None,
    };
    let ports = match l4.get(..4) {
        Some(p) if matches!(proto, TCP | UDP | SCTP) => p,
        _ => &[],
    };
    Some(FlowFields { addrs, ports })
}

impl Toeplitz {
    /// The RSS hash of `frame`'s flow (module doc); 0 for a frame with no flow. Hashed from
    /// the frame's bytes where they lie, with no copy.
    #[inline]
    pub fn frame(&self, frame: &[u8]) -> u32 {
        match flow_fields(frame) {
            // Addresses and ports start at even positions (0, then 8 or 32): they fold apart.
            Some(f) if self.period16 => self.hash_folded(fold16(f.addrs) ^ fold16(f.ports)),
            Some(f) => self.hash_at(0, f.addrs) ^ self.hash_at(f.addrs.len(), f.ports),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{STANDARD_KEY, SYMMETRIC_KEY};
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn eth(tags: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        for &t in tags {
            f.extend_from_slice(&t.to_be_bytes());
            f.extend_from_slice(&[0, 10]);
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn ipv4(proto: u8, frag: u16, src: [u8; 4], dst: [u8; 4], ports: [u16; 2]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 28, 0, 0];
        h.extend_from_slice(&frag.to_be_bytes());
        h.extend_from_slice(&[64, proto, 0, 0]);
        h.extend_from_slice(&src);
        h.extend_from_slice(&dst);
        h.extend_from_slice(&ports[0].to_be_bytes());
        h.extend_from_slice(&ports[1].to_be_bytes());
        h.extend_from_slice(&[0, 8, 0, 0]);
        h
    }

    #[test]
    fn ipv4_tuples_match_the_address_hashes() {
        let t = Toeplitz::new(&STANDARD_KEY);
        let (s, d) = ([66, 9, 149, 187], [161, 142, 100, 80]);
        let (sa, da) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
        let udp = eth(&[], 0x0800, &ipv4(UDP, 0, s, d, [2794, 1766]));
        assert_eq!(t.frame(&udp), t.v4_ports(sa, da, 2794, 1766));
        // Behind two tags, the same.
        let tagged = eth(&[0x88a8, 0x8100], 0x0800, &ipv4(UDP, 0, s, d, [2794, 1766]));
        assert_eq!(t.frame(&tagged), t.v4_ports(sa, da, 2794, 1766));
        // ICMP, and a fragment (more fragments set, or an offset): addresses only.
        let icmp = eth(&[], 0x0800, &ipv4(1, 0, s, d, [0, 0]));
        assert_eq!(t.frame(&icmp), t.v4(sa, da));
        let frag = eth(&[], 0x0800, &ipv4(TCP, 0x2000, s, d, [1, 2]));
        assert_eq!(t.frame(&frag), t.v4(sa, da));
        let frag = eth(&[], 0x0800, &ipv4(TCP, 0x0010, s, d, [1, 2]));
        assert_eq!(t.frame(&frag), t.v4(sa, da));
        // DF alone is not a fragment.
        let df = eth(&[], 0x0800, &ipv4(TCP, 0x4000, s, d, [1, 2]));
        assert_eq!(t.frame(&df), t.v4_ports(sa, da, 1, 2));
    }

    #[test]
    fn ipv6_tuples_match_the_address_hashes() {
        let t = Toeplitz::new(&STANDARD_KEY);
        let s: Ipv6Addr = "3ffe:2501:200:1fff::7".parse().unwrap();
        let d: Ipv6Addr = "3ffe:2501:200:3::1".parse().unwrap();
        let mut ip = vec![0x60, 0, 0, 0, 0, 8, TCP, 64];
        ip.extend_from_slice(&s.octets());
        ip.extend_from_slice(&d.octets());
        ip.extend_from_slice(&[0x0a, 0xea, 0x06, 0xe6, 0, 0, 0, 0]);
        assert_eq!(
            t.frame(&eth(&[], 0x86dd, &ip)),
            t.v6_ports(s, d, 2794, 1766)
        );
        ip[6] = 0; // a hop-by-hop header: addresses only
        assert_eq!(t.frame(&eth(&[], 0x86dd, &ip)), t.v6(s, d));
    }

    /// Frames hash with the symmetric key's fold as with its tables: IPv4 and IPv6, with
    /// and without ports.
    #[test]
    fn folded_frames_hash_as_the_tables_do() {
        let t = Toeplitz::new(&SYMMETRIC_KEY);
        let (s, d) = ([10, 1, 2, 3], [192, 168, 40, 7]);
        for proto in [UDP, 1] {
            let f = eth(&[0x8100], 0x0800, &ipv4(proto, 0, s, d, [5000, 53]));
            let (input, n) = flow_input(&f);
            assert_eq!(t.frame(&f), t.hash_at(0, &input[..n]), "proto {proto}");
        }
        let s6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let d6: Ipv6Addr = "2001:db8:ffff::2".parse().unwrap();
        let mut ip = vec![0x60, 0, 0, 0, 0, 8, TCP, 64];
        ip.extend_from_slice(&s6.octets());
        ip.extend_from_slice(&d6.octets());
        ip.extend_from_slice(&[0x0a, 0xea, 0x06, 0xe6, 0, 0, 0, 0]);
        let f = eth(&[], 0x86dd, &ip);
        assert_eq!(t.frame(&f), t.v6_ports(s6, d6, 2794, 1766));
    }

    #[test]
    fn symmetric_key_puts_both_directions_together() {
        let t = Toeplitz::new(&SYMMETRIC_KEY);
        let (a, b) = ([10, 0, 0, 1], [192, 168, 7, 9]);
        let there = eth(&[], 0x0800, &ipv4(TCP, 0, a, b, [40000, 443]));
        let back = eth(&[], 0x0800, &ipv4(TCP, 0, b, a, [443, 40000]));
        assert_eq!(t.frame(&there), t.frame(&back));
        assert_ne!(t.frame(&there), 0);
    }

    /// The generator's flows (address and port low bytes in step, 6 bytes apart) cancel
    /// under the symmetric key's 16-bit period and spread under the standard key.
    #[test]
    fn lock_step_fields_cancel_under_the_symmetric_key() {
        let flows = |key: &[u8; 40]| {
            let t = Toeplitz::new(key);
            let mut hashes: Vec<u32> = (0..64u8)
                .map(|k| {
                    t.frame(&eth(
                        &[],
                        0x0800,
                        &ipv4(
                            UDP,
                            0,
                            [198, 18, 0, k],
                            [198, 19, 0, 1],
                            [1024 + k as u16, 1024],
                        ),
                    ))
                })
                .collect();
            hashes.sort_unstable();
            hashes.dedup();
            hashes.len()
        };
        assert_eq!(flows(&SYMMETRIC_KEY), 1);
        assert_eq!(flows(&STANDARD_KEY), 64);
    }

    /// The constant-offset path finds what the general one finds, for every protocol and
    /// fragment field, and for frames cut anywhere.
    #[test]
    fn the_fast_path_agrees_with_the_general_one() {
        for proto in [TCP, UDP, SCTP, 1, 47] {
            for frag in [0u16, 0x2000, 0x0001, 0x4000] {
                let f = eth(
                    &[],
                    0x0800,
                    &ipv4(proto, frag, [1, 2, 3, 4], [5, 6, 7, 8], [9, 10]),
                );
                for cut in 0..=f.len() {
                    assert_eq!(
                        flow_fields(&f[..cut]),
                        general_flow_fields(&f[..cut]),
                        "proto {proto} frag {frag:#x} cut {cut}"
                    );
                }
            }
        }
    }

    #[test]
    fn frames_without_a_flow_hash_to_zero() {
        let t = Toeplitz::new(&STANDARD_KEY);
        let good = eth(
            &[],
            0x0800,
            &ipv4(UDP, 0, [1, 2, 3, 4], [5, 6, 7, 8], [1, 2]),
        );
        for cut in 0..34 {
            assert_eq!(t.frame(&good[..cut]), 0, "cut at {cut}");
        }
        // Addresses present, ports cut: the 2-tuple.
        assert_ne!(t.frame(&good[..36]), 0);
        assert_eq!(t.frame(&eth(&[], 0x0806, &[0; 28])), 0, "ARP");
        let mut bad_ihl = good.clone();
        bad_ihl[14] = 0x44;
        assert_eq!(t.frame(&bad_ihl), 0);
        let mut v6_in_v4 = good.clone();
        v6_in_v4[14] = 0x65;
        assert_eq!(t.frame(&v6_in_v4), 0);
        // Three tags: the third is not looked past.
        let three = eth(&[0x8100, 0x8100, 0x8100], 0x0800, &good[14..]);
        assert_eq!(t.frame(&three), 0);
    }
}
