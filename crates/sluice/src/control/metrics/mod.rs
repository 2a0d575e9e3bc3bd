//! The Prometheus endpoint (`[metrics] listen = "127.0.0.1:9482"`): `GET /metrics` over
//! HTTP/1.1, answered in the Prometheus text exposition format (version 0.0.4), encoded by
//! the `prometheus-client` crate.
//!
//! A scrape reads the counters `show interface`, `show runtime`, `show errors` and `show
//! buffers` read — the workers' single-writer atomics and the buffer pool's counts — so it
//! takes no lock a worker takes while forwarding and never slows the dataplane. It reports
//! totals since the daemon started: the `clear` commands move the CLI's baselines, not these.
//! Names follow VPP's exporter (`vpp_prometheus_export v2`): `interfaces_rx_packets`,
//! `nodes_calls`, `err`, `buffer_pools_used`, with the `_total` suffix the format gives
//! counters.
//!
//! `source` takes a `Snapshot` of the counters; `exposition` writes it out, one family of
//! metrics per module (`interfaces`, `nodes`, `buffers`, `queues`, `workers`, `netlink`, `nat44`);
//! `server` is the endpoint's thread and `http` the little HTTP it speaks.
//!
//! The server is one thread that answers one connection at a time; a client has
//! `HEAD_TIMEOUT` to send its request head and `WRITE_TIMEOUT` per write, so a slow or broken
//! one delays the next scrape at most that long and never the daemon. The thread checks the
//! stop flag between connections and while it waits for a request, and ends when the daemon
//! stops.

mod buffers;
pub mod config;
mod exposition;
mod http;
mod interfaces;
mod nat44;
mod netlink;
mod nodes;
mod queues;
mod server;
mod source;
mod workers;

pub(crate) use exposition::{per_worker, per_worker_by, Kind};
pub use server::{MetricsListener, MetricsServer, HEAD_TIMEOUT, WRITE_TIMEOUT};
pub use source::MetricsSource;

use crate::buffer::BufferReport;
use crate::dataplane::queues::QueueTotals;
use crate::interface::IfTotals;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::registry::Registry;

/// What one scrape reports.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// (name, counters since start), in index order.
    pub interfaces: Vec<(String, IfTotals)>,
    /// (interface, counter, value): the devices' own counters (DPDK's extended statistics).
    pub device_counters: Vec<(String, String, u64)>,
    /// Per node, summed over workers, in name order.
    pub nodes: Vec<NodeTotals>,
    /// Per node and reason, summed over workers; by node name.
    pub errors: Vec<ErrorTotal>,
    pub buffers: Option<BufferReport>,
    /// Per receive queue, by interface index then queue.
    pub queues: Vec<QueueTotals>,
    /// Per worker: clocks spent in passes that received packets.
    pub busy_clocks: Vec<u64>,
    pub workers: usize,
    /// The rate of the clock `nodes_clocks` counts in.
    pub tsc_hz: f64,
    /// The workers' heartbeats and the control socket's counts (`health.rs`).
    pub health: crate::control::health::HealthSnapshot,
    /// Per worker: the ACL session table (none before a reflect rule made them).
    pub sessions: Vec<crate::acl::session::metrics::SessionTotals>,
    /// Each namespace's netlink listener.
    pub netlink: Vec<crate::netlink::NetlinkStats>,
    /// Per worker: NAT44's sessions (none while no interface has a NAT44 role).
    pub nat44: nat44::Nat44Snapshot,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTotals {
    pub name: String,
    pub calls: u64,
    pub vectors: u64,
    pub clocks: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorTotal {
    pub node: String,
    pub reason: String,
    pub count: u64,
}

/// The exposition of `s` in the Prometheus text format: interfaces in index order, nodes in
/// name order, error counters by node name.
pub fn encode(mut s: Snapshot) -> String {
    let mut r = Registry::default();
    let health = std::mem::take(&mut s.health);
    r.register_collector(Box::new(exposition::Exposition(s)));
    r.register_collector(Box::new(crate::control::health::Exposition(health)));
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_text::encode(&mut text, &r);
    text
}

#[cfg(test)]
mod tests;
