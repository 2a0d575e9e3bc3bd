//! The daemon's health as the control plane reports it: the watchdog's view of each worker
//! and the control socket's counts, as Prometheus metrics (`Exposition`, a second collector
//! beside `metrics`'s own), and the one debug command that tests the watchdog.

use super::cli::{Arg, Command, Effect, Output};
use super::exec::Control;
use super::server::ClientStats;
use crate::dataplane::watchdog::Beat;
use crate::dataplane::Dataplane;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Debug commands: not for production, and said so in their help.
pub const COMMANDS: &[Command] = &[Command {
    words: &["debug", "stall-worker"],
    effect: Effect::Changes,
    syntax: "<W> <SECONDS>",
    help: "DEBUG ONLY, to test the watchdog and a supervisor: worker W stops passing its loop \
           (and forwarding) for SECONDS, ignoring shutdown meanwhile, as a stuck worker would",
    example: "debug stall-worker 0 10",
    args: &[Arg::Value("worker"), Arg::Count("seconds", "a stall", 3600)],
    run: |c, a| {
        let w = a.value("worker");
        let n = c.dp.workers.len();
        let worker = w
            .parse::<usize>()
            .ok()
            .and_then(|i| c.dp.workers.get(i))
            .ok_or_else(|| format!("no worker '{w}' (there are {n} worker(s), from 0)"))?;
        let secs = u64::from(a.count("seconds"));
        worker
            .beat
            .heartbeat
            .request_stall(Duration::from_secs(secs));
        eprintln!(
            "sluice: debug stall-worker: {} stalls for {secs} s",
            worker.name
        );
        Output::done()
    },
}];

/// One worker's health at a scrape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerHealth {
    pub stalled: bool,
    pub since_pass: f64,
    pub stalls: u64,
}

/// The control socket's counts at a scrape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientCounts {
    pub accepted: u64,
    pub active: u64,
    pub refused: u64,
    pub timed_out: u64,
    pub too_long: u64,
}

/// What a scrape reports of the daemon's health.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HealthSnapshot {
    pub workers: Vec<WorkerHealth>,
    pub clients: Option<ClientCounts>,
}

/// Handles on the heartbeats and the control socket's counters.
#[derive(Clone, Default)]
pub struct HealthSource {
    beats: Vec<Arc<Beat>>,
    clients: Option<Arc<ClientStats>>,
}

pub fn worker_health(b: &Beat) -> WorkerHealth {
    let h = &b.health;
    WorkerHealth {
        stalled: h.stalled.load(Ordering::Relaxed),
        since_pass: h.since_pass_ms.load(Ordering::Relaxed) as f64 / 1e3,
        stalls: h.stalls.load(Ordering::Relaxed),
    }
}

impl HealthSource {
    pub fn new(dp: &Dataplane) -> HealthSource {
        HealthSource {
            beats: dp.workers.iter().map(|w| w.beat.clone()).collect(),
            clients: None,
        }
    }

    pub fn with_clients(mut self, clients: Arc<ClientStats>) -> HealthSource {
        self.clients = Some(clients);
        self
    }

    pub fn snapshot(&self) -> HealthSnapshot {
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        HealthSnapshot {
            workers: self.beats.iter().map(|b| worker_health(b)).collect(),
            clients: self.clients.as_ref().map(|c| ClientCounts {
                accepted: get(&c.accepted),
                active: get(&c.active),
                refused: get(&c.refused),
                timed_out: get(&c.timed_out),
                too_long: get(&c.too_long),
            }),
        }
    }
}

/// The health metrics of one scrape.
#[derive(Debug)]
pub struct Exposition(pub HealthSnapshot);

fn gauge(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Collector for Exposition {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let labels: Vec<String> = (0..s.workers.len()).map(|w| w.to_string()).collect();
        let mut m = enc.encode_descriptor(
            "sys_worker_stalled",
            "1 while the worker has not passed its loop for [watchdog] stall-timeout.",
            None,
            MetricType::Gauge,
        )?;
        for (w, h) in s.workers.iter().enumerate() {
            let l = [("worker", labels[w].as_str())];
            ConstGauge::new(i64::from(h.stalled)).encode(m.encode_family(&l)?)?;
        }
        let mut m = enc.encode_descriptor(
            "sys_worker_since_pass_seconds",
            "Seconds since the worker last passed its loop, as the watchdog last saw it.",
            None,
            MetricType::Gauge,
        )?;
        for (w, h) in s.workers.iter().enumerate() {
            let l = [("worker", labels[w].as_str())];
            ConstGauge::new(h.since_pass).encode(m.encode_family(&l)?)?;
        }
        let mut m = enc.encode_descriptor(
            "sys_worker_stalls",
            "Times the watchdog found the worker stalled.",
            None,
            MetricType::Counter,
        )?;
        for (w, h) in s.workers.iter().enumerate() {
            let l = [("worker", labels[w].as_str())];
            ConstCounter::new(h.stalls).encode(m.encode_family(&l)?)?;
        }
        let Some(c) = &s.clients else {
            return Ok(());
        };
        for (name, help, v) in [
            (
                "control_clients_accepted",
                "Control socket connections served.",
                c.accepted,
            ),
            (
                "control_clients_refused",
                "Control socket connections refused: too many clients at once.",
                c.refused,
            ),
            (
                "control_clients_timed_out",
                "Control clients closed for being too slow to send a line or take a reply.",
                c.timed_out,
            ),
            (
                "control_requests_too_long",
                "Control command lines longer than the limit (4096 bytes).",
                c.too_long,
            ),
        ] {
            let m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(v).encode(m)?;
        }
        let m = enc.encode_descriptor(
            "control_clients_active",
            "Control clients being served now.",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(gauge(c.active)).encode(m)
    }
}

/// `show threads`' health of a worker: `ok`, or `STALLED` with the seconds since its last
/// pass.
pub fn heartbeat_text(h: &WorkerHealth) -> String {
    if h.stalled {
        format!("STALLED {:.1}s", h.since_pass)
    } else {
        "ok".into()
    }
}

impl Control {
    /// The health of worker `w` now.
    pub(super) fn worker_health(&self, w: usize) -> WorkerHealth {
        worker_health(&self.dp.workers[w].beat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_and_client_counts_are_exposed() {
        let mut r = prometheus_client::registry::Registry::default();
        r.register_collector(Box::new(Exposition(HealthSnapshot {
            workers: vec![
                WorkerHealth::default(),
                WorkerHealth {
                    stalled: true,
                    since_pass: 2.5,
                    stalls: 1,
                },
            ],
            clients: Some(ClientCounts {
                refused: 3,
                timed_out: 2,
                ..ClientCounts::default()
            }),
        })));
        let mut t = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut t, &r).unwrap();
        for line in [
            "sys_worker_stalled{worker=\"0\"} 0",
            "sys_worker_stalled{worker=\"1\"} 1",
            "sys_worker_since_pass_seconds{worker=\"1\"} 2.5",
            "sys_worker_stalls_total{worker=\"1\"} 1",
            "control_clients_refused_total 3",
            "control_clients_timed_out_total 2",
            "control_clients_active 0",
        ] {
            assert!(t.lines().any(|l| l == line), "{line} not in\n{t}");
        }
        assert_eq!(heartbeat_text(&WorkerHealth::default()), "ok");
    }
}
