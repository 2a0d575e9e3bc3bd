//! Neighbours: learnt from the workers (ARP, ND) or set from the CLI; they complete the
//! adjacencies that wait for them and bring host routes on connected networks.

use super::{host_prefix, NeighborLearn, RouteSource, Router, MAX_NEIGHBORS};
use crate::router::allocator::AdjKey;
use std::net::IpAddr;

/// Who tells the router of a neighbour.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A worker heard it (ARP, ND).
    Learnt,
    /// The CLI or the configuration: never replaced by learning.
    Static,
    /// Linux's neighbour table, over netlink.
    Kernel,
}

impl Router {
    /// A neighbour heard on `interface`. Completes the adjacencies that wait for it and, for
    /// a host on a connected network without a route of its own, installs a host route so
    /// that its packets no longer need the glean path. Returns whether anything changed.
    pub fn learn(&mut self, n: NeighborLearn) -> Result<bool, String> {
        self.set_neighbor(n, Origin::Learnt)
    }

    /// A neighbour from the CLI (static: a learn never replaces it).
    pub fn set_static_neighbor(&mut self, n: NeighborLearn) -> Result<bool, String> {
        self.set_neighbor(n, Origin::Static)
    }

    /// A neighbour Linux knows on the interface's tap: taken like a static one (also off
    /// the connected networks, a gateway of a kernel route may be on-link only), but learning
    /// may replace it as it replaces a learnt one.
    pub fn seed_neighbor(&mut self, n: NeighborLearn) -> Result<bool, String> {
        self.set_neighbor(n, Origin::Kernel)
    }

    fn set_neighbor(&mut self, n: NeighborLearn, origin: Origin) -> Result<bool, String> {
        let static_entry = origin == Origin::Static;
        let key = (n.interface, n.ip);
        if n.interface as usize >= self.view.interfaces.len() {
            return Err(format!("no interface {}", n.interface));
        }
        if n.mac.0[0] & 1 != 0 || n.mac.0 == [0; 6] {
            return Err(format!("{} is not a unicast MAC", n.mac));
        }
        if !static_entry && self.static_neighbors.contains(&key) {
            return Ok(false);
        }
        // Link-local addresses are on the link of every interface that speaks IPv6 (RFC 4291
        // 2.5.6): our replies and errors to them are resolved like any neighbour.
        let link_local = match n.ip {
            IpAddr::V6(a) => {
                crate::wire::ipv6::is_link_local(u128::from(a))
                    && !self.view.interfaces[n.interface as usize].v6.is_empty()
            }
            IpAddr::V4(_) => false,
        };
        let t = self.table_of(n.interface, n.ip.is_ipv6());
        let connected = self.connected_interface(t, n.ip) == Some(n.interface);
        if !connected && origin == Origin::Learnt && !link_local {
            return Err(format!(
                "{} is not on a connected network of {}",
                n.ip,
                self.name(n.interface)
            ));
        }
        if self.view.neighbors.get(&key) == Some(&n.mac) {
            if static_entry {
                self.static_neighbors.insert(key);
            }
            return Ok(false);
        }
        if !self.view.neighbors.contains_key(&key) && self.view.neighbors.len() >= MAX_NEIGHBORS {
            return Err(format!("neighbour table full ({MAX_NEIGHBORS})"));
        }
        self.view.neighbors.insert(key, n.mac);
        if static_entry {
            self.static_neighbors.insert(key);
        }
        self.view_dirty = true;
        let rewrite = self.neighbor_rewrite(n.interface, n.ip);
        for key in [
            AdjKey::Neighbor(n.interface, n.ip),
            AdjKey::KernelNeighbor(n.interface, n.ip),
        ] {
            if let (Some(&adj), Some(r)) = (self.keys.get(&key), rewrite) {
                let a = &mut self.view.adjs[adj as usize];
                a.rewrite = r;
                a.complete = true;
            }
        }
        // A host route, unless something more specific than the connected route is there.
        if connected {
            let host = host_prefix(n.ip);
            if self.source_in(t, host).is_none() {
                let adj = self.adj_for(AdjKey::Neighbor(n.interface, n.ip));
                self.set(t, host, adj, RouteSource::Host);
            }
        }
        Ok(true)
    }

    /// Remove a neighbour (and its host route); its adjacencies become incomplete.
    pub fn del_neighbor(&mut self, interface: u32, ip: IpAddr) -> Result<(), String> {
        if self.view.neighbors.remove(&(interface, ip)).is_none() {
            return Err(format!("no neighbour {ip} on {}", self.name(interface)));
        }
        self.static_neighbors.remove(&(interface, ip));
        self.view_dirty = true;
        for key in [
            AdjKey::Neighbor(interface, ip),
            AdjKey::KernelNeighbor(interface, ip),
        ] {
            if let Some(&adj) = self.keys.get(&key) {
                self.view.adjs[adj as usize].complete = false;
            }
        }
        let host = host_prefix(ip);
        let t = self.table_of(interface, ip.is_ipv6());
        if self.source_in(t, host) == Some(RouteSource::Host) {
            self.unset(t, host);
        }
        Ok(())
    }
}
