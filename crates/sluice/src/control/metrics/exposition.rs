//! One scrape's values written out: the families of metrics in a fixed order.

use super::Snapshot;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// One scrape's values, written out in a fixed order (a `Collector`: the registry asks it
/// on encoding, so nothing is kept between scrapes).
#[derive(Debug)]
pub(super) struct Exposition(pub(super) Snapshot);

impl Collector for Exposition {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        super::interfaces::encode(&s.interfaces, &s.device_counters, &mut enc)?;
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

/// What a family's values are: totals that only grow, or levels read now.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Counter,
    Gauge,
}

impl Kind {
    fn metric_type(self) -> MetricType {
        match self {
            Kind::Counter => MetricType::Counter,
            Kind::Gauge => MetricType::Gauge,
        }
    }

    fn encode(self, v: u64, m: MetricEncoder) -> Result<(), std::fmt::Error> {
        match self {
            Kind::Counter => ConstCounter::new(v).encode(m),
            Kind::Gauge => ConstGauge::new(gauge_value(v)).encode(m),
        }
    }
}

/// A family's kind, name and help.
pub(crate) type Family<'a> = (Kind, &'a str, &'a str);

/// One family with a value per worker (`worker` label, the index in `workers`): `field` of
/// that worker's totals.
pub(crate) fn per_worker<T>(
    enc: &mut DescriptorEncoder,
    (kind, name, help): Family,
    workers: &[T],
    field: impl Fn(&T) -> u64,
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, kind.metric_type())?;
    for (w, t) in workers.iter().enumerate() {
        let worker = w.to_string();
        kind.encode(field(t), m.encode_family(&[("worker", worker.as_str())])?)?;
    }
    Ok(())
}

/// One family with a value per worker and per value of a second label (`by`: its name and
/// values): `field` gives a worker's count for each value, in order.
pub(crate) fn per_worker_by<T, const N: usize>(
    enc: &mut DescriptorEncoder,
    (kind, name, help): Family,
    workers: &[T],
    (label, values): (&str, [&str; N]),
    field: impl Fn(&T) -> [u64; N],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, kind.metric_type())?;
    for (w, t) in workers.iter().enumerate() {
        let worker = w.to_string();
        for (value, n) in values.into_iter().zip(field(t)) {
            let labels = [("worker", worker.as_str()), (label, value)];
            kind.encode(n, m.encode_family(&labels)?)?;
        }
    }
    Ok(())
}
