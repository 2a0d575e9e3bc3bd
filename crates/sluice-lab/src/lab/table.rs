//! Route tables for the router DUTs: the handful of test routes alone ("small"), or those under
//! a synthetic full table (`sluice fib synth`) whose next hops are the tester's ports. Every
//! synthetic prefix that overlaps the generator's ranges or the lab's subnets is left out, so
//! the test routes stay the longest (indeed the only) match for the traffic.

use super::plan;
use crate::fib::synth::{self, SynthSpec};
use sluice::fib::parse::{parse_prefix, IpPrefix};
use sluice::fib::prefix::{Prefix4, Prefix6};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Which table a router DUT runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableSpec {
    /// The test routes only.
    Small,
    /// The test routes and `v4` + `v6` synthetic routes.
    Synth { v4: usize, v6: usize },
}

/// What `full` means: about today's IPv4 default-free zone, and the IPv6 one.
pub const FULL: TableSpec = TableSpec::Synth {
    v4: 1_000_000,
    v6: 200_000,
};

impl TableSpec {
    /// `small`, `full`, or `V4[+V6]` synthetic routes (`100000`, `500000+50000`).
    pub fn parse(s: &str) -> Result<TableSpec, String> {
        match s {
            "small" => return Ok(TableSpec::Small),
            "full" => return Ok(FULL),
            _ => {}
        }
        let (a, b) = s.split_once('+').unwrap_or((s, "0"));
        let n = |t: &str| {
            t.parse::<usize>()
                .ok()
                .filter(|&n| n <= 5_000_000)
                .ok_or_else(|| format!("--table: '{s}' is not small, full or V4[+V6] routes"))
        };
        match (n(a)?, n(b)?) {
            (0, 0) => Ok(TableSpec::Small),
            (v4, v6) => Ok(TableSpec::Synth { v4, v6 }),
        }
    }

    /// Short label for tables and JSON: `small`, `1M+200k`.
    pub fn label(self) -> String {
        fn count(n: usize) -> String {
            if n >= 1_000_000 && n.is_multiple_of(100_000) {
                format!("{}M", n as f64 / 1e6)
            } else if n >= 1_000 && n.is_multiple_of(1_000) {
                format!("{}k", n / 1_000)
            } else {
                n.to_string()
            }
        }
        match self {
            TableSpec::Small => "small".into(),
            TableSpec::Synth { v4, v6 } => format!("{}+{}", count(v4), count(v6)),
        }
    }
}

/// A synthetic table written out for both routers.
#[derive(Clone, Debug)]
pub struct TableFiles {
    pub spec: TableSpec,
    /// `PREFIX NEXTHOP` lines, for sluice's `[fib] route_file`.
    pub route_file: PathBuf,
    /// `route replace PREFIX via NEXTHOP` lines, for `ip -batch`.
    pub ip_batch: PathBuf,
    pub v4: usize,
    pub v6: usize,
}

/// What the synthetic routes must not overlap: the generator's two /16s and the subnets of
/// the lab's ports (a synthetic route equal to a connected subnet would replace it).
pub fn avoided() -> (Vec<Prefix4>, Vec<Prefix6>) {
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for p in [
        plan::TO_T0,
        plan::TO_T1,
        plan::D0_V4,
        plan::D1_V4,
        plan::D0_V6,
        plan::D1_V6,
    ] {
        match parse_prefix(&subnet(p)) {
            Ok(IpPrefix::V4(p)) => v4.push(p),
            Ok(IpPrefix::V6(p)) => v6.push(p),
            Err(_) => unreachable!("the lab's plan holds good prefixes"),
        }
    }
    (v4, v6)
}

/// `192.0.2.1/24` → `192.0.2.0/24`.
fn subnet(addr_len: &str) -> String {
    let (a, l) = addr_len.split_once('/').unwrap_or((addr_len, "32"));
    let len: u8 = l.parse().unwrap_or(32);
    match a.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(x)) => Prefix4::containing(u32::from(x), len).to_string(),
        Ok(std::net::IpAddr::V6(x)) => Prefix6::containing(u128::from(x), len).to_string(),
        Err(_) => addr_len.to_string(),
    }
}

/// Write the synthetic part of `spec` into `dir`, next hops alternating between the tester's
/// t0 and t1 (so both of the DUT's ports carry routes). None for the small table.
pub fn write(spec: TableSpec, dir: &Path) -> Result<Option<TableFiles>, String> {
    let TableSpec::Synth { v4, v6 } = spec else {
        return Ok(None);
    };
    let (avoid4, avoid6) = avoided();
    let (r4, r6) = synth::synth_avoiding(
        &SynthSpec {
            v4,
            v6,
            seed: 1,
            next_hops: 2,
            default_route: false,
            long_share: 0.0,
        },
        &avoid4,
        &avoid6,
    );
    let hops4 = [plan::T0_V4, plan::T1_V4];
    let hops6 = [plan::T0_V6, plan::T1_V6];
    let mut plain = String::with_capacity((r4.len() + r6.len()) * 32);
    let mut batch = String::with_capacity((r4.len() + r6.len()) * 48);
    let mut put = |p: &dyn std::fmt::Display, hop: &str| {
        let _ = writeln!(plain, "{p} {hop}");
        let _ = writeln!(batch, "route replace {p} via {hop}");
    };
    for (p, nh) in &r4 {
        put(p, hops4[*nh as usize % 2]);
    }
    for (p, nh) in &r6 {
        put(p, hops6[*nh as usize % 2]);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let name = spec.label();
    let route_file = dir.join(format!("routes-{name}.txt"));
    let ip_batch = dir.join(format!("ip-batch-{name}.txt"));
    for (path, text) in [(&route_file, plain), (&ip_batch, batch)] {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(Some(TableFiles {
        spec,
        route_file,
        ip_batch,
        v4: r4.len(),
        v6: r6.len(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::fib::parse::read_route_file;

    #[test]
    fn table_specs_parse_and_label() {
        assert_eq!(TableSpec::parse("small"), Ok(TableSpec::Small));
        assert_eq!(TableSpec::parse("full"), Ok(FULL));
        assert_eq!(FULL.label(), "1M+200k");
        assert_eq!(
            TableSpec::parse("1500+20"),
            Ok(TableSpec::Synth { v4: 1500, v6: 20 })
        );
        assert_eq!(TableSpec::parse("2000").unwrap().label(), "2k+0");
        for bad in ["big", "1+", "+5", "-3", "9000000"] {
            assert!(TableSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn synthetic_tables_miss_the_traffic_and_the_subnets() {
        let dir = std::env::temp_dir().join(format!("sluice-lab-table-{}", std::process::id()));
        let t = write(
            TableSpec::Synth {
                v4: 30_000,
                v6: 5_000,
            },
            &dir,
        )
        .unwrap()
        .unwrap();
        assert_eq!((t.v4, t.v6), (30_000, 5_000));
        let routes = read_route_file(&t.route_file).unwrap();
        assert_eq!(routes.len(), 35_000);
        let (a4, a6) = avoided();
        assert_eq!((a4.len(), a6.len()), (4, 2));
        let mut hops = std::collections::HashSet::new();
        for r in &routes {
            match r.prefix {
                IpPrefix::V4(p) => assert!(a4.iter().all(|a| !synth::overlaps(*a, p)), "{p}"),
                IpPrefix::V6(p) => assert!(a6.iter().all(|a| !synth::overlaps(*a, p)), "{p}"),
            }
            hops.insert(r.next_hop.to_string());
        }
        let want: std::collections::HashSet<String> =
            [plan::T0_V4, plan::T1_V4, plan::T0_V6, plan::T1_V6]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert_eq!(hops, want);
        let batch = std::fs::read_to_string(&t.ip_batch).unwrap();
        assert_eq!(batch.lines().count(), 35_000);
        assert!(batch
            .lines()
            .all(|l| l.starts_with("route replace ") && l.contains(" via ")));
        assert_eq!(write(TableSpec::Small, &dir).unwrap().map(|t| t.v4), None);
        std::fs::remove_dir_all(&dir).ok();
    }
}
