//! The workers: each one's graph (`worker_graph`), its thread (`spawn_worker`), and the
//! start step that builds and starts them all (`spawn_workers`).

use super::placement;
use super::{pcap_trace, watchdog, PlacedRx, WorkerInfo};
use crate::buffer::BufferPool;
use crate::drivers::TxQueue;
use crate::graph::{Graph, NodeDecl};
use crate::handoff::node::{HandoffInput, WorkerHandoff};
use crate::interface::{Interface, SharedL2Modes};
use crate::l2::nodes::learn::LearnParts;
use crate::nodes::{
    graph::{graph_nodes, GraphParts},
    input::{InputNode, Patching, PlacedQueue},
    patch::L2Patch,
};
use crate::router::adjacency::SharedL3View;
use crate::router::{LearnSender, SharedTables};
use crate::subif::SharedSubIfs;
use crate::sys::cpu;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Empty passes in a row before an idle worker starts napping.
const IDLE_PASSES_BEFORE_NAP: u32 = 1024;
/// How long an idle worker naps. Under load a worker never naps, so this costs no rate; it
/// keeps an idle daemon from burning a core on a shared machine.
const IDLE_NAP: Duration = Duration::from_micros(50);

/// What every worker routes with.
#[derive(Clone)]
pub(super) struct L3Parts {
    pub view: SharedL3View,
    pub tables: SharedTables,
    pub learn: LearnSender,
    pub filters: crate::acl::node::Filters,
    pub to_host: crate::lcp::host_punt::PuntSender,
    pub punt: Arc<crate::lcp::policy::PuntPolicy>,
}

/// The tables every worker reads that the L2 and output nodes share.
#[derive(Clone)]
pub(super) struct Shared {
    pub modes: SharedL2Modes,
    pub subifs: SharedSubIfs,
    pub capture: Arc<pcap_trace::PcapTrace>,
}

/// A worker's receive side: the input nodes every worker has (one per driver), the queues
/// placed on this one, and the placement they may move by (with this worker's index).
struct Inputs<'a> {
    nodes: &'a [String],
    queues: Vec<PlacedRx>,
    placement: (Arc<placement::RxPlacement>, usize),
    /// The spreads, and this worker's rings to and from the others.
    handoff: (
        Arc<crate::handoff::Handoff>,
        Vec<Option<crate::handoff::ring::Producer>>,
        Vec<Option<crate::handoff::ring::Consumer>>,
    ),
}

/// What every worker starts with, besides the queues placed on it.
pub(super) struct WorkerParts {
    pub l3: L3Parts,
    /// Each worker's MAC learner parts are cloned from these.
    pub l2: LearnParts,
    pub shared: Shared,
    pub interfaces: Vec<Arc<Interface>>,
    /// The input nodes every worker has: one for each driver with a queue anywhere, so a
    /// queue can move to any worker.
    pub input_nodes: Vec<String>,
    pub placement: Arc<placement::RxPlacement>,
    pub handoff: Arc<crate::handoff::Handoff>,
    pub pool: Arc<BufferPool>,
    pub stop: Arc<AtomicBool>,
    pub cores: Option<Vec<usize>>,
    pub nice: i32,
    pub min_frame: usize,
}

/// The start step of the workers: worker w's graph with the queues `rxs[w]` and `txs[w]`,
/// and its thread. The senders in `parts` are dropped on return, so that the learner threads
/// see the workers' ends only.
pub(super) fn spawn_workers(
    parts: WorkerParts,
    rxs: Vec<Vec<PlacedRx>>,
    txs: Vec<Vec<Box<dyn TxQueue>>>,
) -> Result<Vec<WorkerInfo>, String> {
    let workers = rxs.len();
    let (producers, consumers) = crate::handoff::rings(workers, crate::handoff::RING_SLOTS);
    let mut rings = producers.into_iter().zip(consumers);
    let mut infos = Vec::new();
    for (w, (rxs, txs)) in rxs.into_iter().zip(txs).enumerate() {
        let l2 = LearnParts {
            fib: parts.l2.fib.clone(),
            clock: parts.l2.clock,
            learns: parts.l2.learns.clone(),
            lost: parts.l2.lost.clone(),
        };
        let (to, from) = rings.next().expect("a ring row per worker");
        let inputs = Inputs {
            nodes: &parts.input_nodes,
            queues: rxs,
            placement: (parts.placement.clone(), w),
            handoff: (parts.handoff.clone(), to, from),
        };
        let decls = worker_graph(
            &parts.interfaces,
            &parts.shared,
            l2,
            &parts.l3,
            (inputs, txs),
            parts.min_frame,
        );
        let mut graph = Graph::build(decls, w)?;
        if let Some(fp) = crate::nodes::graph::fast_path(&parts.interfaces) {
            graph.arm_offload(fp.epoch.clone());
        }
        if parts.interfaces.iter().any(|i| i.patch.is_some()) {
            graph.arm_patch();
        }
        let shared = graph.shared().clone();
        let cpu = parts.cores.as_ref().map(|c| c[w]);
        let tid = Arc::new(AtomicI32::new(0));
        let place = Placement {
            cpu,
            nice: parts.nice,
        };
        let beat = Arc::new(watchdog::Beat::default());
        let handle = spawn_worker(
            w,
            place,
            graph,
            parts.pool.clone(),
            (parts.stop.clone(), beat.clone()),
            tid.clone(),
        )?;
        infos.push(WorkerInfo {
            index: w,
            name: format!("sluice_wk_{w}"),
            cpu,
            graph: shared,
            tid,
            beat,
            handle: Some(handle),
        });
    }
    Ok(infos)
}

/// The nodes of one worker's graph: its input nodes and handoff, then `nodes::graph`'s list.
fn worker_graph(
    interfaces: &[Arc<Interface>],
    shared: &Shared,
    l2: LearnParts,
    l3: &L3Parts,
    (inputs, txs): (Inputs<'_>, Vec<Box<dyn TxQueue>>),
    min_frame: usize,
) -> Vec<NodeDecl> {
    let Shared {
        modes,
        subifs,
        capture,
    } = shared;
    let mut decls = Vec::new();
    // One input node per driver: af-packet-input, af-xdp-input, pcap-input, null-input.
    let mut by_driver: Vec<(String, Vec<PlacedQueue>)> = inputs
        .nodes
        .iter()
        .map(|n| (n.clone(), Vec::new()))
        .collect();
    for (i, queue, rx, counters) in inputs.queues {
        let node = placement::input_node_name(interfaces[i].driver);
        if let Some(slot) = by_driver.iter().position(|(n, _)| *n == node) {
            by_driver[slot].1.push(PlacedQueue {
                interface: interfaces[i].clone(),
                queue,
                rx,
                counters,
            });
        }
    }
    let (handoff, to, from) = inputs.handoff;
    // The cross-connect patch, where some interface's driver has it.
    let patching = interfaces.iter().any(|i| i.patch.is_some());
    let direct: Vec<_> = interfaces
        .iter()
        .zip(&txs)
        .map(|(i, t)| t.direct().map(|d| (i.clone(), d)))
        .collect();
    for (name, queues) in by_driver {
        let placement = Some(inputs.placement.clone());
        let patch = patching.then(|| Patching {
            direct: direct.clone(),
            min_frame,
            next: 0,
        });
        decls.push(InputNode::decl_placed(
            &name,
            queues,
            placement,
            Some(handoff.clone()),
            Some(capture.clone()),
            patch,
        ));
    }
    if patching {
        decls.push(L2Patch::decl());
    }
    decls.push(HandoffInput::decl(from));
    decls.push(WorkerHandoff::decl(handoff, inputs.placement.1, to));
    let parts = GraphParts {
        interfaces: interfaces.to_vec(),
        modes: modes.clone(),
        subifs: subifs.clone(),
        l2,
        view: l3.view.clone(),
        tables: l3.tables.clone(),
        learn: l3.learn.clone(),
        filters: l3.filters.clone(),
        to_host: l3.to_host.clone(),
        punt: l3.punt.clone(),
        capture: Some(capture.clone()),
        min_frame,
    };
    graph_nodes(parts, decls, txs)
}

/// Where a worker runs and at what scheduler weight.
struct Placement {
    cpu: Option<usize>,
    nice: i32,
}

fn spawn_worker(
    index: usize,
    place: Placement,
    mut graph: Graph,
    pool: Arc<BufferPool>,
    (stop, beat): (Arc<AtomicBool>, Arc<watchdog::Beat>),
    tid: Arc<AtomicI32>,
) -> Result<JoinHandle<()>, String> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let handle = std::thread::Builder::new()
        .name(format!("sluice_wk_{index}"))
        .spawn(move || {
            tid.store(cpu::current_thread_id(), Ordering::Relaxed);
            if let Some(c) = place.cpu {
                if let Err(e) = cpu::pin_current_thread(c) {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            }
            if let Err(e) = cpu::set_current_thread_nice(place.nice) {
                // Not fatal: the worker forwards, only on equal terms with the kernel's
                // receive threads (show threads shows the nice it has).
                eprintln!("sluice: worker {index}: {e} (config key worker-nice)");
            }
            let _ = ready_tx.send(Ok(()));
            let mut bufs = pool.worker_handle();
            let mut idle = 0u32;
            while !stop.load(Ordering::Relaxed) {
                beat.heartbeat.pass();
                beat.heartbeat.stall_if_asked();
                if graph.run_once(&mut bufs) > 0 {
                    idle = 0;
                } else {
                    idle = idle.saturating_add(1);
                    if idle > IDLE_PASSES_BEFORE_NAP {
                        std::thread::sleep(IDLE_NAP);
                    } else {
                        // An empty pass may mean the kernel thread that fills our rings
                        // (veth's NAPI, a softirq) shares this CPU and waits for it: let it
                        // run now rather than after a whole scheduler slice, during which
                        // the device's own queue overflows. A busy worker never gets here.
                        std::thread::yield_now();
                    }
                }
            }
            // Close the drivers (and free what they hold) before the cache goes back.
            drop(graph);
            bufs.flush_cache();
        })
        .map_err(|e| format!("cannot start worker {index}: {e}"))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(format!("worker {index}: {e}"))
        }
        Err(_) => Err(format!("worker {index} died while starting")),
    }
}
