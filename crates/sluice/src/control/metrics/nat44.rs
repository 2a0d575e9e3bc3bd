//! NAT44 (`nat44` families, `worker` label): each worker's sessions by protocol and the
//! memory its table holds (gauges), and the sessions it created and expired (counters), read
//! from the counters the workers publish (`nat44::Stats`), as `show nat44 summary` reads
//! them; and the ports in use per outside address (`address` label), as the workers last
//! copied them out. Nothing is written while no interface has a NAT44 role.

use super::exposition::{gauge_value, per_worker, per_worker_by, Kind};
use crate::nat44::shared::Nat44Shared;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
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

/// What a scrape reads of the NAT.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nat44Snapshot {
    pub workers: Vec<Nat44Totals>,
    /// Ports in use per outside address (all protocols, all workers), by address.
    pub ports: Vec<(u32, u64)>,
}

/// Every worker's counters now; nothing while the NAT has no interface.
pub fn snapshot(nat: &Nat44Shared) -> Nat44Snapshot {
    if !nat.view.load().roles.iter().any(Option::is_some) {
        return Nat44Snapshot::default();
    }
    Nat44Snapshot {
        workers: totals(nat),
        ports: (nat.ports_in_use().into_iter())
            .map(|(a, n)| (a, n as u64))
            .collect(),
    }
}

fn totals(nat: &Nat44Shared) -> Vec<Nat44Totals> {
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
    nat: &Nat44Snapshot,
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let workers = &nat.workers;
    if workers.is_empty() {
        return Ok(());
    }
    per_worker_by(
        enc,
        (
            Kind::Gauge,
            "nat44_sessions",
            "NAT44 sessions the worker holds, by protocol.",
        ),
        workers,
        ("protocol", PROTOCOLS),
        |t| t.live,
    )?;
    type Field = fn(&Nat44Totals) -> u64;
    let families: [(Kind, &str, &str, Field); 3] = [
        (
            Kind::Counter,
            "nat44_sessions_created",
            "NAT44 sessions the worker opened.",
            |t| t.created,
        ),
        (
            Kind::Counter,
            "nat44_sessions_expired",
            "NAT44 sessions the worker closed after their timeout.",
            |t| t.expired,
        ),
        (
            Kind::Gauge,
            "nat44_table_memory_bytes",
            "Bytes the worker's NAT44 table holds (sessions, indexes, port maps), roughly.",
            |t| t.memory,
        ),
    ];
    for (kind, name, help, field) in families {
        per_worker(enc, (kind, name, help), workers, field)?;
    }
    let mut m = enc.encode_descriptor(
        "nat44_ports_in_use",
        "Outside ports the NAT44 sessions hold on the address, all protocols and workers together.",
        None,
        MetricType::Gauge,
    )?;
    for &(a, n) in &nat.ports {
        let address = std::net::Ipv4Addr::from(a).to_string();
        ConstGauge::new(gauge_value(n))
            .encode(m.encode_family(&[("address", address.as_str())])?)?;
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
        assert_eq!(snapshot(&nat), Nat44Snapshot::default(), "no NAT interface");
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
        let mut nat44 = snapshot(&nat);
        assert_eq!(nat44.ports, [], "no port in use yet");
        nat44.ports = vec![(0xcb00_7101, 7)];
        let text = exposition(Snapshot {
            nat44,
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
            "# TYPE nat44_ports_in_use gauge",
            "nat44_ports_in_use{address=\"203.0.113.1\"} 7",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
        }
    }
}
