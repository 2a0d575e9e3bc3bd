//! The node graph and the run-to-completion dispatcher of one worker.
//!
//! A node declares its name, its next nodes by name and its error counters by name; next
//! names are resolved to node indices once, when the graph is built. One pass of the
//! dispatcher polls every input node, then runs pending frames until none are left, so that
//! every packet taken in a pass is transmitted or dropped before the pass ends.

pub mod commands;
pub mod counter;
pub mod epoch;
pub mod features;
pub mod frame;
pub mod names;
pub mod trace;

use crate::buffer::{WorkerBuffers, FLAG_OFFLOAD};
use crate::sys::tsc;
use counter::{CacheAligned, Counter};
use frame::Frame;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use trace::{TraceShared, Tracer};

/// What a node does in the graph; `show runtime` uses it to count rates in, out and drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    /// Polled once per pass: a driver's receive side.
    Input,
    /// Runs when a frame is pending for it.
    Internal,
    /// Hands packets to a driver for transmission.
    Output,
    /// Frees packets that were dropped (the reason is counted by the node that dropped them).
    Drop,
}

/// A graph node. `process` gets the buffer indices of one frame (empty for input nodes) and
/// returns how many packets it handled, for the Vectors column of `show runtime`.
pub trait Node: Send {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize;
    /// Pool buffers this node's driver queues hold, for `show buffers`.
    fn held_buffers(&self) -> usize {
        0
    }
    /// Whether the graph should call `poll` once per pass (nodes with timers or packets
    /// they hold across passes, like ip4-arp).
    fn wants_poll(&self) -> bool {
        false
    }
    /// Work not driven by a frame: timers, releasing held packets. Returns packets handled;
    /// the node's statistics count a poll only when it handled some.
    fn poll(&mut self, _cx: &mut NodeCx<'_>) -> usize {
        0
    }
}

/// A node whose per-frame loop is built twice, with and without trace records, so the plain
/// loop carries no trace test per packet; the graph picks one per frame. Such a node is a
/// [`Node`] by `traced_loop_nodes!`.
pub trait TracedLoop: Send {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]);
}

/// `Node` for each type given, by its [`TracedLoop`]. An impl per node type rather than a
/// blanket `impl<T: TracedLoop> Node for T`: symbols are named by their impl, so under the
/// blanket impl every such node's frames read `<T as sluice::graph::Node>::process` in a
/// profile and flame graphs fold them into one; here each reads, e.g.,
/// `<sluice::l2::nodes::fwd::L2Fwd as sluice::graph::Node>::process`.
macro_rules! traced_loop_nodes {
    ($($node:ty),+ $(,)?) => {
        $(
            impl $crate::graph::Node for $node {
                fn process(&mut self, cx: &mut $crate::graph::NodeCx<'_>, frame: &[u32]) -> usize {
                    if cx.tracing() {
                        $crate::graph::TracedLoop::run::<true>(self, cx, frame);
                    } else {
                        $crate::graph::TracedLoop::run::<false>(self, cx, frame);
                    }
                    frame.len()
                }
            }
        )+
    };
}
pub(crate) use traced_loop_nodes;

/// Passes between two reports of the buffers held by drivers.
const HELD_REPORT_PASSES: u64 = 256;

/// A node as it is added to a graph.
pub struct NodeDecl {
    pub name: String,
    pub kind: NodeKind,
    /// Next nodes by name; a node's `Next` enum indexes this list.
    pub next: Vec<String>,
    /// Error counters by human-readable reason; a node's error enum indexes this list.
    pub errors: Vec<&'static str>,
    pub node: Box<dyn Node>,
    /// Whether what this node does to a packet can be done by the XDP fast path (see
    /// `offload_safe`); a node that does not say so takes its packets off the fast path.
    pub offload: bool,
}

impl NodeDecl {
    /// A node of `kind` named `name` whose next nodes are `next` (in the order of its `Next`
    /// enum) and whose error counters are `errors` (in the order of its error enum).
    pub fn new(
        name: &str,
        kind: NodeKind,
        next: &[&str],
        errors: &[&'static str],
        node: impl Node + 'static,
    ) -> NodeDecl {
        NodeDecl {
            name: name.to_string(),
            kind,
            next: next.iter().map(|s| s.to_string()).collect(),
            errors: errors.to_vec(),
            node: Box::new(node),
            offload: false,
        }
    }

    /// This node's work on a packet can be done by the XDP fast path: packets it handles
    /// keep `FLAG_OFFLOAD` (drivers::af_xdp::fastpath). Every other node clears it, so an
    /// unknown feature means no.
    pub fn offload_safe(mut self) -> NodeDecl {
        self.offload = true;
        self
    }

    /// An internal node (neither a device's input nor an output): most of the graph.
    pub fn internal(
        name: &str,
        next: &[&str],
        errors: &[&'static str],
        node: impl Node + 'static,
    ) -> NodeDecl {
        Self::new(name, NodeKind::Internal, next, errors, node)
    }

    /// The same with more next nodes after `next` (a feature arc's features, by name).
    pub fn with_next(mut self, more: impl IntoIterator<Item = String>) -> NodeDecl {
        self.next.extend(more);
        self
    }
}

/// Per node statistics of one worker.
#[derive(Default, Debug)]
pub struct NodeStats {
    pub calls: Counter,
    pub vectors: Counter,
    pub clocks: Counter,
}

/// The part of a worker's graph that other threads read: names, statistics, errors, trace.
pub struct GraphShared {
    pub names: Vec<String>,
    pub kinds: Vec<NodeKind>,
    pub error_names: Vec<Vec<&'static str>>,
    /// Each node's next nodes, by index, in the order of its `Next` (`show graph`).
    pub nexts: Vec<Vec<u32>>,
    pub stats: Vec<CacheAligned<NodeStats>>,
    pub errors: Vec<Box<[Counter]>>,
    /// Passes through the dispatcher loop.
    pub loops: Counter,
    /// Clocks spent in passes that received packets (the worker's busy time).
    pub busy_clocks: Counter,
    pub trace: TraceShared,
}

impl GraphShared {
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

struct NodeSlot {
    node: Box<dyn Node>,
    /// Next slot → global node index.
    nexts: Box<[u32]>,
    /// Takes the packets it handles off the XDP fast path (`NodeDecl::offload`).
    clears_offload: bool,
}

/// Frames waiting to run, in the order they became pending.
struct Scheduler {
    frames: Vec<Frame>,
    free: Vec<usize>,
    queue: VecDeque<(u32, usize)>,
    /// The frame each node is still filling, if any.
    open: Vec<Option<usize>>,
    /// Buffers sitting in pending frames, for `show buffers`.
    in_flight: usize,
}

impl Scheduler {
    fn new(nodes: usize) -> Scheduler {
        // Two frames per node covers a pass without growing; more are made if ever needed.
        let n = 2 * nodes + 4;
        Scheduler {
            frames: (0..n).map(|_| Frame::default()).collect(),
            free: (0..n).rev().collect(),
            queue: VecDeque::with_capacity(n),
            open: vec![None; nodes],
            in_flight: 0,
        }
    }

    #[inline(always)]
    fn open_frame(&mut self, node: u32) -> usize {
        if let Some(slot) = self.open[node as usize] {
            if !self.frames[slot].is_full() {
                return slot;
            }
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.frames.push(Frame::default());
            self.frames.len() - 1
        });
        self.open[node as usize] = Some(slot);
        self.queue.push_back((node, slot));
        slot
    }

    #[inline(always)]
    fn push(&mut self, node: u32, bi: u32) {
        let slot = self.open_frame(node);
        self.frames[slot].push(bi);
        self.in_flight += 1;
    }

    fn extend(&mut self, node: u32, mut bis: &[u32]) {
        self.in_flight += bis.len();
        while !bis.is_empty() {
            let slot = self.open_frame(node);
            let n = self.frames[slot].extend(bis);
            bis = &bis[n..];
        }
    }
}

/// What a node sees while it runs: the buffers, its next nodes, its counters, the trace.
pub struct NodeCx<'a> {
    pub bufs: &'a mut WorkerBuffers,
    sched: &'a mut Scheduler,
    nexts: &'a [u32],
    errors: &'a [Counter],
    tracer: &'a mut Tracer,
    node_name: &'a str,
    node_index: usize,
    /// Index of the worker running this graph.
    pub thread: usize,
    /// The XDP fast path's epoch as read before this pass received anything (0 without a
    /// fast path): what a decision made in the pass is valid for.
    pub pass_epoch: u32,
    /// The forwarding epoch (`epoch`) as read before this pass received anything: what the
    /// cross-connect patch learnt in the pass is valid for.
    pub config_epoch: u32,
    stats: &'a [CacheAligned<NodeStats>],
    all_errors: &'a [Box<[Counter]>],
    /// Clocks this node spent on other nodes' behalf (`charge`).
    charged: u64,
}

impl NodeCx<'_> {
    /// Send one packet to next slot `next`.
    #[inline(always)]
    pub fn enqueue(&mut self, next: usize, bi: u32) {
        self.sched.push(self.nexts[next], bi);
    }

    /// Send many packets to the same next slot.
    #[inline(always)]
    pub fn enqueue_all(&mut self, next: usize, bis: &[u32]) {
        self.sched.extend(self.nexts[next], bis);
    }

    /// Count `n` events of error counter `error` of this node.
    #[inline(always)]
    pub fn count_error(&mut self, error: usize, n: u64) {
        self.errors[error].add(n);
    }

    /// Count work this node did on next node `next`'s behalf (the cross-connect patch's
    /// transmit, which runs inside an input node) as that node's: one call of `packets`
    /// packets and `clocks` clocks, and `errors` (index, count) of its error counters. This
    /// node's own clocks leave them out.
    pub fn charge(&mut self, next: usize, packets: usize, clocks: u64, errors: &[(usize, u64)]) {
        let node = self.nexts[next] as usize;
        let stats = &self.stats[node];
        stats.calls.add(1);
        stats.vectors.add(packets as u64);
        stats.clocks.add(clocks);
        for &(e, n) in errors {
            if n > 0 {
                self.all_errors[node][e].add(n);
            }
        }
        self.charged += clocks;
    }

    /// Whether any packet may be traced: nodes choose their traced or plain loop per frame.
    #[inline(always)]
    pub fn tracing(&self) -> bool {
        self.tracer.active()
    }

    /// Input nodes call this for each new packet: it starts a trace record when the node has
    /// trace budget left.
    pub fn trace_start(&mut self, bi: u32) -> bool {
        self.tracer.start(self.bufs, self.node_index, bi)
    }

    /// Add a line to the packet's trace record, if the packet is traced.
    pub fn trace(&mut self, bi: u32, line: impl std::fmt::Display) {
        self.tracer.add(self.bufs, self.node_name, bi, line);
    }
}

/// One worker's graph: the nodes, their frames and their statistics.
pub struct Graph {
    nodes: Vec<NodeSlot>,
    inputs: Vec<usize>,
    /// Nodes that asked to be polled every pass.
    pollers: Vec<usize>,
    sched: Scheduler,
    /// Stands in a dispatched frame's slot while the frame runs (see `run_once`).
    spare: Option<Frame>,
    tracer: Tracer,
    shared: Arc<GraphShared>,
    thread: usize,
    /// Some interface has the XDP fast path: nodes that are not offload-safe clear
    /// `FLAG_OFFLOAD` on their packets (no cost when none has).
    offload_armed: bool,
    /// The fast path's epoch, read at the start of each pass into `pass_epoch`.
    offload_epoch: Option<Arc<AtomicU32>>,
    pass_epoch: u32,
    /// The forwarding epoch, read at the start of each pass.
    config_epoch: u32,
}

impl Graph {
    /// Resolve next names and build the graph. Fails on a duplicate node name or a next node
    /// that does not exist.
    pub fn build(decls: Vec<NodeDecl>, thread: usize) -> Result<Graph, String> {
        let names: Vec<String> = decls.iter().map(|d| d.name.clone()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(format!("duplicate graph node '{n}'"));
            }
        }
        let mut nodes = Vec::with_capacity(decls.len());
        let mut kinds = Vec::new();
        let mut error_names = Vec::new();
        let mut next_lists = Vec::new();
        for d in decls {
            let nexts = d
                .next
                .iter()
                .map(|n| {
                    names
                        .iter()
                        .position(|x| x == n)
                        .map(|i| i as u32)
                        .ok_or_else(|| {
                            format!(
                                "node '{}' names next node '{n}', which does not exist",
                                d.name
                            )
                        })
                })
                .collect::<Result<Vec<u32>, String>>()?;
            kinds.push(d.kind);
            error_names.push(d.errors.clone());
            next_lists.push(nexts.clone());
            nodes.push(NodeSlot {
                node: d.node,
                nexts: nexts.into_boxed_slice(),
                clears_offload: !d.offload,
            });
        }
        let inputs = (0..nodes.len())
            .filter(|&i| kinds[i] == NodeKind::Input)
            .collect();
        let pollers = (0..nodes.len())
            .filter(|&i| nodes[i].node.wants_poll())
            .collect();
        let shared = Arc::new(GraphShared {
            stats: (0..nodes.len()).map(|_| CacheAligned::default()).collect(),
            errors: error_names
                .iter()
                .map(|e| (0..e.len()).map(|_| Counter::default()).collect())
                .collect(),
            trace: TraceShared::new(nodes.len()),
            names,
            kinds,
            error_names,
            nexts: next_lists,
            loops: Counter::default(),
            busy_clocks: Counter::default(),
        });
        Ok(Graph {
            sched: Scheduler::new(nodes.len()),
            spare: Some(Frame::default()),
            tracer: Tracer::new(shared.clone()),
            nodes,
            inputs,
            pollers,
            shared,
            thread,
            offload_armed: false,
            offload_epoch: None,
            pass_epoch: 0,
            config_epoch: 0,
        })
    }

    /// Packets may carry `FLAG_OFFLOAD` (an interface has the XDP fast path on), and what
    /// is decided is valid for the epoch `epoch` holds at the start of the pass.
    pub fn arm_offload(&mut self, epoch: Arc<AtomicU32>) {
        self.offload_armed = true;
        self.offload_epoch = Some(epoch);
    }

    /// Packets may carry `FLAG_OFFLOAD` for the cross-connect patch (`nodes::patch`): nodes
    /// that are not offload-safe clear it.
    pub fn arm_patch(&mut self) {
        self.offload_armed = true;
    }

    pub fn shared(&self) -> &Arc<GraphShared> {
        &self.shared
    }

    fn run_node(&mut self, bufs: &mut WorkerBuffers, index: usize, frame: &[u32]) -> usize {
        self.call_node(bufs, index, Some(frame))
    }

    /// Run node `index` on `frame`, or poll it when `frame` is `None`.
    fn call_node(
        &mut self,
        bufs: &mut WorkerBuffers,
        index: usize,
        frame: Option<&[u32]>,
    ) -> usize {
        let start = tsc::now();
        let slot = &mut self.nodes[index];
        let mut cx = NodeCx {
            bufs,
            sched: &mut self.sched,
            nexts: &slot.nexts,
            errors: &self.shared.errors[index],
            tracer: &mut self.tracer,
            node_name: &self.shared.names[index],
            node_index: index,
            thread: self.thread,
            pass_epoch: self.pass_epoch,
            config_epoch: self.config_epoch,
            stats: &self.shared.stats,
            all_errors: &self.shared.errors,
            charged: 0,
        };
        let n = match frame {
            Some(frame) => {
                if self.offload_armed && slot.clears_offload {
                    for &bi in frame {
                        cx.bufs.meta_mut(bi).flags &= !FLAG_OFFLOAD;
                    }
                }
                slot.node.process(&mut cx, frame)
            }
            None => {
                let n = slot.node.poll(&mut cx);
                if n == 0 {
                    return 0;
                }
                n
            }
        };
        let charged = cx.charged;
        let stats = &self.shared.stats[index];
        stats.calls.add(1);
        stats.vectors.add(n as u64);
        stats
            .clocks
            .add(tsc::now().wrapping_sub(start).saturating_sub(charged));
        n
    }

    /// One pass: poll every input node, then run pending frames until the graph is empty.
    /// Returns how many packets the input nodes took in.
    pub fn run_once(&mut self, bufs: &mut WorkerBuffers) -> usize {
        let pass_start = tsc::now();
        if let Some(e) = &self.offload_epoch {
            // Read before anything is received: the control plane publishes a change, then
            // bumps the epoch, so what this pass decides under an epoch saw its changes.
            self.pass_epoch = e.load(Ordering::SeqCst);
        }
        self.config_epoch = epoch::current();
        self.tracer.begin_pass();
        let mut received = 0;
        for k in 0..self.inputs.len() {
            received += self.run_node(bufs, self.inputs[k], &[]);
        }
        for k in 0..self.pollers.len() {
            self.call_node(bufs, self.pollers[k], None);
        }
        while let Some((node, slot)) = self.sched.queue.pop_front() {
            let node = node as usize;
            if self.sched.open[node] == Some(slot) {
                self.sched.open[node] = None;
            }
            // The frame runs out of its slot (the node may open new frames meanwhile); the
            // spare stands in for it and the two trade places back: nothing is allocated.
            let spare = self
                .spare
                .take()
                .expect("the spare frame is home between dispatches");
            let mut frame = std::mem::replace(&mut self.sched.frames[slot], spare);
            self.sched.in_flight -= frame.len();
            self.run_node(bufs, node, frame.as_slice());
            frame.clear();
            self.spare = Some(std::mem::replace(&mut self.sched.frames[slot], frame));
            self.sched.free.push(slot);
        }
        self.shared.loops.add(1);
        self.tracer.end_pass();
        let owner = bufs.owner();
        if self.shared.loops.get() % HELD_REPORT_PASSES == 1 {
            let held: usize = self.nodes.iter().map(|n| n.node.held_buffers()).sum();
            owner.in_drivers.store(held as u64, Ordering::Relaxed);
        }
        owner
            .in_frames
            .store(self.sched.in_flight as u64, Ordering::Relaxed);
        bufs.publish_cache();
        if received > 0 {
            self.shared
                .busy_clocks
                .add(tsc::now().wrapping_sub(pass_start));
        }
        received
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{BufferPool, HugePages};

    /// Emits `left` packets in bursts of 100, then nothing.
    struct Source {
        left: usize,
    }
    impl Node for Source {
        fn process(&mut self, cx: &mut NodeCx<'_>, _: &[u32]) -> usize {
            let n = self.left.min(100);
            for _ in 0..n {
                let bi = cx.bufs.packet_from_bytes(&[0u8; 60]).unwrap();
                cx.trace_start(bi);
                cx.enqueue(0, bi);
            }
            self.left -= n;
            n
        }
    }
    /// Sends even-length... every other packet to the sink, the rest to drop.
    struct Split;
    impl Node for Split {
        fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
            for (i, &bi) in frame.iter().enumerate() {
                cx.trace(bi, format_args!("packet {i}"));
                if i % 2 == 0 {
                    cx.enqueue(0, bi);
                } else {
                    cx.count_error(0, 1);
                    cx.enqueue(1, bi);
                }
            }
            frame.len()
        }
    }
    struct Free;
    impl Node for Free {
        fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
            cx.bufs.free_all(frame);
            frame.len()
        }
    }

    fn decl(name: &str, kind: NodeKind, next: &[&str], node: Box<dyn Node>) -> NodeDecl {
        NodeDecl {
            name: name.into(),
            kind,
            next: next.iter().map(|s| s.to_string()).collect(),
            errors: vec!["odd packet"],
            node,
            offload: false,
        }
    }

    #[test]
    fn frames_flow_to_completion_and_counters_add_up() {
        let pool = BufferPool::new(4096, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let mut g = Graph::build(
            vec![
                decl(
                    "src",
                    NodeKind::Input,
                    &["split"],
                    Box::new(Source { left: 1000 }),
                ),
                decl(
                    "split",
                    NodeKind::Internal,
                    &["sink", "drop"],
                    Box::new(Split),
                ),
                decl("sink", NodeKind::Output, &[], Box::new(Free)),
                decl("drop", NodeKind::Drop, &[], Box::new(Free)),
            ],
            0,
        )
        .unwrap();
        let sh = g.shared().clone();
        sh.trace.add(0, 3);
        let mut total = 0;
        while g.run_once(&mut bufs) > 0 {
            total += 1;
        }
        assert_eq!(total, 10);
        assert_eq!(sh.stats[1].vectors.get(), 1000);
        assert_eq!(sh.stats[2].vectors.get(), 500);
        assert_eq!(sh.stats[3].vectors.get(), 500);
        assert_eq!(sh.errors[1][0].get(), 500);
        let r = pool.report();
        assert_eq!(r.in_use, 0, "{r:?}");
        assert_eq!(r.unaccounted, 0);
        let traces = sh.trace.records();
        assert_eq!(traces.len(), 3);
        assert!(traces[0].lines.iter().any(|l| l.contains("split")));
    }

    #[test]
    fn unknown_next_is_a_build_error() {
        let err = Graph::build(
            vec![decl("a", NodeKind::Internal, &["nowhere"], Box::new(Free))],
            0,
        )
        .err()
        .unwrap();
        assert!(err.contains("nowhere"));
    }

    #[test]
    fn a_burst_larger_than_a_frame_spills_into_more_frames() {
        let pool = BufferPool::new(4096, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        struct Big;
        impl Node for Big {
            fn process(&mut self, cx: &mut NodeCx<'_>, _: &[u32]) -> usize {
                let mut v = [0u32; 600];
                let n = cx.bufs.alloc(&mut v);
                for &bi in &v[..n] {
                    cx.bufs.meta_mut(bi).total_len = 0;
                }
                cx.enqueue_all(0, &v[..n]);
                n
            }
        }
        let mut g = Graph::build(
            vec![
                decl("big", NodeKind::Input, &["sink"], Box::new(Big)),
                decl("sink", NodeKind::Output, &[], Box::new(Free)),
            ],
            0,
        )
        .unwrap();
        assert_eq!(g.run_once(&mut bufs), 600);
        let sh = g.shared();
        assert_eq!(sh.stats[1].vectors.get(), 600);
        assert_eq!(sh.stats[1].calls.get(), 3);
        assert_eq!(pool.report().in_use, 0);
    }
}
