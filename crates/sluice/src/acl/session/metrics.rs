//! The session tables in the metrics endpoint (`control::metrics`): per worker, the entries
//! held and the capacity (gauges), and what the table did (counters): opened, expired,
//! evicted, packets passed, and sessions refused by reason.

use super::Sessions;
use crate::control::metrics::{per_worker, per_worker_by, Kind};
use prometheus_client::encoding::DescriptorEncoder;
use std::sync::atomic::Ordering::Relaxed;

/// One worker's table, as a scrape reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionTotals {
    pub entries: u64,
    pub capacity: u64,
    pub opened: u64,
    pub expired: u64,
    pub evicted: u64,
    pub hits: u64,
    pub not_syn: u64,
    pub table_full: u64,
    pub source_limit: u64,
}

/// Every worker's table now (none before a reflect rule made them).
pub fn totals(s: &Sessions) -> Vec<SessionTotals> {
    s.tables()
        .iter()
        .map(|t| {
            let n = |c: &std::sync::atomic::AtomicU64| c.load(Relaxed);
            let st = &t.stats;
            SessionTotals {
                entries: n(&st.entries),
                capacity: t.capacity() as u64,
                opened: n(&st.created),
                expired: n(&st.expired),
                evicted: n(&st.evicted),
                hits: n(&st.hits),
                not_syn: n(&st.not_syn),
                table_full: n(&st.table_full),
                source_limit: n(&st.source_limit),
            }
        })
        .collect()
}

type Field = fn(&SessionTotals) -> u64;

/// The per-worker families: (kind, name, help, value).
const FAMILIES: [(Kind, &str, &str, Field); 6] = [
    (
        Kind::Gauge,
        "acl_sessions",
        "Slots the worker's session table holds (live sessions and expired ones not yet freed).",
        |t| t.entries,
    ),
    (
        Kind::Gauge,
        "acl_sessions_capacity",
        "Sessions the worker's table holds at most.",
        |t| t.capacity,
    ),
    (
        Kind::Counter,
        "acl_sessions_opened",
        "Sessions permit+reflect rules opened.",
        |t| t.opened,
    ),
    (
        Kind::Counter,
        "acl_sessions_expired",
        "Sessions freed after their timeout.",
        |t| t.expired,
    ),
    (
        Kind::Counter,
        "acl_sessions_evicted",
        "Transient sessions freed to make room for a new one.",
        |t| t.evicted,
    ),
    (
        Kind::Counter,
        "acl_sessions_hits",
        "Packets a session let through without classification.",
        |t| t.hits,
    ),
];

/// Writes the families of `workers` (nothing when there are no tables).
pub fn encode(
    enc: &mut DescriptorEncoder,
    workers: &[SessionTotals],
) -> Result<(), std::fmt::Error> {
    if workers.is_empty() {
        return Ok(());
    }
    for (kind, name, help, field) in FAMILIES {
        per_worker(enc, (kind, name, help), workers, field)?;
    }
    per_worker_by(
        enc,
        (
            Kind::Counter,
            "acl_sessions_refused",
            "Sessions not opened (the packet dropped), by reason.",
        ),
        workers,
        ("reason", ["not_syn", "table_full", "source_limit"]),
        |t| [t.not_syn, t.table_full, t.source_limit],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::rule::FlowKey;
    use crate::acl::session::Timeouts;
    use crate::control::metrics::{encode as exposition, Snapshot};

    #[test]
    fn the_scrape_shows_each_workers_pressure() {
        let s = Sessions::new(2, 1024, Timeouts::default());
        assert_eq!(exposition(Snapshot::default()).find("acl_sessions"), None);
        s.enable();
        let k = |flags| FlowKey {
            proto: 6,
            src: 1,
            dst: 2,
            sport: 1000,
            dport: 80,
            tcp_flags: flags,
            ..FlowKey::default()
        };
        assert!(s.open(1, &k(0x02), 0));
        assert!(!s.open(
            1,
            &FlowKey {
                sport: 1001,
                ..k(0x10)
            },
            0
        ));
        let text = exposition(Snapshot {
            sessions: totals(&s),
            ..Snapshot::default()
        });
        let cap = s.tables()[0].capacity();
        for line in [
            "acl_sessions{worker=\"0\"} 0".to_string(),
            "acl_sessions{worker=\"1\"} 1".to_string(),
            format!("acl_sessions_capacity{{worker=\"1\"}} {cap}"),
            "acl_sessions_opened_total{worker=\"1\"} 1".to_string(),
            "acl_sessions_evicted_total{worker=\"0\"} 0".to_string(),
            "acl_sessions_refused_total{worker=\"1\",reason=\"not_syn\"} 1".to_string(),
            "acl_sessions_refused_total{worker=\"1\",reason=\"source_limit\"} 0".to_string(),
        ] {
            assert!(text.lines().any(|l| l == line), "{line}:\n{text}");
        }
    }
}
