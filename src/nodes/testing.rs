//! A harness for node unit tests: feed hand-built frames to one node and see where each
//! packet went, with the node's error counters.

use crate::buffer::{BufferMeta, BufferPool, HugePages, WorkerBuffers};
use crate::graph::{Graph, Node, NodeCx, NodeDecl, NodeKind};
use crate::interface::{Interface, L2Modes, SharedL2Modes};
use crate::router::adjacency::{L3Interface, L3View, SharedL3View};
use crate::wire::MacAddress;
use arc_swap::ArcSwap;
use std::sync::{Arc, Mutex};

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
    /// Interface i has MAC 02:00:00:00:00:i and MTU 1500, and no addresses until given.
    pub view: SharedL3View,
}

/// Where the packets went.
pub struct Outcome {
    /// Per next slot, the packets sent there.
    pub per_next: Vec<usize>,
    pub errors: Vec<u64>,
    pub tx_ifs: Vec<u32>,
    /// The next hop each packet carried, in arrival order at the sinks.
    pub adjs: Vec<u32>,
}

impl Outcome {
    pub fn to_next(&self, slot: usize) -> usize {
        self.per_next[slot]
    }
}

struct Feed {
    packets: Vec<u32>,
}
impl Node for Feed {
    fn process(&mut self, cx: &mut NodeCx<'_>, _: &[u32]) -> usize {
        let p = std::mem::take(&mut self.packets);
        cx.enqueue_all(0, &p);
        p.len()
    }
}

struct Sink {
    slot: usize,
    seen: Arc<Mutex<Vec<(usize, u32, u32)>>>,
}
impl Node for Sink {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        for &bi in frame {
            self.seen.lock().unwrap().push((
                self.slot,
                cx.bufs.meta(bi).tx_if,
                cx.bufs.meta(bi).adj,
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
            })),
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

    pub fn run_node(&self, decl: NodeDecl, frames: &[Vec<u8>], rx_if: u32) -> Outcome {
        self.run_node_with(decl, frames, rx_if, |_, _| {})
    }

    /// Like `run_node`, with `edit(meta, k)` applied to packet k's metadata first.
    pub fn run_node_with(
        &self,
        decl: NodeDecl,
        frames: &[Vec<u8>],
        rx_if: u32,
        edit: impl Fn(&mut BufferMeta, usize),
    ) -> Outcome {
        let mut bufs: WorkerBuffers = self.pool.worker_handle();
        let mut packets = Vec::new();
        for (k, f) in frames.iter().enumerate() {
            let bi = bufs.packet_from_bytes(f).unwrap();
            let m = bufs.meta_mut(bi);
            m.rx_if = rx_if;
            edit(m, k);
            packets.push(bi);
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let under_test = decl.name.clone();
        let mut decls = vec![NodeDecl {
            name: "feed".into(),
            kind: NodeKind::Input,
            next: vec![under_test],
            errors: vec![],
            node: Box::new(Feed { packets }),
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
                }),
            });
        }
        let mut g = Graph::build(decls, 0).unwrap();
        g.run_once(&mut bufs);
        let sh = g.shared().clone();
        drop(bufs);
        assert_eq!(self.pool.report().in_use, 0, "node test leaked buffers");
        let seen = seen.lock().unwrap();
        let mut per_next = vec![0; nexts.len()];
        for &(slot, _, _) in seen.iter() {
            per_next[slot] += 1;
        }
        Outcome {
            per_next,
            errors: sh.errors[1].iter().map(|c| c.get()).collect(),
            tx_ifs: seen.iter().map(|&(_, t, _)| t).collect(),
            adjs: seen.iter().map(|&(_, _, a)| a).collect(),
        }
    }
}
