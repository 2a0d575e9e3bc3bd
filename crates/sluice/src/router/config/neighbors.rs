//! `[neighbors]`: the neighbour table's size and timers (RFC 4861's NUD, applied to ARP as
//! Linux does; `src/router/nud.rs`).
//!
//! ```toml
//! [neighbors]
//! max-entries = 65536     # both families together
//! reachable-time = 30     # seconds an answer keeps an entry reachable (each entry 0.5-1.5x)
//! stale-time = 60         # seconds an unused stale entry is kept
//! delay = 5               # seconds a used stale entry waits before the first probe
//! retrans-time = 1        # seconds between unicast probes
//! probes = 3              # unicast probes before the neighbour is taken as gone
//! ```

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use crate::router::nud::Times;
use serde::Deserialize;
use std::time::Duration;
use toml::Spanned;

/// [neighbors] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "neighbors",
    array: false,
    file: "router/config/neighbors.rs",
    doc: "The neighbour table (ARP and ND). An entry is made only by a request for one of \
          the router's addresses (stale) or by an answer to a resolution the router started \
          (reachable); answers nobody asked for make nothing. Reachable entries go stale \
          after `reachable-time`; a stale entry traffic uses is probed (unicast) after \
          `delay`, `probes` times `retrans-time` apart, and fails without an answer; an \
          unused stale entry goes after `stale-time`. A full table evicts failed, \
          incomplete, then stale entries (the oldest first) before it refuses one.",
    accepted: crate::config::reference::serde_fields::<NeighborKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "max-entries",
            ty: "integer",
            default: "65536",
            doc: "entries at most, IPv4 and IPv6 together (about 100 bytes each), 16 to \
                  16777216",
            example: "65536",
        },
        Key {
            name: "reachable-time",
            ty: "number (seconds)",
            default: "30",
            doc: "how long an answer keeps an entry reachable (each entry draws 0.5 to 1.5 \
                  times this), 1 to 86400",
            example: "30",
        },
        Key {
            name: "stale-time",
            ty: "number (seconds)",
            default: "60",
            doc: "how long a stale entry nobody sends to is kept, 1 to 86400",
            example: "60",
        },
        Key {
            name: "delay",
            ty: "number (seconds)",
            default: "5",
            doc: "how long a stale entry that traffic used waits before its first probe, \
                  0 to 600",
            example: "5",
        },
        Key {
            name: "retrans-time",
            ty: "number (seconds)",
            default: "1",
            doc: "time between unicast probes, and how long a failed entry is shown; a \
                  resolution stays incomplete for three times this; 0.1 to 60",
            example: "1",
        },
        Key {
            name: "probes",
            ty: "integer",
            default: "3",
            doc: "unicast probes before a neighbour is taken as gone, 1 to 15",
            example: "3",
        },
    ],
};

/// The [neighbors] section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct NeighborKeys {
    max_entries: Option<Spanned<i64>>,
    reachable_time: Option<Spanned<f64>>,
    stale_time: Option<Spanned<f64>>,
    delay: Option<Spanned<f64>>,
    retrans_time: Option<Spanned<f64>>,
    probes: Option<Spanned<i64>>,
}

impl NeighborKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<Times, ConfigError> {
        let mut t = Times::default();
        let seconds = |v: &Option<Spanned<f64>>, key: &str, lo: f64, hi: f64| {
            let s = c.within(v, key, lo..=hi, |s| {
                format!("{s} s is outside {lo} to {hi} s")
            })?;
            Ok::<_, ConfigError>(s.map(Duration::from_secs_f64))
        };
        let integer = |v: &Option<Spanned<i64>>, key: &str, lo: i64, hi: i64| {
            c.within(v, key, lo..=hi, |n| format!("{n} is outside {lo} to {hi}"))
        };
        if let Some(n) = integer(&self.max_entries, "max-entries", 16, 1 << 24)? {
            t.max_entries = n as usize;
        }
        if let Some(d) = seconds(&self.reachable_time, "reachable-time", 1.0, 86400.0)? {
            t.reachable = d;
        }
        if let Some(d) = seconds(&self.stale_time, "stale-time", 1.0, 86400.0)? {
            t.stale = d;
        }
        if let Some(d) = seconds(&self.delay, "delay", 0.0, 600.0)? {
            t.delay = d;
        }
        if let Some(d) = seconds(&self.retrans_time, "retrans-time", 0.1, 60.0)? {
            t.retrans = d;
            t.incomplete = d * 3;
        }
        if let Some(n) = integer(&self.probes, "probes", 1, 15)? {
            t.probes = n as u8;
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::Config;
    use std::time::Duration;

    #[test]
    fn defaults_and_values() {
        let n = Config::parse("", "t.toml").unwrap().neighbors;
        assert_eq!(n, crate::router::nud::Times::default());
        let src = "[neighbors]\nmax-entries = 1024\nreachable-time = 10\nstale-time = 20\n\
                   delay = 0\nretrans-time = 0.5\nprobes = 5\n";
        let n = Config::parse(src, "t.toml").unwrap().neighbors;
        assert_eq!(n.max_entries, 1024);
        assert_eq!(n.reachable, Duration::from_secs(10));
        assert_eq!(n.stale, Duration::from_secs(20));
        assert_eq!(n.delay, Duration::ZERO);
        assert_eq!(n.retrans, Duration::from_millis(500));
        assert_eq!(n.incomplete, Duration::from_millis(1500));
        assert_eq!(n.probes, 5);
    }

    error_tests! {
        too_few_entries: "[neighbors]\nmax-entries = 8\n"
            => "t.toml:2: key 'max-entries': 8 is outside 16 to 16777216";
        no_probes: "[neighbors]\nprobes = 0\n"
            => "t.toml:2: key 'probes': 0 is outside 1 to 15";
        stale_too_long: "[neighbors]\n\nstale-time = 100000\n"
            => "t.toml:3: key 'stale-time': 100000 s is outside 1 to 86400 s";
        unknown_key: "[neighbors]\nmax = 1\n"
            => "t.toml:2: unknown field `max`, expected one of `max-entries`, \
                `reachable-time`, `stale-time`, `delay`, `retrans-time`, `probes`";
    }
}
