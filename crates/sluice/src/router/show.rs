//! What the router shows: `show ip fib` (routes, one route, summary), `show ip neighbors` and
//! `show interface address`.

use super::{RouteSource, Router};
use crate::fib::parse::IpPrefix;
use crate::fib::FibMemory;
use crate::router::adjacency::AdjKind;
use std::net::IpAddr;

/// What the router says about one route, for `show ip fib`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RouteView {
    pub prefix: String,
    pub source: RouteSource,
    pub adjacency: u32,
    /// One line per path: "via 198.51.100.2 d1 (52:54:00:..)", "glean d0", "drop", "local".
    pub paths: Vec<String>,
}

/// `show ip fib summary`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FibSummary {
    /// The table summed up, and how many tables there are.
    pub table: u32,
    pub tables: usize,
    pub v4_routes: usize,
    pub v6_routes: usize,
    pub by_source: Vec<(RouteSource, usize)>,
    pub adjacencies: usize,
    pub neighbors: usize,
    pub memory: FibMemory,
    /// Lookup structures and route tables of every table.
    pub all_tables_bytes: usize,
    pub route_file: Option<String>,
    pub route_file_routes: usize,
    pub load_seconds: f64,
}

/// `show ip neighbors`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NeighborView {
    pub interface: String,
    pub ip: IpAddr,
    /// Empty while incomplete or failed.
    pub mac: String,
    pub static_entry: bool,
    /// NUD state: incomplete, reachable, stale, delay, probe, failed, permanent.
    pub state: super::nud::State,
    /// Seconds in this state, and since an answer (or the operator) last confirmed it.
    pub age: f64,
    pub confirmed: f64,
}

/// The neighbour table's size, timers and what it refused, for `show ip neighbors`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NeighborTableView {
    pub entries: usize,
    pub max_entries: usize,
    pub reachable_ms: u64,
    pub stale_ms: u64,
    pub delay_ms: u64,
    pub retrans_ms: u64,
    pub probes: u8,
    pub evicted: u64,
    pub expired: u64,
    pub unsolicited: u64,
    pub full: u64,
}

impl Router {
    fn describe(&self, adj: u32) -> Vec<String> {
        let a = self.view.adj(adj);
        match a.kind {
            AdjKind::Drop => vec!["drop".into()],
            AdjKind::Local => vec!["local".into()],
            AdjKind::Glean => vec![format!("glean {}", self.name(a.interface))],
            AdjKind::Neighbor => {
                let mac = self
                    .view
                    .neighbors
                    .get(&(a.interface, a.next_hop))
                    .map_or_else(|| "unresolved".to_string(), |n| n.mac.to_string());
                vec![format!(
                    "via {} {} ({mac})",
                    a.next_hop,
                    self.name(a.interface)
                )]
            }
            AdjKind::Multipath => {
                let members = &self.view.members[a.first as usize..(a.first + a.count) as usize];
                members.iter().flat_map(|&m| self.describe(m)).collect()
            }
        }
    }

    fn route_view(&self, t: usize, p: IpPrefix, adj: u32) -> RouteView {
        RouteView {
            prefix: p.to_string(),
            source: self.source_in(t, p).unwrap_or(RouteSource::Static),
            adjacency: adj,
            paths: self.describe(adj),
        }
    }

    /// Routes of one family of table `table` (an id) in prefix order, at most `limit`, and
    /// how many there are.
    pub fn routes(
        &self,
        table: u32,
        v6: bool,
        limit: usize,
    ) -> Result<(Vec<RouteView>, usize), String> {
        let t = self.table_index(table)?;
        let fib = &self.table(t).fib;
        Ok(if v6 {
            let r = fib.routes6();
            let v = r
                .iter()
                .take(limit)
                .map(|(p, a)| self.route_view(t, IpPrefix::V6(p), a))
                .collect();
            (v, r.len())
        } else {
            let r = fib.routes4();
            let v = r
                .iter()
                .take(limit)
                .map(|(p, a)| self.route_view(t, IpPrefix::V4(p), a))
                .collect();
            (v, r.len())
        })
    }

    /// The route an address takes (longest match) in table `table`, or the route for
    /// exactly a prefix.
    pub fn route_for(&self, table: u32, query: &str) -> Result<Option<RouteView>, String> {
        let t = self.table_index(table)?;
        let fib = &self.table(t).fib;
        if let Ok(ip) = query.parse::<IpAddr>() {
            return Ok(match ip {
                IpAddr::V4(a) => fib
                    .routes4()
                    .lookup(a.into())
                    .map(|(p, adj)| self.route_view(t, IpPrefix::V4(p), adj)),
                IpAddr::V6(a) => fib
                    .routes6()
                    .lookup(a.into())
                    .map(|(p, adj)| self.route_view(t, IpPrefix::V6(p), adj)),
            });
        }
        let p = crate::fib::parse::parse_prefix(query)?;
        Ok(match p {
            IpPrefix::V4(x) => fib.routes4().get(x),
            IpPrefix::V6(x) => fib.routes6().get(x),
        }
        .map(|adj| self.route_view(t, p, adj)))
    }

    /// `show ip fib [table N] summary`: the routes of one table; memory of that table and
    /// of all of them.
    pub fn summary(&mut self, table: u32) -> Result<FibSummary, String> {
        let t = self.table_index(table)?;
        let mut by_source: Vec<(RouteSource, usize)> = Vec::new();
        let mut count = |s: RouteSource| match by_source.iter_mut().find(|x| x.0 == s) {
            Some(x) => x.1 += 1,
            None => by_source.push((s, 1)),
        };
        let tb = self.table(t);
        for s in tb.special4.values().chain(tb.special6.values()) {
            count(*s);
        }
        let v4 = tb.fib.routes4().len();
        let v6 = tb.fib.routes6().len();
        let kernel = tb.kernel4 + tb.kernel6;
        let statics = (v4 + v6).saturating_sub(tb.special4.len() + tb.special6.len() + kernel);
        by_source.push((RouteSource::Static, statics));
        if kernel > 0 {
            by_source.push((RouteSource::Kernel, kernel));
        }
        let memory = tb.fib.memory();
        let all_tables_bytes = self
            .tables
            .iter()
            .flatten()
            .map(|t| t.fib.memory().total())
            .sum();
        Ok(FibSummary {
            table,
            tables: self.tables.iter().flatten().count(),
            v4_routes: v4,
            v6_routes: v6,
            by_source,
            adjacencies: self.keys.len() + 2,
            neighbors: self.view.neighbors.len(),
            memory,
            all_tables_bytes,
            route_file: self.route_file.clone(),
            route_file_routes: self.route_file_routes,
            load_seconds: self.load_time.as_secs_f64(),
        })
    }

    pub fn neighbors(&self) -> Vec<NeighborView> {
        let now = std::time::Instant::now();
        let secs = |t: std::time::Instant| now.saturating_duration_since(t).as_secs_f64();
        let mut v: Vec<NeighborView> = self
            .nud
            .iter()
            .map(|(&(itf, ip), e)| NeighborView {
                interface: self.name(itf).to_string(),
                ip,
                mac: e.mac.map_or_else(String::new, |m| m.to_string()),
                static_entry: self.static_neighbors.contains(&(itf, ip)),
                state: e.state,
                age: secs(e.since),
                confirmed: secs(e.confirmed),
            })
            .collect();
        v.sort_by(|a, b| (&a.interface, a.ip).cmp(&(&b.interface, b.ip)));
        v
    }

    /// Addresses of an interface as text, for `show interface address`.
    pub fn addresses(&self, interface: u32) -> Vec<String> {
        let Some(i) = self.view.interfaces.get(interface as usize) else {
            return Vec::new();
        };
        let v4 =
            i.v4.iter()
                .map(|&(a, l)| format!("{}/{l}", std::net::Ipv4Addr::from(a)));
        let v6 =
            i.v6.iter()
                .map(|&(a, l)| format!("{}/{l}", std::net::Ipv6Addr::from(a)));
        v4.chain(v6).collect()
    }
}

impl Router {
    pub fn neighbor_table(&self) -> NeighborTableView {
        let t = self.nud.times;
        NeighborTableView {
            entries: self.nud.len(),
            max_entries: t.max_entries,
            reachable_ms: t.reachable.as_millis() as u64,
            stale_ms: t.stale.as_millis() as u64,
            delay_ms: t.delay.as_millis() as u64,
            retrans_ms: t.retrans.as_millis() as u64,
            probes: t.probes,
            evicted: self.nud.evicted,
            expired: self.nud.expired,
            unsolicited: self.nud.unsolicited,
            full: self.nud.full,
        }
    }
}
