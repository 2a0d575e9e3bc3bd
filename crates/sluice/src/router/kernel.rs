//! Routes learnt from the kernel (Linux's routing table, over netlink): added, replaced and
//! deleted one by one by the listener, and listed for its reconcile.
//!
//! A kernel route points at adjacencies of its own (`AdjKey::Kernel*`), so its source is
//! known from the FIB's leaf: a full table of kernel routes costs no per-route record besides
//! the FIB's route table. A kernel route never takes a prefix from an interface address's
//! routes or from a static route, and only kernel routes are deleted through here.
//!
//! Each kernel route has an owner, the listener (one per namespace) that put it in, so that
//! one listener's reconcile deletes only its own routes. Still no record per route in the
//! usual case: a table's kernel routes belong to the listener that put the first one in,
//! and only the routes another listener put in the same table are recorded one by one. A
//! prefix another listener holds in the table is refused (the first holder keeps it), so
//! one namespace cannot take over another's route.

use super::{RouteSource, Router};
use crate::fib::parse::IpPrefix;
use crate::fib::{Prefix4, Prefix6};
use crate::router::allocator::AdjKey;
use std::collections::HashMap;
use std::net::IpAddr;

/// Who put a kernel route in: a netlink listener's id.
pub type KernelOwner = u32;

/// The owners of the kernel routes, by table id: the table's owner, and the routes of
/// other owners one by one.
#[derive(Default)]
pub(super) struct KernelOwners {
    tables: HashMap<u32, TableOwners>,
}

struct TableOwners {
    owner: KernelOwner,
    /// Kernel routes of owners other than `owner`. An entry may outlive its route (taken
    /// over by a static route): it counts only while the prefix holds a kernel route, and
    /// the next kernel route for the prefix sets it again.
    others: HashMap<IpPrefix, KernelOwner>,
}

impl KernelOwners {
    /// The owner of table `table`'s kernel route for `p` (if it has one).
    fn owner(&self, table: u32, p: IpPrefix) -> Option<KernelOwner> {
        let t = self.tables.get(&table)?;
        Some(t.others.get(&p).copied().unwrap_or(t.owner))
    }

    /// `owner` now holds `p` in `table`; `empty`: the table had no kernel route before.
    fn set(&mut self, table: u32, p: IpPrefix, owner: KernelOwner, empty: bool) {
        let t = self.tables.entry(table).or_insert_with(|| TableOwners {
            owner,
            others: HashMap::new(),
        });
        if empty {
            t.owner = owner;
            t.others.clear();
        }
        if owner == t.owner {
            t.others.remove(&p);
        } else {
            t.others.insert(p, owner);
        }
    }

    fn forget(&mut self, table: u32, p: IpPrefix) {
        if let Some(t) = self.tables.get_mut(&table) {
            t.others.remove(&p);
        }
    }
}

/// One path of a kernel route: out of a sluice interface, to a gateway or (none) to the
/// destination itself on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelPath {
    pub interface: u32,
    pub gateway: Option<IpAddr>,
}

/// Where a kernel route sends its packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelHops {
    /// blackhole, unreachable, prohibit.
    Drop,
    /// One path, or several (ECMP).
    Paths(Vec<KernelPath>),
}

/// What `set_kernel_route` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelRouteChange {
    Added,
    Replaced,
    /// The route was there already with these next hops.
    Unchanged,
}

impl Router {
    /// The adjacency (unheld) for a kernel route's next hops in table index `t`.
    fn kernel_adj(&mut self, t: usize, prefix: IpPrefix, hops: &KernelHops) -> Result<u32, String> {
        let v4 = matches!(prefix, IpPrefix::V4(_));
        let paths = match hops {
            KernelHops::Drop => return Ok(self.adj_for(AdjKey::KernelDrop)),
            KernelHops::Paths(p) if p.is_empty() => {
                return Err("a route needs a next hop".into());
            }
            KernelHops::Paths(p) => p,
        };
        let members = self.members(paths, |r, path| r.kernel_member(t, v4, path))?;
        Ok(if members.len() == 1 {
            members[0]
        } else {
            self.adj_for(AdjKey::KernelMultipath(members))
        })
    }

    fn kernel_member(&mut self, t: usize, v4: bool, path: &KernelPath) -> Result<u32, String> {
        if path.interface as usize >= self.view.interfaces.len() {
            return Err(format!("no interface {}", path.interface));
        }
        Ok(match path.gateway {
            None => self.adj_for(AdjKey::KernelGlean(path.interface)),
            Some(gw) => {
                if gw.is_ipv4() != v4 {
                    return Err(format!("gateway {gw} is not of the route's family"));
                }
                if self.is_ours(t, gw) {
                    return Err(format!("gateway {gw} is an address of this router"));
                }
                self.adj_for(AdjKey::KernelNeighbor(path.interface, gw))
            }
        })
    }

    /// Add or replace `owner`'s route from the kernel in table `table` (an id). Refused
    /// where an interface address's route, a static route or another owner's kernel route
    /// holds the prefix; replaces a learnt host route.
    pub fn set_kernel_route(
        &mut self,
        owner: KernelOwner,
        table: u32,
        prefix: IpPrefix,
        hops: &KernelHops,
    ) -> Result<KernelRouteChange, String> {
        let t = self.table_index(table)?;
        let before = self.route_adj(t, prefix);
        let existed = match before.map(|adj| (adj, self.source_in(t, prefix))) {
            None => false,
            Some((_, Some(RouteSource::Kernel))) => {
                if self.kernel_owners.owner(table, prefix) != Some(owner) {
                    return Err(format!(
                        "{prefix} is held by another namespace's kernel route"
                    ));
                }
                true
            }
            Some((_, Some(RouteSource::Host))) => true,
            Some((_, Some(s))) => {
                return Err(format!(
                    "{prefix} is held by a {} route",
                    serde_json::to_value(s)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or("")
                ))
            }
            Some((_, None)) => false,
        };
        let adj = self.kernel_adj(t, prefix, hops)?;
        if before == Some(adj) {
            return Ok(KernelRouteChange::Unchanged);
        }
        let (k4, k6) = self.kernel_route_count(table);
        self.kernel_owners.set(table, prefix, owner, k4 + k6 == 0);
        self.set(t, prefix, adj, RouteSource::Kernel);
        Ok(if existed {
            KernelRouteChange::Replaced
        } else {
            KernelRouteChange::Added
        })
    }

    /// Delete `owner`'s route from the kernel; `false` when the prefix has no kernel route
    /// of `owner` (none, another owner's or one of another source, which stays).
    pub fn del_kernel_route(
        &mut self,
        owner: KernelOwner,
        table: u32,
        prefix: IpPrefix,
    ) -> Result<bool, String> {
        let t = self.table_index(table)?;
        if self.source_in(t, prefix) != Some(RouteSource::Kernel)
            || self.kernel_owners.owner(table, prefix) != Some(owner)
        {
            return Ok(false);
        }
        self.kernel_owners.forget(table, prefix);
        Ok(self.unset(t, prefix))
    }

    /// The prefixes of `owner`'s kernel routes in table `table`, each family in prefix
    /// order: what its reconcile may delete.
    pub fn owned_kernel_prefixes(
        &self,
        owner: KernelOwner,
        table: u32,
    ) -> Result<(Vec<Prefix4>, Vec<Prefix6>), String> {
        let Some(owners) = self.kernel_owners.tables.get(&table) else {
            self.table_index(table)?;
            return Ok((Vec::new(), Vec::new()));
        };
        let mine = |p: IpPrefix| owners.others.get(&p).copied().unwrap_or(owners.owner) == owner;
        if owners.owner == owner {
            let (mut v4, mut v6) = self.kernel_prefixes(table)?;
            if !owners.others.is_empty() {
                v4.retain(|&p| mine(IpPrefix::V4(p)));
                v6.retain(|&p| mine(IpPrefix::V6(p)));
            }
            return Ok((v4, v6));
        }
        let t = self.table_index(table)?;
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for (&p, &o) in &owners.others {
            if o != owner || self.source_in(t, p) != Some(RouteSource::Kernel) {
                continue;
            }
            match p {
                IpPrefix::V4(p) => v4.push(p),
                IpPrefix::V6(p) => v6.push(p),
            }
        }
        v4.sort_unstable();
        v6.sort_unstable();
        Ok((v4, v6))
    }

    /// The prefixes of table `table`'s kernel routes (of every owner), each family in
    /// prefix order.
    pub fn kernel_prefixes(&self, table: u32) -> Result<(Vec<Prefix4>, Vec<Prefix6>), String> {
        let t = self.table_index(table)?;
        let tb = self.table(t);
        let v4 = tb
            .fib
            .routes4()
            .iter()
            .filter(|&(p, adj)| !tb.special4.contains_key(&p) && self.is_kernel_adj(adj))
            .map(|r| r.0)
            .collect();
        let v6 = tb
            .fib
            .routes6()
            .iter()
            .filter(|&(p, adj)| !tb.special6.contains_key(&p) && self.is_kernel_adj(adj))
            .map(|r| r.0)
            .collect();
        Ok((v4, v6))
    }

    /// How many IPv4 and IPv6 routes of table `id` came from the kernel.
    pub fn kernel_route_count(&self, id: u32) -> (usize, usize) {
        self.table_index(id)
            .map_or((0, 0), |t| (self.table(t).kernel4, self.table(t).kernel6))
    }

    /// Until the next commit, route changes touch only the FIBs' route tables and the
    /// commit builds each changed FIB anew, once (`FibWriter::set_deferred`): for a batch
    /// that changes a good part of the tables.
    pub fn defer_fib_updates(&mut self) {
        for t in self.tables.iter_mut().flatten() {
            t.fib.set_deferred(true);
        }
    }

    /// Routes of both families in all tables.
    pub fn route_total(&self) -> usize {
        self.tables
            .iter()
            .flatten()
            .map(|t| t.fib.routes4().len() + t.fib.routes6().len())
            .sum()
    }

    /// Whether table `id` exists.
    pub fn has_table(&self, id: u32) -> bool {
        self.table_index(id).is_ok()
    }

    /// The ids of the tables interface `itf` routes IPv4 and IPv6 in.
    pub fn interface_table_ids(&self, itf: u32) -> [u32; 2] {
        [false, true].map(|v6| self.table(self.table_of(itf, v6)).id)
    }

    /// The ids of the tables that exist.
    pub fn table_ids(&self) -> Vec<u32> {
        self.tables.iter().flatten().map(|t| t.id).collect()
    }

    /// The adjacency of the route for exactly `p` in table index `t`.
    fn route_adj(&self, t: usize, p: IpPrefix) -> Option<u32> {
        let fib = &self.table(t).fib;
        match p {
            IpPrefix::V4(p) => fib.routes4().get(p),
            IpPrefix::V6(p) => fib.routes6().get(p),
        }
    }

    /// The interface's name (`?` past the end).
    pub fn interface_name(&self, interface: u32) -> &str {
        self.name(interface)
    }

    /// How many interfaces there are (sub-interfaces included).
    pub fn interface_count(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
#[path = "kernel_tests.rs"]
mod tests;
