//! Builds the running dataplane from a config: the buffer pool, the interfaces and their
//! drivers, one graph per worker, and the worker threads.

use crate::buffer::BufferPool;
use crate::config::{AfXdp, Config, Driver, InterfaceConfig};
use crate::drivers::af_packet::{self, AfPacketConfig};
use crate::drivers::af_xdp::{self, AfXdpConfig};
use crate::drivers::memif::{self, MemifConfig};
use crate::drivers::pcap::{self, PcapConfig, ReplayProgress};
use crate::drivers::{cpu, tsc, DriverPorts, NoTx, RxQueue, TxQueue};
use crate::fib::FibReader;
use crate::graph::{Graph, GraphShared, NodeDecl};
use crate::interface::{Interface, Interfaces, L2Modes, SharedL2Modes};
use crate::l2::bridge::{Bridges, MacLearn};
use crate::nodes::{
    error_drop::ErrorDrop,
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
use crate::router::{LearnSender, NeighborLearn, Router};
use crate::subif::{SharedSubIfs, SubIf, SubIfs, TagMatch};
use arc_swap::ArcSwap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Neighbour learns waiting for the control plane at most; workers drop (and count) more.
const LEARN_QUEUE: usize = 4096;
/// MAC learn batches (one per frame at most) waiting for the control plane.
const MAC_LEARN_QUEUE: usize = 256;
/// How often learnt MAC addresses are checked for age.
const MAC_AGE_SCAN: Duration = Duration::from_secs(1);

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
    /// Neighbour learns the control plane refused (not on a connected network, table full).
    pub learns_refused: Arc<AtomicU64>,
    learner: Option<JoinHandle<()>>,
    mac_learner: Option<JoinHandle<()>>,
    /// Keeps the host devices' link states current (af_packet, af_xdp).
    link_monitor: Option<JoinHandle<()>>,
    pub workers: Vec<WorkerInfo>,
    pub main_cpu: Option<usize>,
    pub started: Instant,
    pub tsc_hz: f64,
    /// Replay progress of pcap interfaces, by interface index.
    pub replays: Vec<(u32, Arc<ReplayProgress>)>,
    stop: Arc<AtomicBool>,
    /// The main thread's tx queues (TX = RX + 1), kept for control-plane packets.
    _main_tx: Vec<Box<dyn TxQueue>>,
    /// Undoes device changes (MTU, promiscuous) when dropped, after the workers stop.
    restore: Vec<Box<dyn Send + Sync>>,
}

/// An rx queue on its way to a worker: (interface index, queue number, queue).
type RxPlacement = (usize, usize, Box<dyn RxQueue>);

struct Opened {
    interface: Interface,
    ports: DriverPorts,
}

fn open_interface(
    cfg: &InterfaceConfig,
    index: u32,
    workers: usize,
    pool: &Arc<BufferPool>,
) -> Result<(Opened, Option<Arc<ReplayProgress>>), String> {
    let name = cfg.name.get_ref();
    let mtu = cfg.mtu;
    let threads = workers + 1;
    let packet_socket = |host: &str| {
        af_packet::open(&AfPacketConfig {
            host: host.to_string(),
            mtu,
            rx_queues: workers,
            tx_queues: threads,
        })
    };
    let xdp_socket = |d: &AfXdp| {
        let xdp = AfXdpConfig {
            host: d.host.clone(),
            mtu,
            workers,
            xdp_mode: d.xdp_mode,
            copy_mode: d.copy_mode,
            ring_size: d.ring_size,
            busy_poll: d.busy_poll,
        };
        af_xdp::open(&xdp, pool)
    };
    let mut driver = cfg.driver.name();
    let opened = match &cfg.driver {
        Driver::AfPacket(d) => packet_socket(&d.host).map(|ports| (ports, None)),
        Driver::AfXdp(d) => xdp_socket(d).map(|ports| (ports, None)),
        Driver::Auto(d) => {
            auto_open(d, mtu, xdp_socket, packet_socket).map(|(mut ports, chosen, why)| {
                driver = chosen;
                ports.details.insert(0, ("auto".into(), why));
                (ports, None)
            })
        }
        Driver::Memif(d) => memif::open(
            &MemifConfig {
                name: name.clone(),
                socket: d.socket.clone(),
                role: d.role,
                id: d.id,
                secret: d.secret.clone(),
                ring_size: d.ring_size,
                workers,
                log: true,
            },
            pool,
        )
        .map(|ports| (ports, None)),
        Driver::Pcap(d) => pcap::open(
            &PcapConfig {
                rx_file: d.rx_file.clone(),
                tx_file: d.tx_file.clone(),
                looping: d.looping,
                mtu: mtu.unwrap_or(crate::config::MAX_MTU),
            },
            threads,
        )
        // Only an interface that replays a file has progress to wait for.
        .map(|(ports, progress)| (ports, d.rx_file.is_some().then_some(progress))),
    };
    let (ports, progress) = opened.map_err(|e| format!("interface {name}: {e}"))?;
    let mut interface = Interface::new(index, name, driver, threads);
    if let Some(host) = cfg.driver.host() {
        if let Ok(mac) = af_packet::netdev::mac(host) {
            interface.mac = crate::wire::MacAddress(mac);
        }
    }
    interface.mtu = ports.mtu;
    interface.rx_queues = ports.rx.len();
    interface.tx_queues = ports.tx.len();
    interface.details = ports.details.clone();
    interface.live = ports.live.clone();
    interface.set_up(cfg.up);
    Ok((Opened { interface, ports }, progress))
}

/// `driver = "auto"`: AF_XDP unless the MTU is too large for it or opening it fails, then
/// AF_PACKET. Returns the ports, the driver chosen and why, or both drivers' errors.
fn auto_open(
    d: &AfXdp,
    mtu: Option<u32>,
    xdp: impl FnOnce(&AfXdp) -> Result<DriverPorts, String>,
    packet: impl FnOnce(&str) -> Result<DriverPorts, String>,
) -> Result<(DriverPorts, &'static str, String), String> {
    let refused = match mtu {
        Some(m) if m > af_xdp::MAX_MTU => format!("MTU {m} is above af_xdp's {}", af_xdp::MAX_MTU),
        _ => match xdp(d) {
            Ok(ports) => return Ok((ports, "af_xdp", "chose af_xdp".into())),
            Err(e) => e,
        },
    };
    match packet(&d.host) {
        Ok(ports) => Ok((
            ports,
            "af_packet",
            format!("chose af_packet: af_xdp refused: {refused}"),
        )),
        Err(e) => Err(format!("driver auto: af_xdp: {refused}; af_packet: {e}")),
    }
}

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
        let fib = router.fib_reader();
        let view = router.view();
        let router = Arc::new(Mutex::new(router));
        let (learn_tx, learn_rx) = std::sync::mpsc::sync_channel(LEARN_QUEUE);
        let (mac_tx, mac_rx) = std::sync::mpsc::sync_channel(MAC_LEARN_QUEUE);
        let (l2fib, l2clock, learns_lost) = (
            bridges.reader(),
            bridges.clock(),
            bridges.learns_lost.clone(),
        );
        let bridges = Arc::new(Mutex::new(bridges));

        // Hand out queues: rx queue k of an interface goes to worker k mod workers; tx queue
        // w to worker w, and the last one to the main thread.
        let mut rx_by_worker: Vec<Vec<RxPlacement>> = (0..workers).map(|_| Vec::new()).collect();
        let mut tx_by_thread: Vec<Vec<Box<dyn TxQueue>>> =
            (0..=workers).map(|_| Vec::new()).collect();
        let mut restore = Vec::new();
        let mut interfaces = Vec::new();
        for (i, o) in opened.into_iter().enumerate() {
            let Opened { interface, ports } = o;
            for (q, rx) in ports.rx.into_iter().enumerate() {
                rx_by_worker[q % workers].push((i, q, rx));
            }
            let mut tx = ports.tx.into_iter();
            for queues in tx_by_thread.iter_mut() {
                queues.push(tx.next().unwrap_or_else(|| Box::new(NoTx)));
            }
            restore.extend(ports.restore);
            interfaces.push(Arc::new(interface));
        }
        let main_tx = tx_by_thread.pop().unwrap_or_default();

        let stop = Arc::new(AtomicBool::new(false));
        let mut infos = Vec::new();
        let cores = d.worker_cores.clone();
        let min_frame = d.min_frame;
        for (w, (rxs, txs)) in rx_by_worker.into_iter().zip(tx_by_thread).enumerate() {
            let l3 = L3Parts {
                view: view.clone(),
                fib: fib.clone(),
                learn: learn_tx.clone(),
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
            };
            let decls = worker_graph(&interfaces, &shared, l2, &l3, (rxs, txs), min_frame);
            let graph = Graph::build(decls, w)?;
            let shared = graph.shared().clone();
            let cpu = cores.as_ref().map(|c| c[w]);
            let tid = Arc::new(AtomicI32::new(0));
            let place = Placement {
                cpu,
                nice: d.worker_nice,
            };
            let handle = spawn_worker(w, place, graph, pool.clone(), stop.clone(), tid.clone())?;
            infos.push(WorkerInfo {
                index: w,
                name: format!("sluice_wk_{w}"),
                cpu,
                graph: shared,
                tid,
                handle: Some(handle),
            });
        }
        drop(learn_tx);
        drop(mac_tx);
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
        let learner = spawn_learner(
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
            learns_refused,
            learner: Some(learner),
            mac_learner: Some(mac_learner),
            link_monitor,
            workers: infos,
            main_cpu,
            started: Instant::now(),
            tsc_hz,
            replays,
            stop,
            _main_tx: main_tx,
            restore,
        })
    }

    /// Make `interface` a routed (L3) port, a cross-connect to another, or a bridge port,
    /// and publish the new modes.
    pub fn set_l2_mode(&self, interface: u32, mode: L2Mode) -> Result<(), String> {
        let itf = self
            .interfaces
            .list
            .get(interface as usize)
            .ok_or_else(|| format!("no interface index {interface}"))?
            .clone();
        let is_bvi = itf.driver == BVI_DRIVER;
        let mut bridges = self.bridges.lock().unwrap_or_else(|p| p.into_inner());
        match mode {
            L2Mode::Bridge { bd, bvi: true, .. } if is_bvi => {
                bridges.set_bvi(interface, bd, itf.mac)?
            }
            L2Mode::Bridge { bvi: true, .. } => {
                return Err(format!("{} is not a BVI (bvi create makes one)", itf.name))
            }
            L2Mode::Bridge { .. } | L2Mode::Xconnect(_) if is_bvi => {
                return Err(format!(
                "{} is a BVI: it joins a bridge domain as one (set interface l2 bridge {} BD bvi)",
                itf.name, itf.name
            ))
            }
            L2Mode::Bridge { bd, shg, .. } => bridges.set_member(interface, Some((bd, shg)))?,
            _ => bridges.set_member(interface, None)?,
        }
        let mut m = (**self.modes.load()).clone();
        m.xconnect.resize(self.interfaces.list.len(), None);
        m.xconnect[interface as usize] = match mode {
            L2Mode::Xconnect(tx) => Some(tx),
            _ => None,
        };
        (m.bridge, m.domains) = bridges.view(self.interfaces.list.len());
        self.modes.store(Arc::new(m));
        Ok(())
    }

    /// Create sub-interface `PARENT.ID` matching `tags`, up or down; returns its index. It
    /// exists for the workers (and can take traffic) when this returns.
    pub fn create_subif(
        &mut self,
        parent: &str,
        id: u32,
        tags: TagMatch,
        up: bool,
    ) -> Result<u32, String> {
        let p = self
            .interfaces
            .by_name(parent)
            .ok_or_else(|| format!("no interface named '{parent}'"))?
            .clone();
        if p.index as usize >= self.hardware {
            return Err(format!(
                "{parent} is a sub-interface: sub-interfaces sit on a hardware interface"
            ));
        }
        let name = format!("{parent}.{id}");
        if self.interfaces.by_name(&name).is_some() {
            return Err(format!("{name} exists already"));
        }
        let mut table = (**self.subifs.load()).clone();
        if let Some(other) = table.conflict(p.index, tags) {
            return Err(format!(
                "{} already takes {} frames on {parent}",
                other.interface.name, other.tags
            ));
        }
        let index = self.interfaces.list.len() as u32;
        let mut itf = Interface::new(index, &name, "sub-interface", self.workers.len() + 1);
        itf.mac = p.mac;
        itf.mtu = p.mtu;
        itf.details = vec![
            ("parent".into(), parent.to_string()),
            ("match".into(), tags.to_string()),
        ];
        itf.set_up(up);
        let itf = Arc::new(itf);
        {
            let mut r = self.router.lock().unwrap_or_else(|p| p.into_inner());
            let at = r.add_interface(&name, p.mac, p.mtu);
            debug_assert_eq!(
                at, index,
                "the router numbers interfaces as the dataplane does"
            );
            r.commit();
        }
        self.interfaces.list.push(itf.clone());
        // The modes cover every index before a frame can arrive on the new one.
        let mut m = (**self.modes.load()).clone();
        m.xconnect.resize(self.interfaces.list.len(), None);
        m.bridge.resize(self.interfaces.list.len(), None);
        self.modes.store(Arc::new(m));
        table.insert(SubIf::new(itf, p.index, tags));
        self.subifs.store(Arc::new(table));
        Ok(index)
    }

    /// Create BVI `bviN` (a bridge domain's routed interface), with `mac` or one of sluice's
    /// own; returns its index.
    pub fn create_bvi(
        &mut self,
        instance: u32,
        mac: Option<crate::wire::MacAddress>,
    ) -> Result<u32, String> {
        let name = format!("bvi{instance}");
        if self.interfaces.by_name(&name).is_some() {
            return Err(format!("{name} exists already"));
        }
        let index = self.interfaces.list.len() as u32;
        let mut itf = Interface::new(index, &name, BVI_DRIVER, self.workers.len() + 1);
        if let Some(m) = mac {
            itf.mac = m;
        }
        itf.set_up(true);
        let itf = Arc::new(itf);
        {
            let mut r = self.router.lock().unwrap_or_else(|p| p.into_inner());
            let at = r.add_interface(&name, itf.mac, itf.mtu);
            debug_assert_eq!(
                at, index,
                "the router numbers interfaces as the dataplane does"
            );
            r.commit();
        }
        self.interfaces.list.push(itf.clone());
        let mut m = (**self.modes.load()).clone();
        m.xconnect.resize(self.interfaces.list.len(), None);
        m.bridge.resize(self.interfaces.list.len(), None);
        self.modes.store(Arc::new(m));
        let mut table = (**self.subifs.load()).clone();
        table.insert(SubIf::bvi(itf));
        self.subifs.store(Arc::new(table));
        Ok(index)
    }

    /// Delete sub-interface or BVI `name`; refused while it has a mode or addresses.
    pub fn delete_subif(&mut self, name: &str) -> Result<(), String> {
        let itf = self
            .interfaces
            .by_name(name)
            .ok_or_else(|| format!("no interface named '{name}'"))?
            .clone();
        let i = itf.index;
        if (i as usize) < self.hardware {
            return Err(format!(
                "{name} is a hardware interface, not a sub-interface or BVI"
            ));
        }
        let modes = self.modes.load();
        let xc = modes.xconnect.get(i as usize).copied().flatten().is_some()
            || modes.xconnect.contains(&Some(i));
        if xc || modes.bridge_port(i).is_some() {
            return Err(format!(
                "{name} is cross-connected or bridged: set interface l3 {name} first"
            ));
        }
        let routed = self.router.lock().unwrap_or_else(|p| p.into_inner()).view();
        if routed.load().interface(i).is_some_and(|l3| l3.routed()) {
            return Err(format!("{name} has IP addresses: delete them first"));
        }
        let mut table = (**self.subifs.load()).clone();
        table.remove(i);
        self.subifs.store(Arc::new(table));
        itf.set_deleted();
        Ok(())
    }

    /// Publish the bridge domains after a change that did not move a port (`create
    /// bridge-domain`, a new setting).
    pub fn publish_bridges(&self, bridges: &Bridges) {
        let mut m = (**self.modes.load()).clone();
        (m.bridge, m.domains) = bridges.view(self.interfaces.list.len());
        self.modes.store(Arc::new(m));
    }

    /// Whether every pcap replay has reached its end (tests wait for this).
    pub fn replays_done(&self) -> bool {
        self.replays
            .iter()
            .all(|(_, p)| p.done.load(Ordering::Relaxed))
    }

    /// Stop the workers, close the drivers, restore device state.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for w in &mut self.workers {
            if let Some(h) = w.handle.take() {
                let _ = h.join();
            }
        }
        for h in [self.learner.take(), self.mac_learner.take()]
            .into_iter()
            .flatten()
        {
            let _ = h.join();
        }
        if let Some(h) = self.link_monitor.take() {
            let _ = h.join();
        }
        self.restore.clear();
    }
}

impl Drop for Dataplane {
    fn drop(&mut self) {
        self.shutdown();
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
            .add_route(r.prefix, &r.hops)
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

/// The driver name of a BVI interface.
pub const BVI_DRIVER: &str = "bvi";

/// What an interface does with the frames it receives, apart from routing by its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Mode {
    /// No L2 mode: it routes if it has addresses.
    L3,
    Xconnect(u32),
    /// A port of bridge domain `bd`; `bvi`: its routed interface (a BVI interface only).
    Bridge {
        bd: u32,
        shg: u8,
        bvi: bool,
    },
}

/// The config's sub-interfaces, numbered after the hardware interfaces, then its BVIs.
fn sub_interfaces(cfg: &Config, opened: &[Opened], threads: usize) -> Vec<SubIf> {
    let mut out = Vec::new();
    for (k, s) in cfg.subinterfaces.iter().enumerate() {
        // The config checked that the parent is a hardware interface.
        let Some(parent) = opened.iter().find(|o| o.interface.name == s.parent) else {
            continue;
        };
        let p = &parent.interface;
        let index = (opened.len() + k) as u32;
        let mut itf = Interface::new(index, &s.name(), "sub-interface", threads);
        itf.mac = p.mac;
        itf.mtu = p.mtu;
        itf.details = vec![
            ("parent".into(), p.name.clone()),
            ("match".into(), s.tags.to_string()),
        ];
        itf.set_up(s.up);
        out.push(SubIf::new(Arc::new(itf), p.index, s.tags));
    }
    for (k, b) in cfg.bvis.iter().enumerate() {
        let index = (opened.len() + cfg.subinterfaces.len() + k) as u32;
        let mut itf = Interface::new(index, &b.name(), BVI_DRIVER, threads);
        if let Some(m) = b.mac {
            itf.mac = m;
        }
        itf.set_up(true);
        out.push(SubIf::bvi(Arc::new(itf)));
    }
    out
}

/// The bridge domains of the config, their members and static entries.
fn build_bridges(
    cfg: &Config,
    find: &dyn Fn(&str) -> Option<usize>,
    soft: &[SubIf],
) -> Result<Bridges, String> {
    let mut bridges = Bridges::default();
    let index = |name: &str| {
        find(name)
            .map(|i| i as u32)
            .ok_or(format!("no interface {name}"))
    };
    for d in &cfg.bridge_domains {
        bridges.create(d.id, d.settings)?;
        for (name, shg) in &d.members {
            bridges.set_member(index(name)?, Some((d.id, *shg)))?;
        }
        for (ip, mac) in &d.arp_entries {
            bridges.set_arp_entry(d.id, u32::from(*ip), Some(*mac))?;
        }
    }
    for m in &cfg.static_macs {
        bridges.add_mac(m.bd, m.mac, index(&m.interface)?, true)?;
    }
    for b in &cfg.bvis {
        let name = b.name();
        let bvi = soft
            .iter()
            .find(|s| s.interface.name == name)
            .ok_or(format!("no interface {name}"))?;
        bridges.set_bvi(bvi.interface.index, b.bd, bvi.interface.mac)?;
    }
    Ok(bridges)
}

/// Takes the workers' MAC learns and applies them, and ages the learnt entries once a
/// second.
fn spawn_mac_learner(
    bridges: Arc<Mutex<Bridges>>,
    learns: Receiver<Vec<MacLearn>>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name("sluice_l2learn".into())
        .spawn(move || {
            let mut aged_at = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let first = match learns.recv_timeout(MAC_AGE_SCAN) {
                    Ok(batch) => Some(batch),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                let mut b = bridges.lock().unwrap_or_else(|p| p.into_inner());
                for batch in first.into_iter().chain(learns.try_iter()) {
                    b.learn(&batch);
                }
                if aged_at.elapsed() >= MAC_AGE_SCAN {
                    b.age();
                    aged_at = Instant::now();
                }
            }
        })
        .map_err(|e| format!("cannot start the MAC learner: {e}"))
}

/// Takes neighbour learns from the workers and applies them, one commit per batch.
fn spawn_learner(
    router: Arc<Mutex<Router>>,
    learns: Receiver<NeighborLearn>,
    stop: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
) -> Result<JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name("sluice_learn".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let first = match learns.recv_timeout(Duration::from_millis(100)) {
                    Ok(n) => n,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                let mut r = router.lock().unwrap_or_else(|p| p.into_inner());
                for n in std::iter::once(first).chain(learns.try_iter()) {
                    if r.learn(n).is_err() {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
                r.commit();
            }
        })
        .map_err(|e| format!("cannot start the neighbour learner: {e}"))
}

/// What every worker routes with.
struct L3Parts {
    view: SharedL3View,
    fib: FibReader,
    learn: LearnSender,
}

/// The tables every worker reads that the L2 and output nodes share.
struct Shared {
    modes: SharedL2Modes,
    subifs: SharedSubIfs,
}

/// The nodes of one worker's graph.
fn worker_graph(
    interfaces: &[Arc<Interface>],
    shared: &Shared,
    l2: LearnParts,
    l3: &L3Parts,
    (rxs, txs): (Vec<RxPlacement>, Vec<Box<dyn TxQueue>>),
    min_frame: usize,
) -> Vec<NodeDecl> {
    let Shared { modes, subifs } = shared;
    let mut decls = Vec::new();
    // One input node per driver: af-packet-input, af-xdp-input, pcap-input.
    let mut by_driver: Vec<(String, Vec<PlacedQueue>)> = Vec::new();
    for (i, queue, rx) in rxs {
        let node = format!("{}-input", interfaces[i].driver.replace('_', "-"));
        let slot = match by_driver.iter().position(|(n, _)| *n == node) {
            Some(s) => s,
            None => {
                by_driver.push((node, Vec::new()));
                by_driver.len() - 1
            }
        };
        by_driver[slot].1.push(PlacedQueue {
            interface: interfaces[i].clone(),
            queue,
            rx,
        });
    }
    for (name, queues) in by_driver {
        if !queues.is_empty() {
            decls.push(InputNode::decl(&name, queues));
        }
    }
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
    decls.extend(crate::nodes::routing_decls(&l3.view, &l3.fib, &l3.learn));
    decls.push(InterfaceOutput::decl(interfaces.to_vec(), subifs.clone()));
    for (itf, tx) in interfaces.iter().zip(txs) {
        decls.push(TxNode::decl(itf.clone(), tx));
    }
    decls.push(ErrorDrop::decl(interfaces.to_vec(), subifs.clone()));
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
    stop: Arc<AtomicBool>,
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
