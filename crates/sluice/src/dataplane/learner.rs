//! The neighbour learner: a control-plane thread that takes what the workers heard of
//! neighbours (ARP, ND) and applies it to the router, one commit per batch, and moves the
//! neighbour table's timers on (ageing, probes) a few times a second.

use crate::router::{NeighborLearn, Router};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the neighbour timers are looked at: finer than the shortest timer (the 1 s
/// between probes), coarse enough that a full table's walk costs nothing.
const TICK: Duration = Duration::from_millis(250);

/// Learns taken under the router lock at once; the rest wait for the next batch, so a flood
/// of learns cannot hold the control plane (CLI, netlink) for long.
const BATCH: usize = 4096;

pub(super) fn spawn_learner(
    router: Arc<Mutex<Router>>,
    learns: Receiver<NeighborLearn>,
    stop: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
) -> Result<JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name("sluice_learn".into())
        .spawn(move || {
            let mut last_tick = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let first = match learns.recv_timeout(Duration::from_millis(100)) {
                    Ok(n) => Some(n),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                let mut r = router.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                if let Some(first) = first {
                    for n in std::iter::once(first).chain(learns.try_iter().take(BATCH - 1)) {
                        if r.learn(n, now).is_err() {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                if now.duration_since(last_tick) >= TICK {
                    r.neighbor_tick(now);
                    last_tick = now;
                }
                r.commit();
                // Free FIB tables replaced by a rebuild once the workers have left them,
                // even when no further change comes to commit.
                r.reclaim_fib();
            }
        })
        .map_err(|e| format!("cannot start the neighbour learner: {e}"))
}
