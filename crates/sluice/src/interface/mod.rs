//! Interfaces: names, admin state, counters per thread, and the L2 modes the control plane
//! publishes to the workers.

pub mod commands;
pub mod config;
pub mod subif;
use crate::graph::counter::{CacheAligned, Counter};
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Interface counters of one thread; only that thread writes them.
#[derive(Default, Debug)]
pub struct IfCounters {
    pub rx_packets: Counter,
    pub rx_bytes: Counter,
    pub tx_packets: Counter,
    pub tx_bytes: Counter,
    /// Packets dropped by the graph that arrived on this interface.
    pub drops: Counter,
    /// Packets the driver could not transmit (ring full, send error).
    pub tx_errors: Counter,
    /// Of those, packets the peer had no room for (its receiver is behind, not us).
    pub tx_peer_full: Counter,
    /// Packets the kernel or NIC dropped before we saw them (e.g. rx ring full).
    pub rx_miss: Counter,
}

/// A summed snapshot of an interface's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IfTotals {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops: u64,
    pub tx_errors: u64,
    pub tx_peer_full: u64,
    pub rx_miss: u64,
}

impl IfTotals {
    fn minus(self, b: IfTotals) -> IfTotals {
        IfTotals {
            rx_packets: self.rx_packets.wrapping_sub(b.rx_packets),
            rx_bytes: self.rx_bytes.wrapping_sub(b.rx_bytes),
            tx_packets: self.tx_packets.wrapping_sub(b.tx_packets),
            tx_bytes: self.tx_bytes.wrapping_sub(b.tx_bytes),
            drops: self.drops.wrapping_sub(b.drops),
            tx_errors: self.tx_errors.wrapping_sub(b.tx_errors),
            tx_peer_full: self.tx_peer_full.wrapping_sub(b.tx_peer_full),
            rx_miss: self.rx_miss.wrapping_sub(b.rx_miss),
        }
    }
}

/// One interface as the whole process sees it.
pub struct Interface {
    pub index: u32,
    pub name: String,
    /// Driver name: "af_packet", "af_xdp", "memif", "pcap".
    pub driver: &'static str,
    /// Driver facts for `show interface` (host interface, files, ring sizes).
    pub details: Vec<(String, String)>,
    pub mtu: u32,
    /// The MAC the router answers to and sends from: the host device's for af_packet and
    /// af_xdp, a locally administered 02:fe:00:00:00:INDEX for the others.
    pub mac: crate::wire::MacAddress,
    pub rx_queues: usize,
    pub tx_queues: usize,
    admin_up: AtomicBool,
    /// A deleted sub-interface: its index is not reused, nothing shows or finds it.
    deleted: AtomicBool,
    /// The driver's view of the link, when it has one that changes.
    pub live: Option<Arc<dyn crate::drivers::LiveStatus>>,
    /// The XDP fast path's slot for this interface, when it has the fast path on.
    pub fast_path: Option<crate::drivers::af_xdp::fastpath::Port>,
    /// The cross-connect patch's slot, when the driver can send this interface's frames
    /// straight to another's transmit queue (`nodes::patch`).
    pub patch: Option<crate::nodes::patch::PatchSlot>,
    /// One set per thread: workers first, the main thread last.
    counters: Box<[CacheAligned<IfCounters>]>,
    baseline: std::sync::Mutex<IfTotals>,
}

impl Interface {
    pub fn new(index: u32, name: &str, driver: &'static str, threads: usize) -> Interface {
        Interface {
            index,
            name: name.to_string(),
            driver,
            details: Vec::new(),
            mtu: 1500,
            mac: crate::wire::MacAddress([0x02, 0xfe, 0, 0, (index >> 8) as u8, index as u8]),
            rx_queues: 1,
            tx_queues: 1,
            admin_up: AtomicBool::new(false),
            deleted: AtomicBool::new(false),
            live: None,
            fast_path: None,
            patch: None,
            counters: (0..threads).map(|_| CacheAligned::default()).collect(),
            baseline: Default::default(),
        }
    }

    pub fn is_up(&self) -> bool {
        self.admin_up.load(Ordering::Relaxed)
    }

    /// Whether the link is up (drivers without link state always are).
    pub fn link_up(&self) -> bool {
        self.live.as_ref().is_none_or(|l| l.link_up())
    }

    /// The link state by name: "up", "down", and for host devices also "lower-down" and
    /// "deleted".
    pub fn link_state(&self) -> &'static str {
        self.live.as_ref().map_or("up", |l| l.link_state())
    }

    /// What `show interface` calls the state: sluice's admin state first, then the link's.
    pub fn state(&self) -> &'static str {
        if !self.is_up() {
            return "down";
        }
        match self.link_state() {
            "down" => "no-link",
            s => s,
        }
    }

    /// The link's own counters (changes, frames dropped because it was down).
    pub fn link_counters(&self) -> Vec<(&'static str, u64)> {
        self.live.as_ref().map_or_else(Vec::new, |l| l.counters())
    }

    /// The host device under this interface, for af_packet and af_xdp.
    pub fn host_link(&self) -> Option<Arc<crate::drivers::host_link::HostLink>> {
        self.live.clone().and_then(|l| l.host_link())
    }

    /// Static driver facts followed by the live ones.
    pub fn all_details(&self) -> Vec<(String, String)> {
        let mut d = self.details.clone();
        if let Some(l) = &self.live {
            d.extend(l.details());
        }
        d
    }

    pub fn set_up(&self, up: bool) {
        self.admin_up.store(up, Ordering::Relaxed);
    }

    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Ordering::Relaxed)
    }

    /// Mark a sub-interface deleted (and down).
    pub fn set_deleted(&self) {
        self.set_up(false);
        self.deleted.store(true, Ordering::Relaxed);
    }

    /// The counters thread `thread` writes.
    #[inline(always)]
    pub fn counters(&self, thread: usize) -> &IfCounters {
        &self.counters[thread]
    }

    /// Counters since the interface was made, summed over threads; `clear interfaces` does
    /// not change them (the Prometheus endpoint reads these).
    pub fn raw_totals(&self) -> IfTotals {
        let mut t = IfTotals::default();
        for c in self.counters.iter() {
            t.rx_packets += c.rx_packets.get();
            t.rx_bytes += c.rx_bytes.get();
            t.tx_packets += c.tx_packets.get();
            t.tx_bytes += c.tx_bytes.get();
            t.drops += c.drops.get();
            t.tx_errors += c.tx_errors.get();
            t.tx_peer_full += c.tx_peer_full.get();
            t.rx_miss += c.rx_miss.get();
        }
        // What the XDP fast path forwarded never reached a worker: counted in the kernel.
        if let Some(c) = self.fast_path_counts() {
            t.rx_packets += c.rx_packets;
            t.rx_bytes += c.rx_bytes;
            t.tx_packets += c.tx_packets;
            t.tx_bytes += c.tx_bytes;
        }
        t
    }

    /// The XDP fast path's counters of this interface, when it has the fast path on.
    pub fn fast_path_counts(
        &self,
    ) -> Option<crate::drivers::af_xdp::fastpath::maps::InterfaceCounts> {
        let port = self.fast_path?;
        let fp = crate::drivers::af_xdp::fastpath::active()?;
        Some(fp.counts(port))
    }

    /// Counters since the last `clear interfaces`.
    pub fn totals(&self) -> IfTotals {
        self.raw_totals().minus(*self.baseline.lock().unwrap())
    }

    /// `clear interfaces`: remember the current values and report from there. The workers'
    /// counters are never written by another thread.
    pub fn clear(&self) {
        *self.baseline.lock().unwrap() = self.raw_totals();
    }
}

/// What the workers forward by: an immutable table that the control plane replaces whole.
#[derive(Clone, Debug, Default)]
pub struct L2Modes {
    /// `xconnect[rx]` is the interface everything received on `rx` is sent out of.
    pub xconnect: Vec<Option<u32>>,
    /// `bridge[rx]`: the bridge domain `rx` is a port of.
    pub bridge: Vec<Option<crate::l2::bridge::BridgePort>>,
    /// The bridge domains, by internal index.
    pub domains: Vec<Option<crate::l2::bridge::DomainView>>,
}

impl L2Modes {
    /// The port `rx` is and its domain, when `rx` is bridged.
    #[inline(always)]
    pub fn bridge_port(
        &self,
        rx: u32,
    ) -> Option<(
        crate::l2::bridge::BridgePort,
        &crate::l2::bridge::DomainView,
    )> {
        let port = self.bridge.get(rx as usize).copied().flatten()?;
        let domain = self.domains.get(port.bd as usize)?.as_ref()?;
        Some((port, domain))
    }
}

/// The published L2 modes. Workers load it once per frame; the control plane builds a new
/// table and swaps it in, so the fast path never takes a lock.
pub type SharedL2Modes = Arc<ArcSwap<L2Modes>>;

/// All interfaces, by index: the hardware ones, then sub-interfaces in the order they were
/// created (a deleted one keeps its slot, marked deleted).
pub struct Interfaces {
    pub list: Vec<Arc<Interface>>,
}

impl Interfaces {
    pub fn by_name(&self, name: &str) -> Option<&Arc<Interface>> {
        self.live().find(|i| i.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.live().map(|i| i.name.as_str()).collect()
    }

    /// Every interface not deleted.
    pub fn live(&self) -> impl Iterator<Item = &Arc<Interface>> {
        self.list.iter().filter(|i| !i.is_deleted())
    }
}
