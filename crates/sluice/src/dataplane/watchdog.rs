//! Noticing a stalled worker. Each worker bumps its `Heartbeat` once a pass of its loop (a
//! plain store on a cache line of its own: nothing else writes there, so it costs the hot
//! loop no shared line). The watchdog thread reads the heartbeats every `tick`; a worker
//! whose count has not moved for `stall-timeout` is reported (`show threads`, the
//! `sys_worker_stalled` metric, a log line) and, with `exit-on-stall`, stops the daemon so
//! that a supervisor restarts it, and publishes a `worker` event (`stalled`, `resumed`). While every worker passes its loop it tells systemd
//! (`WATCHDOG=1`), so `WatchdogSec=` restarts a daemon whose workers or watchdog are stuck.
//!
//! Joins on shutdown have a deadline (`join_by`): a stuck thread is named and left behind,
//! and the process exits without it.

use crate::events::{Bus, Kind};
use crate::graph::counter::CacheAligned;
use crate::sd_notify::Notifier;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long shutdown waits for each thread before it goes on without it.
pub const JOIN_DEADLINE: Duration = Duration::from_secs(5);

/// What the worker writes: its passes, and the debug stall asked of it.
#[derive(Default)]
pub struct Heartbeat {
    passes: AtomicU64,
    /// Milliseconds to stall on the next pass (`debug stall-worker`); 0: none asked.
    stall_ms: AtomicU64,
}

/// What the watchdog writes about one worker.
#[derive(Default)]
pub struct Health {
    /// Milliseconds since the worker's heartbeat last moved (to within a tick).
    pub since_pass_ms: AtomicU64,
    pub stalled: AtomicBool,
    /// Times the worker was found stalled.
    pub stalls: AtomicU64,
}

/// One worker's heartbeat and health, each on its own cache line (different writers).
#[derive(Default)]
pub struct Beat {
    pub heartbeat: CacheAligned<Heartbeat>,
    pub health: CacheAligned<Health>,
}

impl Heartbeat {
    /// One pass of the worker's loop (single writer: a load and a store, no locked add).
    #[inline(always)]
    pub fn pass(&self) {
        let n = self.passes.load(Ordering::Relaxed);
        self.passes.store(n.wrapping_add(1), Ordering::Relaxed);
    }

    pub fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }

    /// Debug only: make the worker stop passing its loop for `d` (it ignores the stop flag
    /// meanwhile, as a stuck worker would).
    pub fn request_stall(&self, d: Duration) {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
        self.stall_ms.store(ms, Ordering::Relaxed);
    }

    /// Called by the worker each pass: carries out a requested stall.
    #[inline(always)]
    pub fn stall_if_asked(&self) {
        if self.stall_ms.load(Ordering::Relaxed) != 0 {
            self.stall();
        }
    }

    #[cold]
    fn stall(&self) {
        let ms = self.stall_ms.swap(0, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// `[watchdog]`: how long a worker may go without a pass, and whether that stops the daemon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WatchdogConfig {
    pub stall_timeout: Duration,
    pub exit_on_stall: bool,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        WatchdogConfig {
            stall_timeout: Duration::from_secs(5),
            exit_on_stall: false,
        }
    }
}

/// The watchdog's view of one worker.
struct Watched {
    name: String,
    beat: Arc<Beat>,
    last: u64,
    moved: Instant,
}

/// The running watchdog; `tripped` says it stopped the daemon for a stall.
pub struct Watchdog {
    handle: Option<JoinHandle<()>>,
    pub tripped: Arc<AtomicBool>,
}

impl Watchdog {
    /// Watch `workers` (name, beat) until `stop`; with `exit_on_stall`, a stall sets `stop`.
    pub fn spawn(
        workers: Vec<(String, Arc<Beat>)>,
        cfg: WatchdogConfig,
        notify: Option<Notifier>,
        stop: Arc<AtomicBool>,
        events: Arc<Bus>,
    ) -> Result<Watchdog, String> {
        let tripped = Arc::new(AtomicBool::new(false));
        let trip = tripped.clone();
        let ping = notify.as_ref().and_then(Notifier::watchdog_interval);
        // Look four times a stall-timeout, and often enough to ping systemd twice a
        // WatchdogSec (it asks for half; we take a margin for a busy machine).
        let mut tick = cfg.stall_timeout / 4;
        if let Some(p) = ping {
            tick = tick.min(p / 4);
        }
        let tick = tick.clamp(Duration::from_millis(10), Duration::from_secs(1));
        let handle = std::thread::Builder::new()
            .name("sluice_watchdog".into())
            .spawn(move || {
                let now = Instant::now();
                let mut watched: Vec<Watched> = workers
                    .into_iter()
                    .map(|(name, beat)| Watched {
                        last: beat.heartbeat.passes(),
                        name,
                        beat,
                        moved: now,
                    })
                    .collect();
                let mut pinged: Option<Instant> = None;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    let alive = check(&mut watched, cfg.stall_timeout, &events);
                    if !alive && cfg.exit_on_stall {
                        eprintln!("sluice: watchdog: exit-on-stall is set: stopping the daemon");
                        trip.store(true, Ordering::Relaxed);
                        stop.store(true, Ordering::Relaxed);
                        backstop();
                        return;
                    }
                    if let (Some(n), Some(p), true) = (&notify, ping, alive) {
                        if pinged.is_none_or(|t| t.elapsed() >= p / 4) {
                            n.send("WATCHDOG=1");
                            pinged = Some(Instant::now());
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the watchdog: {e}"))?;
        Ok(Watchdog {
            handle: Some(handle),
            tripped,
        })
    }

    pub fn join(mut self) {
        if let Some(h) = self.handle.take() {
            join_by(h, "sluice_watchdog", Instant::now() + JOIN_DEADLINE);
        }
    }
}

/// One look at every worker; whether all of them passed their loop within `timeout`.
fn check(watched: &mut [Watched], timeout: Duration, events: &Bus) -> bool {
    let mut alive = true;
    let now = Instant::now();
    for w in watched {
        let h = &w.beat.health;
        let passes = w.beat.heartbeat.passes();
        if passes != w.last {
            w.last = passes;
            w.moved = now;
            if h.stalled.swap(false, Ordering::Relaxed) {
                eprintln!("sluice: watchdog: worker {} passes its loop again", w.name);
                events.publish(Kind::Worker, json!({"event": "resumed", "worker": w.name}));
            }
        }
        let since = now.duration_since(w.moved);
        h.since_pass_ms
            .store(since.as_millis() as u64, Ordering::Relaxed);
        if since >= timeout {
            alive = false;
            if !h.stalled.swap(true, Ordering::Relaxed) {
                h.stalls.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "sluice: watchdog: worker {} has not passed its loop for {:.1} s \
                     (stall-timeout {:.1} s)",
                    w.name,
                    since.as_secs_f64(),
                    timeout.as_secs_f64()
                );
                events.publish(
                    Kind::Worker,
                    json!({"event": "stalled", "worker": w.name,
                           "since_ms": since.as_millis() as u64}),
                );
            }
        }
    }
    alive
}

/// After the watchdog stops the daemon, exit anyway if the orderly shutdown itself hangs
/// (every join has `JOIN_DEADLINE`; this allows for several and a margin).
fn backstop() {
    let _ = std::thread::Builder::new()
        .name("sluice_backstop".into())
        .spawn(|| {
            std::thread::sleep(JOIN_DEADLINE * 4);
            eprintln!("sluice: watchdog: the shutdown did not finish; exiting");
            std::process::exit(1);
        });
}

/// Join `h` if it ends before `deadline`; otherwise say so and leave it (its thread dies
/// with the process). Whether it ended.
pub fn join_by(h: JoinHandle<()>, name: &str, deadline: Instant) -> bool {
    while !h.is_finished() {
        if Instant::now() >= deadline {
            eprintln!("sluice: thread {name} did not stop in time; exiting without it");
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = h.join();
    true
}
