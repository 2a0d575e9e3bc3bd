//! Longest-prefix match in a compressed multibit trie, after Poptrie (Asai and Ohara,
//! SIGCOMM 2015), for IPv4 (`Poptrie4`) and IPv6 (`Poptrie6`): a direct-indexed top level
//! (18 bits, or 10 for a small table), then nodes of 6-bit strides. A node stores no array of
//! 64 children: one bitmap says which children are nodes, another where a run of equal leaves
//! begins, and a child or leaf is found by counting the set bits below its index (one
//! `popcnt`). Children of a node sit next to each other, as do its leaves, so a node is 24
//! bytes whatever its fan-out, and a full IPv4 table fits in about 14 MiB instead of
//! DIR-24-8's 64 MiB.
//!
//! A slot whose root node would have at least half of its 64 children as nodes (the dense
//! /18s of an IPv6 table) has a block instead: its 64 children as nodes side by side, the
//! entry marked `BLOCK`, so that a lookup finds the next node by the address's next 6 bits
//! without reading the root: an IPv6 /48 ends in the fourth node, not the fifth.
//!
//! This is the readers' side: the arrays, and lookups that any number of workers run at once.
//! One writer (`PoptrieWriter`) changes the trie while they read, in place: new nodes and
//! leaves are written into spare room past every node and leaf a reader can reach, then one
//! word that leads to them — a top-level entry, or a node's bases — is stored with release
//! ordering, which a reader loads with acquire ordering (plain loads on x86). A node's maps,
//! once reachable, are never written again, and a node's bases change only to children and
//! leaves of the same shape, so every lookup walks either the old subtree or the new one, both
//! complete. A leaf is one word: a change that keeps every node's shape and children stores the
//! new next hop into it in place at commit, and a reader finds the old next hop or the new one.
//! Every cell is an atomic so that this is sound in safe Rust; relaxed loads compile to the
//! same instructions as plain ones.
//!
//! One generic trie over `Key` (the top-level index and the 6-bit chunks of a `u32` or a
//! `u128`), monomorphized for each family.

use super::mem::{huge_vec, prefetch};
use super::poptrie_build::{Node, Subtrees};
use super::poptrie_writer::{SMALL_TOP_BITS, TOP_BITS};
use super::prefix::{Addr, Prefix};
use super::{CHILD, NO_ROUTE};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

/// Address bits each node consumes.
pub(super) const STRIDE: u32 = 6;
/// Addresses ahead the batched lookup prefetches its top-level entry.
const AHEAD: usize = 16;
/// Addresses looked up together, level by level: a frame of the dataplane.
const FRAME: usize = 256;

/// An address as the trie walks it.
pub trait Key: Addr {
    /// Its first `bits` bits: the top-level index.
    fn top(self, bits: u32) -> usize;
    /// The 6 bits from bit `depth` (0 = most significant), zeros past the last bit.
    fn chunk(self, depth: u32) -> u32;
    /// The address whose first `bits` bits are `slot`, the others zero.
    fn of_slot(slot: usize, bits: u32) -> Self;
    /// The 64 bits from bit `depth` on, zeros past the last bit: a batch walks an IPv6 lane
    /// past its first 64 bits on such a word (nine levels, its low 8 bits then holding the
    /// lane's number), shifting it, instead of shifting the whole address at each.
    fn window(self, depth: u32) -> u64;
    /// The first 64 bits (`window(0)`): the whole of an IPv4 address, then zeros; the half
    /// of an IPv6 address that a /64 or shorter route ends in. One load, no 128-bit shift.
    fn hi(self) -> u64;
}

impl Key for u32 {
    #[inline(always)]
    fn top(self, bits: u32) -> usize {
        (self >> (32 - bits)) as usize
    }
    #[inline(always)]
    fn chunk(self, depth: u32) -> u32 {
        ((((self as u64) << 32) << depth) >> (64 - STRIDE)) as u32
    }
    fn of_slot(slot: usize, bits: u32) -> u32 {
        (slot as u32) << (32 - bits)
    }
    #[inline(always)]
    fn window(self, depth: u32) -> u64 {
        ((self as u64) << 32).checked_shl(depth).unwrap_or(0)
    }
    #[inline(always)]
    fn hi(self) -> u64 {
        (self as u64) << 32
    }
}

impl Key for u128 {
    #[inline(always)]
    fn top(self, bits: u32) -> usize {
        (self >> (128 - bits)) as usize
    }
    #[inline(always)]
    fn chunk(self, depth: u32) -> u32 {
        match self.checked_shl(depth) {
            Some(v) if depth < 128 => (v >> (128 - STRIDE)) as u32,
            _ => 0,
        }
    }
    fn of_slot(slot: usize, bits: u32) -> u128 {
        (slot as u128) << (128 - bits)
    }
    #[inline(always)]
    fn window(self, depth: u32) -> u64 {
        (self.checked_shl(depth).unwrap_or(0) >> 64) as u64
    }
    #[inline(always)]
    fn hi(self) -> u64 {
        (self >> 64) as u64
    }
}

/// The IPv4 trie.
pub type Poptrie4 = Poptrie<u32>;
/// The IPv6 trie: /48s end in the fifth node (18 + 5 × 6), host routes in the nineteenth.
pub type Poptrie6 = Poptrie<u128>;

/// A node as the readers see it: `vector`, `leafvec`, and both bases in one word (node base
/// low, leaf base high).
#[derive(Default)]
struct AtomicNode {
    vector: AtomicU64,
    leafvec: AtomicU64,
    bases: AtomicU64,
}

/// A node no lane reaches: what the batched lookup's unused lane cells point at.
static EMPTY_NODE: AtomicNode = AtomicNode {
    vector: AtomicU64::new(0),
    leafvec: AtomicU64::new(0),
    bases: AtomicU64::new(0),
};
/// A leaf no lane reaches, likewise.
static EMPTY_LEAF: AtomicU32 = AtomicU32::new(NO_ROUTE);

/// A lookup of the batch still walking nodes: 16 bytes.
#[derive(Clone, Copy)]
struct Lane<'a> {
    /// The address from the node's depth on, left-aligned (its next chunk is the top 6
    /// bits), the lane's number in the frame in `LANE_BITS` below it.
    win: u64,
    /// The node it is at, found in the array (so read without another bounds check).
    node: &'a AtomicNode,
}

/// Bits of a lane's number: a frame has 256 lanes.
const LANE_BITS: u32 = 8;
const LANE_MASK: u64 = (1 << LANE_BITS) - 1;
const _: () = assert!(FRAME == 1 << LANE_BITS);

/// A lookup of the batch that ended at a leaf, to be read in the last pass.
#[derive(Clone, Copy)]
struct LeafLane<'a> {
    leaf: &'a AtomicU32,
    lane: u8,
}

/// The batched lookup's lane lists before the frame's first pass.
static NO_LANES: [Lane<'static>; FRAME] = [Lane {
    win: 0,
    node: &EMPTY_NODE,
}; FRAME];
static NO_LEAF_LANES: [LeafLane<'static>; FRAME] = [LeafLane {
    leaf: &EMPTY_LEAF,
    lane: 0,
}; FRAME];

/// What `Poptrie::profile` found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Lookups by the number of nodes they read (0: the top-level entry was the answer);
    /// each then reads a leaf.
    pub lookups_by_nodes: Vec<usize>,
    /// Reachable nodes at each level (0: the slots' roots).
    pub nodes_by_level: Vec<usize>,
    /// Of those, the nodes with exactly one node child.
    pub one_child_by_level: Vec<usize>,
    /// Leaves of the nodes at each level.
    pub leaves_by_level: Vec<usize>,
    /// Slots whose root is a block of 64 nodes.
    pub blocks: usize,
    /// Lookups that the shortcut took to a node (they read neither the top level nor the
    /// nodes above it; `lookups_by_nodes` counts the nodes they read from there).
    pub shortcut_hits: usize,
}

/// In a top-level entry that links to nodes (`CHILD`): the slot's root is a block of 64
/// nodes, one per value of the next 6 bits, found by position instead of through a node's
/// maps. Node indices stay below this bit.
pub(super) const BLOCK: u32 = 0x4000_0000;
/// The node index in a top-level entry.
pub(super) const INDEX: u32 = !(CHILD | BLOCK);
/// Nodes in a block.
pub(super) const BLOCK_NODES: u32 = 1 << STRIDE;

/// The nodes a top-level entry leads to: none (a leaf), its root, or its block's 64.
pub(super) fn root_nodes(entry: u32) -> std::ops::Range<u32> {
    let first = entry & INDEX;
    match entry & (CHILD | BLOCK) {
        e if e == CHILD | BLOCK => first..first + BLOCK_NODES,
        CHILD => first..first + 1,
        _ => 0..0,
    }
}

/// Bits of a shortcut entry that hold the node index; the key (the address's first
/// `short_depth` bits, at most `SHORT_KEY_BITS`) is above them.
const SHORT_INDEX_BITS: u32 = 22;
/// The longest key a shortcut entry holds: an IPv6 /42.
pub(super) const SHORT_KEY_BITS: u32 = 64 - SHORT_INDEX_BITS;
const SHORT_INDEX: u64 = (1 << SHORT_INDEX_BITS) - 1;
/// A shortcut cell never written.
const SHORT_EMPTY: u64 = u64::MAX;
/// A shortcut cell whose entry was removed: probes go on past it.
const SHORT_GONE: u64 = u64::MAX - 1;
/// Node indices a shortcut entry can hold (the two above are not entries).
const SHORT_MAX_NODE: u32 = SHORT_INDEX as u32 - 2;
/// Cells a shortcut probe looks at, from the key's home cell on: a key that finds no room
/// among them gets no entry (its lookups walk from the top).
const SHORT_PROBES: usize = 8;

/// The lookup table of one family.
pub struct Poptrie<A: Key> {
    /// Bits the top level indexes.
    top_bits: u32,
    /// A next hop, or `CHILD | node index`, per slot.
    top: Box<[AtomicU32]>,
    nodes: Box<[AtomicNode]>,
    /// Next hops.
    leaves: Box<[AtomicU32]>,
    /// The shortcut (IPv6): a hash table from an address's first `short_depth` bits to the
    /// node at that depth on its path, `key << SHORT_INDEX_BITS | node` per cell, open
    /// addressing with linear probing. A lookup that finds its key starts there, skipping the
    /// top level and the nodes above; one that does not walks from the top. Empty: none.
    short: Box<[AtomicU64]>,
    /// Depth of the nodes the shortcut leads to (0: no shortcut).
    short_depth: u32,
    /// `64 - log2(short.len())`: the hash's shift.
    short_shift: u32,
    _family: std::marker::PhantomData<A>,
}

/// The home cell of a shortcut key (Fibonacci hashing).
#[inline(always)]
fn short_home(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize
}

/// The bits of `mask` at and below bit `i`.
#[inline(always)]
pub(super) fn upto(mask: u64, i: u32) -> u32 {
    (mask & ((2u64 << i).wrapping_sub(1))).count_ones()
}

impl<A: Key> Poptrie<A> {
    /// A trie whose top level is `top` (2^`top_bits` values), with room for `node_room` nodes
    /// and `leaf_room` leaves, holding `built` (numbered from 0).
    pub(super) fn with_room(
        top_bits: u32,
        top: &[u32],
        built: &Subtrees,
        node_room: usize,
        leaf_room: usize,
    ) -> Poptrie<A> {
        debug_assert_eq!(top.len(), 1 << top_bits);
        let mut it = top.iter();
        let t = Poptrie {
            top_bits,
            top: huge_vec(top.len(), || {
                AtomicU32::new(*it.next().unwrap_or(&NO_ROUTE))
            })
            .into_boxed_slice(),
            nodes: huge_vec(node_room.max(built.nodes.len()), AtomicNode::default)
                .into_boxed_slice(),
            leaves: huge_vec(leaf_room.max(built.leaves.len()), || {
                AtomicU32::new(NO_ROUTE)
            })
            .into_boxed_slice(),
            short: Box::new([]),
            short_depth: 0,
            short_shift: 64,
            _family: std::marker::PhantomData,
        };
        t.place(built);
        t
    }

    /// Gives the trie a shortcut to its nodes at `depth` (a node depth, deeper than the top
    /// level and at most `SHORT_KEY_BITS`), sized for three times the nodes there are now,
    /// and fills it. Before the trie is shared.
    pub(super) fn add_shortcut(&mut self, depth: u32) {
        if depth <= self.top_bits
            || depth > SHORT_KEY_BITS
            || depth > A::BITS as u32
            || !(depth - self.top_bits).is_multiple_of(STRIDE)
        {
            return;
        }
        self.short_depth = depth;
        let all = Prefix::containing(A::of_slot(0, self.top_bits), 0);
        let mut count = 0usize;
        self.short_nodes(all, |_, _| count += 1);
        let cells = (3 * count).max(64).next_power_of_two();
        self.short = huge_vec(cells, || AtomicU64::new(SHORT_EMPTY)).into_boxed_slice();
        self.short_shift = 64 - cells.trailing_zeros();
        self.short_nodes(all, |key, node| {
            self.short_set(key, node);
        });
    }

    /// Bytes of the shortcut.
    pub(super) fn short_bytes(&self) -> usize {
        self.short.len() * 8
    }

    /// Depth of the nodes the shortcut leads to; 0 if the trie has none.
    pub(super) fn short_depth(&self) -> u32 {
        self.short_depth
    }

    /// The node the shortcut holds for `key`, if any.
    #[inline(always)]
    fn short_find(&self, key: u64) -> Option<u32> {
        let mask = self.short.len().wrapping_sub(1);
        let mut at = short_home(key, self.short_shift);
        for _ in 0..SHORT_PROBES {
            let v = self.short.get(at)?.load(Acquire);
            if v == SHORT_EMPTY {
                return None;
            }
            if v >> SHORT_INDEX_BITS == key && v != SHORT_GONE {
                return Some((v & SHORT_INDEX) as u32);
            }
            at = (at + 1) & mask;
        }
        None
    }

    /// Makes `node` the shortcut's entry for `key` (release: a reader that loads it sees the
    /// subtree it leads to). The writer only, after the node is reachable from the top. A
    /// node the entry cannot hold, or no room among the key's cells, removes the key's entry
    /// instead: its lookups walk from the top. False in that case.
    pub(super) fn short_set(&self, key: u64, node: u32) -> bool {
        if self.short.is_empty() {
            return false;
        }
        if node > SHORT_MAX_NODE {
            self.short_remove(key);
            return false;
        }
        let mask = self.short.len() - 1;
        let mut at = short_home(key, self.short_shift);
        let mut free = None;
        for _ in 0..SHORT_PROBES {
            let v = self.short[at].load(Relaxed);
            if v != SHORT_GONE && v != SHORT_EMPTY && v >> SHORT_INDEX_BITS == key {
                self.short[at].store(key << SHORT_INDEX_BITS | node as u64, Release);
                return true;
            }
            if v == SHORT_GONE || v == SHORT_EMPTY {
                free.get_or_insert(at);
            }
            if v == SHORT_EMPTY {
                break;
            }
            at = (at + 1) & mask;
        }
        match free {
            Some(at) => {
                self.short[at].store(key << SHORT_INDEX_BITS | node as u64, Release);
                true
            }
            None => false,
        }
    }

    /// Removes the shortcut's entry for `key`, if any. The writer only.
    pub(super) fn short_remove(&self, key: u64) {
        if self.short.is_empty() {
            return;
        }
        let mask = self.short.len() - 1;
        let mut at = short_home(key, self.short_shift);
        for _ in 0..SHORT_PROBES {
            let v = self.short[at].load(Relaxed);
            if v == SHORT_EMPTY {
                return;
            }
            if v != SHORT_GONE && v >> SHORT_INDEX_BITS == key {
                self.short[at].store(SHORT_GONE, Release);
                return;
            }
            at = (at + 1) & mask;
        }
    }

    /// Visits the nodes at the shortcut's depth whose addresses overlap `within` (under it, or
    /// it under them), with their keys, as a reader would find them now. Nothing without a
    /// shortcut.
    pub(super) fn short_nodes(&self, within: Prefix<A>, mut visit: impl FnMut(u64, u32)) {
        let d = self.short_depth;
        if d == 0 {
            return;
        }
        let bits = self.top_bits;
        let (p, plen) = (within.addr().to_left_u128(), within.len() as u32);
        // Whether the prefix of `len` bits at `a` (left-aligned) and `within` overlap.
        let overlaps = |a: u128, len: u32| {
            let m = len.min(plen);
            m == 0 || (a ^ p) >> (128 - m) == 0
        };
        let child = |a: u128, depth: u32, c: u32| a | (c as u128) << (128 - depth - STRIDE);
        let first = within.addr().top(bits);
        let slots = if plen >= bits {
            1
        } else {
            1usize << (bits - plen)
        };
        // (node, its depth, the address of its first bits).
        let mut stack: Vec<(u32, u32, u128)> = Vec::new();
        for slot in first..first + slots {
            let e = self.top_value(slot);
            if e & CHILD == 0 {
                continue;
            }
            let a = A::of_slot(slot, bits).to_left_u128();
            if e & BLOCK != 0 {
                for c in 0..BLOCK_NODES {
                    let b = child(a, bits, c);
                    if overlaps(b, bits + STRIDE) {
                        stack.push(((e & INDEX) + c, bits + STRIDE, b));
                    }
                }
            } else {
                stack.push((e & INDEX, bits, a));
            }
        }
        while let Some((i, depth, a)) = stack.pop() {
            if depth >= d {
                if depth == d {
                    visit((a >> (128 - d)) as u64, i);
                }
                continue;
            }
            let Some(n) = self.nodes.get(i as usize) else {
                continue;
            };
            let vector = n.vector.load(Relaxed);
            let base = n.bases.load(Acquire) as u32;
            let mut rank = 0;
            for c in 0..64 {
                if vector & (1 << c) != 0 {
                    let b = child(a, depth, c);
                    if overlaps(b, depth + STRIDE) {
                        stack.push((base + rank, depth + STRIDE, b));
                    }
                    rank += 1;
                }
            }
        }
    }

    /// Writes `built` into the arrays. Only the writer calls it, and only into room no
    /// top-level entry leads to yet; false if it does not fit.
    pub(super) fn place(&self, built: &Subtrees) -> bool {
        let (n0, l0) = (built.node_base, built.leaf_base);
        if n0 + built.nodes.len() > self.nodes.len() || l0 + built.leaves.len() > self.leaves.len()
        {
            return false;
        }
        for (cell, n) in self.nodes[n0..].iter().zip(&built.nodes) {
            cell.vector.store(n.vector, Relaxed);
            cell.leafvec.store(n.leafvec, Relaxed);
            let bases = n.base_node as u64 | (n.base_leaf as u64) << 32;
            cell.bases.store(bases, Relaxed);
        }
        for (cell, &l) in self.leaves[l0..].iter().zip(&built.leaves) {
            cell.store(l, Relaxed);
        }
        true
    }

    /// Makes `value` the entry of `slot`, after everything placed before it (release: a
    /// reader that loads the entry sees the subtree it leads to).
    pub(super) fn set_top(&self, slot: usize, value: u32) {
        if let Some(t) = self.top.get(slot) {
            t.store(value, Release);
        }
    }

    pub(super) fn top_value(&self, slot: usize) -> u32 {
        self.top.get(slot).map_or(NO_ROUTE, |t| t.load(Acquire))
    }

    pub(super) fn top_bits(&self) -> u32 {
        self.top_bits
    }

    /// Node `i` as the writer reads it.
    pub(super) fn node(&self, i: u32) -> Option<Node> {
        let n = self.nodes.get(i as usize)?;
        let bases = n.bases.load(Acquire);
        Some(Node {
            vector: n.vector.load(Relaxed),
            leafvec: n.leafvec.load(Relaxed),
            base_node: bases as u32,
            base_leaf: (bases >> 32) as u32,
        })
    }

    /// Leaf `i` as the writer reads it.
    pub(super) fn leaf(&self, i: u32) -> u32 {
        self.leaves
            .get(i as usize)
            .map_or(NO_ROUTE, |l| l.load(Relaxed))
    }

    /// Stores next hop `nh` into leaf `i`, which readers may be reading (release): the
    /// writer's change of a node's leaf values that keeps its shape.
    pub(super) fn set_leaf(&self, i: u32, nh: u32) {
        if let Some(l) = self.leaves.get(i as usize) {
            l.store(nh, Release);
        }
    }

    /// Points node `i` at new children and leaves (release: a reader that loads the bases
    /// sees what they lead to). Only for the same shape: its maps never change in place.
    pub(super) fn set_bases(&self, i: u32, bases: u64) {
        if let Some(n) = self.nodes.get(i as usize) {
            n.bases.store(bases, Release);
        }
    }

    /// The next hop of the longest route containing `dst`, or `NO_ROUTE`.
    #[inline]
    pub fn lookup(&self, dst: A) -> u32 {
        let (mut node, mut depth);
        if let Some(n) = self.shortcut(dst) {
            (node, depth) = (n, self.short_depth);
        } else {
            let e = self.top_value(dst.top(self.top_bits));
            if e & CHILD == 0 {
                return e;
            }
            node = e & INDEX;
            depth = self.top_bits;
            if e & BLOCK != 0 {
                // The slot's root is a block of 64 nodes: the next chunk picks one, no load.
                node += dst.chunk(depth);
                depth += STRIDE;
            }
        }
        // At most 3 nodes for IPv4 (18 + 3 × 6 ≥ 32), 19 for IPv6. A well-formed trie ends
        // in a leaf before a lookup runs off its arrays; `get` keeps a malformed one from
        // reading past them, and the depth bound from looping.
        while depth < A::BITS as u32 + STRIDE {
            let Some(n) = self.nodes.get(node as usize) else {
                return NO_ROUTE;
            };
            let c = dst.chunk(depth);
            let vector = n.vector.load(Relaxed);
            let bases = n.bases.load(Acquire);
            if vector & (1 << c) != 0 {
                node = bases as u32 + upto(vector, c) - 1;
                depth += STRIDE;
            } else {
                let i = (bases >> 32) as u32 + upto(n.leafvec.load(Relaxed), c) - 1;
                return self
                    .leaves
                    .get(i as usize)
                    .map_or(NO_ROUTE, |l| l.load(Relaxed));
            }
        }
        NO_ROUTE
    }

    /// The node at the shortcut's depth on `dst`'s path, if the shortcut has it.
    #[inline(always)]
    fn shortcut(&self, dst: A) -> Option<u32> {
        if self.short_depth == 0 {
            return None;
        }
        self.short_find(dst.top(self.short_depth) as u64)
    }

    /// `out[i] = lookup(dst[i])` for `i < min(dst.len(), out.len())`, a frame at a time.
    pub fn lookup_batch(&self, dst: &[A], out: &mut [u32]) {
        let n = dst.len().min(out.len());
        for start in (0..n).step_by(FRAME) {
            let end = (start + FRAME).min(n);
            let (dst, out) = (&dst[start..end], &mut out[start..end]);
            // The top level's width as a constant where it is one of the writer's two, so
            // that the frame's shifts take it as an immediate.
            match self.top_bits {
                TOP_BITS => self.lookup_frame::<TOP_BITS>(dst, out),
                SMALL_TOP_BITS => self.lookup_frame::<SMALL_TOP_BITS>(dst, out),
                _ => self.lookup_frame::<0>(dst, out),
            }
        }
    }

    /// One frame, level by level: each pass takes every address still walking nodes one step
    /// down the trie and prefetches where it goes next, so the frame's cache misses of one
    /// level are in flight together instead of one lookup waiting on each of its own in turn.
    /// Each pass goes over the lanes still walking only (a list that shrinks as lanes reach
    /// their leaf), and the leaves are read in a last pass, once their prefetches are done.
    ///
    /// Written for few instructions a step (counted with callgrind, docs/fib.md): a lane is
    /// 16 bytes, a reference to its node (checked against the array once, when it is found,
    /// so that its prefetch and its read need no other check) and a 64-bit window of its
    /// address (the first 64 bits: all of an IPv4 address, the half of an IPv6 one that
    /// nearly every route ends in) shifted six bits a step, whose low bits carry the lane's
    /// number; one shift of a node's map gives both whether the lane's child is a node and
    /// the rank under it; lists are indexed by `u8` lane numbers or under a mask, which
    /// proves them in range. `TOP` is the top level's width, or 0 to read it from the trie.
    fn lookup_frame<const TOP: u32>(&self, dst: &[A], out: &mut [u32]) {
        debug_assert!(dst.len() <= FRAME && out.len() <= FRAME);
        let bits = if TOP != 0 { TOP } else { self.top_bits };
        debug_assert_eq!(bits, self.top_bits);
        // Top-level index: the first `bits` bits of the first 64 (`bits` is 10 or 18).
        let top_shift = 64 - bits;
        let len = dst.len().min(out.len()).min(FRAME);
        // Each lane's answer, and how many bits it is ahead of the frame's depth (6 under a
        // block, more from the shortcut).
        let mut res = [NO_ROUTE; FRAME];
        let mut ahead = [0u8; FRAME];
        // The lanes still walking, compacted in place at each pass; the lanes at a leaf, and
        // the leaf. Copied from statics: one memcpy each, where filling them cell by cell
        // cost 7 instructions a lookup.
        let mut lanes: [Lane; FRAME] = NO_LANES;
        let mut leaves: [LeafLane; FRAME] = NO_LEAF_LANES;
        let (mut walking, mut done) = (0usize, 0usize);
        // A lane the shortcut has starts at its depth (IPv6 only; at most 42).
        let short = A::BITS > 64 && self.short_depth != 0;
        // With a shortcut, a lane whose slot leads to nodes waits, with its entry, for a pass
        // that probes the shortcut once the frame's cells have been prefetched: probed as
        // each entry is read, a frame's misses in the shortcut would come one after another.
        let (mut wait_lane, mut wait_entry) = ([0u8; FRAME], [0u32; FRAME]);
        let mut waiting = 0;
        // Lane `i` starts walking at node `n`, `depth` bits (less than 64) into its address,
        // whose first 64 bits are `hi`: its window holds them from `depth` on, the lane's
        // number in the low `LANE_BITS` (a top level of at least that many bits leaves them
        // zero). A node index past the array (a malformed trie) leaves the lane without a
        // route.
        macro_rules! start {
            ($i:expr, $hi:expr, $n:expr, $depth:expr) => {{
                let (i, hi, n, depth): (u8, u64, u32, u32) = ($i, $hi, $n, $depth);
                if let Some(n) = self.nodes.get(n as usize) {
                    prefetch(n);
                    debug_assert!(depth < 64);
                    ahead[i as usize] = (depth - bits) as u8;
                    lanes[walking % FRAME] = Lane {
                        win: (hi << depth) & !LANE_MASK | i as u64,
                        node: n,
                    };
                    walking += 1;
                }
            }};
        }
        // Reads lane `i`'s top-level entry: its answer, or where it starts walking.
        macro_rules! first {
            ($i:expr) => {{
                let i: usize = $i;
                let hi = dst[i].hi();
                let e = self
                    .top
                    .get((hi >> top_shift) as usize)
                    .map_or(NO_ROUTE, |t| t.load(Acquire));
                if e & CHILD == 0 {
                    res[i] = e;
                } else if short {
                    let key = dst[i].top(self.short_depth) as u64;
                    if let Some(c) = self.short.get(short_home(key, self.short_shift)) {
                        prefetch(c);
                    }
                    wait_lane[waiting % FRAME] = i as u8;
                    wait_entry[waiting % FRAME] = e;
                    waiting += 1;
                } else if e & BLOCK != 0 {
                    // The slot's root is a block of 64 nodes: the next 6 bits pick one.
                    let c = ((hi << bits) >> (64 - STRIDE)) as u32;
                    start!(i as u8, hi, (e & INDEX) + c, bits + STRIDE);
                } else {
                    start!(i as u8, hi, e & INDEX, bits);
                }
            }};
        }
        // The top-level entries, each prefetched `AHEAD` lanes before it is read.
        let early = len.saturating_sub(AHEAD);
        for i in 0..early {
            if let Some(t) = self.top.get((dst[i + AHEAD].hi() >> top_shift) as usize) {
                prefetch(t);
            }
            first!(i);
        }
        for i in early..len {
            first!(i);
        }
        for (&i, &e) in wait_lane.iter().zip(&wait_entry).take(waiting) {
            let Some(&a) = dst.get(i as usize) else {
                continue;
            };
            let hi = a.hi();
            if let Some(n) = self.short_find(a.top(self.short_depth) as u64) {
                start!(i, hi, n, self.short_depth);
            } else if e & BLOCK != 0 {
                let c = ((hi << bits) >> (64 - STRIDE)) as u32;
                start!(i, hi, (e & INDEX) + c, bits + STRIDE);
            } else {
                start!(i, hi, e & INDEX, bits);
            }
        }
        // The depth of the lanes whose slot's root is a node; the others are `ahead` of it.
        let mut depth = bits;
        // Where the lanes' numbers are in their windows: each step shifts them up by STRIDE
        // with the address (they reach its chunk only after more steps than a window has).
        let mut lane_at = 0;
        // The windows hold the address up to bit 64 (then zeros, as an IPv4 address's chunks
        // past its last bit are, and the lane's number): valid while every lane's next chunk
        // ends there. The lanes furthest ahead are under a block (STRIDE) or came from the
        // shortcut. A top level narrower than the lane number loses address bits under it.
        let furthest = if short {
            self.short_depth - bits
        } else {
            STRIDE
        };
        let mut valid = 64 - furthest - LANE_BITS.saturating_sub(bits);
        // At most 3 levels of nodes for IPv4, 19 for IPv6; the bound also stops a malformed
        // trie from looping (a lane still walking then finds no route).
        while walking > 0 && depth < A::BITS as u32 + STRIDE {
            if A::BITS > 64 && depth + STRIDE > valid {
                // Past the first 64 bits (an IPv6 route longer than about /58): each lane's
                // next 56 bits, from its depth on, above its number; nine more levels.
                for l in lanes.iter_mut().take(walking) {
                    let i = (l.win >> lane_at) as u8;
                    let d = depth + ahead[i as usize] as u32;
                    let w = dst.get(i as usize).map_or(0, |a| a.window(d));
                    l.win = w & !LANE_MASK | i as u64;
                }
                lane_at = 0;
                valid = depth + 64 - LANE_BITS;
            }
            let mut still = 0;
            for k in 0..walking.min(FRAME) {
                let Lane { win, node } = lanes[k];
                // The maps shifted so that the lane's child is their top bit: whether it is
                // a node, and (the popcount) its rank among the nodes or the leaf runs.
                let up = (!win >> (64 - STRIDE)) as u32;
                let vector = node.vector.load(Relaxed) << up;
                let bases = node.bases.load(Acquire);
                if (vector as i64) < 0 {
                    let next = (bases as u32).wrapping_add(vector.count_ones() - 1);
                    if let Some(n) = self.nodes.get(next as usize) {
                        prefetch(n);
                        lanes[still % FRAME] = Lane {
                            win: win << STRIDE,
                            node: n,
                        };
                        still += 1;
                    }
                } else {
                    let run = (node.leafvec.load(Relaxed) << up).count_ones();
                    let l = ((bases >> 32) as u32).wrapping_add(run.wrapping_sub(1));
                    if let Some(x) = self.leaves.get(l as usize) {
                        prefetch(x);
                        leaves[done % FRAME] = LeafLane {
                            leaf: x,
                            lane: (win >> lane_at) as u8,
                        };
                        done += 1;
                    }
                }
            }
            walking = still;
            depth += STRIDE;
            lane_at += STRIDE;
        }
        for l in leaves.iter().take(done) {
            res[l.lane as usize] = l.leaf.load(Relaxed);
        }
        out[..len].copy_from_slice(&res[..len]);
    }

    /// Where lookups of `dsts` spend their levels, and the shape of the trie by level: a
    /// diagnostic (`sluice fib bench` prints it), not for the dataplane.
    pub fn profile(&self, dsts: &[A]) -> Profile {
        let mut p = Profile::default();
        let bump = |v: &mut Vec<usize>, i: usize| {
            if v.len() <= i {
                v.resize(i + 1, 0);
            }
            v[i] += 1;
        };
        for &dst in dsts {
            let e = self.top_value(dst.top(self.top_bits));
            let mut nodes = 0;
            let short = self.shortcut(dst);
            p.shortcut_hits += short.is_some() as usize;
            if e & CHILD != 0 {
                let mut node = e & INDEX;
                let mut depth = self.top_bits;
                if let Some(n) = short {
                    (node, depth) = (n, self.short_depth);
                } else if e & BLOCK != 0 {
                    node += dst.chunk(depth);
                    depth += STRIDE;
                }
                while let Some(n) = self.nodes.get(node as usize) {
                    nodes += 1;
                    let c = dst.chunk(depth);
                    let vector = n.vector.load(Relaxed);
                    if vector & (1 << c) == 0 || depth >= A::BITS as u32 {
                        break;
                    }
                    node = (n.bases.load(Acquire) as u32) + upto(vector, c) - 1;
                    depth += STRIDE;
                }
            }
            bump(&mut p.lookups_by_nodes, nodes);
        }
        // The reachable nodes, level by level from the slots' roots (a block's 64 nodes
        // are the first level under its slot).
        let mut level: Vec<u32> = (0..self.top.len())
            .map(|s| self.top_value(s))
            .filter(|e| e & CHILD != 0)
            .flat_map(root_nodes)
            .collect();
        p.blocks = (0..self.top.len())
            .filter(|&s| self.top_value(s) & (CHILD | BLOCK) == CHILD | BLOCK)
            .count();
        while !level.is_empty() && p.nodes_by_level.len() < 32 {
            let (mut next, mut single, mut leaves) = (Vec::new(), 0, 0);
            for &i in &level {
                let Some(n) = self.nodes.get(i as usize) else {
                    continue;
                };
                let vector = n.vector.load(Relaxed);
                let base = n.bases.load(Acquire) as u32;
                single += (vector.count_ones() == 1) as usize;
                leaves += n.leafvec.load(Relaxed).count_ones() as usize;
                next.extend((0..vector.count_ones()).map(|k| base + k));
            }
            p.nodes_by_level.push(level.len());
            p.one_child_by_level.push(single);
            p.leaves_by_level.push(leaves);
            level = next;
        }
        p
    }

    /// Bytes of the arrays, room included.
    pub fn memory_bytes(&self) -> usize {
        self.top.len() * 4
            + self.nodes.len() * std::mem::size_of::<AtomicNode>()
            + self.leaves.len() * 4
            + self.short.len() * 8
    }
}
