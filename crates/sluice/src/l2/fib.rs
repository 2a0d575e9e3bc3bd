//! The MAC table the bridge nodes read: an open-addressing hash of (bridge domain, MAC) →
//! interface that workers probe without a lock while one writer (the control thread holding
//! the bridges) changes it.
//!
//! Why it is safe without locks: a slot's key is written once, after its value (release),
//! and read first (acquire), so a reader that finds a key finds its value. A key never
//! changes to another key: removal writes a tombstone, and tombstones are only reclaimed by
//! building a fresh table and publishing it whole (`L2FibReader` is an `ArcSwap`), so a
//! reader can never pair one key with another key's value. A move rewrites the value in
//! place: a reader sees the old interface or the new one, both real. Workers write only the
//! `seen` stamp, and only when it changed (once a second per address), which the ageing
//! reads.

use crate::wire::MacAddress;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

const EMPTY: u64 = 0;
const TOMBSTONE: u64 = u64::MAX;
/// Set in `val` for a configured entry.
const STATIC_BIT: u64 = 1 << 32;
/// The smallest table: 16 KiB, what an unused bridge costs.
const MIN_SLOTS: usize = 1024;

/// The key of `mac` in the bridge domain with internal index `bd` (never 0, never the
/// tombstone: the index is stored plus one, and the tombstone's MAC would be broadcast).
#[inline(always)]
pub fn key(bd: u16, mac: &[u8]) -> u64 {
    let mac = mac[..6].iter().fold(0u64, |k, &b| k << 8 | b as u64);
    (bd as u64 + 1) << 48 | mac
}

#[inline(always)]
fn hash(k: u64) -> u64 {
    (k ^ k >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20
}

#[derive(Default)]
struct Slot {
    key: AtomicU64,
    /// The interface index, and `STATIC_BIT`.
    val: AtomicU64,
    /// When the address was last seen as a source, in `L2Fib` seconds.
    seen: AtomicU32,
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub interface: u32,
    pub is_static: bool,
    /// The slot, for `touch`.
    slot: u32,
}

/// One table; see the module comment for who writes what.
pub struct L2Fib {
    slots: Box<[Slot]>,
    mask: usize,
    /// Live entries and tombstones: the writer rebuilds before probes grow long.
    used: AtomicU64,
    live: AtomicU64,
}

impl L2Fib {
    /// A table with room for at least `entries` at under half load.
    pub fn with_capacity(entries: usize) -> L2Fib {
        let n = (entries * 2).next_power_of_two().max(MIN_SLOTS);
        L2Fib {
            slots: crate::sys::mem::huge_vec(n, Slot::default).into_boxed_slice(),
            mask: n - 1,
            used: AtomicU64::new(0),
            live: AtomicU64::new(0),
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot>()
    }

    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed) as usize
    }

    /// Where `k` is, probing from its hash to the first empty slot.
    #[inline(always)]
    pub fn lookup(&self, k: u64) -> Option<Hit> {
        let mut i = hash(k) as usize & self.mask;
        loop {
            let slot = &self.slots[i];
            match slot.key.load(Ordering::Acquire) {
                EMPTY => return None,
                found if found == k => {
                    let v = slot.val.load(Ordering::Relaxed);
                    return Some(Hit {
                        interface: v as u32,
                        is_static: v & STATIC_BIT != 0,
                        slot: i as u32,
                    });
                }
                _ => i = (i + 1) & self.mask,
            }
        }
    }

    /// Start loading the slot where a lookup of `k` begins: a frame's lookups prefetch a few
    /// packets ahead, so a table larger than the cache costs one miss per frame, not per
    /// packet.
    #[inline(always)]
    pub fn prefetch(&self, k: u64) {
        crate::sys::mem::prefetch(&self.slots[hash(k) as usize & self.mask]);
    }

    /// Record that the entry `hit` found was seen at `now` (a store only when it changed).
    #[inline(always)]
    pub fn touch(&self, hit: Hit, now: u32) {
        let seen = &self.slots[hit.slot as usize].seen;
        if seen.load(Ordering::Relaxed) != now {
            seen.store(now, Ordering::Relaxed);
        }
    }

    pub fn seen(&self, k: u64) -> Option<u32> {
        self.lookup(k)
            .map(|h| self.slots[h.slot as usize].seen.load(Ordering::Relaxed))
    }

    /// Writer: whether one more entry fits without a rebuild (at most 3/4 of the slots used).
    fn has_room(&self) -> bool {
        (self.used.load(Ordering::Relaxed) as usize + 1) * 4 <= self.slots.len() * 3
    }

    /// Writer: add `k` or change where it is. Returns false when the table is too full (the
    /// caller rebuilds a larger one).
    fn set(&self, k: u64, interface: u32, is_static: bool, now: u32) -> bool {
        let v = interface as u64 | if is_static { STATIC_BIT } else { 0 };
        if let Some(h) = self.lookup(k) {
            let slot = &self.slots[h.slot as usize];
            slot.val.store(v, Ordering::Relaxed);
            slot.seen.store(now, Ordering::Relaxed);
            return true;
        }
        if !self.has_room() {
            return false;
        }
        let mut i = hash(k) as usize & self.mask;
        while self.slots[i].key.load(Ordering::Relaxed) != EMPTY {
            i = (i + 1) & self.mask;
        }
        let slot = &self.slots[i];
        slot.val.store(v, Ordering::Relaxed);
        slot.seen.store(now, Ordering::Relaxed);
        slot.key.store(k, Ordering::Release);
        self.used.fetch_add(1, Ordering::Relaxed);
        self.live.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Writer: remove `k` (its slot becomes a tombstone until the next rebuild).
    fn remove(&self, k: u64) -> bool {
        match self.lookup(k) {
            Some(h) => {
                self.slots[h.slot as usize]
                    .key
                    .store(TOMBSTONE, Ordering::Release);
                self.live.fetch_sub(1, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Every live entry: (key, interface, static, seen).
    pub fn entries(&self) -> impl Iterator<Item = (u64, u32, bool, u32)> + '_ {
        self.slots.iter().filter_map(|s| {
            let k = s.key.load(Ordering::Acquire);
            if k == EMPTY || k == TOMBSTONE {
                return None;
            }
            let v = s.val.load(Ordering::Relaxed);
            Some((
                k,
                v as u32,
                v & STATIC_BIT != 0,
                s.seen.load(Ordering::Relaxed),
            ))
        })
    }
}

/// What the bridge nodes hold: the current table, replaced whole by a rebuild.
pub type L2FibReader = Arc<ArcSwap<L2Fib>>;

/// The writer's side: changes the published table in place, and rebuilds (larger, or to shed
/// tombstones) and publishes when it fills.
pub struct L2FibWriter {
    reader: L2FibReader,
}

impl Default for L2FibWriter {
    fn default() -> Self {
        L2FibWriter {
            reader: Arc::new(ArcSwap::from_pointee(L2Fib::with_capacity(0))),
        }
    }
}

impl L2FibWriter {
    pub fn reader(&self) -> L2FibReader {
        self.reader.clone()
    }

    pub fn table(&self) -> arc_swap::Guard<Arc<L2Fib>> {
        self.reader.load()
    }

    pub fn set(&self, k: u64, interface: u32, is_static: bool, now: u32) {
        if self.reader.load().set(k, interface, is_static, now) {
            return;
        }
        self.rebuild(1);
        let ok = self.reader.load().set(k, interface, is_static, now);
        debug_assert!(ok, "a rebuilt table has room");
    }

    pub fn remove(&self, k: u64) -> bool {
        self.reader.load().remove(k)
    }

    /// Remove every entry `keep` refuses (given its key and whether it is static).
    pub fn retain(&self, mut keep: impl FnMut(u64, bool) -> bool) {
        let t = self.reader.load();
        let gone: Vec<u64> = t
            .entries()
            .filter(|&(k, _, st, _)| !keep(k, st))
            .map(|e| e.0)
            .collect();
        for k in gone {
            t.remove(k);
        }
    }

    /// Build a fresh table holding the live entries (and room for `more`), then publish it;
    /// the old one is freed when the last worker lets go of it.
    fn rebuild(&self, more: usize) {
        let old = self.reader.load_full();
        let live = old.live() + more;
        // At most half full after a rebuild (small enough to stay in cache longer, probes
        // short), and never smaller than before: rebuilds stay rare.
        let fresh = L2Fib::with_capacity(live.max(old.slots.len() / 2));
        for (k, i, st, seen) in old.entries() {
            fresh.set(k, i, st, seen);
        }
        self.reader.store(Arc::new(fresh));
    }
}

/// The MAC of a key.
pub fn key_mac(k: u64) -> MacAddress {
    let b = k.to_be_bytes();
    MacAddress([b[2], b[3], b[4], b[5], b[6], b[7]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn keys_keep_domain_and_mac_apart() {
        let m = [2, 0, 0, 0, 0, 1];
        assert_ne!(key(0, &m), key(1, &m));
        assert_eq!(key_mac(key(7, &m)).0, m);
        assert_ne!(key(0, &m), EMPTY);
        assert_ne!(key(u16::MAX - 1, &[0xfe; 6]), TOMBSTONE);
    }

    #[test]
    fn empty_table_is_small() {
        assert!(L2FibWriter::default().table().memory_bytes() <= 32 * 1024);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, u8, u32, bool),
        Remove(u8, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..3, any::<u8>(), 0u32..8, any::<bool>())
                .prop_map(|(b, m, i, s)| Op::Set(b, m, i, s)),
            (0u8..3, any::<u8>()).prop_map(|(b, m)| Op::Remove(b, m)),
        ]
    }

    proptest! {
        /// Any sequence of sets and removes (through rebuilds and growth) leaves the table
        /// answering as a `HashMap` does.
        #[test]
        fn matches_a_hashmap(ops in proptest::collection::vec(op(), 0..3000)) {
            let w = L2FibWriter::default();
            let mut model: HashMap<u64, (u32, bool)> = HashMap::new();
            for o in ops {
                match o {
                    Op::Set(b, m, i, s) => {
                        let k = key(b as u16, &[2, 0, 0, 0, b, m]);
                        w.set(k, i, s, 1);
                        model.insert(k, (i, s));
                    }
                    Op::Remove(b, m) => {
                        let k = key(b as u16, &[2, 0, 0, 0, b, m]);
                        prop_assert_eq!(w.remove(k), model.remove(&k).is_some());
                    }
                }
            }
            let t = w.table();
            prop_assert_eq!(t.live(), model.len());
            for b in 0..3u16 {
                for m in 0..=255u8 {
                    let k = key(b, &[2, 0, 0, 0, b as u8, m]);
                    let got = t.lookup(k).map(|h| (h.interface, h.is_static));
                    prop_assert_eq!(got, model.get(&k).copied());
                }
            }
        }
    }

    /// Readers probing while the writer adds, moves, removes and rebuilds only ever see an
    /// interface that key really had.
    #[test]
    fn readers_see_only_real_values_while_the_writer_works() {
        let w = L2FibWriter::default();
        let reader = w.reader();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let found = Arc::new(AtomicU64::new(0));
        let r = {
            let (stop, found) = (stop.clone(), found.clone());
            std::thread::spawn(move || {
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t = reader.load();
                    for m in 0..5000u32 {
                        let k = key(0, &[2, 0, 0, (m >> 16) as u8, (m >> 8) as u8, m as u8]);
                        if let Some(h) = t.lookup(k) {
                            // The writer only ever maps address m to m % 7 or m % 7 + 100.
                            assert!(h.interface == m % 7 || h.interface == m % 7 + 100);
                            seen += 1;
                        }
                    }
                    found.store(seen, Ordering::Relaxed);
                }
                seen
            })
        };
        // At least 20 rounds, and on until the reader has checked a good many hits.
        let mut round = 0u32;
        while round < 20 || (found.load(Ordering::Relaxed) < 100_000 && round < 100_000) {
            round += 1;
            for m in 0..5000u32 {
                let k = key(0, &[2, 0, 0, (m >> 16) as u8, (m >> 8) as u8, m as u8]);
                match (m + round) % 3 {
                    0 => w.set(k, m % 7, false, round),
                    1 => w.set(k, m % 7 + 100, false, round),
                    _ => {
                        w.remove(k);
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert!(r.join().unwrap() > 0);
    }
}
