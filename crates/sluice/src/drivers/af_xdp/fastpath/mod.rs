//! The XDP fast path (issue 39): flows the graph has decided are forwarded by sluice's XDP
//! program in the kernel, without the trip through the AF_XDP socket.
//!
//! How a flow gets there, and why it is never stale:
//! - An input node marks the packets of an interface with `fast-path = "on"` with
//!   `FLAG_OFFLOAD` (not while a trace or a pcap capture runs). Every graph node not declared
//!   offload-safe clears the flag (`NodeDecl::offload_safe`), so only a packet that crossed
//!   nothing but safe nodes reaches interface-output still marked; there the flow becomes a
//!   candidate, with the epoch the worker read before its pass began.
//! - The installer thread puts candidates into the `flows` map, at most `INSTALLS_PER_SEC` a
//!   second and `MAX_FLOWS` in all, only if their epoch is still the current one.
//! - Every control-plane change bumps the epoch (`bump`) after it is published to the
//!   workers, and so does a link going down or up (`watch_links`); an entry of an older epoch is a miss for the program, and the installer's sweep
//!   removes stale entries and those idle for `IDLE`.
//!
//! Kinds offloaded today: cross-connects (every frame of the ingress interface goes out the
//! egress interface unchanged) and IPv4 routes to one destination address from one ingress
//! interface (the next hop's Ethernet header, the TTL one less, the checksum updated).

pub mod bridge;
pub mod commands;
pub mod egress;
pub mod maps;
pub mod nat;
#[cfg(test)]
mod nat_tests;
pub mod offer;
#[cfg(test)]
mod offer_tests;
pub mod program;
pub mod routes;
mod sweep;
#[cfg(test)]
mod sweep_tests;
#[cfg(test)]
mod tests;

use crate::drivers::LiveStatus;
use crate::router::adjacency::SharedL3View;
use crate::router::Router;
use maps::{InterfaceCounts, Key, Maps, Value, KIND_NAT4, KIND_ROUTE4, KIND_ROUTE6, MAX_SLOTS};
use routes::RefusedSources;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Offloaded flows at most, of each kind but NAT (`maps::MAX_NAT_ENTRIES`).
pub const MAX_FLOWS: u32 = 65536;
/// Entries the installer adds a second at most (in batches of a tick's candidates).
pub const INSTALLS_PER_SEC: u32 = 400_000;
/// An entry no frame used for this long is removed.
pub const IDLE: Duration = Duration::from_secs(30);
/// Candidates waiting for the installer at most (more are dropped: offered again later).
const QUEUE: usize = 32768;
/// How often the installer looks at its queue, and sweeps.
const TICK: Duration = Duration::from_millis(5);
const SWEEP: Duration = Duration::from_secs(1);
/// How long a worker waits before offering the same flow again in the same epoch.
pub const REOFFER: Duration = Duration::from_millis(500);

/// An interface with the fast path on: its devmap and counter slot, and its Linux ifindex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    pub slot: u16,
    pub ifindex: u32,
}

/// A flow a worker offers for offload.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub key: Key,
    pub value: Value,
    /// Routes: the interface (sluice's index) and adjacency the graph routed by, which the
    /// installer asks the router how far they hold (`Router::uniform_prefix4`).
    pub rx_if: u32,
    pub adj: u32,
    /// What else must hear of the entry's frames.
    pub owner: Owner,
}

/// What keeps an entry's flow alive outside the fast path, and is told of its frames (each
/// sweep, for the entries that counted some since the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Nothing: a cross-connect or a route (a route's neighbour is in its value).
    Nothing,
    /// A NAT session: its worker marks it used.
    Session(nat::SessionRef),
    /// A bridge's learnt source address: its age refreshed in the MAC table.
    Mac(bridge::MacRef),
}

/// What the installer did, for `show xdp flows` and the metrics.
#[derive(Debug, Default)]
pub struct InstallerStats {
    pub installed: AtomicU64,
    /// Offers lost before the installer saw them: its queue full, or held at that moment
    /// (the flow is offered again by its next frame through the graph).
    pub offers_queue_full: AtomicU64,
    pub offers_queue_busy: AtomicU64,
    /// The longest pass of the installer's loop lately (µs): how far behind offers can be.
    pub longest_tick_micros: AtomicU64,
    /// Candidates of an older epoch, refused.
    pub stale: AtomicU64,
    /// Refused: the table full or the install rate reached.
    pub full: AtomicU64,
    pub rate_limited: AtomicU64,
    /// Routes refused: the router's sources to refuse did not fit the `refused` map.
    pub no_sources: AtomicU64,
    /// Refused: the egress is backed off (`egress`).
    pub egress_refused: AtomicU64,
    /// Frames redirected to an egress that its kernel did not send (at least; `egress`).
    pub egress_lost: AtomicU64,
    /// Times an egress was backed off, and the entries that removed.
    pub backoffs: AtomicU64,
    pub swept_backoff: AtomicU64,
    /// Entries the sweep removed: stale, idle.
    pub swept_stale: AtomicU64,
    pub swept_idle: AtomicU64,
    /// NAT entries removed because their session closed or began closing.
    pub nat_withdrawn: AtomicU64,
    /// The last sweep: the entries it read, and how long it took (µs).
    pub swept_entries: AtomicU64,
    pub sweep_micros: AtomicU64,
    /// ...and the CPU time it used (µs).
    pub sweep_cpu_micros: AtomicU64,
    /// Entries of each kind (indexed by `KIND_*`) the sweep left when it last read their
    /// map: what `show xdp flows` counts without reading millions of entries itself.
    pub kept_by_kind: [AtomicU64; 6],
}

pub struct FastPath {
    pub maps: Maps,
    /// The current epoch (the BPF `epoch` map holds the same); workers read it at the
    /// start of each pass.
    pub epoch: Arc<AtomicU32>,
    /// The sweep's generation (the `epoch` map's second word), which the program writes
    /// into each entry a frame takes (`Value::seen`); one more each sweep.
    generation: AtomicU32,
    /// Held while the `epoch` map is written: the epoch and the generation change apart.
    publishing: Mutex<()>,
    /// The generation each map (`Maps::by_kind`'s order) was last read by the sweep in.
    swept_at: Mutex<[u32; 4]>,
    /// Slot → (ifindex, name).
    ports: Mutex<Vec<(u32, String)>>,
    /// Each slot's link, and whether it was up when the installer last looked: a change the
    /// kernel makes (carrier lost) bumps the epoch as a command does.
    links: Mutex<Vec<(Arc<dyn LiveStatus>, bool)>>,
    candidates: Mutex<Vec<Candidate>>,
    /// The router's view, when the dataplane routes: the sources it refuses, the neighbours
    /// routed flows use.
    view: Mutex<Option<SharedL3View>>,
    router: Mutex<Option<Arc<Mutex<Router>>>>,
    refused: Mutex<RefusedSources>,
    /// Egresses the kernel drops redirected frames on, backed off for a while.
    pub backed_off: egress::Refused,
    egress_watch: Mutex<egress::EgressWatch>,
    /// The NAT whose sessions are offloaded (each NAT entry names its session), the
    /// bridges' MAC table whose flows are, and each bridge entry's address there.
    nat: Mutex<Option<Arc<crate::nat44::shared::Nat44Shared>>>,
    macs: Mutex<Option<bridge::MacTable>>,
    owners: Mutex<HashMap<Key, bridge::MacRef>>,
    pub stats: InstallerStats,
}

static SHARED: OnceLock<Result<Arc<FastPath>, String>> = OnceLock::new();

/// The process's fast path: its maps made, and its installer started, on first use.
pub fn shared() -> Result<Arc<FastPath>, String> {
    SHARED
        .get_or_init(|| {
            let fp = Arc::new(FastPath::new(MAX_FLOWS)?);
            let installer = fp.clone();
            std::thread::Builder::new()
                .name("sluice_fastpath".into())
                .spawn(move || installer.run())
                .map_err(|e| format!("cannot start the fast path's installer: {e}"))?;
            Ok(fp)
        })
        .clone()
}

/// The process's fast path if an interface has turned it on.
pub fn active() -> Option<Arc<FastPath>> {
    SHARED.get().and_then(|r| r.as_ref().ok().cloned())
}

/// The fast path's frames by reason (`program::REASONS`, the first is "forwarded in XDP")
/// since it started, then those lost at an egress (`LOST`); all zero without a fast path.
pub fn reason_totals() -> Vec<u64> {
    match active() {
        Some(fp) => {
            let mut v = fp.maps.reason_counts();
            v.push(fp.stats.egress_lost.load(Ordering::Relaxed));
            v
        }
        None => vec![0; program::REASONS.len() + 1],
    }
}

/// Whether the program checks the sources of `kind`'s frames against the `refused` map (the
/// router's IPv4 addresses), which must then hold the current view's.
fn checks_sources(kind: u16) -> bool {
    kind == KIND_ROUTE4 || kind == KIND_NAT4
}

/// Frames the program redirected that the egress's kernel did not send (`egress`): drops.
pub const LOST: &str = "redirected, not sent by the egress's kernel (dropped; egress backed off)";

/// Bump the epoch of the fast path, if there is one: every offloaded flow becomes a miss.
pub fn bump() {
    if let Some(fp) = active() {
        fp.bump_epoch();
    }
}

impl FastPath {
    /// Its maps, at epoch 1, without the installer (`shared` starts it).
    fn new(max_flows: u32) -> Result<FastPath, String> {
        let maps = Maps::create(max_flows)?;
        maps.set_epoch(1, 1)?;
        Ok(FastPath {
            maps,
            epoch: Arc::new(AtomicU32::new(1)),
            generation: AtomicU32::new(1),
            publishing: Mutex::new(()),
            swept_at: Mutex::new([0; 4]),
            ports: Mutex::new(Vec::new()),
            links: Mutex::new(Vec::new()),
            candidates: Mutex::new(Vec::with_capacity(QUEUE)),
            view: Mutex::new(None),
            router: Mutex::new(None),
            refused: Mutex::new(RefusedSources::default()),
            backed_off: egress::Refused::default(),
            egress_watch: Mutex::new(egress::EgressWatch::default()),
            nat: Mutex::new(None),
            macs: Mutex::new(None),
            owners: Mutex::new(HashMap::new()),
            stats: InstallerStats::default(),
        })
    }

    /// Give interface `ifindex` (`name`) a slot: its counters, and the devmap entry that
    /// sends to it.
    pub fn register(
        &self,
        ifindex: u32,
        name: &str,
        link: Option<Arc<dyn LiveStatus>>,
    ) -> Result<Port, String> {
        let mut ports = self.ports.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = ports.iter().position(|(i, _)| *i == ifindex) {
            return Ok(Port {
                slot: slot as u16,
                ifindex,
            });
        }
        if ports.len() as u32 >= MAX_SLOTS {
            return Err(format!(
                "the XDP fast path serves at most {MAX_SLOTS} interfaces"
            ));
        }
        let slot = ports.len() as u32;
        self.maps.set_egress(slot, ifindex)?;
        ports.push((ifindex, name.to_string()));
        if let Some(l) = link {
            let up = l.link_up();
            self.links
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((l, up));
        }
        Ok(Port {
            slot: slot as u16,
            ifindex,
        })
    }

    /// The router whose routes are offered (one per process, as the fast path).
    pub fn set_view(&self, view: SharedL3View) {
        *self.view.lock().unwrap_or_else(|p| p.into_inner()) = Some(view);
    }

    /// The NAT whose sessions are offloaded (one per process, as the fast path).
    pub fn set_nat(&self, nat: Arc<crate::nat44::shared::Nat44Shared>) {
        *self.nat.lock().unwrap_or_else(|p| p.into_inner()) = Some(nat);
    }

    /// The router routes are widened by (without it each route entry is one address).
    pub fn set_router(&self, router: Arc<Mutex<Router>>) {
        *self.router.lock().unwrap_or_else(|p| p.into_inner()) = Some(router);
    }

    pub fn epoch(&self) -> u32 {
        self.epoch.load(Ordering::SeqCst)
    }

    pub fn bump_epoch(&self) {
        let _p = self.publishing.lock().unwrap_or_else(|p| p.into_inner());
        let e = self.epoch.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
        if let Err(err) = self
            .maps
            .set_epoch(e, self.generation.load(Ordering::SeqCst))
        {
            eprintln!("sluice: {err}");
        }
    }

    /// Start the sweep's next generation; the one that ends.
    fn next_generation(&self) -> u32 {
        let _p = self.publishing.lock().unwrap_or_else(|p| p.into_inner());
        let g = self.generation.fetch_add(1, Ordering::SeqCst);
        if let Err(err) = self.maps.set_epoch(self.epoch(), g.wrapping_add(1)) {
            eprintln!("sluice: {err}");
        }
        g
    }

    /// A worker offers a flow; dropped when the queue is full or busy (offered again later).
    pub fn offer(&self, c: Candidate) {
        let Ok(mut q) = self.candidates.try_lock() else {
            self.stats.offers_queue_busy.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if q.len() < QUEUE {
            q.push(c);
        } else {
            self.stats.offers_queue_full.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The Linux ifindex of every interface with the fast path, in slot order.
    fn ifindexes(&self) -> Vec<u32> {
        let ports = self.ports.lock().unwrap_or_else(|p| p.into_inner());
        ports.iter().map(|(i, _)| *i).collect()
    }

    /// The name of the interface with Linux index `ifindex`, if it has the fast path.
    pub fn port_name(&self, ifindex: u32) -> Option<String> {
        let ports = self.ports.lock().unwrap_or_else(|p| p.into_inner());
        ports
            .iter()
            .find(|(i, _)| *i == ifindex)
            .map(|(_, n)| n.clone())
    }

    /// The name of the interface in devmap slot `slot`.
    pub fn slot_name(&self, slot: u32) -> Option<String> {
        let ports = self.ports.lock().unwrap_or_else(|p| p.into_inner());
        ports.get(slot as usize).map(|(_, n)| n.clone())
    }

    pub fn counts(&self, port: Port) -> InterfaceCounts {
        self.maps.interface_counts(port.slot as u32)
    }

    fn run(&self) {
        let mut window = (Instant::now(), 0u32);
        let mut last_sweep = Instant::now();
        let (mut last_take, mut longest) = (Instant::now(), Duration::ZERO);
        loop {
            std::thread::sleep(TICK);
            let batch =
                std::mem::take(&mut *self.candidates.lock().unwrap_or_else(|p| p.into_inner()));
            longest = longest.max(last_take.elapsed());
            last_take = Instant::now();
            self.install_batch(batch, &mut window);
            self.withdraw_sessions();
            self.watch_links();
            self.watch_egress();
            if last_sweep.elapsed() >= SWEEP {
                last_sweep = Instant::now();
                let micros = longest.as_micros().min(u64::MAX as u128) as u64;
                self.stats
                    .longest_tick_micros
                    .store(micros, Ordering::Relaxed);
                longest = Duration::ZERO;
                self.sweep();
            }
        }
    }

    /// Install what the workers offered since the last tick.
    fn install_batch(&self, batch: Vec<Candidate>, window: &mut (Instant, u32)) {
        // The epoch first, then the view: the view is at least the one of this epoch (a
        // change publishes its view before it bumps), so the refused sources made from it
        // are right for every candidate of this epoch.
        let epoch = self.epoch();
        let routes = batch.iter().any(|c| checks_sources(c.key.kind)) && self.sync_refused();
        let batch = if routes { self.widen(batch) } else { batch };
        let mut seen: HashSet<Key> = HashSet::new();
        // The admitted candidates of each map (`Maps::by_kind`'s order).
        let mut admitted: [Vec<Candidate>; 4] = Default::default();
        for c in batch {
            if !seen.insert(c.key) {
                continue;
            }
            if checks_sources(c.key.kind) && !routes {
                self.stats.no_sources.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if self.admit(&c, epoch, window) {
                admitted[map_index(c.key.kind)].push(c);
            }
        }
        let generation = self.generation.load(Ordering::SeqCst);
        for (i, cands) in admitted.iter().enumerate() {
            self.store(self.maps.by_kind()[i].0, cands, generation);
        }
    }

    /// Whether `c` may be installed: of `epoch`, which is still the current one, its egress
    /// not backed off, and within the install rate.
    fn admit(&self, c: &Candidate, epoch: u32, window: &mut (Instant, u32)) -> bool {
        let s = &self.stats;
        if self.backed_off.get(c.value.out_slot) {
            s.egress_refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if c.value.epoch != epoch || self.epoch() != epoch {
            s.stale.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if window.0.elapsed() >= Duration::from_secs(1) {
            *window = (Instant::now(), 0);
        }
        if window.1 >= INSTALLS_PER_SEC {
            s.rate_limited.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        window.1 += 1;
        true
    }

    /// Put `cands` (all of `map`'s kind) into `map` in one call where the kernel can, each
    /// seen in `generation`; one that does not fit is counted and the rest go on.
    fn store(&self, map: &crate::sys::bpf::BpfMap, cands: &[Candidate], generation: u32) {
        let s = &self.stats;
        let (mut keys, mut values) = (Vec::new(), Vec::new());
        for c in cands {
            keys.extend_from_slice(&self.maps.map_of(&c.key).1);
            values.extend_from_slice(&fresh_value(c, generation).bytes());
        }
        let (ks, vs) = (keys.len() / cands.len().max(1), maps::VALUE_LEN);
        let mut from = 0;
        while from < cands.len() {
            let (n, refused) = Maps::insert_batch(map, &keys[from * ks..], &values[from * vs..]);
            let n = n.min(cands.len() - from);
            self.stored(&cands[from..from + n]);
            from += n;
            if refused.is_none() {
                continue;
            }
            if n == 0 && from < cands.len() {
                // One at a time: a kernel without the batch command, or a full map.
                let c = &cands[from];
                match self.maps.insert(&c.key, &fresh_value(c, generation)) {
                    Ok(()) => self.stored(std::slice::from_ref(c)),
                    // E2BIG: the table is full.
                    Err(_) => {
                        s.full.fetch_add(1, Ordering::Relaxed);
                    }
                }
                from += 1;
            }
        }
    }

    /// `cands` are in their map: counted, and their owners known.
    fn stored(&self, cands: &[Candidate]) {
        self.stats
            .installed
            .fetch_add(cands.len() as u64, Ordering::Relaxed);
        let mut owners = None;
        for c in cands {
            if let Owner::Mac(m) = c.owner {
                owners
                    .get_or_insert_with(|| self.owners.lock().unwrap_or_else(|p| p.into_inner()))
                    .insert(c.key, m);
            }
        }
    }

    /// Each route candidate's key widened to the prefix its decision holds for; those the
    /// router no longer routes as the worker saw are dropped (stale).
    fn widen(&self, batch: Vec<Candidate>) -> Vec<Candidate> {
        let router = self
            .router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(router) = router else { return batch };
        let r = router.lock().unwrap_or_else(|p| p.into_inner());
        batch
            .into_iter()
            .filter_map(|mut c| {
                let a = c.key.addr;
                let widened = match c.key.kind {
                    KIND_ROUTE4 => {
                        let dst = u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
                        r.uniform_prefix4(c.rx_if, dst, c.adj).map(|(net, len)| {
                            Key::route4_prefix(c.key.ifindex, net.to_be_bytes(), len)
                        })
                    }
                    KIND_ROUTE6 => {
                        let dst = u128::from_be_bytes(a);
                        r.uniform_prefix6(c.rx_if, dst, c.adj).map(|(net, len)| {
                            Key::route6_prefix(c.key.ifindex, net.to_be_bytes(), len)
                        })
                    }
                    _ => return Some(c),
                };
                match widened {
                    Some(key) => {
                        c.key = key;
                        Some(c)
                    }
                    None => {
                        self.stats.stale.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                }
            })
            .collect()
    }

    fn sync_refused(&self) -> bool {
        let view = routes::current(&self.view.lock().unwrap_or_else(|p| p.into_inner()));
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sync(&self.maps, view.as_deref())
    }

    /// A link that went down or came up changes what the graph decides: bump the epoch.
    fn watch_links(&self) {
        let mut changed = false;
        for (link, was_up) in self
            .links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter_mut()
        {
            let up = link.link_up();
            if up != *was_up {
                *was_up = up;
                changed = true;
            }
        }
        if changed {
            self.bump_epoch();
        }
    }
}

/// The index in `Maps::by_kind` of the map holding entries of `kind`.
fn map_index(kind: u16) -> usize {
    match kind {
        KIND_ROUTE4 => 1,
        KIND_ROUTE6 => 2,
        KIND_NAT4 => 3,
        _ => 0,
    }
}

/// A candidate's value as it enters its map: no hits yet, seen in `generation`.
fn fresh_value(c: &Candidate, generation: u32) -> Value {
    Value {
        hits: 0,
        seen: generation,
        ..c.value
    }
}
