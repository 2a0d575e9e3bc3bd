//! What the control plane and the workers share: the published `NatView`, and per worker
//! its table (taken only by that worker's two nat44 nodes, one after the other, so the
//! mutex is never waited on), its counters, and the session list it copies out when the
//! control plane asks (`snapshot`), from its `poll` between frames.

use super::packet::{proto_name, Tuple};
use super::table::{Session, Table};
use super::{Limits, NatView, Stats};
use arc_swap::ArcSwap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Sessions one `show nat44 sessions` lists at most per worker.
pub const SHOW_MAX: usize = 10_000;
/// No filter on the inside address.
const ANY: u64 = u64::MAX;

/// One session as `show nat44 sessions` prints it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SessionRow {
    pub protocol: &'static str,
    pub inside: String,
    pub outside: String,
    pub remote: String,
    pub state: &'static str,
    pub age_s: u64,
    pub idle_s: u64,
    pub worker: usize,
}

fn endpoint(a: u32, p: u16) -> String {
    format!("{}:{p}", Ipv4Addr::from(a))
}

impl SessionRow {
    fn of(s: &Session, now: u64, worker: usize) -> SessionRow {
        // The inside host is the initiator unless the session came in by a port forward
        // (its source untouched); the remote is the other end as the inside sees it.
        let from_outside = s.orig.src == s.xlat.src && s.orig.sport == s.xlat.sport;
        let (inside, outside, remote): ((u32, u16), (u32, u16), (u32, u16)) = if from_outside {
            (
                (s.xlat.dst, s.xlat.dport),
                (s.orig.dst, s.orig.dport),
                (s.orig.src, s.orig.sport),
            )
        } else {
            (
                (s.orig.src, s.orig.sport),
                (s.xlat.src, s.xlat.sport),
                (s.xlat.dst, s.xlat.dport),
            )
        };
        SessionRow {
            protocol: proto_name(s.orig.proto),
            inside: endpoint(inside.0, inside.1),
            outside: endpoint(outside.0, outside.1),
            remote: endpoint(remote.0, remote.1),
            state: s.state.name(s.orig.proto),
            age_s: now.saturating_sub(s.created) / 1000,
            idle_s: now.saturating_sub(s.last) / 1000,
            worker,
        }
    }

    fn inside_addr(s: &Session) -> u32 {
        if s.orig.src == s.xlat.src && s.orig.sport == s.xlat.sport {
            s.xlat.dst
        } else {
            s.orig.src
        }
    }
}

/// A worker's table and the configuration generation it was made for.
pub struct WorkerTable {
    pub table: Table,
    pub generation: u64,
}

pub struct WorkerSlot {
    table: Mutex<WorkerTable>,
    pub stats: Stats,
    /// Asked / answered snapshot numbers, and the asked filter.
    request: AtomicU64,
    answered: AtomicU64,
    filter: AtomicU64,
    snapshot: Mutex<Vec<SessionRow>>,
    /// Ports in use per outside address, as of the worker's last refresh.
    ports: Mutex<Vec<(u32, usize)>>,
    /// When the worker last refreshed `ports` and the memory figure (ms).
    refreshed: AtomicU64,
    /// What the XDP fast path and the worker tell each other of offloaded sessions.
    offload: Mutex<OffloadQueues>,
}

/// Between the fast path's installer and a worker (drivers::af_xdp::fastpath::nat).
#[derive(Default)]
struct OffloadQueues {
    /// Sessions (index, tuple as received) whose frames the fast path carried lately.
    touched: Vec<(u32, Tuple)>,
    /// Tuples of offloaded sessions that closed or began closing: their entries go.
    withdrawn: Vec<Tuple>,
}

/// Either queue's length at most: beyond, the installer's touches wait for its next sweep,
/// and withdrawals are dropped (their entries then go when idle, or at the next epoch).
const OFFLOAD_QUEUE: usize = 1 << 20;

/// How often a worker refreshes the figures `show nat44 summary` reads (ms).
const REFRESH_MS: u64 = 100;

/// The NAT as the workers and the control plane share it.
pub struct Nat44Shared {
    pub view: ArcSwap<NatView>,
    pub workers: Vec<WorkerSlot>,
}

/// A worker's sessions before any configuration.
const NO_LIMITS: Limits = Limits {
    sessions: 0,
    per_host: 0,
};

impl Nat44Shared {
    pub fn new(workers: usize) -> Arc<Nat44Shared> {
        let view = NatView {
            workers,
            ..NatView::default()
        };
        Arc::new(Nat44Shared {
            view: ArcSwap::from_pointee(view),
            workers: (0..workers)
                .map(|w| WorkerSlot {
                    table: Mutex::new(WorkerTable {
                        table: Table::new(w, workers, NO_LIMITS),
                        generation: 0,
                    }),
                    stats: Stats::default(),
                    request: AtomicU64::new(0),
                    answered: AtomicU64::new(0),
                    filter: AtomicU64::new(ANY),
                    snapshot: Mutex::new(Vec::new()),
                    ports: Mutex::new(Vec::new()),
                    refreshed: AtomicU64::new(0),
                    offload: Mutex::new(OffloadQueues::default()),
                })
                .collect(),
        })
    }

    /// Worker `w`'s table, made again if the configuration changed since (its sessions
    /// closed), with the limits published now (its sessions kept). Only worker `w` calls
    /// this.
    pub fn table(&self, w: usize, view: &NatView) -> Option<MutexGuard<'_, WorkerTable>> {
        let slot = self.workers.get(w)?;
        let mut t = slot.table.lock().unwrap_or_else(|p| p.into_inner());
        if t.generation != view.generation {
            t.table.clear(&slot.stats);
            let limits = view.limits.unwrap_or(NO_LIMITS);
            t.table = Table::new(w, self.workers.len(), limits);
            t.generation = view.generation;
        }
        let limits = view.limits.unwrap_or(NO_LIMITS);
        if t.table.limits() != limits {
            t.table.set_limits(limits);
        }
        Some(t)
    }

    /// Worker `w` between frames: answer a pending snapshot request from `table`.
    pub fn answer(&self, w: usize, table: &Table, now: u64) {
        let Some(slot) = self.workers.get(w) else {
            return;
        };
        if now >= slot.refreshed.load(Relaxed) + REFRESH_MS {
            slot.refreshed.store(now, Relaxed);
            slot.stats.memory.store(table.memory() as u64, Relaxed);
            // The control plane holds this list only to copy it: never wait for it.
            if let Ok(mut p) = slot.ports.try_lock() {
                *p = table.ports_in_use();
            }
        }
        let asked = slot.request.load(Acquire);
        if asked == slot.answered.load(Relaxed) {
            return;
        }
        let filter = slot.filter.load(Relaxed);
        let rows: Vec<SessionRow> = table
            .iter()
            .filter(|s| filter == ANY || SessionRow::inside_addr(s) as u64 == filter)
            .take(SHOW_MAX)
            .map(|s| SessionRow::of(s, now, w))
            .collect();
        *slot.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = rows;
        slot.answered.store(asked, Release);
    }

    /// The fast path's installer: worker `w`'s sessions (each an index, found by its
    /// tuple) carried frames lately.
    pub fn touch_offloaded(&self, w: usize, sessions: Vec<(u32, Tuple)>) {
        let Some(slot) = self.workers.get(w) else {
            return;
        };
        let mut q = slot.offload.lock().unwrap_or_else(|p| p.into_inner());
        let room = OFFLOAD_QUEUE.saturating_sub(q.touched.len());
        q.touched.extend(sessions.into_iter().take(room));
    }

    /// The fast path's installer: the tuples every worker withdrew since the last call.
    pub fn take_withdrawn(&self) -> Vec<Tuple> {
        let mut all = Vec::new();
        for slot in &self.workers {
            all.append(
                &mut slot
                    .offload
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .withdrawn,
            );
        }
        all
    }

    /// Worker `w` between frames: the fast path's touches into `table`, its withdrawals
    /// out (never waiting for the installer: what does not pass now passes next time).
    pub fn exchange_offload(&self, w: usize, table: &mut Table, now: u64) {
        let Some(slot) = self.workers.get(w) else {
            return;
        };
        let Ok(mut q) = slot.offload.try_lock() else {
            return;
        };
        for (index, tuple) in q.touched.drain(..) {
            table.touch(index, &tuple, now);
        }
        let withdrawn = table.take_withdrawn();
        let room = OFFLOAD_QUEUE.saturating_sub(q.withdrawn.len());
        q.withdrawn.extend(withdrawn.into_iter().take(room));
    }

    /// Ports in use per outside address, all workers together.
    pub fn ports_in_use(&self) -> Vec<(u32, usize)> {
        let mut all: std::collections::BTreeMap<u32, usize> = Default::default();
        for slot in &self.workers {
            for &(a, n) in slot.ports.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                *all.entry(a).or_default() += n;
            }
        }
        all.into_iter().collect()
    }

    /// Every worker's sessions (those of inside address `inside` when given), asked of the
    /// workers and waited for up to `wait`; a worker that does not answer in time is named.
    pub fn sessions(&self, inside: Option<u32>, wait: Duration) -> (Vec<SessionRow>, Vec<usize>) {
        let mut asked = Vec::new();
        for slot in &self.workers {
            slot.filter.store(inside.map_or(ANY, |a| a as u64), Relaxed);
            asked.push(slot.request.fetch_add(1, AcqRel) + 1);
        }
        let deadline = Instant::now() + wait;
        let mut rows = Vec::new();
        let mut silent = Vec::new();
        for (w, slot) in self.workers.iter().enumerate() {
            while slot.answered.load(Acquire) < asked[w] && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if slot.answered.load(Acquire) < asked[w] {
                silent.push(w);
                continue;
            }
            rows.extend(
                slot.snapshot
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .drain(..),
            );
        }
        (rows, silent)
    }
}

/// For traces: a translation in words.
pub fn trace_line(dir: &str, from: &Tuple, to: &Tuple) -> String {
    format!("{dir}: {from} => {to}")
}
