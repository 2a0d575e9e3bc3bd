//! One scrape's values written out: the families of metrics in a fixed order.

use super::Snapshot;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

/// One scrape's values, written out in a fixed order (a `Collector`: the registry asks it
/// on encoding, so nothing is kept between scrapes).
#[derive(Debug)]
pub(super) struct Exposition(pub(super) Snapshot);

impl Collector for Exposition {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        super::interfaces::encode(&s.interfaces, &mut enc)?;
        super::nodes::encode(&s.nodes, &s.errors, &mut enc)?;
        if let Some(b) = &s.buffers {
            super::buffers::encode(b, &mut enc)?;
        }
        super::queues::encode(&s.queues, &mut enc)?;
        super::workers::encode(&s.busy_clocks, s.workers, &mut enc)?;
        crate::acl::session::metrics::encode(&mut enc, &s.sessions)?;
        super::netlink::encode(&s.netlink, &mut enc)?;
        super::nat44::encode(&s.nat44, &mut enc)?;
        super::workers::encode_tsc_hz(s.tsc_hz, &mut enc)
    }
}

/// A count as a gauge's value (saturating: the format's gauges are signed).
pub(super) fn gauge_value(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
