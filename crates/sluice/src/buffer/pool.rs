//! The pool every thread shares: the region, the metadata, the free list and the tags.

use super::ownership::Tags;
use super::region::Region;
use super::{
    BufferReport, HugePages, OwnerCounts, WorkerBuffers, CACHE_BATCH, CACHE_MAX, DATA_SIZE, STRIDE,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// The pool shared by all threads. Hand each thread a [`WorkerBuffers`] to use it.
pub struct BufferPool {
    pub(super) region: Region,
    free: Mutex<Vec<u32>>,
    free_count: AtomicU64,
    /// Takes of `free`'s lock, and those that had to wait for another thread.
    locks: AtomicU64,
    contended: AtomicU64,
    owners: Mutex<Vec<Arc<OwnerCounts>>>,
    pub(super) count: u32,
    /// Who holds each buffer, checked on every access, beside its metadata (`ownership.rs`).
    pub(super) tags: Tags,
}

// SAFETY: the metadata cells and the region are only reached through `WorkerBuffers`, which
// touches a buffer only while its tag names the handle (`ownership.rs`), and through
// `give_back_chains`, whose caller holds the buffers (its contract). A buffer index moves
// between threads only through the mutex-guarded free list or a device ring (see "Ownership
// and soundness" in the module), so no two threads touch the same cell concurrently.
unsafe impl Sync for BufferPool {}
// SAFETY: as above; the region is plain memory with no thread affinity.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// Map a region of `count` buffers.
    pub fn new(count: u32, huge: HugePages) -> std::io::Result<Arc<BufferPool>> {
        if count == 0 || count == u32::MAX {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "buffer count must be between 1 and 4294967294",
            ));
        }
        let region = Region::map(count as usize * STRIDE, huge)?;
        // Hand out low indices first: they are the ones most likely to be warm in cache.
        let free: Vec<u32> = (0..count).rev().collect();
        Ok(Arc::new(BufferPool {
            region,
            free: Mutex::new(free),
            free_count: AtomicU64::new(count as u64),
            locks: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            owners: Mutex::new(Vec::new()),
            count,
            tags: Tags::new(count),
        }))
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// The region's base address and length, for drivers that register it with the kernel.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// A per-thread handle with its own cache of free buffers.
    pub fn worker_handle(self: &Arc<Self>) -> WorkerBuffers {
        let owner = Arc::new(OwnerCounts::default());
        self.owners.lock().unwrap().push(owner.clone());
        WorkerBuffers {
            id: self.tags.new_handle(),
            pool: self.clone(),
            cache: Vec::with_capacity(CACHE_MAX + CACHE_BATCH),
            owner,
        }
    }

    /// Who holds buffer `bi`, in words ("free", "held by worker handle 3", ...).
    pub fn holder(&self, bi: u32) -> String {
        if bi >= self.count {
            return "out of range".into();
        }
        self.tags.holder(bi)
    }

    /// Where the buffers are right now.
    pub fn report(&self) -> BufferReport {
        let free_in_pool = self.free_count.load(Ordering::Relaxed);
        let (mut cached, mut frames, mut drivers) = (0u64, 0u64, 0u64);
        for o in self.owners.lock().unwrap().iter() {
            cached += o.cached.load(Ordering::Relaxed);
            frames += o.in_frames.load(Ordering::Relaxed);
            drivers += o.in_drivers.load(Ordering::Relaxed);
        }
        let total = self.count as u64;
        let in_use = total.saturating_sub(free_in_pool + cached);
        BufferReport {
            total,
            free_in_pool,
            free_in_caches: cached,
            in_use,
            in_frames: frames,
            in_drivers: drivers,
            unaccounted: in_use as i64 - (frames + drivers) as i64,
            buffer_size: STRIDE as u64,
            data_size: DATA_SIZE as u64,
            region_bytes: self.region.len() as u64,
            huge_pages: self.region.huge_pages(),
            free_list_locks: self.locks.load(Ordering::Relaxed),
            free_list_contended: self.contended.load(Ordering::Relaxed),
        }
    }

    /// The shared free list, counting the take and whether another thread held it.
    fn free_list(&self) -> MutexGuard<'_, Vec<u32>> {
        self.locks.fetch_add(1, Ordering::Relaxed);
        match self.free.try_lock() {
            Ok(free) => free,
            Err(TryLockError::WouldBlock) => {
                self.contended.fetch_add(1, Ordering::Relaxed);
                self.free.lock().unwrap()
            }
            Err(TryLockError::Poisoned(e)) => panic!("buffer free list: {e}"),
        }
    }

    pub(super) fn take_batch(&self, into: &mut Vec<u32>, n: usize) -> usize {
        let mut free = self.free_list();
        let n = n.min(free.len());
        let at = free.len() - n;
        #[cfg(any(test, debug_assertions))]
        for &bi in &free[at..] {
            self.tags.check_free(bi);
        }
        into.extend_from_slice(&free[at..]);
        free.truncate(at);
        self.free_count.store(free.len() as u64, Ordering::Relaxed);
        n
    }

    /// Take back buffers a driver held until its device let go of them (the driver is
    /// closing and has no worker handle any more). Panics on a buffer out of range or
    /// already free (given back twice), in every build.
    ///
    /// # Safety
    ///
    /// The caller holds every buffer in `from` and no worker handle uses any of them, now or
    /// afterwards: each was lent to the caller's device (now closed), or sits in a structure
    /// of the caller's that no handle will take it from again. Giving back a buffer that a
    /// live handle still uses would let another thread allocate it while that handle reads or
    /// writes it: a data race. (Debug builds cannot catch that case either: a handle-less
    /// holder's buffers carry the tag of the handle that put them there.) Safe code cannot
    /// call it:
    ///
    /// ```compile_fail,E0133
    /// use sluice::buffer::{BufferPool, HugePages};
    /// let pool = BufferPool::new(4, HugePages::Never).unwrap();
    /// pool.give_back(&[0]);
    /// ```
    pub unsafe fn give_back(&self, from: &[u32]) {
        for &bi in from {
            assert!(bi < self.count, "buffer index {bi} out of range");
            self.tags.give_back(bi);
        }
        self.give_batch(from);
    }

    /// Like `give_back`, for packets: every segment of each chain goes back.
    ///
    /// # Safety
    ///
    /// As for [`give_back`](Self::give_back), for every segment of every chain in `heads`:
    /// the caller holds them all and no handle uses any of them again.
    ///
    /// ```compile_fail,E0133
    /// use sluice::buffer::{BufferPool, HugePages};
    /// let pool = BufferPool::new(4, HugePages::Never).unwrap();
    /// pool.give_back_chains(&[0]);
    /// ```
    pub unsafe fn give_back_chains(&self, heads: &[u32]) {
        let mut all = Vec::with_capacity(heads.len());
        for &head in heads {
            let mut bi = head;
            while bi < self.count && all.len() < self.count as usize {
                self.tags.give_back(bi);
                all.push(bi);
                // SAFETY: the caller holds this buffer and no handle uses it (the function's
                // contract), so nothing writes this metadata while we read it.
                bi = unsafe { (*self.tags.meta(bi).get()).next };
            }
        }
        self.give_batch(&all);
    }

    /// Return packets parked in a table that is going away (`WorkerBuffers::park`): every
    /// segment of each chain goes back to the pool. Safe for any index: one out of range, or a
    /// segment not parked (held by a handle, lent, free), panics before anything of that chain
    /// goes back, so a handle's buffers are never pulled out from under it.
    #[track_caller]
    pub fn give_back_parked(&self, heads: &[u32]) {
        let mut all = Vec::with_capacity(heads.len());
        for &head in heads {
            let mut bi = head;
            while bi != super::NO_BUFFER {
                assert!(bi < self.count, "buffer index {bi} out of range");
                // Parked → free: this thread now holds `bi` alone (a parked buffer is used by
                // no handle, and of two takers the compare-and-swap lets one through), and it
                // is on no free list until `give_batch` below.
                self.tags.give_back_parked(bi);
                all.push(bi);
                // SAFETY: this thread alone holds `bi` (above), so nothing writes its
                // metadata while we read it.
                bi = unsafe { (*self.tags.meta(bi).get()).next };
            }
        }
        self.give_batch(&all);
    }

    pub(super) fn give_batch(&self, from: &[u32]) {
        #[cfg(any(test, debug_assertions))]
        for &bi in from {
            self.tags.check_free(bi);
        }
        let mut free = self.free_list();
        free.extend_from_slice(from);
        self.free_count.store(free.len() as u64, Ordering::Relaxed);
    }

    /// The free list, for tests that hold its lock.
    #[cfg(test)]
    pub(super) fn free_lock(&self) -> MutexGuard<'_, Vec<u32>> {
        self.free.lock().unwrap()
    }

    #[cfg(test)]
    pub(super) fn contended(&self) -> u64 {
        self.contended.load(Ordering::Relaxed)
    }
}
