//! ip4-arp: packets whose next hop has no MAC yet. Each is held (a few per neighbour, see
//! `neighbor_hold`) while ARP requests go out; when the control plane publishes the
//! neighbour (learnt by arp-input), the held packets go back to ip4-rewrite. A neighbour
//! that never answers costs its packets, each counted.

use super::neighbor_hold::{HoldSlots, HoldTable, Next, Resolver};
use crate::buffer::FLAG_LOCAL_ORIGIN;
use crate::graph::names::error_counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::ip::V4;
use crate::router::adjacency::{AdjKind, L3View, SharedL3View};
use crate::router::neighbor_map::{Probe, ProbeQueue};
use crate::router::{LearnSender, NeighborLearn};
use crate::wire::arp::request_frame;
use crate::wire::ipv4::Ipv4View;
use crate::wire::EtherType;
use crate::wire::MacAddress;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

pub const NAME: &str = "ip4-arp";

error_counters! {
    pub enum Error {
        Held = "packets held for ARP resolution",
        RequestsSent = "arp requests sent",
        Released = "held packets released to ip4-rewrite",
        QueueFull = "arp hold queue full for the neighbour (dropped)",
        TableFull = "too many neighbours being resolved (dropped)",
        NoAnswer = "neighbour did not answer ARP (held packet dropped)",
        NotResolvable = "adjacency is not a glean or neighbour (dropped)",
        NoSourceAddress = "no IPv4 address on the interface to ask from (dropped)",
        NoBuffer = "no buffer for an arp request",
        ProbesSent = "arp unicast probes sent (neighbour unreachability detection)",
        LearnQueueFull = "neighbour learn queue full (resolution not announced)",
    }
}

/// The hold counters, `Held` to `NoAnswer`, in `HoldSlots` order.
const SLOTS: HoldSlots = HoldSlots::new(
    Error::Held as usize,
    Error::NoAnswer as usize,
    &Error::REASONS,
);

pub struct Ip4Arp {
    view: SharedL3View,
    hold: Resolver,
    /// Where the control plane hears that a resolution started (its entry is incomplete:
    /// only then is an answer taken).
    learn: Option<LearnSender>,
    /// The control plane's queue of unicast probes (the same for the router's life), and
    /// those taken from it.
    queue: Arc<ProbeQueue>,
    probes: Vec<Probe>,
}

impl Ip4Arp {
    pub fn decl(view: SharedL3View) -> NodeDecl {
        Self::decl_learning(view, None)
    }

    /// With the control plane told of each resolution started (the daemon's).
    pub fn decl_learning(view: SharedL3View, learn: Option<LearnSender>) -> NodeDecl {
        NodeDecl::internal(
            NAME,
            &Next::names::<V4>(),
            &Error::REASONS,
            Ip4Arp {
                queue: view.load().probes.clone(),
                view,
                hold: Resolver::new(HoldTable::default(), SLOTS, Instant::now()),
                learn,
                probes: Vec::new(),
            },
        )
    }

    /// The neighbour a packet waits for: its own destination on a connected network (glean)
    /// or the route's next hop.
    fn target(view: &L3View, adj: u32, ip: Option<&[u8]>) -> Option<(u32, Ipv4Addr)> {
        let a = view.adj(adj);
        match a.kind {
            AdjKind::Glean => {
                let destination = Ipv4View::of(ip?)?.destination();
                Some((a.interface, Ipv4Addr::from(destination)))
            }
            AdjKind::Neighbor => match a.next_hop {
                IpAddr::V4(ip) => Some((a.interface, ip)),
                IpAddr::V6(_) => None,
            },
            _ => None,
        }
    }

    /// Send one ARP request for `target` out of `interface`: broadcast, or to `unicast` (a
    /// probe of a neighbour whose MAC we have, RFC 1122 2.3.2.1).
    fn ask(
        cx: &mut NodeCx<'_>,
        view: &L3View,
        interface: u32,
        target: Ipv4Addr,
        unicast: Option<MacAddress>,
    ) {
        let Some(itf) = view.interface(interface) else {
            cx.count_error(Error::NoSourceAddress as usize, 1);
            return;
        };
        let src = itf.v4_towards(target.into());
        if src == 0 {
            cx.count_error(Error::NoSourceAddress as usize, 1);
            return;
        }
        let mut frame = request_frame(itf.mac, src, target.into());
        if let Some(mac) = unicast {
            frame[..6].copy_from_slice(&mac.0);
        }
        let Some(bi) = cx.bufs.packet_from_bytes(&frame) else {
            cx.count_error(Error::NoBuffer as usize, 1);
            return;
        };
        let m = cx.bufs.meta_mut(bi);
        m.tx_if = interface;
        m.rx_if = interface;
        m.flags |= FLAG_LOCAL_ORIGIN;
        cx.count_error(Error::RequestsSent as usize, 1);
        cx.enqueue(Next::InterfaceOutput as usize, bi);
    }
}

impl Node for Ip4Arp {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let view = self.view.load();
        let now = Instant::now();
        for &bi in frame {
            let adj = cx.bufs.meta(bi).adj;
            let Some((itf, target)) =
                Self::target(&view, adj, super::l3_header(cx.bufs, bi, EtherType::IPV4))
            else {
                cx.count_error(Error::NotResolvable as usize, 1);
                cx.trace(bi, Error::NotResolvable.reason());
                cx.enqueue(Next::Drop as usize, bi);
                continue;
            };
            let key = IpAddr::V4(target);
            if view.neighbors.contains_key(&(itf, key)) {
                // Resolved while the packet was on its way here.
                cx.enqueue(Next::Rewrite as usize, bi);
                continue;
            }
            if cx.tracing() {
                cx.trace(bi, format_args!("held for {target} on interface {itf}"));
            }
            if self.hold.hold(cx, itf, key, bi, now) {
                if let Some(tx) = &self.learn {
                    if tx.try_send(NeighborLearn::solicit(itf, key)).is_err() {
                        cx.count_error(Error::LearnQueueFull as usize, 1);
                    }
                }
                Self::ask(cx, &view, itf, target, None);
            }
        }
        frame.len()
    }

    fn wants_poll(&self) -> bool {
        true
    }

    fn poll(&mut self, cx: &mut NodeCx<'_>) -> usize {
        if self.hold.is_empty() && !self.queue.pending() {
            return 0;
        }
        let view = self.view.load();
        self.queue.take(false, &mut self.probes);
        let probes = self.probes.len();
        for p in self.probes.drain(..) {
            if let IpAddr::V4(ip) = p.ip {
                Self::ask(cx, &view, p.interface, ip, Some(p.mac));
                cx.count_error(Error::ProbesSent as usize, 1);
            }
        }
        if self.hold.is_empty() {
            return probes;
        }
        probes
            + self.hold.poll(cx, &view, Instant::now(), |cx, itf, ip| {
                if let IpAddr::V4(ip) = ip {
                    Self::ask(cx, &view, itf, ip, None);
                }
            })
    }

    fn held_buffers(&self) -> usize {
        self.hold.held()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::neighbor_hold::{GIVE_UP, MAX_PER_NEIGHBOR, MAX_REQUESTS, REQUEST_INTERVAL};
    use crate::nodes::testing::Harness;
    use crate::router::adjacency::Adjacency;
    use crate::wire::arp::{ArpPacket, OP_REQUEST};
    use crate::wire::MacAddress;
    use std::time::Duration;

    const US: u32 = 0xc000_0201;
    const GLEAN: u32 = 2;

    fn to(dst: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[30..34].copy_from_slice(&dst);
        f
    }

    fn harness() -> Harness {
        let h = Harness::new(1);
        h.add_address(0, US, 24);
        h.edit_view(|v| {
            let mut g = Adjacency::simple(AdjKind::Glean);
            g.interface = 0;
            v.adjs.push(g);
        });
        h
    }

    fn feed(bufs: &mut crate::buffer::WorkerBuffers, dst: [u8; 4]) -> u32 {
        let bi = crate::nodes::testing::received(bufs, &to(dst));
        let m = bufs.meta_mut(bi);
        m.adj = GLEAN;
        m.rx_if = 0;
        bi
    }

    fn resolve(h: &Harness, last: u8) {
        h.edit_view(|v| {
            v.neighbors.insert(
                (0, IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))),
                MacAddress([2, 9, 9, 9, 9, last]),
            );
        });
    }

    #[test]
    fn first_packet_asks_later_ones_wait_and_overflow_is_counted() {
        let h = harness();
        let captured = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut t = h.graph(Ip4Arp::decl(h.view.clone()), Some(captured.clone()));
        let mut bufs = h.pool.worker_handle();
        let packets: Vec<u32> = (0..MAX_PER_NEIGHBOR + 2)
            .map(|_| feed(&mut bufs, [192, 0, 2, 9]))
            .collect();
        t.inbox.lock().unwrap().extend(packets);
        t.graph.run_once(&mut bufs);
        assert_eq!(t.error(Error::Held as usize), MAX_PER_NEIGHBOR as u64);
        assert_eq!(t.error(Error::QueueFull as usize), 2);
        assert_eq!(t.error(Error::RequestsSent as usize), 1);
        assert_eq!(t.to_next(Next::InterfaceOutput as usize), 1);
        let req = captured.lock().unwrap()[0].clone();
        let p = ArpPacket::parse(&req[14..]).unwrap();
        assert_eq!(p.op, OP_REQUEST);
        assert_eq!((p.sender_ip, p.target_ip), (US, 0xc000_0209));
        assert_eq!(&req[..6], &[0xff; 6]);
        // The answer releases every held packet to ip4-rewrite.
        resolve(&h, 9);
        t.graph.run_once(&mut bufs);
        assert_eq!(t.error(Error::Released as usize), MAX_PER_NEIGHBOR as u64);
        assert_eq!(t.to_next(Next::Rewrite as usize), MAX_PER_NEIGHBOR);
        drop(t);
        drop(bufs);
        assert_eq!(h.pool.report().in_use, 0);
    }

    #[test]
    fn silence_costs_the_held_packets_after_the_last_request() {
        let h = harness();
        let mut t = h.graph(Ip4Arp::decl(h.view.clone()), None);
        let mut bufs = h.pool.worker_handle();
        let a = feed(&mut bufs, [192, 0, 2, 10]);
        t.inbox.lock().unwrap().push(a);
        t.graph.run_once(&mut bufs);
        let deadline =
            Instant::now() + REQUEST_INTERVAL * MAX_REQUESTS + GIVE_UP + Duration::from_millis(500);
        while t.error(Error::NoAnswer as usize) == 0 && Instant::now() < deadline {
            t.graph.run_once(&mut bufs);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(t.error(Error::NoAnswer as usize), 1);
        assert_eq!(t.error(Error::RequestsSent as usize), MAX_REQUESTS as u64);
        assert_eq!(t.to_next(Next::Drop as usize), 1);
        drop(t);
        drop(bufs);
        assert_eq!(h.pool.report().in_use, 0);
    }

    #[test]
    fn packets_held_when_the_graph_goes_away_return_to_the_pool() {
        let h = harness();
        let mut t = h.graph(Ip4Arp::decl(h.view.clone()), None);
        let mut bufs = h.pool.worker_handle();
        let a = feed(&mut bufs, [192, 0, 2, 11]);
        t.inbox.lock().unwrap().push(a);
        t.graph.run_once(&mut bufs);
        assert_eq!(t.error(Error::Held as usize), 1);
        drop(t);
        bufs.flush_cache();
        drop(bufs);
        assert_eq!(h.pool.report().in_use, 0);
    }

    #[test]
    fn other_adjacencies_are_not_resolved() {
        let h = harness();
        let out = h.run_node_with(
            Ip4Arp::decl(h.view.clone()),
            &[to([192, 0, 2, 9])],
            0,
            |m, _| m.adj = 0,
        );
        assert_eq!(out.errors[Error::NotResolvable as usize], 1);
    }
}
