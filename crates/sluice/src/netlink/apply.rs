//! Applying the listener's events to the router: Linux ifindexes resolved to sluice
//! interfaces through the link names and the host pairs, kernel tables to sluice tables,
//! each round of events under one router lock and one commit; and the reconcile that ends a
//! dump, deleting what sluice holds from the kernel that the dump no longer has.

use super::pairs::HostPairs;
use super::stats::{NetlinkStats, ReconcileReport};
use super::translate::{Event, LinuxHops, LinuxPath, RouteEvent, TABLE_MAIN};
use crate::events::Bus;
use crate::fib::parse::IpPrefix;
use crate::fib::{Prefix4, Prefix6};
use crate::router::{
    KernelHops, KernelOwner, KernelPath, KernelRouteChange, NeighborLearn, Router,
};
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Route changes in one round from which the round may be applied in bulk.
const BULK_ROUTES: usize = 8_192;

/// What the reader hands the applier, in the order it read it.
pub(super) enum Item {
    Events(Vec<Event>),
    /// A dump follows: its events, then `DumpEnd`.
    DumpBegin {
        reason: &'static str,
        at: Instant,
    },
    /// The dump is over; `complete` false: it failed part way, and nothing is deleted.
    DumpEnd {
        complete: bool,
    },
}

impl Item {
    pub(super) fn weight(&self) -> usize {
        match self {
            Item::Events(e) => e.len(),
            _ => 1,
        }
    }
}

/// What a dump has shown so far.
struct DumpState {
    at: Instant,
    routes4: HashMap<u32, Vec<Prefix4>>,
    routes6: HashMap<u32, Vec<Prefix6>>,
    addresses: HashSet<(u32, IpAddr, u8)>,
    neighbors: HashSet<(u32, IpAddr)>,
    links: HashSet<u32>,
    report: ReconcileReport,
}

pub(super) struct Applier {
    /// The listener's id: the owner of the kernel routes it puts in, and the only ones its
    /// reconcile deletes (another namespace's listener holds its own).
    pub id: KernelOwner,
    pub router: Arc<Mutex<Router>>,
    pub pairs: HostPairs,
    pub stats: Arc<Mutex<NetlinkStats>>,
    /// Linux ifindex → (name, administratively up).
    links: HashMap<u32, (String, bool)>,
    /// Addresses and neighbours the listener put in the router: only these it removes.
    addresses: HashSet<(u32, IpAddr, u8)>,
    neighbors: HashSet<(u32, IpAddr)>,
    dump: Option<DumpState>,
    /// The router's interfaces, as of the round being applied.
    interfaces: usize,
    /// The tables this listener may write, as of the round being applied: those its paired
    /// interfaces route in (either family). A namespace reaches no other table.
    allowed: Vec<u32>,
    /// Set when an event means the kernel changed routes without telling (IPv4 routes go
    /// silently with their link or address): the reader then dumps.
    pub resync: Option<&'static str>,
    /// Where route changes are published, and those of the round being applied, kept
    /// until the router's lock is let go (only while someone watches).
    pub events: Option<Arc<Bus>>,
    route_changes: Vec<(&'static str, IpPrefix, u32)>,
}

impl Applier {
    pub fn new(
        id: KernelOwner,
        router: Arc<Mutex<Router>>,
        pairs: HostPairs,
        stats: Arc<Mutex<NetlinkStats>>,
    ) -> Applier {
        Applier {
            id,
            router,
            pairs,
            stats,
            links: HashMap::new(),
            addresses: HashSet::new(),
            neighbors: HashSet::new(),
            dump: None,
            interfaces: 0,
            allowed: Vec::new(),
            resync: None,
            events: None,
            route_changes: Vec::new(),
        }
    }

    /// Apply items under one router lock and commit once.
    pub fn apply(&mut self, items: Vec<Item>) {
        let router = self.router.clone();
        let stats = self.stats.clone();
        let mut r = router.lock().unwrap_or_else(|p| p.into_inner());
        let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
        self.interfaces = r.interface_count();
        self.allowed.clear();
        for (_, itf) in self.pairs.list() {
            if (itf as usize) < self.interfaces {
                self.allowed.extend(r.interface_table_ids(itf));
            }
        }
        let routes: usize = items
            .iter()
            .map(|i| match i {
                Item::Events(e) => e.iter().filter(|e| matches!(e, Event::Route(_))).count(),
                _ => 0,
            })
            .sum();
        // A round that changes a good part of the tables builds them anew once, at the
        // commit, instead of change by change (a full table arriving); so does a dump, which
        // is committed once, at its end.
        let dumping =
            self.dump.is_some() || items.iter().any(|i| matches!(i, Item::DumpBegin { .. }));
        if dumping || (routes >= BULK_ROUTES && routes * 32 >= r.route_total()) {
            r.defer_fib_updates();
            s.bulk_batches += 1;
        }
        let mut ended = Vec::new();
        for item in items {
            match item {
                Item::Events(events) => {
                    for e in events {
                        self.event(&mut r, &mut s, e);
                    }
                }
                Item::DumpBegin { reason, at } => {
                    self.dump = Some(DumpState {
                        at,
                        routes4: HashMap::new(),
                        routes6: HashMap::new(),
                        addresses: HashSet::new(),
                        neighbors: HashSet::new(),
                        links: HashSet::new(),
                        report: ReconcileReport {
                            reason,
                            ..Default::default()
                        },
                    });
                }
                Item::DumpEnd { complete } => {
                    if let Some(d) = self.dump.take() {
                        if complete {
                            ended.push(self.reconcile(&mut r, &mut s, d));
                        }
                    }
                }
            }
        }
        s.batches += 1;
        // In the middle of a dump the tables are left as they are (deferred) until its end.
        if self.dump.is_none() {
            r.commit();
            s.commits += 1;
        }
        drop(r);
        if let Some(bus) = &self.events {
            for (event, prefix, table) in self.route_changes.drain(..) {
                crate::events::route(bus, event, prefix, table, "netlink");
            }
        }
        for e in ended {
            let mut report = e.report;
            report.seconds = e.at.elapsed().as_secs_f64();
            s.resyncs += 1;
            s.last_reconcile = Some(report);
        }
    }

    /// The sluice interface a Linux ifindex is paired with (a pair naming no interface of
    /// the router counts as none).
    fn interface(&self, ifindex: u32) -> Option<u32> {
        let (name, _) = self.links.get(&ifindex)?;
        self.pairs
            .get(name)
            .filter(|&i| (i as usize) < self.interfaces)
    }

    fn event(&mut self, r: &mut Router, s: &mut NetlinkStats, e: Event) {
        match e {
            Event::Ignored(reason) => s.ignore(reason),
            Event::Link { index, name, up } => {
                s.link_messages += 1;
                if let Some(d) = &mut self.dump {
                    d.links.insert(index);
                }
                let before = self.links.insert(index, (name.clone(), up));
                let paired = self.pairs.get(&name).is_some();
                if paired && before.is_some_and(|b| b != (name, up)) {
                    self.resync.get_or_insert("link change");
                }
            }
            Event::LinkGone { index } => {
                s.link_messages += 1;
                if let Some((name, _)) = self.links.remove(&index) {
                    if self.pairs.get(&name).is_some() {
                        self.resync.get_or_insert("link change");
                    }
                }
            }
            Event::Address {
                add,
                ifindex,
                addr,
                len,
            } => {
                let Some(itf) = self.interface(ifindex) else {
                    s.ignore("address on an unpaired interface");
                    return;
                };
                let key = (itf, addr, len);
                if add {
                    if let Some(d) = &mut self.dump {
                        d.addresses.insert(key);
                    }
                    if self.addresses.contains(&key) {
                        return;
                    }
                    match r.add_address(itf, addr, len) {
                        Ok(()) => {
                            self.addresses.insert(key);
                            s.addresses_added += 1;
                        }
                        Err(e) => refused(s, format!("address {addr}/{len}: {e}")),
                    }
                } else if self.addresses.remove(&key) {
                    if r.del_address(itf, addr, len).is_ok() {
                        s.addresses_deleted += 1;
                    }
                    if addr.is_ipv4() {
                        self.resync.get_or_insert("address deleted");
                    }
                } else {
                    s.ignore("delete of an address sluice did not take");
                }
            }
            Event::Neighbor { ifindex, ip, mac } => {
                let Some(itf) = self.interface(ifindex) else {
                    s.ignore("neighbour on an unpaired interface");
                    return;
                };
                match mac {
                    Some(mac) => {
                        if let Some(d) = &mut self.dump {
                            d.neighbors.insert((itf, ip));
                        }
                        let n = NeighborLearn::request(itf, ip, mac);
                        match r.seed_neighbor(n) {
                            Ok(changed) => {
                                self.neighbors.insert((itf, ip));
                                if changed {
                                    s.neighbors_added += 1;
                                }
                            }
                            Err(e) => refused(s, format!("neighbour {ip}: {e}")),
                        }
                    }
                    None => {
                        if self.neighbors.remove(&(itf, ip)) && r.del_neighbor(itf, ip).is_ok() {
                            s.neighbors_deleted += 1;
                        } else {
                            s.ignore("neighbour gone that sluice did not take");
                        }
                    }
                }
            }
            Event::Route(ev) => self.route(r, s, ev),
        }
    }

    fn route(&mut self, r: &mut Router, s: &mut NetlinkStats, ev: RouteEvent) {
        let table = match ev.table {
            TABLE_MAIN => 0,
            0 => {
                s.ignore("kernel table 0");
                return;
            }
            t if r.has_table(t) => t,
            _ => {
                s.ignore("kernel table that sluice does not have");
                return;
            }
        };
        if !self.allowed.contains(&table) {
            s.routes_refused_table += 1;
            s.last_refusal = Some(format!(
                "route {} in kernel table {}: table {table} is not a table of this namespace's taps",
                ev.prefix, ev.table
            ));
            return;
        }
        if !ev.add {
            match r.del_kernel_route(self.id, table, ev.prefix) {
                Ok(true) => {
                    s.routes_deleted += 1;
                    self.changed("removed", ev.prefix, table);
                }
                _ => s.ignore("delete of a route sluice does not hold"),
            }
            return;
        }
        let hops = match self.kernel_hops(&ev.hops) {
            Ok(h) => h,
            Err(reason) => {
                s.ignore(reason);
                if r.del_kernel_route(self.id, table, ev.prefix) == Ok(true) {
                    s.routes_deleted += 1;
                    self.changed("removed", ev.prefix, table);
                }
                return;
            }
        };
        match r.set_kernel_route(self.id, table, ev.prefix, &hops) {
            Ok(change) => {
                if !matches!(change, KernelRouteChange::Unchanged) {
                    self.changed("added", ev.prefix, table);
                }
                let report = self.dump.as_mut().map(|d| {
                    match ev.prefix {
                        IpPrefix::V4(p) => d.routes4.entry(table).or_default().push(p),
                        IpPrefix::V6(p) => d.routes6.entry(table).or_default().push(p),
                    }
                    d.report.routes += 1;
                    &mut d.report
                });
                match change {
                    KernelRouteChange::Added => {
                        s.routes_added += 1;
                        if let Some(rep) = report {
                            rep.added += 1;
                        }
                    }
                    KernelRouteChange::Replaced => {
                        s.routes_replaced += 1;
                        if let Some(rep) = report {
                            rep.replaced += 1;
                        }
                    }
                    KernelRouteChange::Unchanged => {
                        s.routes_unchanged += 1;
                        if let Some(rep) = report {
                            rep.unchanged += 1;
                        }
                    }
                }
            }
            Err(e) => {
                refused(s, format!("route {}: {e}", ev.prefix));
                if r.del_kernel_route(self.id, table, ev.prefix) == Ok(true) {
                    s.routes_deleted += 1;
                    self.changed("removed", ev.prefix, table);
                }
            }
        }
    }

    /// Keep a route change for publishing after the round (nothing when no one watches: a
    /// full table arriving costs nothing more).
    fn changed(&mut self, event: &'static str, prefix: IpPrefix, table: u32) {
        if self.events.as_ref().is_some_and(|b| b.watched()) {
            self.route_changes.push((event, prefix, table));
        }
    }

    /// The kernel route's paths on sluice interfaces; paths on unpaired interfaces are left
    /// out, and a route with none left is ignored.
    fn kernel_hops(&self, hops: &LinuxHops) -> Result<KernelHops, &'static str> {
        let path = |p: &LinuxPath| {
            self.interface(p.ifindex).map(|interface| KernelPath {
                interface,
                gateway: p.gateway,
            })
        };
        let paths: Vec<KernelPath> = match hops {
            LinuxHops::Drop => return Ok(KernelHops::Drop),
            LinuxHops::Unusable(reason) => return Err(reason),
            LinuxHops::One(p) => path(p).into_iter().collect(),
            LinuxHops::Many(ps) => ps.iter().filter_map(path).collect(),
        };
        if paths.is_empty() {
            return Err("route not via a paired interface");
        }
        Ok(KernelHops::Paths(paths))
    }

    /// The end of a complete dump: what this listener put in from the kernel and the dump
    /// did not show is deleted (other listeners' routes stay).
    fn reconcile(&mut self, r: &mut Router, s: &mut NetlinkStats, mut d: DumpState) -> Ended {
        for table in r.table_ids() {
            let Ok((have4, have6)) = r.owned_kernel_prefixes(self.id, table) else {
                continue;
            };
            let mut seen4 = d.routes4.remove(&table).unwrap_or_default();
            seen4.sort_unstable();
            for p in have4 {
                if seen4.binary_search(&p).is_err()
                    && r.del_kernel_route(self.id, table, IpPrefix::V4(p)) == Ok(true)
                {
                    d.report.deleted += 1;
                    self.changed("removed", IpPrefix::V4(p), table);
                }
            }
            let mut seen6 = d.routes6.remove(&table).unwrap_or_default();
            seen6.sort_unstable();
            for p in have6 {
                if seen6.binary_search(&p).is_err()
                    && r.del_kernel_route(self.id, table, IpPrefix::V6(p)) == Ok(true)
                {
                    d.report.deleted += 1;
                    self.changed("removed", IpPrefix::V6(p), table);
                }
            }
        }
        s.routes_deleted += d.report.deleted;
        let gone: Vec<_> = self.addresses.difference(&d.addresses).copied().collect();
        for key in gone {
            self.addresses.remove(&key);
            if r.del_address(key.0, key.1, key.2).is_ok() {
                d.report.addresses_deleted += 1;
                s.addresses_deleted += 1;
            }
        }
        let gone: Vec<_> = self.neighbors.difference(&d.neighbors).copied().collect();
        for key in gone {
            self.neighbors.remove(&key);
            if r.del_neighbor(key.0, key.1).is_ok() {
                d.report.neighbors_deleted += 1;
                s.neighbors_deleted += 1;
            }
        }
        self.links.retain(|i, _| d.links.contains(i));
        Ended {
            at: d.at,
            report: d.report,
        }
    }
}

/// A reconcile done, waiting for its commit to be timed.
struct Ended {
    at: Instant,
    report: ReconcileReport,
}

fn refused(s: &mut NetlinkStats, why: String) {
    s.ignore("refused by the router");
    s.last_refusal = Some(why);
}
