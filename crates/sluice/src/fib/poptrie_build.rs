//! Building Poptrie subtrees in plain memory, from the route table: a whole table at once, or
//! the subtree of one top-level slot for an update. The nodes and leaves are numbered as they
//! will sit in the trie's arrays (from `node_base` and `leaf_base` on), so the writer copies
//! them there unchanged.

use super::poptrie::{upto, Key, BLOCK, BLOCK_NODES, STRIDE};
use super::prefix::Prefix;
use super::routes::RouteTable;
use super::{CHILD, NO_ROUTE};

/// A node: which of its 64 children are nodes (`vector`) and where runs of equal leaves start
/// among the others (`leafvec`); its node children from `base_node` on, its leaves from
/// `base_leaf` on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Node {
    pub vector: u64,
    pub leafvec: u64,
    pub base_node: u32,
    pub base_leaf: u32,
}

/// A route as the builder takes it: address, length, next hop.
pub(super) type Route<A> = (A, u8, u32);

/// Nodes and leaves built for the trie's arrays from index `node_base` and `leaf_base` on.
#[derive(Debug, Default)]
pub(super) struct Subtrees {
    pub node_base: usize,
    pub leaf_base: usize,
    pub nodes: Vec<Node>,
    pub leaves: Vec<u32>,
}

impl Subtrees {
    pub fn new(node_base: usize, leaf_base: usize) -> Subtrees {
        Subtrees {
            node_base,
            leaf_base,
            nodes: Vec::new(),
            leaves: Vec::new(),
        }
    }

    /// The top-level value of the addresses whose first `depth` bits `long` share: `default`
    /// (what the shorter routes give) when `long` is empty, else a link to a new subtree:
    /// a block of 64 nodes if its root would have at least `block_min` node children, else
    /// the root node. `long` holds the routes longer than `depth` among them, sorted by
    /// address.
    pub fn subtree<A: Key>(
        &mut self,
        long: &[Route<A>],
        depth: u32,
        default: u32,
        block_min: u32,
    ) -> u32 {
        if long.is_empty() {
            return default;
        }
        let mut value = [default; 64];
        let (deeper, vector) = split(long, depth, &mut value);
        if vector.count_ones() < block_min {
            let root = self.make(long, depth, default);
            return self.push(root);
        }
        // A block: the root's 64 children as nodes side by side, those that would be leaves
        // as nodes of one leaf.
        let first = self.nodes.len();
        self.nodes
            .resize(first + BLOCK_NODES as usize, Node::default());
        let mut groups = by_child(&deeper, depth).peekable();
        for c in 0..BLOCK_NODES {
            let g = groups.next_if(|g| g[0].0.chunk(depth) == c).unwrap_or(&[]);
            self.nodes[first + c as usize] = self.make(g, depth + STRIDE, value[c as usize]);
        }
        CHILD | BLOCK | (self.node_base + first) as u32
    }

    /// Appends `node` on its own; returns the link to it.
    pub fn push(&mut self, node: Node) -> u32 {
        self.nodes.push(node);
        CHILD | (self.node_base + self.nodes.len() - 1) as u32
    }

    /// The next node's index in the trie.
    pub fn next_node(&self) -> usize {
        self.node_base + self.nodes.len()
    }

    /// A node for the addresses whose first `depth` bits `routes` share (the routes longer
    /// than `depth` among them, sorted by address; `default` is what the shorter routes give
    /// there), its children and leaves appended; the node itself is returned, for the caller
    /// to place.
    pub fn make<A: Key>(&mut self, routes: &[Route<A>], depth: u32, default: u32) -> Node {
        let mut value = [default; 64];
        let (deeper, vector) = split(routes, depth, &mut value);
        let groups = by_child(&deeper, depth);
        // Leaves: one entry per run of equal values among the children that are not nodes.
        let base_leaf = (self.leaf_base + self.leaves.len()) as u32;
        let leafvec = runs(&value, vector);
        self.leaves.extend(
            (0..64)
                .filter(|&c| leafvec & (1 << c) != 0)
                .map(|c| value[c]),
        );
        // The node children next to each other, then each made (its own children after).
        let first_child = self.nodes.len();
        self.nodes
            .resize(first_child + vector.count_ones() as usize, Node::default());
        for (i, g) in groups.enumerate() {
            let c = g[0].0.chunk(depth) as usize;
            self.nodes[first_child + i] = self.make(g, depth + STRIDE, value[c]);
        }
        Node {
            vector,
            leafvec,
            base_node: (self.node_base + first_child) as u32,
            base_leaf,
        }
    }
}

impl Subtrees {
    /// Node `old` (for a block of `depth` bits) again after a change inside `target`, a
    /// prefix ending within its stride: the children outside `target` keep their values and
    /// subtrees (node children are copied as they are, sharing what is under them), those
    /// inside are made anew from `routes`. Costs the routes under `target`, not those under
    /// the whole node. `old_child(k)` is the node at index `k`, `old_leaf(k)` the leaf. With
    /// `keep_children` the node children are not made anew and the node keeps its children
    /// array: for a caller that has found that they keep their shape, and checks that the
    /// node keeps its own.
    #[allow(clippy::too_many_arguments)]
    pub fn remake<A: Key>(
        &mut self,
        old: Node,
        old_child: impl Fn(u32) -> Node,
        old_leaf: impl Fn(u32) -> u32,
        routes: &RouteTable<A>,
        target: Prefix<A>,
        depth: u32,
        keep_children: bool,
    ) -> Node {
        let len = target.len() as u32;
        debug_assert!(len > depth && len <= depth + STRIDE);
        let lo = target.addr().chunk(depth) as usize;
        let inside = lo..lo + (1usize << (depth + STRIDE - len));
        let mut value = [NO_ROUTE; 64];
        for (c, v) in value.iter_mut().enumerate() {
            if !inside.contains(&c) && old.vector & (1 << c) == 0 {
                *v = old_leaf(old.base_leaf + upto(old.leafvec, c as u32) - 1);
            }
        }
        // Inside: what covers the target, then the routes under it ending in this stride.
        let (cover, within) = routes.covering_and_within(target);
        let cover = cover.map_or(NO_ROUTE, |(_, nh)| nh);
        value[inside.clone()].fill(cover);
        let under: Vec<Route<A>> = within
            .filter(|(p, _)| p.len() as u32 > len)
            .map(|(p, nh)| (p.addr(), p.len(), nh))
            .collect();
        let (deeper, new_nodes) = split(&under, depth, &mut value);
        let groups = by_child(&deeper, depth);
        let outside_mask = !inside.clone().fold(0u64, |m, c| m | 1 << c);
        let vector = old.vector & outside_mask | new_nodes;
        // Leaves: the old runs if the values are still constant on each (so that the node
        // keeps its shape and the change is published in one word, at the price of a run
        // that a fresh build would merge with its neighbour), else runs anew.
        let base_leaf = (self.leaf_base + self.leaves.len()) as u32;
        let leafvec = if vector == old.vector && runs_hold(&value, vector, old.leafvec) {
            old.leafvec
        } else {
            runs(&value, vector)
        };
        self.leaves.extend(
            (0..64)
                .filter(|&c| leafvec & (1 << c) != 0)
                .map(|c| value[c]),
        );
        // Children in child order: kept ones copied, new ones made after the block; the
        // old array itself when no child under the target is or becomes a node.
        let inside_mask = !outside_mask;
        if keep_children || (old.vector | vector) & inside_mask == 0 {
            return Node {
                vector,
                leafvec,
                base_node: old.base_node,
                base_leaf,
            };
        }
        let first_child = self.nodes.len();
        self.nodes
            .resize(first_child + vector.count_ones() as usize, Node::default());
        let mut groups = groups.into_iter().peekable();
        for (k, c) in (0..64u32).filter(|c| vector & (1 << c) != 0).enumerate() {
            self.nodes[first_child + k] = if inside.contains(&(c as usize)) {
                match groups.next() {
                    Some(g) => self.make(g, depth + STRIDE, value[c as usize]),
                    None => Node::default(),
                }
            } else {
                old_child(old.base_node + upto(old.vector, c) - 1)
            };
        }
        Node {
            vector,
            leafvec,
            base_node: (self.node_base + first_child) as u32,
            base_leaf,
        }
    }
}

/// Paints onto `value` (one entry per child of a node at `depth`) the routes of `routes`
/// that end within its stride, so that a longer one overwrites what it covers; returns the
/// routes that go deeper and the map of the children they make nodes. `routes` are in the
/// route table's order (address, then length): a route comes after every route that contains
/// it, so painting them in that order is painting them shortest first.
pub(super) fn split<A: Key>(
    routes: &[Route<A>],
    depth: u32,
    value: &mut [u32; 64],
) -> (Vec<Route<A>>, u64) {
    debug_assert!(routes
        .windows(2)
        .all(|w| (w[0].0, w[0].1) <= (w[1].0, w[1].1)));
    let end = depth + STRIDE;
    let mut deeper = Vec::with_capacity(routes.iter().filter(|r| r.1 as u32 > end).count());
    let mut vector = 0u64;
    for &r in routes {
        let (addr, len, nh) = r;
        let c = addr.chunk(depth);
        if len as u32 <= end {
            let first = c as usize;
            value[first..first + (1usize << (end - len as u32))].fill(nh);
        } else {
            vector |= 1 << c;
            deeper.push(r);
        }
    }
    (deeper, vector)
}

/// `deeper` (sorted by address) cut into one run per child of a node at `depth`, in child
/// order: as many as the node has node children.
pub(super) fn by_child<A: Key>(
    deeper: &[Route<A>],
    depth: u32,
) -> impl Iterator<Item = &[Route<A>]> {
    deeper.chunk_by(move |a, b| a.0.chunk(depth) == b.0.chunk(depth))
}

/// Where runs of equal values start among the children that are not nodes (`vector`).
fn runs(value: &[u32; 64], vector: u64) -> u64 {
    let mut leafvec = 0u64;
    let mut last = None;
    for (c, &v) in value.iter().enumerate() {
        if vector & (1 << c) == 0 && last != Some(v) {
            leafvec |= 1 << c;
            last = Some(v);
        }
    }
    leafvec
}

/// Whether `leafvec`'s runs still describe `value`: each leaf child not starting a run has
/// the value of the leaf child before it.
pub(super) fn runs_hold(value: &[u32; 64], vector: u64, leafvec: u64) -> bool {
    let mut last = None;
    for (c, &v) in value.iter().enumerate() {
        if vector & (1 << c) != 0 {
            continue;
        }
        if leafvec & (1 << c) == 0 && last != Some(v) {
            return false;
        }
        last = Some(v);
    }
    true
}

/// The routes longer than `depth` under `block` and what the others give the whole block:
/// what a node for `block` is made of.
pub(super) fn node_routes<A: Key>(
    routes: &RouteTable<A>,
    block: Prefix<A>,
) -> (Vec<Route<A>>, u32) {
    let (default, within) = routes.covering_and_within(block);
    let default = default.map_or(NO_ROUTE, |(_, nh)| nh);
    let long = within
        .filter(|(p, _)| p.len() > block.len())
        .map(|(p, nh)| (p.addr(), p.len(), nh))
        .collect();
    (long, default)
}

/// Every route of `routes` for a trie whose top level indexes `top_bits` bits: the top level's
/// values and the subtrees (numbered from 0).
/// Slots whose root would have at least `block_min` node children get a block (see
/// `Subtrees::subtree`).
pub(super) fn build_all<A: Key>(
    routes: &RouteTable<A>,
    top_bits: u32,
    block_min: u32,
) -> (Vec<u32>, Subtrees) {
    let all: Vec<Route<A>> = routes
        .iter()
        .map(|(p, nh)| (p.addr(), p.len(), nh))
        .collect();
    let mut top = vec![NO_ROUTE; 1 << top_bits];
    // Routes no longer than the top level are painted over it, shortest first, so that a
    // longer one overwrites the part of a shorter one it covers.
    let mut short: Vec<&Route<A>> = all.iter().filter(|r| r.1 as u32 <= top_bits).collect();
    short.sort_by_key(|r| r.1);
    for &&(addr, len, nh) in &short {
        let first = addr.top(top_bits);
        let n = 1usize << (top_bits - len as u32);
        top[first..first + n].fill(nh);
    }
    // Longer routes, grouped by top-level slot (they are sorted by address).
    let long: Vec<Route<A>> = all.into_iter().filter(|r| r.1 as u32 > top_bits).collect();
    let mut built = Subtrees::new(0, 0);
    for group in long.chunk_by(|a, b| a.0.top(top_bits) == b.0.top(top_bits)) {
        let slot = group[0].0.top(top_bits);
        top[slot] = built.subtree(group, top_bits, top[slot], block_min);
    }
    (top, built)
}

/// The top-level value of `slot` from `routes`, its subtree (if any) appended to `out`.
pub(super) fn build_slot<A: Key>(
    routes: &RouteTable<A>,
    slot: usize,
    top_bits: u32,
    block_min: u32,
    out: &mut Subtrees,
) -> u32 {
    let block = Prefix::containing(A::of_slot(slot, top_bits), top_bits as u8);
    let (long, default) = node_routes(routes, block);
    out.subtree(&long, top_bits, default, block_min)
}
