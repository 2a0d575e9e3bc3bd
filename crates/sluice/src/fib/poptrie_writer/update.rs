//! The writer's change of one prefix, in place: the path from the slot's root down to the
//! node the change ends in, that node made anew (or only its leaves' next hops, stored at
//! `commit`), and the one word that publishes it: the node's bases, its parent's, or the
//! slot's entry. A change ending in the bits a block resolves copies the block instead.

use super::PoptrieWriter;
use crate::fib::poptrie::{upto, Key, BLOCK, BLOCK_NODES, INDEX, STRIDE};
use crate::fib::poptrie_build::{by_child, node_routes, runs_hold, split, Node, Route, Subtrees};
use crate::fib::prefix::Prefix;
use crate::fib::routes::RouteTable;
use crate::fib::{CHILD, NO_ROUTE};

/// Where a change becomes visible: a node's bases, or the slot's top-level entry.
enum Publish {
    Bases(u32, u64),
    Entry(u32),
}

/// A node's bases as one word: node base low, leaf base high.
fn bases(n: &Node) -> u64 {
    n.base_node as u64 | (n.base_leaf as u64) << 32
}

impl<A: Key> PoptrieWriter<A> {
    /// Remakes only what `changed` touches (see the module's comment). False if it does not
    /// fit in the room.
    pub(super) fn update_path(&mut self, routes: &RouteTable<A>, changed: Prefix<A>) -> bool {
        let bits = self.trie.top_bits();
        let (addr, len) = (changed.addr(), changed.len() as u32);
        let slot = addr.top(bits);
        let root = self.entry(slot);
        if root & CHILD == 0 || len <= bits {
            return self.update_slot(routes, slot);
        }
        // A slot with no route longer than the top level left becomes a leaf.
        if !has_longer(routes, Prefix::containing(addr, bits as u8)) {
            return self.update_slot(routes, slot);
        }
        if root & BLOCK != 0 && len <= bits + STRIDE {
            return self.update_block(routes, changed, root);
        }
        let Some((path, depth)) = self.path_to(changed, root) else {
            return self.update_slot(routes, slot);
        };
        // What to make anew under the last node: the change, or the child it lies in. The
        // node stays a node even with no longer route left under it (a fresh build would
        // make it a leaf of its parent): its shape, and so its parent's, does not change, and
        // the change is published in one word. Reclaimed at the next whole rebuild.
        let target = Prefix::containing(addr, len.min(depth + STRIDE) as u8);
        let Some(&(at, old)) = path.last() else {
            return self.update_slot(routes, slot);
        };
        let mut built = self.scratch();
        let leaves = self.leaves_of(old);
        let leaf = |i: u32| {
            let k = i.wrapping_sub(old.base_leaf) as usize;
            leaves.get(k).copied().unwrap_or(NO_ROUTE)
        };
        let mut stores = Vec::new();
        let keep = self.children_keep_shape(routes, old, target, depth, &mut stores);
        let remake = |built: &mut Subtrees, this: &Self, keep_children: bool| {
            built.remake(
                old,
                |k| this.node(k).unwrap_or_default(),
                leaf,
                routes,
                target,
                depth,
                keep_children,
            )
        };
        let mut new = remake(&mut built, self, keep);
        if keep && (new.vector, new.leafvec) == (old.vector, old.leafvec) {
            self.pend_leaf_stores(old, &leaves, &built, new, stores);
            self.scratch = built;
            return true;
        }
        if keep {
            // The node's shape changes: made anew, with its children.
            self.scratch = built;
            built = self.scratch();
            new = remake(&mut built, self, false);
        }
        // The node is made anew, with its pending next hops (if any).
        self.forget_leaves(old);
        let (dead_nodes, dead_leaves) = self.retire_remade(old, new, target, depth);
        let (publish, moved) = self.publish_point(&path, addr, depth, root, new, &mut built);
        if !self.place(built) {
            return false;
        }
        self.dead_nodes += dead_nodes + moved;
        self.dead_leaves += dead_leaves;
        match publish {
            Publish::Bases(node, b) => {
                if node != at {
                    // The node moved into its parent's new array.
                    self.pending_bases.remove(&at);
                }
                self.pending_bases.insert(node, b);
            }
            Publish::Entry(entry) => {
                self.pending_bases.remove(&at);
                self.pending.insert(slot, entry);
            }
        }
        true
    }

    /// The nodes (index, node) from the slot's root (`root`, its entry) down to the one
    /// `changed` ends in, or the deepest there is, and that node's depth. Under a block,
    /// from the block's node on. None if a node is missing (a malformed trie).
    fn path_to(&self, changed: Prefix<A>, root: u32) -> Option<(Vec<(u32, Node)>, u32)> {
        let (addr, len) = (changed.addr(), changed.len() as u32);
        let mut path = Vec::new();
        let mut at = root & INDEX;
        let mut depth = self.trie.top_bits();
        if root & BLOCK != 0 {
            at += addr.chunk(depth);
            depth += STRIDE;
        }
        loop {
            let n = self.node(at)?;
            path.push((at, n));
            let c = addr.chunk(depth);
            if len <= depth + STRIDE || n.vector & (1 << c) == 0 {
                return Some((path, depth));
            }
            at = n.base_node + upto(n.vector, c) - 1;
            depth += STRIDE;
        }
    }

    /// Whether the node children of `old` (at `depth`) under `target` keep their shape (a
    /// shorter prefix's next hop is pushed into the leaves below it): then, if the node
    /// keeps its own too, only next hops of leaves change, which `commit` stores in place,
    /// each in one word (a reader finds the old one or the new one). Nothing is written into
    /// the room and nothing dies, so such changes never bring a whole rebuild nearer. The
    /// children's stores are added to `stores`.
    fn children_keep_shape(
        &self,
        routes: &RouteTable<A>,
        old: Node,
        target: Prefix<A>,
        depth: u32,
        stores: &mut Vec<(u32, u32, u32)>,
    ) -> bool {
        let lo = target.addr().chunk(depth);
        let span = 1u32 << (depth + STRIDE - target.len() as u32);
        (lo..lo + span)
            .filter(|&c| old.vector & (1 << c) != 0)
            .all(|c| {
                let child = old.base_node + upto(old.vector, c) - 1;
                let a = target.addr().to_left_u128() | (c as u128) << (128 - depth - STRIDE);
                let block = Prefix::containing(A::from_left_u128(a), (depth + STRIDE) as u8);
                let (long, default) = node_routes(routes, block);
                self.refresh(child, &long, depth + STRIDE, default, stores)
            })
    }

    /// The change keeps `old`'s shape and children: the next hops of its leaves that differ
    /// in `new` (remade into `built`), and the children's `stores`, wait for `commit` to
    /// store them in place.
    fn pend_leaf_stores(
        &mut self,
        old: Node,
        leaves: &[u32; 64],
        built: &Subtrees,
        new: Node,
        mut stores: Vec<(u32, u32, u32)>,
    ) {
        let first = (new.base_leaf as usize).wrapping_sub(built.leaf_base);
        for k in 0..old.leafvec.count_ones() {
            let Some(&nh) = built.leaves.get(first + k as usize) else {
                continue;
            };
            if leaves[k as usize % 64] != nh {
                stores.push((old.base_leaf, old.base_leaf + k, nh));
            }
        }
        for (node_leaf, i, nh) in stores {
            self.pending_leaves.insert(i, nh);
            self.pending_nodes.insert(node_leaf);
        }
    }

    /// Retires what `old` (at `depth`) held that its remade `new` does not share: its
    /// children array unless kept, its leaves, and the subtrees of its children under
    /// `target`. The dead nodes and leaves.
    fn retire_remade(
        &mut self,
        old: Node,
        new: Node,
        target: Prefix<A>,
        depth: u32,
    ) -> (usize, usize) {
        let kept_children = new.base_node == old.base_node;
        let (mut dead_nodes, mut dead_leaves) = (
            (!kept_children as usize) * old.vector.count_ones() as usize,
            old.leafvec.count_ones() as usize,
        );
        let lo = target.addr().chunk(depth);
        for c in lo..lo + (1 << (depth + STRIDE - target.len() as u32)) {
            if old.vector & (1 << c) != 0 {
                let child = old.base_node + upto(old.vector, c) - 1;
                let (n, l) = self.retire(CHILD | child);
                dead_nodes += n - 1;
                dead_leaves += l;
            }
        }
        (dead_nodes, dead_leaves)
    }

    /// Where the remade last node of `path` (at `depth` on `addr`'s path, `new`) becomes
    /// visible: its own bases if its shape is the same, else its parent's, pointing at a copy
    /// of the parent's children array holding it, else (a slot's root) the entry of a copy of
    /// the block holding it, or of the node itself. Copies go into `built`. With the nodes
    /// that the copy leaves dead.
    fn publish_point(
        &self,
        path: &[(u32, Node)],
        addr: A,
        depth: u32,
        root: u32,
        new: Node,
        built: &mut Subtrees,
    ) -> (Publish, usize) {
        // `update_path` passes a path of at least one node; without one, as for a root.
        let Some(&(at, old)) = path.last() else {
            return (Publish::Entry(built.push(new)), 1);
        };
        if (new.vector, new.leafvec) == (old.vector, old.leafvec) {
            (Publish::Bases(at, bases(&new)), 0)
        } else if path.len() >= 2 {
            let (parent_at, parent) = path[path.len() - 2];
            let c = addr.chunk(depth - STRIDE);
            let first = built.next_node() as u32;
            let rank = upto(parent.vector, c) - 1;
            for k in 0..parent.vector.count_ones() {
                let sibling = if k == rank {
                    new
                } else {
                    self.node(parent.base_node + k).unwrap_or_default()
                };
                built.nodes.push(sibling);
            }
            let moved = Node {
                base_node: first,
                ..parent
            };
            let dead = parent.vector.count_ones() as usize;
            (Publish::Bases(parent_at, bases(&moved)), dead)
        } else if root & BLOCK != 0 {
            // A block's node changed shape: a copy of the block holding it.
            let (first, c) = (built.next_node() as u32, addr.chunk(self.trie.top_bits()));
            for k in 0..BLOCK_NODES {
                let node = if k == c {
                    new
                } else {
                    self.node((root & INDEX) + k).unwrap_or_default()
                };
                built.nodes.push(node);
            }
            (Publish::Entry(CHILD | BLOCK | first), BLOCK_NODES as usize)
        } else {
            (Publish::Entry(built.push(new)), 1)
        }
    }

    /// The next hops to store in place (the node's first leaf, the leaf, the next hop) so that
    /// node `i`'s subtree, at `depth`, answers as the routes `long` (those longer than `depth`
    /// under it, sorted) and `default` (what the shorter ones give it) say, if every node in
    /// it keeps its shape; false if one would not (and `stores` is then of no use). As
    /// `Subtrees::make` builds a subtree, without writing it.
    fn refresh(
        &self,
        i: u32,
        long: &[Route<A>],
        depth: u32,
        default: u32,
        stores: &mut Vec<(u32, u32, u32)>,
    ) -> bool {
        let Some(n) = self.node(i) else {
            return false;
        };
        let mut value = [default; 64];
        let (deeper, vector) = split(long, depth, &mut value);
        if vector != n.vector || !runs_hold(&value, vector, n.leafvec) {
            return false;
        }
        let leaves = self.leaves_of(n);
        let mut k = 0;
        for c in 0..64u32 {
            if n.leafvec & (1 << c) == 0 {
                continue;
            }
            if leaves[k as usize % 64] != value[c as usize] {
                stores.push((n.base_leaf, n.base_leaf + k, value[c as usize]));
            }
            k += 1;
        }
        // The node children, in order, are the children that routes go deeper under.
        let all_hold = by_child(&deeper, depth).enumerate().all(|(rank, g)| {
            let c = g[0].0.chunk(depth) as usize;
            depth < A::BITS as u32
                && self.refresh(
                    n.base_node + rank as u32,
                    g,
                    depth + STRIDE,
                    value[c % 64],
                    stores,
                )
        });
        all_hold
    }

    /// A change of a prefix ending in the 6 bits a block resolves (`root`, the slot's entry):
    /// a copy of the block whose nodes under `changed` are made anew, the others kept with
    /// their subtrees shared. False if it does not fit.
    fn update_block(&mut self, routes: &RouteTable<A>, changed: Prefix<A>, root: u32) -> bool {
        let bits = self.trie.top_bits();
        let (addr, len) = (changed.addr(), changed.len() as u32);
        let slot = addr.top(bits);
        let lo = addr.chunk(bits);
        let inside = lo..lo + (1 << (bits + STRIDE - len));
        let old = root & INDEX;
        let mut built = self.scratch();
        let first = built.node_base;
        built.nodes.resize(BLOCK_NODES as usize, Node::default());
        for c in 0..BLOCK_NODES {
            built.nodes[c as usize] = if inside.contains(&c) {
                let slot6 = slot << STRIDE | c as usize;
                let child =
                    Prefix::containing(A::of_slot(slot6, bits + STRIDE), (bits + STRIDE) as u8);
                let (long, default) = node_routes(routes, child);
                built.make(&long, bits + STRIDE, default)
            } else {
                self.node(old + c).unwrap_or_default()
            };
        }
        if !self.place(built) {
            return false;
        }
        // Dead: the old block, and what was under its nodes made anew.
        self.dead_nodes += (BLOCK_NODES - (inside.end - inside.start)) as usize;
        for c in inside {
            let (n, l) = self.retire(CHILD | (old + c));
            self.dead_nodes += n;
            self.dead_leaves += l;
        }
        self.pending.insert(slot, CHILD | BLOCK | first as u32);
        true
    }
}

/// Whether `routes` has a route longer than `block` inside it. The range starts at `block`
/// itself, then its more-specifics in address order: at most two entries are looked at.
fn has_longer<A: Key>(routes: &RouteTable<A>, block: Prefix<A>) -> bool {
    routes
        .within(block)
        .take(2)
        .any(|(p, _)| p.len() > block.len())
}
