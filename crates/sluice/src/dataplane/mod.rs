//! Builds the running dataplane from a config: the buffer pool, the interfaces and their
//! drivers, one graph per worker, and the worker threads. `open` opens one interface; `l2`
//! holds the layer-2 control (modes, sub-interfaces, BVIs, bridge domains, the MAC learner).

pub mod config;
mod l2;
mod learner;
mod open;
pub mod pcap_trace;
pub mod placement;
pub mod queues;
pub mod section;
pub mod watchdog;
mod worker;

use l2::{spawn_mac_learner, MAC_LEARN_QUEUE};
pub use l2::{L2Mode, BVI_DRIVER};
use open::{open_interface, Opened};

use crate::acl::control::AclControl;
use crate::buffer::BufferPool;
use crate::config::Config;
use crate::drivers::pcap::ReplayProgress;
use crate::drivers::RxQueue;
use crate::graph::GraphShared;
use crate::interface::{Interface, Interfaces, SharedL2Modes};
use crate::l2::bridge::{Bridges, MacLearn};
use crate::l2::nodes::learn::LearnParts;
use crate::router::{NeighborLearn, Router};
use crate::subif::SharedSubIfs;
use crate::sys::{cpu, tsc};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Instant;

/// Neighbour learns waiting for the control plane at most; workers drop (and count) more.
const LEARN_QUEUE: usize = 4096;

/// What the control plane knows of a worker.
pub struct WorkerInfo {
    pub index: usize,
    pub name: String,
    pub cpu: Option<usize>,
    pub graph: Arc<GraphShared>,
    pub tid: Arc<AtomicI32>,
    /// Bumped each pass of the worker's loop; the watchdog reads it.
    pub beat: Arc<watchdog::Beat>,
    handle: Option<JoinHandle<()>>,
}

/// The running dataplane.
pub struct Dataplane {
    pub pool: Arc<BufferPool>,
    pub interfaces: Interfaces,
    pub modes: SharedL2Modes,
    /// The sub-interfaces, as the workers read them.
    pub subifs: SharedSubIfs,
    /// Interfaces with a driver of their own come first: this many.
    pub hardware: usize,
    /// The routing control plane; the CLI and the learner thread lock it, workers never do.
    pub router: Arc<Mutex<Router>>,
    /// The bridge domains and their MAC table; the CLI and the MAC learner lock it.
    pub bridges: Arc<Mutex<Bridges>>,
    /// The ACLs and the interfaces they check; the CLI locks it, workers read what it
    /// publishes.
    pub acls: Mutex<AclControl>,
    /// NAT44's configuration; the CLI locks it, workers read what it publishes.
    pub nat44: Mutex<crate::nat44::control::Nat44Control>,
    /// Neighbour learns the control plane refused (not on a connected network, table full).
    pub learns_refused: Arc<AtomicU64>,
    /// What changes, for `sluice ctl watch` (crate::events).
    pub events: Arc<crate::events::Bus>,
    learner: Option<JoinHandle<()>>,
    mac_learner: Option<JoinHandle<()>>,
    /// Keeps the host devices' link states current (af_packet, af_xdp).
    link_monitor: Option<JoinHandle<()>>,
    pub workers: Vec<WorkerInfo>,
    /// Which worker polls each receive queue; `set interface rx-placement` moves them.
    pub rx_placement: Arc<placement::RxPlacement>,
    /// Which interfaces' packets are spread over workers by flow hash (`set interface
    /// handoff`).
    pub handoff: Arc<crate::handoff::Handoff>,
    /// The capture `pcap trace` runs.
    pub pcap_trace: Arc<pcap_trace::PcapTrace>,
    /// Per-queue and per-worker load over the last second (`show queues`).
    pub queue_monitor: Arc<queues::QueueMonitor>,
    queue_sampler: Option<JoinHandle<()>>,
    pub main_cpu: Option<usize>,
    pub started: Instant,
    pub tsc_hz: f64,
    /// Replay progress of pcap interfaces, by interface index.
    pub replays: Replays,
    stop: Arc<AtomicBool>,
    /// The Linux taps of the interfaces (lcp pairs); its thread sends what Linux sends on
    /// them with the main thread's tx queues (TX = RX + 1).
    pub lcp: Option<crate::lcp::Lcp>,
    /// What host-punt lets up (`[punt]`).
    pub punt: Arc<crate::lcp::policy::PuntPolicy>,
    /// Undoes device changes (MTU, promiscuous) when dropped, after the workers stop.
    restore: Vec<Box<dyn Send + Sync>>,
}

/// The pcap interfaces' replay progress: (interface index, progress).
pub type Replays = Vec<(u32, Arc<ReplayProgress>)>;

/// An rx queue on its way to a worker: (interface index, queue number, queue).
type PlacedRx = (usize, usize, Box<dyn RxQueue>, queues::SharedQueueCounters);

impl Dataplane {
    /// Open every interface, build the graphs and start the workers: one start step per
    /// subsystem, in the order each needs the others.
    pub fn start(cfg: &Config) -> Result<Dataplane, String> {
        let d = &cfg.dataplane;
        let workers = d.workers;
        let pool =
            BufferPool::new(d.buffers, d.hugepages).map_err(|e| format!("buffer pool: {e}"))?;
        let main_cpu = d.main_core;
        if let Some(c) = main_cpu {
            cpu::pin_current_thread(c)?;
        }
        let tsc_hz = tsc::hz();
        let events = crate::events::Bus::new();

        let (opened, replays) = open_interfaces(cfg, &pool)?;
        let hardware = opened.len();
        let l2::L2Start {
            subs,
            modes,
            subifs,
            bridges,
        } = l2::start(cfg, &opened, workers)?;
        let itfs: Vec<_> = opened
            .iter()
            .map(|o| &o.interface)
            .chain(subs.iter().map(|s| &*s.interface))
            .map(|i| (i.name.clone(), i.mac, i.mtu))
            .collect();
        let router = crate::router::section::start(cfg, &itfs)?;
        let acls = crate::acl::section::start(cfg, &router, workers)?;
        let nat44 = crate::nat44::section::start(cfg, &router, acls.filters())?;
        let placement::HandedOut {
            rx_by_worker,
            tx_by_worker,
            main_tx,
            restore,
            interfaces,
            homes,
        } = placement::hand_out(cfg, opened, workers)?;
        let mut input_nodes: Vec<String> = Vec::new();
        for h in &homes {
            if !input_nodes.contains(&h.node) {
                input_nodes.push(h.node.clone());
            }
        }
        let rx_placement = Arc::new(placement::RxPlacement::new(workers, homes));
        let handoff = crate::handoff::section::start(cfg, &interfaces, workers)?;

        let (learn_tx, learn_rx) = std::sync::mpsc::sync_channel(LEARN_QUEUE);
        let (punt_tx, punt_rx) = crate::lcp::host_punt::punt_channel();
        let (mac_tx, mac_rx) = std::sync::mpsc::sync_channel(MAC_LEARN_QUEUE);
        let punt_policy = Arc::new(cfg.punt.clone());
        let pcap_trace = Arc::new(pcap_trace::PcapTrace::new(workers));
        let stop = Arc::new(AtomicBool::new(false));
        let parts = worker::WorkerParts {
            l3: worker::L3Parts {
                view: router.view(),
                tables: router.tables(),
                learn: learn_tx,
                filters: acls.filters().clone(),
                to_host: punt_tx,
                punt: punt_policy.clone(),
            },
            l2: LearnParts {
                fib: bridges.reader(),
                clock: bridges.clock(),
                learns: mac_tx,
                lost: bridges.learns_lost.clone(),
            },
            shared: worker::Shared {
                modes: modes.clone(),
                subifs: subifs.clone(),
                capture: pcap_trace.clone(),
            },
            interfaces: interfaces.clone(),
            input_nodes,
            placement: rx_placement.clone(),
            handoff: handoff.clone(),
            pool: pool.clone(),
            stop: stop.clone(),
            cores: d.worker_cores.clone(),
            nice: d.worker_nice,
            min_frame: d.min_frame,
        };
        let infos = worker::spawn_workers(parts, rx_by_worker, tx_by_worker)?;

        let router = Arc::new(Mutex::new(router));
        if let Some(fp) = crate::drivers::af_xdp::fastpath::active() {
            // Routed flows are offloaded a whole route at a time where it can be.
            fp.set_router(router.clone());
        }
        let bridges = Arc::new(Mutex::new(bridges));
        let all: Vec<Arc<Interface>> = interfaces
            .iter()
            .cloned()
            .chain(subs.iter().map(|s| s.interface.clone()))
            .collect();
        let lcp_parts = crate::lcp::LcpParts {
            main_tx,
            subifs: subifs.clone(),
            interfaces: all.clone(),
            pool: pool.clone(),
            punts: punt_rx,
            thread: workers,
            events: events.clone(),
        };
        let lcp = crate::lcp::section::start(cfg, lcp_parts, router.clone(), stop.clone())?;
        let helpers = Helpers::spawn(&router, &bridges, &interfaces, (learn_rx, mac_rx), &stop)?;
        let queue_monitor = Arc::new(queues::QueueMonitor::new(
            rx_placement.clone(),
            infos.iter().map(|w| w.graph.clone()).collect(),
            tsc_hz,
        ));
        let queue_sampler = Some(queue_monitor.spawn_sampler(stop.clone())?);
        Ok(Dataplane {
            pool,
            interfaces: Interfaces { list: all },
            modes,
            subifs,
            hardware,
            router,
            bridges,
            acls: Mutex::new(acls),
            nat44: Mutex::new(nat44),
            learns_refused: helpers.learns_refused,
            events,
            learner: Some(helpers.learner),
            mac_learner: Some(helpers.mac_learner),
            link_monitor: helpers.link_monitor,
            workers: infos,
            rx_placement,
            handoff,
            pcap_trace,
            queue_monitor,
            queue_sampler,
            main_cpu,
            started: Instant::now(),
            tsc_hz,
            replays,
            stop,
            lcp: Some(lcp),
            punt: punt_policy,
            restore,
        })
    }

    /// Whether every pcap replay has reached its end (tests wait for this).
    pub fn replays_done(&self) -> bool {
        self.replays
            .iter()
            .all(|(_, p)| p.done.load(Ordering::Relaxed))
    }

    /// Stop the workers, close the drivers, restore device state. A thread that does not
    /// stop within `watchdog::JOIN_DEADLINE` is left behind (and logged).
    pub fn stop(self) {
        let _ = self.finish();
    }

    /// `stop`, with an error that names the threads left behind.
    pub fn finish(mut self) -> Result<(), String> {
        let stuck = self.shutdown();
        if stuck.is_empty() {
            return Ok(());
        }
        Err(format!("thread(s) did not stop: {}", stuck.join(", ")))
    }

    /// The names of the threads that did not stop in time.
    fn shutdown(&mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        // One deadline for the workers together, then one for the helper threads.
        let deadline = Instant::now() + watchdog::JOIN_DEADLINE;
        let mut stuck = Vec::new();
        for w in &mut self.workers {
            if let Some(h) = w.handle.take() {
                if !watchdog::join_by(h, &w.name, deadline) {
                    stuck.push(w.name.clone());
                }
            }
        }
        let deadline = Instant::now() + watchdog::JOIN_DEADLINE;
        let helpers = [
            ("sluice_learn", self.learner.take()),
            ("the MAC learner", self.mac_learner.take()),
            ("the link monitor", self.link_monitor.take()),
            ("the queue sampler", self.queue_sampler.take()),
        ];
        for (name, h) in helpers {
            if let Some(h) = h {
                if !watchdog::join_by(h, name, deadline) {
                    stuck.push(name.to_string());
                }
            }
        }
        if let Some(l) = self.lcp.take() {
            l.join();
        }
        self.restore.clear();
        stuck
    }
}

impl Drop for Dataplane {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The start step of the interfaces: each one opened with its driver, and the pcap replays'
/// progress by interface index.
fn open_interfaces(cfg: &Config, pool: &Arc<BufferPool>) -> Result<(Vec<Opened>, Replays), String> {
    let mut opened = Vec::new();
    let mut replays = Vec::new();
    open::start_dpdk(cfg, pool)?;
    for (i, icfg) in cfg.interfaces.iter().enumerate() {
        let workers = (cfg.dataplane.workers, &cfg.dpdk);
        let (o, progress) = open_interface(icfg, i as u32, workers, pool)?;
        if let Some(p) = progress {
            replays.push((i as u32, p));
        }
        opened.push(o);
    }
    Ok((opened, replays))
}

/// The control-plane threads besides lcp's: the neighbour learner, the MAC learner and the
/// host link monitor.
struct Helpers {
    learner: JoinHandle<()>,
    mac_learner: JoinHandle<()>,
    link_monitor: Option<JoinHandle<()>>,
    learns_refused: Arc<AtomicU64>,
}

impl Helpers {
    /// The start step of the helper threads, once the workers hold the learn queues' senders.
    fn spawn(
        router: &Arc<Mutex<Router>>,
        bridges: &Arc<Mutex<Bridges>>,
        interfaces: &[Arc<Interface>],
        (learn_rx, mac_rx): (Receiver<NeighborLearn>, Receiver<Vec<MacLearn>>),
        stop: &Arc<AtomicBool>,
    ) -> Result<Helpers, String> {
        let mac_learner = spawn_mac_learner(bridges.clone(), mac_rx, stop.clone())?;
        let host_links: Vec<_> = interfaces.iter().filter_map(|i| i.host_link()).collect();
        let link_monitor = if host_links.is_empty() {
            None
        } else {
            Some(crate::drivers::host_link::spawn_monitor(
                host_links,
                stop.clone(),
            )?)
        };
        let learns_refused = Arc::new(AtomicU64::new(0));
        let learner = learner::spawn_learner(
            router.clone(),
            learn_rx,
            stop.clone(),
            learns_refused.clone(),
        )?;
        Ok(Helpers {
            learner,
            mac_learner,
            link_monitor,
            learns_refused,
        })
    }
}
