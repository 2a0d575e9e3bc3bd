//! The one writer of a `Poptrie`: keeps it equal to the route table, in place, while workers
//! look up in it.
//!
//! A change remakes only what it touches. In the node whose stride the changed prefix ends
//! in, the children under the prefix are made anew from the route table (the others are kept,
//! their subtrees shared), into a new children array and leaves written in the room past
//! everything written so far. Then one word makes the change visible at `commit`: the node's
//! bases (where its children and leaves start) when its shape — which children are nodes,
//! where runs of leaves start — did not change; else its parent's bases, pointing at a copy of
//! the parent's children array holding the new node; or, for a slot's root, the top-level
//! entry. Each such word is stored with release ordering and read with acquire ordering, and
//! a node's shape never changes in place, so a reader walks either the old subtree or the new
//! one, both complete (see `poptrie/`). What was replaced is dead but stays where it is: a
//! reader may still be walking it.
//!
//! Most changes of a full table (a /24 or /48 added, removed or given another next hop, or a
//! shorter prefix whose next hop is pushed into the leaves of the nodes below it) keep every
//! node's shape and children: then nothing is written into the room, and `commit` stores the
//! changed leaves' next hops in place, before the other words, each in one word. A later
//! change of the same commit that makes that node anew (or a subtree holding it) carries those
//! next hops into its new leaves and forgets them, so that a reader still on the old node
//! never sees a change that was not committed whole.
//!
//! Dead space is reclaimed by building the whole trie again into a new one, which `commit`
//! reports so that the caller publishes it with one pointer swap; the old one is freed once
//! the last reader has let go of it. That happens when the room runs out (the room is half
//! the live size again), when dead entries outweigh live ones, when the table crosses between
//! small and full (see below), or for a change of a prefix that covers too many top-level
//! slots to remake one by one.

use super::poptrie::{root_nodes, Key, Poptrie, BLOCK_NODES, STRIDE};
use super::poptrie_build::{build_all, build_slot, Node, Subtrees};
use super::prefix::Prefix;
use super::routes::RouteTable;
use super::NO_ROUTE;
use crate::sys::fasthash::FastBuild;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

mod update;

/// Address bits the top level of a full table indexes: 18, so that an IPv4 /24 ends in the
/// first node (18 + 6).
pub(super) const TOP_BITS: u32 = 18;
/// The top level of a small table: 1 024 entries, 4 KiB, so that an empty table (a VRF with a
/// few routes) costs next to nothing. An IPv4 /24 then ends in the third node.
pub(super) const SMALL_TOP_BITS: u32 = 10;
/// Routes a small table holds at most before it is rebuilt with the full top level (and
/// half of it for the way back, so that a table near the line does not flip at each change).
pub(super) const SMALL_ROUTES: usize = 1024;
/// Top-level slots an update may rebuild one by one; a change of a shorter prefix than this
/// covers (an IPv4 /8 in a full table covers 1 024 slots) rebuilds the whole trie instead.
const MAX_SLOTS_PER_UPDATE: usize = 1 << 10;

/// A slot's root becomes a block of 64 nodes when a build finds at least this many of its 64
/// children are nodes: the lookups under it skip one level (an IPv6 /48 ends in the fourth
/// node instead of the fifth), for at most twice the nodes of those two levels.
pub const BLOCK_MIN: u32 = 32;

/// A `block_min` that makes no block: every slot's root a node (the trie before blocks).
pub const NO_BLOCKS: u32 = BLOCK_NODES + 1;

/// An IPv6 trie's shortcut leads to the nodes this many levels below the top level: in a
/// full table the nodes of bits 42–48, where a /48 ends, so that a lookup there reads the
/// shortcut, one node and a leaf (see `poptrie/`).
pub const SHORT_LEVELS: u32 = 4;

/// `short_levels` for a trie with no shortcut.
pub const NO_SHORTCUT: u32 = 0;

/// The dataplane's IPv6 trie (`FibWriter::new`, `with_routes`) has no shortcut: on this
/// project's machine it did not make table-hitting lookups faster (0.9–1.07x) and made those
/// that end above its depth half as fast (docs/fib.md). `sluice fib bench --fib shortcut`
/// measures it; the tests build it both ways.
pub(super) const DATAPLANE_SHORT_LEVELS: u32 = NO_SHORTCUT;

/// The shortcut's levels for a build with `block_min`: tests that make every subtree a block
/// (`block_min` 0) also take the shortcut one level down, where most lookups find it.
fn short_levels_for(block_min: u32) -> u32 {
    if block_min == 0 {
        1
    } else {
        SHORT_LEVELS
    }
}

/// Room for `used` entries and the updates that follow: half as many again, and some.
fn room(used: usize) -> usize {
    used + used / 2 + 64
}

/// What a trie holds and costs.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct TrieMemory {
    /// Bytes of the arrays (the room for updates included): what the trie occupies.
    pub bytes: usize,
    /// Bytes of the top level and of the nodes and leaves written so far.
    pub bytes_used: usize,
    /// Nodes and leaves a lookup can reach.
    pub nodes: usize,
    pub leaves: usize,
    /// Nodes and leaves left by updates, reclaimed by the next full rebuild.
    pub dead_nodes: usize,
    pub dead_leaves: usize,
    /// Whole-trie rebuilds since the writer was made.
    pub full_rebuilds: u64,
}

pub struct PoptrieWriter<A: Key> {
    trie: Arc<Poptrie<A>>,
    /// Nodes and leaves written so far, reachable or dead: new subtrees go after them.
    nodes_used: usize,
    leaves_used: usize,
    dead_nodes: usize,
    dead_leaves: usize,
    /// Top-level entries to store at the next commit, by slot.
    pending: BTreeMap<usize, u32>,
    /// Node bases to store at the next commit, by node.
    pending_bases: BTreeMap<u32, u64>,
    /// Next hops to store at the next commit into leaves a reader may be reading, by leaf:
    /// a change that leaves a node's shape and children as they were (see `update_path`).
    pending_leaves: BTreeMap<u32, u32>,
    /// The first leaf of each node with next hops pending: a node's leaves are its own (or
    /// shared with copies of it), so this says in one probe whether a node has any.
    pending_nodes: HashSet<u32, FastBuild>,
    /// `trie` is a new trie that readers do not have yet.
    replaced: bool,
    full_rebuilds: u64,
    /// Node children from which a build makes a slot's root a block (`BLOCK_MIN`; 0 in
    /// tests makes every subtree a block).
    block_min: u32,
    /// Levels below the top level the IPv6 shortcut leads to (`SHORT_LEVELS`; 0: none).
    short_levels: u32,
    /// Prefixes changed since the last commit, whose shortcut entries `commit` brings up to
    /// date.
    changed: Vec<Prefix<A>>,
    /// The buffers of the last update's subtrees (`scratch`).
    scratch: Subtrees,
}

impl<A: Key> Default for PoptrieWriter<A> {
    fn default() -> PoptrieWriter<A> {
        PoptrieWriter::build(&RouteTable::new())
    }
}

impl<A: Key> PoptrieWriter<A> {
    /// A trie of every route of `routes`: a small top level for up to `SMALL_ROUTES` routes,
    /// the full one above.
    pub fn build(routes: &RouteTable<A>) -> PoptrieWriter<A> {
        PoptrieWriter::build_blocks(routes, BLOCK_MIN)
    }

    /// As `build`, making a slot's root a block when it has at least `block_min` node
    /// children (65: never), then and at every whole rebuild.
    pub fn build_blocks(routes: &RouteTable<A>, block_min: u32) -> PoptrieWriter<A> {
        let bits = if routes.len() <= SMALL_ROUTES {
            SMALL_TOP_BITS
        } else {
            TOP_BITS
        };
        PoptrieWriter::build_with_blocks(routes, bits, block_min)
    }

    #[cfg(test)]
    pub(super) fn build_with(routes: &RouteTable<A>, top_bits: u32) -> PoptrieWriter<A> {
        PoptrieWriter::build_with_blocks(routes, top_bits, BLOCK_MIN)
    }

    pub(super) fn build_with_blocks(
        routes: &RouteTable<A>,
        top_bits: u32,
        block_min: u32,
    ) -> PoptrieWriter<A> {
        PoptrieWriter::build_variant(routes, top_bits, block_min, short_levels_for(block_min))
    }

    /// As `build_blocks`, with the IPv6 shortcut `short_levels` below the top level (0:
    /// none), then and at every whole rebuild.
    pub fn build_shortcut(
        routes: &RouteTable<A>,
        block_min: u32,
        short_levels: u32,
    ) -> PoptrieWriter<A> {
        let bits = if routes.len() <= SMALL_ROUTES {
            SMALL_TOP_BITS
        } else {
            TOP_BITS
        };
        PoptrieWriter::build_variant(routes, bits, block_min, short_levels)
    }

    fn build_variant(
        routes: &RouteTable<A>,
        top_bits: u32,
        block_min: u32,
        short_levels: u32,
    ) -> PoptrieWriter<A> {
        let (top, built) = build_all(routes, top_bits, block_min);
        let (nodes, leaves) = (built.nodes.len(), built.leaves.len());
        let mut trie = Poptrie::with_room(top_bits, &top, &built, room(nodes), room(leaves));
        // IPv6 only: an IPv4 lookup ends in the first node of a full table anyway.
        if A::BITS == 128 && short_levels > 0 {
            trie.add_shortcut(top_bits + short_levels * STRIDE);
        }
        PoptrieWriter {
            trie: Arc::new(trie),
            nodes_used: nodes,
            leaves_used: leaves,
            dead_nodes: 0,
            dead_leaves: 0,
            pending: BTreeMap::new(),
            pending_bases: BTreeMap::new(),
            pending_leaves: BTreeMap::new(),
            pending_nodes: HashSet::default(),
            replaced: false,
            full_rebuilds: 0,
            block_min,
            short_levels,
            changed: Vec::new(),
            scratch: Subtrees::default(),
        }
    }

    /// The trie as the writer has it: what readers see, plus changes not yet committed if it
    /// was replaced.
    pub fn trie(&self) -> &Arc<Poptrie<A>> {
        &self.trie
    }

    /// Bring the trie up to date after `changed` was added to, replaced in or removed from
    /// `routes` (which already holds the change). Visible to readers after `commit`. Returns
    /// whether it rebuilt the whole trie.
    pub fn update(&mut self, routes: &RouteTable<A>, changed: Prefix<A>) -> bool {
        let (bits, n) = (self.trie.top_bits(), routes.len());
        // A small table grown past its size, or a full one shrunk well below it, is built
        // again with the other top level.
        let resize = (bits == SMALL_TOP_BITS && n > SMALL_ROUTES)
            || (bits == TOP_BITS && n < SMALL_ROUTES / 2);
        if self.trie.short_depth() != 0 {
            // A whole rebuild below starts a new list.
            self.changed.push(changed);
        }
        let len = changed.len() as u32;
        let first = changed.addr().top(bits);
        let slots = if len >= bits {
            1
        } else {
            1usize << (bits - len)
        };
        if resize || slots > MAX_SLOTS_PER_UPDATE {
            self.rebuild(routes);
            return true;
        }
        let fits = if slots == 1 {
            self.update_path(routes, changed)
        } else {
            (first..first + slots).all(|slot| self.update_slot(routes, slot))
        };
        if !fits || routes.is_empty() {
            self.rebuild(routes);
            return true;
        }
        if self.dead_nodes * 2 > self.nodes_used || self.dead_leaves * 2 > self.leaves_used {
            self.rebuild(routes);
            return true;
        }
        false
    }

    /// The slot's entry as the writer has it: pending if changed since the last commit.
    fn entry(&self, slot: usize) -> u32 {
        match self.pending.get(&slot) {
            Some(&e) => e,
            None => self.trie.top_value(slot),
        }
    }

    /// Node `i` as the writer has it: with its pending bases, if any.
    fn node(&self, i: u32) -> Option<Node> {
        let mut n = self.trie.node(i)?;
        if let Some(&b) = self.pending_bases.get(&i) {
            (n.base_node, n.base_leaf) = (b as u32, (b >> 32) as u32);
        }
        Some(n)
    }

    /// `node`'s leaves as the writer has them, in order: from the trie, with the next hops
    /// pending in them, if any, looked up once for all of them.
    fn leaves_of(&self, node: Node) -> [u32; 64] {
        let runs = node.leafvec.count_ones();
        let mut leaves = [NO_ROUTE; 64];
        for (k, l) in leaves.iter_mut().enumerate().take(runs as usize) {
            *l = self.trie.leaf(node.base_leaf + k as u32);
        }
        if self.pending_nodes.contains(&node.base_leaf) {
            let end = node.base_leaf.saturating_add(runs);
            for (&i, &nh) in self.pending_leaves.range(node.base_leaf..end) {
                leaves[(i - node.base_leaf) as usize % 64] = nh;
            }
        }
        leaves
    }

    /// Forgets the next hops pending in `node`'s leaves: the node is replaced, and what
    /// replaces it was made with them.
    fn forget_leaves(&mut self, node: Node) {
        if !self.pending_nodes.remove(&node.base_leaf) {
            return;
        }
        let end = node.base_leaf.saturating_add(node.leafvec.count_ones());
        let gone: Vec<u32> = self
            .pending_leaves
            .range(node.base_leaf..end)
            .map(|(&i, _)| i)
            .collect();
        for i in gone {
            self.pending_leaves.remove(&i);
        }
    }

    /// The nodes and leaves of a subtree being replaced, forgetting the bases and next hops
    /// pending in it: a reader still on the old path must find it as of the last commit, not
    /// as of a change that a later change of this commit has undone.
    fn retire(&mut self, entry: u32) -> (usize, usize) {
        let mut gone = Vec::new();
        let size = self.walk(entry, |i, n| gone.push((i, n)));
        for (i, n) in gone {
            self.forget_leaves(n);
            self.pending_bases.remove(&i);
        }
        size
    }

    /// Visits every node of the subtree `entry` leads to; its nodes and leaves.
    fn walk(&self, entry: u32, mut visit: impl FnMut(u32, Node)) -> (usize, usize) {
        // Iterative, and bounded by the arrays, so a malformed trie cannot loop.
        let (mut nodes, mut leaves) = (0, 0);
        let mut stack: Vec<u32> = root_nodes(entry).collect();
        while let Some(i) = stack.pop() {
            let Some(n) = self.node(i) else { continue };
            visit(i, n);
            nodes += 1;
            leaves += n.leafvec.count_ones() as usize;
            if nodes > self.nodes_used {
                break;
            }
            stack.extend((0..n.vector.count_ones()).map(|k| n.base_node + k));
        }
        (nodes, leaves)
    }

    /// Nodes and leaves a lookup can reach, counted by walking the trie (tests compare it
    /// with the bookkeeping of `memory`).
    #[cfg(test)]
    pub(super) fn reachable(&self) -> (usize, usize) {
        (0..1usize << self.trie.top_bits())
            .map(|slot| self.walk(self.entry(slot), |_, _| {}))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    /// Empty buffers for subtrees built after everything written so far: the last update's,
    /// so that their allocations are reused.
    fn scratch(&mut self) -> Subtrees {
        let mut built = std::mem::take(&mut self.scratch);
        built.node_base = self.nodes_used;
        built.leaf_base = self.leaves_used;
        built.nodes.clear();
        built.leaves.clear();
        built
    }

    /// Writes `built` into the room, and keeps its buffers for the next update; false if it
    /// does not fit.
    fn place(&mut self, built: Subtrees) -> bool {
        let fits = self.trie.place(&built);
        if fits {
            self.nodes_used += built.nodes.len();
            self.leaves_used += built.leaves.len();
        }
        self.scratch = built;
        fits
    }

    /// Writes `slot`'s new subtree into the room; false if it does not fit.
    fn update_slot(&mut self, routes: &RouteTable<A>, slot: usize) -> bool {
        let mut built = self.scratch();
        let entry = build_slot(
            routes,
            slot,
            self.trie.top_bits(),
            self.block_min,
            &mut built,
        );
        if !self.place(built) {
            return false;
        }
        // What the slot leads to now (a subtree not yet committed, or the readers' one) is
        // dead once the new entry is stored.
        let (n, l) = self.retire(self.entry(slot));
        self.dead_nodes += n;
        self.dead_leaves += l;
        self.pending.insert(slot, entry);
        true
    }

    /// Build the whole trie again from `routes` (after changes made to them without
    /// `update`); `commit` hands it over for publication.
    pub fn rebuild_all(&mut self, routes: &RouteTable<A>) {
        self.changed.clear();
        self.rebuild(routes);
    }

    /// A new trie of `routes`, which `commit` hands over for publication.
    fn rebuild(&mut self, routes: &RouteTable<A>) {
        let full_rebuilds = self.full_rebuilds + 1;
        let bits = if routes.len() <= SMALL_ROUTES {
            SMALL_TOP_BITS
        } else {
            TOP_BITS
        };
        *self = PoptrieWriter::build_variant(routes, bits, self.block_min, self.short_levels);
        self.full_rebuilds = full_rebuilds;
        self.replaced = true;
    }

    /// Stores the pending top-level entries. Returns true when the trie was rebuilt since the
    /// last commit: readers have the old one until the caller publishes `trie()`.
    ///
    /// Then the shortcut's entries under the prefixes changed since the last commit are
    /// brought up to date: each is set to the node a walk from the top now finds, and those
    /// whose node is gone are removed. An entry under no changed prefix may lead to a copy of
    /// its node left behind by a change beside it (a sibling's array copied), which answers as
    /// the node does until something under the entry's key changes, and then the entry is
    /// set again. Readers meanwhile find the old entry (the old subtree, still complete) or
    /// the new one, as for any word a commit stores.
    pub fn commit(&mut self) -> bool {
        let mut changed = std::mem::take(&mut self.changed);
        changed.sort_unstable();
        changed.dedup();
        // The keys readers can find now, before the new words.
        let mut before = Vec::new();
        for &p in &changed {
            self.trie.short_nodes(p, |key, _| before.push(key));
        }
        // Leaves first: one that a later change of this commit copied into new leaves has
        // been forgotten, so what is stored here changes nothing a new word leads to.
        for (&leaf, &nh) in &self.pending_leaves {
            self.trie.set_leaf(leaf, nh);
        }
        for (&node, &bases) in &self.pending_bases {
            self.trie.set_bases(node, bases);
        }
        for (&slot, &entry) in &self.pending {
            self.trie.set_top(slot, entry);
        }
        self.pending.clear();
        self.pending_bases.clear();
        self.pending_leaves.clear();
        self.pending_nodes.clear();
        let mut after = Vec::new();
        for &p in &changed {
            self.trie.short_nodes(p, |key, node| {
                self.trie.short_set(key, node);
                after.push(key);
            });
        }
        if !before.is_empty() {
            after.sort_unstable();
            for key in before {
                if after.binary_search(&key).is_err() {
                    self.trie.short_remove(key);
                }
            }
        }
        std::mem::take(&mut self.replaced)
    }

    pub fn memory(&self) -> TrieMemory {
        let top = 4usize << self.trie.top_bits();
        TrieMemory {
            bytes: self.trie.memory_bytes(),
            bytes_used: top + self.nodes_used * 24 + self.leaves_used * 4 + self.trie.short_bytes(),
            nodes: self.nodes_used - self.dead_nodes,
            leaves: self.leaves_used - self.dead_leaves,
            dead_nodes: self.dead_nodes,
            dead_leaves: self.dead_leaves,
            full_rebuilds: self.full_rebuilds,
        }
    }

    /// Slots whose root is a block (tests: a block has one node fewer than a root node with
    /// its 64 children).
    #[cfg(test)]
    pub(super) fn blocks(&self) -> usize {
        use super::{poptrie::BLOCK, CHILD};
        (0..1usize << self.trie.top_bits())
            .filter(|&slot| self.entry(slot) & (CHILD | BLOCK) == CHILD | BLOCK)
            .count()
    }

    /// Bits the top level indexes (10 for a small table, 18 for a full one).
    pub fn top_bits(&self) -> u32 {
        self.trie.top_bits()
    }
}
