//! What a run reports: the once-a-second lines while it runs, and the summary at the end as
//! text or JSON.

use super::Options;
use crate::bench::linerate::{fmt_bps, fmt_pps, l2_bps};
use serde_json::json;
use std::time::{Duration, Instant};

/// netmap pkt-gen's once-a-second line: `N pps (M pkts in T usec)`.
pub(super) struct SecondLine {
    last: Instant,
    count: u64,
}

impl SecondLine {
    pub(super) fn new() -> SecondLine {
        SecondLine {
            last: Instant::now(),
            count: 0,
        }
    }

    /// Print a line for the packets since the last one, if a second has passed.
    pub(super) fn tick(&mut self, quiet: bool, prefix: &str, total: u64) {
        let now = Instant::now();
        if quiet || now - self.last < Duration::from_secs(1) {
            return;
        }
        let us = (now - self.last).as_micros() as u64;
        let pkts = total - self.count;
        eprintln!(
            "{prefix}{} pps ({pkts} pkts in {us} usec)",
            pkts * 1_000_000 / us.max(1)
        );
        self.last = now;
        self.count = total;
    }
}

/// What the sender did.
#[derive(Debug, Default)]
pub(super) struct TxReport {
    pub(super) packets: u64,
    pub(super) bytes: u64,
    pub(super) errors: u64,
    /// Frames a full queue turned back, sent again later: the peer's back-pressure.
    pub(super) queue_full: u64,
    pub(super) elapsed: Duration,
}

/// What the receiver saw.
#[derive(Debug, Default)]
pub(super) struct RxReport {
    pub(super) packets: u64,
    pub(super) bytes: u64,
    pub(super) corrupt: u64,
    /// Frames whose every byte was compared.
    pub(super) verified: u64,
    pub(super) dup: u64,
    pub(super) reorder: u64,
    /// Of those, frames that came after a later frame of their own flow: what a router
    /// that spreads flows over workers must not do (a flow's frames keep their order).
    pub(super) flow_reorder: u64,
    pub(super) other: u64,
    /// Frames the kernel could not put in our receive ring: lost by the tester, not the DUT.
    pub(super) ring_drops: u64,
    pub(super) latencies: Vec<u64>,
}

/// The reverse direction with `--reply`: the answers the rx port sent, and what of them
/// came back to the tx port.
#[derive(Debug, Default)]
pub(super) struct Reverse {
    pub(super) answered: super::reply::Answered,
    pub(super) rx: RxReport,
}

/// The run's outcome.
pub struct Report {
    /// Both directions added up (with `--bi`); with `--reply`, the frames sent.
    pub(super) tx: TxReport,
    pub(super) rx: Option<RxReport>,
    /// Directions sent: 1, or 2 with --bi.
    pub(super) lanes: usize,
    /// The answers, with `--reply`.
    pub(super) reverse: Option<Reverse>,
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// What a receiver saw, as JSON fields: `sent` frames were sent its way in `elapsed`.
fn rx_fields(
    rx: &RxReport,
    sent: u64,
    elapsed: Duration,
    opts: &Options,
) -> serde_json::Map<String, serde_json::Value> {
    let mut lat = rx.latencies.clone();
    lat.sort_unstable();
    let pps = rx.packets as f64 / elapsed.as_secs_f64().max(1e-9);
    let v = json!({
        "rx_packets": rx.packets, "rx_bytes": rx.bytes,
        "lost": sent.saturating_sub(rx.packets),
        "rx_corrupt": rx.corrupt, "rx_verified": rx.verified, "rx_dup": rx.dup,
        "rx_reorder": rx.reorder, "rx_flow_reorder": rx.flow_reorder, "rx_other": rx.other,
        "rx_ring_drops": rx.ring_drops, "rx_pps": pps,
        "l2_bps": l2_bps(pps, Report::mean_size(opts)),
        "latency_ns": {"min": lat.first().copied().unwrap_or(0), "median": percentile(&lat, 0.5),
                       "p99": percentile(&lat, 0.99), "max": lat.last().copied().unwrap_or(0),
                       "samples": lat.len()},
    });
    match v {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("a JSON object"),
    }
}

impl Report {
    pub(super) fn mean_size(opts: &Options) -> f64 {
        opts.profile.sizes.iter().sum::<usize>() as f64 / opts.profile.sizes.len() as f64
    }

    fn tx_pps(&self) -> f64 {
        self.tx.packets as f64 / self.tx.elapsed.as_secs_f64().max(1e-9)
    }

    fn rx_pps(&self) -> f64 {
        self.rx.as_ref().map_or(0.0, |r| {
            r.packets as f64 / self.tx.elapsed.as_secs_f64().max(1e-9)
        })
    }

    /// Whether the sender offered the asked rate (within 1 %).
    fn rate_reached(&self, opts: &Options) -> bool {
        opts.rate.is_none_or(|r| self.tx_pps() >= r * 0.99)
    }

    pub fn to_json(&self, opts: &Options) -> serde_json::Value {
        let size = if let Some(name) = &opts.size_name {
            json!(name)
        } else if opts.profile.sizes.len() == 1 {
            json!(opts.profile.sizes[0])
        } else {
            json!(opts.profile.sizes)
        };
        let mut v = json!({
            "tx_interface": opts.tx, "rx_interface": opts.rx,
            "direction": if self.lanes == 2 { "bi" } else { "uni" },
            "tx_packets": self.tx.packets, "tx_bytes": self.tx.bytes, "tx_errors": self.tx.errors,
            "tx_queue_full": self.tx.queue_full,
            "duration_s": self.tx.elapsed.as_secs_f64(),
            "tx_pps": self.tx_pps(),
            "frame_size": size,
            "flows": if opts.profile.var2 { json!("var2") } else { json!(opts.profile.flows) },
            "macs": opts.profile.macs,
            "family": opts.profile.family.name(), "l4": opts.profile.l4.name(),
            "rate_asked": opts.rate, "rate_reached": self.rate_reached(opts),
            "tx_cpu": opts.cpu,
            "io": super::io_label(opts),
        });
        if let Some(rx) = &self.rx {
            let m = v.as_object_mut().expect("object");
            m.extend(rx_fields(rx, self.tx.packets, self.tx.elapsed, opts));
        }
        if let Some(rev) = &self.reverse {
            let m = v.as_object_mut().expect("object");
            m.insert("reply".into(), json!(true));
            let mut fwd = json!({
                "tx_interface": opts.tx, "rx_interface": opts.rx,
                "tx_packets": self.tx.packets, "tx_bytes": self.tx.bytes,
                "tx_errors": self.tx.errors, "latency": "one-way",
            });
            if let Some(rx) = &self.rx {
                let f = fwd.as_object_mut().expect("object");
                f.extend(rx_fields(rx, self.tx.packets, self.tx.elapsed, opts));
            }
            let a = rev.answered;
            let mut back = json!({
                "tx_interface": opts.rx, "rx_interface": opts.tx,
                "tx_packets": a.sent, "tx_errors": a.errors, "tx_not_sent": a.queue_full,
                "latency": "round-trip",
            });
            let b = back.as_object_mut().expect("object");
            b.extend(rx_fields(&rev.rx, a.sent, self.tx.elapsed, opts));
            b.insert("tx_uncounted".into(), json!(a.uncounted));
            m.insert("forward".into(), fwd);
            m.insert("reverse".into(), back);
        }
        v
    }

    pub fn text(&self, opts: &Options) -> String {
        let mut s = format!(
            "sent {} frames in {:.3} s: {} ({})",
            self.tx.packets,
            self.tx.elapsed.as_secs_f64(),
            fmt_pps(self.tx_pps()),
            fmt_bps(l2_bps(self.tx_pps(), Self::mean_size(opts)))
        );
        if self.tx.errors > 0 {
            s += &format!(", {} refused by the kernel", self.tx.errors);
        }
        s.push('\n');
        if let (false, Some(r)) = (self.rate_reached(opts), opts.rate) {
            s += &format!(
                "rate not reached: asked {}, sent {} — this run measures the generator\n",
                fmt_pps(r),
                fmt_pps(self.tx_pps())
            );
        }
        if let Some(rx) = self.rx.as_ref().filter(|r| r.ring_drops > 0) {
            s += &format!(
                "the receiver's ring overflowed: {} frames lost by the tester, not the DUT\n",
                rx.ring_drops
            );
        }
        if let Some(rx) = &self.rx {
            s += &format!(
                "received {} ({} lost, {} corrupt, {} duplicate, {} reordered ({} within a flow), {} not ours): {} ({} L2)\n",
                rx.packets,
                self.tx.packets.saturating_sub(rx.packets),
                rx.corrupt,
                rx.dup,
                rx.reorder,
                rx.flow_reorder,
                rx.other,
                fmt_pps(self.rx_pps()),
                fmt_bps(l2_bps(self.rx_pps(), Self::mean_size(opts)))
            );
        }
        if let Some(rev) = &self.reverse {
            let a = rev.answered;
            let mut lat = rev.rx.latencies.clone();
            lat.sort_unstable();
            s += &format!(
                "answered {} ({} not sent, {} refused); answers received {} ({} lost, {} corrupt, {} duplicate, {} reordered, {} not ours), round trip median {} ns\n",
                a.sent,
                a.queue_full,
                a.errors,
                rev.rx.packets,
                a.sent.saturating_sub(rev.rx.packets),
                rev.rx.corrupt,
                rev.rx.dup,
                rev.rx.reorder,
                rev.rx.other,
                percentile(&lat, 0.5)
            );
        }
        s
    }
}
