//! ip6-rewrite: IPv6's part of the shared rewrite node (`nodes/ip/rewrite.rs`): the hop
//! limit (no checksum to fix) and the MTU. IPv6 routers never fragment: a packet larger than
//! the MTU goes back to its sender as ICMPv6 Packet Too Big.

use super::IcmpErrorRequest;
use crate::ip::rewrite::{rewrite_counters, Checked, IpRewrite, RewriteRules};
pub use crate::ip::rewrite::{Next, OUTPUT_FEATURES};
use crate::ip::V6;
use crate::router::adjacency::{AdjKind, Adjacency, L3View};
use crate::wire::icmp6;
use crate::wire::ipv6::{self, Ipv6View};
use std::net::{IpAddr, Ipv6Addr};

pub const NAME: &str = "ip6-rewrite";

/// The IPv6 rewrite node.
pub type Ip6Rewrite = IpRewrite<V6>;
/// What happens to one packet.
pub type Verdict = crate::ip::rewrite::Verdict<Error>;

rewrite_counters! {
    NotIpv6 = "not an IPv6 packet",
    HopLimitExpired = "hop limit expired (sent to icmp6-error)",
    TooBig = "larger than the MTU (sent to icmp6-error)",
    LocalTooBig = "own packet larger than the MTU",
    Unresolved = "neighbour not resolved (sent to ip6-nd)",
}

/// The neighbour a packet to `dst` by adjacency `adj` goes to: the next hop, or the
/// destination itself on a connected network.
pub fn neighbor_of(view: &L3View, adj: u32, dst: u128) -> IpAddr {
    let a = view.adj(adj);
    match a.kind {
        AdjKind::Glean => IpAddr::V6(Ipv6Addr::from(dst)),
        _ => a.next_hop,
    }
}

impl RewriteRules for V6 {
    type Counter = Error;
    type Dst = u128;
    const RESOLVE_NODE: &'static str = super::nd::NAME;
    const OUTPUT_ARC: usize = crate::graph::features::IP6_OUTPUT;
    const HOPS: &'static str = "hop limit";
    const UNRESOLVED: Error = Error::Unresolved;
    // Never counted: `check` sends every packet larger than the MTU to icmp6-error.
    const FRAGMENTED: Error = Error::TooBig;
    const FRAGMENT_FAILED: Error = Error::TooBig;

    fn check(ip: &[u8], adj: &Adjacency, local: bool) -> Result<Checked<u128>, Verdict> {
        let ip = match Ipv6View::of(ip) {
            Some(ip) if ip.version() == 6 => ip,
            _ => return Err(Verdict::Drop(Error::NotIpv6)),
        };
        if !local && ip.hop_limit() <= 1 {
            let req = IcmpErrorRequest::new(icmp6::kind::TIME_EXCEEDED, 0, 0);
            return Err(Verdict::Icmp(req, Error::HopLimitExpired));
        }
        let total = ip.total_len() as u32;
        // MTU 0 means the control plane set none: no limit to enforce.
        if adj.mtu != 0 && total > adj.mtu {
            if local {
                return Err(Verdict::Drop(Error::LocalTooBig));
            }
            let req = IcmpErrorRequest::new(
                icmp6::kind::PACKET_TOO_BIG,
                0,
                adj.mtu.min(u16::MAX as u32) as u16,
            );
            return Err(Verdict::Icmp(req, Error::TooBig));
        }
        Ok(Checked {
            total,
            destination: ip.destination(),
            too_big: false,
        })
    }

    fn on_link(dst: u128) -> IpAddr {
        IpAddr::V6(Ipv6Addr::from(dst))
    }

    fn forward(_: &L3View, _: &Adjacency, ip: &mut [u8]) {
        ipv6::decrement_hop_limit(ip);
    }

    fn hops(ip: &[u8]) -> Option<u8> {
        Ipv6View::of(ip).map(|ip| ip.hop_limit())
    }

    fn fragment(
        _: &[u8],
        _: usize,
        _: &mut Vec<u8>,
        _: impl FnMut(&[u8]) -> bool,
    ) -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::FLAG_LOCAL_ORIGIN;

    use crate::ip::ip6::input::test_support::*;
    use crate::nodes::testing::Harness;
    use crate::router::adjacency::ethernet_rewrite;
    use crate::wire::ipv6::Ipv6Header;
    use proptest::prelude::*;

    /// Run `rewrite` on one packet and return the verdict, the bytes after it and tx_if.
    fn rewrite_one(frame: &[u8], adj: u32, flags: u8) -> (Verdict, Vec<u8>, u32) {
        crate::ip::rewrite::rewrite_one::<V6>(&view(), frame, adj, flags)
    }

    /// A forwarded packet: header `eth`, hop limit one less, everything else as sent.
    fn assert_forwarded(sent: &[u8], out: &[u8], eth: [u8; 14]) {
        assert_eq!(&out[..14], &eth);
        assert_eq!(out.len(), sent.len());
        let h = Ipv6Header::parse(&out[14..]).unwrap();
        assert_eq!(h.hop_limit() + 1, sent[21]);
        assert_eq!(&out[14..21], &sent[14..21]);
        assert_eq!(&out[22..], &sent[22..]);
    }

    /// Forwarded to the neighbour on if1 by its complete adjacency.
    fn assert_to_neighbor(sent: &[u8], out: &[u8]) {
        assert_forwarded(sent, out, ethernet_rewrite(NEIGHBOR_MAC, if_mac(1), 0x86dd));
    }

    #[test]
    fn complete_neighbor_is_rewritten_and_sent() {
        let sent = udp(HOST, FAR, 64, 100);
        let (v, out, tx) = rewrite_one(&sent, ADJ_COMPLETE, 0);
        assert_eq!((v, tx), (Verdict::Forward { tx_if: 1 }, 1));
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn neighbor_table_completes_glean_and_incomplete_adjacencies() {
        let sent = udp(HOST, GLEANED, 9, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_GLEAN, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_forwarded(
            &sent,
            &out,
            ethernet_rewrite(GLEANED_MAC, if_mac(1), 0x86dd),
        );
        let sent = udp(HOST, FAR, 9, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_INCOMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn bytes_after_the_payload_length_are_not_forwarded() {
        let sent = udp(HOST, FAR, 64, 100);
        let mut padded = sent.clone();
        padded.extend_from_slice(&[0xee; 50]);
        let (v, out, _) = rewrite_one(&padded, ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn unknown_neighbor_goes_to_nd_untouched() {
        let sent = udp(HOST, GLEANED + 1, 9, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_GLEAN, 0);
        assert_eq!((v, out), (Verdict::Resolve, sent));
    }

    #[test]
    fn vlan_tagged_input_leaves_untagged() {
        let plain = udp(HOST, FAR, 64, 100);
        let (v, out, _) = rewrite_one(&tagged(&plain), ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&plain, &out);
    }

    #[test]
    fn hop_limit_one_goes_to_icmp_error_untouched_unless_local() {
        let sent = udp(HOST, FAR, 1, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, 0);
        let req = IcmpErrorRequest::new(3, 0, 0);
        assert_eq!(
            (v, out),
            (Verdict::Icmp(req, Error::HopLimitExpired), sent.clone())
        );
        let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, FLAG_LOCAL_ORIGIN);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_eq!(&out[14..], &sent[14..]);
    }

    #[test]
    fn too_big_asks_for_packet_too_big_with_the_mtu() {
        let sent = udp(HOST, FAR, 64, 1281);
        let (v, out, _) = rewrite_one(&sent, ADJ_SMALL_MTU, 0);
        let req = IcmpErrorRequest::new(2, 0, 1280);
        assert_eq!((v, out), (Verdict::Icmp(req, Error::TooBig), sent.clone()));
        let (v, _, _) = rewrite_one(&sent, ADJ_SMALL_MTU, FLAG_LOCAL_ORIGIN);
        assert_eq!(v, Verdict::Drop(Error::LocalTooBig));
        let (v, _, _) = rewrite_one(&udp(HOST, FAR, 64, 1280), ADJ_SMALL_MTU, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
    }

    #[test]
    fn node_routes_and_counts_each_case() {
        let frames = vec![
            udp(HOST, FAR, 64, 100),
            tagged(&udp(HOST, FAR, 64, 100)),
            udp(HOST, GLEANED + 1, 64, 100),
            udp(HOST, FAR, 1, 100),
            udp(HOST, FAR, 64, 1300),
            udp(HOST, FAR, 64, 100),
            udp(HOST, FAR, 64, 100),
            udp(HOST, FAR, 64, 100),
            vec![0; 20],
        ];
        let adjs = [
            ADJ_COMPLETE,
            ADJ_COMPLETE,
            ADJ_GLEAN,
            ADJ_COMPLETE,
            ADJ_SMALL_MTU,
            0,
            1,
            999,
            ADJ_COMPLETE,
        ];
        let h = Harness::new(3);
        let out = h.run_node_with(Ip6Rewrite::decl(view()), &frames, 0, |m, k| m.adj = adjs[k]);
        // (The last slot is the output ACL, off here.)
        assert_eq!(out.per_next, vec![2, 1, 2, 4, 0]);
        out.assert_counted(&[
            (Error::Unresolved, 1),
            (Error::HopLimitExpired, 1),
            (Error::TooBig, 1),
            (Error::DropAdjacency, 2),
            (Error::NotNeighbor, 1),
            (Error::NotIpv6, 1),
        ]);
        assert_eq!(out.tx_ifs.iter().filter(|&&t| t == 1).count(), 2);
    }

    proptest! {
        /// Whatever the bytes, adjacency and flags: a verdict, never a panic.
        #[test]
        fn rewrite_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..120),
            adj in 0u32..8, flags in 0u8..4,
        ) {
            let _ = rewrite_one(&bytes, adj, flags);
        }
    }
}
