//! What a capture did, per queue and in total: as a table or as one JSON document.

use serde_json::{json, Value};
use std::path::PathBuf;

/// One queue's counts.
#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    pub queue: u32,
    /// Packets written (to the file, or counted with `--memory`).
    pub packets: u64,
    /// Their bytes on the wire.
    pub bytes: u64,
    /// Packets the kernel dropped because this queue's ring was full (PACKET_STATISTICS).
    pub drops: u64,
    /// Kernel receive times of the first and last packet (ns since the epoch).
    pub first_ns: Option<u64>,
    pub last_ns: u64,
}

/// Why the capture stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Count,
    Seconds,
    Signal,
    Error,
}

impl Stop {
    fn name(self) -> &'static str {
        match self {
            Stop::Count => "count",
            Stop::Seconds => "seconds",
            Stop::Signal => "signal",
            Stop::Error => "error",
        }
    }
}

/// The whole capture.
#[derive(Clone, Debug)]
pub struct Report {
    pub interface: String,
    pub driver: String,
    pub rx_queues: u32,
    pub queues: Vec<QueueStats>,
    /// Wall time from the rings' opening to the stop.
    pub seconds: f64,
    pub stop: Stop,
    /// Files written (none with `--memory`).
    pub files: Vec<PathBuf>,
}

impl Report {
    /// First to last packet over all queues, the period the rates are taken over (the wall
    /// time when fewer than two packets came).
    pub fn active_seconds(&self) -> f64 {
        let first = self.queues.iter().filter_map(|q| q.first_ns).min();
        let last = self.queues.iter().map(|q| q.last_ns).max();
        match (first, last) {
            (Some(f), Some(l)) if l > f => (l - f) as f64 / 1e9,
            _ => self.seconds,
        }
    }

    pub fn total(&self) -> QueueStats {
        let mut t = QueueStats::default();
        for q in &self.queues {
            t.packets += q.packets;
            t.bytes += q.bytes;
            t.drops += q.drops;
        }
        t
    }

    fn pps(&self, packets: u64) -> f64 {
        let s = self.active_seconds();
        if s > 0.0 {
            packets as f64 / s
        } else {
            0.0
        }
    }

    pub fn text(&self) -> String {
        let mut out = format!(
            "capture on {} ({}, {} receive queue{}) for {:.3} s, packets over {:.3} s, stopped by {}\n",
            self.interface,
            self.driver,
            self.rx_queues,
            if self.rx_queues == 1 { "" } else { "s" },
            self.seconds,
            self.active_seconds(),
            self.stop.name()
        );
        out += &format!(
            "{:>6} {:>12} {:>14} {:>10} {:>12}\n",
            "queue", "packets", "bytes", "drops", "pps"
        );
        let row = |name: String, q: &QueueStats| {
            format!(
                "{name:>6} {:>12} {:>14} {:>10} {:>12.0}\n",
                q.packets,
                q.bytes,
                q.drops,
                self.pps(q.packets)
            )
        };
        for q in &self.queues {
            out += &row(q.queue.to_string(), q);
        }
        out += &row("total".into(), &self.total());
        for f in &self.files {
            out += &format!("wrote {}\n", f.display());
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let entry = |q: &QueueStats| {
            json!({
                "packets": q.packets,
                "bytes": q.bytes,
                "drops": q.drops,
                "pps": self.pps(q.packets),
            })
        };
        let queues: Vec<Value> = self
            .queues
            .iter()
            .map(|q| {
                let mut e = entry(q);
                e["queue"] = json!(q.queue);
                e
            })
            .collect();
        json!({
            "interface": self.interface,
            "driver": self.driver,
            "rx_queues": self.rx_queues,
            "seconds": self.seconds,
            "active_seconds": self.active_seconds(),
            "stopped_by": self.stop.name(),
            "files": self.files,
            "queues": queues,
            "total": entry(&self.total()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_rates_over_the_active_period() {
        let q = |queue, packets, first, last| QueueStats {
            queue,
            packets,
            bytes: packets * 64,
            drops: queue as u64,
            first_ns: Some(first),
            last_ns: last,
        };
        let r = Report {
            interface: "v0".into(),
            driver: "veth".into(),
            rx_queues: 2,
            queues: vec![
                q(0, 100, 1_000_000_000, 1_500_000_000),
                q(1, 300, 1_200_000_000, 3_000_000_000),
            ],
            seconds: 10.0,
            stop: Stop::Count,
            files: vec![],
        };
        assert_eq!(r.active_seconds(), 2.0);
        let j = r.to_json();
        assert_eq!(j["total"]["packets"], 400);
        assert_eq!(j["total"]["drops"], 1);
        assert_eq!(j["total"]["pps"], 200.0);
        assert_eq!(j["queues"][1]["pps"], 150.0);
        assert_eq!(j["stopped_by"], "count");
        let t = r.text();
        assert!(
            t.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["total", "400", "25600", "1", "200"]),
            "{t}"
        );
    }
}
