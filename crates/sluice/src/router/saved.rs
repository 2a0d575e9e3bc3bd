//! The static routes `sluice ctl save` writes: those of the config and the CLI (a route
//! file's routes stay in their file, and routes of any other source are the router's own or
//! learnt), each with its next hops as resolved: interface and address.

use super::Router;
use crate::fib::parse::IpPrefix;
use crate::router::adjacency::AdjKind;
use std::net::IpAddr;

/// One configured static route, as the router holds it now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedRoute {
    /// The table's id.
    pub table: u32,
    pub prefix: IpPrefix,
    /// Its paths: one, or several (ECMP).
    pub hops: Vec<SavedHop>,
}

/// One path of a saved route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SavedHop {
    Drop,
    Via {
        interface: String,
        addr: IpAddr,
        /// The id of the table the interface routes this family in.
        table: u32,
        /// Whether the address is on a connected network of this interface in that table
        /// (so the config may leave the interface out).
        by_address: bool,
    },
    /// A path no [[route]] can give (the adjacency's kind).
    Other(&'static str),
}

impl Router {
    /// Every configured static route of every table, by table id, IPv4 first, then by
    /// prefix; the paths of each (drops first) by address.
    pub fn saved_routes(&self) -> Vec<SavedRoute> {
        let mut out = Vec::new();
        for (t, table) in self.tables.iter().enumerate() {
            let Some(table) = table else { continue };
            let v4 = table.configured4.iter().filter_map(|&p| {
                let adj = table.fib.routes4().get(p)?;
                Some((IpPrefix::V4(p), adj))
            });
            let v6 = table.configured6.iter().filter_map(|&p| {
                let adj = table.fib.routes6().get(p)?;
                Some((IpPrefix::V6(p), adj))
            });
            for (prefix, adj) in v4.chain(v6) {
                if self.source_in(t, prefix) != Some(super::RouteSource::Static) {
                    continue;
                }
                // The members of an ECMP adjacency are in index order, which depends on
                // what was made first: the paths are given by address instead.
                let mut hops = self.saved_hops(adj, matches!(prefix, IpPrefix::V6(_)));
                hops.sort_by_key(|h| match h {
                    SavedHop::Via { addr, .. } => Some(*addr),
                    _ => None,
                });
                out.push(SavedRoute {
                    table: table.id,
                    prefix,
                    hops,
                });
            }
        }
        out.sort_by_key(|r| {
            let (v6, p4, p6) = match r.prefix {
                IpPrefix::V4(p) => (false, Some(p), None),
                IpPrefix::V6(p) => (true, None, Some(p)),
            };
            (r.table, v6, p4, p6)
        });
        out
    }

    /// The paths of adjacency `adj` (a static route's: a neighbour, a drop, or a set of
    /// them).
    fn saved_hops(&self, adj: u32, v6: bool) -> Vec<SavedHop> {
        let a = self.view.adj(adj);
        match a.kind {
            AdjKind::Multipath => {
                let members = &self.view.members[a.first as usize..(a.first + a.count) as usize];
                members
                    .iter()
                    .flat_map(|&m| self.saved_hops(m, v6))
                    .collect()
            }
            AdjKind::Neighbor => {
                let t = self.table_of(a.interface, v6);
                vec![SavedHop::Via {
                    interface: self.name(a.interface).to_string(),
                    addr: a.next_hop,
                    table: self.table(t).id,
                    by_address: self.connected_interface(t, a.next_hop) == Some(a.interface),
                }]
            }
            AdjKind::Drop => vec![SavedHop::Drop],
            // A static route's paths are neighbours or drops; `add_route` makes no other.
            AdjKind::Local => vec![SavedHop::Other("local")],
            AdjKind::Glean => vec![SavedHop::Other("glean")],
        }
    }
}
