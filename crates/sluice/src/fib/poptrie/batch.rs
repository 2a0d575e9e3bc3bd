//! The batched lookup: a frame of addresses walked down the trie level by level, each
//! level's cache misses in flight together. The dataplane's hot path.

use super::shortcut::short_home;
use super::{AtomicNode, Key, Poptrie, BLOCK, INDEX, STRIDE};
use crate::fib::poptrie_writer::{SMALL_TOP_BITS, TOP_BITS};
use crate::fib::{CHILD, NO_ROUTE};
use crate::sys::mem::prefetch;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

/// Addresses ahead the batched lookup prefetches its top-level entry.
const AHEAD: usize = 16;
/// Addresses looked up together, level by level: a frame of the dataplane.
const FRAME: usize = 256;

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

impl<A: Key> Poptrie<A> {
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
        let mut walking = 0usize;
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
        let done = self.walk_levels(dst, bits, &ahead, &mut lanes, walking, &mut leaves);
        for l in leaves.iter().take(done) {
            res[l.lane as usize] = l.leaf.load(Relaxed);
        }
        out[..len].copy_from_slice(&res[..len]);
    }

    /// The frame's passes down the trie, after its top-level pass (`lookup_frame`): takes
    /// the `walking` lanes a level a pass until each reaches its leaf, lists the leaves and
    /// their lanes in `leaves`, prefetched, and returns how many. Inlined into
    /// `lookup_frame`, so that `bits` stays the constant it is there and the lane lists
    /// stay on its stack.
    #[inline(always)]
    fn walk_levels<'a>(
        &'a self,
        dst: &[A],
        bits: u32,
        ahead: &[u8; FRAME],
        lanes: &mut [Lane<'a>; FRAME],
        mut walking: usize,
        leaves: &mut [LeafLane<'a>; FRAME],
    ) -> usize {
        let short = A::BITS > 64 && self.short_depth != 0;
        let mut done = 0usize;
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
        done
    }
}
