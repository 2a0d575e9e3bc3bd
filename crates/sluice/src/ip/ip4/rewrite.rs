//! ip4-rewrite: IPv4's part of the shared rewrite node (`nodes/ip/rewrite.rs`): the TTL
//! (decremented with the incremental checksum of RFC 1624), the MTU, the record route
//! option (a forwarded packet's gets the outgoing interface's address) and fragments. A
//! packet larger than the MTU goes back to its sender as ICMP fragmentation needed when it
//! has DF set, and otherwise leaves in fragments, each in a buffer of its own.

use crate::ip::rewrite::{rewrite_counters, Checked, IpRewrite, RewriteRules};
pub use crate::ip::rewrite::{Next, OUTPUT_FEATURES};
use crate::ip::V4;
use crate::nodes::IcmpErrorRequest;
use crate::router::adjacency::{Adjacency, L3View};
use crate::wire::icmp4;
use crate::wire::ipv4::{decrement_ttl, fragment, record_route, Ipv4View, MIN_HEADER_LEN};
use std::net::{IpAddr, Ipv4Addr};

pub const NAME: &str = "ip4-rewrite";

/// The IPv4 rewrite node.
pub type Ip4Rewrite = IpRewrite<V4>;
/// What happens to one packet.
pub type Verdict = crate::ip::rewrite::Verdict<Error>;

rewrite_counters! {
    NotIpv4 = "not an IPv4 packet",
    TtlExpired = "ttl expired (sent to icmp4-error)",
    TooBig = "larger than the MTU with DF set (sent to icmp4-error)",
    OwnTooBig = "own packet with DF set larger than the MTU",
    Unresolved = "neighbour not resolved (sent to ip4-arp)",
    Fragmented = "larger than the MTU: fragmented",
    FragmentFailed = "larger than the MTU: no buffer for its fragments",
}

impl RewriteRules for V4 {
    type Counter = Error;
    type Dst = u32;
    const RESOLVE_NODE: &'static str = super::arp::NAME;
    const OUTPUT_ARC: usize = crate::graph::features::IP4_OUTPUT;
    const HOPS: &'static str = "ttl";
    const UNRESOLVED: Error = Error::Unresolved;
    const FRAGMENTED: Error = Error::Fragmented;
    const FRAGMENT_FAILED: Error = Error::FragmentFailed;

    fn check(ip: &[u8], adj: &Adjacency, local: bool) -> Result<Checked<u32>, Verdict> {
        let ip = match Ipv4View::of(ip) {
            Some(ip) if ip.version() == 4 => ip,
            _ => return Err(Verdict::Drop(Error::NotIpv4)),
        };
        if !local && ip.ttl() <= 1 {
            let req = IcmpErrorRequest::new(icmp4::TIME_EXCEEDED, icmp4::CODE_TTL_EXCEEDED, 0);
            return Err(Verdict::Icmp(req, Error::TtlExpired));
        }
        let total = ip.total_len() as u32;
        // MTU 0 means the control plane set none: no limit to enforce.
        let too_big = adj.mtu != 0 && total > adj.mtu;
        if too_big && ip.dont_fragment() {
            if local {
                return Err(Verdict::Drop(Error::OwnTooBig));
            }
            let req = IcmpErrorRequest::new(
                icmp4::DEST_UNREACHABLE,
                icmp4::CODE_FRAGMENTATION_NEEDED,
                adj.mtu.min(u16::MAX as u32) as u16,
            );
            return Err(Verdict::Icmp(req, Error::TooBig));
        }
        Ok(Checked {
            total,
            destination: ip.destination(),
            too_big,
        })
    }

    fn on_link(dst: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(dst))
    }

    fn forward(view: &L3View, adj: &Adjacency, ip: &mut [u8]) {
        let hl = Ipv4View::of(ip).map_or(0, |v| v.header_len());
        if hl > MIN_HEADER_LEN {
            // ip4-input checked the header: all of it is in this segment.
            let out = view.interface(adj.interface).map_or(0, |i| i.primary_v4());
            if let Some(header) = ip.get_mut(..hl) {
                record_route(header, out);
            }
        }
        decrement_ttl(ip);
    }

    fn hops(ip: &[u8]) -> Option<u8> {
        Ipv4View::of(ip).map(|ip| ip.ttl())
    }

    fn fragment(
        ip: &[u8],
        mtu: usize,
        scratch: &mut Vec<u8>,
        emit: impl FnMut(&[u8]) -> bool,
    ) -> Option<usize> {
        fragment(ip, mtu, scratch, emit).ok()
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    pub use crate::ip::test_view::{
        if_mac, tagged, ADJ_COMPLETE, ADJ_GLEAN, ADJ_INCOMPLETE, ADJ_SMALL_MTU, GLEANED_MAC,
        HOST_MAC, NEIGHBOR_MAC,
    };
    use crate::router::adjacency::{ethernet_rewrite, SharedL3View};
    use crate::wire::ipv4::checksum;
    use arc_swap::ArcSwap;
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;

    /// Interface k has address 10.k.0.1/24.
    pub fn if_addr(k: u8) -> u32 {
        u32::from_be_bytes([10, k, 0, 1])
    }

    /// 10.1.0.2: the complete neighbour; 10.1.0.3: incomplete in the adjacency but in the
    /// neighbour table; 10.1.0.9: a gleaned host in the table.
    pub const GLEANED: [u8; 4] = [10, 1, 0, 9];

    /// `test_view::view` in IPv4: if0 and if1 on 10.0.0.0/24 and 10.1.0.0/24; the small MTU
    /// is 1000.
    pub fn view() -> SharedL3View {
        let v4 = |ip: [u8; 4]| IpAddr::V4(Ipv4Addr::from(ip));
        let v = crate::ip::test_view::view(&crate::ip::test_view::Addresses {
            address: |k, itf| itf.v4 = vec![(if_addr(k), 24)],
            neighbor: v4([10, 1, 0, 2]),
            incomplete: v4([10, 1, 0, 3]),
            gleaned: v4(GLEANED),
            small_mtu: 1000,
            ethertype: 0x0800,
        });
        Arc::new(ArcSwap::from_pointee(v))
    }

    /// An Ethernet frame to the router (if0) carrying IPv4 from `src` to `dst`.
    pub fn frame(
        src: [u8; 4],
        dst: [u8; 4],
        proto: u8,
        ttl: u8,
        df: bool,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut f = ethernet_rewrite(if_mac(0), HOST_MAC, 0x0800).to_vec();
        let total = (20 + payload.len()) as u16;
        let mut ip = vec![
            0x45,
            0,
            0,
            0,
            0xbe,
            0xef,
            if df { 0x40 } else { 0 },
            0,
            ttl,
            proto,
            0,
            0,
        ];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(payload);
        f
    }

    /// A UDP datagram from 198.18.0.1 to `dst`, `len` bytes of IP.
    pub fn udp(dst: [u8; 4], ttl: u8, df: bool, len: usize) -> Vec<u8> {
        let payload: Vec<u8> = (0..len - 20).map(|i| i as u8).collect();
        frame([198, 18, 0, 1], dst, 17, ttl, df, &payload)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::buffer::FLAG_LOCAL_ORIGIN;

    use crate::nodes::testing::Harness;
    use crate::router::adjacency::ethernet_rewrite;
    use crate::wire::ipv4::{checksum, Ipv4Header};
    use proptest::prelude::*;

    /// Run `rewrite` on one packet and return the verdict and the bytes after it.
    fn rewrite_one(frame: &[u8], adj: u32, flags: u8) -> (Verdict, Vec<u8>, u32) {
        crate::ip::rewrite::rewrite_one::<V4>(&view(), frame, adj, flags)
    }

    fn run(frames: &[Vec<u8>], adjs: &[u32]) -> crate::nodes::testing::Outcome {
        let h = Harness::new(3);
        h.run_node_with(Ip4Rewrite::decl(view()), frames, 0, |m, k| m.adj = adjs[k])
    }

    /// Checks a forwarded packet: the header `eth`, TTL one less, checksum valid, rest as sent.
    fn assert_forwarded(sent: &[u8], out: &[u8], eth: [u8; 14]) {
        assert_eq!(&out[..14], &eth);
        assert_eq!(out.len(), sent.len());
        let h = Ipv4Header::parse(&out[14..]).unwrap();
        assert_eq!(h.ttl() + 1, sent[22]);
        assert_eq!(&out[14..22], &sent[14..22]);
        assert_eq!(&out[23..24], &sent[23..24]);
        assert_eq!(&out[26..], &sent[26..]);
    }

    /// Forwarded to the neighbour on if1 by its complete adjacency.
    fn assert_to_neighbor(sent: &[u8], out: &[u8]) {
        assert_forwarded(sent, out, ethernet_rewrite(NEIGHBOR_MAC, if_mac(1), 0x0800));
    }

    #[test]
    fn complete_neighbor_is_rewritten_and_sent() {
        let sent = udp([192, 0, 2, 1], 64, false, 100);
        let (v, out, tx) = rewrite_one(&sent, ADJ_COMPLETE, 0);
        assert_eq!((v, tx), (Verdict::Forward { tx_if: 1 }, 1));
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn neighbor_table_completes_glean_and_incomplete_adjacencies() {
        let sent = udp(GLEANED, 9, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_GLEAN, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_forwarded(
            &sent,
            &out,
            ethernet_rewrite(GLEANED_MAC, if_mac(1), 0x0800),
        );

        let sent = udp([192, 0, 2, 1], 9, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_INCOMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn bytes_after_the_total_length_are_not_forwarded() {
        let sent = udp([192, 0, 2, 1], 64, false, 100);
        let mut padded = sent.clone();
        padded.extend_from_slice(&[0xee; 50]);
        let (v, out, _) = rewrite_one(&padded, ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn record_route_gets_the_outgoing_interface_address() {
        let plain = udp([192, 0, 2, 1], 64, false, 60);
        // Insert a record route option with room for one address: IHL 5 -> 7.
        let mut f = plain[..34].to_vec();
        f.extend_from_slice(&[7, 7, 4, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&plain[34..]);
        f[14] = 0x47;
        let total = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[24..26].copy_from_slice(&[0, 0]);
        let c = checksum(&f[14..42]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let (v, out, _) = rewrite_one(&f, ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_eq!(&out[34..42], &[7, 7, 8, 10, 1, 0, 1, 0]);
        assert_eq!(checksum(&out[14..42]), 0);
        assert_eq!(out[22], 63);
    }

    #[test]
    fn unknown_neighbor_goes_to_arp_untouched() {
        let sent = udp([10, 1, 0, 77], 9, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_GLEAN, 0);
        assert_eq!((v, out), (Verdict::Resolve, sent));
    }

    #[test]
    fn vlan_tagged_input_leaves_untagged() {
        let plain = udp([192, 0, 2, 1], 64, false, 100);
        let (v, out, _) = rewrite_one(&tagged(&plain), ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&plain, &out);
    }

    #[test]
    fn ttl_one_and_zero_go_to_icmp_error_untouched() {
        for ttl in [0, 1] {
            let sent = udp([192, 0, 2, 1], ttl, false, 60);
            let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, 0);
            let req = IcmpErrorRequest::new(11, 0, 0);
            assert_eq!((v, out), (Verdict::Icmp(req, Error::TtlExpired), sent));
        }
        // Unless the router made the packet itself: its TTL is left alone.
        let sent = udp([192, 0, 2, 1], 1, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, FLAG_LOCAL_ORIGIN);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_eq!(&out[14..], &sent[14..]);
    }

    #[test]
    fn too_big_with_df_asks_for_fragmentation_needed_with_the_mtu() {
        let sent = udp([192, 0, 2, 1], 64, true, 1001);
        let (v, out, _) = rewrite_one(&sent, ADJ_SMALL_MTU, 0);
        let req = IcmpErrorRequest::new(3, 4, 1000);
        assert_eq!((v, out), (Verdict::Icmp(req, Error::TooBig), sent));
        let (v, _, _) = rewrite_one(&udp([192, 0, 2, 1], 64, false, 1001), ADJ_SMALL_MTU, 0);
        assert_eq!(
            v,
            Verdict::Fragment {
                tx_if: 1,
                mtu: 1000
            }
        );
        let (v, _, _) = rewrite_one(
            &udp([192, 0, 2, 1], 64, true, 1001),
            ADJ_SMALL_MTU,
            FLAG_LOCAL_ORIGIN,
        );
        assert_eq!(v, Verdict::Drop(Error::OwnTooBig));
        let (v, _, _) = rewrite_one(&udp([192, 0, 2, 1], 64, true, 1000), ADJ_SMALL_MTU, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
    }

    #[test]
    fn node_routes_and_counts_each_case() {
        let frames = vec![
            udp([192, 0, 2, 1], 64, false, 100),
            tagged(&udp([192, 0, 2, 1], 64, false, 100)),
            udp([10, 1, 0, 77], 64, false, 100),
            udp([192, 0, 2, 1], 1, false, 100),
            udp([192, 0, 2, 1], 64, true, 1200),
            udp([192, 0, 2, 1], 64, false, 1200),
            udp([192, 0, 2, 1], 64, false, 100),
            udp([192, 0, 2, 1], 64, false, 100),
            udp([192, 0, 2, 1], 64, false, 100),
        ];
        let adjs = [
            ADJ_COMPLETE,
            ADJ_COMPLETE,
            ADJ_GLEAN,
            ADJ_COMPLETE,
            ADJ_SMALL_MTU,
            ADJ_SMALL_MTU,
            0,
            1,
            999,
        ];
        let out = run(&frames, &adjs);
        // The 1200-byte packet without DF leaves as two fragments.
        // (The last slots are the output features, NAT and ACL, off here.)
        assert_eq!(out.per_next, vec![4, 1, 2, 3, 0, 0]);
        // Adjacency 0 and a stale index both read as drop; 1 is local.
        out.assert_counted(&[
            (Error::Unresolved, 1),
            (Error::TtlExpired, 1),
            (Error::TooBig, 1),
            (Error::Fragmented, 1),
            (Error::DropAdjacency, 2),
            (Error::NotNeighbor, 1),
        ]);
        assert_eq!(out.tx_ifs.iter().filter(|&&t| t == 1).count(), 4);
    }

    #[test]
    fn too_big_without_df_leaves_in_fragments_behind_the_neighbour_header() {
        let sent = udp([192, 0, 2, 1], 64, false, 2500);
        let h = Harness::new(3);
        let captured = crate::nodes::testing::Captured::default();
        let decl = Ip4Rewrite::decl(view());
        let to_small_mtu = |m: &mut crate::buffer::BufferMeta, _| m.adj = ADJ_SMALL_MTU;
        let out = h.run_node_capture_with(
            decl,
            std::slice::from_ref(&sent),
            0,
            to_small_mtu,
            captured.clone(),
        );
        // 2500 bytes of IP over an MTU of 1000: 976 + 976 + 528 bytes of data (offsets
        // count in 8 bytes, so 980 rounds down).
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 3);
        assert_eq!(out.errors[Error::Fragmented as usize], 1);
        let frags = captured.lock().unwrap().clone();
        let mut data = Vec::new();
        for (k, f) in frags.iter().enumerate() {
            assert_eq!(&f[..14], &ethernet_rewrite(NEIGHBOR_MAC, if_mac(1), 0x0800));
            let ip = Ipv4Header::parse(&f[14..]).unwrap();
            assert_eq!((ip.ttl(), ip.total_len()), (63, f.len() - 14));
            assert!(ip.total_len() <= 1000);
            let field = u16::from_be_bytes([f[20], f[21]]);
            assert_eq!(field & 0x1fff, (k * 976 / 8) as u16);
            assert_eq!(field & 0x2000 != 0, k < 2);
            data.extend_from_slice(&f[34..]);
        }
        assert_eq!(data, &sent[34..]);
    }

    #[test]
    fn non_ipv4_frames_are_dropped() {
        let mut arp = udp([192, 0, 2, 1], 64, false, 100);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let short = udp([192, 0, 2, 1], 64, false, 100)[..30].to_vec();
        for f in [arp, short, vec![0; 5]] {
            assert_eq!(
                rewrite_one(&f, ADJ_COMPLETE, 0).0,
                Verdict::Drop(Error::NotIpv4)
            );
        }
    }

    proptest! {
        /// The TTL decrement's incremental checksum equals a full recomputation, whatever
        /// the header holds.
        #[test]
        fn incremental_checksum_equals_recomputation(
            ttl in 2u8..=255, df in any::<bool>(), proto in any::<u8>(),
            src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), tos in any::<u8>(),
            len in 20usize..1500, vlan in any::<bool>(),
        ) {
            let mut f = frame(src, dst, proto, ttl, df, &vec![0x33; len - 20]);
            f[15] = tos;
            f[24..26].copy_from_slice(&[0, 0]);
            let c = checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
            let sent = if vlan { tagged(&f) } else { f };
            let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, 0);
            prop_assert_eq!(v, Verdict::Forward { tx_if: 1 });
            prop_assert_eq!(out[22], ttl - 1);
            let incremental = [out[24], out[25]];
            let mut ip = out[14..34].to_vec();
            ip[10..12].copy_from_slice(&[0, 0]);
            prop_assert_eq!(incremental, checksum(&ip).to_be_bytes());
        }

        /// Whatever the bytes and adjacency: a verdict, never a panic.
        #[test]
        fn rewrite_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..120),
            adj in 0u32..8, flags in 0u8..4,
        ) {
            let _ = rewrite_one(&bytes, adj, flags);
        }
    }
}
