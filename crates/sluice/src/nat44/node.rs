//! nat44-in (a feature of ip4-unicast on inside and outside interfaces) and nat44-out (a
//! feature of ip4-output on outside interfaces): see the module's summary in `mod.rs`.

use super::packet::{classify, rewrite, rewrite_error, Kind, Tuple, Unfit};
use super::packet::{TCP, UDP};
use super::shared::{trace_line, Nat44Shared};
use super::table::{Dir, Source, State, Table};
use super::{ports, NatView, Refusal, Role};
use crate::acl::session::now_ms;
use crate::buffer::{
    FLAG_LOCAL_ORIGIN, FLAG_NAT_DONE, FLAG_NAT_HINT, FLAG_NAT_OFFER, FLAG_OFFLOAD, FLAG_TO_WORKER,
    NAT_OFFER_REPLY,
};
use crate::graph::features::{self, SharedFeatures, IP4_OUTPUT, IP4_UNICAST};
use crate::graph::names::error_counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::handoff::node::WORKER_HANDOFF;
use crate::router::adjacency::SharedL3View;
use std::sync::Arc;

pub const NAT44_IN: &str = "nat44-in";
pub const NAT44_OUT: &str = "nat44-out";
/// Sessions looked at for expiry per packet handled, and per idle pass.
const SWEEP_PER_PACKET: usize = 1;
const SWEEP_IDLE: usize = 64;

error_counters! {
    pub enum Error {
        HandedOff = "nat44: handed to the worker owning the port",
        TableFull = "nat44: session table full",
        HostLimit = "nat44: inside host at its session limit",
        PortsFull = "nat44: no free port on the outside address",
        NoAddress = "nat44: no outside address",
        Collision = "nat44: reply tuple taken by another session",
        Fragment = "nat44: fragment (not translated)",
        Protocol = "nat44: protocol not translated",
        BadPacket = "nat44: header invalid or truncated",
        BadError = "nat44: ICMP error unreadable",
    }
    impl From<Refusal> {
        TableFull,
        HostLimit,
        PortsFull,
        NoAddress,
        Collision,
    }
    impl From<Unfit> {
        BadHeader | Truncated => BadPacket,
        Fragment,
        Protocol,
        BadError,
    }
}

/// A translation made, kept as values so that its trace line is written only when traced.
#[derive(Clone, Copy)]
enum Done {
    Session(Tuple, Tuple),
    Opened(Tuple, Tuple),
    /// An ICMP error: its quote before and after, and the new outer destination.
    Error(Tuple, Tuple, u32),
}

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Done::Session(a, b) => write!(f, "{}", trace_line("session", a, b)),
            Done::Opened(a, b) => write!(f, "{}", trace_line("new session", a, b)),
            Done::Error(a, b, to) => write!(
                f,
                "icmp error: quote {a} => {b}, to {}",
                std::net::Ipv4Addr::from(*to)
            ),
        }
    }
}

/// What becomes of one packet.
enum Step {
    /// On along the arc, translated (how, for a trace) or not.
    Pass(Option<Done>),
    /// On along the arc, translated by session `index` going `dir`.
    Session(Done, u32, Dir),
    Drop(Error),
    /// To worker `w`, which owns its port.
    Handoff(usize),
    /// On untranslated, its session (this index) found: nat44-out translates it; or
    /// `NO_SESSION`, none found (nat44-out opens one, or the packet is not NAT's). Either
    /// way the route is not offered: only a session is.
    Hint(u32),
}

/// A hint that names no session (`Table::check` finds none at this index).
const NO_SESSION: u32 = u32::MAX;

pub struct Nat44 {
    output: bool,
    arc: usize,
    me: usize,
    /// Next slot of error-drop (worker-handoff's is the one after).
    drop: usize,
    nat: Arc<Nat44Shared>,
    features: SharedFeatures,
    l3: SharedL3View,
}

impl Nat44 {
    /// nat44-in (`output` false) or nat44-out.
    pub fn decl(
        output: bool,
        nat: Arc<Nat44Shared>,
        features: SharedFeatures,
        l3: SharedL3View,
    ) -> NodeDecl {
        let (name, arc) = if output {
            (NAT44_OUT, IP4_OUTPUT)
        } else {
            (NAT44_IN, IP4_UNICAST)
        };
        let me = features::feature_index(arc, name).unwrap_or(0);
        let mut next = features::next_names(arc, Some(me));
        let drop = next.len();
        next.push(crate::nodes::error_drop::NAME.to_string());
        if !output && nat.workers.len() > 1 {
            next.push(WORKER_HANDOFF.to_string());
        }
        let node = Nat44 {
            output,
            arc,
            me,
            drop,
            nat,
            features,
            l3,
        };
        // Offload-safe for the packets it says so of (`offload`): it clears the mark of
        // every other one itself.
        NodeDecl::internal(name, &[], &Error::REASONS, node)
            .with_next(next)
            .offload_safe()
    }

    /// The drop slot: after the later features and the end (counted once, at declaration).
    fn drop_slot(&self) -> usize {
        self.drop
    }

    /// nat44-in: the session of a packet arriving on `role`'s interface `rx`, or a new one
    /// for a static mapping, or the worker that owns it.
    fn inbound(&self, cx: (&NatView, &mut Table, usize), ip: &mut [u8], rx: u32, now: u64) -> Step {
        let (view, table, me) = cx;
        match classify(ip) {
            Ok(Kind::Flow { tuple, l4, flags }) => {
                if let Some((i, dir)) = table.find(&tuple) {
                    // Only a new destination must be written before the route lookup. A
                    // new source alone is written by nat44-out, after the TTL and MTU
                    // checks, so that their ICMP errors reach the sender about the packet
                    // as it sent it (path MTU discovery through the NAT).
                    let Some(to) = table.target(i, dir) else {
                        return Step::Pass(None);
                    };
                    let new_dst = to.dst != tuple.dst
                        || (tuple.proto != super::packet::ICMP && to.dport != tuple.dport);
                    // A packet that would expire here is not translated: the router's time
                    // exceeded then quotes it as its sender sent it.
                    if !new_dst {
                        return Step::Hint(i);
                    }
                    if dir == Dir::Forward && ip[8] <= 1 {
                        return Step::Pass(None);
                    }
                    let Some(to) = table.used(i, dir, flags, now) else {
                        return Step::Pass(None);
                    };
                    rewrite(ip, l4, &tuple, &to);
                    return Step::Session(Done::Session(tuple, to), i, dir);
                }
                let key = (tuple.proto, tuple.dst, tuple.dport);
                if let Some(&local) = view.statics_out.get(&key) {
                    if ip[8] <= 1 {
                        return Step::Pass(None);
                    }
                    // From inside to a port forward's outside address: hairpin, the source
                    // mapped too (to that address) so that the reply comes back here.
                    let src = match view.role(rx) {
                        Some(Role::Inside) => Source::Map(tuple.dst),
                        _ => Source::Keep,
                    };
                    return self.open((table, me), (tuple, l4, ip), (src, Some(local)), now);
                }
                if let Some(w) = self.owner(view, &tuple, me) {
                    return Step::Handoff(w);
                }
                // No session yet: nat44-out opens one if the packet leaves by an outside
                // interface, and may offer it to the fast path with its first packet.
                Step::Hint(NO_SESSION)
            }
            Ok(Kind::Error { inner, l4, at }) => self.error(table, (inner, l4, at), ip, view, me),
            Err(Unfit::Fragment) if self.ours(view, dst_of(ip)) => Step::Drop(Error::Fragment),
            // Anything else goes on as it came: the router's own traffic, or not ours.
            Err(_) => Step::Pass(None),
        }
    }

    /// The worker owning the port a reply is sent to, when it is not this one.
    fn owner(&self, view: &NatView, t: &Tuple, me: usize) -> Option<usize> {
        let workers = self.nat.workers.len();
        if workers < 2 || !self.ours(view, t.dst) {
            return None;
        }
        ports::owner(t.dport, workers).filter(|&w| w != me)
    }

    /// Whether `addr` is one of the NAT's outside addresses: the pool's and the static
    /// mappings', or without a pool the outside interfaces' own.
    fn ours(&self, view: &NatView, addr: u32) -> bool {
        if view.is_outside_address(addr) {
            return true;
        }
        if !view.pool.is_empty() {
            return false;
        }
        let l3 = self.l3.load();
        view.roles.iter().enumerate().any(|(i, r)| {
            *r == Some(Role::Outside) && l3.interface(i as u32).is_some_and(|x| x.has_v4(addr))
        })
    }

    /// Open a session for the packet `tuple` (transport at `l4` of `ip`) and translate it.
    fn open(
        &self,
        (table, me): (&mut Table, usize),
        (tuple, l4, ip): (Tuple, usize, &mut [u8]),
        how: (Source, Option<(u32, u16)>),
        now: u64,
    ) -> Step {
        let stats = &self.nat.workers[me].stats;
        match table.open(tuple, how, (now, stats)) {
            Ok((i, to)) => {
                rewrite(ip, l4, &tuple, &to);
                // A session's first packet may offer it to the fast path as any other.
                Step::Session(Done::Opened(tuple, to), i, Dir::Forward)
            }
            Err(r) => Step::Drop(Error::from(r)),
        }
    }

    /// An ICMP error quoting a packet of a session: translated back the way the error goes.
    fn error(
        &self,
        table: &mut Table,
        (inner, l4, at): (Tuple, usize, usize),
        ip: &mut [u8],
        view: &NatView,
        me: usize,
    ) -> Step {
        // The quoted packet went the other way: its reverse is how the error's direction
        // finds the session.
        let Some((i, dir)) = table.find(&inner.reversed()) else {
            return match self.owner(view, &inner.reversed(), me) {
                Some(w) => Step::Handoff(w),
                None => Step::Pass(None),
            };
        };
        let Some(s) = table.get(i) else {
            return Step::Pass(None);
        };
        // This direction's translation, applied to the error's reverse view of the quote.
        let (from, to) = match dir {
            Dir::Forward => (s.orig, s.xlat),
            Dir::Reply => (s.xlat.reversed(), s.orig.reversed()),
        };
        let new_inner = to.reversed();
        let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
        let outer_src = if src == from.src { to.src } else { src };
        rewrite_error(ip, (l4, at), (&inner, &new_inner), (outer_src, to.dst));
        Step::Pass(Some(Done::Error(inner, new_inner, to.dst)))
    }

    /// nat44-out: a packet routed out of an outside interface that nat44-in did not
    /// translate.
    fn outbound(
        &self,
        cx: (&NatView, &mut Table, usize),
        ip: &mut [u8],
        (tx, hint): (u32, Option<u32>),
        now: u64,
    ) -> Step {
        let (view, table, me) = cx;
        match classify(ip) {
            Ok(Kind::Flow { tuple, l4, flags }) => {
                let found = hint
                    .and_then(|i| table.check(i, &tuple))
                    .or_else(|| table.find(&tuple));
                if let Some((i, dir)) = found {
                    let Some(to) = table.used(i, dir, flags, now) else {
                        return Step::Pass(None);
                    };
                    rewrite(ip, l4, &tuple, &to);
                    return Step::Session(Done::Session(tuple, to), i, dir);
                }
                if view.is_outside_address(tuple.src) {
                    return Step::Pass(None);
                }
                let key = (tuple.proto, tuple.src, tuple.sport);
                let src = match view.statics_in.get(&key) {
                    Some(&(a, p)) => Source::Fixed(a, p),
                    None => match self.outside_address(view, tx, &tuple) {
                        Some(a) => Source::Map(a),
                        None => return Step::Drop(Error::NoAddress),
                    },
                };
                self.open((table, me), (tuple, l4, ip), (src, None), now)
            }
            Ok(Kind::Error { inner, l4, at }) => self.error(table, (inner, l4, at), ip, view, me),
            Err(u) => Step::Drop(Error::from(u)),
        }
    }

    /// The outside address a new session through interface `tx` to `dst` maps to: the
    /// pool's (paired: by the inside address) or, without a pool, the interface's own.
    fn outside_address(&self, view: &NatView, tx: u32, t: &Tuple) -> Option<u32> {
        if !view.pool.is_empty() {
            return view.pool.get(view.pool_index(t.src)).copied();
        }
        let l3 = self.l3.load();
        let a = l3.interface(tx)?.v4_towards(t.dst);
        (a != 0).then_some(a)
    }
}

/// Sessions that expire sooner than this are not offloaded: the fast path tells the worker
/// of their frames every quarter of the shortest timeout, once a second at the most often
/// (`fastpath::sweep`).
const MIN_OFFLOAD_TIMEOUT_MS: u64 = 4000;

/// What a packet translated by session `i` going `dir` leaves for interface-output's offer
/// (`aux`), when the fast path can carry the session's frames: UDP, or TCP established (the
/// program passes SYN, FIN and RST to the graph, which moves the state), and a timeout the
/// fast path's touches keep it alive through.
fn offer(table: &Table, view: &NatView, i: u32, dir: Dir) -> Option<u32> {
    let s = table.get(i)?;
    let steady = match s.orig.proto {
        UDP => true,
        TCP => s.state == State::Established,
        _ => false,
    };
    (steady && view.timeouts.of(s) >= MIN_OFFLOAD_TIMEOUT_MS && i & NAT_OFFER_REPLY == 0).then_some(
        i | if dir == Dir::Reply {
            NAT_OFFER_REPLY
        } else {
            0
        },
    )
}

fn dst_of(ip: &[u8]) -> u32 {
    ip.get(16..20)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl Node for Nat44 {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let view = self.nat.view.load();
        let features = self.features.load();
        let me = cx.thread;
        let Some(mut guard) = self.nat.table(me, &view) else {
            cx.enqueue_all(self.drop_slot(), frame);
            return frame.len();
        };
        let table = &mut guard.table;
        let now = now_ms();
        let tracing = cx.tracing();
        let drop = self.drop_slot();
        let handoff = drop + 1;
        for &bi in frame {
            let (meta, data) = cx.bufs.meta_data_mut(bi);
            let interface = if self.output { meta.tx_if } else { meta.rx_if };
            let at = meta.l3_offset as usize;
            let skip = meta.flags & (FLAG_NAT_DONE | FLAG_LOCAL_ORIGIN) != 0 && self.output;
            let hint = (meta.flags & FLAG_NAT_HINT != 0).then_some(meta.aux);
            if self.output && hint.is_some() {
                meta.flags &= !FLAG_NAT_HINT;
                meta.aux = 0;
            }
            // A packet keeps the fast path's mark only when translated by a session it can
            // carry, or on its way to nat44-out (a hint) or to the worker that owns its
            // session (which decides), or when nat44-in decided it.
            let marked = meta.flags & FLAG_OFFLOAD != 0;
            meta.flags &= !FLAG_OFFLOAD;
            let step = match data.get_mut(at..) {
                _ if skip => Step::Pass(None),
                None => Step::Drop(Error::BadPacket),
                Some(ip) if self.output => {
                    self.outbound((&view, table, me), ip, (interface, hint), now)
                }
                Some(ip) => self.inbound((&view, table, me), ip, interface, now),
            };
            if marked && (skip || matches!(step, Step::Hint(_) | Step::Handoff(_))) {
                meta.flags |= FLAG_OFFLOAD;
            }
            match step {
                Step::Session(done, i, dir) => {
                    meta.flags |= FLAG_NAT_DONE;
                    if let (true, Some(aux)) = (marked, offer(table, &view, i, dir)) {
                        meta.flags |= FLAG_OFFLOAD | FLAG_NAT_OFFER;
                        meta.aux = aux;
                    }
                    if tracing {
                        cx.trace(bi, done);
                    }
                    cx.enqueue(features.next_slot(self.arc, interface, Some(self.me)), bi);
                }
                Step::Pass(done) => {
                    if done.is_some() {
                        meta.flags |= FLAG_NAT_DONE;
                    }
                    if tracing {
                        if let Some(d) = done {
                            cx.trace(bi, d);
                        }
                    }
                    cx.enqueue(features.next_slot(self.arc, interface, Some(self.me)), bi);
                }
                Step::Drop(e) => {
                    cx.count_error(e as usize, 1);
                    if tracing {
                        cx.trace(bi, e.reason());
                    }
                    cx.enqueue(drop, bi);
                }
                Step::Hint(i) => {
                    meta.flags |= FLAG_NAT_HINT;
                    meta.aux = i;
                    cx.enqueue(features.next_slot(self.arc, interface, Some(self.me)), bi);
                }
                Step::Handoff(w) => {
                    meta.flags |= FLAG_TO_WORKER;
                    meta.aux = w as u32;
                    cx.count_error(Error::HandedOff as usize, 1);
                    cx.enqueue(handoff, bi);
                }
            }
        }
        table.sweep(
            frame.len() * SWEEP_PER_PACKET,
            now,
            &view.timeouts,
            &self.nat.workers[me].stats,
        );
        frame.len()
    }

    fn wants_poll(&self) -> bool {
        !self.output
    }

    fn poll(&mut self, cx: &mut NodeCx<'_>) -> usize {
        let view = self.nat.view.load();
        if view.limits.is_none() {
            return 0;
        }
        let me = cx.thread;
        let Some(mut guard) = self.nat.table(me, &view) else {
            return 0;
        };
        let now = now_ms();
        let stats = &self.nat.workers[me].stats;
        guard.table.sweep(SWEEP_IDLE, now, &view.timeouts, stats);
        self.nat.answer(me, &guard.table, now);
        self.nat.exchange_offload(me, &mut guard.table, now);
        0
    }
}
