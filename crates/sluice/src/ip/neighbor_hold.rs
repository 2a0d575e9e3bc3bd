//! Packets waiting for a neighbour to be resolved (ARP or ND), per worker: a few packets per
//! neighbour, a bounded number of neighbours, and the schedule of requests for each: one at
//! once, then again every `interval` up to `max_requests`, and `give_up` after the last one
//! the neighbour is taken as absent and its packets are dropped (counted by the caller). The
//! default schedule is ARP's (`REQUEST_INTERVAL`, `MAX_REQUESTS`, `GIVE_UP`); ND brings its
//! own. The bounds keep a scan of a connected /16 from eating the buffer pool.

use super::Family;
use crate::buffer::BufferPool;
use crate::graph::names::next_nodes;
use crate::graph::NodeCx;
use crate::nodes::{error_drop, interface_output};
use crate::router::adjacency::L3View;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Packets held per neighbour; more are dropped (as Linux's unres_qlen does).
pub const MAX_PER_NEIGHBOR: usize = 4;
/// Neighbours being resolved at once per worker.
pub const MAX_NEIGHBORS: usize = 64;
pub const REQUEST_INTERVAL: Duration = Duration::from_millis(250);
pub const MAX_REQUESTS: u32 = 3;
pub const GIVE_UP: Duration = Duration::from_millis(1000);

struct Entry {
    interface: u32,
    target: IpAddr,
    packets: Vec<u32>,
    last_request: Instant,
    requests: u32,
}

/// What became of a packet offered to `hold`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldOutcome {
    /// Held; `request` says a request should go out now (a new neighbour).
    Held { request: bool },
    /// This neighbour already has `MAX_PER_NEIGHBOR` packets waiting.
    QueueFull,
    /// `MAX_NEIGHBORS` neighbours are being resolved already.
    TableFull,
}

/// When requests go out and when a silent neighbour is given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Time between requests.
    pub interval: Duration,
    /// Requests in all, the first included.
    pub max_requests: u32,
    /// Time after the last request until the neighbour is taken as absent.
    pub give_up: Duration,
}

/// ARP's schedule, the default.
pub const ARP_SCHEDULE: Schedule = Schedule {
    interval: REQUEST_INTERVAL,
    max_requests: MAX_REQUESTS,
    give_up: GIVE_UP,
};

pub struct HoldTable {
    entries: Vec<Entry>,
    held: usize,
    schedule: Schedule,
}

impl Default for HoldTable {
    fn default() -> HoldTable {
        HoldTable::with_schedule(ARP_SCHEDULE)
    }
}

impl HoldTable {
    pub fn with_schedule(schedule: Schedule) -> HoldTable {
        HoldTable {
            entries: Vec::new(),
            held: 0,
            schedule,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Packets held in all.
    pub fn held(&self) -> usize {
        self.held
    }

    pub fn hold(&mut self, interface: u32, target: IpAddr, bi: u32, now: Instant) -> HoldOutcome {
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|e| e.interface == interface && e.target == target)
        {
            if e.packets.len() >= MAX_PER_NEIGHBOR {
                return HoldOutcome::QueueFull;
            }
            e.packets.push(bi);
            self.held += 1;
            return HoldOutcome::Held { request: false };
        }
        if self.entries.len() >= MAX_NEIGHBORS {
            return HoldOutcome::TableFull;
        }
        self.entries.push(Entry {
            interface,
            target,
            packets: vec![bi],
            last_request: now,
            requests: 1,
        });
        self.held += 1;
        HoldOutcome::Held { request: true }
    }

    /// Move the packets of every neighbour `resolved` says is known into `out`.
    pub fn release(&mut self, resolved: impl Fn(u32, IpAddr) -> bool, out: &mut Vec<u32>) {
        let mut k = 0;
        while k < self.entries.len() {
            let e = &self.entries[k];
            if resolved(e.interface, e.target) {
                let e = self.entries.swap_remove(k);
                self.held -= e.packets.len();
                out.extend(e.packets);
            } else {
                k += 1;
            }
        }
    }

    /// Neighbours whose next request is due, marked as asked again.
    pub fn due_requests(&mut self, now: Instant, out: &mut Vec<(u32, IpAddr)>) {
        let s = self.schedule;
        for e in &mut self.entries {
            if e.requests < s.max_requests && now.duration_since(e.last_request) >= s.interval {
                e.requests += 1;
                e.last_request = now;
                out.push((e.interface, e.target));
            }
        }
    }

    /// Take every held packet out (the node is going away).
    pub fn drain(&mut self, out: &mut Vec<u32>) {
        for e in self.entries.drain(..) {
            out.extend(e.packets);
        }
        self.held = 0;
    }

    /// Give up on neighbours that did not answer any request: their packets go to `out`.
    pub fn expire(&mut self, now: Instant, out: &mut Vec<u32>) {
        let s = self.schedule;
        let mut k = 0;
        while k < self.entries.len() {
            let e = &self.entries[k];
            if e.requests >= s.max_requests && now.duration_since(e.last_request) >= s.give_up {
                let e = self.entries.swap_remove(k);
                self.held -= e.packets.len();
                out.extend(e.packets);
            } else {
                k += 1;
            }
        }
    }
}

next_nodes! {
    /// Where a resolving node (ip4-arp, ip6-nd) sends packets: released ones back to its
    /// family's rewrite, its requests out, the ones it gives up on to the drop.
    pub enum Next<F: Family> {
        Rewrite = F::REWRITE_NODE,
        InterfaceOutput = interface_output::NAME,
        Drop = error_drop::NAME,
    }
}

/// Where a resolving node counts what its table decides.
#[derive(Clone, Copy, Debug)]
pub struct HoldSlots {
    /// Index of the node's first hold counter; its counters follow in this order: held,
    /// requests sent (counted by the node), released, queue full, table full, no answer.
    pub counters: usize,
    /// The node's counter names, so that a traced packet's record says what became of it.
    pub names: &'static [&'static str],
}

impl HoldSlots {
    /// The hold counters of a node from `held` to `no_answer` (which must be five on: a
    /// `const` that breaks the order does not compile), among all its counters `names`.
    pub const fn new(held: usize, no_answer: usize, names: &'static [&'static str]) -> Self {
        assert!(no_answer == held + 5, "hold counters out of order");
        HoldSlots {
            counters: held,
            names,
        }
    }
    fn held(self) -> usize {
        self.counters
    }
    fn released(self) -> usize {
        self.counters + 2
    }
    fn queue_full(self) -> usize {
        self.counters + 3
    }
    fn table_full(self) -> usize {
        self.counters + 4
    }
    fn no_answer(self) -> usize {
        self.counters + 5
    }
    fn name(self, counter: usize) -> &'static str {
        self.names.get(counter).copied().unwrap_or("?")
    }
}

/// How often a node holding packets looks at the clock and the view even when nothing
/// changed (the view's generation wakes it at once when a neighbour appears).
pub const POLL_EVERY: Duration = Duration::from_millis(10);

/// A hold table with what a resolving node keeps between calls of its poll hook.
pub struct Resolver {
    table: HoldTable,
    slots: HoldSlots,
    /// View generation and time of the last look at held packets.
    seen_generation: u64,
    last_poll: Instant,
    scratch: Vec<u32>,
    asks: Vec<(u32, IpAddr)>,
    /// Where held packets go back if the graph is torn down while they wait.
    pool: Option<Arc<BufferPool>>,
}

impl Drop for Resolver {
    fn drop(&mut self) {
        let mut held = Vec::new();
        self.table.drain(&mut held);
        if let Some(pool) = &self.pool {
            // Held packets are parked (`hold`), so they go back without the worker's handle.
            pool.give_back_parked(&held);
        }
    }
}

impl Resolver {
    pub fn new(table: HoldTable, slots: HoldSlots, now: Instant) -> Resolver {
        Resolver {
            table,
            slots,
            seen_generation: 0,
            last_poll: now,
            scratch: Vec::new(),
            asks: Vec::new(),
            pool: None,
        }
    }

    /// Packets held in all.
    pub fn held(&self) -> usize {
        self.table.held()
    }

    /// Nothing held: the poll hook has nothing to do (check before reading the clock).
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Hold `bi` for `target` on `interface`, or count and drop it when there is no room.
    /// True when a request for a new neighbour should go out now.
    pub fn hold(
        &mut self,
        cx: &mut NodeCx<'_>,
        interface: u32,
        target: IpAddr,
        bi: u32,
        now: Instant,
    ) -> bool {
        let s = self.slots;
        if self.pool.is_none() {
            self.pool = Some(cx.bufs.pool().clone());
        }
        let (counter, request) = match self.table.hold(interface, target, bi, now) {
            HoldOutcome::Held { request } => (s.held(), Some(request)),
            HoldOutcome::QueueFull => (s.queue_full(), None),
            HoldOutcome::TableFull => (s.table_full(), None),
        };
        cx.count_error(counter, 1);
        cx.trace(bi, s.name(counter));
        match request {
            Some(request) => {
                // No handle may touch it while it waits (the table may outlive the handle).
                cx.bufs.park(bi);
                request
            }
            None => {
                cx.enqueue(Next::Drop as usize, bi);
                false
            }
        }
    }

    /// The poll hook: at most every `POLL_EVERY` unless the view changed, release the packets
    /// of neighbours the view now knows, `ask` again for those due, and drop the packets of
    /// those that never answered. Returns how many packets and requests it handled.
    pub fn poll(
        &mut self,
        cx: &mut NodeCx<'_>,
        view: &L3View,
        now: Instant,
        mut ask: impl FnMut(&mut NodeCx<'_>, u32, IpAddr),
    ) -> usize {
        if self.table.is_empty() {
            return 0;
        }
        let s = self.slots;
        let changed = view.generation != self.seen_generation;
        if !changed && now.saturating_duration_since(self.last_poll) < POLL_EVERY {
            return 0;
        }
        self.seen_generation = view.generation;
        self.last_poll = now;
        let mut handled = 0;
        if changed {
            self.scratch.clear();
            self.table.release(
                |i, ip| view.neighbors.contains_key(&(i, ip)),
                &mut self.scratch,
            );
            self.scratch.iter().for_each(|&bi| cx.bufs.unpark(bi));
            cx.count_error(s.released(), self.scratch.len() as u64);
            Self::trace_all(cx, &self.scratch, s.name(s.released()));
            cx.enqueue_all(Next::Rewrite as usize, &self.scratch);
            handled += self.scratch.len();
        }
        self.asks.clear();
        self.table.due_requests(now, &mut self.asks);
        for &(itf, ip) in &self.asks {
            ask(cx, itf, ip);
        }
        handled += self.asks.len();
        self.scratch.clear();
        self.table.expire(now, &mut self.scratch);
        self.scratch.iter().for_each(|&bi| cx.bufs.unpark(bi));
        cx.count_error(s.no_answer(), self.scratch.len() as u64);
        Self::trace_all(cx, &self.scratch, s.name(s.no_answer()));
        cx.enqueue_all(Next::Drop as usize, &self.scratch);
        handled + self.scratch.len()
    }

    fn trace_all(cx: &mut NodeCx<'_>, packets: &[u32], line: &str) {
        if cx.tracing() {
            for &bi in packets {
                cx.trace(bi, line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4([192, 0, 2, last].into())
    }

    #[test]
    fn bounded_per_neighbour_and_in_neighbours() {
        let now = Instant::now();
        let mut t = HoldTable::default();
        assert_eq!(
            t.hold(0, ip(1), 10, now),
            HoldOutcome::Held { request: true }
        );
        for bi in 11..11 + MAX_PER_NEIGHBOR as u32 - 1 {
            assert_eq!(
                t.hold(0, ip(1), bi, now),
                HoldOutcome::Held { request: false }
            );
        }
        assert_eq!(t.hold(0, ip(1), 99, now), HoldOutcome::QueueFull);
        // The same address on another interface is another neighbour.
        assert_eq!(
            t.hold(1, ip(1), 20, now),
            HoldOutcome::Held { request: true }
        );
        for k in 2..MAX_NEIGHBORS as u8 {
            t.hold(0, ip(k), 100 + k as u32, now);
        }
        assert_eq!(t.hold(0, ip(250), 1, now), HoldOutcome::TableFull);
        assert_eq!(t.held(), MAX_PER_NEIGHBOR + 1 + MAX_NEIGHBORS - 2);
    }

    #[test]
    fn requests_repeat_then_packets_expire() {
        let t0 = Instant::now();
        let mut t = HoldTable::default();
        t.hold(0, ip(1), 7, t0);
        let mut due = Vec::new();
        t.due_requests(t0 + REQUEST_INTERVAL / 2, &mut due);
        assert!(due.is_empty());
        let mut at = t0;
        for _ in 1..MAX_REQUESTS {
            at += REQUEST_INTERVAL;
            t.due_requests(at, &mut due);
        }
        assert_eq!(due.len(), MAX_REQUESTS as usize - 1);
        let mut dropped = Vec::new();
        t.expire(at + GIVE_UP / 2, &mut dropped);
        assert!(dropped.is_empty());
        t.due_requests(at + GIVE_UP, &mut due);
        assert_eq!(
            due.len(),
            MAX_REQUESTS as usize - 1,
            "no more than MAX_REQUESTS"
        );
        t.expire(at + GIVE_UP, &mut dropped);
        assert_eq!(dropped, vec![7]);
        assert!(t.is_empty());
        assert_eq!(t.held(), 0);
    }

    #[test]
    fn a_schedule_of_its_own_is_kept() {
        let s = Schedule {
            interval: Duration::from_secs(1),
            max_requests: 2,
            give_up: Duration::from_secs(3),
        };
        let t0 = Instant::now();
        let mut t = HoldTable::with_schedule(s);
        t.hold(0, ip(1), 7, t0);
        let mut due = Vec::new();
        t.due_requests(t0 + REQUEST_INTERVAL, &mut due);
        assert!(due.is_empty());
        t.due_requests(t0 + s.interval, &mut due);
        t.due_requests(t0 + s.interval * 2, &mut due);
        assert_eq!(due.len(), 1);
        let mut dropped = Vec::new();
        t.expire(t0 + s.interval + GIVE_UP, &mut dropped);
        assert!(dropped.is_empty());
        t.expire(t0 + s.interval + s.give_up, &mut dropped);
        assert_eq!(dropped, vec![7]);
    }

    #[test]
    fn release_takes_only_resolved_neighbours() {
        let now = Instant::now();
        let mut t = HoldTable::default();
        t.hold(0, ip(1), 1, now);
        t.hold(0, ip(2), 2, now);
        t.hold(0, ip(1), 3, now);
        let mut out = Vec::new();
        t.release(|_, a| a == ip(1), &mut out);
        out.sort();
        assert_eq!(out, vec![1, 3]);
        assert_eq!(t.held(), 1);
    }
}
