//! How receive queues and workers share the load (seed 001's per-queue usage monitor, seed
//! 000's uneven workers): per-queue counters, each worker's busy fraction, and rates over
//! the last second (`show queues`, `sluice ctl monitor`, the queue metrics).
//!
//! A queue's counters are written only by the worker that polls it (they travel with the
//! queue when `set interface rx-placement` moves it), so they are plain single-writer
//! counters, not shared atomics. A sampler thread keeps the two latest once-a-second
//! snapshots; a report reads the live totals and the rates between those snapshots.

use super::placement::RxPlacement;
use crate::graph::counter::{CacheAligned, Counter};
use crate::graph::GraphShared;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the sampler takes a snapshot: the rates are over this interval.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// A queue is flagged when its rate is above this multiple of the mean of its interface's
/// queues (a worker, of all workers' mean).
pub const IMBALANCE_FACTOR: f64 = 1.5;

/// What one receive queue has delivered, counted by the worker polling it.
#[derive(Default, Debug)]
pub struct QueueCounters {
    pub packets: Counter,
    pub bytes: Counter,
    /// Frames lost on this queue: the device's own misses and frames the input node could
    /// not take (no buffer, too long, truncated, bad descriptor).
    pub drops: Counter,
}

pub type SharedQueueCounters = Arc<CacheAligned<QueueCounters>>;

#[derive(Clone)]
struct Snapshot {
    at: Instant,
    /// (packets, bytes, drops) per queue, in the order of `RxPlacement::homes`.
    queues: Vec<(u64, u64, u64)>,
    /// Busy clocks per worker.
    busy: Vec<u64>,
}

/// One receive queue in a report: its totals and its rates.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct QueueUsage {
    /// Its identity and live totals (flattened: the JSON keeps one object per queue).
    #[serde(flatten)]
    pub totals: QueueTotals,
    /// Packets per second over the last interval.
    pub pps: f64,
    /// Bits per second (frames without preamble or gap) over the last interval.
    pub bps: f64,
    pub drops_per_s: f64,
    /// This queue's part of its interface's packets over the last interval (of all its
    /// packets while the interface was idle), 0 to 1.
    pub share: f64,
    /// The busy fraction of the worker that polls it.
    pub worker_busy: f64,
    /// Above `IMBALANCE_FACTOR` times the mean rate of its interface's queues.
    pub imbalanced: bool,
}

/// One worker in a report.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WorkerUsage {
    pub worker: usize,
    /// Fraction of the interval spent in graph passes that received packets, 0 to 1.
    pub busy: f64,
    pub queues: usize,
    /// Packets per second received by its queues over the last interval.
    pub pps: f64,
    /// Above `IMBALANCE_FACTOR` times the mean rate of all workers.
    pub imbalanced: bool,
}

/// The report of `show queues`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Usage {
    /// Seconds the rates are over.
    pub interval_s: f64,
    pub queues: Vec<QueueUsage>,
    pub workers: Vec<WorkerUsage>,
}

/// The sampler's state and what a report needs.
pub struct QueueMonitor {
    placement: Arc<RxPlacement>,
    graphs: Vec<Arc<GraphShared>>,
    tsc_hz: f64,
    /// The two latest snapshots, older first.
    window: Mutex<(Snapshot, Snapshot)>,
}

impl QueueMonitor {
    pub fn new(placement: Arc<RxPlacement>, graphs: Vec<Arc<GraphShared>>, tsc_hz: f64) -> Self {
        let mut m = QueueMonitor {
            placement,
            graphs,
            tsc_hz,
            window: Mutex::new((empty_snapshot(), empty_snapshot())),
        };
        let s = m.snapshot();
        m.window = Mutex::new((s.clone(), s));
        m
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            at: Instant::now(),
            queues: self
                .placement
                .homes()
                .iter()
                .map(|h| {
                    let c = &h.counters.0;
                    (c.packets.get(), c.bytes.get(), c.drops.get())
                })
                .collect(),
            busy: self.graphs.iter().map(|g| g.busy_clocks.get()).collect(),
        }
    }

    /// Take a snapshot: the rates are from now on over the time since the previous one.
    pub fn sample(&self) {
        let s = self.snapshot();
        let mut w = self.window.lock().unwrap();
        w.0 = std::mem::replace(&mut w.1, s);
    }

    /// The queues and workers now, with rates over the last interval (before the first
    /// full interval, since the start).
    pub fn usage(&self) -> Usage {
        let (older, newer) = self.window.lock().unwrap().clone();
        let (from, to) = if newer.at.duration_since(older.at) < SAMPLE_INTERVAL / 2 {
            (older, self.snapshot())
        } else {
            (older, newer)
        };
        let homes = self.placement.homes();
        report(&homes_totals(&homes), &from, &to, self.tsc_hz)
    }

    /// Start the sampler thread; it ends when `stop` is set.
    pub fn spawn_sampler(
        self: &Arc<Self>,
        stop: Arc<AtomicBool>,
    ) -> Result<JoinHandle<()>, String> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("sluice_queues".into())
            .spawn(move || {
                let step = Duration::from_millis(50);
                let mut next = Instant::now() + SAMPLE_INTERVAL;
                while !stop.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    if now >= next {
                        me.sample();
                        next += SAMPLE_INTERVAL;
                        if next < now {
                            next = now + SAMPLE_INTERVAL;
                        }
                    }
                    std::thread::sleep(step.min(next.saturating_duration_since(now)));
                }
            })
            .map_err(|e| format!("cannot start the queue sampler: {e}"))
    }
}

fn empty_snapshot() -> Snapshot {
    Snapshot {
        at: Instant::now(),
        queues: Vec::new(),
        busy: Vec::new(),
    }
}

/// A receive queue's identity and live totals (`show queues`, the metrics scrape).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueTotals {
    pub interface: String,
    pub queue: usize,
    pub worker: usize,
    pub packets: u64,
    pub bytes: u64,
    pub drops: u64,
}

/// Every receive queue's totals now, by interface then queue.
pub fn queue_totals(placement: &RxPlacement) -> Vec<QueueTotals> {
    homes_totals(&placement.homes())
}

fn homes_totals(homes: &[super::placement::QueueHome]) -> Vec<QueueTotals> {
    homes
        .iter()
        .map(|h| QueueTotals {
            interface: h.interface.clone(),
            queue: h.queue,
            worker: h.worker,
            packets: h.counters.0.packets.get(),
            bytes: h.counters.0.bytes.get(),
            drops: h.counters.0.drops.get(),
        })
        .collect()
}

/// The report from the live totals and two snapshots (the rates are `to` − `from`).
fn report(queues: &[QueueTotals], from: &Snapshot, to: &Snapshot, tsc_hz: f64) -> Usage {
    let dt = to.at.duration_since(from.at).as_secs_f64();
    let per_s = |d: u64| if dt > 0.0 { d as f64 / dt } else { 0.0 };
    let delta =
        |k: usize, f: fn(&(u64, u64, u64)) -> u64| match (from.queues.get(k), to.queues.get(k)) {
            (Some(a), Some(b)) => f(b).wrapping_sub(f(a)),
            _ => 0,
        };
    let workers = to.busy.len();
    let busy: Vec<f64> = (0..workers)
        .map(|w| {
            let clocks = to.busy[w].wrapping_sub(from.busy.get(w).copied().unwrap_or(to.busy[w]));
            if dt > 0.0 && tsc_hz > 0.0 {
                (clocks as f64 / (dt * tsc_hz)).clamp(0.0, 1.0)
            } else {
                0.0
            }
        })
        .collect();
    let mut rows: Vec<QueueUsage> = queues
        .iter()
        .enumerate()
        .map(|(k, q)| QueueUsage {
            totals: q.clone(),
            pps: per_s(delta(k, |s| s.0)),
            bps: per_s(delta(k, |s| s.1)) * 8.0,
            drops_per_s: per_s(delta(k, |s| s.2)),
            share: 0.0,
            worker_busy: busy.get(q.worker).copied().unwrap_or(0.0),
            imbalanced: false,
        })
        .collect();
    // Shares and imbalance within each interface.
    let names: Vec<String> = {
        let mut n: Vec<String> = queues.iter().map(|q| q.interface.clone()).collect();
        n.dedup();
        n
    };
    for name in &names {
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&k| queues[k].interface == *name)
            .collect();
        let rate: f64 = idx.iter().map(|&k| rows[k].pps).sum();
        let total: u64 = idx.iter().map(|&k| queues[k].packets).sum();
        let mean = rate / idx.len() as f64;
        for &k in &idx {
            rows[k].share = if rate > 0.0 {
                rows[k].pps / rate
            } else if total > 0 {
                queues[k].packets as f64 / total as f64
            } else {
                0.0
            };
            rows[k].imbalanced =
                idx.len() > 1 && rate > 0.0 && rows[k].pps > IMBALANCE_FACTOR * mean;
        }
    }
    let mut worker_rows: Vec<WorkerUsage> = (0..workers)
        .map(|w| WorkerUsage {
            worker: w,
            busy: busy[w],
            queues: rows.iter().filter(|r| r.totals.worker == w).count(),
            pps: rows
                .iter()
                .filter(|r| r.totals.worker == w)
                .map(|r| r.pps)
                .sum(),
            imbalanced: false,
        })
        .collect();
    let all: f64 = worker_rows.iter().map(|w| w.pps).sum();
    if workers > 1 && all > 0.0 {
        let mean = all / workers as f64;
        for w in &mut worker_rows {
            w.imbalanced = w.pps > IMBALANCE_FACTOR * mean;
        }
    }
    Usage {
        interval_s: dt,
        queues: rows,
        workers: worker_rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(rows: &[(&str, usize, usize, u64)]) -> Vec<QueueTotals> {
        rows.iter()
            .map(|&(i, q, w, p)| QueueTotals {
                interface: i.into(),
                queue: q,
                worker: w,
                packets: p,
                bytes: p * 64,
                drops: 0,
            })
            .collect()
    }

    fn snap(at: Instant, packets: &[u64], busy: &[u64]) -> Snapshot {
        Snapshot {
            at,
            queues: packets.iter().map(|&p| (p, p * 64, 0)).collect(),
            busy: busy.to_vec(),
        }
    }

    #[test]
    fn rates_shares_busy_and_the_imbalance_flag() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(2);
        // d0 queue 0 got 6000 packets in 2 s, queue 1 2000, queue 2 1000: the mean is 1500/s,
        // and queue 0's 3000/s is above 1.5 times it. d1 has one queue: never flagged.
        let q = totals(&[
            ("d0", 0, 0, 9000),
            ("d0", 1, 1, 2500),
            ("d0", 2, 1, 1000),
            ("d1", 0, 0, 50),
        ]);
        let from = snap(t0, &[3000, 500, 0, 0], &[0, 0]);
        let to = snap(t1, &[9000, 2500, 1000, 50], &[1000, 3000]);
        let u = report(&q, &from, &to, 1000.0);
        assert_eq!(u.interval_s, 2.0);
        let pps: Vec<f64> = u.queues.iter().map(|r| r.pps).collect();
        assert_eq!(pps, [3000.0, 1000.0, 500.0, 25.0]);
        assert_eq!(u.queues[0].bps, 3000.0 * 64.0 * 8.0);
        let share: Vec<f64> = u.queues.iter().map(|r| r.share).collect();
        assert_eq!(share, [2.0 / 3.0, 2.0 / 9.0, 1.0 / 9.0, 1.0]);
        let flags: Vec<bool> = u.queues.iter().map(|r| r.imbalanced).collect();
        assert_eq!(flags, [true, false, false, false]);
        // The JSON keeps one flat object per queue, totals first.
        let json = serde_json::to_string(&u.queues[3]).unwrap();
        assert!(
            json.starts_with(r#"{"interface":"d1","queue":0,"worker":0,"packets":50,"#),
            "{json}"
        );
        // 1000 busy clocks in 2 s at 1000 Hz is half busy; 3000 is more than the whole
        // interval and is held at 1.
        assert_eq!(u.workers[0].busy, 0.5);
        assert_eq!(u.workers[1].busy, 1.0);
        assert_eq!(u.queues[1].worker_busy, 1.0);
        assert_eq!(u.workers[0].pps, 3025.0);
        assert_eq!(u.workers[1].pps, 1500.0);
        assert_eq!(u.workers[0].queues, 2);
        // Workers: 3025 against a mean of 2262.5: not above 1.5 times it.
        assert!(!u.workers[0].imbalanced && !u.workers[1].imbalanced);
    }

    #[test]
    fn an_idle_interface_shares_by_totals_and_flags_nothing() {
        let t0 = Instant::now();
        let q = totals(&[("d0", 0, 0, 300), ("d0", 1, 1, 100)]);
        let s = snap(t0, &[300, 100], &[5, 5]);
        let u = report(
            &q,
            &s,
            &snap(t0 + Duration::from_secs(1), &[300, 100], &[5, 5]),
            1e9,
        );
        assert_eq!(u.queues[0].share, 0.75);
        assert!(u.queues.iter().all(|r| r.pps == 0.0 && !r.imbalanced));
        assert!(u.workers.iter().all(|w| w.busy == 0.0 && !w.imbalanced));
        // No time between the snapshots: no rates, no division by zero.
        let u = report(&q, &s, &s, 1e9);
        assert!(u.queues.iter().all(|r| r.pps == 0.0 && r.bps == 0.0));
    }

    #[test]
    fn a_worker_far_above_the_mean_is_flagged() {
        let t0 = Instant::now();
        let q = totals(&[("d0", 0, 0, 1000), ("d1", 0, 1, 10)]);
        let from = snap(t0, &[0, 0], &[0, 0]);
        let to = snap(t0 + Duration::from_secs(1), &[1000, 10], &[0, 0]);
        let u = report(&q, &from, &to, 1e9);
        assert!(u.workers[0].imbalanced);
        assert!(!u.workers[1].imbalanced);
    }
}
