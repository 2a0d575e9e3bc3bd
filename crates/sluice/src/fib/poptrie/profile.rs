//! A diagnostic of the trie's shape and of where lookups spend their levels.

use super::{root_nodes, upto, Key, Poptrie, BLOCK, INDEX, STRIDE};
use crate::fib::CHILD;
use std::sync::atomic::Ordering::*;

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

impl<A: Key> Poptrie<A> {
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
}
