//! Route tables: the FIB writer's routes with the source of each one the router made itself,
//! and the static routes of the configuration and the CLI.

use super::{NextHopSpec, RouteSource, Router};
use crate::fib::parse::IpPrefix;
use crate::fib::{Prefix4, Prefix6};
use crate::router::adjacency::ADJ_DROP;
use crate::router::allocator::AdjKey;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::net::IpAddr;

impl Router {
    /// Point the route for `p` in table `t` at `adj` (held), releasing what it pointed at,
    /// and remember who made it.
    pub(super) fn set(&mut self, t: usize, p: IpPrefix, adj: u32, source: RouteSource) {
        self.hold(adj);
        let kernel = self.is_kernel_adj(adj);
        let table = self.table_mut(t);
        // Our indices are far below the FIB's reserved values, so this cannot fail.
        let old = match p {
            IpPrefix::V4(p) => {
                remember(&mut table.special4, p, source);
                configure(&mut table.configured4, p, source);
                table.fib.add4(p, adj)
            }
            IpPrefix::V6(p) => {
                remember(&mut table.special6, p, source);
                configure(&mut table.configured6, p, source);
                table.fib.add6(p, adj)
            }
        };
        let old = old.ok().flatten();
        let was_kernel = old.is_some_and(|o| self.is_kernel_adj(o));
        self.table_mut(t).count_kernel(p, was_kernel, kernel);
        if let Some(old) = old {
            self.release(old);
        }
    }

    pub(super) fn unset(&mut self, t: usize, p: IpPrefix) -> bool {
        let table = self.table_mut(t);
        let old = match p {
            IpPrefix::V4(p) => {
                table.special4.remove(&p);
                table.configured4.remove(&p);
                table.fib.del4(p)
            }
            IpPrefix::V6(p) => {
                table.special6.remove(&p);
                table.configured6.remove(&p);
                table.fib.del6(p)
            }
        };
        match old {
            Some(adj) => {
                let was_kernel = self.is_kernel_adj(adj);
                self.table_mut(t).count_kernel(p, was_kernel, false);
                self.release(adj);
                true
            }
            None => false,
        }
    }

    /// The source of the route for exactly `p` in table `t`, if there is one.
    pub(super) fn source_in(&self, t: usize, p: IpPrefix) -> Option<RouteSource> {
        let table = self.table(t);
        match p {
            IpPrefix::V4(p) => table.fib.routes4().get(p).map(|adj| {
                table
                    .special4
                    .get(&p)
                    .copied()
                    .unwrap_or_else(|| self.unremembered_source(adj))
            }),
            IpPrefix::V6(p) => table.fib.routes6().get(p).map(|adj| {
                table
                    .special6
                    .get(&p)
                    .copied()
                    .unwrap_or_else(|| self.unremembered_source(adj))
            }),
        }
    }

    /// The source of a route the router does not remember: kernel routes are told apart by
    /// their adjacency, every other one is static.
    pub(super) fn unremembered_source(&self, adj: u32) -> RouteSource {
        if self.is_kernel_adj(adj) {
            RouteSource::Kernel
        } else {
            RouteSource::Static
        }
    }

    /// The source of the route for exactly `p` in the default table.
    pub fn source_of(&self, p: IpPrefix) -> Option<RouteSource> {
        self.source_in(0, p)
    }

    /// The interfaces routing `ip`'s family in table `t`, with their index.
    fn in_table(
        &self,
        t: usize,
        ip: IpAddr,
    ) -> impl Iterator<Item = (u32, &crate::router::adjacency::L3Interface)> {
        let v6 = ip.is_ipv6();
        self.view
            .interfaces
            .iter()
            .enumerate()
            .filter(move |(_, i)| (if v6 { i.table6 } else { i.table4 }) as usize == t)
            .map(|(k, i)| (k as u32, i))
    }

    /// The interface of table `t` whose connected network holds `ip`.
    pub(super) fn connected_interface(&self, t: usize, ip: IpAddr) -> Option<u32> {
        self.in_table(t, ip)
            .find(|(_, i)| match ip {
                IpAddr::V4(a) => {
                    let a = u32::from(a);
                    i.v4.iter()
                        .any(|&(x, l)| Prefix4::containing(x, l).contains(a))
                }
                IpAddr::V6(a) => {
                    let a = u128::from(a);
                    i.v6.iter()
                        .any(|&(x, l)| Prefix6::containing(x, l).contains(a))
                }
            })
            .map(|(k, _)| k)
    }

    /// Whether `ip` is an address of an interface in table `t`.
    pub(super) fn is_ours(&self, t: usize, ip: IpAddr) -> bool {
        self.in_table(t, ip).any(|(_, i)| match ip {
            IpAddr::V4(a) => i.has_v4(a.into()),
            IpAddr::V6(a) => i.has_v6(a.into()),
        })
    }

    /// The adjacency (unheld) for one next hop of a static route in table `t`.
    pub(super) fn resolve_hop(
        &mut self,
        t: usize,
        family_v4: bool,
        hop: &NextHopSpec,
    ) -> Result<u32, String> {
        match hop {
            NextHopSpec::Drop => Ok(ADJ_DROP),
            NextHopSpec::Attached { interface } => {
                let itf = self.interface_index(interface)?;
                Ok(self.adj_for(AdjKey::Glean(itf)))
            }
            NextHopSpec::Via {
                addr,
                interface,
                table,
            } => {
                if addr.is_ipv4() != family_v4 {
                    return Err(format!("next hop {addr} is not of the route's family"));
                }
                // The next hop lives in the next-hop table when one is named (an inter-VRF
                // route), else in the route's own table.
                let nt = match table {
                    Some(id) => self.table_index(*id)?,
                    None => t,
                };
                if self.is_ours(nt, *addr) {
                    return Err(format!("next hop {addr} is an address of this router"));
                }
                let itf = match interface {
                    Some(name) => self.interface_index(name)?,
                    None => self.connected_interface(nt, *addr).ok_or_else(|| {
                        let id = self.table(nt).id;
                        let of = if id == 0 {
                            String::new()
                        } else {
                            format!(" of table {id}")
                        };
                        format!(
                            "next hop {addr} is not on a connected network{of} (recursive \
                             routes are not supported: give the interface)"
                        )
                    })?,
                };
                Ok(self.adj_for(AdjKey::Neighbor(itf, *addr)))
            }
        }
    }

    /// The adjacencies `resolve` makes of each of `hops`, sorted and without repeats (the
    /// members of an ECMP route); on the first error, those already made are let go.
    pub(super) fn members<T>(
        &mut self,
        hops: &[T],
        mut resolve: impl FnMut(&mut Router, &T) -> Result<u32, String>,
    ) -> Result<Vec<u32>, String> {
        let mut members = Vec::with_capacity(hops.len());
        for h in hops {
            match resolve(self, h) {
                Ok(a) => members.push(a),
                Err(e) => {
                    for m in members {
                        self.forget_if_unused(m);
                    }
                    return Err(e);
                }
            }
        }
        members.sort_unstable();
        members.dedup();
        Ok(members)
    }

    /// Add or replace a static route in table `table` (an id). Several next hops make an
    /// ECMP route.
    pub fn add_route(
        &mut self,
        table: u32,
        prefix: IpPrefix,
        hops: &[NextHopSpec],
    ) -> Result<(), String> {
        let t = self.table_index(table)?;
        if hops.is_empty() {
            return Err("a route needs a next hop (via ADDRESS, or drop)".into());
        }
        if let Some(s) = self.source_in(t, prefix) {
            if matches!(
                s,
                RouteSource::Local | RouteSource::Connected | RouteSource::Special
            ) {
                return Err(format!(
                    "{prefix} is a {} route of an interface address; it is not replaced",
                    serde_json::to_value(s)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or("")
                ));
            }
            // A static route takes the prefix over from the kernel's: the listener's next
            // reconcile leaves it alone (it deletes kernel routes only).
        }
        let v4 = matches!(prefix, IpPrefix::V4(_));
        let members = self.members(hops, |r, h| r.resolve_hop(t, v4, h))?;
        let adj = if members.len() == 1 {
            members[0]
        } else {
            self.adj_for(AdjKey::Multipath(members))
        };
        self.set(t, prefix, adj, RouteSource::Static);
        Ok(())
    }

    /// Delete a static (or learnt host) route of table `table` (an id).
    pub fn del_route(&mut self, table: u32, prefix: IpPrefix) -> Result<(), String> {
        let t = self.table_index(table)?;
        match self.source_in(t, prefix) {
            None if table == 0 => Err(format!("no route for {prefix}")),
            None => Err(format!("no route for {prefix} in table {table}")),
            Some(RouteSource::Local | RouteSource::Connected | RouteSource::Special) => Err(
                format!("{prefix} comes from an interface address: delete the address instead"),
            ),
            Some(_) => {
                self.unset(t, prefix);
                Ok(())
            }
        }
    }
}

/// The routes the router makes itself are remembered with their source; a static or kernel
/// route lives only in the FIB (a kernel route is known by its adjacency).
fn remember<P: Eq + Hash>(special: &mut HashMap<P, RouteSource>, p: P, source: RouteSource) {
    if matches!(source, RouteSource::Static | RouteSource::Kernel) {
        special.remove(&p);
    } else {
        special.insert(p, source);
    }
}

/// Only `add_route` sets a static route through `set`: it is one of the configured routes
/// until something else takes its prefix.
fn configure<P: Eq + Hash>(configured: &mut HashSet<P>, p: P, source: RouteSource) {
    if source == RouteSource::Static {
        configured.insert(p);
    } else {
        configured.remove(&p);
    }
}
