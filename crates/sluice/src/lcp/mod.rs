//! lcp (after VPP's linux-cp): each paired sluice interface has a Linux tap with its MAC,
//! MTU and addresses, so that routing daemons (BIRD, FRR) run in Linux and speak through
//! sluice's ports.
//!
//! - Up: the workers' host-punt node (`src/nodes/host_punt.rs`) copies what the router does
//!   not take itself into a bounded channel; this module's thread writes each frame to the
//!   tap of the interface it arrived on.
//! - Down: what Linux sends on a tap (its ARP, its BGP segments, its pings) is read by the
//!   same thread and sent out of the paired interface on the main thread's transmit queue
//!   (every interface has one: TX = workers + 1), so no worker is involved.
//! - Link state, both ways, checked every `SYNC_EVERY`: sluice's admin state sets the tap's,
//!   and a change made in Linux (`ip link set tap-e0 down`) sets sluice's; the tap's carrier
//!   follows the port's link.
//!
//! - Routes, addresses and neighbours Linux has on the taps come into sluice through a
//!   netlink listener (`src/netlink/`), one per network namespace that holds taps, started
//!   with the first pair there; a pair's tap name joins the listener's host pairs.
//!
//! The thread waits in poll(2) on the taps for at most `POLL_WAIT`, then empties the punt
//! channel, so a punted packet waits at most that long. The slow path is deliberate: punted
//! traffic is control traffic, rate-limited by each worker.

pub mod commands;
pub mod config;
pub mod host_punt;
pub mod policy;
pub mod punt_class;
pub mod section;

use crate::buffer::BufferPool;
use crate::drivers::tap::Tap;
use crate::drivers::TxQueue;
use crate::interface::Interface;
use crate::lcp::host_punt::PuntReceiver;
use crate::netlink::{HostPairs, Listener, NetlinkStats};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the thread waits for a tap to have a frame before it looks at the punt channel.
const POLL_WAIT: Duration = Duration::from_millis(2);
/// How often link states are compared.
const SYNC_EVERY: Duration = Duration::from_millis(100);
/// Frames read from one tap in one round at most, so one busy tap cannot starve the others.
const READ_BATCH: usize = 64;
/// Punted frames written to taps in one round at most.
const PUNT_BATCH: usize = 1024;

/// Counters of one pair, written by the lcp thread.
#[derive(Default, Debug)]
pub struct PairCounters {
    /// Frames written to the tap (punted to Linux), and their bytes.
    pub to_host: AtomicU64,
    pub to_host_bytes: AtomicU64,
    /// Frames the tap refused (Linux's queue full, the tap gone).
    pub to_host_errors: AtomicU64,
    /// Frames read from the tap and sent out of the interface, and their bytes.
    pub from_host: AtomicU64,
    pub from_host_bytes: AtomicU64,
    /// Frames from the tap dropped: interface down, no buffer, too long, or the driver's
    /// transmit refused them.
    pub from_host_drops: AtomicU64,
}

/// One interface and its tap.
struct Pair {
    interface: Arc<Interface>,
    tap: Tap,
    counters: PairCounters,
    /// The admin state both sides last agreed on.
    agreed_up: bool,
    /// The carrier last set on the tap.
    carrier: Option<bool>,
}

/// What `show lcp` prints of a pair.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PairView {
    pub interface: String,
    pub host_if: String,
    pub host_ifindex: u32,
    pub netns: Option<String>,
    pub host_up: bool,
    pub carrier: bool,
    pub to_host: u64,
    pub to_host_bytes: u64,
    pub to_host_errors: u64,
    pub from_host: u64,
    pub from_host_bytes: u64,
    pub from_host_drops: u64,
}

/// The pairs and the thread that moves their frames.
pub struct Lcp {
    pairs: Arc<Mutex<Vec<Pair>>>,
    /// Punted frames whose interface had no pair by the time the thread took them (a pair
    /// deleted while its punts were queued): dropped.
    unpaired: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    router: Arc<Mutex<crate::router::Router>>,
    /// A netlink listener per namespace that holds taps (`None`: the daemon's).
    listeners: Arc<Mutex<Vec<NamespaceListener>>>,
    events: Arc<crate::events::Bus>,
}

/// The netlink listeners' counters, for a reader outside the control thread (metrics).
#[derive(Clone)]
pub struct NetlinkCounters(Arc<Mutex<Vec<NamespaceListener>>>);

impl NetlinkCounters {
    /// What each namespace's netlink listener has done.
    pub fn stats(&self) -> Vec<NetlinkStats> {
        let listeners = self.0.lock().unwrap_or_else(|p| p.into_inner());
        listeners.iter().map(|l| l.listener.stats()).collect()
    }
}

struct NamespaceListener {
    netns: Option<String>,
    pairs: HostPairs,
    listener: Listener,
}

/// What the lcp thread drives: the main thread's transmit queue of each interface (by
/// index), the buffers it sends from, and the channel the workers punt into.
pub struct LcpParts {
    pub main_tx: Vec<Box<dyn TxQueue>>,
    /// The sub-interfaces: a sub-interface's tap sends out of its parent, tags pushed.
    pub subifs: crate::subif::SharedSubIfs,
    /// Every interface by index (the parents' link states).
    pub interfaces: Vec<Arc<Interface>>,
    pub pool: Arc<BufferPool>,
    pub punts: PuntReceiver,
    /// The main thread's index among the threads that count on interfaces (the last).
    pub thread: usize,
    /// Where the netlink listeners publish the routes they add and remove.
    pub events: Arc<crate::events::Bus>,
}

impl Lcp {
    /// Start the lcp thread (with no pairs yet); `router` is where the netlink listeners
    /// put what Linux has.
    pub fn start(
        parts: LcpParts,
        router: Arc<Mutex<crate::router::Router>>,
        stop: Arc<AtomicBool>,
    ) -> Result<Lcp, String> {
        let pairs: Arc<Mutex<Vec<Pair>>> = Arc::default();
        let unpaired: Arc<AtomicU64> = Arc::default();
        let (p, u) = (pairs.clone(), unpaired.clone());
        let events = parts.events.clone();
        let thread = std::thread::Builder::new()
            .name("sluice_lcp".into())
            .spawn(move || run(p, &u, parts, &stop))
            .map_err(|e| format!("cannot start the lcp thread: {e}"))?;
        Ok(Lcp {
            pairs,
            unpaired,
            thread: Some(thread),
            router,
            listeners: Arc::default(),
            events,
        })
    }

    /// The host pairs of `netns`'s listener, started now if there is none yet.
    fn host_pairs(&self, netns: Option<&str>) -> Result<HostPairs, String> {
        let mut listeners = self.listeners.lock().unwrap();
        if let Some(l) = listeners.iter().find(|l| l.netns.as_deref() == netns) {
            return Ok(l.pairs.clone());
        }
        let pairs = HostPairs::new();
        let options = crate::netlink::Options {
            netns: netns.map(str::to_string),
            events: Some(self.events.clone()),
            ..Default::default()
        };
        let listener = Listener::start(self.router.clone(), pairs.clone(), options)?;
        listeners.push(NamespaceListener {
            netns: netns.map(str::to_string),
            pairs: pairs.clone(),
            listener,
        });
        Ok(pairs)
    }

    /// Punted frames dropped because their interface had no pair any more.
    pub fn unpaired(&self) -> u64 {
        self.unpaired.load(Ordering::Relaxed)
    }

    /// What each namespace's netlink listener has done.
    pub fn netlink(&self) -> Vec<NetlinkStats> {
        self.netlink_counters().stats()
    }

    /// A handle on the listeners' counters.
    pub fn netlink_counters(&self) -> NetlinkCounters {
        NetlinkCounters(self.listeners.clone())
    }

    /// Pair `interface` with a new tap `host_if` (in `netns`), holding `addresses`; returns
    /// the addresses Linux refused, with why.
    pub fn create(
        &self,
        interface: &Arc<Interface>,
        host_if: &str,
        netns: Option<&str>,
        addresses: &[(IpAddr, u8)],
    ) -> Result<Vec<String>, String> {
        crate::lcp::config::pair::check_host_name(host_if)?;
        if let Some(ns) = netns {
            crate::lcp::config::pair::check_netns_name(ns)?;
        }
        let mut pairs = self.pairs.lock().unwrap();
        if let Some(p) = pairs.iter().find(|p| p.interface.index == interface.index) {
            return Err(format!(
                "interface '{}' already has tap '{}'",
                interface.name,
                p.tap.name()
            ));
        }
        if pairs
            .iter()
            .any(|p| p.tap.name() == host_if && p.tap.netns() == netns)
        {
            return Err(format!("tap '{host_if}' is paired already"));
        }
        let host_pairs = self.host_pairs(netns)?;
        let tap = Tap::create(host_if, interface.mac, interface.mtu, netns, addresses)
            .map_err(|e| e.to_string())?;
        host_pairs.set(host_if, interface.index);
        let up = interface.is_up();
        tap.set_up(up).map_err(|e| e.to_string())?;
        let refused = tap.refused.clone();
        pairs.push(Pair {
            interface: interface.clone(),
            tap,
            counters: PairCounters::default(),
            agreed_up: up,
            carrier: None,
        });
        Ok(refused)
    }

    /// Mirror a change of `interface`'s addresses made in sluice onto its tap, if it has one
    /// (`Ok(false)`: no pair). Linux's own changes come the other way, by netlink.
    pub fn mirror_address(
        &self,
        interface: u32,
        addr: IpAddr,
        len: u8,
        add: bool,
    ) -> Result<bool, String> {
        let pairs = self.pairs.lock().unwrap();
        let Some(p) = pairs.iter().find(|p| p.interface.index == interface) else {
            return Ok(false);
        };
        p.tap.set_address(addr, len, add).map_err(|e| {
            format!(
                "tap '{}': cannot {} {addr}/{len}: {e}",
                p.tap.name(),
                if add { "add" } else { "delete" }
            )
        })?;
        Ok(true)
    }

    /// Remove `interface`'s pair; its tap goes with it.
    pub fn delete(&self, interface: &Interface) -> Result<(), String> {
        let mut pairs = self.pairs.lock().unwrap();
        let at = pairs
            .iter()
            .position(|p| p.interface.index == interface.index)
            .ok_or_else(|| format!("interface '{}' has no lcp pair", interface.name))?;
        let pair = pairs.remove(at);
        if let Some(l) = self
            .listeners
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.netns.as_deref() == pair.tap.netns())
        {
            l.pairs.remove(pair.tap.name());
        }
        Ok(())
    }

    pub fn view(&self) -> Vec<PairView> {
        self.pairs
            .lock()
            .unwrap()
            .iter()
            .map(|p| {
                let c = &p.counters;
                let flags = p.tap.flags().unwrap_or(0);
                PairView {
                    interface: p.interface.name.clone(),
                    host_if: p.tap.name().to_string(),
                    host_ifindex: p.tap.ifindex(),
                    netns: p.tap.netns().map(str::to_string),
                    host_up: flags & libc::IFF_UP != 0,
                    carrier: flags & libc::IFF_LOWER_UP != 0,
                    to_host: c.to_host.load(Ordering::Relaxed),
                    to_host_bytes: c.to_host_bytes.load(Ordering::Relaxed),
                    to_host_errors: c.to_host_errors.load(Ordering::Relaxed),
                    from_host: c.from_host.load(Ordering::Relaxed),
                    from_host_bytes: c.from_host_bytes.load(Ordering::Relaxed),
                    from_host_drops: c.from_host_drops.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    /// Stop the listeners, wait for the thread (after `stop` was set) and close the taps.
    pub fn join(mut self) {
        for l in self.listeners.lock().unwrap().drain(..) {
            l.listener.stop();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.pairs.lock().unwrap().clear();
    }
}

fn run(pairs: Arc<Mutex<Vec<Pair>>>, unpaired: &AtomicU64, parts: LcpParts, stop: &AtomicBool) {
    let LcpParts {
        mut main_tx,
        subifs,
        interfaces,
        pool,
        punts,
        thread,
        events: _,
    } = parts;
    let mut bufs = pool.worker_handle();
    let mut frame = vec![0u8; 65536];
    let mut last_sync = Instant::now();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        fds.clear();
        fds.extend(pairs.lock().unwrap().iter().map(|p| libc::pollfd {
            fd: p.tap.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        if fds.is_empty() {
            // No taps: a punt still queued from a pair just deleted is counted and dropped.
            if punts.recv_timeout(Duration::from_millis(50)).is_ok() {
                unpaired.fetch_add(1, Ordering::Relaxed);
            }
            continue;
        }
        // SAFETY: `fds` is a live array of `fds.len()` pollfds; poll writes only their
        // revents. A descriptor closed meanwhile by `delete` reports POLLNVAL, nothing worse.
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                POLL_WAIT.as_millis() as i32,
            )
        };
        let mut pairs = pairs.lock().unwrap();
        let subs = subifs.load();
        for p in pairs.iter() {
            for _ in 0..READ_BATCH {
                match p.tap.read(&mut frame) {
                    Ok(Some(n)) => {
                        let port = Port::of(&p.interface, &subs);
                        to_wire(p, port, &frame[..n], (&mut main_tx, &mut bufs), thread);
                    }
                    Ok(None) | Err(_) => break,
                }
            }
        }
        for punted in punts.try_iter().take(PUNT_BATCH) {
            let Some(p) = pairs.iter().find(|p| p.interface.index == punted.interface) else {
                unpaired.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let c = &p.counters;
            match p.tap.write(&punted.frame) {
                Ok(()) => {
                    c.to_host.fetch_add(1, Ordering::Relaxed);
                    c.to_host_bytes
                        .fetch_add(punted.frame.len() as u64, Ordering::Relaxed);
                }
                Err(_) => {
                    c.to_host_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if last_sync.elapsed() >= SYNC_EVERY {
            last_sync = Instant::now();
            let subs = subifs.load();
            for p in pairs.iter_mut() {
                let parent = Port::of(&p.interface, &subs)
                    .and_then(|port| interfaces.get(port.index as usize));
                let link = parent.is_some_and(|i| i.is_up() && i.link_up());
                sync_link(p, link);
            }
        }
    }
    bufs.flush_cache();
}

/// Where a pair's frames leave: the interface itself, or a sub-interface's parent with the
/// sub-interface's tags.
#[derive(Clone, Copy)]
struct Port<'a> {
    index: u32,
    tags: &'a [u8],
}

impl<'a> Port<'a> {
    /// `None` for a sub-interface that is gone.
    fn of(itf: &Interface, subs: &'a crate::subif::SubIfs) -> Option<Port<'a>> {
        match subs.get(itf.index) {
            Some(sub) if sub.bvi => None,
            Some(sub) => Some(Port {
                index: sub.parent,
                tags: sub.push_bytes(),
            }),
            None if itf.is_deleted() => None,
            None => Some(Port {
                index: itf.index,
                tags: &[],
            }),
        }
    }
}

/// Send one frame Linux wrote on `p`'s tap out of `p`'s interface (a sub-interface's out of
/// its parent, tagged).
fn to_wire(
    p: &Pair,
    port: Option<Port<'_>>,
    frame: &[u8],
    (main_tx, bufs): (&mut [Box<dyn TxQueue>], &mut crate::buffer::WorkerBuffers),
    thread: usize,
) {
    let c = &p.counters;
    let itf = &p.interface;
    let dropped = || {
        c.from_host_drops.fetch_add(1, Ordering::Relaxed);
    };
    let Some(port) = port else {
        return dropped();
    };
    let Some(tx) = main_tx.get_mut(port.index as usize) else {
        return dropped();
    };
    // Linux's frame carries its own Ethernet header; the tap's MTU is the interface's.
    if !itf.is_up() || frame.len() > itf.mtu as usize + 18 {
        return dropped();
    }
    let Some(bi) = bufs.packet_from_bytes(frame) else {
        return dropped();
    };
    if !crate::subif::push_tags(bufs, bi, port.tags) {
        bufs.free(bi);
        return dropped();
    }
    let len = bufs.packet_len(bi) as u64;
    bufs.meta_mut(bi).tx_if = port.index;
    let sent = tx.tx_burst(bufs, &[bi]);
    let counters = itf.counters(thread);
    if sent.sent > 0 {
        counters.tx_packets.add(1);
        counters.tx_bytes.add(len);
        c.from_host.fetch_add(1, Ordering::Relaxed);
        c.from_host_bytes.fetch_add(len, Ordering::Relaxed);
    } else {
        counters.tx_errors.add(1);
        dropped();
    }
}

/// Bring the two sides' admin states together, and the tap's carrier to `link` (the port's,
/// or a sub-interface's parent's, link and admin state).
fn sync_link(p: &mut Pair, link: bool) {
    let ours = p.interface.is_up();
    let Ok(flags) = p.tap.flags() else {
        return;
    };
    let theirs = flags & libc::IFF_UP != 0;
    if ours != p.agreed_up {
        // Changed in sluice (it wins when both changed).
        if p.tap.set_up(ours).is_ok() {
            p.agreed_up = ours;
        }
    } else if theirs != p.agreed_up {
        // Changed in Linux.
        p.interface.set_up(theirs);
        p.agreed_up = theirs;
    }
    let carrier = p.interface.is_up() && link;
    if p.carrier != Some(carrier) && p.tap.set_carrier(carrier).is_ok() {
        p.carrier = Some(carrier);
    }
}
