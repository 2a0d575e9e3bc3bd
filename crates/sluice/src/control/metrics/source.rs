//! What a scrape reads: handles on the dataplane's shared counters, and the `Snapshot` taken
//! from them.

use super::{ErrorTotal, NodeTotals, Snapshot};
use crate::buffer::BufferPool;
use crate::control::health::HealthSource;
use crate::control::server::ClientStats;
use crate::dataplane::placement::RxPlacement;
use crate::dataplane::queues::queue_totals;
use crate::dataplane::Dataplane;
use crate::graph::GraphShared;
use crate::interface::Interface;
use crate::subif::SharedSubIfs;
use std::sync::Arc;

/// What the metrics thread reads: handles on the dataplane's shared counters, taken once at
/// start (sub-interfaces made later are found through the published sub-interface table).
#[derive(Clone)]
pub struct MetricsSource {
    pool: Arc<BufferPool>,
    hardware: Vec<Arc<Interface>>,
    subifs: SharedSubIfs,
    graphs: Vec<Arc<GraphShared>>,
    placement: Arc<RxPlacement>,
    tsc_hz: f64,
    health: HealthSource,
    sessions: Arc<crate::acl::session::Sessions>,
    netlink: Option<crate::lcp::NetlinkCounters>,
    nat44: Arc<crate::nat44::shared::Nat44Shared>,
}

impl MetricsSource {
    pub fn new(dp: &Dataplane) -> MetricsSource {
        MetricsSource {
            pool: dp.pool.clone(),
            hardware: dp.interfaces.list[..dp.hardware].to_vec(),
            subifs: dp.subifs.clone(),
            graphs: dp.workers.iter().map(|w| w.graph.clone()).collect(),
            placement: dp.rx_placement.clone(),
            tsc_hz: dp.tsc_hz,
            health: HealthSource::new(dp),
            sessions: (dp.acls.lock().unwrap_or_else(|p| p.into_inner()))
                .filters()
                .sessions
                .clone(),
            netlink: dp.lcp.as_ref().map(|l| l.netlink_counters()),
            nat44: (dp.nat44.lock().unwrap_or_else(|p| p.into_inner()))
                .shared()
                .clone(),
        }
    }

    /// Report the control socket's counters too.
    pub fn with_clients(mut self, clients: Arc<ClientStats>) -> MetricsSource {
        self.health = self.health.with_clients(clients);
        self
    }

    /// Every counter now.
    pub fn snapshot(&self) -> Snapshot {
        let subifs = self.subifs.load();
        let mut list: Vec<&Arc<Interface>> = self
            .hardware
            .iter()
            .chain(subifs.all().map(|s| &s.interface))
            .filter(|i| !i.is_deleted())
            .collect();
        list.sort_by_key(|i| i.index);
        list.dedup_by_key(|i| i.index);
        let interfaces = list
            .iter()
            .map(|i| (i.name.clone(), i.raw_totals()))
            .collect();
        let device_counters = list
            .iter()
            .filter_map(|i| i.live.as_ref().map(|l| (i, l.device_counters())))
            .flat_map(|(i, c)| c.into_iter().map(|(n, v)| (i.name.clone(), n, v)))
            .collect();

        let mut nodes: Vec<NodeTotals> = Vec::new();
        let mut errors: Vec<ErrorTotal> = Vec::new();
        for g in &self.graphs {
            for (n, name) in g.names.iter().enumerate() {
                let at = match nodes.iter().position(|t| t.name == *name) {
                    Some(at) => at,
                    None => {
                        nodes.push(NodeTotals {
                            name: name.clone(),
                            ..NodeTotals::default()
                        });
                        nodes.len() - 1
                    }
                };
                let s = &g.stats[n];
                let t = &mut nodes[at];
                t.calls = t.calls.wrapping_add(s.calls.get());
                t.vectors = t.vectors.wrapping_add(s.vectors.get());
                t.clocks = t.clocks.wrapping_add(s.clocks.get());
                for (e, reason) in g.error_names[n].iter().enumerate() {
                    let count = g.errors[n][e].get();
                    match errors
                        .iter_mut()
                        .find(|x| x.node == *name && x.reason == *reason)
                    {
                        Some(x) => x.count = x.count.wrapping_add(count),
                        None => errors.push(ErrorTotal {
                            node: name.clone(),
                            reason: reason.to_string(),
                            count,
                        }),
                    }
                }
            }
        }
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        // By node; each node's reasons in the order it declares them.
        errors.sort_by(|a, b| a.node.cmp(&b.node));
        Snapshot {
            interfaces,
            device_counters,
            nodes,
            errors,
            buffers: Some(self.pool.report()),
            queues: queue_totals(&self.placement),
            busy_clocks: self.graphs.iter().map(|g| g.busy_clocks.get()).collect(),
            workers: self.graphs.len(),
            tsc_hz: self.tsc_hz,
            health: self.health.snapshot(),
            sessions: crate::acl::session::metrics::totals(&self.sessions),
            netlink: self.netlink.as_ref().map(|n| n.stats()).unwrap_or_default(),
            nat44: super::nat44::snapshot(&self.nat44),
        }
    }
}
