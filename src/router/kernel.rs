//! Routes learnt from the kernel (Linux's routing table, over netlink): added, replaced and
//! deleted one by one by the listener, and listed for its reconcile.
//!
//! A kernel route points at adjacencies of its own (`AdjKey::Kernel*`), so its source is
//! known from the FIB's leaf: a full table of kernel routes costs no per-route record besides
//! the FIB's route table. A kernel route never takes a prefix from an interface address's
//! routes or from a static route, and only kernel routes are deleted through here.

use super::{RouteSource, Router};
use crate::fib::parse::IpPrefix;
use crate::fib::{Prefix4, Prefix6};
use crate::router::allocator::AdjKey;
use std::net::IpAddr;

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

    /// Add or replace a route from the kernel in table `table` (an id). Refused where an
    /// interface address's route or a static route holds the prefix; replaces a learnt host
    /// route.
    pub fn set_kernel_route(
        &mut self,
        table: u32,
        prefix: IpPrefix,
        hops: &KernelHops,
    ) -> Result<KernelRouteChange, String> {
        let t = self.table_index(table)?;
        let before = self.route_adj(t, prefix);
        let existed = match before.map(|adj| (adj, self.source_in(t, prefix))) {
            None => false,
            Some((_, Some(RouteSource::Kernel | RouteSource::Host))) => true,
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
        self.set(t, prefix, adj, RouteSource::Kernel);
        Ok(if existed {
            KernelRouteChange::Replaced
        } else {
            KernelRouteChange::Added
        })
    }

    /// Delete a route from the kernel; `false` when the prefix has no kernel route (none,
    /// or one of another source, which stays).
    pub fn del_kernel_route(&mut self, table: u32, prefix: IpPrefix) -> Result<bool, String> {
        let t = self.table_index(table)?;
        if self.source_in(t, prefix) != Some(RouteSource::Kernel) {
            return Ok(false);
        }
        Ok(self.unset(t, prefix))
    }

    /// The prefixes of table `table`'s kernel routes, each family in prefix order.
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
