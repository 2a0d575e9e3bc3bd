//! The graph's node statistics (`node` label) and its error counters (`node` and `error`
//! labels), each summed over workers.

use super::{ErrorTotal, NodeTotals};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;

type NodeField = fn(&NodeTotals) -> u64;

/// The node statistics: (name, help, value).
const NODE_COUNTERS: [(&str, &str, NodeField); 3] = [
    (
        "nodes_calls",
        "Times the graph ran the node, summed over workers.",
        |n| n.calls,
    ),
    (
        "nodes_vectors",
        "Packets the node handled, summed over workers.",
        |n| n.vectors,
    ),
    (
        "nodes_clocks",
        "TSC ticks spent in the node, summed over workers (sys_tsc_hz per second).",
        |n| n.clocks,
    ),
];

pub(super) fn encode(
    nodes: &[NodeTotals],
    errors: &[ErrorTotal],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    for (name, help, field) in NODE_COUNTERS {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for n in nodes {
            let labels = [("node", n.name.as_str())];
            ConstCounter::new(field(n)).encode(m.encode_family(&labels)?)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "err",
        "Packets a node dropped or flagged, by node and reason, summed over workers.",
        None,
        MetricType::Counter,
    )?;
    for e in errors {
        let labels = [("node", e.node.as_str()), ("error", e.reason.as_str())];
        ConstCounter::new(e.count).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}
