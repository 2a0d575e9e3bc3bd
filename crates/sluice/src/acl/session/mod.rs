//! Stateful sessions for `permit+reflect`: a packet a reflect rule permits opens a session
//! of its 5-tuple, and later packets of that flow, in either direction, pass every input ACL
//! without being classified — so the replies to what a reflect rule let out come back in
//! through an interface whose list denies them.
//!
//! Only what may start a flow opens a session: of TCP a SYN (without ACK, RST or FIN), as
//! Linux conntrack with `nf_conntrack_tcp_loose = 0`; any other TCP packet the reflect rule
//! permits without a session is dropped (`Refused::NotSyn`).
//!
//! One table per worker, made at start and never grown: buckets of eight slots, each key in
//! one of two buckets (two hashes, the emptier one taken). When both are full, their least
//! recently used transient session (TCP opening or closing, anything else unanswered) makes
//! room; when they hold none, the session is not made, the packet is dropped and counted,
//! and memory stays what it was. A source may be limited to `per-source` sessions per
//! table (`sources`). A worker inserts and removes only in its own table; it looks a
//! packet up in its own table first and then in the others' (a flow's two directions may
//! arrive at two workers), which they read under a sequence lock per bucket: the owner makes
//! the bucket's count odd while it writes, and a reader that sees the count change retries.
//! Every field is an atomic, so this is safe code.
//!
//! Expiry needs no sweep of the whole table: a lookup treats a session past its timeout as
//! gone (its owner frees the slot when it meets it, and so does an insert that finds its
//! buckets full), and each worker frees the expired sessions of one bucket per 16 packets it
//! handles, going round its table.

//!
//! - `key`: `SessionKey`, a flow the same both ways; `state`: flags, timeouts, what is
//!   transient, what may open; `table`: one worker's table; `sources`: sessions per source;
//!   `metrics`: the tables in the metrics endpoint.

mod key;
pub mod metrics;
mod sources;
mod state;
mod table;
#[cfg(test)]
mod tests;

pub use key::SessionKey;
pub use state::{now_ms, Timeouts};
pub use table::{Refused, SessionStats, SessionTable, SessionView, PACKETS_PER_SWEPT_BUCKET};

use super::rule::FlowKey;
use crate::sys::mem::prefetch;
use state::{may_open, packet_bits, FROM_B};
use std::sync::atomic::Ordering::*;
use std::sync::OnceLock;

/// What a packet found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A live session of its flow: it passes.
    Hit,
    /// None (or a fragment that cannot be told).
    Miss,
}

/// A packet's session key and hash, computed (and its buckets prefetched) in a first pass
/// over a frame.
#[derive(Clone, Copy, Debug)]
pub struct Prepared {
    key: SessionKey,
    from_a: bool,
    hash: u64,
}

/// Every worker's table, made when the first reflect rule is applied (a daemon without
/// one pays nothing for them).
pub struct Sessions {
    tables: OnceLock<Box<[SessionTable]>>,
    /// The hash seed of every table (one, so that a key is hashed once for all of them).
    seed: u64,
    workers: usize,
    per_worker: usize,
    /// Sessions a source may hold in each worker's table (0: no limit).
    per_source: u32,
    pub timeouts: Timeouts,
}

impl Sessions {
    /// `workers` tables of `per_worker` sessions each, once `enable` makes them.
    pub fn new(workers: usize, per_worker: usize, timeouts: Timeouts) -> Sessions {
        let seed = {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(0x5e55_u64)
        };
        Sessions {
            tables: OnceLock::new(),
            seed,
            workers: workers.max(1),
            per_worker,
            per_source: 0,
            timeouts,
        }
    }

    /// The same with at most `limit` sessions per source in each worker's table (0: none).
    pub fn with_per_source(mut self, limit: u32) -> Sessions {
        self.per_source = limit;
        self
    }

    /// Sessions a source may hold in each worker's table (0: no limit).
    pub fn per_source(&self) -> u32 {
        self.per_source
    }

    /// Makes the tables (once).
    pub fn enable(&self) {
        self.tables.get_or_init(|| {
            (0..self.workers)
                .map(|_| SessionTable::new(self.per_worker, self.per_source, self.seed))
                .collect()
        });
    }

    /// The tables, one per worker (none before `enable`).
    pub fn tables(&self) -> &[SessionTable] {
        self.tables.get().map_or(&[], |t| t)
    }

    /// Sessions each worker's table holds at most (once made).
    pub fn per_worker(&self) -> usize {
        SessionTable::capacity_for(self.per_worker)
    }

    fn own(&self, worker: usize) -> Option<&SessionTable> {
        let t = self.tables();
        t.get(worker).or(t.last())
    }

    /// `k`'s session key (in routing table `table`) and hash; its buckets in the worker's
    /// table are prefetched. None for a fragment that cannot be told, or before the tables
    /// are made.
    pub fn prepare(&self, worker: usize, k: &FlowKey, table: u16) -> Option<Prepared> {
        let own = self.own(worker)?;
        let (key, from_a) = SessionKey::of(k, table)?;
        let hash = key.hash(self.seed);
        let (b1, b2, _) = own.places(hash);
        for b in [b1, b2] {
            if let Some(b) = own.buckets.get(b) {
                prefetch(b);
            }
        }
        Some(Prepared { key, from_a, hash })
    }

    /// Prefetches the slots of the worker's table whose tag is `p`'s (its buckets should be
    /// in cache by now).
    pub fn prefetch_slots(&self, worker: usize, p: &Prepared) {
        let Some(own) = self.own(worker) else {
            return;
        };
        let (b1, b2, tag) = own.places(p.hash);
        for b in [b1, b2] {
            let Some(b) = own.buckets.get(b) else {
                continue;
            };
            let tags = b.tags.load(Relaxed);
            for (i, slot) in b.slots.iter().enumerate() {
                if (tags >> (8 * i)) as u8 == tag {
                    prefetch(slot);
                }
            }
        }
    }

    /// Whether `k`'s flow has a live session in routing table 0 (worker `worker`'s table
    /// first, then the others'); a hit updates the session's last use and TCP state.
    pub fn lookup(&self, worker: usize, k: &FlowKey, now: u64) -> Lookup {
        match self.prepare(worker, k, 0) {
            Some(p) => self.lookup_prepared(worker, &p, k.tcp_flags, now),
            None => Lookup::Miss,
        }
    }

    /// `lookup` of a prepared key; `tcp_flags` are the packet's.
    pub fn lookup_prepared(&self, worker: usize, p: &Prepared, tcp_flags: u8, now: u64) -> Lookup {
        let Some(own) = self.own(worker) else {
            return Lookup::Miss;
        };
        let bits = packet_bits(p.key.proto, tcp_flags, p.from_a);
        if let Some(f) = own.find(&p.key, p.hash) {
            if own.expired(f, now, &self.timeouts) {
                own.remove(f);
                own.stats.expired.fetch_add(1, Relaxed);
                return Lookup::Miss;
            }
            own.touch(f, now, bits);
            own.stats.hits.fetch_add(1, Relaxed);
            return Lookup::Hit;
        }
        for t in self.tables().iter().filter(|t| !std::ptr::eq(*t, own)) {
            if let Some(f) = t.find(&p.key, p.hash) {
                if t.expired(f, now, &self.timeouts) {
                    continue;
                }
                t.touch(f, now, bits);
                own.stats.hits.fetch_add(1, Relaxed);
                return Lookup::Hit;
            }
        }
        Lookup::Miss
    }

    /// Opens a session for `k`'s flow (routing table 0) in worker `worker`'s table (a
    /// reflect rule permitted it, and `lookup` found none). False, and counted, when the
    /// table has no room.
    pub fn open(&self, worker: usize, k: &FlowKey, now: u64) -> bool {
        match self.prepare(worker, k, 0) {
            Some(p) => self.open_prepared(worker, &p, k.tcp_flags, now).is_ok(),
            None => false,
        }
    }

    /// `open` of a prepared key; `tcp_flags` are the packet's. A refusal is counted under
    /// its reason; the caller drops the packet.
    pub fn open_prepared(
        &self,
        worker: usize,
        p: &Prepared,
        tcp_flags: u8,
        now: u64,
    ) -> Result<(), Refused> {
        // A `Prepared` is only made once the tables are.
        let own = self.own(worker).ok_or(Refused::TableFull)?;
        let stats = &own.stats;
        if !may_open(p.key.proto, tcp_flags) {
            stats.not_syn.fetch_add(1, Relaxed);
            return Err(Refused::NotSyn);
        }
        let mut flags = packet_bits(p.key.proto, tcp_flags, p.from_a);
        if !p.from_a {
            flags |= FROM_B;
        }
        let made = own.insert(&p.key, p.hash, now, flags, &self.timeouts);
        let counter = match made {
            Ok(()) => &stats.created,
            Err(Refused::TableFull) => &stats.table_full,
            Err(Refused::SourceLimit) => &stats.source_limit,
            Err(Refused::NotSyn) => &stats.not_syn,
        };
        counter.fetch_add(1, Relaxed);
        made
    }

    /// Frees the expired sessions of the next `buckets` buckets of the worker's table.
    pub fn sweep(&self, worker: usize, buckets: usize, now: u64) {
        if let Some(t) = self.own(worker) {
            t.sweep(buckets, now, &self.timeouts);
        }
    }
}
