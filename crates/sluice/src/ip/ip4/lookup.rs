//! ip4-lookup: IPv4's rules after the FIB lookup (the node, the same for both families, is
//! `nodes::ip::lookup`: batched lookups in each packet's routing table, pinned once per
//! frame). The FIB leaf is an adjacency index: ECMP
//! routes pick a member by a hash of the flow, our own addresses go to ip4-local, drop
//! adjacencies are counted, and every other packet goes to ip4-rewrite with the adjacency in
//! the buffer's `adj`. No route: ICMP destination unreachable (net).
//!
//! Two checks need the router's addresses, so they are made here rather than in ip4-input: a
//! packet claiming one of our addresses, or a connected subnet's broadcast address, as its
//! source is a martian (RFC 1812 5.3.7), and a unicast packet that came in a link-layer
//! broadcast or multicast frame is not forwarded (5.3.4). Our own packets skip both, and a
//! packet NAT44 translated skips the first (its source is ours by translation).

use crate::buffer::BufferMeta;
use crate::buffer::{FLAG_LOCAL_ORIGIN, FLAG_NAT_DONE};
use crate::fib::NO_ROUTE;
use crate::graph::names::error_counters;
pub use crate::ip::lookup::Next;
use crate::ip::lookup::{Decision, IpLookup, LookupRules};
use crate::ip::V4;
use crate::router::adjacency::{AdjKind, L3View, SourceKind};
use crate::wire::ipv4::Ipv4View;
use crate::wire::EtherType;

use super::IcmpErrorRequest;

pub const NAME: &str = "ip4-lookup";

error_counters! {
    pub enum Error {
        NoRoute = "ip4 no route to destination",
        DropRoute = "ip4 drop route (blackhole, subnet network or broadcast address)",
        SourceOurs = "ip4 source is one of our addresses",
        SourceBroadcast = "ip4 source is a connected subnet's broadcast address",
        LinkBroadcast = "ip4 unicast in a link-layer broadcast or multicast frame (not forwarded)",
    }
}

/// Why a source cannot be a host beside us: one of our addresses in its table, or the
/// broadcast address of one of that table's subnets (RFC 1812 4.2.2.11: {net, -1} is never a
/// source). Another table's addresses are another tenant's: they may be anyone's here.
#[inline(always)]
fn source_error(view: &L3View, table: u16, src: u32) -> Option<Error> {
    view.v4_source(table, src).map(|k| match k {
        SourceKind::Ours => Error::SourceOurs,
        SourceKind::Broadcast => Error::SourceBroadcast,
    })
}

/// ICMP destination unreachable, network unreachable (RFC 792).
const NET_UNREACHABLE: IcmpErrorRequest = IcmpErrorRequest::new(3, 0, 0);

/// The lookup node of IPv4 (`nodes::ip::lookup`, with the decision below).
pub type Ip4Lookup = IpLookup<V4>;

/// What ip4-lookup reads of a packet ip4-input has checked: (source, destination), 0.0.0.0
/// where it cannot be read (as a destination that matches only a default route).
#[derive(Clone, Copy, Default)]
pub struct Key {
    src: u32,
    dst: u32,
}

impl LookupRules for V4 {
    type Key = Key;
    type Addr = u32;
    type Counter = Error;

    #[inline(always)]
    fn key(ip: Option<&[u8]>) -> Key {
        ip.and_then(Ipv4View::of).map_or(Key::default(), |h| Key {
            src: h.source(),
            dst: h.destination(),
        })
    }

    #[inline(always)]
    fn destination(key: &Key) -> u32 {
        key.dst
    }

    #[inline(always)]
    fn decide(
        view: &L3View,
        table: u16,
        key: &Key,
        fib_adj: u32,
        meta: &BufferMeta,
        data: &[u8],
    ) -> Decision<Error> {
        let mut adj = fib_adj;
        let own = meta.flags & FLAG_LOCAL_ORIGIN != 0;
        // NAT44 made the source one of our addresses itself (nat44-in, before the lookup).
        let translated = meta.flags & FLAG_NAT_DONE != 0;
        let refused = if own {
            None
        } else {
            let source = if translated {
                None
            } else {
                source_error(view, table, key.src)
            };
            source.or_else(|| {
                // A group destination MAC on a packet we would forward (RFC 1812 5.3.4).
                let forwards = adj != NO_ROUTE
                    && !matches!(view.adj(adj).kind, AdjKind::Local | AdjKind::Drop);
                (forwards && super::link_group_of(data)).then_some(Error::LinkBroadcast)
            })
        };
        if let Some(e) = refused {
            return Decision::drop(adj, e);
        }
        if adj == NO_ROUTE {
            return Decision::error(adj, Error::NoRoute, NET_UNREACHABLE);
        }
        if view.adj(adj).kind == AdjKind::Multipath {
            adj = view.pick(adj, flow_hash(header(meta, data)));
        }
        match view.adj(adj).kind {
            AdjKind::Local => Decision::go(Next::Local, adj),
            AdjKind::Drop => Decision::drop(adj, Error::DropRoute),
            _ => Decision::go(Next::Rewrite, adj),
        }
    }

    fn display(dst: u32) -> String {
        std::net::Ipv4Addr::from(dst).to_string()
    }
}

/// A hash of the flow (addresses, protocol, and ports unless fragmented) for ECMP: the
/// packets of one flow always take the same path.
fn flow_hash(ip: Option<Ipv4View<'_>>) -> u32 {
    let Some(h) = ip else { return 0 };
    let mut x = h.source() ^ h.destination().rotate_left(16) ^ h.protocol() as u32;
    if h.first_fragment() && matches!(h.protocol(), 6 | 17) {
        if let Some(ports) = h.first_payload_word() {
            x ^= ports.rotate_left(7);
        }
    }
    // A multiply and fold spreads the bits so that `hash % members` is even.
    let y = (x as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (y >> 32) as u32 ^ y as u32
}

/// The IPv4 header of `bi`, as ip4-input checked it.
#[inline(always)]
fn header<'a>(meta: &BufferMeta, data: &'a [u8]) -> Option<Ipv4View<'a>> {
    super::l3_in(data, meta.l3_offset as usize, EtherType::IPV4).and_then(Ipv4View::of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::{FibWriter, Prefix4};
    use crate::nodes::testing::Harness;
    use crate::router::adjacency::{Adjacency, ADJ_DROP, ADJ_LOCAL};

    fn to(dst: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[26..30].copy_from_slice(&[198, 18, 0, 1]);
        f[30..34].copy_from_slice(&dst);
        f
    }

    #[test]
    fn spoofed_sources_and_link_broadcasts_are_not_forwarded() {
        let mut w = FibWriter::new();
        w.add4(Prefix4::new(0x0a00_0000, 8).unwrap(), 3).unwrap();
        w.add4(Prefix4::new(0xc000_0201, 32).unwrap(), ADJ_LOCAL)
            .unwrap();
        w.commit();
        let h = neighbors(4);
        h.add_address(0, 0xc000_0201, 24);
        let from = |src: [u8; 4], dst: [u8; 4]| {
            let mut f = to(dst);
            f[26..30].copy_from_slice(&src);
            f
        };
        let mut broadcast = to([10, 0, 0, 1]);
        broadcast[..6].fill(0xff);
        // To us in a broadcast frame is fine (ip4-local decides); so is our own packet.
        let mut local_broadcast = to([192, 0, 2, 1]);
        local_broadcast[..6].fill(0xff);
        let frames = vec![
            from([192, 0, 2, 1], [10, 0, 0, 1]),
            from([192, 0, 2, 255], [10, 0, 0, 1]),
            broadcast,
            local_broadcast,
            from([192, 0, 2, 1], [10, 0, 0, 2]),
        ];
        let out = h.run_node_with(
            Ip4Lookup::decl(crate::router::TableSet::only(w.reader()), h.view.clone()),
            &frames,
            0,
            |m, k| {
                if k == 4 {
                    m.flags |= FLAG_LOCAL_ORIGIN;
                }
            },
        );
        assert_eq!(out.to_next(Next::Drop as usize), 3);
        assert_eq!(out.to_next(Next::Local as usize), 1);
        assert_eq!(out.to_next(Next::Rewrite as usize), 1);
        assert_eq!(out.errors[Error::SourceOurs as usize], 1);
        assert_eq!(out.errors[Error::SourceBroadcast as usize], 1);
        assert_eq!(out.errors[Error::LinkBroadcast as usize], 1);
    }

    #[test]
    fn longest_prefix_wins_and_no_route_is_counted() {
        let mut w = FibWriter::new();
        w.add4(Prefix4::new(0x0a00_0000, 8).unwrap(), 7).unwrap();
        w.add4(Prefix4::new(0x0a01_0000, 16).unwrap(), 9).unwrap();
        w.commit();
        let h = neighbors(10);
        let frames = vec![to([10, 1, 2, 3]), to([10, 2, 0, 1]), to([192, 0, 2, 1])];
        let out = h.run_node(
            Ip4Lookup::decl(crate::router::TableSet::only(w.reader()), h.view.clone()),
            &frames,
            0,
        );
        assert_eq!(out.to_next(Next::Rewrite as usize), 2);
        assert_eq!(out.to_next(Next::IcmpError as usize), 1);
        assert_eq!(out.errors[Error::NoRoute as usize], 1);
        let mut routed: Vec<u32> = out
            .adjs
            .iter()
            .copied()
            .filter(|&a| a != NO_ROUTE)
            .collect();
        routed.sort();
        assert_eq!(routed, vec![7, 9]);
    }

    #[test]
    fn an_update_published_later_applies_to_the_next_frame() {
        let mut w = FibWriter::new();
        let r = w.reader();
        let h = neighbors(4);
        let out = h.run_node(
            Ip4Lookup::decl(crate::router::TableSet::only(r.clone()), h.view.clone()),
            &[to([10, 0, 0, 1])],
            0,
        );
        assert_eq!(out.to_next(Next::IcmpError as usize), 1);
        w.add4(Prefix4::new(0, 0).unwrap(), 3).unwrap();
        w.commit();
        let out = h.run_node(
            Ip4Lookup::decl(crate::router::TableSet::only(r), h.view.clone()),
            &[to([10, 0, 0, 1])],
            0,
        );
        assert_eq!(out.adjs, vec![3]);
    }

    /// A harness whose view has neighbour adjacencies up to index `n`.
    fn neighbors(n: usize) -> Harness {
        let h = Harness::new(1);
        h.edit_view(|v| {
            while v.adjs.len() <= n {
                let mut a = Adjacency::simple(AdjKind::Neighbor);
                a.interface = 0;
                v.adjs.push(a);
            }
        });
        h
    }

    #[test]
    fn local_drop_and_ecmp_adjacencies_are_dispatched() {
        let h = neighbors(5);
        h.edit_view(|v| {
            v.members = vec![4, 5];
            let mut mp = Adjacency::simple(AdjKind::Multipath);
            mp.first = 0;
            mp.count = 2;
            v.adjs[3] = mp;
        });
        let mut w = FibWriter::new();
        w.add4(Prefix4::new(0x0a00_0000, 8).unwrap(), 3).unwrap();
        w.add4(Prefix4::new(0xc000_0201, 32).unwrap(), ADJ_LOCAL)
            .unwrap();
        w.add4(Prefix4::new(0xcb00_7100, 24).unwrap(), ADJ_DROP)
            .unwrap();
        w.commit();
        // Many flows to 10/8 use both paths; one flow always the same one.
        let mut frames: Vec<Vec<u8>> = (0..64).map(|i| to([10, 0, i, 1])).collect();
        frames.push(to([192, 0, 2, 1]));
        frames.push(to([203, 0, 113, 9]));
        let out = h.run_node(
            Ip4Lookup::decl(crate::router::TableSet::only(w.reader()), h.view.clone()),
            &frames,
            0,
        );
        assert_eq!(out.to_next(Next::Rewrite as usize), 64);
        assert_eq!(out.to_next(Next::Local as usize), 1);
        assert_eq!(out.to_next(Next::Drop as usize), 1);
        assert_eq!(out.errors[Error::DropRoute as usize], 1);
        let used: std::collections::HashSet<u32> = out
            .adjs
            .iter()
            .copied()
            .filter(|a| *a == 4 || *a == 5)
            .collect();
        assert_eq!(used.len(), 2, "both ECMP members carry traffic");
        let same: Vec<Vec<u8>> = (0..8).map(|_| to([10, 0, 7, 1])).collect();
        let out = h.run_node(
            Ip4Lookup::decl(crate::router::TableSet::only(w.reader()), h.view.clone()),
            &same,
            0,
        );
        assert!(out.adjs.windows(2).all(|p| p[0] == p[1]));
        // The XDP fast path keys routes by destination: an ECMP member is not for it, a
        // single path is.
        let mut mixed = same.clone();
        mixed.push(to([192, 0, 2, 1]));
        let out = h.run_node_with(
            Ip4Lookup::decl(crate::router::TableSet::only(w.reader()), h.view.clone()),
            &mixed,
            0,
            |m, _| m.flags |= crate::buffer::FLAG_OFFLOAD,
        );
        let offload = |f: &u8| f & crate::buffer::FLAG_OFFLOAD != 0;
        assert_eq!(out.flags.iter().filter(|f| offload(f)).count(), 1);
        assert!(
            out.flags[..8].iter().all(|f| !offload(f)),
            "{:?}",
            out.flags
        );
    }
}
