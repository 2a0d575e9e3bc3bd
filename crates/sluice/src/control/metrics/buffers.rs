//! The buffer pool's gauges and free-list counters (`pool` label).

use super::exposition::gauge_value;
use crate::buffer::BufferReport;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// The buffer pool's label value (sluice has one pool; VPP names its pools per NUMA node).
const POOL: &str = "default";

pub(super) fn encode(b: &BufferReport, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    for (name, help, v) in [
        ("buffer_pools_buffers", "Buffers in the pool.", b.total),
        (
            "buffer_pools_available",
            "Free buffers in the pool's shared free list.",
            b.free_in_pool,
        ),
        (
            "buffer_pools_cached",
            "Free buffers in the workers' caches.",
            b.free_in_caches,
        ),
        (
            "buffer_pools_used",
            "Buffers in use (in frames, driver rings or elsewhere).",
            b.in_use,
        ),
    ] {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
        let labels = [("pool", POOL)];
        ConstGauge::new(gauge_value(v)).encode(m.encode_family(&labels)?)?;
    }
    for (name, help, v) in [
        (
            "buffer_pools_free_list_locks",
            "Takes of the pool's shared free list (a batch of buffers each).",
            b.free_list_locks,
        ),
        (
            "buffer_pools_free_list_contended",
            "Takes of the shared free list that waited for another thread.",
            b.free_list_contended,
        ),
    ] {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        let labels = [("pool", POOL)];
        ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}
