//! Builds the running dataplane from a config: the buffer pool, the interfaces and their
//! drivers, one graph per worker, and the worker threads. `open` opens one interface; `l2`
//! holds the layer-2 control (modes, sub-interfaces, BVIs, bridge domains, the MAC learner).

mod l2;
mod learner;
mod open;
pub mod pcap_trace;
pub mod placement;
pub mod queues;
pub mod section;
pub mod watchdog;

use l2::{build_bridges, spawn_mac_learner, sub_interfaces, MAC_LEARN_QUEUE};
pub use l2::{L2Mode, BVI_DRIVER};
use open::{open_interface, Opened};

use crate::acl::control::AclControl;
use crate::buffer::BufferPool;
use crate::config::Config;
use crate::drivers::pcap::ReplayProgress;
use crate::drivers::{cpu, tsc, NoTx, RxQueue, TxQueue};
use crate::graph::{Graph, GraphShared, NodeDecl};
use crate::interface::{Interface, Interfaces, L2Modes, SharedL2Modes};
use crate::l2::bridge::Bridges;
use crate::nodes::{
    error_drop::ErrorDrop,
    handoff::{HandoffInput, WorkerHandoff},
    input::{InputNode, PlacedQueue},
    interface_output::InterfaceOutput,
    l2::arp_term::L2ArpTerm,
    l2::ethernet_input::EthernetInput,
    l2::flood::L2Flood,
    l2::fwd::L2Fwd,
    l2::learn::{L2Learn, LearnParts},
    l2::xconnect::L2Xconnect,
    tx::TxNode,
};
use crate::router::adjacency::SharedL3View;
use crate::router::SharedTables;
use crate::router::{LearnSender, Router};
use crate::subif::{SharedSubIfs, SubIf, SubIfs};
use arc_swap::ArcSwap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Neighbour learns waiting for the control plane at most; workers drop (and count) more.
const LEARN_QUEUE: usize = 4096;

/// Empty passes in a row before an idle worker starts napping.
const IDLE_PASSES_BEFORE_NAP: u32 = 1024;
/// How long an idle worker naps. Under load a worker never naps, so this costs no rate; it
/// keeps an idle daemon from burning a core on a shared machine.
const IDLE_NAP: Duration = Duration::from_micros(50);

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
    /// Neighbour learns the control plane refused (not on a connected network, table full).
    pub learns_refused: Arc<AtomicU64>,
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
    pub replays: Vec<(u32, Arc<ReplayProgress>)>,
    stop: Arc<AtomicBool>,
    /// The Linux taps of the interfaces (lcp pairs); its thread sends what Linux sends on
    /// them with the main thread's tx queues (TX = RX + 1).
    pub lcp: Option<crate::lcp::Lcp>,
    /// What host-punt lets up (`[punt]`).
    pub punt: Arc<crate::lcp::policy::PuntPolicy>,
    /// Undoes device changes (MTU, promiscuous) when dropped, after the workers stop.
    restore: Vec<Box<dyn Send + Sync>>,
}

/// An rx queue on its way to a worker: (interface index, queue number, queue).
type PlacedRx = (usize, usize, Box<dyn RxQueue>, queues::SharedQueueCounters);

impl Dataplane {
    /// Open every interface, build the graphs and start the workers.
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

        let mut opened = Vec::new();
        let mut replays = Vec::new();
        for (i, icfg) in cfg.interfaces.iter().enumerate() {
            let (o, progress) = open_interface(icfg, i as u32, workers, &pool)?;
            if let Some(p) = progress {
                replays.push((i as u32, p));
            }
            opened.push(o);
        }

        // Sub-interfaces follow the hardware interfaces, in config order.
        let hardware = opened.len();
        // Then the BVIs.
        let sub_names: Vec<String> = cfg
            .subinterfaces
            .iter()
            .map(|s| s.name())
            .chain(cfg.bvis.iter().map(|b| b.name()))
            .collect();
        let find = |n: &str| {
            opened
                .iter()
                .position(|o| o.interface.name == n)
                .or_else(|| sub_names.iter().position(|s| s == n).map(|k| hardware + k))
        };
        let total = hardware + sub_names.len();
        let mut xconnect = vec![None; total];
        for x in &cfg.xconnects {
            if let (Some(rx), Some(tx)) = (find(x.rx.get_ref()), find(x.tx.get_ref())) {
                xconnect[rx] = Some(tx as u32);
            }
        }
        let subs = sub_interfaces(cfg, &opened, workers + 1);
        let bridges = build_bridges(cfg, &find, &subs)?;
        let (bridge, domains) = bridges.view(total);
        let modes = L2Modes {
            xconnect,
            bridge,
            domains,
        };
        let modes: SharedL2Modes = Arc::new(ArcSwap::from_pointee(modes));
        let mut table = SubIfs::new(hardware as u32);
        for s in &subs {
            table.insert(s.clone());
        }
        let subifs: SharedSubIfs = Arc::new(ArcSwap::from_pointee(table));
        let router = build_router(cfg, &opened, &subs)?;
        let acls = build_acls(cfg, &router, workers)?;
        let filters = acls.filters().clone();
        let tables = router.tables();
        let view = router.view();
        let router = Arc::new(Mutex::new(router));
        let (learn_tx, learn_rx) = std::sync::mpsc::sync_channel(LEARN_QUEUE);
        let (punt_tx, punt_rx) = crate::nodes::host_punt::punt_channel();
        let punt_policy = Arc::new(cfg.punt.clone());
        let (mac_tx, mac_rx) = std::sync::mpsc::sync_channel(MAC_LEARN_QUEUE);
        let (l2fib, l2clock, learns_lost) = (
            bridges.reader(),
            bridges.clock(),
            bridges.learns_lost.clone(),
        );
        let bridges = Arc::new(Mutex::new(bridges));

        // Hand out queues: rx queue k of an interface goes to the worker its [[rx-placement]]
        // names, else to worker k mod workers; tx queue w to worker w, and the last one to the
        // main thread.
        let mut rx_by_worker: Vec<Vec<PlacedRx>> = (0..workers).map(|_| Vec::new()).collect();
        let mut tx_by_thread: Vec<Vec<Box<dyn TxQueue>>> =
            (0..=workers).map(|_| Vec::new()).collect();
        let mut restore = Vec::new();
        let mut interfaces = Vec::new();
        let mut homes = Vec::new();
        for p in &cfg.rx_placements {
            let Some(o) = opened.iter().find(|o| o.interface.name == p.interface) else {
                continue;
            };
            let n = o.ports.rx.len();
            if p.queue >= n {
                return Err(format!(
                    "[[rx-placement]] {} queue {}: the interface has {n} receive queue(s)",
                    p.interface, p.queue
                ));
            }
        }
        for (i, o) in opened.into_iter().enumerate() {
            let Opened { interface, ports } = o;
            for (q, rx) in ports.rx.into_iter().enumerate() {
                let worker = cfg
                    .rx_placements
                    .iter()
                    .find(|p| p.interface == interface.name && p.queue == q)
                    .map_or(q % workers, |p| p.worker);
                let counters = queues::SharedQueueCounters::default();
                rx_by_worker[worker].push((i, q, rx, counters.clone()));
                homes.push(placement::QueueHome {
                    interface: interface.name.clone(),
                    interface_index: i as u32,
                    queue: q,
                    worker,
                    node: placement::input_node_name(interface.driver),
                    counters,
                });
            }
            let mut tx = ports.tx.into_iter();
            for queues in tx_by_thread.iter_mut() {
                queues.push(tx.next().unwrap_or_else(|| Box::new(NoTx)));
            }
            restore.extend(ports.restore);
            interfaces.push(Arc::new(interface));
        }
        let main_tx = tx_by_thread.pop().unwrap_or_default();
        // Every worker gets an input node for each driver with a queue anywhere, so a queue
        // can move to any worker.
        let mut input_nodes: Vec<String> = Vec::new();
        for h in &homes {
            if !input_nodes.contains(&h.node) {
                input_nodes.push(h.node.clone());
            }
        }
        let rx_placement = Arc::new(placement::RxPlacement::new(workers, homes));
        let handoff = Arc::new(crate::handoff::Handoff::new(workers, interfaces.len()));
        for h in &cfg.handoffs {
            let Some(i) = interfaces.iter().position(|i| i.name == h.interface) else {
                continue;
            };
            let spread = crate::handoff::Spread::new(&h.workers, h.key, workers)
                .map_err(|e| format!("[[handoff]] {}: {e}", h.interface))?;
            handoff.set(i, Some(spread))?;
        }
        let (producers, consumers) = crate::handoff::rings(workers, crate::handoff::RING_SLOTS);
        let mut rings = producers.into_iter().zip(consumers);

        let pcap_trace = Arc::new(pcap_trace::PcapTrace::new(workers));
        let stop = Arc::new(AtomicBool::new(false));
        let mut infos = Vec::new();
        let cores = d.worker_cores.clone();
        let min_frame = d.min_frame;
        for (w, (rxs, txs)) in rx_by_worker.into_iter().zip(tx_by_thread).enumerate() {
            let l3 = L3Parts {
                view: view.clone(),
                tables: tables.clone(),
                learn: learn_tx.clone(),
                filters: filters.clone(),
                to_host: punt_tx.clone(),
                punt: punt_policy.clone(),
            };
            let l2 = LearnParts {
                fib: l2fib.clone(),
                clock: l2clock,
                learns: mac_tx.clone(),
                lost: learns_lost.clone(),
            };
            let shared = Shared {
                modes: modes.clone(),
                subifs: subifs.clone(),
                capture: pcap_trace.clone(),
            };
            let (to, from) = rings.next().expect("a ring row per worker");
            let inputs = Inputs {
                nodes: &input_nodes,
                queues: rxs,
                placement: (rx_placement.clone(), w),
                handoff: (handoff.clone(), to, from),
            };
            let decls = worker_graph(&interfaces, &shared, l2, &l3, (inputs, txs), min_frame);
            let graph = Graph::build(decls, w)?;
            let shared = graph.shared().clone();
            let cpu = cores.as_ref().map(|c| c[w]);
            let tid = Arc::new(AtomicI32::new(0));
            let place = Placement {
                cpu,
                nice: d.worker_nice,
            };
            let beat = Arc::new(watchdog::Beat::default());
            let handle = spawn_worker(
                w,
                place,
                graph,
                pool.clone(),
                (stop.clone(), beat.clone()),
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
        drop(learn_tx);
        drop(mac_tx);
        drop(punt_tx);
        let lcp = crate::lcp::Lcp::start(
            crate::lcp::LcpParts {
                main_tx,
                subifs: subifs.clone(),
                interfaces: interfaces
                    .iter()
                    .cloned()
                    .chain(subs.iter().map(|s| s.interface.clone()))
                    .collect(),
                pool: pool.clone(),
                punts: punt_rx,
                thread: workers,
            },
            router.clone(),
            stop.clone(),
        )?;
        for pair in &cfg.lcps {
            let Some(itf) = interfaces
                .iter()
                .chain(subs.iter().map(|s| &s.interface))
                .find(|i| i.name == pair.interface)
            else {
                continue;
            };
            let mut r = router.lock().unwrap();
            let addresses = r.address_list(itf.index);
            let refused = lcp
                .create(itf, &pair.host_if, pair.netns.as_deref(), &addresses)
                .map_err(|e| format!("[[lcp]] {}: {e}", pair.interface))?;
            for r in refused {
                eprintln!(
                    "sluice: [[lcp]] {}: Linux refused address {r}",
                    pair.host_if
                );
            }
            r.set_host(itf.index, true)?;
            r.commit();
        }
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
        let queue_monitor = Arc::new(queues::QueueMonitor::new(
            rx_placement.clone(),
            infos.iter().map(|w| w.graph.clone()).collect(),
            tsc_hz,
        ));
        let queue_sampler = Some(queue_monitor.spawn_sampler(stop.clone())?);
        let learns_refused = Arc::new(AtomicU64::new(0));
        let learner = learner::spawn_learner(
            router.clone(),
            learn_rx,
            stop.clone(),
            learns_refused.clone(),
        )?;
        Ok(Dataplane {
            pool,
            interfaces: Interfaces {
                list: interfaces
                    .into_iter()
                    .chain(subs.into_iter().map(|s| s.interface))
                    .collect(),
            },
            modes,
            subifs,
            hardware,
            router,
            bridges,
            acls: Mutex::new(acls),
            learns_refused,
            learner: Some(learner),
            mac_learner: Some(mac_learner),
            link_monitor,
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

/// Build the router from the config: interface addresses, the route file, static routes.
fn build_router(cfg: &Config, opened: &[Opened], subs: &[SubIf]) -> Result<Router, String> {
    let itfs: Vec<_> = opened
        .iter()
        .map(|o| &o.interface)
        .chain(subs.iter().map(|s| &*s.interface))
        .map(|i| (i.name.clone(), i.mac, i.mtu))
        .collect();
    let mut router = Router::new(&itfs);
    router.set_neighbor_times(cfg.neighbors);
    // Tables and their interfaces first: an address's routes go into its interface's table.
    for t in &cfg.tables {
        router.add_table(t.id)?;
        for name in &t.interfaces {
            let itf = router.interface_index(name)?;
            for v6 in [false, true] {
                router
                    .set_interface_table(itf, v6, t.id)
                    .map_err(|e| format!("ip-table {}: {e}", t.id))?;
            }
        }
    }
    let addresses = cfg
        .interfaces
        .iter()
        .map(|i| (i.name.get_ref().clone(), &i.address))
        .chain(cfg.subinterfaces.iter().map(|s| (s.name(), &s.address)))
        .chain(cfg.bvis.iter().map(|b| (b.name(), &b.address)));
    for (i, (name, address)) in addresses.enumerate() {
        for a in address {
            let (addr, len) = crate::router::parse_interface_address(a.get_ref())?;
            router
                .add_address(i as u32, addr, len)
                .map_err(|e| format!("interface {name}: address {}: {e}", a.get_ref()))?;
        }
    }
    for r in &cfg.routes {
        router
            .add_route(r.table, r.prefix, &r.hops)
            .map_err(|e| format!("route {}: {e}", r.prefix))?;
    }
    if let Some(file) = &cfg.fib.route_file {
        let path = file.get_ref();
        let routes = crate::fib::parse::read_route_file(path).map_err(|e| e.to_string())?;
        router.load_routes(&path.display().to_string(), &routes)?;
    }
    router.commit();
    Ok(router)
}

/// The configuration's ACLs, compiled once each, and the interfaces they check.
fn build_acls(cfg: &Config, router: &Router, threads: usize) -> Result<AclControl, String> {
    let sessions =
        crate::acl::session::Sessions::new(threads, cfg.sessions.per_worker, cfg.sessions.timeouts)
            .with_per_source(cfg.sessions.per_source);
    let mut filters = crate::nodes::acl::Filters::new(sessions);
    filters.tables = router.tables();
    let mut acls = AclControl::new(filters, threads);
    for a in &cfg.acls {
        let rules = a
            .texts
            .iter()
            .cloned()
            .zip(a.rules.iter().cloned())
            .collect();
        acls.add(&a.name, rules)
            .map_err(|e| format!("acl {}: {e}", a.name))?;
    }
    for input in &cfg.acl_inputs {
        let index = router.interface_index(&input.interface)?;
        acls.set_input(index, Some(&input.acl))?;
    }
    for output in &cfg.acl_outputs {
        let index = router.interface_index(&output.interface)?;
        acls.set_output(index, Some(&output.acl))?;
    }
    Ok(acls)
}

/// What every worker routes with.
struct L3Parts {
    view: SharedL3View,
    tables: SharedTables,
    learn: LearnSender,
    filters: crate::nodes::acl::Filters,
    to_host: crate::nodes::host_punt::PuntSender,
    punt: Arc<crate::lcp::policy::PuntPolicy>,
}

/// The tables every worker reads that the L2 and output nodes share.
struct Shared {
    modes: SharedL2Modes,
    subifs: SharedSubIfs,
    capture: Arc<pcap_trace::PcapTrace>,
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

/// The nodes of one worker's graph.
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
    for (name, queues) in by_driver {
        let placement = Some(inputs.placement.clone());
        decls.push(InputNode::decl_placed(
            &name,
            queues,
            placement,
            Some(handoff.clone()),
            Some(capture.clone()),
        ));
    }
    decls.push(HandoffInput::decl(from));
    decls.push(WorkerHandoff::decl(handoff, inputs.placement.1, to));
    decls.push(EthernetInput::decl(
        modes.clone(),
        l3.view.clone(),
        subifs.clone(),
        min_frame,
    ));
    decls.push(L2Xconnect::decl(modes.clone()));
    let l2fib = l2.fib.clone();
    decls.push(L2Learn::decl(modes.clone(), l2));
    decls.push(L2Fwd::decl(modes.clone(), l2fib));
    decls.push(L2Flood::decl(modes.clone()));
    decls.push(L2ArpTerm::decl(modes.clone()));
    decls.extend(crate::nodes::routing_decls(
        &l3.view,
        &l3.tables,
        &l3.learn,
        &l3.filters,
        &l3.to_host,
        &l3.punt,
    ));
    decls.push(InterfaceOutput::decl(interfaces.to_vec(), subifs.clone()));
    for (itf, tx) in interfaces.iter().zip(txs) {
        decls.push(TxNode::decl_captured(
            itf.clone(),
            tx,
            Some(capture.clone()),
        ));
    }
    decls.push(ErrorDrop::decl_captured(
        interfaces.to_vec(),
        subifs.clone(),
        Some(capture.clone()),
    ));
    decls
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
