//! The host pairs: which Linux interface (a tap, by name) stands for which sluice interface
//! (by index). The lcp code fills them; the listener reads them for every message, and a
//! change makes it dump and reconcile, so that what was ignored before the pairing is
//! picked up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Host interface name → sluice interface index, shared and updatable. Clones share.
#[derive(Clone, Default)]
pub struct HostPairs {
    inner: Arc<Pairs>,
}

#[derive(Default)]
struct Pairs {
    map: RwLock<HashMap<String, u32>>,
    /// Bumped by every change.
    generation: AtomicU64,
}

impl HostPairs {
    pub fn new() -> HostPairs {
        HostPairs::default()
    }

    /// Pair host interface `host` with sluice interface `interface` (replacing its pairing).
    pub fn set(&self, host: &str, interface: u32) {
        self.write().insert(host.to_string(), interface);
        self.inner.generation.fetch_add(1, Ordering::Release);
    }

    /// Unpair `host`; whether it was paired.
    pub fn remove(&self, host: &str) -> bool {
        let was = self.write().remove(host).is_some();
        self.inner.generation.fetch_add(1, Ordering::Release);
        was
    }

    /// The sluice interface paired with host interface `host`.
    pub fn get(&self, host: &str) -> Option<u32> {
        self.read().get(host).copied()
    }

    /// Every pair, by host name.
    pub fn list(&self) -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> = self.read().iter().map(|(k, &v)| (k.clone(), v)).collect();
        v.sort();
        v
    }

    /// How many changes there have been.
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, u32>> {
        self.inner.map.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, u32>> {
        self.inner.map.write().unwrap_or_else(|p| p.into_inner())
    }
}
