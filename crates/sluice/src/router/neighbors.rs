//! Neighbours: heard by the workers (ARP, ND), set from the CLI or taken from Linux. Their
//! states and timers are `nud`'s; this file applies what it decides to the published view:
//! a usable neighbour completes the adjacencies that wait for it, and one confirmed on a
//! connected network gets a host route; one that fails or ages out loses both.

use super::neighbor_map::{Probe, UseFlags, NO_SLOT};
use super::nud::{Answer, Effect, Nud, Refusal, State, Times};
use super::{host_prefix, NeighborLearn, RouteSource, Router};
use crate::router::allocator::AdjKey;
use crate::wire::MacAddress;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

/// What a worker heard, or did, about a neighbour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LearnKind {
    /// It asked for one of our addresses (ARP request, NS with its link-layer address): it
    /// is on the link (an entry is made, stale).
    Request,
    /// It spoke, but not to us (a request for another host, a gratuitous ARP): only an
    /// entry we have is updated.
    Update,
    /// An answer: ARP reply to us, or NA with its flags. Only an entry we have (one we are
    /// resolving) takes it.
    Answer(Answer),
    /// A worker started resolving it (its first request went out): the entry is incomplete.
    Solicit,
}

/// Who tells the router of a neighbour.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The CLI or the configuration: never replaced by learning.
    Static,
    /// Linux's neighbour table, over netlink: replaced by what is heard on the link.
    Kernel,
}

impl Router {
    /// The neighbour table's timers and size (before anything is learnt: the use flags are
    /// made anew).
    pub fn set_neighbor_times(&mut self, times: Times) {
        self.nud = Nud::new(times);
        self.view.used = Arc::new(UseFlags::new(times.max_entries));
        self.view_dirty = true;
    }

    pub fn neighbor_times(&self) -> Times {
        self.nud.times
    }

    /// What a worker heard (`LearnKind`). Returns whether the view changed; an error says
    /// why nothing was taken (the learner counts it).
    pub fn learn(&mut self, n: NeighborLearn, now: Instant) -> Result<bool, String> {
        let key = (n.interface, n.ip);
        if n.interface as usize >= self.view.interfaces.len() {
            return Err(format!("no interface {}", n.interface));
        }
        if n.kind != LearnKind::Solicit && !n.mac.is_unicast() {
            return Err(format!("{} is not a unicast MAC", n.mac));
        }
        if self.static_neighbors.contains(&key) {
            return Ok(false);
        }
        if !self.on_link(n.interface, n.ip) {
            return Err(format!(
                "{} is not on a connected network of {}",
                n.ip,
                self.name(n.interface)
            ));
        }
        // Linux's entries are replaced by what the link says, and stay permanent.
        let kernel = self
            .nud
            .get(&key)
            .is_some_and(|e| e.state == State::Permanent);
        if kernel && n.kind != LearnKind::Solicit && self.nud.get(&key).unwrap().mac != Some(n.mac)
        {
            return self.set_neighbor(n.interface, n.ip, n.mac, Origin::Kernel);
        }
        let decided = match n.kind {
            LearnKind::Request => self.nud.request(key, n.mac, true, now),
            LearnKind::Update => self.nud.request(key, n.mac, false, now),
            LearnKind::Answer(flags) => self.nud.answer(key, n.mac, flags, now),
            LearnKind::Solicit => self.nud.solicit(key, now),
        };
        let mut changed = self.withdraw_evicted();
        match decided {
            Ok(effect) => changed |= self.apply(key, effect),
            Err(Refusal::Unsolicited) => return Err(format!("{} was not asked for", n.ip)),
            Err(Refusal::Full) => {
                let max = self.nud.times.max_entries;
                return Err(format!("neighbour table full ({max}, none stale)"));
            }
        }
        Ok(changed)
    }

    /// A neighbour from the CLI (static: a learn never replaces it).
    pub fn set_static_neighbor(&mut self, n: NeighborLearn) -> Result<bool, String> {
        self.set_neighbor(n.interface, n.ip, n.mac, Origin::Static)
    }

    /// A neighbour Linux knows on the interface's tap: taken like a static one (also off
    /// the connected networks, a gateway of a kernel route may be on-link only), but learning
    /// may replace it as it replaces a learnt one.
    pub fn seed_neighbor(&mut self, n: NeighborLearn) -> Result<bool, String> {
        self.set_neighbor(n.interface, n.ip, n.mac, Origin::Kernel)
    }

    /// Move the neighbour table's timers on (the learner calls it a few times a second):
    /// reachable entries go stale, used stale ones are probed, silent ones fail, unused
    /// ones age out. Probes are queued for the workers to send.
    pub fn neighbor_tick(&mut self, now: Instant) {
        let used = self.view.used.clone();
        let probes = self.view.probes.clone();
        let mut effects = Vec::new();
        self.nud.tick(
            now,
            |slot| used.take(slot),
            |(interface, ip), mac| probes.push(Probe { interface, ip, mac }),
            |key, e| effects.push((key, e)),
        );
        for (key, e) in effects {
            self.apply(key, e);
        }
    }

    /// The use-flag slot of a neighbour (for its adjacencies).
    pub(super) fn neighbor_slot(&self, interface: u32, ip: IpAddr) -> u32 {
        self.view
            .neighbors
            .get(&(interface, ip))
            .map_or(NO_SLOT, |n| n.slot)
    }

    /// Whether `ip` may be a neighbour on `interface`: on one of its connected networks, or
    /// an IPv6 link-local address of an interface that speaks IPv6 (RFC 4291 2.5.6).
    fn on_link(&self, interface: u32, ip: IpAddr) -> bool {
        if let IpAddr::V6(a) = ip {
            if crate::wire::ipv6::is_link_local(u128::from(a))
                && !self.view.interfaces[interface as usize].v6.is_empty()
            {
                return true;
            }
        }
        let t = self.table_of(interface, ip.is_ipv6());
        self.connected_interface(t, ip) == Some(interface)
    }

    fn set_neighbor(
        &mut self,
        interface: u32,
        ip: IpAddr,
        mac: MacAddress,
        origin: Origin,
    ) -> Result<bool, String> {
        let key = (interface, ip);
        if interface as usize >= self.view.interfaces.len() {
            return Err(format!("no interface {interface}"));
        }
        if !mac.is_unicast() {
            return Err(format!("{mac} is not a unicast MAC"));
        }
        if origin == Origin::Kernel && self.static_neighbors.contains(&key) {
            return Ok(false);
        }
        if self.nud.set_permanent(key, mac, Instant::now()).is_err() {
            let max = self.nud.times.max_entries;
            return Err(format!("neighbour table full ({max}, none stale)"));
        }
        if origin == Origin::Static {
            self.static_neighbors.insert(key);
        }
        let mut changed = self.withdraw_evicted();
        if self.view.neighbors.mac(&key) != Some(mac) {
            changed |= self.apply(
                key,
                Effect::Publish {
                    mac,
                    confirmed: true,
                },
            );
        }
        Ok(changed)
    }

    /// Take out of the view the entries `nud` evicted to make room.
    fn withdraw_evicted(&mut self) -> bool {
        let gone = self.nud.take_withdrawn();
        for &key in &gone {
            self.apply(key, Effect::Withdraw);
        }
        !gone.is_empty()
    }

    /// Make the view say what `nud` decided for `key`. Returns whether it changed.
    fn apply(&mut self, key: (u32, IpAddr), effect: Effect) -> bool {
        let (interface, ip) = key;
        match effect {
            Effect::Nothing => false,
            Effect::Publish { mac, confirmed } => {
                let slot = self.nud.get(&key).map_or(NO_SLOT, |e| e.slot);
                // A confirmation of what the view says already publishes nothing (and does
                // not make the XDP fast path's flows stale).
                let known = self.view.neighbors.get(&key);
                let mut changed = !known.is_some_and(|n| n.mac == mac && n.slot == slot);
                if changed {
                    self.view.neighbors.insert_slot(key, mac, slot);
                }
                let rewrite = self.neighbor_rewrite(interface, ip);
                for k in [
                    AdjKey::Neighbor(interface, ip),
                    AdjKey::KernelNeighbor(interface, ip),
                ] {
                    if let (Some(&adj), Some(r)) = (self.keys.get(&k), rewrite) {
                        let a = &mut self.view.adjs[adj as usize];
                        changed |= (a.rewrite, a.complete, a.slot) != (r, true, slot);
                        a.rewrite = r;
                        a.complete = true;
                        a.slot = slot;
                    }
                }
                self.view_dirty |= changed;
                // A host route once the neighbour is confirmed on a connected network,
                // unless something more specific than the connected route is there. Before
                // that (an entry a request made) the glean path reaches it by the view, and a
                // flood of requests costs the FIB nothing.
                let t = self.table_of(interface, ip.is_ipv6());
                let connected = self.connected_interface(t, ip) == Some(interface);
                let host = host_prefix(ip);
                if confirmed && connected && self.source_in(t, host).is_none() {
                    let adj = self.adj_for(AdjKey::Neighbor(interface, ip));
                    self.set(t, host, adj, RouteSource::Host);
                    changed = true;
                }
                changed
            }
            Effect::Withdraw => {
                if self.view.neighbors.remove(&key).is_none() {
                    return false;
                }
                self.view_dirty = true;
                for k in [
                    AdjKey::Neighbor(interface, ip),
                    AdjKey::KernelNeighbor(interface, ip),
                ] {
                    if let Some(&adj) = self.keys.get(&k) {
                        self.view.adjs[adj as usize].complete = false;
                    }
                }
                let host = host_prefix(ip);
                let t = self.table_of(interface, ip.is_ipv6());
                if self.source_in(t, host) == Some(RouteSource::Host) {
                    self.unset(t, host);
                }
                true
            }
        }
    }

    /// Remove a neighbour (and its host route); its adjacencies become incomplete.
    pub fn del_neighbor(&mut self, interface: u32, ip: IpAddr) -> Result<(), String> {
        let key = (interface, ip);
        if self.nud.remove(&key).is_none() {
            return Err(format!("no neighbour {ip} on {}", self.name(interface)));
        }
        self.static_neighbors.remove(&key);
        self.apply(key, Effect::Withdraw);
        Ok(())
    }
}
