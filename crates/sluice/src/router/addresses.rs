//! Interface addresses and the routes they bring: local, connected, and for IPv4 subnets the
//! dropped network and broadcast addresses.

use super::{host_prefix, RouteSource, Router};
use crate::fib::parse::IpPrefix;
use crate::fib::{Prefix4, Prefix6};
use crate::router::adjacency::{ADJ_DROP, ADJ_LOCAL};
use crate::router::allocator::AdjKey;
use std::net::IpAddr;

impl Router {
    /// Add an address (with its prefix length) to an interface: its /32 (/128) for us, its
    /// network as connected, and for IPv4 subnets up to /30 the network and broadcast
    /// addresses dropped.
    pub fn add_address(&mut self, interface: u32, addr: IpAddr, len: u8) -> Result<(), String> {
        let itf = interface as usize;
        if itf >= self.view.interfaces.len() {
            return Err(format!("no interface {interface}"));
        }
        let t = self.table_of(interface, addr.is_ipv6());
        if self.is_ours(t, addr) {
            return Err(format!("{addr} is already an address of this router"));
        }
        let net = network(addr, len);
        if let Some(other) = self.connected_owner(t, net) {
            return Err(format!(
                "{net} is already connected on {}",
                self.name(other)
            ));
        }
        match addr {
            IpAddr::V4(a) => self.view.interfaces[itf].v4.push((u32::from(a), len)),
            IpAddr::V6(a) => self.view.interfaces[itf].v6.push((u128::from(a), len)),
        }
        self.set(t, host_prefix(addr), ADJ_LOCAL, RouteSource::Local);
        if len < host_len(addr) {
            let glean = self.adj_for(AdjKey::Glean(interface));
            self.view.interfaces[itf].glean = glean;
            self.set(t, net, glean, RouteSource::Connected);
        }
        for edge in subnet_edges(net) {
            self.set(t, edge, ADJ_DROP, RouteSource::Special);
        }
        self.view_dirty = true;
        Ok(())
    }

    /// The interface a connected prefix of table `t` belongs to, if it is connected.
    fn connected_owner(&self, t: usize, p: IpPrefix) -> Option<u32> {
        if self.source_in(t, p) != Some(RouteSource::Connected) {
            return None;
        }
        let fib = &self.table(t).fib;
        let adj = match p {
            IpPrefix::V4(p) => fib.routes4().get(p)?,
            IpPrefix::V6(p) => fib.routes6().get(p)?,
        };
        Some(self.view.adj(adj).interface)
    }

    pub fn del_address(&mut self, interface: u32, addr: IpAddr, len: u8) -> Result<(), String> {
        let i = &mut self.view.interfaces[interface as usize];
        let found = match addr {
            IpAddr::V4(a) => remove(&mut i.v4, (u32::from(a), len)),
            IpAddr::V6(a) => remove(&mut i.v6, (u128::from(a), len)),
        };
        if !found {
            return Err(format!(
                "{addr}/{len} is not an address of {}",
                self.name(interface)
            ));
        }
        let net = network(addr, len);
        let t = self.table_of(interface, addr.is_ipv6());
        self.unset(t, host_prefix(addr));
        if len < host_len(addr) {
            self.unset(t, net);
        }
        for edge in subnet_edges(net) {
            self.unset(t, edge);
        }
        self.view_dirty = true;
        Ok(())
    }
}

/// The network an interface address is on.
fn network(addr: IpAddr, len: u8) -> IpPrefix {
    match addr {
        IpAddr::V4(a) => IpPrefix::V4(Prefix4::containing(u32::from(a), len)),
        IpAddr::V6(a) => IpPrefix::V6(Prefix6::containing(u128::from(a), len)),
    }
}

/// 32 or 128: the length of a host route of the address's family.
fn host_len(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        32
    } else {
        128
    }
}

/// The network and broadcast addresses of an IPv4 subnet up to /30, which are dropped; none
/// for IPv6 or smaller IPv4 subnets.
fn subnet_edges(net: IpPrefix) -> Vec<IpPrefix> {
    match net {
        IpPrefix::V4(net) if net.len() <= 30 => [net.addr(), net.last()]
            .into_iter()
            .map(|edge| IpPrefix::V4(Prefix4::containing(edge, 32)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Remove `entry` from an interface's address list; whether it was there.
fn remove<A: PartialEq + Copy>(list: &mut Vec<(A, u8)>, entry: (A, u8)) -> bool {
    let before = list.len();
    list.retain(|&x| x != entry);
    before != list.len()
}
