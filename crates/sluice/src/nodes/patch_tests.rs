//! The cross-connect patch in a whole worker graph, on a fake driver that can send its
//! frames straight to its peer: the graph's first frames offer it, later bursts take it, and a
//! new forwarding epoch, a trace or an egress gone down sends the frames through the graph
//! again. (`tests/dpdk.rs` shows on DPDK's ports that it sends what the graph would.)

use super::graph::graph_nodes;
use super::input::{InputNode, Patching, PlacedQueue};
use super::patch::{self, L2Patch};
use super::testing::{frame_bytes, Harness};
use crate::buffer::WorkerBuffers;
use crate::drivers::{DirectTx, PatchRx, RxBurst, RxQueue, TxBurst, TxQueue};
use crate::graph::{epoch, Graph, GraphShared};
use crate::interface::Interface;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Frames a burst brings.
const BURST: usize = 8;

/// A port that receives `BURST` 64-byte frames a poll; with the patch, it keeps them all back
/// and "sends" them by counting them on the target's counter.
struct FakeRx {
    held: usize,
}

impl RxQueue for FakeRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        for slot in out.iter_mut().take(BURST) {
            *slot = bufs.packet_from_bytes(&frame_bytes(64)).unwrap();
        }
        RxBurst {
            packets: BURST,
            bytes: 64 * BURST as u64,
            ..RxBurst::default()
        }
    }

    fn rx_patch(
        &mut self,
        to: &DirectTx,
        _min_frame: usize,
        _bufs: &mut WorkerBuffers,
        _out: &mut [u32],
    ) -> Option<PatchRx> {
        to.downcast_ref::<AtomicUsize>()?;
        self.held = BURST;
        Some(PatchRx {
            graph: RxBurst::default(),
            held: BURST,
            held_bytes: 64 * BURST as u64,
        })
    }

    fn send_held(&mut self, to: &DirectTx) -> TxBurst {
        let n = std::mem::take(&mut self.held);
        if let Some(sent) = to.downcast_ref::<AtomicUsize>() {
            sent.fetch_add(n, Ordering::Relaxed);
        }
        TxBurst {
            sent: n,
            bytes: 64 * n as u64,
            ..TxBurst::default()
        }
    }
}

/// The other port's transmit: frames from the graph are freed and counted as sent; the patch
/// counts on `direct`.
struct FakeTx {
    direct: Arc<AtomicUsize>,
}

impl TxQueue for FakeTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        bufs.free_all(pkts);
        TxBurst {
            sent: pkts.len(),
            bytes: 64 * pkts.len() as u64,
            ..TxBurst::default()
        }
    }

    fn direct(&self) -> Option<DirectTx> {
        Some(self.direct.clone())
    }
}

struct Lab {
    h: Harness,
    graph: Graph,
    bufs: WorkerBuffers,
    /// Frames the patch sent on if1.
    patched: Arc<AtomicUsize>,
}

impl Lab {
    /// if0 cross-connected to if1, both with patch slots; if0's queue on a fake port.
    fn new() -> Lab {
        let mut h = Harness::new(2);
        h.interfaces = (0..2)
            .map(|i| {
                let mut itf = Interface::new(i, &format!("if{i}"), "fake", 1);
                itf.patch = Some(Default::default());
                itf.set_up(true);
                Arc::new(itf)
            })
            .collect();
        h.set_xconnect(0, 1);
        let parts = h.graph_parts();
        let patched = Arc::new(AtomicUsize::new(0));
        let txs: Vec<Box<dyn TxQueue>> = (0..2)
            .map(|_| {
                Box::new(FakeTx {
                    direct: patched.clone(),
                }) as Box<dyn TxQueue>
            })
            .collect();
        let direct = h
            .interfaces
            .iter()
            .zip(&txs)
            .map(|(i, t)| t.direct().map(|d| (i.clone(), d)))
            .collect();
        let queue = PlacedQueue {
            interface: h.interfaces[0].clone(),
            queue: 0,
            rx: Box::new(FakeRx { held: 0 }),
            counters: Arc::default(),
        };
        let patching = Patching {
            direct,
            min_frame: 60,
            next: 0,
        };
        let input =
            InputNode::decl_placed("fake-input", vec![queue], None, None, None, Some(patching));
        let mut decls = graph_nodes(parts, vec![input], txs);
        decls.push(L2Patch::decl());
        let mut graph = Graph::build(decls, 0).unwrap();
        graph.arm_patch();
        let bufs = h.pool.worker_handle();
        Lab {
            h,
            graph,
            bufs,
            patched,
        }
    }

    fn shared(&self) -> Arc<GraphShared> {
        self.graph.shared().clone()
    }

    fn vectors(&self, node: &str) -> u64 {
        let sh = self.shared();
        sh.stats[sh.node_index(node).unwrap()].vectors.get()
    }

    /// One pass; whether its burst took the patch (else it crossed ethernet-input).
    fn pass(&mut self) -> bool {
        let (graph, patched) = (self.vectors("ethernet-input"), self.vectors(patch::NAME));
        assert_eq!(self.graph.run_once(&mut self.bufs), BURST);
        let took = self.vectors(patch::NAME) - patched;
        let crossed = self.vectors("ethernet-input") - graph;
        assert_eq!(took + crossed, BURST as u64, "each frame one way");
        took == BURST as u64
    }

    /// Passes until one takes the patch (another test's command may bump the epoch between
    /// two passes: a few are allowed for).
    fn until_patched(&mut self) -> usize {
        (1..=20)
            .find(|_| self.pass())
            .expect("a cross-connected burst takes the patch")
    }
}

#[test]
fn a_cross_connect_takes_the_patch_until_the_epoch_changes() {
    let mut l = Lab::new();
    assert!(
        !l.pass(),
        "the first burst offers the patch through the graph"
    );
    assert!(l.until_patched() >= 1);
    let t = (l.h.interfaces[0].totals(), l.h.interfaces[1].totals());
    assert_eq!(t.0.rx_packets, t.1.tx_packets, "{t:?}");
    assert_eq!(
        l.patched.load(Ordering::Relaxed) as u64,
        l.vectors(patch::NAME)
    );
    let sh = l.shared();
    let at = sh.node_index(patch::NAME).unwrap();
    assert!(sh.stats[at].clocks.get() > 0 && sh.stats[at].calls.get() > 0);
    // Any change bumps the epoch: the next burst crosses the graph, the one after patches.
    epoch::bump();
    assert!(!l.pass(), "a patch of an older epoch was used");
    l.until_patched();
    // A trace sees every frame: no patch while it runs.
    let input = sh.node_index("fake-input").unwrap();
    sh.trace.add(input, 1000);
    for _ in 0..3 {
        assert!(!l.pass(), "a frame took the patch while a trace ran");
    }
    sh.trace.clear();
    l.until_patched();
    // The egress down: the graph drops (and counts) what the patch would have sent.
    l.h.interfaces[1].set_up(false);
    assert!(!l.pass());
    assert_eq!(
        l.h.interfaces[1].totals().tx_packets,
        l.h.interfaces[0].totals().rx_packets - BURST as u64
    );
    assert_eq!(l.h.pool.report().unaccounted, 0);
}
