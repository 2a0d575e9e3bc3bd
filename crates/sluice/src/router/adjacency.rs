//! Adjacencies: what a FIB leaf means. A route's next hop in the FIB is an index into the
//! adjacency table, and the adjacency says what to do with the packet: drop it, deliver it
//! to the router itself, resolve its destination on a connected network (glean), rewrite the
//! Ethernet header and send it to a neighbour, or pick one of several such neighbours by a
//! flow hash (ECMP).
//!
//! The workers read the table through the published `L3View` (one atomic load per frame); the
//! control plane builds a new view and swaps it in whole.

use super::neighbor_map::{NeighborMap, ProbeQueue, UseFlags, NO_SLOT};
use crate::wire::MacAddress;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdjKind {
    /// Discard (blackhole routes, network and broadcast addresses of a subnet).
    Drop,
    /// For the router itself: ip4-local / ip6-local.
    Local,
    /// A connected network: the destination itself is the neighbour to resolve.
    Glean,
    /// One neighbour on one interface; `complete` once its MAC is known.
    Neighbor,
    /// Equal-cost paths: `members[first..first + count]` of the view, chosen by a flow hash.
    Multipath,
}

/// One adjacency, small and `Copy` so a worker reads it straight out of the view.
#[derive(Clone, Copy, Debug)]
pub struct Adjacency {
    pub kind: AdjKind,
    /// Glean, Neighbor: the interface packets leave by.
    pub interface: u32,
    /// Neighbor: the neighbour's address.
    pub next_hop: IpAddr,
    /// Neighbor: the MAC is known and `rewrite` holds the whole Ethernet header.
    pub complete: bool,
    /// Destination MAC, source MAC, EtherType.
    pub rewrite: [u8; 14],
    /// Glean, Neighbor: the interface's MTU (largest IP packet it sends).
    pub mtu: u32,
    /// Multipath: where its members start in `L3View::members`, and how many.
    pub first: u32,
    pub count: u32,
    /// Neighbor: the neighbour's use flag (`L3View::used`), `NO_SLOT` without one.
    pub slot: u32,
}

impl Adjacency {
    pub const fn simple(kind: AdjKind) -> Adjacency {
        Adjacency {
            kind,
            interface: u32::MAX,
            next_hop: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            complete: false,
            rewrite: [0; 14],
            mtu: 0,
            first: 0,
            count: 0,
            slot: NO_SLOT,
        }
    }
}

/// The adjacency every table starts with at index 0: drop.
pub const ADJ_DROP: u32 = 0;
/// Index 1: for us.
pub const ADJ_LOCAL: u32 = 1;

/// What the dataplane needs to know of one interface to route.
#[derive(Clone, Debug, Default)]
pub struct L3Interface {
    pub mac: MacAddress,
    pub mtu: u32,
    /// IPv4 addresses with prefix lengths; the first is the one replies and errors come from.
    pub v4: Vec<(u32, u8)>,
    pub v6: Vec<(u128, u8)>,
    /// The interface's glean adjacency (its connected networks), `ADJ_DROP` without one: how
    /// the router reaches a link-local address, which no route names, out of this interface.
    pub glean: u32,
    /// The routing table (index) the interface's IPv4 and IPv6 packets are looked up in.
    pub table4: u16,
    pub table6: u16,
    /// The interface has a Linux tap (an lcp pair): what the router does not take itself
    /// goes to the host, and the host hears a copy of ARP and neighbour discovery.
    pub host: bool,
}

impl L3Interface {
    /// An interface routes when it has an address.
    pub fn routed(&self) -> bool {
        !self.v4.is_empty() || !self.v6.is_empty()
    }

    /// The address this interface speaks IPv4 from (0.0.0.0 when it has none: an ARP probe).
    pub fn primary_v4(&self) -> u32 {
        self.v4.first().map_or(0, |a| a.0)
    }

    /// The address on this interface whose subnet holds `ip`, else the primary one.
    pub fn v4_towards(&self, ip: u32) -> u32 {
        self.v4
            .iter()
            .find(|(a, len)| crate::fib::Prefix4::containing(*a, *len).contains(ip))
            .map_or_else(|| self.primary_v4(), |a| a.0)
    }

    pub fn has_v4(&self, ip: u32) -> bool {
        self.v4.iter().any(|a| a.0 == ip)
    }

    pub fn has_v6(&self, ip: u128) -> bool {
        self.v6.iter().any(|a| a.0 == ip)
    }
}

/// Everything the workers route by, apart from the FIB: published whole.
#[derive(Clone, Debug)]
pub struct L3View {
    pub adjs: Vec<Adjacency>,
    pub members: Vec<u32>,
    /// By interface index.
    pub interfaces: Vec<L3Interface>,
    /// Usable neighbours: (interface, address) → MAC. ip4-arp releases held packets once
    /// their neighbour appears here.
    pub neighbors: NeighborMap,
    /// Where the rewrite nodes say a neighbour was used (the control plane ages by it).
    pub used: Arc<UseFlags>,
    /// Unicast probes the control plane wants the resolver nodes to send.
    pub probes: Arc<ProbeQueue>,
    /// Bumped at every publication.
    pub generation: u64,
    /// With many IPv4 addresses (sub-interfaces, tenants): each table's own addresses and
    /// subnet broadcast addresses, so that ip4-lookup's martian-source check is one probe,
    /// not a walk of every interface. Empty with few: the walk is cheaper.
    pub v4_sources: HashMap<(u16, u32), SourceKind>,
}

/// What an IPv4 source address is to a table's router (`L3View::v4_source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// One of its interface addresses.
    Ours,
    /// The broadcast address of one of its subnets up to /30 (RFC 1812 4.2.2.11).
    Broadcast,
}

/// Interface addresses past which `v4_sources` is kept.
const SOURCE_INDEX_MIN: usize = 8;

impl L3View {
    /// What `src` is to table `table`'s interfaces, if anything.
    #[inline(always)]
    pub fn v4_source(&self, table: u16, src: u32) -> Option<SourceKind> {
        if !self.v4_sources.is_empty() {
            return self.v4_sources.get(&(table, src)).copied();
        }
        for itf in self.interfaces.iter().filter(|i| i.table4 == table) {
            for &(a, len) in &itf.v4 {
                if a == src {
                    return Some(SourceKind::Ours);
                }
                let host_bits = u32::MAX.checked_shr(len as u32).unwrap_or(0);
                if len <= 30 && src == a | host_bits {
                    return Some(SourceKind::Broadcast);
                }
            }
        }
        None
    }

    /// Rebuild `v4_sources` from the interfaces (before publication).
    pub fn index_sources(&mut self) {
        self.v4_sources.clear();
        let count: usize = self.interfaces.iter().map(|i| i.v4.len()).sum();
        if count <= SOURCE_INDEX_MIN {
            return;
        }
        for itf in &self.interfaces {
            for &(a, len) in &itf.v4 {
                if len <= 30 {
                    let host_bits = u32::MAX.checked_shr(len as u32).unwrap_or(0);
                    self.v4_sources
                        .entry((itf.table4, a | host_bits))
                        .or_insert(SourceKind::Broadcast);
                }
            }
        }
        // An address of ours wins over another subnet's broadcast address.
        for itf in &self.interfaces {
            for &(a, _) in &itf.v4 {
                self.v4_sources.insert((itf.table4, a), SourceKind::Ours);
            }
        }
    }

    pub fn new(interfaces: Vec<L3Interface>) -> L3View {
        L3View {
            v4_sources: HashMap::new(),
            adjs: vec![
                Adjacency::simple(AdjKind::Drop),
                Adjacency::simple(AdjKind::Local),
            ],
            members: Vec::new(),
            interfaces,
            neighbors: NeighborMap::default(),
            used: Arc::new(UseFlags::new(0)),
            probes: Arc::default(),
            generation: 0,
        }
    }

    /// The adjacency at `index`; a stale index (freed meanwhile) reads as drop.
    #[inline(always)]
    pub fn adj(&self, index: u32) -> &Adjacency {
        const DROP: Adjacency = Adjacency::simple(AdjKind::Drop);
        self.adjs.get(index as usize).unwrap_or(&DROP)
    }

    /// Resolve a multipath adjacency to one member by `hash`; others are returned as they are.
    #[inline(always)]
    pub fn pick(&self, index: u32, hash: u32) -> u32 {
        let a = self.adj(index);
        if a.kind != AdjKind::Multipath || a.count == 0 {
            return index;
        }
        let k = a.first as usize + (hash % a.count) as usize;
        self.members.get(k).copied().unwrap_or(ADJ_DROP)
    }

    pub fn interface(&self, index: u32) -> Option<&L3Interface> {
        self.interfaces.get(index as usize)
    }
}

/// The published view: workers `load()` it once per frame.
pub type SharedL3View = Arc<ArcSwap<L3View>>;

/// The Ethernet header of a packet to `dst` from `src`.
pub fn ethernet_rewrite(dst: MacAddress, src: MacAddress, ethertype: u16) -> [u8; 14] {
    let mut r = [0u8; 14];
    r[..6].copy_from_slice(&dst.0);
    r[6..12].copy_from_slice(&src.0);
    r[12..].copy_from_slice(&ethertype.to_be_bytes());
    r
}
