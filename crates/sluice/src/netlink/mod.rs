//! The netlink listener: sluice follows Linux's routing state. Addresses on a paired host
//! interface (a tap mirroring a sluice interface) become the sluice interface's addresses,
//! routes through one become kernel routes in sluice's FIB (ECMP too), neighbours Linux
//! learnt on one seed sluice's neighbour table; deletes and replaces are followed.
//!
//! Two threads. The reader owns the subscribed socket (links, addresses, routes of both
//! families, neighbours, rules): it drains every readable datagram, decodes the messages
//! (netlink-packet-route) into events and queues them, in order, for the applier, which
//! applies each round under one router lock and one commit. When the socket's queue
//! overflowed (ENOBUFS) or the queue to the applier was full, at start-up, when the pairs
//! change and when Linux changed routes
//! without telling (an IPv4 route goes silently with its link or address), the reader dumps
//! links, addresses, neighbours and routes and queues the dump between markers; the
//! applier's reconcile at its end deletes the kernel routes, addresses and neighbours sluice
//! holds that the dump did not show. Events queued after the dump are replayed on it: each
//! sets or deletes one key, so the last one wins and the result is the kernel's state.
//!
//! - `pairs`: `HostPairs`, host interface name → sluice interface.
//! - `socket`: the subscribed socket and the dumps.
//! - `translate`: messages → events. `apply`: events → router, and the reconcile.
//! - `stats`: the counters of `show lcp netlink`.

mod apply;
pub mod pairs;
pub mod socket;
pub mod stats;
pub mod translate;

pub use pairs::HostPairs;
pub use stats::{NetlinkStats, ReconcileReport};

use crate::router::Router;
use apply::{Applier, Item};
use socket::{Dump, Events, Received};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{
    channel, sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError,
};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the listener runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Listen in this named network namespace (`/var/run/netns/NAME`) instead of the
    /// starting thread's.
    pub netns: Option<String>,
    /// The socket's receive queue, in bytes (SO_RCVBUFFORCE).
    pub receive_buffer: usize,
    /// Events applied under one router lock at most, so that the lock is never held long.
    pub max_batch: usize,
    /// Pieces of events (up to `CHUNK` each) queued from the reader to the applier at most.
    /// A full queue is an overflow: what the reader read is dropped, counted, and a dump
    /// and reconcile follow, as when the socket's queue overflows.
    pub queue: usize,
    /// Where the routes it adds and removes are published (`source` `netlink`), if anywhere.
    pub events: Option<Arc<crate::events::Bus>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            netns: None,
            receive_buffer: 64 << 20,
            max_batch: 100_000,
            queue: QUEUE,
            events: None,
        }
    }
}

/// Events queued to the applier in one piece at most.
const CHUNK: usize = 16_384;
/// Pieces queued to the applier at most, by default: a million events at most.
pub const QUEUE: usize = 64;
/// How long the threads wait for something before they look at their stop flag.
const TICK: Duration = Duration::from_millis(50);

/// The next listener's id (each owns the kernel routes it puts in the router).
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// What the caller and the reader share besides the stats.
#[derive(Default)]
struct Control {
    stop: AtomicBool,
    /// A resync asked for, with its reason.
    resync: Mutex<Option<&'static str>>,
    /// Do not read until then (tests: make the socket overflow).
    paused_until: Mutex<Option<Instant>>,
}

impl Control {
    fn want_resync(&self, reason: &'static str) {
        self.resync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(reason);
    }
}

/// A running listener; stopped by `stop` or when dropped.
pub struct Listener {
    control: Arc<Control>,
    stats: Arc<Mutex<NetlinkStats>>,
    reader: Option<JoinHandle<()>>,
    applier: Option<JoinHandle<()>>,
}

impl Listener {
    /// Start listening: the socket is open and subscribed when this returns, and the
    /// start-up dump and reconcile follow in the background (`wait_synced`).
    pub fn start(
        router: Arc<Mutex<Router>>,
        pairs: HostPairs,
        options: Options,
    ) -> Result<Listener, String> {
        let control = Arc::new(Control::default());
        let stats = Arc::new(Mutex::new(NetlinkStats {
            netns: options.netns.clone(),
            ..Default::default()
        }));
        let (tx, rx) = sync_channel::<Item>(options.queue.max(1));
        let (ready_tx, ready_rx) = channel::<Result<(), String>>();
        let reader = {
            let (control, stats, pairs, options) = (
                control.clone(),
                stats.clone(),
                pairs.clone(),
                options.clone(),
            );
            std::thread::Builder::new()
                .name("sluice_netlink".into())
                .spawn(move || {
                    let events = open(&options, &stats);
                    let ok = events.as_ref().map(|_| ()).map_err(Clone::clone);
                    let _ = ready_tx.send(ok);
                    if let Ok(events) = events {
                        read(events, &tx, &control, &stats, &pairs);
                    }
                })
                .map_err(|e| format!("cannot start the netlink reader: {e}"))?
        };
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = reader.join();
                return Err(e);
            }
            Err(_) => {
                let _ = reader.join();
                return Err("the netlink reader stopped at start".into());
            }
        }
        let applier = {
            let (control, max) = (control.clone(), options.max_batch.max(1));
            let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            let mut a = Applier::new(id, router, pairs, stats.clone());
            a.events = options.events.clone();
            std::thread::Builder::new()
                .name("sluice_netlink_apply".into())
                .spawn(move || apply_loop(&mut a, rx, &control, max))
                .map_err(|e| format!("cannot start the netlink applier: {e}"))?
        };
        stats.lock().unwrap_or_else(|p| p.into_inner()).running = true;
        Ok(Listener {
            control,
            stats,
            reader: Some(reader),
            applier: Some(applier),
        })
    }

    /// The counters and state now.
    pub fn stats(&self) -> NetlinkStats {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Shared counters, for a report that outlives this handle's borrow.
    pub fn shared_stats(&self) -> Arc<Mutex<NetlinkStats>> {
        self.stats.clone()
    }

    /// Ask for a dump and reconcile.
    pub fn resync(&self) {
        self.control.want_resync("asked");
    }

    /// Stop reading for `d` (messages pile up in the socket, which may overflow: what the
    /// overflow test does). Reading goes on afterwards on its own.
    pub fn pause(&self, d: Duration) {
        *self
            .control
            .paused_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + d);
    }

    /// Wait until `resyncs` dumps and reconciles have been applied; whether they were
    /// within `timeout`.
    pub fn wait_resyncs(&self, resyncs: u64, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            if self.stats().resyncs >= resyncs {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Stop both threads and wait for them.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.control.stop.store(true, Ordering::Relaxed);
        for h in [self.reader.take(), self.applier.take()]
            .into_iter()
            .flatten()
        {
            let _ = h.join();
        }
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).running = false;
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Enter the namespace and open the subscribed socket.
fn open(options: &Options, stats: &Mutex<NetlinkStats>) -> Result<Events, String> {
    if let Some(ns) = &options.netns {
        crate::sys::netns::enter(ns)?;
    }
    let events = Events::open(options.receive_buffer, TICK)
        .map_err(|e| format!("cannot open the netlink socket: {e}"))?;
    stats
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .receive_buffer = events.receive_buffer;
    Ok(events)
}

/// The reader: dumps when one is due, else drains the socket and queues what it read.
fn read(
    mut events: Events,
    tx: &SyncSender<Item>,
    control: &Control,
    stats: &Mutex<NetlinkStats>,
    pairs: &HostPairs,
) {
    let mut due: Option<&'static str> = Some("start-up");
    let mut generation = pairs.generation();
    while !control.stop.load(Ordering::Relaxed) {
        let paused = *control
            .paused_until
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(until) = paused {
            let now = Instant::now();
            if now < until {
                std::thread::sleep((until - now).min(TICK));
                continue;
            }
        }
        if pairs.generation() != generation {
            generation = pairs.generation();
            due.get_or_insert("pairs changed");
        }
        if let Some(r) = control
            .resync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            due.get_or_insert(r);
        }
        if let Some(reason) = due.take() {
            if let Err(e) = dump_all(reason, tx, stats) {
                stats.lock().unwrap_or_else(|p| p.into_inner()).last_error = Some(e);
                // Try again shortly: the state must not stay unknown.
                due = Some(reason);
                std::thread::sleep(Duration::from_millis(200));
            }
            continue;
        }
        let mut batch = Vec::new();
        let mut messages = 0u64;
        let mut overflow = false;
        let mut full = false;
        let mut wait = true;
        loop {
            match events.recv(!wait) {
                Ok(Received::Datagram(buf)) => {
                    messages += decode(buf, &mut batch);
                    if batch.len() >= CHUNK {
                        match queue(tx, std::mem::take(&mut batch)) {
                            Queued::Yes => {}
                            Queued::Full => {
                                full = true;
                                break;
                            }
                            Queued::Closed => return,
                        }
                    }
                }
                Ok(Received::Idle) => break,
                Ok(Received::Overflow) => {
                    overflow = true;
                    break;
                }
                Err(e) => {
                    stats.lock().unwrap_or_else(|p| p.into_inner()).last_error =
                        Some(format!("netlink receive: {e}"));
                    std::thread::sleep(TICK);
                    break;
                }
            }
            wait = false;
        }
        if !full && !batch.is_empty() {
            match queue(tx, batch) {
                Queued::Yes => {}
                Queued::Full => full = true,
                Queued::Closed => return,
            }
        }
        let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
        s.messages += messages;
        if overflow {
            s.overflows += 1;
            due = Some("overflow");
        }
        if full {
            // What was read is dropped (the dump brings it back); the socket is left to
            // queue what follows, and overflows in its turn if the applier stays behind.
            s.queue_overflows += 1;
            due = Some("queue full");
        }
    }
}

enum Queued {
    Yes,
    /// The applier is that far behind: the events were dropped.
    Full,
    /// The applier has stopped.
    Closed,
}

/// Queue events to the applier without waiting.
fn queue(tx: &SyncSender<Item>, events: Vec<translate::Event>) -> Queued {
    match tx.try_send(Item::Events(events)) {
        Ok(()) => Queued::Yes,
        Err(TrySendError::Full(_)) => Queued::Full,
        Err(TrySendError::Disconnected(_)) => Queued::Closed,
    }
}

/// Decode one datagram's messages into events; returns how many messages it held.
fn decode(buf: &[u8], out: &mut Vec<translate::Event>) -> u64 {
    let mut n = 0;
    for m in translate::messages(buf) {
        n += 1;
        match m {
            Ok(m) => match m.payload {
                netlink_packet_core::NetlinkPayload::InnerMessage(msg) => {
                    out.push(translate::event(msg))
                }
                // Done, error, noop: the dump's and the protocol's own.
                _ => n -= 1,
            },
            Err(reason) => out.push(translate::Event::Ignored(reason)),
        }
    }
    n
}

/// Dump links, addresses, neighbours and routes, queued between the dump's markers. A dump
/// waits for room in the queue (it is what makes the state whole again); the kernel holds
/// its parts meanwhile.
fn dump_all(
    reason: &'static str,
    tx: &SyncSender<Item>,
    stats: &Mutex<NetlinkStats>,
) -> Result<(), String> {
    let _ = tx.send(Item::DumpBegin {
        reason,
        at: Instant::now(),
    });
    let mut batch = Vec::new();
    let mut messages = 0u64;
    let mut result = Ok(());
    for what in [Dump::Links, Dump::Addresses, Dump::Neighbors, Dump::Routes] {
        result = socket::dump(what, |part| {
            messages += decode(part, &mut batch);
            if batch.len() >= CHUNK {
                let _ = tx.send(Item::Events(std::mem::take(&mut batch)));
            }
        });
        if result.is_err() {
            break;
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(Item::Events(batch));
    }
    let _ = tx.send(Item::DumpEnd {
        complete: result.is_ok(),
    });
    stats
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .dump_messages += messages;
    result
}

/// The applier: takes what is queued (up to `max` events), applies it, commits, again.
fn apply_loop(a: &mut Applier, rx: Receiver<Item>, control: &Control, max: usize) {
    loop {
        let first = match rx.recv_timeout(TICK) {
            Ok(i) => i,
            Err(RecvTimeoutError::Timeout) => {
                if control.stop.load(Ordering::Relaxed) {
                    return;
                }
                a.router
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .reclaim_fib();
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut n = first.weight();
        let mut items = vec![first];
        while n < max {
            match rx.try_recv() {
                Ok(i) => {
                    n += i.weight();
                    items.push(i);
                }
                Err(_) => break,
            }
        }
        a.apply(items);
        if let Some(reason) = a.resync.take() {
            control.want_resync(reason);
        }
    }
}
