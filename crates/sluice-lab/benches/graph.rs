//! Graph overhead without I/O: a synthetic input node makes 64-byte frames (in place, reusing
//! the same buffers' bytes), and they go through ethernet-input → l2-xconnect →
//! interface-output → a tx node that frees them; bridged, through ethernet-input → l2-learn →
//! l2-fwd → interface-output → tx; and, routed, through ethernet-input →
//! ip4-input → ip4-lookup → ip4-rewrite → interface-output → tx. Prints Mpps and clocks per
//! packet per node, median of 5 runs each, and checks that the dispatch loop allocates nothing
//! on the heap (frames are made once and reused).  Run: cargo bench --bench graph

use arc_swap::ArcSwap;
use sluice::buffer::{BufferPool, HugePages, WorkerBuffers};
use sluice::drivers::{TxBurst, TxQueue};
use sluice::ethernet::input as ethernet_input;
use sluice::graph::{Graph, Node, NodeCx, NodeDecl, NodeKind};
use sluice::interface::{Interface, L2Modes};
use sluice::l2::bridge::{Bridges, DomainSettings};
use sluice::l2::nodes::learn::LearnParts;
use sluice::nodes::graph::{graph_nodes, GraphParts};
use sluice::router::{NeighborLearn, Router};
use sluice::subif::{SubIf, SubIfs, TagMatch};
use sluice::wire::MacAddress;
use std::alloc::{GlobalAlloc, Layout, System};
use std::net::{IpAddr, Ipv4Addr};
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
    /// Bridged: MAC pairs the frames step through (source 02:..:01 + 2k behind if0,
    /// destination 02:..:02 + 2k behind if1), 0 for the fixed frame.
    macs: u32,
    next_mac: u32,
}

/// The low bytes of MAC pair `k`'s source (`odd`) or destination.
fn mac_of(k: u32, source: bool) -> MacAddress {
    let v = 2 * k + if source { 1 } else { 2 };
    MacAddress([2, 0, 0, (v >> 16) as u8, (v >> 8) as u8, v as u8])
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
            if self.macs > 0 {
                let k = self.next_mac;
                self.next_mac = (k + 1) % self.macs;
                let d = cx.bufs.data_mut(bi);
                d[..6].copy_from_slice(&mac_of(k, false).0);
                d[6..12].copy_from_slice(&mac_of(k, true).0);
            }
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

/// What the frames go through.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    /// if0 cross-connected to if1.
    Xconnect,
    /// IPv4 from 10.0.0.2 on if0 to 10.1.0.2, a static neighbour on if1.
    Routed,
    /// if0 and if1 in one bridge domain; the frames step through this many MAC pairs
    /// (sources behind if0, destinations behind if1, all in the table).
    Bridged(u32),
    /// 802.1Q 100 frames into sub-interface if0.100, cross-connected to if1.100: the tag
    /// comes off on input and goes back on output (CSIT's dot1q l2xc).
    Dot1qXconnect,
}

/// The 60-byte frame the synthetic input makes for `path`.
fn frame(path: Path) -> [u8; 60] {
    let mut frame = [0u8; 60];
    frame[..14].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 8, 0]);
    if path == Path::Dot1qXconnect {
        // 60 bytes with the tag, as a 64-byte tagged frame is on the wire.
        frame[12..18].copy_from_slice(&[0x81, 0, 0, 100, 8, 0]);
    }
    if path == Path::Routed {
        let ip = &mut frame[14..34];
        ip[..12].copy_from_slice(&[0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0]);
        ip[12..16].copy_from_slice(&[10, 0, 0, 2]);
        ip[16..20].copy_from_slice(&[10, 1, 0, 2]);
        let c = sluice::wire::ipv4::checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
    }
    frame
}

/// Addresses on both interfaces and the neighbour the routed frames go to.
fn route(router: &mut Router) {
    let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    router.add_address(0, v4(10, 0, 0, 1), 24).unwrap();
    router.add_address(1, v4(10, 1, 0, 1), 24).unwrap();
    router
        .set_static_neighbor(NeighborLearn::request(
            1,
            v4(10, 1, 0, 2),
            MacAddress([2, 0, 0, 0, 0, 7]),
        ))
        .unwrap();
    router.commit();
}

fn run_once(path: Path, packets: u64) -> Run {
    let pool = BufferPool::new(8192, HugePages::Auto).unwrap();
    let interfaces: Vec<Arc<Interface>> = (0..2)
        .map(|i| {
            let itf = Interface::new(i, &format!("if{i}"), "bench", 1);
            itf.set_up(true);
            Arc::new(itf)
        })
        .collect();
    let xconnect = match path {
        Path::Xconnect => vec![Some(1), Some(0)],
        Path::Routed | Path::Bridged(_) => vec![None, None],
        Path::Dot1qXconnect => vec![None, None, Some(3), Some(2)],
    };
    // Bridged: both in domain 1, the frames' sources known behind if0 and their
    // destinations behind if1, so every frame is a learn hit and a forward hit.
    let mut bridges = Bridges::default();
    let mut macs = 0;
    if let Path::Bridged(n) = path {
        macs = n;
        bridges.create(1, DomainSettings::default()).unwrap();
        for i in 0..2 {
            bridges.set_member(i, Some((1, 0))).unwrap();
        }
        for k in 0..n {
            bridges.add_mac(1, mac_of(k, true), 0, false).unwrap();
            bridges.add_mac(1, mac_of(k, false), 1, false).unwrap();
        }
    }
    let (bridge, domains) = bridges.view(4);
    let modes = Arc::new(ArcSwap::from_pointee(L2Modes {
        xconnect,
        bridge,
        domains,
    }));
    let (mac_learns, _macs_learnt) = std::sync::mpsc::sync_channel(16);
    let mut table = SubIfs::new(2);
    if path == Path::Dot1qXconnect {
        for (index, parent) in [(2, 0), (3, 1)] {
            let itf = Interface::new(index, &format!("if{parent}.100"), "sub-interface", 1);
            itf.set_up(true);
            let tags = TagMatch::Dot1q {
                vid: 100,
                exact: true,
            };
            table.insert(SubIf::new(Arc::new(itf), parent, tags));
        }
    }
    let subifs = Arc::new(ArcSwap::from_pointee(table));
    // Cross-connected, the routing nodes are in the graph but see no traffic.
    let mut router = Router::new(&[
        ("if0".into(), MacAddress([2, 0, 0, 0, 0, 1]), 1500),
        ("if1".into(), MacAddress([2, 0, 0, 0, 0, 2]), 1500),
    ]);
    if path == Path::Routed {
        route(&mut router);
    }
    let (learn, _learnt) = std::sync::mpsc::sync_channel(16);
    let frame = frame(path);
    let synthetic = NodeDecl {
        name: "synthetic-input".into(),
        kind: NodeKind::Input,
        next: vec![ethernet_input::NAME.into()],
        errors: vec![],
        node: Box::new(Synthetic {
            frame,
            bis: vec![0; 256],
            macs,
            next_mac: 0,
        }),
        offload: false,
    };
    let parts = GraphParts {
        interfaces,
        modes,
        subifs,
        l2: LearnParts {
            fib: bridges.reader(),
            clock: bridges.clock(),
            learns: mac_learns,
            lost: Arc::default(),
        },
        view: router.view(),
        tables: router.tables(),
        learn,
        filters: sluice::acl::node::Filters::none(),
        to_host: sluice::lcp::host_punt::punt_channel_of(1).0,
        punt: Arc::new(sluice::lcp::policy::PuntPolicy::default()),
        capture: None,
        min_frame: 60,
    };
    let txs: Vec<Box<dyn TxQueue>> = vec![Box::new(NullTx), Box::new(NullTx)];
    let decls = graph_nodes(parts, vec![synthetic], txs);
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
    let mut allocations = 0;
    let paths = [
        (Path::Xconnect, "xconnect"),
        (Path::Bridged(1), "bridged (learn + forward hits)"),
        (Path::Bridged(100_000), "bridged, 100 000 MAC pairs"),
        (Path::Dot1qXconnect, "dot1q sub-interfaces cross-connected"),
        (Path::Routed, "ip4 routed"),
    ];
    for (path, name) in paths {
        let mut runs: Vec<Run> = (0..repeats).map(|_| run_once(path, packets)).collect();
        allocations += runs.iter().map(|r| r.2).sum::<u64>();
        runs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        let rates: Vec<String> = runs.iter().map(|r| format!("{:.2}", r.0)).collect();
        let (median, nodes, _) = &runs[runs.len() / 2];
        println!(
            "graph {name}, 64 B, no I/O, 1 core: median {median:.2} Mpps (runs: {})",
            rates.join(" ")
        );
        println!("{:<24}{:>14}", "node", "clocks/pkt");
        for (n, c) in nodes {
            println!("{n:<24}{c:>14.1}");
        }
        // Every frame must have taken the path measured, not a drop.
        assert!(
            nodes.iter().any(|(n, _)| n == "if1-tx"),
            "{name}: nothing sent"
        );
        if let Path::Bridged(_) = path {
            assert!(nodes.iter().any(|(n, _)| n == "l2-fwd"), "not bridged");
        }
        if path != Path::Xconnect {
            assert!(
                !nodes
                    .iter()
                    .any(|(n, _)| n == "error-drop" || n == "l2-flood"),
                "{name}: frames dropped or flooded"
            );
        }
        if path == Path::Routed {
            assert!(nodes.iter().any(|(n, _)| n == "ip4-rewrite"), "not routed");
            assert!(
                !nodes.iter().any(|(n, _)| n == "error-drop"),
                "routed frames dropped"
            );
        }
    }
    println!("heap allocations in the dispatch loops: {allocations}");
    assert_eq!(allocations, 0, "the dispatch loop must not allocate");
}
