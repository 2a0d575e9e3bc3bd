//! The adjacency allocator: one adjacency per next-hop key (glean on an interface, one
//! neighbour, a set of equal-cost members), reference-counted by the routes that use it. A
//! freed index waits in quarantine before it is reused, so a worker still holding the previous
//! FIB never sees an index that now means something else.

use super::Router;
use crate::router::adjacency::{ethernet_rewrite, AdjKind, Adjacency, ADJ_DROP, ADJ_LOCAL};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How long a freed adjacency index waits before it is reused: far longer than any frame
/// holds a FIB or view.
const ADJ_QUARANTINE: Duration = Duration::from_secs(2);

/// What an adjacency is made for: the same key always gives the same adjacency.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum AdjKey {
    Glean(u32),
    Neighbor(u32, IpAddr),
    Multipath(Vec<u32>),
    /// The same four for the routes learnt from the kernel (Linux over netlink): their own
    /// adjacencies, so that a route's source is known from its adjacency and a full table
    /// of kernel routes needs no per-route record besides the FIB's.
    KernelGlean(u32),
    KernelNeighbor(u32, IpAddr),
    KernelMultipath(Vec<u32>),
    KernelDrop,
}

impl AdjKey {
    /// Whether routes from the kernel own this adjacency.
    pub(super) fn is_kernel(&self) -> bool {
        matches!(
            self,
            AdjKey::KernelGlean(_)
                | AdjKey::KernelNeighbor(..)
                | AdjKey::KernelMultipath(_)
                | AdjKey::KernelDrop
        )
    }
}

impl Router {
    pub(super) fn neighbor_rewrite(&self, interface: u32, ip: IpAddr) -> Option<[u8; 14]> {
        let mac = self.view.neighbors.mac(&(interface, ip))?;
        let ours = self.view.interfaces[interface as usize].mac;
        let ethertype = if ip.is_ipv4() { 0x0800 } else { 0x86dd };
        Some(ethernet_rewrite(mac, ours, ethertype))
    }

    /// The adjacency for `key`, made if it does not exist yet (with no references).
    pub(super) fn adj_for(&mut self, key: AdjKey) -> u32 {
        if let Some(&i) = self.keys.get(&key) {
            return i;
        }
        let mut adj = Adjacency::simple(AdjKind::Drop);
        match &key {
            AdjKey::KernelDrop => {}
            AdjKey::Glean(itf) | AdjKey::KernelGlean(itf) => {
                adj.kind = AdjKind::Glean;
                adj.interface = *itf;
                adj.mtu = self.view.interfaces[*itf as usize].mtu;
            }
            AdjKey::Neighbor(itf, ip) | AdjKey::KernelNeighbor(itf, ip) => {
                adj.kind = AdjKind::Neighbor;
                adj.interface = *itf;
                adj.next_hop = *ip;
                adj.mtu = self.view.interfaces[*itf as usize].mtu;
                adj.slot = self.neighbor_slot(*itf, *ip);
                if let Some(r) = self.neighbor_rewrite(*itf, *ip) {
                    adj.rewrite = r;
                    adj.complete = true;
                }
            }
            AdjKey::Multipath(members) | AdjKey::KernelMultipath(members) => {
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

    pub(super) fn hold(&mut self, adj: u32) {
        if adj > ADJ_LOCAL {
            self.refs[adj as usize] += 1;
        }
    }

    pub(super) fn release(&mut self, adj: u32) {
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
            if let AdjKey::Multipath(members) | AdjKey::KernelMultipath(members) = key {
                for m in members {
                    self.release(m);
                }
            }
        }
        // The adjacency stays as it is until reused: a worker may still reach it through
        // the FIB it pinned before this change.
        self.released.push(adj);
    }

    /// Whether `adj` belongs to routes from the kernel.
    pub(super) fn is_kernel_adj(&self, adj: u32) -> bool {
        self.key_of
            .get(adj as usize)
            .and_then(Option::as_ref)
            .is_some_and(AdjKey::is_kernel)
    }

    /// Drop an adjacency made for a route that was then refused.
    pub(super) fn forget_if_unused(&mut self, adj: u32) {
        if adj > ADJ_LOCAL && self.refs[adj as usize] == 0 {
            self.refs[adj as usize] = 1;
            self.release(adj);
        }
    }
}
