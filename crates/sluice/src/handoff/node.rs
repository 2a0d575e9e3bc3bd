//! worker-handoff: sends each packet of an interface with a spread (`handoff`) to the worker
//! its flow hash picks — on to ethernet-input here if that is this worker, else into the ring
//! to that worker — and handoff-input, the input node that takes in what other workers
//! handed to this one.

use crate::buffer::FLAG_TO_WORKER;
use crate::ethernet::input as ethernet_input;
use crate::graph::frame::FRAME_SIZE;
use crate::graph::names::error_counters;
use crate::graph::names::next_nodes;
use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::handoff::ring::{Consumer, Producer};
use crate::handoff::{Handoff, TABLE};
use crate::nodes::error_drop;
use std::sync::Arc;

pub const WORKER_HANDOFF: &str = "worker-handoff";
/// How many packets ahead worker-handoff prefetches data and metadata.
const PREFETCH_AHEAD: usize = 4;
pub const HANDOFF_INPUT: &str = "handoff-input";

next_nodes! {
    enum Next {
        EthernetInput = ethernet_input::NAME,
        Drop = error_drop::NAME,
    }
}

error_counters! {
    enum Counter {
        HandedOff = "handed off to another worker",
        Congestion = "congestion drop (the ring to the worker was full)",
    }
}

struct HandoffTrace {
    hash: u32,
    worker: usize,
}

impl std::fmt::Display for HandoffTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flow hash {:#010x} to worker {}", self.hash, self.worker)
    }
}

pub struct WorkerHandoff {
    handoff: Arc<Handoff>,
    worker: usize,
    /// To each worker (`None`: this one).
    rings: Vec<Option<Producer>>,
    /// Per destination worker: this frame's packets for it.
    outgoing: Vec<Vec<u32>>,
    local: Vec<u32>,
}

impl WorkerHandoff {
    pub fn decl(handoff: Arc<Handoff>, worker: usize, rings: Vec<Option<Producer>>) -> NodeDecl {
        let workers = rings.len();
        NodeDecl::internal(
            WORKER_HANDOFF,
            &Next::NAMES,
            &Counter::REASONS,
            WorkerHandoff {
                handoff,
                worker,
                rings,
                outgoing: (0..workers)
                    .map(|_| Vec::with_capacity(FRAME_SIZE))
                    .collect(),
                local: Vec::with_capacity(FRAME_SIZE),
            },
        )
        // Another worker runs the packet's graph from ethernet-input on, deciding (and
        // offering to the XDP fast path) as this one would: a NAT reply for the worker that
        // owns its session, or a spread flow, keeps its mark.
        .offload_safe()
    }
}

impl Node for WorkerHandoff {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let spreads = self.handoff.spreads();
        let tracing = cx.tracing();
        for (k, &bi) in frame.iter().enumerate() {
            // The device (or another core) wrote these frames: start loading a few packets
            // ahead while this one is hashed (at two workers the load of the frame's first
            // bytes was the node's costliest instruction).
            if let Some(&ahead) = frame.get(k + PREFETCH_AHEAD) {
                cx.bufs.prefetch(ahead);
            }
            let meta = cx.bufs.meta_mut(bi);
            // A NAT reply for the worker that owns its session: sent there as it asks.
            if meta.flags & FLAG_TO_WORKER != 0 {
                meta.flags &= !FLAG_TO_WORKER;
                let worker = std::mem::take(&mut meta.aux) as usize;
                if worker == self.worker || worker >= self.outgoing.len() {
                    self.local.push(bi);
                } else {
                    self.outgoing[worker].push(bi);
                }
                continue;
            }
            let rx = meta.rx_if as usize;
            // A spread removed while the frame was on its way: keep the packet here.
            let Some(spread) = spreads.get(rx).and_then(Option::as_ref) else {
                self.local.push(bi);
                continue;
            };
            let hash = self.handoff.hasher(spread.key).frame(cx.bufs.data(bi));
            let worker = spread.table[hash as usize % TABLE] as usize;
            if tracing {
                cx.trace(bi, HandoffTrace { hash, worker });
            }
            if worker == self.worker || worker >= self.outgoing.len() {
                self.local.push(bi);
            } else {
                self.outgoing[worker].push(bi);
            }
        }
        cx.enqueue_all(Next::EthernetInput as usize, &self.local);
        self.local.clear();
        for (worker, out) in self.outgoing.iter_mut().enumerate() {
            if out.is_empty() {
                continue;
            }
            // The buffers leave this worker's hands before the other can see them (the
            // ring's release store orders our writes before its reads); debug builds check
            // that no one touches them in between, as for a device's ring.
            for &bi in out.iter() {
                cx.bufs.lend(bi);
            }
            let pushed = match self.rings[worker].as_mut() {
                Some(ring) => ring.push(out),
                None => 0,
            };
            cx.count_error(Counter::HandedOff as usize, pushed as u64);
            let dropped = &out[pushed..];
            for &bi in dropped {
                cx.bufs.reclaim(bi);
            }
            if !dropped.is_empty() {
                cx.count_error(Counter::Congestion as usize, dropped.len() as u64);
                cx.enqueue_all(Next::Drop as usize, dropped);
            }
            out.clear();
        }
        frame.len()
    }
}

pub struct HandoffInput {
    /// From each worker (`None`: this one).
    rings: Vec<Option<Consumer>>,
    burst: Box<[u32; FRAME_SIZE]>,
    /// The worker to read first next time, so no ring starves the others.
    first: usize,
}

impl HandoffInput {
    pub fn decl(rings: Vec<Option<Consumer>>) -> NodeDecl {
        NodeDecl::new(
            HANDOFF_INPUT,
            NodeKind::Input,
            &[ethernet_input::NAME],
            &[],
            HandoffInput {
                rings,
                burst: Box::new([0; FRAME_SIZE]),
                first: 0,
            },
        )
    }
}

impl Node for HandoffInput {
    fn held_buffers(&self) -> usize {
        self.rings.iter().flatten().map(Consumer::len).sum()
    }

    fn process(&mut self, cx: &mut NodeCx<'_>, _frame: &[u32]) -> usize {
        let workers = self.rings.len();
        let mut n = 0;
        for k in 0..workers {
            let from = (self.first + k) % workers;
            if let Some(ring) = self.rings[from].as_mut() {
                n += ring.pop(&mut self.burst[n..]);
                if n == FRAME_SIZE {
                    break;
                }
            }
        }
        self.first = (self.first + 1) % workers.max(1);
        if n == 0 {
            return 0;
        }
        let pkts = &self.burst[..n];
        for &bi in pkts {
            cx.bufs.reclaim(bi);
        }
        if cx.tracing() {
            for &bi in pkts {
                if cx.trace_start(bi) {
                    cx.trace(bi, "handed off by another worker");
                }
            }
        }
        cx.enqueue_all(0, pkts);
        n
    }
}
