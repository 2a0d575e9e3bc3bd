//! Publication: how workers read the FIB without locks while the control plane changes it,
//! with one copy of each lookup structure.
//!
//! Workers take the current `Fib` (both families' tries) from an `ArcSwap` once per frame and
//! drop it at the end of the frame: the end of a graph pass is their quiescent point. Most
//! commits change the tries in place (`PoptrieWriter`: new subtrees written into spare room,
//! then one store per changed top-level entry), so the `Fib` stays the same and nothing is
//! copied. When a trie is rebuilt whole (its room ran out, dead entries outweighed live ones, a
//! short prefix changed, the table grew past or shrank below the small size), `commit`
//! publishes a new `Fib` with one pointer swap and keeps the old one on a retired list; the
//! writer frees it once no reader holds it any more (`Arc::strong_count`: arc-swap turns
//! every guard still outstanding at the swap into a count), so a worker never reads freed
//! memory and never frees a table itself.
//!
//! What a reader sees: every commit up to the generation it read before loading the table;
//! a frame that overlaps a commit may see some of that commit's top-level entries and not
//! others, each lookup walking a complete subtree (old or new).

use super::poptrie::{Key, Poptrie4, Poptrie6};
use super::poptrie_writer::{PoptrieWriter, TrieMemory, BLOCK_MIN, DATAPLANE_SHORT_LEVELS};
use super::prefix::{Prefix, Prefix4, Prefix6};
use super::routes::RouteTable;
use super::MAX_NEXT_HOP;
use arc_swap::{ArcSwap, Guard};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

/// Both families' lookup tables.
pub struct Fib {
    v4: Arc<Poptrie4>,
    v6: Arc<Poptrie6>,
}

impl Fib {
    pub fn v4(&self) -> &Poptrie4 {
        &self.v4
    }

    pub fn v6(&self) -> &Poptrie6 {
        &self.v6
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FibError {
    /// Next hops are 31-bit; `NO_ROUTE` and values with the top bit set are reserved.
    NextHopTooLarge(u32),
}

impl fmt::Display for FibError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FibError::NextHopTooLarge(nh) => {
                write!(f, "next hop {nh} is larger than {MAX_NEXT_HOP}")
            }
        }
    }
}

impl std::error::Error for FibError {}

pub fn check_next_hop(nh: u32) -> Result<(), FibError> {
    if nh > MAX_NEXT_HOP {
        Err(FibError::NextHopTooLarge(nh))
    } else {
        Ok(())
    }
}

/// After `routes` changed at `p`: the family's trie follows now, or is rebuilt whole at the
/// commit when changes are deferred or it is already stale.
fn follow<A: Key>(
    trie: &mut PoptrieWriter<A>,
    stale: &mut bool,
    deferred: bool,
    routes: &RouteTable<A>,
    p: Prefix<A>,
) {
    if deferred || *stale {
        *stale = true;
    } else {
        trie.update(routes, p);
    }
}

/// Bytes used, by structure.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct FibMemory {
    pub v4: TrieMemory,
    pub v6: TrieMemory,
    /// Estimated size of the route tables (control-plane truth).
    pub routes: usize,
    /// Replaced tables some reader still held at the last commit.
    pub retired: usize,
}

impl FibMemory {
    pub fn total(&self) -> usize {
        self.v4.bytes + self.v6.bytes + self.routes + self.retired
    }
}

/// The control plane's handle: the only one that changes the FIB. Changes become visible to
/// readers at `commit`.
pub struct FibWriter {
    routes4: RouteTable<u32>,
    routes6: RouteTable<u128>,
    trie4: PoptrieWriter<u32>,
    trie6: PoptrieWriter<u128>,
    shared: Arc<ArcSwap<Fib>>,
    generation: Arc<AtomicU64>,
    /// Replaced tables, freed once no reader holds them.
    retired: Vec<Arc<Fib>>,
    dirty: bool,
    /// Changes touch only the route tables (`set_deferred`), and a trie whose table changed
    /// so is built anew at the next commit.
    deferred: bool,
    stale4: bool,
    stale6: bool,
}

/// A worker's handle. Cloning is cheap; each worker keeps its own.
#[derive(Clone)]
pub struct FibReader {
    shared: Arc<ArcSwap<Fib>>,
    generation: Arc<AtomicU64>,
}

impl FibReader {
    /// The current table, pinned until the guard is dropped. Take it once per frame.
    pub fn load(&self) -> Guard<Arc<Fib>> {
        self.shared.load()
    }

    /// The current table as an owned `Arc`, for offline tools. While it is held, a table it
    /// replaces stays allocated.
    pub fn load_full(&self) -> Arc<Fib> {
        self.shared.load_full()
    }

    /// Commits so far. A table loaded after reading `g` reflects at least commit `g`.
    pub fn generation(&self) -> u64 {
        self.generation.load(Acquire)
    }

    pub fn lookup4_batch(&self, dst: &[u32], out: &mut [u32]) {
        self.load().v4.lookup_batch(dst, out)
    }

    pub fn lookup6_batch(&self, dst: &[u128], out: &mut [u32]) {
        self.load().v6.lookup_batch(dst, out)
    }
}

impl Default for FibWriter {
    fn default() -> FibWriter {
        FibWriter::new()
    }
}

impl FibWriter {
    /// An empty FIB, already published (every lookup gives `NO_ROUTE`).
    pub fn new() -> FibWriter {
        FibWriter::from_tables(
            RouteTable::new(),
            RouteTable::new(),
            BLOCK_MIN,
            DATAPLANE_SHORT_LEVELS,
        )
    }

    /// A FIB loaded with these routes and published; later duplicates replace earlier ones.
    /// Faster than `add` + `commit` for a full table: one build.
    pub fn with_routes(
        v4: impl IntoIterator<Item = (Prefix4, u32)>,
        v6: impl IntoIterator<Item = (Prefix6, u32)>,
    ) -> Result<FibWriter, FibError> {
        FibWriter::with_routes_variant(v4, v6, BLOCK_MIN, DATAPLANE_SHORT_LEVELS)
    }

    /// As `with_routes`, the tries making a slot's root a block of nodes when it has at least
    /// `block_min` node children (tests: 0, every slot with a subtree), and the IPv6 trie with
    /// its shortcut (one level below the top with `block_min` 0), so that the tests check it.
    #[cfg(test)]
    pub(super) fn with_routes_blocks(
        v4: impl IntoIterator<Item = (Prefix4, u32)>,
        v6: impl IntoIterator<Item = (Prefix6, u32)>,
        block_min: u32,
    ) -> Result<FibWriter, FibError> {
        let levels = if block_min == 0 {
            1
        } else {
            super::poptrie_writer::SHORT_LEVELS
        };
        FibWriter::with_routes_variant(v4, v6, block_min, levels)
    }

    /// As `with_routes_blocks`, the IPv6 trie with its shortcut `short_levels` below the top
    /// level (0: none; `sluice fib bench` measures the trie without it).
    pub fn with_routes_variant(
        v4: impl IntoIterator<Item = (Prefix4, u32)>,
        v6: impl IntoIterator<Item = (Prefix6, u32)>,
        block_min: u32,
        short_levels: u32,
    ) -> Result<FibWriter, FibError> {
        let (v4, v6): (Vec<_>, Vec<_>) = (v4.into_iter().collect(), v6.into_iter().collect());
        if let Some(&(_, nh)) = v4.iter().find(|r| r.1 > MAX_NEXT_HOP) {
            check_next_hop(nh)?;
        }
        if let Some(&(_, nh)) = v6.iter().find(|r| r.1 > MAX_NEXT_HOP) {
            check_next_hop(nh)?;
        }
        let routes4 = RouteTable::from_routes(v4);
        let routes6 = RouteTable::from_routes(v6);
        Ok(FibWriter::from_tables(
            routes4,
            routes6,
            block_min,
            short_levels,
        ))
    }

    fn from_tables(
        routes4: RouteTable<u32>,
        routes6: RouteTable<u128>,
        block_min: u32,
        short_levels: u32,
    ) -> FibWriter {
        let trie4 = PoptrieWriter::build_blocks(&routes4, block_min);
        let trie6 = PoptrieWriter::build_shortcut(&routes6, block_min, short_levels);
        let fib = Fib {
            v4: trie4.trie().clone(),
            v6: trie6.trie().clone(),
        };
        FibWriter {
            routes4,
            routes6,
            trie4,
            trie6,
            shared: Arc::new(ArcSwap::from_pointee(fib)),
            generation: Arc::new(AtomicU64::new(0)),
            retired: Vec::new(),
            dirty: false,
            deferred: false,
            stale4: false,
            stale6: false,
        }
    }

    pub fn reader(&self) -> FibReader {
        FibReader {
            shared: self.shared.clone(),
            generation: self.generation.clone(),
        }
    }

    /// With `on`, changes until the next commit touch only the route tables, and the commit
    /// builds each trie whose table changed anew, once (0.1–0.3 s for a full table): cheaper
    /// than remaking the trie change by change when a batch changes a good part of a table,
    /// such as a full table arriving. The commit turns it off.
    pub fn set_deferred(&mut self, on: bool) {
        self.deferred = on;
    }

    /// Adds or replaces a route; returns the next hop it replaced. Visible after `commit`.
    pub fn add4(&mut self, p: Prefix4, next_hop: u32) -> Result<Option<u32>, FibError> {
        self.routes4.add(p, next_hop, |routes| {
            follow(&mut self.trie4, &mut self.stale4, self.deferred, routes, p);
            self.dirty = true;
        })
    }

    /// Removes a route; addresses it covered fall back to its covering route. Returns the
    /// removed next hop, `None` if there was no such route. Visible after `commit`.
    pub fn del4(&mut self, p: Prefix4) -> Option<u32> {
        let old = self.routes4.remove(p)?;
        follow(
            &mut self.trie4,
            &mut self.stale4,
            self.deferred,
            &self.routes4,
            p,
        );
        self.dirty = true;
        Some(old)
    }

    /// IPv6 `add4`.
    pub fn add6(&mut self, p: Prefix6, next_hop: u32) -> Result<Option<u32>, FibError> {
        self.routes6.add(p, next_hop, |routes| {
            follow(&mut self.trie6, &mut self.stale6, self.deferred, routes, p);
            self.dirty = true;
        })
    }

    /// IPv6 `del4`.
    pub fn del6(&mut self, p: Prefix6) -> Option<u32> {
        let old = self.routes6.remove(p)?;
        follow(
            &mut self.trie6,
            &mut self.stale6,
            self.deferred,
            &self.routes6,
            p,
        );
        self.dirty = true;
        Some(old)
    }

    /// Commits published so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(Relaxed)
    }

    /// Publishes the changes made since the last commit and returns the generation now
    /// visible to readers. Never waits for readers.
    pub fn commit(&mut self) -> u64 {
        let generation = self.generation.load(Relaxed);
        self.deferred = false;
        if std::mem::take(&mut self.stale4) {
            self.trie4.rebuild_all(&self.routes4);
        }
        if std::mem::take(&mut self.stale6) {
            self.trie6.rebuild_all(&self.routes6);
        }
        if !self.dirty {
            self.reclaim();
            return generation;
        }
        let new4 = self.trie4.commit();
        let new6 = self.trie6.commit();
        if new4 || new6 {
            let fib = Fib {
                v4: self.trie4.trie().clone(),
                v6: self.trie6.trie().clone(),
            };
            let old = self.shared.swap(Arc::new(fib));
            self.retired.push(old);
        }
        self.dirty = false;
        // After the entries and the swap: a reader that sees this generation sees them.
        self.generation.store(generation + 1, Release);
        self.reclaim();
        generation + 1
    }

    /// Frees the replaced tables no reader holds any more; returns how many are still held.
    pub fn reclaim(&mut self) -> usize {
        self.retired.retain(|f| Arc::strong_count(f) > 1);
        self.retired.len()
    }

    /// The routes as the writer knows them (including changes not yet committed).
    pub fn routes4(&self) -> &RouteTable<u32> {
        &self.routes4
    }

    pub fn routes6(&self) -> &RouteTable<u128> {
        &self.routes6
    }

    pub fn memory(&self) -> FibMemory {
        let retired = self
            .retired
            .iter()
            .map(|f| {
                // A trie the current table still shares is counted there.
                let v4 = !Arc::ptr_eq(&f.v4, self.trie4.trie());
                let v6 = !Arc::ptr_eq(&f.v6, self.trie6.trie());
                v4 as usize * f.v4.memory_bytes() + v6 as usize * f.v6.memory_bytes()
            })
            .sum();
        FibMemory {
            v4: self.trie4.memory(),
            v6: self.trie6.memory(),
            routes: self.routes4.approx_memory_bytes() + self.routes6.approx_memory_bytes(),
            retired,
        }
    }
}
