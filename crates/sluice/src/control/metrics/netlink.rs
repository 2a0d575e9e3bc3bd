//! The netlink listeners' counters in the metrics exposition, one series per namespace
//! (`netns` label; `daemon` for the daemon's own namespace).

use crate::netlink::NetlinkStats;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;

type Field = fn(&NetlinkStats) -> u64;

/// (name, help, value).
const COUNTERS: [(&str, &str, Field); 8] = [
    (
        "netlink_messages",
        "Netlink messages the listener received (dumps not included).",
        |n| n.messages,
    ),
    ("netlink_routes_added", "Kernel routes added.", |n| {
        n.routes_added
    }),
    ("netlink_routes_deleted", "Kernel routes deleted.", |n| {
        n.routes_deleted
    }),
    (
        "netlink_routes_refused_table",
        "Route messages for a table none of the namespace's taps routes in: refused.",
        |n| n.routes_refused_table,
    ),
    (
        "netlink_ignored",
        "Messages or parts of them not mirrored, all reasons.",
        |n| n.ignored_total(),
    ),
    (
        "netlink_overflows",
        "Times the netlink socket's queue overflowed (ENOBUFS); a resync followed.",
        |n| n.overflows,
    ),
    (
        "netlink_queue_overflows",
        "Times the reader's queue to the applier was full: what it read was dropped, a resync followed.",
        |n| n.queue_overflows,
    ),
    (
        "netlink_resyncs",
        "Dumps and reconciles done (the first at start-up).",
        |n| n.resyncs,
    ),
];

pub(super) fn encode(
    listeners: &[NetlinkStats],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    for (name, help, field) in COUNTERS {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for n in listeners {
            let labels = [("netns", n.netns.as_deref().unwrap_or("daemon"))];
            ConstCounter::new(field(n)).encode(m.encode_family(&labels)?)?;
        }
    }
    Ok(())
}
