//! Longest-prefix match in a compressed multibit trie, after Poptrie (Asai and Ohara,
//! SIGCOMM 2015), for IPv4 (`Poptrie4`) and IPv6 (`Poptrie6`): a direct-indexed top level of
//! 18 bits, then nodes of 6-bit strides. A node
//! stores no array of 64 children: one bitmap says which children are nodes, another where a
//! run of equal leaves begins, and a child or leaf is found by counting the set bits below
//! its index (one `popcnt`). Children of a node sit next to each other, as do its leaves, so
//! a node is 24 bytes whatever its fan-out, and a full table fits in a few MiB instead of
//! DIR-24-8's 64 MiB.
//!
//! Built from the route table in one pass, and updated slot by slot (`update`); `sluice fib
//! bench` measures it beside DIR-24-8 and the IPv6 stride trie. The dataplane still looks up
//! in those (`ip4`, `ip6`): publication of one copy comes next. One generic trie over `Key`
//! (the top-level index and the 6-bit chunks of a `u32` or a `u128`), monomorphized for
//! each family.

use super::mem::{copy_nodes, prefetch};
use super::prefix::{Addr, Prefix};
use super::routes::RouteTable;
use super::{CHILD, NO_ROUTE};

/// Address bits the top level of a full table indexes: 18, so that a /24 ends in the first
/// node (18 + 6).
const TOP_BITS: u32 = 18;
/// The top level of a small table: 1 024 entries, 4 KiB, so that an empty table (a VRF with a
/// few routes) costs next to nothing. An IPv4 /24 then ends in the third node.
const SMALL_TOP_BITS: u32 = 10;
/// Routes a small table holds at most before it is rebuilt with the full top level (and
/// half of it for the way back, so that a table near the line does not flip at each change).
const SMALL_ROUTES: usize = 1024;
/// Address bits each node consumes.
const STRIDE: u32 = 6;
/// Addresses ahead the batched lookup prefetches its top-level entry.
const AHEAD: usize = 16;
/// Addresses looked up together, level by level: a frame of the dataplane.
const FRAME: usize = 256;

/// A node: which of its 64 children are nodes (`vector`) and where runs of equal leaves start
/// among the others (`leafvec`); its node children from `base_node` on, its leaves from
/// `base_leaf` on.
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    vector: u64,
    leafvec: u64,
    base_node: u32,
    base_leaf: u32,
}

/// An address as the trie walks it.
pub trait Key: Addr {
    /// Its first `bits` bits: the top-level index.
    fn top(self, bits: u32) -> usize;
    /// The 6 bits from bit `depth` (0 = most significant), zeros past the last bit.
    fn chunk(self, depth: u32) -> u32;
    /// The address whose first `bits` bits are `slot`, the others zero.
    fn of_slot(slot: usize, bits: u32) -> Self;
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
}

/// The IPv4 trie.
pub type Poptrie4 = Poptrie<u32>;
/// The IPv6 trie: /48s end in the fifth node (18 + 5 × 6), host routes in the nineteenth.
pub type Poptrie6 = Poptrie<u128>;

/// The lookup table of one family.
#[derive(Clone, Debug)]
pub struct Poptrie<A: Key> {
    /// Bits the top level indexes: `SMALL_TOP_BITS` or `TOP_BITS`.
    top_bits: u32,
    /// 2^18 entries: a next hop, or `CHILD | node index`.
    top: Vec<u32>,
    nodes: Vec<Node>,
    leaves: Vec<u32>,
    /// Nodes and leaves no longer reachable (subtrees replaced by `update`): reclaimed by a
    /// full rebuild once they outweigh the live ones.
    dead_nodes: usize,
    dead_leaves: usize,
    _family: std::marker::PhantomData<A>,
}

/// Top-level slots an update may rebuild one by one; a change of a shorter prefix than this
/// covers (a /8 covers 1 024 slots) rebuilds the whole table instead.
const MAX_SLOTS_PER_UPDATE: usize = 1 << 10;

/// The bits of `mask` at and below bit `i`.
#[inline]
fn upto(mask: u64, i: u32) -> u32 {
    (mask & ((2u64 << i).wrapping_sub(1))).count_ones()
}

/// A route as the builder takes it: address, length, next hop.
type Route<A> = (A, u8, u32);

impl<A: Key> Poptrie<A> {
    /// Every lookup gives `NO_ROUTE`; a small table (4 KiB).
    pub fn new() -> Poptrie<A> {
        Poptrie::with_top_bits(SMALL_TOP_BITS)
    }

    fn with_top_bits(top_bits: u32) -> Poptrie<A> {
        Poptrie {
            top_bits,
            top: vec![NO_ROUTE; 1 << top_bits],
            nodes: Vec::new(),
            leaves: Vec::new(),
            dead_nodes: 0,
            dead_leaves: 0,
            _family: std::marker::PhantomData,
        }
    }

    /// Built from every route of `routes`: a small top level for up to `SMALL_ROUTES` routes,
    /// the full one above.
    pub fn build(routes: &RouteTable<A>) -> Poptrie<A> {
        let bits = if routes.len() <= SMALL_ROUTES {
            SMALL_TOP_BITS
        } else {
            TOP_BITS
        };
        Poptrie::build_with(routes, bits)
    }

    fn build_with(routes: &RouteTable<A>, top_bits: u32) -> Poptrie<A> {
        let all: Vec<Route<A>> = routes
            .iter()
            .map(|(p, nh)| (p.addr(), p.len(), nh))
            .collect();
        let mut t = Poptrie::with_top_bits(top_bits);
        let bits = top_bits;
        // Routes of /18 or shorter are painted over the top level, shortest first, so that a
        // longer one overwrites the part of a shorter one it covers.
        let mut short: Vec<&Route<A>> = all.iter().filter(|r| r.1 <= bits as u8).collect();
        short.sort_by_key(|r| r.1);
        for &&(addr, len, nh) in &short {
            let first = addr.top(bits);
            let n = 1usize << (bits - len as u32);
            t.top[first..first + n].fill(nh);
        }
        // Longer routes, grouped by top-level slot (they are sorted by address).
        let long: Vec<Route<A>> = all.into_iter().filter(|r| r.1 > bits as u8).collect();
        for group in long.chunk_by(|a, b| a.0.top(bits) == b.0.top(bits)) {
            let slot = group[0].0.top(bits);
            let at = t.nodes.len();
            t.nodes.push(Node::default());
            let default = t.top[slot];
            t.fill(at, group, bits, default);
            t.top[slot] = CHILD | at as u32;
        }
        // Final homes advised for 2 MiB pages: lookups touch them at random, and a TLB miss
        // per level would cost more than the cache miss.
        t.top = copy_nodes(&t.top);
        t.nodes = copy_nodes(&t.nodes);
        t.leaves = copy_nodes(&t.leaves);
        t
    }

    /// Bring the table up to date after `changed` was added to, replaced in or removed from
    /// `routes` (which already holds the change): the top-level slots under `changed` are
    /// rebuilt from `routes`, each one's subtree built anew at the end of the arrays and the
    /// old one left dead; a prefix shorter than /8, or dead entries outweighing live ones,
    /// rebuild everything. Returns whether it rebuilt everything.
    pub fn update(&mut self, routes: &RouteTable<A>, changed: Prefix<A>) -> bool {
        let (bits, n) = (self.top_bits, routes.len());
        // A small table grown past its size, or a full one shrunk well below it, is built
        // again with the other top level.
        let resize = (bits == SMALL_TOP_BITS && n > SMALL_ROUTES)
            || (bits == TOP_BITS && n < SMALL_ROUTES / 2);
        let len = changed.len() as u32;
        let first = changed.addr().top(bits);
        let slots = if len >= bits {
            1
        } else {
            1usize << (bits - len)
        };
        if resize || slots > MAX_SLOTS_PER_UPDATE {
            *self = Poptrie::build(routes);
            return true;
        }
        for slot in first..first + slots {
            self.rebuild_slot(routes, slot);
        }
        if self.dead_nodes > self.nodes.len() / 2 || self.dead_leaves > self.leaves.len() / 2 {
            *self = Poptrie::build(routes);
            return true;
        }
        false
    }

    /// Rebuild one top-level slot from `routes`.
    fn rebuild_slot(&mut self, routes: &RouteTable<A>, slot: usize) {
        let old = self.top[slot];
        if old & CHILD != 0 {
            let (n, l) = self.subtree_size(old & !CHILD);
            self.dead_nodes += n;
            self.dead_leaves += l;
        }
        let bits = self.top_bits;
        let block = Prefix::containing(A::of_slot(slot, bits), bits as u8);
        // What the routes of /18 or shorter give the whole slot.
        let default = routes
            .get(block)
            .or_else(|| routes.covering(block).map(|(_, nh)| nh))
            .unwrap_or(NO_ROUTE);
        let long: Vec<Route<A>> = routes
            .within(block)
            .filter(|(p, _)| p.len() as u32 > bits)
            .map(|(p, nh)| (p.addr(), p.len(), nh))
            .collect();
        if long.is_empty() {
            self.top[slot] = default;
            return;
        }
        let at = self.nodes.len();
        self.nodes.push(Node::default());
        self.fill(at, &long, bits, default);
        self.top[slot] = CHILD | at as u32;
    }

    /// Nodes and leaves of the subtree under node `i`.
    fn subtree_size(&self, i: u32) -> (usize, usize) {
        let Some(n) = self.nodes.get(i as usize) else {
            return (0, 0);
        };
        let children = n.vector.count_ones();
        let mut size = (1, n.leafvec.count_ones() as usize);
        for k in 0..children {
            let (a, b) = self.subtree_size(n.base_node + k);
            size = (size.0 + a, size.1 + b);
        }
        size
    }

    /// Fill node `at` for the addresses whose first `depth` bits `routes` share: `routes` are
    /// the routes longer than `depth` among them, sorted by address; `default` is what the
    /// shorter routes give there.
    fn fill(&mut self, at: usize, routes: &[Route<A>], depth: u32, default: u32) {
        // What each child gets from routes ending within this stride, shortest painted first.
        let mut value = [default; 64];
        let mut ending: Vec<&Route<A>> = routes
            .iter()
            .filter(|r| r.1 as u32 <= depth + STRIDE)
            .collect();
        ending.sort_by_key(|r| r.1);
        for &&(addr, len, nh) in &ending {
            let first = addr.chunk(depth) as usize;
            let n = 1usize << (depth + STRIDE - len as u32);
            value[first..first + n].fill(nh);
        }
        // Children with longer routes become nodes, in child order.
        let deeper: Vec<Route<A>> = routes
            .iter()
            .filter(|r| r.1 as u32 > depth + STRIDE)
            .copied()
            .collect();
        let groups: Vec<&[Route<A>]> = deeper
            .chunk_by(|a, b| a.0.chunk(depth) == b.0.chunk(depth))
            .collect();
        let mut vector = 0u64;
        for g in &groups {
            vector |= 1 << g[0].0.chunk(depth);
        }
        // Leaves: one entry per run of equal values among the children that are not nodes.
        let base_leaf = self.leaves.len() as u32;
        let mut leafvec = 0u64;
        let mut last = None;
        for (c, &v) in value.iter().enumerate() {
            if vector & (1 << c) != 0 {
                continue;
            }
            if last != Some(v) {
                leafvec |= 1 << c;
                self.leaves.push(v);
                last = Some(v);
            }
        }
        // The node children next to each other, then each filled (its own children after).
        let base_node = self.nodes.len() as u32;
        self.nodes
            .resize(self.nodes.len() + groups.len(), Node::default());
        self.nodes[at] = Node {
            vector,
            leafvec,
            base_node,
            base_leaf,
        };
        for (i, g) in groups.iter().enumerate() {
            let c = g[0].0.chunk(depth) as usize;
            self.fill(base_node as usize + i, g, depth + STRIDE, value[c]);
        }
    }

    /// The next hop of the longest route containing `dst`, or `NO_ROUTE`.
    #[inline]
    pub fn lookup(&self, dst: A) -> u32 {
        // `top()` < 2^18 = top.len().
        let e = self.top[dst.top(self.top_bits)];
        if e & CHILD == 0 {
            return e;
        }
        let mut node = e & !CHILD;
        let mut depth = self.top_bits;
        // At most 3 nodes for IPv4 (18 + 3 × 6 ≥ 32), 19 for IPv6. A well-formed trie ends
        // in a leaf before a lookup runs off its arrays; `get` keeps a malformed one from
        // reading past them, and the depth bound from looping.
        while depth < A::BITS as u32 + STRIDE {
            let Some(n) = self.nodes.get(node as usize) else {
                return NO_ROUTE;
            };
            let c = dst.chunk(depth);
            if n.vector & (1 << c) != 0 {
                node = n.base_node + upto(n.vector, c) - 1;
                depth += STRIDE;
            } else {
                let i = n.base_leaf + upto(n.leafvec, c) - 1;
                return self.leaves.get(i as usize).copied().unwrap_or(NO_ROUTE);
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

    /// One frame, level by level: each pass over the frame takes every address one step down
    /// the trie and prefetches where it goes next, so the frame's cache misses of one level
    /// are in flight together instead of one lookup waiting on each of its own in turn.
    fn lookup_frame(&self, dst: &[A], out: &mut [u32]) {
        const NONE: u32 = u32::MAX;
        // The leaf each address ends at, once known.
        let mut leaf = [NONE; FRAME];
        let mut at_node = 0;
        for (i, o) in out.iter_mut().enumerate() {
            if let Some(&ahead) = dst.get(i + AHEAD) {
                prefetch(&self.top[ahead.top(self.top_bits)]);
            }
            let e = self.top[dst[i].top(self.top_bits)];
            if e & CHILD != 0 {
                if let Some(n) = self.nodes.get((e & !CHILD) as usize) {
                    prefetch(n);
                }
                at_node += 1;
            }
            *o = e;
        }
        let mut depth = self.top_bits;
        // At most 3 levels of nodes for IPv4, 19 for IPv6; the bound also stops a malformed
        // trie from looping.
        while at_node > 0 && depth < A::BITS as u32 + STRIDE {
            at_node = 0;
            for (i, o) in out.iter_mut().enumerate() {
                if *o & CHILD == 0 {
                    continue;
                }
                let Some(n) = self.nodes.get((*o & !CHILD) as usize) else {
                    *o = NO_ROUTE;
                    continue;
                };
                let c = dst[i].chunk(depth);
                if n.vector & (1 << c) != 0 {
                    let next = n.base_node + upto(n.vector, c) - 1;
                    if let Some(x) = self.nodes.get(next as usize) {
                        prefetch(x);
                    }
                    *o = CHILD | next;
                    at_node += 1;
                } else {
                    let l = n.base_leaf + upto(n.leafvec, c) - 1;
                    if let Some(x) = self.leaves.get(l as usize) {
                        prefetch(x);
                    }
                    leaf[i] = l;
                    *o = NO_ROUTE;
                }
            }
            depth += STRIDE;
        }
        for (o, &l) in out.iter_mut().zip(&leaf) {
            if l != NONE {
                *o = self.leaves.get(l as usize).copied().unwrap_or(NO_ROUTE);
            } else if *o & CHILD != 0 {
                *o = NO_ROUTE;
            }
        }
    }

    /// Bytes of the lookup structure.
    pub fn memory_bytes(&self) -> usize {
        self.top.len() * 4 + self.nodes.len() * std::mem::size_of::<Node>() + self.leaves.len() * 4
    }

    /// Nodes and leaves stored.
    pub fn counts(&self) -> (usize, usize) {
        (self.nodes.len(), self.leaves.len())
    }
}

impl<A: Key> Default for Poptrie<A> {
    fn default() -> Poptrie<A> {
        Poptrie::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::prefix::Prefix4;
    use crate::fib::prefix::Prefix6;
    use proptest::prelude::*;

    fn table(routes: &[(u32, u8, u32)]) -> RouteTable<u32> {
        let mut t = RouteTable::new();
        for &(a, l, nh) in routes {
            t.insert(Prefix4::containing(a, l), nh);
        }
        t
    }

    fn reference(t: &RouteTable<u32>, a: u32) -> u32 {
        t.lookup(a).map_or(NO_ROUTE, |(_, nh)| nh)
    }

    /// Addresses worth asking about: each route's first and last address and their
    /// neighbours, and some fixed ones.
    fn probes(t: &RouteTable<u32>) -> Vec<u32> {
        let mut v = vec![0, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff];
        for (p, _) in t.iter() {
            let (a, z) = (p.addr(), p.last());
            v.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1), a | 0x55]);
        }
        v
    }

    /// Both top levels (the small one `build` takes for so few routes, and the full one).
    fn check(routes: &[(u32, u8, u32)]) {
        let t = table(routes);
        for p in [Poptrie4::build(&t), Poptrie4::build_with(&t, TOP_BITS)] {
            let addrs = probes(&t);
            let mut out = vec![0; addrs.len()];
            p.lookup_batch(&addrs, &mut out);
            for (&a, &got) in addrs.iter().zip(&out) {
                assert_eq!(got, reference(&t, a), "{a:#x} in {routes:?}");
                assert_eq!(p.lookup(a), got);
            }
        }
    }

    #[test]
    fn empty_tables_are_cheap() {
        let both = Poptrie4::new().memory_bytes() + Poptrie6::new().memory_bytes();
        assert!(both <= 64 * 1024, "{both} bytes");
        assert_eq!(Poptrie4::build(&table(&[])).memory_bytes(), 4096);
    }

    #[test]
    fn a_table_changes_top_level_as_it_grows_and_shrinks() {
        let mut t = table(&[(0x0a00_0000, 8, 1)]);
        let mut p = Poptrie4::build(&t);
        assert_eq!(p.top_bits, SMALL_TOP_BITS);
        let host = |i: u32| Prefix4::containing(0x0a00_0000 | i << 8, 24);
        for i in 0..(SMALL_ROUTES as u32 + 10) {
            t.insert(host(i), i);
            p.update(&t, host(i));
        }
        assert_eq!(p.top_bits, TOP_BITS);
        for i in 0..(SMALL_ROUTES as u32) {
            t.remove(host(i));
            p.update(&t, host(i));
        }
        assert_eq!(p.top_bits, SMALL_TOP_BITS);
        for a in probes(&t) {
            assert_eq!(p.lookup(a), reference(&t, a), "{a:#x}");
        }
    }

    #[test]
    fn edge_cases() {
        check(&[]);
        check(&[(0, 0, 7)]);
        check(&[(0x0a00_0000, 8, 1), (0x0a01_0203, 32, 2), (0, 0, 3)]);
        // Every length around the strides' edges (18, 24, 30) under one /8.
        let mut r: Vec<_> = (9..=32u8)
            .map(|l| (0x0a80_0000u32 | (1 << (32 - l as u32)), l, l as u32))
            .collect();
        r.push((0x0a00_0000, 8, 100));
        check(&r);
        // Host routes at both ends of the address space.
        check(&[(0, 32, 1), (u32::MAX, 32, 2), (0xffff_0000, 16, 3)]);
    }

    #[test]
    fn a_route_over_a_node_leaves_the_node_alone() {
        // A /20 inside a /16 and a /12 over both: the /16's slot holds a node; lookups
        // outside the /20 but inside the /16 find the /16.
        check(&[
            (0xc0a8_0000, 16, 1),
            (0xc0a8_1000, 20, 2),
            (0xc0a0_0000, 12, 3),
        ]);
    }

    proptest! {
        #[test]
        fn matches_the_reference(routes in prop::collection::vec((any::<u32>(), 0u8..=32, 0u32..1000), 0..200)) {
            check(&routes);
        }

        #[test]
        fn updates_match_the_reference(
            initial in prop::collection::vec((0x0a00_0000u32..0x0a40_0000, 8u8..=32, 0u32..50), 0..100),
            changes in prop::collection::vec((0x0a00_0000u32..0x0a40_0000, 6u8..=32, prop::option::of(0u32..50)), 1..60),
        ) {
            check_updates(&initial, &changes);
        }

        #[test]
        fn matches_the_reference_when_dense(routes in prop::collection::vec((0x0a00_0000u32..0x0a00_4000, 14u8..=32, 0u32..4), 0..300)) {
            check(&routes);
        }
    }

    /// Apply `changes` (insert when a next hop is given, else delete) one by one, updating
    /// the trie after each; then it must answer as the reference and as a fresh build.
    fn check_updates(initial: &[(u32, u8, u32)], changes: &[(u32, u8, Option<u32>)]) {
        let mut t = table(initial);
        let mut p = Poptrie4::build(&t);
        for &(a, l, nh) in changes {
            let q = Prefix4::containing(a, l);
            match nh {
                Some(nh) => {
                    t.insert(q, nh);
                }
                None => {
                    t.remove(q);
                }
            }
            p.update(&t, q);
        }
        let mut addrs = probes(&t);
        addrs.extend(changes.iter().map(|c| c.0));
        let fresh = Poptrie4::build(&t);
        for &a in &addrs {
            let want = reference(&t, a);
            assert_eq!(p.lookup(a), want, "{a:#x}");
            assert_eq!(fresh.lookup(a), want, "{a:#x}");
        }
    }

    #[test]
    fn updates_match_a_fresh_build() {
        // A host route in and out under a /16, a /12 over it replaced, a default route.
        check_updates(
            &[(0xc0a8_0000, 16, 1), (0xc0a8_1000, 20, 2)],
            &[
                (0xc0a8_1234, 32, Some(3)),
                (0xc0a0_0000, 12, Some(4)),
                (0xc0a8_1234, 32, None),
                (0xc0a0_0000, 12, Some(5)),
                (0, 0, Some(6)),
                (0xc0a8_1000, 20, None),
                (0xc0a8_0000, 16, None),
            ],
        );
    }

    #[test]
    fn dead_subtrees_are_reclaimed() {
        let mut t = table(&[(0x0a00_0000, 24, 1)]);
        let mut p = Poptrie4::build(&t);
        for i in 0..1000u32 {
            let q = Prefix4::containing(0x0a00_0000 | (i % 256), 32);
            t.insert(q, i);
            p.update(&t, q);
        }
        // 1000 rebuilds of one slot leave at most as many dead nodes and leaves as live ones
        // (then everything is rebuilt), so the trie stays within twice a fresh build's size.
        let (nodes, leaves) = p.counts();
        let (fresh_nodes, fresh_leaves) = Poptrie4::build(&t).counts();
        assert!(
            nodes <= 2 * fresh_nodes + 4,
            "{nodes} nodes, {fresh_nodes} fresh"
        );
        assert!(
            leaves <= 2 * fresh_leaves + 64,
            "{leaves} leaves, {fresh_leaves} fresh"
        );
        check_updates(&[(0x0a00_0000, 24, 1)], &[(0x0a00_0007, 32, Some(9))]);
    }

    #[test]
    fn a_full_table_against_dir_24_8() {
        let mut rng = crate::fib::synth::Rng::new(7);
        let mut routes = crate::fib::synth::v4_prefixes(200_000, &mut rng);
        let long = crate::fib::synth::v4_long_prefixes(&routes, 6_000, &mut rng);
        routes.extend(long);
        let t = table(
            &routes
                .iter()
                .enumerate()
                .map(|(i, p)| (p.addr(), p.len(), i as u32 % 5000))
                .collect::<Vec<_>>(),
        );
        let p = Poptrie4::build(&t);
        let w = crate::fib::FibWriter::with_routes(t.iter(), std::iter::empty()).unwrap();
        let fib = w.reader().load_full();
        let addrs: Vec<u32> = (0..1_000_000).map(|_| rng.next_u32()).collect();
        let (mut a, mut b) = (vec![0; 256], vec![0; 256]);
        for chunk in addrs.chunks(256) {
            p.lookup_batch(chunk, &mut a);
            fib.v4().lookup_batch(chunk, &mut b);
            assert_eq!(a[..chunk.len()], b[..chunk.len()]);
        }
        assert!(p.memory_bytes() < fib.v4().memory_bytes() / 4);
    }

    fn table6(routes: &[(u128, u8, u32)]) -> RouteTable<u128> {
        let mut t = RouteTable::new();
        for &(a, l, nh) in routes {
            t.insert(Prefix6::containing(a, l), nh);
        }
        t
    }

    /// IPv6: every route's ends and neighbours, and some fixed addresses, against the
    /// reference, one by one and batched.
    fn check6(routes: &[(u128, u8, u32)]) {
        let t = table6(routes);
        for p in [Poptrie6::build(&t), Poptrie6::build_with(&t, TOP_BITS)] {
            check6_one(&t, &p);
        }
    }

    fn check6_one(t: &RouteTable<u128>, p: &Poptrie6) {
        let mut addrs = vec![0, 1, u128::MAX, 1 << 127];
        for (q, _) in t.iter() {
            let (a, z) = (q.addr(), q.last());
            addrs.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1), a | 0x5555]);
        }
        let mut out = vec![0; addrs.len()];
        p.lookup_batch(&addrs, &mut out);
        for (&a, &got) in addrs.iter().zip(&out) {
            let want = t.lookup(a).map_or(NO_ROUTE, |(_, nh)| nh);
            assert_eq!(got, want, "{a:#x}");
            assert_eq!(p.lookup(a), want, "{a:#x}");
        }
    }

    const DOC6: u128 = 0x2001_0db8 << 96;

    #[test]
    fn ipv6_edge_cases() {
        check6(&[]);
        check6(&[(0, 0, 7)]);
        // Host routes, a /127, routes at every stride edge (18, 24, ... 120, 126) under a /32.
        let mut r: Vec<_> = (33..=128u8)
            .map(|l| (DOC6 | (1u128 << (128 - l as u32)), l, l as u32))
            .collect();
        r.push((DOC6, 32, 100));
        r.push((u128::MAX, 128, 1));
        r.push((0, 128, 2));
        check6(&r);
    }

    proptest! {
        #[test]
        fn ipv6_matches_the_reference(
            routes in prop::collection::vec((any::<u64>(), any::<u32>(), 16u8..=128, 0u32..1000), 0..150),
        ) {
            // Under 2001:db8::/32, so that routes overlap and nest.
            let r: Vec<_> = routes
                .iter()
                .map(|&(hi, lo, l, nh)| (DOC6 | (hi as u128) << 32 | lo as u128, l, nh))
                .collect();
            check6(&r);
        }

        #[test]
        fn ipv6_updates_match_a_fresh_build(
            changes in prop::collection::vec((any::<u16>(), 20u8..=128, prop::option::of(0u32..50)), 1..60),
        ) {
            let mut t = table6(&[(DOC6, 32, 1)]);
            let mut p = Poptrie6::build(&t);
            for &(x, l, nh) in &changes {
                let q = Prefix6::containing(DOC6 | (x as u128) << 80 | x as u128, l);
                match nh {
                    Some(nh) => t.insert(q, nh),
                    None => t.remove(q),
                };
                p.update(&t, q);
            }
            let fresh = Poptrie6::build(&t);
            for &(x, _, _) in &changes {
                let a = DOC6 | (x as u128) << 80 | x as u128;
                let want = t.lookup(a).map_or(NO_ROUTE, |(_, nh)| nh);
                prop_assert_eq!(p.lookup(a), want);
                prop_assert_eq!(fresh.lookup(a), want);
            }
        }
    }

    #[test]
    fn an_ipv6_table_against_the_stride_trie() {
        let mut rng = crate::fib::synth::Rng::new(9);
        let mut routes = crate::fib::synth::v6_prefixes(50_000, &mut rng);
        let long = crate::fib::synth::v6_long_prefixes(&routes, 2_000, &mut rng);
        routes.extend(long);
        let t = table6(
            &routes
                .iter()
                .enumerate()
                .map(|(i, q)| (q.addr(), q.len(), i as u32 % 5000))
                .collect::<Vec<_>>(),
        );
        let p = Poptrie6::build(&t);
        let w = crate::fib::FibWriter::with_routes(std::iter::empty(), t.iter()).unwrap();
        let fib = w.reader().load_full();
        // Addresses inside the routes, and some anywhere.
        let mut addrs: Vec<u128> = routes.iter().map(|q| q.addr() | 0x1234).collect();
        addrs.extend((0..20_000).map(|_| (rng.next_u32() as u128) << 96 | rng.next_u32() as u128));
        let (mut a, mut b) = (vec![0; 256], vec![0; 256]);
        for chunk in addrs.chunks(256) {
            p.lookup_batch(chunk, &mut a);
            fib.v6().lookup_batch(chunk, &mut b);
            assert_eq!(a[..chunk.len()], b[..chunk.len()]);
        }
        assert!(p.memory_bytes() < fib.v6().memory_bytes() / 4);
    }
}
