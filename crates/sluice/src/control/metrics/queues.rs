//! The receive queues' counters and the worker that polls each (`interface` and `queue`
//! labels).

use super::exposition::gauge_value;
use crate::dataplane::queues::QueueTotals;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

type QueueField = fn(&QueueTotals) -> u64;

/// The receive queue counters: (name, help, value).
const QUEUE_COUNTERS: [(&str, &str, QueueField); 3] = [
    (
        "queues_rx_packets",
        "Packets received on the receive queue.",
        |q| q.packets,
    ),
    (
        "queues_rx_bytes",
        "Bytes received on the receive queue.",
        |q| q.bytes,
    ),
    (
        "queues_rx_drops",
        "Frames lost on the receive queue (device misses, no buffer, bad frames).",
        |q| q.drops,
    ),
];

pub(super) fn encode(
    queues: &[QueueTotals],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    for (name, help, field) in QUEUE_COUNTERS {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for q in queues {
            let queue = q.queue.to_string();
            let labels = [("interface", q.interface.as_str()), ("queue", &queue)];
            ConstCounter::new(field(q)).encode(m.encode_family(&labels)?)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "queues_worker",
        "The worker that polls the receive queue.",
        None,
        MetricType::Gauge,
    )?;
    for q in queues {
        let queue = q.queue.to_string();
        let labels = [("interface", q.interface.as_str()), ("queue", &queue)];
        ConstGauge::new(gauge_value(q.worker as u64)).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}
