//! The shortcut (IPv6): a hash table from an address's first `short_depth` bits to the node
//! at that depth on its path, so that a lookup it holds skips the top level and the nodes
//! above. The writer keeps it in step with the trie; a key it cannot hold walks from the top.

use super::{Key, Poptrie, BLOCK, BLOCK_NODES, INDEX, STRIDE};
use crate::fib::prefix::Prefix;
use crate::fib::CHILD;
use crate::sys::mem::huge_vec;
use std::sync::atomic::{AtomicU64, Ordering::*};

/// Bits of a shortcut entry that hold the node index; the key (the address's first
/// `short_depth` bits, at most `SHORT_KEY_BITS`) is above them.
const SHORT_INDEX_BITS: u32 = 22;
/// The longest key a shortcut entry holds: an IPv6 /42.
const SHORT_KEY_BITS: u32 = 64 - SHORT_INDEX_BITS;
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

/// The home cell of a shortcut key (Fibonacci hashing).
#[inline(always)]
pub(super) fn short_home(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize
}

impl<A: Key> Poptrie<A> {
    /// Gives the trie a shortcut to its nodes at `depth` (a node depth, deeper than the top
    /// level and at most `SHORT_KEY_BITS`), sized for three times the nodes there are now,
    /// and fills it. Before the trie is shared.
    pub(in crate::fib) fn add_shortcut(&mut self, depth: u32) {
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
    pub(in crate::fib) fn short_bytes(&self) -> usize {
        self.short.len() * 8
    }

    /// Depth of the nodes the shortcut leads to; 0 if the trie has none.
    pub(in crate::fib) fn short_depth(&self) -> u32 {
        self.short_depth
    }

    /// The node the shortcut holds for `key`, if any.
    #[inline(always)]
    pub(super) fn short_find(&self, key: u64) -> Option<u32> {
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
    pub(in crate::fib) fn short_set(&self, key: u64, node: u32) -> bool {
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
    pub(in crate::fib) fn short_remove(&self, key: u64) {
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
    pub(in crate::fib) fn short_nodes(&self, within: Prefix<A>, mut visit: impl FnMut(u64, u32)) {
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

    /// The node at the shortcut's depth on `dst`'s path, if the shortcut has it.
    #[inline(always)]
    pub(super) fn shortcut(&self, dst: A) -> Option<u32> {
        if self.short_depth == 0 {
            return None;
        }
        self.short_find(dst.top(self.short_depth) as u64)
    }
}
