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
//! ordering, which a reader loads with acquire ordering (plain loads on x86). Leaves and a
//! node's maps, once reachable, are never written again, and a node's bases change only to
//! children and leaves of the same shape, so every lookup walks either the old subtree or the
//! new one, both complete.
//! Every cell is an atomic so that this is sound in safe Rust; relaxed loads compile to the
//! same instructions as plain ones.
//!
//! One generic trie over `Key` (the top-level index and the 6-bit chunks of a `u32` or a
//! `u128`), monomorphized for each family.

use super::mem::{huge_vec, prefetch};
use super::poptrie_build::{Node, Subtrees};
use super::prefix::Addr;
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
    /// The 64 bits from bit `depth` on, zeros past the last bit: a batch walks ten levels
    /// on one such word, shifting it, instead of shifting the whole address at each.
    fn window(self, depth: u32) -> u64;
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
        let e = self.top_value(dst.top(self.top_bits));
        if e & CHILD == 0 {
            return e;
        }
        let mut node = e & INDEX;
        let mut depth = self.top_bits;
        if e & BLOCK != 0 {
            // The slot's root is a block of 64 nodes: the next chunk picks one, no load.
            node += dst.chunk(depth);
            depth += STRIDE;
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

    /// `out[i] = lookup(dst[i])` for `i < min(dst.len(), out.len())`, a frame at a time.
    pub fn lookup_batch(&self, dst: &[A], out: &mut [u32]) {
        let n = dst.len().min(out.len());
        for start in (0..n).step_by(FRAME) {
            let end = (start + FRAME).min(n);
            self.lookup_frame(&dst[start..end], &mut out[start..end]);
        }
    }

    /// One frame, level by level: each pass takes every address still walking nodes one step
    /// down the trie and prefetches where it goes next, so the frame's cache misses of one
    /// level are in flight together instead of one lookup waiting on each of its own in turn.
    /// Each pass goes over the lanes still walking only (a list that shrinks as lanes reach
    /// their leaf), and the leaves are read in a last pass, once their prefetches are done.
    fn lookup_frame(&self, dst: &[A], out: &mut [u32]) {
        debug_assert!(dst.len() <= FRAME && out.len() <= FRAME);
        // The lanes still walking, the node each is at and its address from the node's
        // depth on; the lanes at a leaf and its index.
        let (mut lane, mut at, mut win) = ([0u8; FRAME], [0u32; FRAME], [0u64; FRAME]);
        // IPv6 walks on the window (a u128 shift per step costs more than the step saves);
        // IPv4 takes its chunks from the address, one word anyway. Constant per family.
        let windowed = A::BITS > 64;
        // Bits a lane is ahead of `depth` below: STRIDE if its slot's root is a block. A frame
        // with no lane under a block (every IPv4 frame of today's tables) never reads it.
        let mut ahead = [0u8; FRAME];
        let mut any_block = false;
        let (mut leaf_lane, mut leaf_at) = ([0u8; FRAME], [0u32; FRAME]);
        let (mut walking, mut done) = (0, 0);
        for (i, o) in out.iter_mut().enumerate() {
            if let Some(&ahead) = dst.get(i + AHEAD) {
                if let Some(t) = self.top.get(ahead.top(self.top_bits)) {
                    prefetch(t);
                }
            }
            let e = self.top_value(dst[i].top(self.top_bits));
            *o = e;
            if e & CHILD != 0 {
                let mut node = e & INDEX;
                let mut depth = self.top_bits;
                if e & BLOCK != 0 {
                    node += dst[i].chunk(depth);
                    depth += STRIDE;
                    ahead[i] = STRIDE as u8;
                    any_block = true;
                }
                if let Some(n) = self.nodes.get(node as usize) {
                    prefetch(n);
                }
                *o = NO_ROUTE;
                lane[walking] = i as u8;
                at[walking] = node;
                if windowed {
                    win[walking] = dst[i].window(depth);
                }
                walking += 1;
            }
        }
        // The depth of the lanes whose slot's root is a node; those under a block are
        // `ahead` of it.
        let mut depth = self.top_bits;
        // At most 3 levels of nodes for IPv4, 19 for IPv6; the bound also stops a malformed
        // trie from looping (a lane still walking then finds no route).
        let mut win_depth = self.top_bits;
        while walking > 0 && depth < A::BITS as u32 + STRIDE {
            if windowed && depth - win_depth > 64 - STRIDE {
                // The window's ten chunks are used up (IPv6 past bit 78): the next 64 bits.
                for k in 0..walking {
                    let i = lane[k] as usize;
                    let d = depth + ahead[i] as u32;
                    win[k] = dst.get(i).map_or(0, |a| a.window(d));
                }
                win_depth = depth;
            }
            let mut still = 0;
            for k in 0..walking {
                let i = lane[k];
                let Some(n) = self.nodes.get(at[k] as usize) else {
                    continue;
                };
                let w = win[k];
                let c = if windowed {
                    (w >> (64 - STRIDE)) as u32
                } else {
                    let d = if any_block {
                        depth + ahead[i as usize] as u32
                    } else {
                        depth
                    };
                    dst.get(i as usize).map_or(0, |a| a.chunk(d))
                };
                let vector = n.vector.load(Relaxed);
                let bases = n.bases.load(Acquire);
                if vector & (1 << c) != 0 {
                    let next = bases as u32 + upto(vector, c) - 1;
                    if let Some(x) = self.nodes.get(next as usize) {
                        prefetch(x);
                    }
                    lane[still] = i;
                    at[still] = next;
                    if windowed {
                        win[still] = w << STRIDE;
                    }
                    still += 1;
                } else {
                    let l = (bases >> 32) as u32 + upto(n.leafvec.load(Relaxed), c) - 1;
                    if let Some(x) = self.leaves.get(l as usize) {
                        prefetch(x);
                    }
                    leaf_lane[done] = i;
                    leaf_at[done] = l;
                    done += 1;
                }
            }
            walking = still;
            depth += STRIDE;
        }
        for (&i, &l) in leaf_lane[..done].iter().zip(&leaf_at[..done]) {
            if let Some(o) = out.get_mut(i as usize) {
                *o = self.leaf(l);
            }
        }
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
            if e & CHILD != 0 {
                let mut node = e & INDEX;
                let mut depth = self.top_bits;
                if e & BLOCK != 0 {
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
    }
}
