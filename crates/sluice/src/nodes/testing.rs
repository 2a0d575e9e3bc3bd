//! A harness for node unit tests: feed hand-built frames to one node and see where each
//! packet went, with the node's error counters.

use crate::buffer::{BufferMeta, BufferPool, HugePages, WorkerBuffers};
use crate::graph::{Graph, Node, NodeCx, NodeDecl, NodeKind};
use crate::interface::{Interface, L2Modes, SharedL2Modes};
use crate::router::adjacency::{L3Interface, L3View, SharedL3View};
use crate::wire::MacAddress;
use arc_swap::ArcSwap;
use std::sync::{Arc, Mutex};

/// `frame` in a new buffer as ethernet-input leaves it: with its L3 offset recorded (after
/// any VLAN tags), for tests that hand a frame straight to an L3 node.
pub fn received(bufs: &mut WorkerBuffers, frame: &[u8]) -> u32 {
    let bi = bufs.packet_from_bytes(frame).expect("a free buffer");
    if let Ok(eth) = crate::wire::ethernet::Repr::parse(frame) {
        bufs.meta_mut(bi).l3_offset = eth.l3_offset as u8;
    }
    bi
}

/// A frame of `len` bytes: broadcast destination, IPv4 type, a counting payload.
pub fn frame_bytes(len: usize) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| i as u8).collect();
    let header = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00,
    ];
    let n = len.min(header.len());
    f[..n].copy_from_slice(&header[..n]);
    f
}

pub struct Harness {
    pub pool: Arc<BufferPool>,
    pub interfaces: Vec<Arc<Interface>>,
    pub modes: SharedL2Modes,
    /// No sub-interfaces unless a test adds them.
    pub subifs: crate::subif::SharedSubIfs,
    /// Interface i has MAC 02:00:00:00:00:i and MTU 1500, and no addresses until given.
    pub view: SharedL3View,
}

/// Where the packets went.
/// What a sink saw of a packet: its next slot, tx interface, adjacency and flags.
pub type Seen = (usize, u32, u32, u8);

pub struct Outcome {
    /// Per next slot, the packets sent there.
    pub per_next: Vec<usize>,
    pub errors: Vec<u64>,
    pub tx_ifs: Vec<u32>,
    /// The next hop each packet carried, in arrival order at the sinks.
    pub adjs: Vec<u32>,
    /// Each packet's `FLAG_*` bits, in the same order.
    pub flags: Vec<u8>,
}

impl Outcome {
    pub fn to_next(&self, slot: usize) -> usize {
        self.per_next[slot]
    }

    /// The node's counters are exactly `expected`: each named one holds its count, every
    /// other one is zero.
    #[track_caller]
    pub fn assert_counted<E: Copy + Into<usize> + std::fmt::Debug>(&self, expected: &[(E, u64)]) {
        assert_counted(&self.errors, expected);
    }
}

/// Packets the feed node hands to the node under test at its next pass.
pub type Inbox = Arc<Mutex<Vec<u32>>>;

struct Feed {
    packets: Inbox,
}
impl Node for Feed {
    fn process(&mut self, cx: &mut NodeCx<'_>, _: &[u32]) -> usize {
        let p = std::mem::take(&mut *self.packets.lock().unwrap());
        cx.enqueue_all(0, &p);
        p.len()
    }
}

/// A graph of one node under test, fed from an inbox, its next nodes being sinks.
pub struct TestGraph {
    pub graph: Graph,
    pub inbox: Inbox,
    /// (next slot, tx_if, adj) of every packet that reached a sink.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// The node's error counters, by its error index.
    pub node: usize,
}

impl TestGraph {
    /// `decl` fed from an inbox, each of its next nodes a sink that records what reaches it
    /// (and its bytes, into `captured` when given).
    pub fn new(decl: NodeDecl, captured: Option<Captured>) -> TestGraph {
        let inbox: Inbox = Arc::default();
        let (decls, seen) = Harness::decls(decl, inbox.clone(), captured);
        TestGraph {
            graph: Graph::build(decls, 0).unwrap(),
            inbox,
            seen,
            node: 1,
        }
    }

    /// All the node's error counters, by error index.
    pub fn errors(&self) -> Vec<u64> {
        self.graph.shared().errors[self.node]
            .iter()
            .map(|c| c.get())
            .collect()
    }

    pub fn error(&self, e: usize) -> u64 {
        self.graph.shared().errors[self.node][e].get()
    }

    pub fn to_next(&self, slot: usize) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.0 == slot)
            .count()
    }
}

/// Bytes of the packets that reached the sinks, in arrival order.
pub type Captured = Arc<Mutex<Vec<Vec<u8>>>>;

struct Sink {
    slot: usize,
    seen: Arc<Mutex<Vec<Seen>>>,
    captured: Option<Captured>,
}
impl Node for Sink {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        for &bi in frame {
            if let Some(c) = &self.captured {
                c.lock().unwrap().push(cx.bufs.data(bi).to_vec());
            }
            self.seen.lock().unwrap().push((
                self.slot,
                cx.bufs.meta(bi).tx_if,
                cx.bufs.meta(bi).adj,
                cx.bufs.meta(bi).flags,
            ));
            cx.bufs.free(bi);
        }
        frame.len()
    }
}

impl Harness {
    /// `n` interfaces, all up, with no modes.
    pub fn new(n: u32) -> Harness {
        let interfaces: Vec<Arc<Interface>> = (0..n)
            .map(|i| {
                let itf = Interface::new(i, &format!("if{i}"), "test", 1);
                itf.set_up(true);
                Arc::new(itf)
            })
            .collect();
        Harness {
            pool: BufferPool::new(4096, HugePages::Never).unwrap(),
            interfaces,
            modes: Arc::new(ArcSwap::from_pointee(L2Modes {
                xconnect: vec![None; n as usize],
                ..Default::default()
            })),
            subifs: Arc::new(ArcSwap::from_pointee(crate::subif::SubIfs::new(n))),
            view: Arc::new(ArcSwap::from_pointee(L3View::new(
                (0..n)
                    .map(|i| L3Interface {
                        mac: MacAddress([2, 0, 0, 0, 0, i as u8]),
                        mtu: 1500,
                        ..Default::default()
                    })
                    .collect(),
            ))),
        }
    }

    /// What a whole worker graph (`graph::graph_nodes`) reads, over these interfaces and
    /// modes: a router of two interfaces with no routes, no bridges, no ACLs, no capture.
    pub fn graph_parts(&self) -> super::graph::GraphParts {
        let router = crate::router::Router::new(&[
            ("if0".into(), MacAddress([2, 0, 0, 0, 0, 1]), 1500),
            ("if1".into(), MacAddress([2, 0, 0, 0, 0, 2]), 1500),
        ]);
        let bridges = crate::l2::bridge::Bridges::default();
        let (learns, _) = std::sync::mpsc::sync_channel(1);
        let (learn, _) = std::sync::mpsc::sync_channel(1);
        super::graph::GraphParts {
            interfaces: self.interfaces.clone(),
            modes: self.modes.clone(),
            subifs: self.subifs.clone(),
            l2: crate::l2::nodes::learn::LearnParts {
                fib: bridges.reader(),
                clock: bridges.clock(),
                learns,
                lost: Arc::default(),
            },
            view: router.view(),
            tables: router.tables(),
            learn,
            filters: crate::acl::node::Filters::none(),
            to_host: crate::lcp::host_punt::punt_channel_of(1).0,
            punt: Arc::default(),
            capture: None,
            min_frame: 60,
        }
    }

    /// Give interface `itf` an IPv4 address (only the view: no routes).
    pub fn add_address(&self, itf: u32, addr: u32, len: u8) {
        self.edit_view(|v| v.interfaces[itf as usize].v4.push((addr, len)));
    }

    /// Change the published view.
    pub fn edit_view(&self, edit: impl FnOnce(&mut L3View)) {
        let mut v = (**self.view.load()).clone();
        edit(&mut v);
        v.generation += 1;
        self.view.store(Arc::new(v));
    }

    pub fn set_xconnect(&self, rx: u32, tx: u32) {
        let mut m = (**self.modes.load()).clone();
        m.xconnect[rx as usize] = Some(tx);
        self.modes.store(Arc::new(m));
    }

    /// Publish `bridges`' domains and ports, as the dataplane does.
    pub fn set_bridges(&self, bridges: &crate::l2::bridge::Bridges) {
        let mut m = (**self.modes.load()).clone();
        (m.bridge, m.domains) = bridges.view(self.interfaces.len());
        self.modes.store(Arc::new(m));
    }

    pub fn run_node(&self, decl: NodeDecl, frames: &[Vec<u8>], rx_if: u32) -> Outcome {
        self.run_node_with(decl, frames, rx_if, |_, _| {})
    }

    /// Like `run_node`, keeping the bytes of every packet that left the node.
    pub fn run_node_capture(
        &self,
        decl: NodeDecl,
        frames: &[Vec<u8>],
        rx_if: u32,
        captured: Captured,
    ) -> Outcome {
        self.run(decl, frames, rx_if, |_, _| {}, Some(captured))
    }

    /// `run_node_capture` with `edit(meta, k)` applied to packet k's metadata first.
    pub fn run_node_capture_with(
        &self,
        decl: NodeDecl,
        frames: &[Vec<u8>],
        rx_if: u32,
        edit: impl Fn(&mut BufferMeta, usize),
        captured: Captured,
    ) -> Outcome {
        self.run(decl, frames, rx_if, edit, Some(captured))
    }

    /// Like `run_node`, with `edit(meta, k)` applied to packet k's metadata first.
    pub fn run_node_with(
        &self,
        decl: NodeDecl,
        frames: &[Vec<u8>],
        rx_if: u32,
        edit: impl Fn(&mut BufferMeta, usize),
    ) -> Outcome {
        self.run(decl, frames, rx_if, edit, None)
    }

    /// A graph of `decl` fed from an inbox, for nodes that work across passes.
    pub fn graph(&self, decl: NodeDecl, captured: Option<Captured>) -> TestGraph {
        TestGraph::new(decl, captured)
    }

    fn run(
        &self,
        decl: NodeDecl,
        frames: &[Vec<u8>],
        rx_if: u32,
        edit: impl Fn(&mut BufferMeta, usize),
        captured: Option<Captured>,
    ) -> Outcome {
        let mut bufs: WorkerBuffers = self.pool.worker_handle();
        let mut packets = Vec::new();
        for (k, f) in frames.iter().enumerate() {
            let bi = received(&mut bufs, f);
            let m = bufs.meta_mut(bi);
            m.rx_if = rx_if;
            edit(m, k);
            packets.push(bi);
        }
        let nexts = decl.next.clone();
        let (decls, seen) = Self::decls(decl, Arc::new(Mutex::new(packets)), captured);
        let mut g = Graph::build(decls, 0).unwrap();
        g.run_once(&mut bufs);
        let sh = g.shared().clone();
        drop(bufs);
        assert_eq!(self.pool.report().in_use, 0, "node test leaked buffers");
        let seen = seen.lock().unwrap();
        let mut per_next = vec![0; nexts.len()];
        for &(slot, ..) in seen.iter() {
            per_next[slot] += 1;
        }
        Outcome {
            per_next,
            errors: sh.errors[1].iter().map(|c| c.get()).collect(),
            tx_ifs: seen.iter().map(|s| s.1).collect(),
            adjs: seen.iter().map(|s| s.2).collect(),
            flags: seen.iter().map(|s| s.3).collect(),
        }
    }

    #[allow(clippy::type_complexity)]
    fn decls(
        decl: NodeDecl,
        packets: Inbox,
        captured: Option<Captured>,
    ) -> (Vec<NodeDecl>, Arc<Mutex<Vec<Seen>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let under_test = decl.name.clone();
        let mut decls = vec![NodeDecl {
            name: "feed".into(),
            kind: NodeKind::Input,
            next: vec![under_test],
            errors: vec![],
            node: Box::new(Feed { packets }),
            offload: false,
        }];
        let nexts = decl.next.clone();
        decls.push(decl);
        for (slot, name) in nexts.iter().enumerate() {
            decls.push(NodeDecl {
                name: name.clone(),
                kind: NodeKind::Output,
                next: vec![],
                errors: vec![],
                node: Box::new(Sink {
                    slot,
                    seen: seen.clone(),
                    captured: captured.clone(),
                }),
                offload: false,
            });
        }
        (decls, seen)
    }
}

/// The counters `errors` are exactly `expected`: each named one holds its count, every other
/// one is zero.
#[track_caller]
pub fn assert_counted<E: Copy + Into<usize> + std::fmt::Debug>(
    errors: &[u64],
    expected: &[(E, u64)],
) {
    let mut want = vec![0; errors.len()];
    for &(e, n) in expected {
        want[e.into()] += n;
    }
    assert_eq!(errors, want, "counters (expected {expected:?})");
}
