//! Sessions per source in one worker's table, for `[sessions] per-source`: how many of the
//! table's sessions each address opened (the sender of a session's first packet), so that
//! one host cannot take the whole table.
//!
//! Open addressing with linear probing and backward-shift deletion, made with the table and
//! never grown: twice as many entries as the table has slots, so it is at most half full
//! (every source counted holds a slot) and a probe ends soon. Only the table's owner reads
//! and writes it; the fields are atomics because the table is shared with the other
//! workers (who never look here), not for ordering.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default)]
struct Entry {
    lo: AtomicU64,
    hi: AtomicU64,
    /// 0 when free; else the source's family and routing table (`Sources::id`, bits 32 and
    /// up) and its sessions (the low 32 bits).
    meta: AtomicU64,
}

pub(super) struct Sources {
    entries: Box<[Entry]>,
    seed: u64,
}

/// A source: its address and its `Sources::id`.
pub(super) type Source = (u128, u64);

impl Sources {
    /// Counts for a table of `slots` session slots.
    pub(super) fn new(slots: usize, seed: u64) -> Sources {
        let n = (2 * slots).next_power_of_two();
        Sources {
            entries: (0..n).map(|_| Entry::default()).collect(),
            seed,
        }
    }

    /// Bytes of the counts.
    pub(super) fn memory_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.entries)
    }

    /// The family and routing table of a source, as an entry keeps them (never 0).
    pub(super) fn id(ipv6: bool, table: u16) -> u64 {
        1 << 20 | (ipv6 as u64) << 16 | table as u64
    }

    fn home(&self, (addr, id): Source) -> usize {
        let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        let h = mix(mix(mix(self.seed, addr as u64), (addr >> 64) as u64), id);
        (h ^ h >> 32) as usize & (self.entries.len() - 1)
    }

    fn key_at(&self, i: usize) -> Source {
        let e = &self.entries[i];
        let addr = e.lo.load(Relaxed) as u128 | (e.hi.load(Relaxed) as u128) << 64;
        (addr, e.meta.load(Relaxed) >> 32)
    }

    /// Where `s` is counted, or the free entry where it would go.
    fn place(&self, s: Source) -> (usize, bool) {
        let mask = self.entries.len() - 1;
        let mut i = self.home(s);
        // At most half full: a free entry is always found.
        loop {
            let meta = self.entries[i].meta.load(Relaxed);
            if meta == 0 {
                return (i, false);
            }
            if self.key_at(i) == s {
                return (i, true);
            }
            i = (i + 1) & mask;
        }
    }

    /// The sessions `s` holds.
    pub(super) fn count(&self, s: Source) -> u32 {
        match self.place(s) {
            (i, true) => self.entries[i].meta.load(Relaxed) as u32,
            _ => 0,
        }
    }

    /// One more session of `s`.
    pub(super) fn add(&self, s: Source) {
        let (i, found) = self.place(s);
        let e = &self.entries[i];
        if found {
            e.meta.store(e.meta.load(Relaxed) + 1, Relaxed);
        } else {
            e.lo.store(s.0 as u64, Relaxed);
            e.hi.store((s.0 >> 64) as u64, Relaxed);
            e.meta.store(s.1 << 32 | 1, Relaxed);
        }
    }

    /// One session of `s` fewer; its entry is freed at none.
    pub(super) fn sub(&self, s: Source) {
        let (mut i, true) = self.place(s) else {
            return;
        };
        let meta = self.entries[i].meta.load(Relaxed);
        if meta as u32 > 1 {
            self.entries[i].meta.store(meta - 1, Relaxed);
            return;
        }
        // Backward shift: move up each later entry of the run that may sit where i is, so
        // that every entry stays reachable from its home without tombstones.
        let mask = self.entries.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let m = self.entries[j].meta.load(Relaxed);
            if m == 0 {
                break;
            }
            let home = self.home(self.key_at(j));
            // Whether home lies cyclically in (i, j]: then j's entry must stay.
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if stays {
                continue;
            }
            let (from, to) = (&self.entries[j], &self.entries[i]);
            to.lo.store(from.lo.load(Relaxed), Relaxed);
            to.hi.store(from.hi.load(Relaxed), Relaxed);
            to.meta.store(m, Relaxed);
            i = j;
        }
        self.entries[i].meta.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn counts_agree_with_a_map_through_adds_and_removes() {
        let s = Sources::new(64, 7);
        let mut model: HashMap<Source, u32> = HashMap::new();
        let mut x = 99u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few addresses, so that runs form and entries are shifted back.
            let src: Source = (
                (x % 40) as u128 * 0x1_0000_0001,
                Sources::id(x >> 8 & 1 != 0, 0),
            );
            let held: u32 = model.values().sum();
            let n = model.entry(src).or_default();
            if (x >> 20) & 1 == 0 && held < 64 {
                s.add(src);
                *n += 1;
            } else if *n > 0 {
                s.sub(src);
                *n -= 1;
            }
            assert_eq!(s.count(src), *n);
        }
        for (src, n) in &model {
            assert_eq!(s.count(*src), *n, "{src:?}");
        }
    }
}
