//! What the workers see of the neighbour table: the MAC of each usable neighbour, the flags
//! by which traffic says it used one, and the unicast probes the control plane asks them to
//! send.
//!
//! The map is published with the rest of the `L3View` at every commit, so it is cut into
//! shards, each behind its own `Arc`: a commit copies only the shards that changed since
//! the last one, not the whole table (a burst of learns from a flood used to copy it all per
//! batch).

use crate::wire::MacAddress;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

type Key = (u32, IpAddr);

/// No use flag (static tests' entries, adjacencies that are not a neighbour's).
pub const NO_SLOT: u32 = u32::MAX;

/// One usable neighbour as the workers read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbor {
    pub mac: MacAddress,
    /// Its use flag in `UseFlags`.
    pub slot: u32,
}

const SHARDS: usize = 64;

/// (interface, address) → neighbour, in shards that are copied on write.
#[derive(Clone, Debug)]
pub struct NeighborMap {
    shards: Vec<Arc<HashMap<Key, Neighbor>>>,
    len: usize,
}

impl Default for NeighborMap {
    fn default() -> NeighborMap {
        NeighborMap {
            shards: (0..SHARDS).map(|_| Arc::default()).collect(),
            len: 0,
        }
    }
}

/// The shard of a key: from the address's low bits (which a flood may choose, but only to
/// pile entries into one shard, which costs it nothing more than spreading them would).
fn shard_of(key: &Key) -> usize {
    let low = match key.1 {
        IpAddr::V4(a) => u32::from(a) as u64,
        IpAddr::V6(a) => u128::from(a) as u64,
    };
    ((low ^ (low >> 17) ^ u64::from(key.0)) as usize) % SHARDS
}

impl NeighborMap {
    #[inline]
    pub fn get(&self, key: &Key) -> Option<&Neighbor> {
        self.shards[shard_of(key)].get(key)
    }

    #[inline]
    pub fn mac(&self, key: &Key) -> Option<MacAddress> {
        self.get(key).map(|n| n.mac)
    }

    #[inline]
    pub fn contains_key(&self, key: &Key) -> bool {
        self.get(key).is_some()
    }

    /// A neighbour with no use flag (tests, and entries that are never aged).
    pub fn insert(&mut self, key: Key, mac: MacAddress) {
        self.insert_slot(key, mac, NO_SLOT);
    }

    pub fn insert_slot(&mut self, key: Key, mac: MacAddress, slot: u32) {
        let shard = Arc::make_mut(&mut self.shards[shard_of(&key)]);
        if shard.insert(key, Neighbor { mac, slot }).is_none() {
            self.len += 1;
        }
    }

    pub fn remove(&mut self, key: &Key) -> Option<Neighbor> {
        let i = shard_of(key);
        if !self.shards[i].contains_key(key) {
            return None;
        }
        let n = Arc::make_mut(&mut self.shards[i]).remove(key);
        self.len -= usize::from(n.is_some());
        n
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        *self = NeighborMap::default();
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Neighbor)> {
        self.shards.iter().flat_map(|s| s.iter())
    }
}

/// One byte per neighbour entry, set by a worker that sends a packet to it, read and cleared
/// by the control plane (a stale entry that traffic uses is probed; one nobody uses ages
/// out). A worker only writes a flag it finds clear, so a busy neighbour's line is written
/// about once per reachable time.
#[derive(Debug)]
pub struct UseFlags(Box<[AtomicU8]>);

impl UseFlags {
    pub fn new(slots: usize) -> UseFlags {
        UseFlags((0..slots).map(|_| AtomicU8::new(0)).collect())
    }

    /// A packet went to the neighbour of `slot`.
    #[inline(always)]
    pub fn touch(&self, slot: u32) {
        if let Some(f) = self.0.get(slot as usize) {
            if f.load(Ordering::Relaxed) == 0 {
                f.store(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether `slot` was used since the last look; clears it.
    pub fn take(&self, slot: u32) -> bool {
        self.0
            .get(slot as usize)
            .is_some_and(|f| f.load(Ordering::Relaxed) != 0 && f.swap(0, Ordering::Relaxed) != 0)
    }
}

/// A unicast probe the control plane wants sent: to `mac` on `interface`, asking for `ip`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    pub interface: u32,
    pub ip: IpAddr,
    pub mac: MacAddress,
}

/// Probes waiting for a worker. The resolver nodes look at `pending` on every poll (one
/// relaxed load) and only then take the lock, with `try_lock`: a worker never waits on it.
#[derive(Debug, Default)]
pub struct ProbeQueue {
    pending: AtomicBool,
    probes: Mutex<Vec<Probe>>,
}

/// Probes kept at most; more wait for the next tick (they are made again while due).
const MAX_PROBES: usize = 4096;

impl ProbeQueue {
    pub fn push(&self, p: Probe) {
        let mut q = self.probes.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() < MAX_PROBES {
            q.push(p);
            self.pending.store(true, Ordering::Release);
        }
    }

    /// Whether probes wait (one relaxed load: the resolver nodes ask on every pass).
    #[inline]
    pub fn pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// The probes of one family (`v6`), if any are waiting and the lock is free.
    pub fn take(&self, v6: bool, out: &mut Vec<Probe>) {
        if !self.pending.load(Ordering::Acquire) {
            return;
        }
        let Ok(mut q) = self.probes.try_lock() else {
            return;
        };
        q.retain(|p| {
            let mine = p.ip.is_ipv6() == v6;
            if mine {
                out.push(*p);
            }
            !mine
        });
        if q.is_empty() {
            self.pending.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn key(i: u32) -> Key {
        (0, IpAddr::V4(Ipv4Addr::from(i)))
    }

    #[test]
    fn a_commit_copies_only_the_shards_that_changed() {
        let mut m = NeighborMap::default();
        for i in 0..10_000 {
            m.insert(key(i), MacAddress([2, 0, 0, 0, 0, 1]));
        }
        let published = m.clone();
        m.insert(key(20_000), MacAddress([2, 0, 0, 0, 0, 2]));
        let shared = (0..SHARDS)
            .filter(|&i| Arc::ptr_eq(&m.shards[i], &published.shards[i]))
            .count();
        assert_eq!(shared, SHARDS - 1);
        assert_eq!(m.len(), 10_001);
        assert_eq!(published.len(), 10_000);
        assert_eq!(
            m.remove(&key(20_000)).unwrap().mac,
            MacAddress([2, 0, 0, 0, 0, 2])
        );
        assert!(m.remove(&key(20_000)).is_none());
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.iter().count(), 10_000);
    }

    #[test]
    fn use_flags_are_taken_once() {
        let f = UseFlags::new(4);
        assert!(!f.take(1));
        f.touch(1);
        f.touch(1);
        f.touch(99); // out of range: ignored
        assert!(f.take(1));
        assert!(!f.take(1));
        assert!(!f.take(NO_SLOT));
    }

    #[test]
    fn probes_go_to_their_family() {
        let q = ProbeQueue::default();
        let mac = MacAddress([2, 0, 0, 0, 0, 1]);
        q.push(Probe {
            interface: 0,
            ip: "10.0.0.1".parse().unwrap(),
            mac,
        });
        q.push(Probe {
            interface: 0,
            ip: "2001:db8::1".parse().unwrap(),
            mac,
        });
        let mut v4 = Vec::new();
        q.take(false, &mut v4);
        assert_eq!(v4.len(), 1);
        let mut v6 = Vec::new();
        q.take(true, &mut v6);
        assert_eq!(v6.len(), 1);
        let mut none = Vec::new();
        q.take(true, &mut none);
        assert!(none.is_empty());
    }
}
