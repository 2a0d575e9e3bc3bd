//! The interface counters, one series per interface (`interface` label).

use crate::interface::IfTotals;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;

type IfField = fn(&IfTotals) -> u64;

/// The interface counters: (name, help, value).
const INTERFACE_COUNTERS: [(&str, &str, IfField); 8] = [
    (
        "interfaces_rx_packets",
        "Packets received on the interface.",
        |c| c.rx_packets,
    ),
    (
        "interfaces_rx_bytes",
        "Bytes received on the interface.",
        |c| c.rx_bytes,
    ),
    (
        "interfaces_tx_packets",
        "Packets sent on the interface.",
        |c| c.tx_packets,
    ),
    ("interfaces_tx_bytes", "Bytes sent on the interface.", |c| {
        c.tx_bytes
    }),
    (
        "interfaces_drops",
        "Packets received on the interface that the graph dropped.",
        |c| c.drops,
    ),
    (
        "interfaces_tx_error",
        "Packets the driver could not send (ring full, send error).",
        |c| c.tx_errors,
    ),
    (
        "interfaces_tx_peer_full",
        "Of the tx errors, packets the peer had no room for.",
        |c| c.tx_peer_full,
    ),
    (
        "interfaces_rx_miss",
        "Packets the kernel or NIC dropped before sluice saw them.",
        |c| c.rx_miss,
    ),
];

pub(super) fn encode(
    interfaces: &[(String, IfTotals)],
    device: &[(String, String, u64)],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    for (name, help, field) in INTERFACE_COUNTERS {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (itf, totals) in interfaces {
            let labels = [("interface", itf.as_str())];
            ConstCounter::new(field(totals)).encode(m.encode_family(&labels)?)?;
        }
    }
    if !device.is_empty() {
        let mut m = enc.encode_descriptor(
            "interfaces_device",
            "The device's own counters by its names (a DPDK port's extended statistics).",
            None,
            MetricType::Counter,
        )?;
        for (itf, counter, v) in device {
            let labels = [("interface", itf.as_str()), ("counter", counter.as_str())];
            ConstCounter::new(*v).encode(m.encode_family(&labels)?)?;
        }
    }
    Ok(())
}
