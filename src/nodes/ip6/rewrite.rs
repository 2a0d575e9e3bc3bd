//! ip6-rewrite: the last step of forwarding IPv6, like ip4-rewrite. For the adjacency
//! ip6-lookup chose it finds the Ethernet header (from the adjacency when complete, else from
//! the neighbour table), checks hop limit and MTU (IPv6 routers never fragment: too big is
//! an ICMPv6 Packet Too Big), decrements the hop limit (no checksum to fix), writes the new
//! header in front of the IPv6 header (dropping any VLAN tags the packet came with) and hands
//! the packet to interface-output. A neighbour not known yet sends the packet to ip6-nd,
//! unchanged; ip6-nd brings it back here once the neighbour answers.

use super::IcmpErrorRequest;
use crate::buffer::{WorkerBuffers, FLAG_LOCAL_ORIGIN};
use crate::features::{self, FeatureView, SharedFeatures, IP6_OUTPUT};
use crate::graph::{NodeCx, NodeDecl, NodeKind, TracedLoop};
use crate::nodes::ip4::rewrite::{neighbor_header, write_header, NoHeader};
use crate::router::adjacency::{AdjKind, L3View, SharedL3View};
use crate::wire::icmp6;
use crate::wire::ipv6::{self, Ipv6View};
use crate::wire::EtherType;
use std::net::{IpAddr, Ipv6Addr};

/// How many packets ahead the data is prefetched.
const PREFETCH_AHEAD: usize = 4;

#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    InterfaceOutput,
    Nd,
    IcmpError,
    Drop,
}

#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    NotIpv6,
    DropAdjacency,
    NotNeighbor,
    NoInterface,
    HopLimitExpired,
    TooBig,
    LocalTooBig,
    Unresolved,
}

pub const ERRORS: [&str; 8] = [
    "not an IPv6 packet",
    "adjacency drops the packet",
    "adjacency is not a neighbour (local, multipath or stale)",
    "adjacency's interface is not in the view",
    "hop limit expired (sent to icmp6-error)",
    "larger than the MTU (sent to icmp6-error)",
    "own packet larger than the MTU",
    "neighbour not resolved (sent to ip6-nd)",
];

/// What happens to one packet; `Forward` has already been applied to its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Forward { tx_if: u32 },
    Nd,
    Icmp(IcmpErrorRequest, Error),
    Drop(Error),
}

impl Verdict {
    fn next(self) -> Next {
        match self {
            Verdict::Forward { .. } => Next::InterfaceOutput,
            Verdict::Nd => Next::Nd,
            Verdict::Icmp(..) => Next::IcmpError,
            Verdict::Drop(_) => Next::Drop,
        }
    }

    fn counted(self) -> Option<Error> {
        match self {
            Verdict::Forward { .. } => None,
            Verdict::Nd => Some(Error::Unresolved),
            Verdict::Icmp(_, e) | Verdict::Drop(e) => Some(e),
        }
    }
}

pub struct Ip6Rewrite {
    view: SharedL3View,
    /// The ip6-output arc's features on each interface (an output ACL).
    features: SharedFeatures,
}

/// The first next slot of the ip6-output arc's features (after the `Next` slots).
pub const OUTPUT_FEATURES: usize = 4;

impl Ip6Rewrite {
    /// With no output feature on any interface.
    pub fn decl(view: SharedL3View) -> NodeDecl {
        Self::decl_with(view, features::shared(FeatureView::new()))
    }

    /// Packets leave for interface-output, or for the ip6-output arc's first feature on
    /// their interface (its features are this node's nexts from `OUTPUT_FEATURES` on).
    pub fn decl_with(view: SharedL3View, features: SharedFeatures) -> NodeDecl {
        let mut next = vec![
            super::INTERFACE_OUTPUT.to_string(),
            super::IP6_ND.to_string(),
            super::ICMP6_ERROR.to_string(),
            super::ERROR_DROP.to_string(),
        ];
        next.extend(features::feature_names(IP6_OUTPUT));
        NodeDecl {
            name: super::IP6_REWRITE.to_string(),
            kind: NodeKind::Internal,
            next,
            errors: ERRORS.to_vec(),
            node: Box::new(Ip6Rewrite { view, features }),
        }
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

    /// Decide one packet's fate and, when it is forwarded, rewrite it in place. Packets sent
    /// anywhere else are left untouched (icmp6-error quotes them as they arrived).
    pub fn rewrite(view: &L3View, bufs: &mut WorkerBuffers, bi: u32) -> Verdict {
        let meta = *bufs.meta(bi);
        let adj = *view.adj(meta.adj);
        match adj.kind {
            AdjKind::Neighbor | AdjKind::Glean => {}
            AdjKind::Drop => return Verdict::Drop(Error::DropAdjacency),
            AdjKind::Local | AdjKind::Multipath => return Verdict::Drop(Error::NotNeighbor),
        }
        let l3 = meta.l3_offset as usize;
        let ip = match super::l3_header(bufs, bi, EtherType::IPV6).and_then(Ipv6View::of) {
            Some(ip) if ip.version() == 6 => ip,
            _ => return Verdict::Drop(Error::NotIpv6),
        };
        let local = meta.flags & FLAG_LOCAL_ORIGIN != 0;
        if !local && ip.hop_limit() <= 1 {
            let req = IcmpErrorRequest {
                kind: icmp6::kind::TIME_EXCEEDED,
                code: 0,
                arg: 0,
            };
            return Verdict::Icmp(req, Error::HopLimitExpired);
        }
        let total = ip.total_len() as u32;
        // MTU 0 means the control plane set none: no limit to enforce.
        if adj.mtu != 0 && total > adj.mtu {
            if local {
                return Verdict::Drop(Error::LocalTooBig);
            }
            let req = IcmpErrorRequest {
                kind: icmp6::kind::PACKET_TOO_BIG,
                code: 0,
                arg: adj.mtu.min(u16::MAX as u32) as u16,
            };
            return Verdict::Icmp(req, Error::TooBig);
        }

        let destination = ip.destination();
        let neighbor = || Self::neighbor_of(view, meta.adj, destination);
        let header = match neighbor_header(view, &adj, neighbor, EtherType::IPV6) {
            Ok(h) => h,
            Err(NoHeader::Unresolved) => return Verdict::Nd,
            Err(NoHeader::NoInterface) => return Verdict::Drop(Error::NoInterface),
        };

        if !local {
            ipv6::decrement_hop_limit(bufs.l3_mut(bi));
        }
        // Bytes after the payload length are link padding, not part of the packet.
        super::trim_to(bufs, bi, l3 + total as usize);
        if !write_header(bufs, bi, l3, &header, adj.interface) {
            return Verdict::Drop(Error::NotIpv6);
        }
        Verdict::Forward {
            tx_if: adj.interface,
        }
    }
}

impl TracedLoop for Ip6Rewrite {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let view = self.view.load();
        let features = self.features.load();
        let output_features = features.any(IP6_OUTPUT);
        for (k, &bi) in frame.iter().enumerate() {
            if let Some(&ahead) = frame.get(k + PREFETCH_AHEAD) {
                cx.bufs.prefetch(ahead);
            }
            let verdict = Self::rewrite(&view, cx.bufs, bi);
            if let Some(e) = verdict.counted() {
                cx.count_error(e as usize, 1);
            }
            if let Verdict::Icmp(req, _) = verdict {
                cx.bufs.meta_mut(bi).aux = req.to_aux();
            }
            if TRACE {
                let adj = cx.bufs.meta(bi).adj;
                match verdict {
                    Verdict::Forward { tx_if } => {
                        cx.trace(bi, format_args!("adj {adj} tx if {tx_if}"))
                    }
                    Verdict::Icmp(req, e) => cx.trace(
                        bi,
                        format_args!(
                            "adj {adj}: {} (icmp6 {} code {} arg {})",
                            ERRORS[e as usize], req.kind, req.code, req.arg
                        ),
                    ),
                    Verdict::Nd => cx.trace(
                        bi,
                        format_args!("adj {adj}: {}", ERRORS[Error::Unresolved as usize]),
                    ),
                    Verdict::Drop(e) => {
                        cx.trace(bi, format_args!("adj {adj}: drop: {}", ERRORS[e as usize]))
                    }
                }
            }
            let slot = match verdict {
                Verdict::Forward { tx_if } if output_features => {
                    features::start_slot(&features, IP6_OUTPUT, tx_if, OUTPUT_FEATURES)
                }
                v => v.next() as usize,
            };
            cx.enqueue(slot, bi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{BufferPool, HugePages};
    use crate::nodes::ip6::input::test_support::*;
    use crate::nodes::testing::Harness;
    use crate::router::adjacency::ethernet_rewrite;
    use crate::wire::ipv6::Ipv6Header;
    use proptest::prelude::*;

    /// Run `rewrite` on one packet and return the verdict, the bytes after it and tx_if.
    fn rewrite_one(frame: &[u8], adj: u32, flags: u8) -> (Verdict, Vec<u8>, u32) {
        let pool = BufferPool::new(16, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let bi = crate::nodes::testing::received(&mut bufs, frame);
        bufs.meta_mut(bi).adj = adj;
        bufs.meta_mut(bi).flags = flags;
        let v = view();
        let verdict = Ip6Rewrite::rewrite(&v.load(), &mut bufs, bi);
        let mut out = Vec::new();
        bufs.copy_packet(bi, &mut out);
        let tx = bufs.meta(bi).tx_if;
        bufs.free(bi);
        (verdict, out, tx)
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
        assert_eq!((v, out), (Verdict::Nd, sent));
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
        let req = IcmpErrorRequest {
            kind: 3,
            code: 0,
            arg: 0,
        };
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
        let req = IcmpErrorRequest {
            kind: 2,
            code: 0,
            arg: 1280,
        };
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
        let e = &out.errors;
        assert_eq!(e[Error::Unresolved as usize], 1);
        assert_eq!(e[Error::HopLimitExpired as usize], 1);
        assert_eq!(e[Error::TooBig as usize], 1);
        assert_eq!(e[Error::DropAdjacency as usize], 2);
        assert_eq!(e[Error::NotNeighbor as usize], 1);
        assert_eq!(e[Error::NotIpv6 as usize], 1);
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
