//! The workers: each one's busy time (`worker` label), how many there are, and the rate of
//! the clock the node and busy times count in.

use super::exposition::{gauge_value, per_worker, Kind};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

pub(super) fn encode(
    busy_clocks: &[u64],
    workers: usize,
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    per_worker(
        enc,
        (
            Kind::Counter,
            "sys_worker_busy_clocks",
            "TSC ticks the worker spent in graph passes that received packets (its busy time; sys_tsc_hz per second).",
        ),
        busy_clocks,
        |c| *c,
    )?;
    let m = enc.encode_descriptor(
        "sys_num_worker_threads",
        "Worker threads running the graph.",
        None,
        MetricType::Gauge,
    )?;
    ConstGauge::new(gauge_value(workers as u64)).encode(m)
}

/// The clock's rate (last in the exposition, after the subsystems' families).
pub(super) fn encode_tsc_hz(
    tsc_hz: f64,
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let m = enc.encode_descriptor(
        "sys_tsc_hz",
        "Ticks per second of the clock nodes_clocks counts.",
        None,
        MetricType::Gauge,
    )?;
    ConstGauge::new(tsc_hz).encode(m)
}
