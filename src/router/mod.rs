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

pub mod adjacency;

use crate::fib::parse::{IpPrefix, Route};
use crate::fib::{FibMemory, FibReader, FibWriter, Prefix, Prefix4, Prefix6};
use crate::wire::MacAddress;
use adjacency::{
    ethernet_rewrite, AdjKind, Adjacency, L3Interface, L3View, SharedL3View, ADJ_DROP, ADJ_LOCAL,
};
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
}

/// Workers hold one of these; `try_send` never blocks a worker (a full channel is a counted
/// drop of the learn, and the neighbour is learnt again from its next packet).
pub type LearnSender = std::sync::mpsc::SyncSender<NeighborLearn>;

/// How long a freed adjacency index waits before it is reused: far longer than any frame
/// holds a FIB or view.
const ADJ_QUARANTINE: Duration = Duration::from_secs(2);
/// Neighbours kept at most; more are refused (a scan of a /16 must not eat the memory).
pub const MAX_NEIGHBORS: usize = 65_536;

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
}

/// One next hop of a static route, as the user gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextHopSpec {
    /// A neighbour; the interface is found from the connected networks when not given.
    Via {
        addr: IpAddr,
        interface: Option<String>,
    },
    /// Discard (blackhole).
    Drop,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum AdjKey {
    Glean(u32),
    Neighbor(u32, IpAddr),
    Multipath(Vec<u32>),
}

/// What the router says about one route, for `show ip fib`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RouteView {
    pub prefix: String,
    pub source: RouteSource,
    pub adjacency: u32,
    /// One line per path: "via 198.51.100.2 d1 (52:54:00:..)", "glean d0", "drop", "local".
    pub paths: Vec<String>,
}

/// `show ip fib summary`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FibSummary {
    pub v4_routes: usize,
    pub v6_routes: usize,
    pub by_source: Vec<(RouteSource, usize)>,
    pub adjacencies: usize,
    pub neighbors: usize,
    pub memory: FibMemory,
    pub route_file: Option<String>,
    pub route_file_routes: usize,
    pub load_seconds: f64,
}

/// `show ip neighbors`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NeighborView {
    pub interface: String,
    pub ip: IpAddr,
    pub mac: String,
    pub static_entry: bool,
}

pub struct Router {
    names: Vec<String>,
    fib: FibWriter,
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
    special4: HashMap<Prefix4, RouteSource>,
    special6: HashMap<Prefix6, RouteSource>,
    static_neighbors: std::collections::HashSet<(u32, IpAddr)>,
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
        Router {
            names: interfaces.iter().map(|i| i.0.clone()).collect(),
            fib: FibWriter::new(),
            refs: vec![0; view.adjs.len()],
            key_of: vec![None; view.adjs.len()],
            view,
            shared,
            view_dirty: false,
            keys: HashMap::new(),
            free: VecDeque::new(),
            released: Vec::new(),
            special4: HashMap::new(),
            special6: HashMap::new(),
            static_neighbors: Default::default(),
            route_file: None,
            route_file_routes: 0,
            load_time: Duration::ZERO,
        }
    }

    pub fn fib_reader(&self) -> FibReader {
        self.fib.reader()
    }

    pub fn view(&self) -> SharedL3View {
        self.shared.clone()
    }

    /// The working (unpublished until `commit`) view.
    pub fn current(&self) -> &L3View {
        &self.view
    }

    pub fn interface_index(&self, name: &str) -> Result<u32, String> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| i as u32)
            .ok_or_else(|| format!("no interface named '{name}'"))
    }

    fn name(&self, interface: u32) -> &str {
        self.names
            .get(interface as usize)
            .map_or("?", |s| s.as_str())
    }

    // ---- adjacencies ----

    fn neighbor_rewrite(&self, interface: u32, ip: IpAddr) -> Option<[u8; 14]> {
        let mac = self.view.neighbors.get(&(interface, ip))?;
        let ours = self.view.interfaces[interface as usize].mac;
        let ethertype = if ip.is_ipv4() { 0x0800 } else { 0x86dd };
        Some(ethernet_rewrite(*mac, ours, ethertype))
    }

    /// The adjacency for `key`, made if it does not exist yet (with no references).
    fn adj_for(&mut self, key: AdjKey) -> u32 {
        if let Some(&i) = self.keys.get(&key) {
            return i;
        }
        let mut adj = Adjacency::simple(AdjKind::Drop);
        match &key {
            AdjKey::Glean(itf) => {
                adj.kind = AdjKind::Glean;
                adj.interface = *itf;
                adj.mtu = self.view.interfaces[*itf as usize].mtu;
            }
            AdjKey::Neighbor(itf, ip) => {
                adj.kind = AdjKind::Neighbor;
                adj.interface = *itf;
                adj.next_hop = *ip;
                adj.mtu = self.view.interfaces[*itf as usize].mtu;
                if let Some(r) = self.neighbor_rewrite(*itf, *ip) {
                    adj.rewrite = r;
                    adj.complete = true;
                }
            }
            AdjKey::Multipath(members) => {
                adj.kind = AdjKind::Multipath;
                adj.first = self.view.members.len() as u32;
                adj.count = members.len() as u32;
                self.view.members.extend_from_slice(members);
                for &m in members {
                    self.hold(m);
                }
            }
        }
        let now = Instant::now();
        let index = match self.free.front() {
            Some(&(at, i)) if now.duration_since(at) >= ADJ_QUARANTINE => {
                self.free.pop_front();
                self.view.adjs[i as usize] = adj;
                i
            }
            _ => {
                self.view.adjs.push(adj);
                self.refs.push(0);
                self.key_of.push(None);
                (self.view.adjs.len() - 1) as u32
            }
        };
        self.key_of[index as usize] = Some(key.clone());
        self.keys.insert(key, index);
        self.view_dirty = true;
        index
    }

    fn hold(&mut self, adj: u32) {
        if adj > ADJ_LOCAL {
            self.refs[adj as usize] += 1;
        }
    }

    fn release(&mut self, adj: u32) {
        if adj <= ADJ_LOCAL || adj as usize >= self.refs.len() {
            return;
        }
        let r = &mut self.refs[adj as usize];
        *r = r.saturating_sub(1);
        if *r > 0 {
            return;
        }
        if let Some(key) = self.key_of[adj as usize].take() {
            self.keys.remove(&key);
            if let AdjKey::Glean(itf) = key {
                self.view.interfaces[itf as usize].glean = ADJ_DROP;
            }
            if let AdjKey::Multipath(members) = key {
                for m in members {
                    self.release(m);
                }
            }
        }
        // The adjacency stays as it is until reused: a worker may still reach it through
        // the FIB it pinned before this change.
        self.released.push(adj);
    }

    /// Drop an adjacency made for a route that was then refused.
    fn forget_if_unused(&mut self, adj: u32) {
        if adj > ADJ_LOCAL && self.refs[adj as usize] == 0 {
            self.refs[adj as usize] = 1;
            self.release(adj);
        }
    }

    // ---- routes ----

    fn set4(&mut self, p: Prefix4, adj: u32, source: RouteSource) {
        self.hold(adj);
        // Our indices are far below the FIB's reserved values, so this cannot fail.
        let old = self.fib.add4(p, adj).ok().flatten();
        if let Some(old) = old {
            self.release(old);
        }
        if source == RouteSource::Static {
            self.special4.remove(&p);
        } else {
            self.special4.insert(p, source);
        }
    }

    fn set6(&mut self, p: Prefix6, adj: u32, source: RouteSource) {
        self.hold(adj);
        let old = self.fib.add6(p, adj).ok().flatten();
        if let Some(old) = old {
            self.release(old);
        }
        if source == RouteSource::Static {
            self.special6.remove(&p);
        } else {
            self.special6.insert(p, source);
        }
    }

    fn unset(&mut self, p: IpPrefix) -> bool {
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
    fn connected_interface(&self, ip: IpAddr) -> Option<u32> {
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

    fn is_ours(&self, ip: IpAddr) -> bool {
        self.view.interfaces.iter().any(|i| match ip {
            IpAddr::V4(a) => i.has_v4(a.into()),
            IpAddr::V6(a) => i.has_v6(a.into()),
        })
    }

    /// The adjacency (unheld) for one next hop of a static route.
    fn resolve_hop(&mut self, family_v4: bool, hop: &NextHopSpec) -> Result<u32, String> {
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
        match prefix {
            IpPrefix::V4(p) => self.set4(p, adj, RouteSource::Static),
            IpPrefix::V6(p) => self.set6(p, adj, RouteSource::Static),
        }
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

    /// Load routes read from a file (before the workers start: the FIB is built in one go).
    /// A next hop is an address (on a connected network), an interface name (the prefix is
    /// then on-link there), or a dropping type (blackhole, unreachable, prohibit, throw, drop).
    pub fn load_routes(&mut self, file: &str, routes: &[Route]) -> Result<usize, String> {
        let start = Instant::now();
        let mut by_text: HashMap<&str, u32> = HashMap::new();
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for r in routes {
            // A prefix that already has a route (an interface address, config) keeps it.
            if self.source_of(r.prefix).is_some() {
                continue;
            }
            let adj = match by_text.get(r.next_hop.as_str()) {
                Some(&a) => a,
                None => {
                    let a = self.file_next_hop(r)?;
                    by_text.insert(&r.next_hop, a);
                    a
                }
            };
            match r.prefix {
                IpPrefix::V4(p) => v4.push((p, adj)),
                IpPrefix::V6(p) => v6.push((p, adj)),
            }
        }
        let n = v4.len() + v6.len();
        let adjs: Vec<u32> = v4
            .iter()
            .map(|r| r.1)
            .chain(v6.iter().map(|r| r.1))
            .collect();
        for a in adjs {
            self.hold(a);
        }
        let existing4: Vec<(Prefix4, u32)> = self.fib.routes4().iter().collect();
        let existing6: Vec<(Prefix6, u32)> = self.fib.routes6().iter().collect();
        // The existing routes come last, so that they win over duplicates.
        self.fib = FibWriter::with_routes(
            v4.into_iter().chain(existing4),
            v6.into_iter().chain(existing6),
        )
        .map_err(|e| format!("{file}: {e:?}"))?;
        self.route_file = Some(file.to_string());
        self.route_file_routes += n;
        self.load_time += start.elapsed();
        Ok(n)
    }

    fn file_next_hop(&mut self, r: &Route) -> Result<u32, String> {
        let text = r.next_hop.as_str();
        if matches!(
            text,
            "blackhole" | "unreachable" | "prohibit" | "throw" | "drop"
        ) {
            return Ok(ADJ_DROP);
        }
        let v4 = matches!(r.prefix, IpPrefix::V4(_));
        if let Ok(addr) = text.parse::<IpAddr>() {
            return self
                .resolve_hop(
                    v4,
                    &NextHopSpec::Via {
                        addr,
                        interface: None,
                    },
                )
                .map_err(|e| format!("route {} {text}: {e}", r.prefix));
        }
        if let Ok(itf) = self.interface_index(text) {
            return Ok(self.adj_for(AdjKey::Glean(itf)));
        }
        Err(format!(
            "route {} {text}: the next hop is not an address, an interface or a drop type",
            r.prefix
        ))
    }

    // ---- addresses ----

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
                self.set4(Prefix4::containing(a, 32), ADJ_LOCAL, RouteSource::Local);
                if len < 32 {
                    let glean = self.adj_for(AdjKey::Glean(interface));
                    self.view.interfaces[itf].glean = glean;
                    self.set4(net, glean, RouteSource::Connected);
                }
                if len <= 30 {
                    for edge in [net.addr(), net.last()] {
                        self.set4(
                            Prefix4::containing(edge, 32),
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
                self.set6(Prefix6::containing(a, 128), ADJ_LOCAL, RouteSource::Local);
                if len < 128 {
                    let glean = self.adj_for(AdjKey::Glean(interface));
                    self.view.interfaces[itf].glean = glean;
                    self.set6(net, glean, RouteSource::Connected);
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

    // ---- neighbours ----

    /// A neighbour heard on `interface`. Completes the adjacencies that wait for it and, for
    /// a host on a connected network without a route of its own, installs a host route so
    /// that its packets no longer need the glean path. Returns whether anything changed.
    pub fn learn(&mut self, n: NeighborLearn) -> Result<bool, String> {
        self.set_neighbor(n, false)
    }

    /// A neighbour from the CLI (static: a learn never replaces it).
    pub fn set_static_neighbor(&mut self, n: NeighborLearn) -> Result<bool, String> {
        self.set_neighbor(n, true)
    }

    fn set_neighbor(&mut self, n: NeighborLearn, static_entry: bool) -> Result<bool, String> {
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
        if self.connected_interface(n.ip) != Some(n.interface) && !static_entry && !link_local {
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
        if let Some(&adj) = self.keys.get(&AdjKey::Neighbor(n.interface, n.ip)) {
            let rewrite = self.neighbor_rewrite(n.interface, n.ip);
            let a = &mut self.view.adjs[adj as usize];
            if let Some(r) = rewrite {
                a.rewrite = r;
                a.complete = true;
            }
        }
        // A host route, unless something more specific than the connected route is there.
        if self.connected_interface(n.ip) == Some(n.interface) {
            let host = host_prefix(n.ip);
            if self.source_of(host).is_none() {
                let adj = self.adj_for(AdjKey::Neighbor(n.interface, n.ip));
                match host {
                    IpPrefix::V4(p) => self.set4(p, adj, RouteSource::Host),
                    IpPrefix::V6(p) => self.set6(p, adj, RouteSource::Host),
                }
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
        if let Some(&adj) = self.keys.get(&AdjKey::Neighbor(interface, ip)) {
            self.view.adjs[adj as usize].complete = false;
        }
        let host = host_prefix(ip);
        if self.source_of(host) == Some(RouteSource::Host) {
            self.unset(host);
        }
        Ok(())
    }

    // ---- publication ----

    /// Publish the changes: the view first (new adjacencies), then the FIB.
    pub fn commit(&mut self) {
        if self.view_dirty {
            self.view.generation += 1;
            self.shared.store(Arc::new(self.view.clone()));
            self.view_dirty = false;
        }
        self.fib.commit();
        let now = Instant::now();
        for a in self.released.drain(..) {
            // An index may have been taken again before the commit (same key re-made):
            // only a still-unused one is freed.
            if self.refs[a as usize] == 0 && self.key_of[a as usize].is_none() {
                self.free.push_back((now, a));
            }
        }
    }

    // ---- show ----

    fn describe(&self, adj: u32) -> Vec<String> {
        let a = self.view.adj(adj);
        match a.kind {
            AdjKind::Drop => vec!["drop".into()],
            AdjKind::Local => vec!["local".into()],
            AdjKind::Glean => vec![format!("glean {}", self.name(a.interface))],
            AdjKind::Neighbor => {
                let mac = self
                    .view
                    .neighbors
                    .get(&(a.interface, a.next_hop))
                    .map_or_else(|| "unresolved".to_string(), |m| m.to_string());
                vec![format!(
                    "via {} {} ({mac})",
                    a.next_hop,
                    self.name(a.interface)
                )]
            }
            AdjKind::Multipath => {
                let members = &self.view.members[a.first as usize..(a.first + a.count) as usize];
                members.iter().flat_map(|&m| self.describe(m)).collect()
            }
        }
    }

    fn route_view(&self, p: IpPrefix, adj: u32) -> RouteView {
        RouteView {
            prefix: p.to_string(),
            source: self.source_of(p).unwrap_or(RouteSource::Static),
            adjacency: adj,
            paths: self.describe(adj),
        }
    }

    /// Routes of one family in prefix order, at most `limit`, and how many there are.
    pub fn routes(&self, v6: bool, limit: usize) -> (Vec<RouteView>, usize) {
        if v6 {
            let t = self.fib.routes6();
            let v = t
                .iter()
                .take(limit)
                .map(|(p, a)| self.route_view(IpPrefix::V6(p), a))
                .collect();
            (v, t.len())
        } else {
            let t = self.fib.routes4();
            let v = t
                .iter()
                .take(limit)
                .map(|(p, a)| self.route_view(IpPrefix::V4(p), a))
                .collect();
            (v, t.len())
        }
    }

    /// The route an address takes (longest match), or the route for exactly a prefix.
    pub fn route_for(&self, query: &str) -> Result<Option<RouteView>, String> {
        if let Ok(ip) = query.parse::<IpAddr>() {
            return Ok(match ip {
                IpAddr::V4(a) => self
                    .fib
                    .routes4()
                    .lookup(a.into())
                    .map(|(p, adj)| self.route_view(IpPrefix::V4(p), adj)),
                IpAddr::V6(a) => self
                    .fib
                    .routes6()
                    .lookup(a.into())
                    .map(|(p, adj)| self.route_view(IpPrefix::V6(p), adj)),
            });
        }
        let p = crate::fib::parse::parse_prefix(query)?;
        Ok(match p {
            IpPrefix::V4(x) => self.fib.routes4().get(x),
            IpPrefix::V6(x) => self.fib.routes6().get(x),
        }
        .map(|adj| self.route_view(p, adj)))
    }

    pub fn summary(&mut self) -> FibSummary {
        let mut by_source: Vec<(RouteSource, usize)> = Vec::new();
        let mut count = |s: RouteSource| match by_source.iter_mut().find(|x| x.0 == s) {
            Some(x) => x.1 += 1,
            None => by_source.push((s, 1)),
        };
        for s in self.special4.values().chain(self.special6.values()) {
            count(*s);
        }
        let v4 = self.fib.routes4().len();
        let v6 = self.fib.routes6().len();
        let statics = v4 + v6 - self.special4.len() - self.special6.len();
        by_source.push((RouteSource::Static, statics));
        FibSummary {
            v4_routes: v4,
            v6_routes: v6,
            by_source,
            adjacencies: self.keys.len() + 2,
            neighbors: self.view.neighbors.len(),
            memory: self.fib.memory(),
            route_file: self.route_file.clone(),
            route_file_routes: self.route_file_routes,
            load_seconds: self.load_time.as_secs_f64(),
        }
    }

    pub fn neighbors(&self) -> Vec<NeighborView> {
        let mut v: Vec<NeighborView> = self
            .view
            .neighbors
            .iter()
            .map(|(&(itf, ip), mac)| NeighborView {
                interface: self.name(itf).to_string(),
                ip,
                mac: mac.to_string(),
                static_entry: self.static_neighbors.contains(&(itf, ip)),
            })
            .collect();
        v.sort_by(|a, b| (&a.interface, a.ip).cmp(&(&b.interface, b.ip)));
        v
    }

    /// Addresses of an interface as text, for `show interface address`.
    pub fn addresses(&self, interface: u32) -> Vec<String> {
        let Some(i) = self.view.interfaces.get(interface as usize) else {
            return Vec::new();
        };
        let v4 =
            i.v4.iter()
                .map(|&(a, l)| format!("{}/{l}", std::net::Ipv4Addr::from(a)));
        let v6 =
            i.v6.iter()
                .map(|&(a, l)| format!("{}/{l}", std::net::Ipv6Addr::from(a)));
        v4.chain(v6).collect()
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
