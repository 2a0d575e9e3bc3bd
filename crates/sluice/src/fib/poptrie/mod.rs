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

use super::poptrie_build::{Node, Subtrees};
use super::prefix::Addr;
use super::{CHILD, NO_ROUTE};
use crate::sys::mem::huge_vec;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

mod batch;
mod profile;
mod shortcut;

pub use profile::Profile;

/// Address bits each node consumes.
pub(super) const STRIDE: u32 = 6;

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

    /// Bytes of the arrays, room included.
    pub fn memory_bytes(&self) -> usize {
        self.top.len() * 4
            + self.nodes.len() * std::mem::size_of::<AtomicNode>()
            + self.leaves.len() * 4
            + self.short.len() * 8
    }
}
