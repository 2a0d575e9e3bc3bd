//! The router's control plane: interface addresses, routes, adjacencies and neighbours, and
//! how they are published to the workers.
//!
//! The FIB's leaves are adjacency indices. `Router` owns the FIB writer and a working copy of
//! the `L3View`; every change is made there and then published by `commit`: first the view
//! (so that new adjacencies exist before any route points at them), then the FIB. Workers
//! never lock: they load both once per frame. A freed adjacency index is not reused until a
//! quarantine has passed, so a worker still holding the previous FIB never sees an index
//! that now means something else.
//!
//! Static routes live only in the FIB writer's route table (a full table is not kept twice);
//! the routes the router makes itself (local, connected, subnet network and broadcast, hosts
//! learnt on a connected network) are remembered with their source.
//!
//! Layout: this file holds the `Router`, its publication (`commit`) and the shared types;
//! `allocator` hands out and frees adjacency indices, `routes` keeps the route tables and
//! static routes, `kernel` the routes learnt from Linux, `addresses` the interface addresses
//! and their routes, `neighbors` the neighbour table, `route_file` loads a route file, and `show` formats what the CLI shows.
//! static routes, `addresses` the interface addresses and their routes, `neighbors` the
//! neighbour table, `route_file` loads a route file, `show` formats what the CLI shows and `saved` lists the
//! static routes `sluice ctl save` writes.
//! `adjacency` is the data plane's side: the adjacencies and the view the workers read.

mod addresses;
pub mod adjacency;
mod allocator;
pub mod commands;
pub mod config;
mod kernel;
pub mod neighbor_map;
mod neighbors;
pub mod nud;
mod offload;
mod route_file;
mod routes;
mod saved;
pub mod section;
mod show;
pub mod tables;

pub use kernel::{KernelHops, KernelOwner, KernelPath, KernelRouteChange};
pub use neighbors::LearnKind;
pub use saved::{SavedHop, SavedRoute};
pub use show::{FibSummary, NeighborTableView, NeighborView, RouteView};
pub use tables::{SharedTables, TableSet, TableView, DEFAULT_TABLE};

use crate::fib::parse::IpPrefix;
use crate::fib::{FibReader, Prefix};
use crate::wire::MacAddress;
use adjacency::{L3Interface, L3View, SharedL3View};
use allocator::AdjKey;
use arc_swap::ArcSwap;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A neighbour a worker heard from (ARP or ND), on its way to the control plane, which
/// completes the adjacencies that wait for it and publishes a new view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighborLearn {
    pub interface: u32,
    pub ip: IpAddr,
    pub mac: MacAddress,
    pub kind: LearnKind,
}

impl NeighborLearn {
    /// It asked for one of our addresses.
    pub fn request(interface: u32, ip: IpAddr, mac: MacAddress) -> NeighborLearn {
        NeighborLearn {
            interface,
            ip,
            mac,
            kind: LearnKind::Request,
        }
    }

    /// An answer to a resolution (an ARP reply to us, a solicited overriding NA).
    pub fn answer(interface: u32, ip: IpAddr, mac: MacAddress) -> NeighborLearn {
        NeighborLearn {
            interface,
            ip,
            mac,
            kind: LearnKind::Answer(nud::Answer {
                solicited: true,
                override_: true,
            }),
        }
    }

    /// A resolution started.
    pub fn solicit(interface: u32, ip: IpAddr) -> NeighborLearn {
        NeighborLearn {
            interface,
            ip,
            mac: MacAddress([0; 6]),
            kind: LearnKind::Solicit,
        }
    }
}

/// Workers hold one of these; `try_send` never blocks a worker (a full channel is a counted
/// drop of the learn, and the neighbour is learnt again from its next packet).
pub type LearnSender = std::sync::mpsc::SyncSender<NeighborLearn>;

/// Who made a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteSource {
    /// An address of ours (/32, /128).
    Local,
    /// The network of an interface address.
    Connected,
    /// The network or broadcast address of a connected IPv4 subnet: dropped.
    Special,
    /// A neighbour resolved on a connected network, installed as a host route.
    Host,
    /// Configured or added by CLI, or loaded from a route file.
    Static,
    /// Learnt from the kernel's routing table (Linux, over netlink).
    Kernel,
}

/// One next hop of a static route, as the user gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextHopSpec {
    /// A neighbour; the interface is found from the connected networks of the route's
    /// table (or of `table`, VPP's next-hop-table, an inter-VRF route) when not given.
    Via {
        addr: IpAddr,
        interface: Option<String>,
        table: Option<u32>,
    },
    /// Straight out of an interface, the destination resolved on the link (the
    /// interface's glean adjacency): a route with no gateway, `dev IF` only.
    Attached { interface: String },
    /// Discard (blackhole).
    Drop,
}

pub struct Router {
    names: Vec<String>,
    /// Routing tables by index; index 0 is table 0. A removed table leaves a hole that the
    /// next one made takes.
    tables: Vec<Option<tables::Table>>,
    shared_tables: SharedTables,
    tables_dirty: bool,
    view: L3View,
    shared: SharedL3View,
    view_dirty: bool,
    keys: HashMap<AdjKey, u32>,
    key_of: Vec<Option<AdjKey>>,
    refs: Vec<u32>,
    /// Freed indices, oldest first, with when they were freed.
    free: VecDeque<(Instant, u32)>,
    /// Freed since the last commit: they join `free` once the commit is published.
    released: Vec<u32>,
    static_neighbors: std::collections::HashSet<(u32, IpAddr)>,
    /// Every neighbour's state and timers.
    nud: nud::Nud,
    /// Which netlink listener put each kernel route in (`kernel`).
    kernel_owners: kernel::KernelOwners,
    route_file: Option<String>,
    route_file_routes: usize,
    load_time: Duration,
}

/// Parse `ADDR/LEN` with host bits allowed (an interface address).
pub fn parse_interface_address(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}' is not ADDRESS/LENGTH"))?;
    let addr: IpAddr = a
        .parse()
        .map_err(|_| format!("'{a}' is not an IPv4 or IPv6 address"))?;
    let len: u8 = l
        .parse()
        .map_err(|_| format!("'{l}' is not a prefix length"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if len == 0 || len > max {
        return Err(format!("prefix length {len} is outside 1..={max}"));
    }
    if addr.is_unspecified() || addr.is_multicast() || addr.is_loopback() {
        return Err(format!("{addr} cannot be an interface address"));
    }
    Ok((addr, len))
}

impl Router {
    /// A router over these interfaces (name, MAC, MTU), with no addresses and no routes.
    pub fn new(interfaces: &[(String, MacAddress, u32)]) -> Router {
        let view = L3View::new(
            interfaces
                .iter()
                .map(|(_, mac, mtu)| L3Interface {
                    mac: *mac,
                    mtu: *mtu,
                    ..Default::default()
                })
                .collect(),
        );
        let shared = Arc::new(ArcSwap::from_pointee(view.clone()));
        let mut r = Router {
            names: interfaces.iter().map(|i| i.0.clone()).collect(),
            tables: vec![Some(tables::Table::new(DEFAULT_TABLE))],
            shared_tables: Default::default(),
            tables_dirty: false,
            refs: vec![0; view.adjs.len()],
            key_of: vec![None; view.adjs.len()],
            view,
            shared,
            view_dirty: false,
            keys: HashMap::new(),
            free: VecDeque::new(),
            released: Vec::new(),
            static_neighbors: Default::default(),
            nud: nud::Nud::new(nud::Times::default()),
            kernel_owners: Default::default(),
            route_file: None,
            route_file_routes: 0,
            load_time: Duration::ZERO,
        };
        r.shared_tables = Arc::new(ArcSwap::from_pointee(r.table_set()));
        r.set_neighbor_times(nud::Times::default());
        r.shared.store(Arc::new(r.view.clone()));
        r.view_dirty = false;
        r
    }

    /// The default table's FIB (offline tools and tests; the lookup nodes read `tables()`).
    pub fn fib_reader(&self) -> FibReader {
        self.table(0).fib.reader()
    }

    pub fn view(&self) -> SharedL3View {
        self.shared.clone()
    }

    /// The working (unpublished until `commit`) view.
    pub fn current(&self) -> &L3View {
        &self.view
    }

    /// A new interface (a sub-interface), at the next index.
    pub fn add_interface(&mut self, name: &str, mac: MacAddress, mtu: u32) -> u32 {
        self.names.push(name.to_string());
        self.view.interfaces.push(L3Interface {
            mac,
            mtu,
            ..Default::default()
        });
        self.view_dirty = true;
        self.tables_dirty = true;
        (self.names.len() - 1) as u32
    }

    /// The newest interface called `name`: a deleted sub-interface or BVI keeps its index,
    /// and one made again with its name comes after it.
    pub fn interface_index(&self, name: &str) -> Result<u32, String> {
        self.names
            .iter()
            .rposition(|n| n == name)
            .map(|i| i as u32)
            .ok_or_else(|| format!("no interface named '{name}'"))
    }

    fn name(&self, interface: u32) -> &str {
        self.names
            .get(interface as usize)
            .map_or("?", |s| s.as_str())
    }

    /// Mark `interface` as having a Linux tap (an lcp pair) or not: the workers punt to it.
    pub fn set_host(&mut self, interface: u32, on: bool) -> Result<(), String> {
        let itf = self
            .view
            .interfaces
            .get_mut(interface as usize)
            .ok_or_else(|| format!("no interface {interface}"))?;
        itf.host = on;
        self.view_dirty = true;
        // Link-local multicast (224.0.0.0/24: OSPF, VRRP, RIPv2) is never forwarded; with a
        // tap in the table it is delivered to the router, where ip4-local punts it to Linux.
        let t = self.table_of(interface, false);
        let hosts = (0..self.view.interfaces.len() as u32)
            .any(|i| self.view.interfaces[i as usize].host && self.table_of(i, false) == t);
        let group = IpPrefix::V4(Prefix::containing(0xe000_0000, 24));
        let present = self.source_in(t, group) == Some(RouteSource::Local);
        if hosts && self.source_in(t, group).is_none() {
            self.set(t, group, adjacency::ADJ_LOCAL, RouteSource::Local);
        } else if !hosts && present {
            self.unset(t, group);
        }
        Ok(())
    }

    /// The interface's addresses with their prefix lengths.
    pub fn address_list(&self, interface: u32) -> Vec<(IpAddr, u8)> {
        let Some(i) = self.view.interfaces.get(interface as usize) else {
            return Vec::new();
        };
        let v4 =
            i.v4.iter()
                .map(|&(a, l)| (IpAddr::from(std::net::Ipv4Addr::from(a)), l));
        let v6 =
            i.v6.iter()
                .map(|&(a, l)| (IpAddr::from(std::net::Ipv6Addr::from(a)), l));
        v4.chain(v6).collect()
    }

    /// Frees the FIB tables a rebuild replaced that no worker holds any more.
    pub fn reclaim_fib(&mut self) -> usize {
        self.tables
            .iter_mut()
            .flatten()
            .map(|t| t.fib.reclaim())
            .sum()
    }

    /// Publish the changes: the view first (new adjacencies), then the FIBs, then the table
    /// set (new tables, interfaces in other tables).
    /// Any change makes the XDP fast path's offloaded flows stale (after it is published:
    /// a flow offered from then on was decided by it). Returns whether anything changed.
    pub fn commit(&mut self) -> bool {
        let mut changed = self.view_dirty || self.tables_dirty;
        if self.view_dirty {
            self.view.index_sources();
            self.view.generation += 1;
            self.shared.store(Arc::new(self.view.clone()));
            self.view_dirty = false;
        }
        for t in self.tables.iter_mut().flatten() {
            let before = t.fib.generation();
            changed |= t.fib.commit() != before;
        }
        if self.tables_dirty {
            self.shared_tables.store(Arc::new(self.table_set()));
            self.tables_dirty = false;
        }
        if changed {
            crate::graph::epoch::bump();
        }
        let now = Instant::now();
        for a in self.released.drain(..) {
            // An index may have been taken again before the commit (same key re-made):
            // only a still-unused one is freed.
            if self.refs[a as usize] == 0 && self.key_of[a as usize].is_none() {
                self.free.push_back((now, a));
            }
        }
        changed
    }
}

/// The /32 or /128 of an address.
pub fn host_prefix(ip: IpAddr) -> IpPrefix {
    match ip {
        IpAddr::V4(a) => IpPrefix::V4(Prefix::containing(u32::from(a), 32)),
        IpAddr::V6(a) => IpPrefix::V6(Prefix::containing(u128::from(a), 128)),
    }
}

#[cfg(test)]
mod tests;

/// For tests elsewhere in the crate.
#[cfg(test)]
pub mod test_support {
    use super::Router;
    use crate::wire::MacAddress;

    /// d0 (02:..:a0, 192.0.2.1/24) and d1 (02:..:a1, 198.51.100.1/24), nothing committed.
    pub fn two_ports() -> Router {
        let mut r = Router::new(&[
            ("d0".into(), MacAddress([2, 0, 0, 0, 0, 0xa0]), 1500),
            ("d1".into(), MacAddress([2, 0, 0, 0, 0, 0xa1]), 1500),
        ]);
        r.add_address(0, "192.0.2.1".parse().unwrap(), 24).unwrap();
        r.add_address(1, "198.51.100.1".parse().unwrap(), 24)
            .unwrap();
        r
    }
}
