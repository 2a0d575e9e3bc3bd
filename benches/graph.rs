//! Graph overhead without I/O: a synthetic input node makes 64-byte frames (in place, reusing
//! the same buffers' bytes), and they go through ethernet-input → l2-xconnect →
//! interface-output → a tx node that frees them. Prints Mpps and clocks per packet per node,
//! median of 5 runs, and checks that the dispatch loop allocates nothing on the heap (frames
//! are made once and reused).  Run: cargo bench --bench graph

use arc_swap::ArcSwap;
use sluice::buffer::{BufferPool, HugePages, WorkerBuffers};
use sluice::drivers::{TxBurst, TxQueue};
use sluice::graph::{Graph, Node, NodeCx, NodeDecl, NodeKind};
use sluice::interface::{Interface, L2Modes};
use sluice::nodes::{
    error_drop::ErrorDrop, ethernet_input::EthernetInput, interface_output::InterfaceOutput,
    l2_xconnect::L2Xconnect, tx::TxNode,
};
use sluice::router::Router;
use sluice::wire::MacAddress;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The system allocator, counting allocations so the benchmark can tell whether the dispatch
/// loop allocates.
struct Counting;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counter has no
// effect on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `alloc`'s contract, which we pass on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above, for `dealloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above, for `realloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Synthetic {
    frame: [u8; 60],
    bis: Vec<u32>,
}

impl Node for Synthetic {
    fn process(&mut self, cx: &mut NodeCx<'_>, _: &[u32]) -> usize {
        let n = cx.bufs.alloc(&mut self.bis[..]);
        for &bi in &self.bis[..n] {
            let m = cx.bufs.meta_mut(bi);
            m.len = 60;
            m.total_len = 60;
            m.rx_if = 0;
            cx.bufs.data_mut(bi).copy_from_slice(&self.frame);
        }
        cx.enqueue_all(0, &self.bis[..n]);
        n
    }
}

struct NullTx;
impl TxQueue for NullTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        let bytes = pkts.iter().map(|&b| bufs.packet_len(b) as u64).sum();
        bufs.free_all(pkts);
        TxBurst {
            sent: pkts.len(),
            bytes,
            ..TxBurst::default()
        }
    }
}

/// One run: Mpps, clocks per packet per node, heap allocations in the dispatch loop.
type Run = (f64, Vec<(String, f64)>, u64);

fn run_once(packets: u64) -> Run {
    let pool = BufferPool::new(8192, HugePages::Auto).unwrap();
    let interfaces: Vec<Arc<Interface>> = (0..2)
        .map(|i| {
            let itf = Interface::new(i, &format!("if{i}"), "bench", 1);
            itf.set_up(true);
            Arc::new(itf)
        })
        .collect();
    let modes = Arc::new(ArcSwap::from_pointee(L2Modes {
        xconnect: vec![Some(1), Some(0)],
    }));
    // No addresses: the routing nodes are in the graph but see no traffic.
    let router = Router::new(&[
        ("if0".into(), MacAddress([2, 0, 0, 0, 0, 1]), 1500),
        ("if1".into(), MacAddress([2, 0, 0, 0, 0, 2]), 1500),
    ]);
    let (learn, _learnt) = std::sync::mpsc::sync_channel(16);
    let mut frame = [0u8; 60];
    frame[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]);
    let decls = vec![
        NodeDecl {
            name: "synthetic-input".into(),
            kind: NodeKind::Input,
            next: vec!["ethernet-input".into()],
            errors: vec![],
            node: Box::new(Synthetic {
                frame,
                bis: vec![0; 256],
            }),
        },
        EthernetInput::decl(modes.clone(), router.view(), 60),
        L2Xconnect::decl(modes),
        InterfaceOutput::decl(interfaces.clone()),
        TxNode::decl(interfaces[0].clone(), Box::new(NullTx)),
        TxNode::decl(interfaces[1].clone(), Box::new(NullTx)),
        ErrorDrop::decl(interfaces.clone()),
    ];
    let mut decls = decls;
    decls.extend(sluice::nodes::routing_decls(
        &router.view(),
        &router.fib_reader(),
        &learn,
    ));
    let mut g = Graph::build(decls, 0).unwrap();
    let mut bufs = pool.worker_handle();
    let shared = g.shared().clone();
    // The first pass may size what grows on demand; count from the second.
    let mut done = g.run_once(&mut bufs) as u64;
    let allocations_before = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    while done < packets {
        done += g.run_once(&mut bufs) as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - allocations_before;
    let per_node = shared
        .names
        .iter()
        .zip(shared.stats.iter())
        .filter(|(_, s)| s.vectors.get() > 0)
        .map(|(n, s)| (n.clone(), s.clocks.get() as f64 / s.vectors.get() as f64))
        .collect();
    (done as f64 / secs / 1e6, per_node, allocations)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` does not, and then one short
    // run only checks that the benchmark works.
    let full = std::env::args().any(|a| a == "--bench");
    let (packets, repeats) = if full { (20_000_000, 5) } else { (100_000, 1) };
    let mut runs: Vec<Run> = (0..repeats).map(|_| run_once(packets)).collect();
    let allocations: u64 = runs.iter().map(|r| r.2).sum();
    runs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    let rates: Vec<String> = runs.iter().map(|r| format!("{:.2}", r.0)).collect();
    let (median, nodes, _) = &runs[runs.len() / 2];
    println!(
        "graph xconnect, 64 B, no I/O, 1 core: median {median:.2} Mpps (runs: {})",
        rates.join(" ")
    );
    println!("{:<24}{:>14}", "node", "clocks/pkt");
    for (n, c) in nodes {
        println!("{n:<24}{c:>14.1}");
    }
    println!("heap allocations in the dispatch loops: {allocations}");
    assert_eq!(allocations, 0, "the dispatch loop must not allocate");
}
