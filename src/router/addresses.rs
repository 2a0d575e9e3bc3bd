//! Interface addresses and the routes they bring: local, connected, and for IPv4 subnets the
//! dropped network and broadcast addresses.

use super::{RouteSource, Router};
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
        if self.is_ours(addr) {
            return Err(format!("{addr} is already an address of this router"));
        }
        match addr {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                let net = Prefix4::containing(a, len);
                if let Some(other) = self.connected_owner(IpPrefix::V4(net)) {
                    return Err(format!(
                        "{net} is already connected on {}",
                        self.name(other)
                    ));
                }
                self.view.interfaces[itf].v4.push((a, len));
                self.set(
                    IpPrefix::V4(Prefix4::containing(a, 32)),
                    ADJ_LOCAL,
                    RouteSource::Local,
                );
                if len < 32 {
                    let glean = self.adj_for(AdjKey::Glean(interface));
                    self.view.interfaces[itf].glean = glean;
                    self.set(IpPrefix::V4(net), glean, RouteSource::Connected);
                }
                if len <= 30 {
                    for edge in [net.addr(), net.last()] {
                        self.set(
                            IpPrefix::V4(Prefix4::containing(edge, 32)),
                            ADJ_DROP,
                            RouteSource::Special,
                        );
                    }
                }
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                let net = Prefix6::containing(a, len);
                if let Some(other) = self.connected_owner(IpPrefix::V6(net)) {
                    return Err(format!(
                        "{net} is already connected on {}",
                        self.name(other)
                    ));
                }
                self.view.interfaces[itf].v6.push((a, len));
                self.set(
                    IpPrefix::V6(Prefix6::containing(a, 128)),
                    ADJ_LOCAL,
                    RouteSource::Local,
                );
                if len < 128 {
                    let glean = self.adj_for(AdjKey::Glean(interface));
                    self.view.interfaces[itf].glean = glean;
                    self.set(IpPrefix::V6(net), glean, RouteSource::Connected);
                }
            }
        }
        self.view_dirty = true;
        Ok(())
    }

    /// The interface a connected prefix belongs to, if it is connected.
    fn connected_owner(&self, p: IpPrefix) -> Option<u32> {
        if self.source_of(p) != Some(RouteSource::Connected) {
            return None;
        }
        let adj = match p {
            IpPrefix::V4(p) => self.fib.routes4().get(p)?,
            IpPrefix::V6(p) => self.fib.routes6().get(p)?,
        };
        Some(self.view.adj(adj).interface)
    }

    pub fn del_address(&mut self, interface: u32, addr: IpAddr, len: u8) -> Result<(), String> {
        let itf = interface as usize;
        let found = match addr {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                let list = &mut self.view.interfaces[itf].v4;
                let before = list.len();
                list.retain(|&x| x != (a, len));
                before != list.len()
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                let list = &mut self.view.interfaces[itf].v6;
                let before = list.len();
                list.retain(|&x| x != (a, len));
                before != list.len()
            }
        };
        if !found {
            return Err(format!(
                "{addr}/{len} is not an address of {}",
                self.name(interface)
            ));
        }
        match addr {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                let net = Prefix4::containing(a, len);
                self.unset(IpPrefix::V4(Prefix4::containing(a, 32)));
                if len < 32 {
                    self.unset(IpPrefix::V4(net));
                }
                if len <= 30 {
                    for edge in [net.addr(), net.last()] {
                        self.unset(IpPrefix::V4(Prefix4::containing(edge, 32)));
                    }
                }
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                self.unset(IpPrefix::V6(Prefix6::containing(a, 128)));
                if len < 128 {
                    self.unset(IpPrefix::V6(Prefix6::containing(a, len)));
                }
            }
        }
        self.view_dirty = true;
        Ok(())
    }
}
