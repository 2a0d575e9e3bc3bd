//! NAT44 (`nat44` families, `worker` label): each worker's sessions by protocol and the
//! memory its table holds (gauges), and the sessions it created and expired (counters), read
//! from the counters the workers publish (`nat44::Stats`), as `show nat44 summary` reads
//! them. Nothing is written while no interface has a NAT44 role.

use super::exposition::gauge_value;
use crate::nat44::shared::Nat44Shared;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use std::sync::atomic::Ordering::Relaxed;

/// One worker's NAT44 counters, as a scrape reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nat44Totals {
    /// Live sessions: TCP, UDP, ICMP.
    pub live: [u64; 3],
    pub created: u64,
    pub expired: u64,
    pub memory: u64,
}

/// Every worker's counters now; none while the NAT has no interface.
pub fn totals(nat: &Nat44Shared) -> Vec<Nat44Totals> {
    if !nat.view.load().roles.iter().any(Option::is_some) {
        return Vec::new();
    }
    nat.workers
        .iter()
        .map(|w| {
            let s = &w.stats;
            Nat44Totals {
                live: [0, 1, 2].map(|p| s.live[p].load(Relaxed)),
                created: s.created.load(Relaxed),
                expired: s.expired.load(Relaxed),
                memory: s.memory.load(Relaxed),
            }
        })
        .collect()
}

const PROTOCOLS: [&str; 3] = ["tcp", "udp", "icmp"];

pub(super) fn encode(
    workers: &[Nat44Totals],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    if workers.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(
        "nat44_sessions",
        "NAT44 sessions the worker holds, by protocol.",
        None,
        MetricType::Gauge,
    )?;
    for (w, t) in workers.iter().enumerate() {
        let worker = w.to_string();
        for (proto, n) in PROTOCOLS.iter().zip(t.live) {
            let labels = [("worker", worker.as_str()), ("protocol", *proto)];
            ConstGauge::new(gauge_value(n)).encode(m.encode_family(&labels)?)?;
        }
    }
    type Field = fn(&Nat44Totals) -> u64;
    let counters: [(&str, &str, Field); 2] = [
        (
            "nat44_sessions_created",
            "NAT44 sessions the worker opened.",
            |t| t.created,
        ),
        (
            "nat44_sessions_expired",
            "NAT44 sessions the worker closed after their timeout.",
            |t| t.expired,
        ),
    ];
    for (name, help, field) in counters {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (w, t) in workers.iter().enumerate() {
            let worker = w.to_string();
            ConstCounter::new(field(t)).encode(m.encode_family(&[("worker", worker.as_str())])?)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "nat44_table_memory_bytes",
        "Bytes the worker's NAT44 table holds (sessions, indexes, port maps), roughly.",
        None,
        MetricType::Gauge,
    )?;
    for (w, t) in workers.iter().enumerate() {
        let worker = w.to_string();
        ConstGauge::new(gauge_value(t.memory))
            .encode(m.encode_family(&[("worker", worker.as_str())])?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::metrics::{encode as exposition, Snapshot};
    use crate::nat44::{NatView, Role};
    use std::sync::Arc;

    #[test]
    fn the_scrape_shows_each_workers_sessions() {
        let nat = Nat44Shared::new(2);
        assert!(totals(&nat).is_empty(), "no NAT interface, no family");
        nat.view.store(Arc::new(NatView {
            roles: vec![Some(Role::Inside), Some(Role::Outside)],
            workers: 2,
            ..NatView::default()
        }));
        let s = &nat.workers[1].stats;
        s.live[0].store(3, Relaxed);
        s.live[1].store(5, Relaxed);
        s.created.store(12, Relaxed);
        s.expired.store(4, Relaxed);
        s.memory.store(65536, Relaxed);
        assert_eq!(exposition(Snapshot::default()).find("nat44"), None);
        let text = exposition(Snapshot {
            nat44: totals(&nat),
            ..Snapshot::default()
        });
        for line in [
            "# TYPE nat44_sessions gauge",
            "nat44_sessions{worker=\"0\",protocol=\"tcp\"} 0",
            "nat44_sessions{worker=\"1\",protocol=\"tcp\"} 3",
            "nat44_sessions{worker=\"1\",protocol=\"udp\"} 5",
            "nat44_sessions{worker=\"1\",protocol=\"icmp\"} 0",
            "# TYPE nat44_sessions_created_total counter",
            "nat44_sessions_created_total{worker=\"1\"} 12",
            "nat44_sessions_expired_total{worker=\"1\"} 4",
            "nat44_sessions_expired_total{worker=\"0\"} 0",
            "# TYPE nat44_table_memory_bytes gauge",
            "nat44_table_memory_bytes{worker=\"1\"} 65536",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
        }
    }
}
