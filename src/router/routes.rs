//! Route tables: the FIB writer's routes with the source of each one the router made itself,
//! and the static routes of the configuration and the CLI.

use super::{NextHopSpec, RouteSource, Router};
use crate::fib::parse::IpPrefix;
use crate::fib::{Prefix4, Prefix6};
use crate::router::adjacency::ADJ_DROP;
use crate::router::allocator::AdjKey;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;

impl Router {
    /// Point the route for `p` at `adj` (held), releasing what it pointed at, and remember
    /// who made it.
    pub(super) fn set(&mut self, p: IpPrefix, adj: u32, source: RouteSource) {
        self.hold(adj);
        // Our indices are far below the FIB's reserved values, so this cannot fail.
        let old = match p {
            IpPrefix::V4(p) => {
                remember(&mut self.special4, p, source);
                self.fib.add4(p, adj)
            }
            IpPrefix::V6(p) => {
                remember(&mut self.special6, p, source);
                self.fib.add6(p, adj)
            }
        };
        if let Some(old) = old.ok().flatten() {
            self.release(old);
        }
    }

    pub(super) fn unset(&mut self, p: IpPrefix) -> bool {
        let old = match p {
            IpPrefix::V4(p) => {
                self.special4.remove(&p);
                self.fib.del4(p)
            }
            IpPrefix::V6(p) => {
                self.special6.remove(&p);
                self.fib.del6(p)
            }
        };
        match old {
            Some(adj) => {
                self.release(adj);
                true
            }
            None => false,
        }
    }

    /// The source of the route for exactly `p`, if there is one.
    pub fn source_of(&self, p: IpPrefix) -> Option<RouteSource> {
        match p {
            IpPrefix::V4(p) => self.fib.routes4().get(p).map(|_| {
                self.special4
                    .get(&p)
                    .copied()
                    .unwrap_or(RouteSource::Static)
            }),
            IpPrefix::V6(p) => self.fib.routes6().get(p).map(|_| {
                self.special6
                    .get(&p)
                    .copied()
                    .unwrap_or(RouteSource::Static)
            }),
        }
    }

    /// The interface whose connected network holds `ip`.
    pub(super) fn connected_interface(&self, ip: IpAddr) -> Option<u32> {
        self.view
            .interfaces
            .iter()
            .position(|i| match ip {
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
            .map(|i| i as u32)
    }

    pub(super) fn is_ours(&self, ip: IpAddr) -> bool {
        self.view.interfaces.iter().any(|i| match ip {
            IpAddr::V4(a) => i.has_v4(a.into()),
            IpAddr::V6(a) => i.has_v6(a.into()),
        })
    }

    /// The adjacency (unheld) for one next hop of a static route.
    pub(super) fn resolve_hop(
        &mut self,
        family_v4: bool,
        hop: &NextHopSpec,
    ) -> Result<u32, String> {
        match hop {
            NextHopSpec::Drop => Ok(ADJ_DROP),
            NextHopSpec::Via { addr, interface } => {
                if addr.is_ipv4() != family_v4 {
                    return Err(format!("next hop {addr} is not of the route's family"));
                }
                if self.is_ours(*addr) {
                    return Err(format!("next hop {addr} is an address of this router"));
                }
                let itf = match interface {
                    Some(name) => self.interface_index(name)?,
                    None => self.connected_interface(*addr).ok_or_else(|| {
                        format!(
                            "next hop {addr} is not on a connected network (recursive routes \
                             are not supported: give the interface)"
                        )
                    })?,
                };
                Ok(self.adj_for(AdjKey::Neighbor(itf, *addr)))
            }
        }
    }

    /// Add or replace a static route. Several next hops make an ECMP route.
    pub fn add_route(&mut self, prefix: IpPrefix, hops: &[NextHopSpec]) -> Result<(), String> {
        if hops.is_empty() {
            return Err("a route needs a next hop (via ADDRESS, or drop)".into());
        }
        if let Some(s) = self.source_of(prefix) {
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
        }
        let v4 = matches!(prefix, IpPrefix::V4(_));
        let mut members = Vec::with_capacity(hops.len());
        for h in hops {
            match self.resolve_hop(v4, h) {
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
        let adj = if members.len() == 1 {
            members[0]
        } else {
            self.adj_for(AdjKey::Multipath(members))
        };
        self.set(prefix, adj, RouteSource::Static);
        Ok(())
    }

    /// Delete a static (or learnt host) route.
    pub fn del_route(&mut self, prefix: IpPrefix) -> Result<(), String> {
        match self.source_of(prefix) {
            None => Err(format!("no route for {prefix}")),
            Some(RouteSource::Local | RouteSource::Connected | RouteSource::Special) => Err(
                format!("{prefix} comes from an interface address: delete the address instead"),
            ),
            Some(_) => {
                self.unset(prefix);
                Ok(())
            }
        }
    }
}

/// The routes the router makes itself are remembered with their source; a static route lives
/// only in the FIB.
fn remember<P: Eq + Hash>(special: &mut HashMap<P, RouteSource>, p: P, source: RouteSource) {
    if source == RouteSource::Static {
        special.remove(&p);
    } else {
        special.insert(p, source);
    }
}
