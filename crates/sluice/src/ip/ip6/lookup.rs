//! ip6-lookup: the longest-prefix match of each packet's destination, for the whole frame in
//! one batched FIB lookup, then a branch on what the adjacency is: for us → ip6-local, a
//! blackhole → counted drop, equal-cost paths → one member by a flow hash, a neighbour or a
//! connected network → ip6-rewrite. The FIB and the adjacency view are each pinned once per
//! frame, so an update takes effect from the next frame whole.
//!
//! Multicast is not routed: link-scope groups (ff02::/16: all-nodes, solicited-node, where
//! neighbour discovery arrives) go to ip6-local, every other group is a counted drop.
//!
//! No route: ICMPv6 destination unreachable, code 0 (RFC 4443 3.1), through icmp6-error.
//! Link-local addresses are never routed (RFC 4291 2.5.6): one to the receiving interface's
//! own link-local address is for us, any other is a counted drop, and the router's own
//! packets to a link-local address (replies, errors) leave by the interface they answer,
//! through its glean adjacency. A packet to forward whose source is link-local gets
//! destination unreachable code 2, beyond scope of source address; one from the unspecified
//! address (RFC 4291 2.5.2), or that came in a link-layer multicast frame, is dropped.

use super::IcmpErrorRequest;
use crate::buffer::{BufferMeta, FLAG_LOCAL_ORIGIN};
use crate::fib::NO_ROUTE;
use crate::graph::names::error_counters;
pub use crate::ip::lookup::Next;
use crate::ip::lookup::{Decision, IpLookup, LookupRules};
use crate::ip::V6;
use crate::router::adjacency::{AdjKind, L3View, ADJ_DROP, ADJ_LOCAL};
use crate::wire::icmp6;
use crate::wire::ipv6;
use crate::wire::ipv6::Ipv6View;

pub const NAME: &str = "ip6-lookup";

error_counters! {
    pub enum Error {
        NoRoute = "ip6 no route to destination (to icmp6-error)",
        DropAdjacency = "ip6 route drops the packet",
        MulticastNotRouted = "ip6 multicast beyond the link not routed",
        LinkLocalNotOurs = "ip6 link-local destination not ours (never routed)",
        LinkLocalSource = "ip6 link-local source not forwarded: beyond scope (to icmp6-error)",
        UnspecifiedSource = "ip6 unspecified source not forwarded",
        LinkMulticast = "ip6 unicast in a link-layer multicast frame (not forwarded)",
    }
}

/// Destination unreachable (RFC 4443 3.1) with `code`.
const fn unreachable(code: u8) -> IcmpErrorRequest {
    IcmpErrorRequest {
        kind: icmp6::kind::DEST_UNREACHABLE,
        code,
        arg: 0,
    }
}
const NO_ROUTE_CODE: u8 = 0;
const BEYOND_SCOPE_CODE: u8 = 2;

/// What lookup needs of one packet: destination and the fields of the flow hash.
#[derive(Clone, Copy, Default)]
pub struct Key {
    dst: u128,
    src: u128,
    /// Flow label and next header.
    flow: u32,
}

/// The lookup node of IPv6 (`nodes::ip::lookup`, with the decision below).
pub type Ip6Lookup = IpLookup<V6>;

impl LookupRules for V6 {
    type Key = Key;
    type Addr = u128;
    type Counter = Error;

    /// The key of a packet ip6-input has checked (all zero if it cannot be read: :: matches
    /// only a default route).
    #[inline(always)]
    fn key(ip: Option<&[u8]>) -> Key {
        let Some(h) = ip.and_then(Ipv6View::of) else {
            return Key::default();
        };
        Key {
            dst: h.destination(),
            src: h.source(),
            flow: h.flow_label() << 8 | h.next_header() as u32,
        }
    }

    #[inline(always)]
    fn destination(key: &Key) -> u128 {
        key.dst
    }

    #[inline(always)]
    fn decide(
        view: &L3View,
        _table: u16,
        key: &Key,
        fib_adj: u32,
        meta: &BufferMeta,
        data: &[u8],
    ) -> Decision<Error> {
        decide(view, *key, fib_adj, meta, super::link_group_of(data))
    }

    fn display(dst: u128) -> String {
        ipv6::display(dst).to_string()
    }
}

/// The fate of one packet whose FIB lookup gave `fib_adj`; `link_group` when it came in a
/// link-layer multicast frame.
fn decide(
    view: &L3View,
    key: Key,
    fib_adj: u32,
    meta: &BufferMeta,
    link_group: bool,
) -> Decision<Error> {
    let own = meta.flags & FLAG_LOCAL_ORIGIN != 0;
    if ipv6::is_multicast(key.dst) {
        // ff02::/16: link scope, for us; a route never decides about groups.
        return if key.dst >> 112 == 0xff02 {
            Decision::go(Next::Local, ADJ_LOCAL)
        } else {
            Decision::drop(NO_ROUTE, Error::MulticastNotRouted)
        };
    }
    if ipv6::is_link_local(key.dst) {
        let Some(itf) = view.interface(meta.rx_if).filter(|i| !i.v6.is_empty()) else {
            return Decision::drop(ADJ_DROP, Error::LinkLocalNotOurs);
        };
        return if own && itf.glean != ADJ_DROP {
            Decision::go(Next::Rewrite, itf.glean)
        } else if !own && key.dst == ipv6::link_local_from_mac(itf.mac) {
            Decision::go(Next::Local, ADJ_LOCAL)
        } else {
            Decision::drop(ADJ_DROP, Error::LinkLocalNotOurs)
        };
    }
    if fib_adj == NO_ROUTE {
        return Decision::error(NO_ROUTE, Error::NoRoute, unreachable(NO_ROUTE_CODE));
    }
    let mut adj = fib_adj;
    if view.adj(adj).kind == AdjKind::Multipath {
        adj = view.pick(adj, flow_hash(key.src, key.dst, key.flow));
    }
    match view.adj(adj).kind {
        AdjKind::Local => Decision::go(Next::Local, adj),
        // An empty multipath set picks itself: nothing to send to.
        AdjKind::Drop | AdjKind::Multipath => Decision::drop(adj, Error::DropAdjacency),
        AdjKind::Glean | AdjKind::Neighbor if own => Decision::go(Next::Rewrite, adj),
        AdjKind::Glean | AdjKind::Neighbor => {
            if ipv6::is_unspecified(key.src) {
                Decision::drop(adj, Error::UnspecifiedSource)
            } else if ipv6::is_link_local(key.src) {
                let req = unreachable(BEYOND_SCOPE_CODE);
                Decision::error(adj, Error::LinkLocalSource, req)
            } else if link_group {
                Decision::drop(adj, Error::LinkMulticast)
            } else {
                Decision::go(Next::Rewrite, adj)
            }
        }
    }
}

/// A flow hash for picking among equal-cost paths: the same for every packet of a flow
/// (addresses, flow label, next header), spread over the 32 bits by a multiplicative mix.
pub fn flow_hash(src: u128, dst: u128, flow: u32) -> u32 {
    let fold = |a: u128| (a as u64) ^ ((a >> 64) as u64);
    let mut h = fold(src).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= fold(dst).rotate_left(29);
    h = (h ^ flow as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (h >> 32) as u32 ^ h as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::{FibWriter, Prefix6};
    use crate::ip::ip6::input::test_support::*;
    use crate::nodes::testing::Harness;
    use crate::router::adjacency::ADJ_DROP;

    fn prefix(addr: u128, len: u8) -> Prefix6 {
        Prefix6::new(addr, len).unwrap()
    }

    #[test]
    fn each_adjacency_kind_goes_its_way() {
        let mut w = FibWriter::new();
        let net1 = 0x2001_0db8_0001u128 << 80;
        w.add6(prefix(net1, 64), ADJ_GLEAN).unwrap();
        w.add6(prefix(NEIGHBOR, 128), ADJ_COMPLETE).unwrap();
        w.add6(prefix(if_addr(0), 128), ADJ_LOCAL).unwrap();
        w.add6(prefix(0x2001_0db8_dead << 80, 48), ADJ_DROP)
            .unwrap();
        w.add6(prefix(0, 0), ADJ_MULTIPATH).unwrap();
        w.commit();
        let h = Harness::new(2);
        let frames = vec![
            udp(HOST, GLEANED, 64, 60),
            udp(HOST, NEIGHBOR, 64, 60),
            echo_request(HOST, if_addr(0), 8),
            udp(HOST, 0x2001_0db8_dead << 80 | 1, 64, 60),
            udp(HOST, FAR, 64, 60),
            udp(HOST, 0xff02 << 112 | 1, 64, 60),
            udp(HOST, 0xff0e << 112 | 1, 64, 60),
        ];
        let out = h.run_node(
            Ip6Lookup::decl(crate::router::TableSet::only(w.reader()), view()),
            &frames,
            0,
        );
        assert_eq!(out.per_next, vec![3, 2, 0, 2]);
        assert_eq!(out.errors[Error::DropAdjacency as usize], 1);
        assert_eq!(out.errors[Error::MulticastNotRouted as usize], 1);
        assert_eq!(out.errors[Error::NoRoute as usize], 0);
        // The multipath route resolved to one of its members.
        let mut adjs = out.adjs.clone();
        adjs.sort();
        assert!(adjs.contains(&ADJ_GLEAN) && !adjs.contains(&ADJ_MULTIPATH));
        assert_eq!(adjs.iter().filter(|&&a| a == ADJ_LOCAL).count(), 2);
    }

    #[test]
    fn no_route_is_counted() {
        let w = FibWriter::new();
        let h = Harness::new(1);
        let out = h.run_node(
            Ip6Lookup::decl(crate::router::TableSet::only(w.reader()), view()),
            &[udp(HOST, FAR, 64, 60), vec![1, 2, 3]],
            0,
        );
        assert_eq!(out.per_next, vec![0, 0, 2, 0]);
        assert_eq!(out.errors[Error::NoRoute as usize], 2);
        assert!(out.adjs.iter().all(|&a| a == NO_ROUTE), "{:?}", out.adjs);
    }

    #[test]
    fn link_local_and_scoped_sources_follow_rfc_4291() {
        let mut w = FibWriter::new();
        w.add6(prefix(NEIGHBOR, 128), ADJ_COMPLETE).unwrap();
        w.commit();
        let h = Harness::new(2);
        let ours = ipv6::link_local_from_mac(if_mac(1));
        let other = 0xfe80u128 << 112 | 0x99;
        let mut group_frame = udp(HOST, NEIGHBOR, 64, 60);
        group_frame[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
        let frames = vec![
            echo_request(other, ours, 8),
            udp(HOST, other, 64, 60),
            udp(HOST, other, 64, 60),
            udp(other, NEIGHBOR, 64, 60),
            udp(0, NEIGHBOR, 64, 60),
            group_frame,
        ];
        // Packet 2 is the router's own (a reply to a link-local address).
        let out = h.run_node_with(
            Ip6Lookup::decl(crate::router::TableSet::only(w.reader()), view()),
            &frames,
            1,
            |m, k| {
                if k == 2 {
                    m.flags |= FLAG_LOCAL_ORIGIN;
                }
            },
        );
        assert_eq!(out.per_next, vec![1, 1, 1, 3]);
        // The reply leaves by if1's glean adjacency; the echo to us is local.
        assert!(out.adjs.contains(&ADJ_GLEAN) && out.adjs.contains(&ADJ_LOCAL));
        out.assert_counted(&[
            (Error::LinkLocalNotOurs, 1),
            (Error::LinkLocalSource, 1),
            (Error::UnspecifiedSource, 1),
            (Error::LinkMulticast, 1),
        ]);
    }

    #[test]
    fn multipath_keeps_a_flow_on_one_path_and_spreads_flows() {
        let mut w = FibWriter::new();
        w.add6(prefix(0, 0), ADJ_MULTIPATH).unwrap();
        w.commit();
        let h = Harness::new(2);
        // The same flow eight times: one member.
        let same: Vec<Vec<u8>> = (0..8).map(|_| udp(HOST, FAR, 64, 60)).collect();
        let out = h.run_node(
            Ip6Lookup::decl(crate::router::TableSet::only(w.reader()), view()),
            &same,
            0,
        );
        assert!(out.adjs.windows(2).all(|p| p[0] == p[1]), "{:?}", out.adjs);
        // Many sources: both members.
        let many: Vec<Vec<u8>> = (0..64).map(|i| udp(HOST + i, FAR, 64, 60)).collect();
        let out = h.run_node(
            Ip6Lookup::decl(crate::router::TableSet::only(w.reader()), view()),
            &many,
            0,
        );
        let complete = out.adjs.iter().filter(|&&a| a == ADJ_COMPLETE).count();
        assert!(complete > 10 && complete < 54, "{complete} of 64");
        assert!(out
            .adjs
            .iter()
            .all(|&a| a == ADJ_COMPLETE || a == ADJ_INCOMPLETE));
    }
}
