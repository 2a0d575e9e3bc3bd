//! The worker's side of the fast path: at the end of the output path (interface-output), a
//! packet that crossed only offload-safe nodes makes its flow a candidate for the installer.

use super::bridge::MacRef;
use super::maps::{Key, NatRewrite, RouteRewrite, Value};
use super::nat::{rewrite_of, SessionRef};
use super::{Candidate, FastPath, Owner, Port, REOFFER};
use crate::buffer::NAT_OFFER_REPLY;
use crate::graph::features::{SharedFeatures, IP4_OUTPUT, IP4_UNICAST};
use crate::interface::Interface;
use crate::nat44::node::{NAT44_IN, NAT44_OUT};
use crate::nat44::packet::Tuple;
use crate::nat44::shared::Nat44Shared;
use crate::nat44::table::Dir;
use crate::router::adjacency::{AdjKind, L3View};
use crate::router::neighbor_map::NO_SLOT;
use crate::router::SharedTables;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Instant;

/// `REOFFER` in ms, for sessions.
const REOFFER_MS: u32 = REOFFER.as_millis() as u32;

/// Flows remembered as offered at most (then forgotten all at once: offered again).
const REMEMBERED: usize = 2 * super::MAX_FLOWS as usize;

pub struct Offerer {
    fp: Arc<FastPath>,
    /// The NAT whose sessions are offered, when the graph translates.
    nat: Option<Arc<Nat44Shared>>,
    /// Where a session's reply would be routed: given, its entry is offered with the
    /// forward direction's.
    reply: Option<ReplyPath>,
    /// Flows offered lately: the epoch and when.
    offered: HashMap<Key, (u32, Instant), ahash::RandomState>,
    /// The time of the frame being handled: one clock read a frame, not one a packet.
    now: Instant,
}

/// A link that is down drops in the graph (counted); the kernel would drop silently.
fn down(i: &Interface) -> bool {
    i.live.as_ref().is_some_and(|l| !l.link_up())
}

/// What offering a session's reply with its forward direction needs: the routing tables the
/// reply's first frame would be looked up in, and the features it would cross. Without it
/// the reply's entry waits for that frame to cross the graph (a second graph frame per
/// session, which is what a million new sessions cost most).
#[derive(Clone)]
pub struct ReplyPath {
    pub tables: SharedTables,
    pub features: SharedFeatures,
}

/// The only features a reply offered with its forward direction may meet: NAT's own.
const NAT_FEATURES: [&str; 2] = [NAT44_IN, NAT44_OUT];

impl Offerer {
    pub fn new(
        fp: Arc<FastPath>,
        nat: Option<Arc<Nat44Shared>>,
        reply: Option<ReplyPath>,
    ) -> Offerer {
        Offerer {
            fp,
            nat,
            reply,
            offered: HashMap::default(),
            now: Instant::now(),
        }
    }

    /// A new frame of packets: the time its offers are made at.
    pub fn begin_frame(&mut self) {
        self.now = Instant::now();
    }

    /// The frame's time in ms on the process's clock (what sessions remember offers by).
    fn now_ms(&self) -> u32 {
        static START: OnceLock<Instant> = OnceLock::new();
        let start = *START.get_or_init(Instant::now);
        self.now.saturating_duration_since(start).as_millis() as u32
    }

    /// Whether `key` was offered in `epoch` lately; if not, it is now.
    fn fresh(&mut self, key: Key, epoch: u32) -> bool {
        if let Some((e, when)) = self.offered.get(&key) {
            if *e == epoch && self.now.saturating_duration_since(*when) < REOFFER {
                return false;
            }
        }
        if self.offered.len() >= REMEMBERED {
            self.offered.clear();
        }
        self.offered.insert(key, (epoch, self.now));
        true
    }

    /// A packet received on `rx` leaves unchanged by `tx` (a cross-connect), decided in a
    /// pass of epoch `epoch`: offer the flow, unless offered in this epoch lately. Both
    /// interfaces need the fast path, and `tx` an MTU that takes whatever `rx` receives
    /// (the kernel would drop a longer frame where sluice counts it).
    pub fn cross_connect(&mut self, rx: &Interface, tx: &Interface, epoch: u32) {
        let (Some(rx_port), Some(tx_port)) = (rx.fast_path, tx.fast_path) else {
            return;
        };
        if rx.mtu > tx.mtu || epoch == 0 || down(tx) || self.fp.backed_off.get(tx_port.slot.into())
        {
            return;
        }
        let key = Key::xconnect(rx_port.ifindex);
        if !self.fresh(key, epoch) {
            return;
        }
        let value = Value::between(epoch, rx_port, tx_port, None);
        self.fp.offer(Candidate {
            key,
            value,
            rx_if: rx.index,
            adj: u32::MAX,
            owner: Owner::Nothing,
        });
    }

    /// A frame received on `rx` leaves by `tx` as l2-fwd sent it: to the port its
    /// destination was learnt on in bridge domain `bd` (its source learnt on `rx`). Offer
    /// the flow from that source to that destination on `rx`, unless offered in this epoch
    /// lately; its source's age is refreshed while the entry carries frames.
    pub fn bridge(
        &mut self,
        (rx, tx): (&Interface, &Interface),
        frame: &[u8],
        bd: u32,
        epoch: u32,
    ) {
        let (Some(rx_port), Some(tx_port)) = (rx.fast_path, tx.fast_path) else {
            return;
        };
        let backed_off = self.fp.backed_off.get(tx_port.slot.into());
        if rx.mtu > tx.mtu || epoch == 0 || down(tx) || backed_off {
            return;
        }
        let (Some(dst), Some(src)) = (frame.get(..6), frame.get(6..12)) else {
            return;
        };
        let (Ok(dst), Ok(src)) = (<[u8; 6]>::try_from(dst), <[u8; 6]>::try_from(src)) else {
            return;
        };
        let key = Key::bridge(rx_port.ifindex, dst, src);
        if !self.fresh(key, epoch) {
            return;
        }
        self.fp.offer(Candidate {
            key,
            value: Value::between(epoch, rx_port, tx_port, None),
            rx_if: rx.index,
            adj: u32::MAX,
            owner: Owner::Mac(MacRef {
                key: crate::l2::fib::key(bd as u16, &src),
                interface: rx.index,
            }),
        });
    }

    /// A packet received on `rx` was routed by adjacency `adj` of `view` and leaves by `tx`
    /// as `frame` (rewritten: the next hop's Ethernet header, untagged, then IPv4), decided
    /// in a pass of epoch `epoch`: offer its destination from `rx`. The entry carries what
    /// ip4-rewrite did (the header) and what it checked (the MTU; the TTL and the rest the
    /// program checks itself).
    pub fn route(&mut self, rx: &Interface, tx: &Interface, routed: Routed<'_>, epoch: u32) {
        let Some((rx_port, tx_port, dst)) = self.routable(rx, tx, &routed, epoch) else {
            return;
        };
        let key = match dst {
            IpAddr::V4(d) => Key::route4(rx_port.ifindex, d.octets()),
            IpAddr::V6(d) => Key::route6_prefix(rx_port.ifindex, d.octets(), 128),
        };
        if !self.fresh(key, epoch) {
            return;
        }
        let Some(route) = rewrite(rx, tx, &routed, dst) else {
            return;
        };
        self.fp.offer(Candidate {
            key,
            value: Value::between(epoch, rx_port, tx_port, Some(route)),
            rx_if: rx.index,
            adj: routed.adj,
            owner: Owner::Nothing,
        });
    }

    /// The same for a packet a NAT node translated by worker `worker`'s session (`aux`: its
    /// index and direction, `FLAG_NAT_OFFER`): offer that direction of the session, its
    /// exact tuple as received, routed and translated alike.
    pub fn nat(
        &mut self,
        (rx, tx): (&Interface, &Interface),
        routed: Routed<'_>,
        (worker, aux): (usize, u32),
        epoch: u32,
    ) {
        let Some(nat) = self.nat.clone() else { return };
        let Some((rx_port, tx_port, dst @ IpAddr::V4(_))) = self.routable(rx, tx, &routed, epoch)
        else {
            return;
        };
        let index = aux & !NAT_OFFER_REPLY;
        let dir = if aux & NAT_OFFER_REPLY != 0 {
            Dir::Reply
        } else {
            Dir::Forward
        };
        let view = nat.view.load();
        let Some(mut guard) = nat.table(worker, &view) else {
            return;
        };
        // Offered in this epoch lately (the session remembers): its entry is on its way.
        let at = (epoch, self.now_ms());
        let Some((from, to)) = guard.table.offer(index, dir, at, REOFFER_MS) else {
            return;
        };
        // The frame must be the session's translation (the graph's work, checked).
        if tuple_of(routed.frame) != Some(to) {
            return;
        }
        let Some(route) = rewrite(rx, tx, &routed, dst) else {
            return;
        };
        let reply = (dir == Dir::Forward && self.reply.is_some())
            .then(|| guard.table.offer(index, Dir::Reply, at, REOFFER_MS))
            .flatten();
        let value = Value::between(epoch, rx_port, tx_port, Some(route));
        let (ingress, adj) = ((rx_port, rx.index), routed.adj);
        self.offer_session(ingress, (value, adj), (worker, index), (from, to));
        if let Some(tuples) = reply {
            // Not offered: the reply's own first frame may offer it.
            if !self.nat_reply((rx, tx), routed.view, (worker, index), tuples, epoch) {
                guard.table.forget_offer(index, Dir::Reply);
            }
        }
    }

    /// The reply direction of session `index` of `worker`, whose forward direction went in
    /// by `inside` and out by `outside`: received on `outside` as `from`, translated to `to`
    /// and routed as ip4-lookup would route it. Offered only where the graph would do no
    /// more: no feature but NAT's on the reply's arcs, a source the router takes, and one
    /// known neighbour on `inside` as the route. Anything else waits for the reply's first
    /// frame to cross the graph.
    fn nat_reply(
        &mut self,
        (inside, outside): (&Interface, &Interface),
        view: &L3View,
        (worker, index): (usize, u32),
        (from, to): (Tuple, Tuple),
        epoch: u32,
    ) -> bool {
        let Some(path) = &self.reply else {
            return false;
        };
        let (Some(in_port), Some(out_port)) = (inside.fast_path, outside.fast_path) else {
            return false;
        };
        if down(inside) || self.fp.backed_off.get(in_port.slot.into()) {
            return false;
        }
        let features = path.features.load();
        let nat_only = |arc: usize, itf: u32| features.only(arc, itf, &NAT_FEATURES);
        if !nat_only(IP4_UNICAST, outside.index) || !nat_only(IP4_OUTPUT, inside.index) {
            return false;
        }
        let tables = path.tables.load();
        let table = tables.table_of(outside.index, false);
        if view.v4_source(table, from.src).is_some() {
            return false;
        }
        let Some(fib) = tables.fib(table) else {
            return false;
        };
        let mut adj = [0u32];
        fib.lookup4_batch(&[to.dst], &mut adj);
        let a = view.adj(adj[0]);
        if a.interface != inside.index {
            return false;
        }
        let dst = IpAddr::V4(Ipv4Addr::from(to.dst));
        let (dst_mac, src_mac, use_slot) = match a.kind {
            AdjKind::Neighbor if a.complete => {
                let mac =
                    |at: usize| -> [u8; 6] { a.rewrite[at..at + 6].try_into().unwrap_or_default() };
                (mac(0), mac(6), a.slot)
            }
            AdjKind::Glean => {
                let Some(n) = view.neighbors.get(&(a.interface, dst)) else {
                    return false;
                };
                let Some(itf) = view.interface(a.interface) else {
                    return false;
                };
                (n.mac.0, itf.mac.0, n.slot)
            }
            _ => return false,
        };
        let Some(in_mac) = view.interface(outside.index).map(|i| i.mac.0) else {
            return false;
        };
        let route = RouteRewrite {
            dst_mac,
            src_mac,
            max_len: max_frame(a.mtu, inside.mtu),
            in_mac,
            use_slot,
        };
        let value = Value::between(epoch, out_port, in_port, Some(route));
        let ingress = (out_port, outside.index);
        self.offer_session(ingress, (value, adj[0]), (worker, index), (from, to));
        true
    }

    /// Offer one direction of session `index` of `worker`: frames of `from` received on
    /// `ingress` (its port and interface) leave as `to`, routed as `value` and `adj` say.
    fn offer_session(
        &self,
        (port, rx_if): (Port, u32),
        (mut value, adj): (Value, u32),
        (worker, index): (usize, u32),
        (from, to): (Tuple, Tuple),
    ) {
        value.nat = Some(NatRewrite {
            worker: worker as u16,
            index,
            ..rewrite_of(&from, &to)
        });
        self.fp.offer(Candidate {
            key: Key::nat4(port.ifindex, &from),
            value,
            rx_if,
            adj,
            owner: Owner::Session(SessionRef {
                worker,
                index,
                tuple: from,
            }),
        });
    }

    /// Both ports and the destination of a routed packet the fast path can carry.
    fn routable(
        &self,
        rx: &Interface,
        tx: &Interface,
        routed: &Routed<'_>,
        epoch: u32,
    ) -> Option<(Port, Port, IpAddr)> {
        let (Some(rx_port), Some(tx_port)) = (rx.fast_path, tx.fast_path) else {
            return None;
        };
        let backed_off = self.fp.backed_off.get(tx_port.slot.into());
        if epoch == 0 || down(tx) || backed_off {
            return None;
        }
        let frame = routed.frame;
        let dst = match frame.get(12..14)? {
            [0x08, 0x00] => IpAddr::from(<[u8; 4]>::try_from(frame.get(30..34)?).ok()?),
            [0x86, 0xdd] => IpAddr::from(<[u8; 16]>::try_from(frame.get(38..54)?).ok()?),
            _ => return None,
        };
        let a = routed.view.adj(routed.adj);
        if !matches!(a.kind, AdjKind::Neighbor | AdjKind::Glean) || a.interface != tx.index {
            return None;
        }
        Some((rx_port, tx_port, dst))
    }
}

/// A routed packet as interface-output sees it: the router's view, the adjacency it was
/// routed by, and its frame (rewritten: the next hop's Ethernet header, untagged, IPv4).
pub struct Routed<'a> {
    pub view: &'a L3View,
    pub adj: u32,
    pub frame: &'a [u8],
}

/// The TCP/UDP tuple of an untagged IPv4 frame without options.
fn tuple_of(frame: &[u8]) -> Option<crate::nat44::packet::Tuple> {
    let ip = frame.get(14..)?;
    match crate::nat44::packet::classify(ip).ok()? {
        crate::nat44::packet::Kind::Flow { tuple, .. } => Some(tuple),
        _ => None,
    }
}

/// What ip4-rewrite or ip6-rewrite did to a routed frame to `dst` and what it checked: the
/// Ethernet header, the MTU, the MAC the ingress routes for, the neighbour's use flag.
fn rewrite(
    rx: &Interface,
    tx: &Interface,
    routed: &Routed<'_>,
    dst: IpAddr,
) -> Option<RouteRewrite> {
    let (view, frame) = (routed.view, routed.frame);
    let a = view.adj(routed.adj);
    // The MAC ethernet-input takes routed frames for (the program checks it).
    let in_mac = view.interface(rx.index).map(|i| i.mac.0)?;
    let use_slot = if a.kind == AdjKind::Neighbor && a.complete {
        a.slot
    } else {
        view.neighbors
            .get(&(a.interface, dst))
            .map_or(NO_SLOT, |n| n.slot)
    };
    let mac = |at: usize| -> [u8; 6] { frame[at..at + 6].try_into().unwrap_or_default() };
    Some(RouteRewrite {
        dst_mac: mac(0),
        src_mac: mac(6),
        max_len: max_frame(a.mtu, tx.mtu),
        in_mac,
        use_slot,
    })
}

/// The longest frame a route's entry may carry: the adjacency's MTU within the egress
/// interface's (MTU 0: the control plane set none; the interface's is the limit then),
/// plus the Ethernet header.
fn max_frame(adj_mtu: u32, egress_mtu: u32) -> u16 {
    let mtu = if adj_mtu == 0 {
        egress_mtu
    } else {
        adj_mtu.min(egress_mtu)
    };
    (mtu + 14).min(u16::MAX as u32) as u16
}
