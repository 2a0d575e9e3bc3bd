//! The update side of a multibit trie with fixed strides: a first level indexed by the top
//! `TOP_BITS` of the address, then 256-entry nodes indexed by 8 bits each. IPv4 uses 24 + 8
//! (DIR-24-8), IPv6 16 + 8 × 14.
//!
//! Prefixes are stored by controlled prefix expansion: a /20 fills 16 first-level cells, a /26
//! fills 64 cells of one node. Each cell remembers (writer side only, in `depth`) the length of
//! the prefix that painted it, so an update repaints exactly the cells the prefix governs and
//! leaves the ones owned by more-specifics alone, without a rebuild: adding `P/len` repaints
//! cells of depth ≤ `len` inside `P`; deleting it repaints the same cells with its covering
//! route (their depth is exactly `len` while `P` exists). This is the scheme of DPDK's rte_lpm,
//! with the depths kept apart from the lookup entries so a leaf can carry a full 31-bit next
//! hop.
//!
//! Every cell write goes through `write`, which also appends it to a log, so the same
//! writes can be replayed on the second instance of the left-right pair (see `publish`): both
//! instances stay identical cell for cell, and only one copy of the depths is needed.
//!
//! `Cells` holds the lookup side of either table (first level and node area, their memory
//! figures and their huge-page-advised copy), so `ip4` and `ip6` keep only their lookups.

use super::{CHILD, NO_ROUTE};
use sluice::sys::mem;

/// The lookup side of a stride trie: the cells the fast path reads.
pub(crate) trait StrideTable {
    fn top(&self) -> &[u32];
    fn top_mut(&mut self) -> &mut [u32];
    fn nodes(&self) -> &[u32];
    fn nodes_mut(&mut self) -> &mut Vec<u32>;
}

/// The cells of one stride trie, as both `Ip4Lpm` and `Ip6Lpm` hold them: a first level of
/// `TOP` cells (a fixed-size array, so an index below `TOP` needs no bounds check) and the
/// node area, 256 cells a node.
pub(crate) struct Cells<const TOP: usize> {
    pub(crate) top: Box<[u32; TOP]>,
    pub(crate) nodes: Vec<u32>,
}

impl<const TOP: usize> Cells<TOP> {
    /// A table with no routes.
    pub(crate) fn new() -> Cells<TOP> {
        Cells {
            top: mem::table(NO_ROUTE),
            nodes: Vec::new(),
        }
    }

    /// Bytes the fast path can touch: the first level and the nodes that exist. Spare
    /// capacity of the node area (it grows by doubling) is never written, so it stays address
    /// space, not memory; counting it made a 165 MiB IPv6 table read 256 MiB.
    pub(crate) fn memory_bytes(&self) -> usize {
        TOP * 4 + self.nodes.len() * 4
    }

    /// Nodes allocated (including free ones).
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len() >> 8
    }
}

impl<const TOP: usize> Clone for Cells<TOP> {
    fn clone(&self) -> Cells<TOP> {
        // Not derived: `Box<[u32; N]>::clone` would build the 64 MiB array on the stack.
        Cells {
            top: mem::copy(&self.top),
            nodes: mem::copy_nodes(&self.nodes),
        }
    }
}

impl<const TOP: usize> StrideTable for Cells<TOP> {
    fn top(&self) -> &[u32] {
        &self.top[..]
    }
    fn top_mut(&mut self) -> &mut [u32] {
        &mut self.top[..]
    }
    fn nodes(&self) -> &[u32] {
        &self.nodes
    }
    fn nodes_mut(&mut self) -> &mut Vec<u32> {
        &mut self.nodes
    }
}

/// One change to a table's cells, as recorded for replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    Top(u32, u32),
    /// Top cells `start..end` all get the value: a short prefix writes runs of them.
    TopRun(u32, u32, u32),
    Node(usize, u32),
    /// The node area grows to this many nodes (new cells are filled before they are linked).
    Grow(usize),
}

#[derive(Clone, Copy)]
enum Cell {
    Top(usize),
    Node(usize),
}

/// Writer-side state of one stride trie: the depth of every cell and the free nodes.
#[derive(Clone, Debug)]
pub(crate) struct StrideBuilder {
    top_bits: u8,
    top_depth: Vec<u8>,
    node_depth: Vec<u8>,
    nodes: usize,
    free: Vec<u32>,
    log: Vec<Write>,
    logging: bool,
}

impl StrideBuilder {
    pub(crate) fn new(top_bits: u8) -> StrideBuilder {
        StrideBuilder {
            top_bits,
            top_depth: vec![0; 1 << top_bits],
            node_depth: Vec::new(),
            nodes: 0,
            free: Vec::new(),
            log: Vec::new(),
            logging: true,
        }
    }

    /// Bulk loading writes a whole table once and then copies it, so it needs no log.
    pub(crate) fn set_logging(&mut self, on: bool) {
        self.logging = on;
    }

    pub(crate) fn take_log(&mut self) -> Vec<Write> {
        std::mem::take(&mut self.log)
    }

    /// Nodes in use (allocated and not free).
    pub(crate) fn live_nodes(&self) -> usize {
        self.nodes - self.free.len()
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.top_depth.capacity()
            + self.node_depth.capacity()
            + self.free.capacity() * 4
            + self.log.capacity() * std::mem::size_of::<Write>()
    }

    fn read<T: StrideTable>(&self, t: &T, c: Cell) -> (u32, u8) {
        match c {
            Cell::Top(i) => (
                t.top().get(i).copied().unwrap_or(NO_ROUTE),
                self.top_depth.get(i).copied().unwrap_or(0),
            ),
            Cell::Node(i) => (
                t.nodes().get(i).copied().unwrap_or(NO_ROUTE),
                self.node_depth.get(i).copied().unwrap_or(0),
            ),
        }
    }

    fn write<T: StrideTable>(&mut self, t: &mut T, c: Cell, entry: u32, depth: u8) {
        match c {
            Cell::Top(i) => {
                if let (Some(e), Some(d)) = (t.top_mut().get_mut(i), self.top_depth.get_mut(i)) {
                    *e = entry;
                    *d = depth;
                    if self.logging {
                        let i = i as u32;
                        let merged = match self.log.last_mut() {
                            Some(Write::TopRun(_, end, v)) if *end == i && *v == entry => {
                                *end += 1;
                                true
                            }
                            Some(last) if i > 0 && *last == Write::Top(i - 1, entry) => {
                                *last = Write::TopRun(i - 1, i + 1, entry);
                                true
                            }
                            _ => false,
                        };
                        if !merged {
                            self.log.push(Write::Top(i, entry));
                        }
                    }
                }
            }
            Cell::Node(i) => {
                if let (Some(e), Some(d)) = (t.nodes_mut().get_mut(i), self.node_depth.get_mut(i)) {
                    *e = entry;
                    *d = depth;
                    if self.logging {
                        self.log.push(Write::Node(i, entry));
                    }
                }
            }
        }
    }

    /// A node whose 256 cells all hold `entry` at `depth`.
    fn alloc_node<T: StrideTable>(&mut self, t: &mut T, entry: u32, depth: u8) -> u32 {
        let n = match self.free.pop() {
            Some(n) => n,
            None => {
                let n = self.nodes as u32;
                self.nodes += 1;
                mem::resize_nodes(t.nodes_mut(), self.nodes << 8, NO_ROUTE);
                self.node_depth.resize(self.nodes << 8, 0);
                if self.logging {
                    self.log.push(Write::Grow(self.nodes));
                }
                n
            }
        };
        let base = (n as usize) << 8;
        for i in base..base + 256 {
            self.write(t, Cell::Node(i), entry, depth);
        }
        n
    }

    /// Gives every cell inside `addr/len` (left-aligned address, host bits clear) whose depth is
    /// at most `len` the leaf `entry` with depth `depth`. Adding a route paints its own next hop
    /// at its own length; deleting one paints its covering route's.
    pub(crate) fn paint<T: StrideTable>(
        &mut self,
        t: &mut T,
        addr: u128,
        len: u8,
        entry: u32,
        depth: u8,
    ) {
        let mut node: Option<u32> = None;
        let mut start = 0u8;
        let mut bits = self.top_bits;
        loop {
            let end = start + bits;
            let idx = ((addr << start) >> (128 - bits as u32)) as usize;
            let cell = |i: usize| match node {
                None => Cell::Top(i),
                Some(n) => Cell::Node(((n as usize) << 8) | i),
            };
            if len <= end {
                // Host bits are clear, so `idx` is the first of the 2^(end-len) cells.
                let count = 1usize << (end - len);
                for i in idx..idx + count {
                    self.paint_cell(t, cell(i), len, entry, depth);
                }
                return;
            }
            if end >= 128 {
                return;
            }
            let c = cell(idx);
            let (e, d) = self.read(t, c);
            let child = if e & CHILD != 0 {
                e & !CHILD
            } else {
                // The new node inherits the cell's leaf, so lookups below it are unchanged.
                let n = self.alloc_node(t, e, d);
                self.write(t, c, CHILD | n, 0);
                n
            };
            node = Some(child);
            start = end;
            bits = 8;
        }
    }

    fn paint_cell<T: StrideTable>(&mut self, t: &mut T, c: Cell, len: u8, entry: u32, depth: u8) {
        let (e, d) = self.read(t, c);
        if e & CHILD != 0 {
            let base = ((e & !CHILD) as usize) << 8;
            for i in base..base + 256 {
                self.paint_cell(t, Cell::Node(i), len, entry, depth);
            }
        } else if d <= len && (e, d) != (entry, depth) {
            self.write(t, c, entry, depth);
        }
    }

    /// After a delete of `addr/len`: frees, bottom-up, the nodes on its path that no longer hold
    /// anything longer than their parent cell (all their cells then carry the same leaf).
    pub(crate) fn collapse<T: StrideTable>(&mut self, t: &mut T, addr: u128, len: u8) {
        // (parent cell, node, first bit the node indexes)
        let mut path: Vec<(Cell, u32, u8)> = Vec::new();
        let mut start = 0u8;
        let mut bits = self.top_bits;
        let mut node: Option<u32> = None;
        loop {
            let end = start + bits;
            if len <= end || end >= 128 {
                break;
            }
            let idx = ((addr << start) >> (128 - bits as u32)) as usize;
            let c = match node {
                None => Cell::Top(idx),
                Some(n) => Cell::Node(((n as usize) << 8) | idx),
            };
            let (e, _) = self.read(t, c);
            if e & CHILD == 0 {
                break;
            }
            let child = e & !CHILD;
            path.push((c, child, end));
            node = Some(child);
            start = end;
            bits = 8;
        }
        for &(cell, n, node_start) in path.iter().rev() {
            let base = (n as usize) << 8;
            let (first, first_depth) = self.read(t, Cell::Node(base));
            let uniform = (base..base + 256).all(|i| {
                let (e, d) = self.read(t, Cell::Node(i));
                e & CHILD == 0 && d <= node_start
            });
            if !uniform {
                return;
            }
            self.write(t, cell, first, first_depth);
            self.free.push(n);
        }
    }
}

/// Applies logged writes to the other instance of a pair.
pub(crate) fn replay<T: StrideTable>(t: &mut T, log: &[Write]) {
    for w in log {
        match *w {
            Write::Top(i, v) => {
                if let Some(e) = t.top_mut().get_mut(i as usize) {
                    *e = v;
                }
            }
            Write::TopRun(start, end, v) => {
                if let Some(run) = t.top_mut().get_mut(start as usize..end as usize) {
                    run.fill(v);
                }
            }
            Write::Node(i, v) => {
                if let Some(e) = t.nodes_mut().get_mut(i) {
                    *e = v;
                }
            }
            Write::Grow(n) => mem::resize_nodes(t.nodes_mut(), n << 8, NO_ROUTE),
        }
    }
}
