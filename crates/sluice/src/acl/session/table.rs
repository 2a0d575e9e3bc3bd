//! One worker's table: buckets of eight slots under a sequence lock, all fields atomics.
//! When both buckets of a new session are full of live sessions, the least recently used
//! transient one of their sixteen slots gives way (Linux's conntrack `early_drop` likewise
//! looks only near the new entry's hash); an established one never does.

use super::key::SessionKey;
use super::sources::{Source, Sources};
use super::state::{tcp_established, transient, Timeouts, FROM_B, ICMP, ICMPV6, TCP, UDP};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// Slots per bucket.
pub(super) const SLOTS: usize = 8;
/// Packets a worker handles per bucket it sweeps: the sweep reads memory the packets do not
/// need, so it keeps to their pace (a round of a 65 536-session table every 260 000
/// packets); an insert that finds its buckets full frees an expired slot there itself.
pub const PACKETS_PER_SWEPT_BUCKET: usize = 16;
#[cfg(test)]
pub(super) const SWEEP_BUCKETS: usize = 4;
/// Reads of a bucket a reader tries while its owner keeps changing it (after the first few
/// it yields: the owner may have been preempted in the middle of a change).
const READ_TRIES: usize = 256;

#[derive(Default)]
pub(super) struct Slot {
    a: [AtomicU64; 2],
    b: [AtomicU64; 2],
    /// Ports, protocol, family, table (`SessionKey::meta`).
    meta: AtomicU64,
    /// When the session was last used (`now_ms`).
    seen: AtomicU64,
    /// Flags seen (SYN_A ... SENT_B); bit 63: the first packet went from b to a.
    flags: AtomicU64,
}

#[derive(Default)]
#[repr(align(64))]
pub(super) struct Bucket {
    /// Odd while the owner writes the bucket.
    seq: AtomicU32,
    /// One byte per slot: 0 when free, else a byte of the key's hash.
    pub(super) tags: AtomicU64,
    pub(super) slots: [Slot; SLOTS],
}

/// What a table has done, for `show sessions` and the metrics. Only the owner writes them.
#[derive(Default)]
pub struct SessionStats {
    pub created: AtomicU64,
    pub expired: AtomicU64,
    /// Transient sessions freed to make room for a new one.
    pub evicted: AtomicU64,
    /// Sessions not opened: both buckets full of established (or answered) sessions.
    pub table_full: AtomicU64,
    /// Sessions not opened: TCP that was not a SYN.
    pub not_syn: AtomicU64,
    /// Sessions not opened: the source held `per-source` sessions already.
    pub source_limit: AtomicU64,
    /// Packets a session let through (classification skipped).
    pub hits: AtomicU64,
    /// Slots in use (live sessions and expired ones not yet freed).
    pub entries: AtomicU64,
}

/// Why a session was not opened (the packet is dropped, counted under this reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// TCP without a session that is not a SYN (without ACK, RST, FIN).
    NotSyn,
    /// Both of its buckets hold established or answered sessions only.
    TableFull,
    /// Its source holds `per-source` sessions in this worker's table.
    SourceLimit,
}

/// One worker's sessions.
pub struct SessionTable {
    pub(super) buckets: Box<[Bucket]>,
    /// The next bucket the owner's sweep frees expired sessions in.
    cursor: AtomicUsize,
    pub stats: SessionStats,
    /// Sessions per source, when `per_source` limits them.
    sources: Option<Sources>,
    per_source: u32,
}

/// Where a session sits: bucket and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub(super) bucket: usize,
    pub(super) slot: usize,
}

/// A live session, as `show sessions` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionView {
    pub key: SessionKey,
    /// The first packet went from side a.
    pub from_a: bool,
    pub tcp_flags: u64,
    /// A full table may evict it (`state::transient`).
    pub transient: bool,
    pub idle_ms: u64,
    pub expires_in_ms: u64,
}

impl SessionView {
    /// "established", "transient" (TCP), else the protocol's name.
    pub fn state(&self) -> &'static str {
        match self.key.proto {
            TCP if tcp_established(self.tcp_flags) => "established",
            TCP => "transient",
            UDP => "udp",
            ICMP | ICMPV6 => "icmp",
            _ => "other",
        }
    }
}

impl SessionTable {
    /// A table for at least `sessions` sessions (rounded up to a power of two buckets, with
    /// room to spare: about 64 bytes a slot); a source may hold `per_source` of them (0: no
    /// limit; else counted in a map of 48 bytes a slot, hashed with `seed`).
    pub fn new(sessions: usize, per_source: u32, seed: u64) -> SessionTable {
        let n = Self::buckets_for(sessions);
        SessionTable {
            buckets: (0..n).map(|_| Bucket::default()).collect(),
            cursor: AtomicUsize::new(0),
            stats: SessionStats::default(),
            sources: (per_source > 0).then(|| Sources::new(n * SLOTS, seed)),
            per_source,
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

    /// Bytes of the table (and of its counts per source).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
            + self.sources.as_ref().map_or(0, |s| s.memory_bytes())
    }

    /// Sessions a source may hold (0: no limit).
    pub fn per_source(&self) -> u32 {
        self.per_source
    }

    pub(super) fn places(&self, h: u64) -> (usize, usize, u8) {
        let mask = self.buckets.len() - 1;
        let first = h as usize & mask;
        let mut second = (h >> 24) as usize & mask;
        if second == first {
            second = (first + 1) & mask;
        }
        (first, second, ((h >> 56) as u8).max(1))
    }

    /// Where `k` is, if the table holds it (expired or not).
    pub(super) fn find(&self, k: &SessionKey, h: u64) -> Option<Found> {
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
    pub(super) fn expired(&self, f: Found, now: u64, t: &Timeouts) -> bool {
        let s = &self.buckets[f.bucket].slots[f.slot];
        let proto = (s.meta.load(Relaxed) >> 32) as u8;
        let seen = s.seen.load(Relaxed);
        now.saturating_sub(seen) > t.of(proto, s.flags.load(Relaxed))
    }

    /// A packet of the session at `f` adding `bits` (`state::packet_bits`): now is its last
    /// use, and its flags are remembered (written only when new: most packets add none).
    pub(super) fn touch(&self, f: Found, now: u64, bits: u64) {
        let s = &self.buckets[f.bucket].slots[f.slot];
        s.seen.fetch_max(now, Relaxed);
        if s.flags.load(Relaxed) & bits != bits {
            s.flags.fetch_or(bits, Relaxed);
        }
    }

    /// The source of a session of `k` with `flags`: the sender of its first packet.
    fn source(k: &SessionKey, flags: u64) -> Source {
        let addr = if flags & FROM_B != 0 { k.b } else { k.a };
        (addr, Sources::id(k.ipv6, k.table))
    }

    /// Frees the slot at `f`. Owner only.
    pub(super) fn remove(&self, f: Found) {
        let b = &self.buckets[f.bucket];
        if let Some(sources) = &self.sources {
            let slot = &b.slots[f.slot];
            if let Some(k) = slot_key(slot) {
                sources.sub(Self::source(&k, slot.flags.load(Relaxed)));
            }
        }
        let held = self.stats.entries.load(Relaxed);
        self.stats.entries.store(held.saturating_sub(1), Relaxed);
        let s = b.seq.load(Relaxed);
        b.seq.store(s.wrapping_add(1), Relaxed);
        fence(Release);
        let tags = b.tags.load(Relaxed) & !(0xff << (8 * f.slot));
        b.tags.store(tags, Relaxed);
        b.seq.store(s.wrapping_add(2), Release);
    }

    /// Frees the expired sessions of `bucket`. Owner only.
    pub(super) fn free_expired(&self, bucket: usize, now: u64, t: &Timeouts) {
        let tags = self.buckets[bucket].tags.load(Relaxed);
        for slot in 0..SLOTS {
            let f = Found { bucket, slot };
            if (tags >> (8 * slot)) as u8 != 0 && self.expired(f, now, t) {
                self.remove(f);
                self.stats.expired.fetch_add(1, Relaxed);
            }
        }
    }

    /// The least recently used transient session of `buckets`, if one is. Owner only.
    fn victim(&self, buckets: [usize; 2]) -> Option<Found> {
        let mut best: Option<(u64, Found)> = None;
        for bucket in buckets {
            let b = &self.buckets[bucket];
            let tags = b.tags.load(Relaxed);
            for (slot, s) in b.slots.iter().enumerate() {
                let proto = (s.meta.load(Relaxed) >> 32) as u8;
                if (tags >> (8 * slot)) as u8 == 0 || !transient(proto, s.flags.load(Relaxed)) {
                    continue;
                }
                let seen = s.seen.load(Relaxed);
                if best.is_none_or(|(oldest, _)| seen < oldest) {
                    best = Some((seen, Found { bucket, slot }));
                }
            }
        }
        best.map(|(_, f)| f)
    }

    /// Makes a session of `k` whose first packet adds `flags`. Owner only. When neither of
    /// its buckets has room after freeing their expired sessions, the least recently used
    /// transient session of the two is evicted; refused when there is none, or when its
    /// source holds `per_source` sessions already (then nothing is evicted).
    pub(super) fn insert(
        &self,
        k: &SessionKey,
        h: u64,
        now: u64,
        flags: u64,
        t: &Timeouts,
    ) -> Result<(), Refused> {
        let source = Self::source(k, flags);
        if let Some(sources) = &self.sources {
            if sources.count(source) >= self.per_source {
                return Err(Refused::SourceLimit);
            }
        }
        let (b1, b2, tag) = self.places(h);
        let free = |i: usize| {
            let t = self.buckets[i].tags.load(Relaxed);
            (0..SLOTS).filter(|&s| (t >> (8 * s)) as u8 == 0).count()
        };
        if free(b1) == 0 && free(b2) == 0 {
            self.free_expired(b1, now, t);
            self.free_expired(b2, now, t);
            if free(b1) == 0 && free(b2) == 0 {
                let victim = self.victim([b1, b2]).ok_or(Refused::TableFull)?;
                self.remove(victim);
                self.stats.evicted.fetch_add(1, Relaxed);
            }
        }
        let bucket = if free(b2) > free(b1) { b2 } else { b1 };
        let b = &self.buckets[bucket];
        let tags = b.tags.load(Relaxed);
        let Some(slot) = (0..SLOTS).find(|&s| (tags >> (8 * s)) as u8 == 0) else {
            return Err(Refused::TableFull);
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
        if let Some(sources) = &self.sources {
            sources.add(source);
        }
        let held = self.stats.entries.load(Relaxed);
        self.stats.entries.store(held + 1, Relaxed);
        Ok(())
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
                        transient: transient(key.proto, flags),
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
