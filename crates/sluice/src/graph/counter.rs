//! Counters written by one thread and read by any.

use std::sync::atomic::{AtomicU64, Ordering};

/// A 64-bit counter with a single writer (its worker). The writer adds with a plain load and
/// store, which needs no locked instruction; readers may see a value a few packets old, never
/// a torn one.
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline(always)]
    pub fn add(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Keeps a value on its own cache line, so two workers' counters never share one.
#[derive(Default, Debug)]
#[repr(align(64))]
pub struct CacheAligned<T>(pub T);

impl<T> std::ops::Deref for CacheAligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
