//! Stateful sessions for `permit+reflect`: a packet a reflect rule permits opens a session
//! of its 5-tuple, and later packets of that flow, in either direction, pass every input ACL
//! without being classified — so the replies to what a reflect rule let out come back in
//! through an interface whose list denies them.
//!
//! One table per worker, made at start and never grown: buckets of eight slots, each key in
//! one of two buckets (two hashes, the emptier one taken), so a table fills to about 90 %
//! before an insert finds no room; then the session is not made and that is counted, and
//! memory stays what it was. A worker inserts and removes only in its own table; it looks a
//! packet up in its own table first and then in the others' (a flow's two directions may
//! arrive at two workers), which they read under a sequence lock per bucket: the owner makes
//! the bucket's count odd while it writes, and a reader that sees the count change retries.
//! Every field is an atomic, so this is safe code.
//!
//! Expiry needs no sweep of the whole table: a lookup treats a session past its timeout as
//! gone (its owner frees the slot when it meets it, and so does an insert that finds its
//! buckets full), and each worker frees the expired sessions of one bucket per 16 packets it
//! handles, going round its table.

use super::rule::FlowKey;
use crate::fib::mem::prefetch;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::OnceLock;
use std::time::Instant;

/// Slots per bucket.
const SLOTS: usize = 8;
/// Packets a worker handles per bucket it sweeps: the sweep reads memory the packets do not
/// need, so it keeps to their pace (a round of a 65 536-session table every 260 000
/// packets); an insert that finds its buckets full frees an expired slot there itself.
pub const PACKETS_PER_SWEPT_BUCKET: usize = 16;
#[cfg(test)]
const SWEEP_BUCKETS: usize = 4;
/// Reads of a bucket a reader tries while its owner keeps changing it (after the first few
/// it yields: the owner may have been preempted in the middle of a change).
const READ_TRIES: usize = 256;

const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
const TCP: u8 = 6;
const UDP: u8 = 17;

// TCP flags a session remembers, per side (a = the lower address and port).
const SYN_A: u64 = 1;
const SYN_B: u64 = 2;
const FIN_A: u64 = 4;
const FIN_B: u64 = 8;
const RST: u64 = 16;

/// Seconds a session lives after its last packet, by protocol and TCP state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP with a SYN seen each way and no FIN or RST.
    pub tcp_established: u64,
    /// TCP opening (one SYN) or closing (a FIN each way, or a RST).
    pub tcp_transient: u64,
    pub udp: u64,
    pub icmp: u64,
    /// Any other protocol.
    pub other: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            tcp_established: 7200,
            tcp_transient: 120,
            udp: 120,
            icmp: 30,
            other: 60,
        }
    }
}

impl Timeouts {
    fn of(&self, proto: u8, flags: u64) -> u64 {
        let s = match proto {
            TCP => {
                let open = flags & (SYN_A | SYN_B) == SYN_A | SYN_B;
                let closing = flags & RST != 0 || flags & (FIN_A | FIN_B) == FIN_A | FIN_B;
                if open && !closing {
                    self.tcp_established
                } else {
                    self.tcp_transient
                }
            }
            UDP => self.udp,
            ICMP | ICMPV6 => self.icmp,
            _ => self.other,
        };
        s.saturating_mul(1000)
    }
}

/// Milliseconds since the first call: the sessions' clock.
pub fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// A flow as a session knows it, the same for both directions: side a is the lower
/// (address, port) of the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionKey {
    /// The routing table (VRF) of the interface the ACL checked: tenants with the same
    /// addresses never share a session.
    pub table: u16,
    pub ipv6: bool,
    pub proto: u8,
    pub a: u128,
    pub b: u128,
    pub pa: u16,
    pub pb: u16,
}

impl SessionKey {
    /// The session of `k`'s flow and whether `k` goes from side a to side b; none for a
    /// fragment after the first (no ports: it cannot be told which flow it is part of).
    /// For ICMP (type in `sport`, code in `dport`) a query and its reply share a session:
    /// the query's type stands as its sender's port and the reply's as its receiver's, so
    /// a reply matches the query it answers, and a query the other way does not.
    pub fn of(k: &FlowKey, table: u16) -> Option<(SessionKey, bool)> {
        if k.later_fragment {
            return None;
        }
        let (sp, dp) = match k.proto {
            ICMP | ICMPV6 => match icmp_query(k.proto, k.sport as u8) {
                (query, false) => (query as u16, 0),
                (query, true) => (0, query as u16),
            },
            _ => (k.sport, k.dport),
        };
        let forward = (k.src, sp) <= (k.dst, dp);
        let (a, pa, b, pb) = if forward {
            (k.src, sp, k.dst, dp)
        } else {
            (k.dst, dp, k.src, sp)
        };
        Some((
            SessionKey {
                table,
                ipv6: k.ipv6,
                proto: k.proto,
                a,
                b,
                pa,
                pb,
            },
            forward,
        ))
    }

    fn meta(&self) -> u64 {
        self.pa as u64
            | (self.pb as u64) << 16
            | (self.proto as u64) << 32
            | (self.ipv6 as u64) << 40
            | (self.table as u64) << 48
    }

    fn hash(&self, seed: u64) -> u64 {
        let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        let mut h = seed;
        for w in [
            self.a as u64,
            (self.a >> 64) as u64,
            self.b as u64,
            (self.b >> 64) as u64,
            self.meta(),
        ] {
            h = mix(h, w);
        }
        h ^ h >> 32
    }
}

/// An ICMP type as (the query it is or answers, whether it is the answer): echo,
/// timestamp, information and address mask for IPv4, echo for ICMPv6. Other types (errors
/// among them) stand for themselves.
fn icmp_query(proto: u8, t: u8) -> (u8, bool) {
    let pairs: &[(u8, u8)] = if proto == ICMP {
        &[(8, 0), (13, 14), (15, 16), (17, 18)]
    } else {
        &[(128, 129)]
    };
    for &(q, r) in pairs {
        if t == q {
            return (q, false);
        }
        if t == r {
            return (q, true);
        }
    }
    (t, false)
}

/// The TCP flags of a packet going from side a (`from_a`) or b, as a session keeps them.
fn tcp_bits(proto: u8, tcp_flags: u8, from_a: bool) -> u64 {
    if proto != TCP {
        return 0;
    }
    let (syn, fin) = if from_a {
        (SYN_A, FIN_A)
    } else {
        (SYN_B, FIN_B)
    };
    let mut b = 0;
    if tcp_flags & 0x02 != 0 {
        b |= syn;
    }
    if tcp_flags & 0x01 != 0 {
        b |= fin;
    }
    if tcp_flags & 0x04 != 0 {
        b |= RST;
    }
    b
}

#[derive(Default)]
struct Slot {
    a: [AtomicU64; 2],
    b: [AtomicU64; 2],
    /// Ports, protocol, family, table (`SessionKey::meta`).
    meta: AtomicU64,
    /// When the session was last used (`now_ms`).
    seen: AtomicU64,
    /// TCP flags seen (SYN_A ...); bit 63: the first packet went from b to a.
    flags: AtomicU64,
}

const FROM_B: u64 = 1 << 63;

#[derive(Default)]
#[repr(align(64))]
struct Bucket {
    /// Odd while the owner writes the bucket.
    seq: AtomicU32,
    /// One byte per slot: 0 when free, else a byte of the key's hash.
    tags: AtomicU64,
    slots: [Slot; SLOTS],
}

/// What a table has done, for `show sessions summary`.
#[derive(Default)]
pub struct SessionStats {
    pub created: AtomicU64,
    pub expired: AtomicU64,
    /// Sessions a reflect rule should have made but found no room for.
    pub table_full: AtomicU64,
    /// Packets a session let through (classification skipped).
    pub hits: AtomicU64,
}

/// One worker's sessions.
pub struct SessionTable {
    buckets: Box<[Bucket]>,
    /// The next bucket the owner's sweep frees expired sessions in.
    cursor: AtomicUsize,
    pub stats: SessionStats,
}

/// Where a session sits: bucket and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    bucket: usize,
    slot: usize,
}

/// A live session, as `show sessions` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionView {
    pub key: SessionKey,
    /// The first packet went from side a.
    pub from_a: bool,
    pub tcp_flags: u64,
    pub idle_ms: u64,
    pub expires_in_ms: u64,
}

impl SessionView {
    /// "established", "transient" (TCP), else the protocol's name.
    pub fn state(&self) -> &'static str {
        match self.key.proto {
            TCP => {
                let f = self.tcp_flags;
                if f & (SYN_A | SYN_B) == SYN_A | SYN_B
                    && f & RST == 0
                    && f & (FIN_A | FIN_B) != FIN_A | FIN_B
                {
                    "established"
                } else {
                    "transient"
                }
            }
            UDP => "udp",
            ICMP | ICMPV6 => "icmp",
            _ => "other",
        }
    }
}

impl SessionTable {
    /// A table for at least `sessions` sessions (rounded up to a power of two buckets, with
    /// room to spare: about 64 bytes a slot).
    pub fn new(sessions: usize) -> SessionTable {
        let n = Self::buckets_for(sessions);
        SessionTable {
            buckets: (0..n).map(|_| Bucket::default()).collect(),
            cursor: AtomicUsize::new(0),
            stats: SessionStats::default(),
        }
    }

    fn buckets_for(sessions: usize) -> usize {
        (sessions.max(SLOTS).div_ceil(SLOTS) * 5 / 4).next_power_of_two()
    }

    /// Sessions a table made for `sessions` holds at most.
    pub fn capacity_for(sessions: usize) -> usize {
        Self::buckets_for(sessions) * SLOTS
    }

    /// Bytes a table made for `sessions` takes.
    pub fn memory_for(sessions: usize) -> usize {
        Self::buckets_for(sessions) * std::mem::size_of::<Bucket>()
    }

    /// Sessions the table holds at most.
    pub fn capacity(&self) -> usize {
        self.buckets.len() * SLOTS
    }

    /// Bytes of the table.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
    }

    fn places(&self, h: u64) -> (usize, usize, u8) {
        let mask = self.buckets.len() - 1;
        let first = h as usize & mask;
        let mut second = (h >> 24) as usize & mask;
        if second == first {
            second = (first + 1) & mask;
        }
        (first, second, ((h >> 56) as u8).max(1))
    }

    /// Where `k` is, if the table holds it (expired or not).
    fn find(&self, k: &SessionKey, h: u64) -> Option<Found> {
        let (b1, b2, tag) = self.places(h);
        [b1, b2].into_iter().find_map(|bucket| {
            let b = self.buckets.get(bucket)?;
            for attempt in 0..READ_TRIES {
                let s1 = b.seq.load(Acquire);
                if s1 & 1 != 0 {
                    if attempt < 16 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                    continue;
                }
                let tags = b.tags.load(Relaxed);
                let hit = (0..SLOTS)
                    .find(|&i| (tags >> (8 * i)) as u8 == tag && slot_key(&b.slots[i]) == Some(*k));
                fence(Acquire);
                if b.seq.load(Relaxed) == s1 {
                    return hit.map(|slot| Found { bucket, slot });
                }
            }
            None
        })
    }

    /// Whether the session at `f` has outlived its timeout at `now`.
    fn expired(&self, f: Found, now: u64, t: &Timeouts) -> bool {
        let s = &self.buckets[f.bucket].slots[f.slot];
        let proto = (s.meta.load(Relaxed) >> 32) as u8;
        let seen = s.seen.load(Relaxed);
        now.saturating_sub(seen) > t.of(proto, s.flags.load(Relaxed))
    }

    /// A packet of the session at `f` (going from side a when `from_a`): now is its last use,
    /// and its TCP flags are remembered.
    fn touch(&self, f: Found, now: u64, bits: u64) {
        let s = &self.buckets[f.bucket].slots[f.slot];
        s.seen.fetch_max(now, Relaxed);
        if bits != 0 {
            s.flags.fetch_or(bits, Relaxed);
        }
    }

    /// Frees the slot at `f`. Owner only.
    fn remove(&self, f: Found) {
        let b = &self.buckets[f.bucket];
        let s = b.seq.load(Relaxed);
        b.seq.store(s.wrapping_add(1), Relaxed);
        fence(Release);
        let tags = b.tags.load(Relaxed) & !(0xff << (8 * f.slot));
        b.tags.store(tags, Relaxed);
        b.seq.store(s.wrapping_add(2), Release);
    }

    /// Frees the expired sessions of `bucket`. Owner only.
    fn free_expired(&self, bucket: usize, now: u64, t: &Timeouts) {
        let tags = self.buckets[bucket].tags.load(Relaxed);
        for slot in 0..SLOTS {
            let f = Found { bucket, slot };
            if (tags >> (8 * slot)) as u8 != 0 && self.expired(f, now, t) {
                self.remove(f);
                self.stats.expired.fetch_add(1, Relaxed);
            }
        }
    }

    /// Makes a session of `k`. Owner only. False when neither of its buckets has room, even
    /// after freeing their expired sessions.
    fn insert(&self, k: &SessionKey, h: u64, now: u64, flags: u64, t: &Timeouts) -> bool {
        let (b1, b2, tag) = self.places(h);
        let free = |i: usize| {
            let t = self.buckets[i].tags.load(Relaxed);
            (0..SLOTS).filter(|&s| (t >> (8 * s)) as u8 == 0).count()
        };
        if free(b1) == 0 && free(b2) == 0 {
            self.free_expired(b1, now, t);
            self.free_expired(b2, now, t);
        }
        let bucket = if free(b2) > free(b1) { b2 } else { b1 };
        let b = &self.buckets[bucket];
        let tags = b.tags.load(Relaxed);
        let Some(slot) = (0..SLOTS).find(|&s| (tags >> (8 * s)) as u8 == 0) else {
            return false;
        };
        let seq = b.seq.load(Relaxed);
        b.seq.store(seq.wrapping_add(1), Relaxed);
        fence(Release);
        let s = &b.slots[slot];
        s.a[0].store(k.a as u64, Relaxed);
        s.a[1].store((k.a >> 64) as u64, Relaxed);
        s.b[0].store(k.b as u64, Relaxed);
        s.b[1].store((k.b >> 64) as u64, Relaxed);
        s.meta.store(k.meta(), Relaxed);
        s.seen.store(now, Relaxed);
        s.flags.store(flags, Relaxed);
        b.tags.store(tags | (tag as u64) << (8 * slot), Relaxed);
        b.seq.store(seq.wrapping_add(2), Release);
        true
    }

    /// Frees the expired sessions of the next `buckets` buckets. Owner only.
    pub fn sweep(&self, buckets: usize, now: u64, t: &Timeouts) {
        let n = self.buckets.len();
        let start = self.cursor.load(Relaxed);
        for i in 0..buckets.min(n) {
            self.free_expired((start + i) & (n - 1), now, t);
        }
        self.cursor.store((start + buckets) & (n - 1), Relaxed);
    }

    /// The live sessions (at most `limit`), read as a reader does.
    pub fn live(&self, now: u64, t: &Timeouts, limit: usize) -> (usize, Vec<SessionView>) {
        let (mut count, mut out) = (0, Vec::new());
        for (bucket, b) in self.buckets.iter().enumerate() {
            let tags = b.tags.load(Relaxed);
            for slot in 0..SLOTS {
                if (tags >> (8 * slot)) as u8 == 0 {
                    continue;
                }
                let f = Found { bucket, slot };
                if self.expired(f, now, t) {
                    continue;
                }
                count += 1;
                if out.len() < limit {
                    let s = &b.slots[slot];
                    let Some(key) = slot_key(s) else { continue };
                    let flags = s.flags.load(Relaxed);
                    let idle = now.saturating_sub(s.seen.load(Relaxed));
                    out.push(SessionView {
                        key,
                        from_a: flags & FROM_B == 0,
                        tcp_flags: flags & !FROM_B,
                        idle_ms: idle,
                        expires_in_ms: t.of(key.proto, flags).saturating_sub(idle),
                    });
                }
            }
        }
        (count, out)
    }
}

/// The key a slot holds (None if its protocol field is unset, which no session has: every
/// key is written before its tag).
fn slot_key(s: &Slot) -> Option<SessionKey> {
    let w = |x: &[AtomicU64; 2]| x[0].load(Relaxed) as u128 | (x[1].load(Relaxed) as u128) << 64;
    let meta = s.meta.load(Relaxed);
    Some(SessionKey {
        table: (meta >> 48) as u16,
        ipv6: meta >> 40 & 1 != 0,
        proto: (meta >> 32) as u8,
        a: w(&s.a),
        b: w(&s.b),
        pa: meta as u16,
        pb: (meta >> 16) as u16,
    })
}

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
            timeouts,
        }
    }

    /// Makes the tables (once).
    pub fn enable(&self) {
        self.tables.get_or_init(|| {
            (0..self.workers)
                .map(|_| SessionTable::new(self.per_worker))
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
        let bits = tcp_bits(p.key.proto, tcp_flags, p.from_a);
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
            Some(p) => self.open_prepared(worker, &p, k.tcp_flags, now),
            None => false,
        }
    }

    /// `open` of a prepared key; `tcp_flags` are the packet's.
    pub fn open_prepared(&self, worker: usize, p: &Prepared, tcp_flags: u8, now: u64) -> bool {
        let Some(own) = self.own(worker) else {
            return false;
        };
        let mut flags = tcp_bits(p.key.proto, tcp_flags, p.from_a);
        if !p.from_a {
            flags |= FROM_B;
        }
        if own.insert(&p.key, p.hash, now, flags, &self.timeouts) {
            own.stats.created.fetch_add(1, Relaxed);
            true
        } else {
            own.stats.table_full.fetch_add(1, Relaxed);
            false
        }
    }

    /// Frees the expired sessions of the next `buckets` buckets of the worker's table.
    pub fn sweep(&self, worker: usize, buckets: usize, now: u64) {
        if let Some(t) = self.own(worker) {
            t.sweep(buckets, now, &self.timeouts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(src: u32, sport: u16, dst: u32, dport: u16, proto: u8, flags: u8) -> FlowKey {
        FlowKey {
            ipv6: false,
            src: (src as u128) << 96,
            dst: (dst as u128) << 96,
            proto,
            sport,
            dport,
            tcp_flags: flags,
            later_fragment: false,
        }
    }

    fn reply(k: &FlowKey, flags: u8) -> FlowKey {
        FlowKey {
            src: k.dst,
            dst: k.src,
            sport: k.dport,
            dport: k.sport,
            tcp_flags: flags,
            ..*k
        }
    }

    #[test]
    fn no_tables_until_enabled() {
        let s = Sessions::new(2, 1000, Timeouts::default());
        let k = key(1, 1, 2, 2, UDP, 0);
        assert!(s.tables().is_empty());
        assert!(!s.open(0, &k, 0));
        assert_eq!(s.lookup(0, &k, 0), Lookup::Miss);
        s.enable();
        assert_eq!(s.tables().len(), 2);
        assert_eq!(s.tables()[0].capacity(), s.per_worker());
        assert_eq!(s.tables()[0].memory_bytes(), SessionTable::memory_for(1000));
        assert!(s.open(0, &k, 0));
    }

    #[test]
    fn both_directions_find_the_session_and_other_flows_do_not() {
        let s = Sessions::new(1, 1000, Timeouts::default());
        s.enable();
        let k = key(0x0a00_0001, 40000, 0xc000_0201, 80, TCP, 0x02);
        assert_eq!(s.lookup(0, &k, 0), Lookup::Miss);
        assert!(s.open(0, &k, 0));
        assert_eq!(s.lookup(0, &reply(&k, 0x12), 10), Lookup::Hit);
        assert_eq!(s.lookup(0, &k, 20), Lookup::Hit);
        // Another port, another protocol, another family: other flows.
        let mut other = k;
        other.sport = 40001;
        assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
        other = k;
        other.proto = UDP;
        assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
        other = k;
        other.ipv6 = true;
        assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
        // A later fragment cannot be told: never a hit, never a session.
        other = k;
        other.later_fragment = true;
        assert_eq!(s.lookup(0, &other, 20), Lookup::Miss);
        assert!(!s.open(0, &other, 20));
        let (n, v) = s.tables()[0].live(20, &s.timeouts, 10);
        assert_eq!(n, 1);
        assert_eq!(v[0].state(), "established");
        assert!(v[0].from_a);
    }

    /// Two tenants (routing tables) with the same addresses: a session one opens is not the
    /// other's, and each keeps its table through the slot.
    #[test]
    fn a_session_belongs_to_its_routing_table() {
        let s = Sessions::new(1, 1000, Timeouts::default());
        s.enable();
        let k = key(0x0a00_0001, 40000, 0xc000_0201, 80, UDP, 0);
        let p = s.prepare(0, &k, 7).unwrap();
        assert!(s.open_prepared(0, &p, 0, 0));
        let back = reply(&k, 0);
        let hit = |table| {
            let p = s.prepare(0, &back, table).unwrap();
            s.lookup_prepared(0, &p, 0, 10)
        };
        assert_eq!(hit(7), Lookup::Hit);
        assert_eq!(hit(0), Lookup::Miss);
        assert_eq!(hit(8), Lookup::Miss);
        let (_, v) = s.tables()[0].live(10, &s.timeouts, 10);
        assert_eq!(v[0].key.table, 7);
    }

    #[test]
    fn icmp_requests_and_replies_share_a_session() {
        let s = Sessions::new(1, 100, Timeouts::default());
        s.enable();
        for (proto, request, answer) in [(ICMP, 8, 0), (ICMP, 13, 14), (ICMPV6, 128, 129)] {
            let req = key(1, request, 2, 0, proto, 0);
            assert!(s.open(0, &req, 0));
            let mut rep = reply(&req, 0);
            rep.sport = answer;
            rep.dport = 0;
            assert_eq!(s.lookup(0, &rep, 1), Lookup::Hit, "{proto} {answer}");
            // A query the other way is not an answer.
            let mut back = rep;
            back.sport = request;
            assert_eq!(s.lookup(0, &back, 1), Lookup::Miss, "{proto} {request}");
        }
    }

    #[test]
    fn sessions_expire_by_protocol_and_tcp_state() {
        let t = Timeouts {
            tcp_established: 100,
            tcp_transient: 10,
            udp: 5,
            icmp: 3,
            other: 2,
        };
        let s = Sessions::new(1, 100, t);
        s.enable();
        let udp = key(1, 1, 2, 2, UDP, 0);
        assert!(s.open(0, &udp, 0));
        assert_eq!(s.lookup(0, &udp, 4_000), Lookup::Hit); // seen again at 4 s
        assert_eq!(s.lookup(0, &udp, 9_000), Lookup::Hit); // 5 s after
        assert_eq!(s.lookup(0, &udp, 14_001), Lookup::Miss); // 5.001 s after: gone
        assert_eq!(s.tables()[0].stats.expired.load(Relaxed), 1);
        // TCP: a SYN alone is transient (10 s); SYN-ACK back makes it established (100 s);
        // a FIN each way closes it (10 s again); so does a RST.
        let syn = key(1, 1000, 2, 80, TCP, 0x02);
        assert!(s.open(0, &syn, 0));
        assert_eq!(s.lookup(0, &syn, 11_000), Lookup::Miss);
        assert!(s.open(0, &syn, 20_000));
        assert_eq!(s.lookup(0, &reply(&syn, 0x12), 20_000), Lookup::Hit);
        assert_eq!(s.lookup(0, &syn, 90_000), Lookup::Hit);
        assert_eq!(s.lookup(0, &syn, 180_000), Lookup::Hit);
        let fin = key(1, 1000, 2, 80, TCP, 0x11);
        assert_eq!(s.lookup(0, &fin, 180_000), Lookup::Hit);
        assert_eq!(s.lookup(0, &reply(&fin, 0x11), 180_000), Lookup::Hit);
        assert_eq!(s.lookup(0, &syn, 191_000), Lookup::Miss);
        let rst = key(3, 1000, 2, 80, TCP, 0x02);
        assert!(s.open(0, &rst, 0));
        assert_eq!(s.lookup(0, &reply(&rst, 0x12), 0), Lookup::Hit);
        assert_eq!(s.lookup(0, &reply(&rst, 0x04), 1_000), Lookup::Hit);
        assert_eq!(s.lookup(0, &rst, 12_000), Lookup::Miss);
    }

    #[test]
    fn a_full_table_counts_what_it_cannot_hold_and_stays_its_size() {
        let s = Sessions::new(1, 64, Timeouts::default());
        s.enable();
        let t = &s.tables()[0];
        let (cap, bytes) = (t.capacity(), t.memory_bytes());
        let mut made = 0;
        for i in 0..10 * cap as u32 {
            made += s.open(0, &key(i, 1, 2, 2, UDP, 0), 0) as usize;
        }
        assert!(made <= cap && made * 10 >= cap * 8, "{made} of {cap}");
        assert_eq!(t.stats.table_full.load(Relaxed) as usize, 10 * cap - made);
        assert_eq!((t.capacity(), t.memory_bytes()), (cap, bytes));
        // Every session made is found; once expired and swept, the room is back.
        let found = (0..10 * cap as u32)
            .filter(|&i| s.lookup(0, &key(i, 1, 2, 2, UDP, 0), 0) == Lookup::Hit)
            .count();
        assert_eq!(found, made);
        let later = 1_000_000;
        for _ in 0..t.buckets.len() / SWEEP_BUCKETS {
            s.sweep(0, SWEEP_BUCKETS, later);
        }
        assert_eq!(t.live(later, &s.timeouts, 0).0, 0);
        assert_eq!(t.stats.expired.load(Relaxed) as usize, made);
        assert!(s.open(0, &key(7, 1, 2, 2, UDP, 0), later));
    }

    #[test]
    fn the_table_agrees_with_a_map_through_random_opens_and_expiries() {
        let t = Timeouts {
            udp: 3,
            ..Timeouts::default()
        };
        let s = Sessions::new(1, 4096, t);
        s.enable();
        let mut model: HashMap<SessionKey, u64> = HashMap::new();
        let mut x = 12345u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..200_000u64 {
            let now = step * 10;
            let r = rnd();
            let k = key((r % 3000) as u32, (r >> 20) as u16 % 3, 9, 53, UDP, 0);
            let (sk, _) = SessionKey::of(&k, 0).unwrap();
            let live = model.get(&sk).is_some_and(|&seen| now - seen <= 3000);
            let got = s.lookup(0, &k, now);
            assert_eq!(got == Lookup::Hit, live, "step {step}");
            if live {
                model.insert(sk, now);
            } else if r >> 40 & 1 == 0 {
                assert!(s.open(0, &k, now), "table full at step {step}");
                model.insert(sk, now);
            }
            if step % 8 == 0 {
                s.sweep(0, SWEEP_BUCKETS, now);
            }
        }
    }

    #[test]
    fn another_worker_finds_a_session_while_its_owner_changes_its_table() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        // The stable session is UDP and never expires here; the others are another
        // protocol that expires after a second.
        let t = Timeouts {
            udp: 1 << 30,
            other: 1,
            ..Timeouts::default()
        };
        let s = Arc::new(Sessions::new(2, 2048, t));
        s.enable();
        let stable = key(1, 1, 2, 2, UDP, 0);
        assert!(s.open(0, &stable, 0));
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let reader = {
            let (s, stop, started) = (s.clone(), stop.clone(), started.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    // Worker 1 sees worker 0's session, from either side, and never one
                    // that was not made (a torn read would).
                    assert_eq!(s.lookup(1, &reply(&stable, 0), 0), Lookup::Hit);
                    assert_eq!(s.lookup(1, &key(99, 7, 3, 3, 47, 0), 0), Lookup::Miss);
                    n += 1;
                    started.store(true, Relaxed);
                }
                n
            })
        };
        // On a busy machine the reader may start late: the changes begin once it reads.
        while !started.load(Relaxed) {
            std::thread::yield_now();
        }
        // Worker 0 opens and expires thousands of others around it.
        for round in 0..50u64 {
            for i in 0..1000u32 {
                s.open(0, &key(100 + i, 7, 3, 3, 47, 0), round * 10_000);
            }
            for _ in 0..s.tables()[0].buckets.len() / SWEEP_BUCKETS {
                s.sweep(0, SWEEP_BUCKETS, round * 10_000 + 5_000);
            }
            assert_eq!(s.tables()[0].live(round * 10_000 + 5_000, &t, 0).0, 1);
        }
        stop.store(true, Relaxed);
        assert!(reader.join().unwrap() > 0);
    }
}
