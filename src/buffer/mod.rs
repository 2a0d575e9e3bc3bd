//! The buffer pool: one contiguous region of fixed-size packet buffers named by `u32` index.
//!
//! Every buffer is owned by exactly one place at a time: the pool's free list, a worker's
//! cache, a frame in flight, or a driver. Nothing is counted per packet; instead each owner
//! reports how many it holds and `show buffers` checks that the sum adds up, so a leak shows
//! as an `unaccounted` count instead of hiding.
//!
//! # Ownership and soundness
//!
//! A buffer index is a capability. Each index is held by one holder at a time: a free list
//! (the pool's, or a worker's cache), one [`WorkerBuffers`] handle (in its frames, its
//! drivers' queues, its nodes' tables), or a device that handle lent it to. Indices move only
//! by these hand-overs: `alloc` (free list → handle), `free` (handle → its cache, and on to
//! the pool), `lend`/`reclaim` (handle → device ring → a handle), and `BufferPool::give_back`
//! (a closing driver or table → pool). No path hands an index straight from one worker to
//! another; a buffer changes threads only through a free list or a device ring.
//!
//! The accessors (`meta`, `meta_mut`, `data`, `data_mut`, `raw`, `raw_mut`, `free`) are safe
//! functions that take any `u32`. They bound-check the index, so no access leaves the region;
//! what they do not check in a release build is that the caller's handle holds the buffer.
//! They rely on the invariant that an index reaches a handle only through the hand-overs
//! above, so that two threads never use one buffer: every index a worker uses was produced
//! by the crate's own code (allocated by that handle, returned by its driver's `rx_burst`,
//! carried in its frames), and where a driver turns a device's descriptor back into an
//! index it first checks the descriptor against what it lent (af_xdp's `Outstanding`,
//! memif's `Slots`). Within one thread, `&self`/`&mut self` keep a handle's views apart.
//! An index made up from a number and used while another thread holds that buffer would be
//! a data race in a release build; that is the one thing this module trusts its callers on.
//!
//! Debug and test builds check the invariant on every use (`ownership.rs`): each buffer has
//! an owner tag that the hand-overs move, and `free` and every accessor assert that the
//! calling handle holds the buffer. A double free, a free or use of a buffer another handle
//! holds, of a free buffer, or of one lent to a device panics there with the buffer and its
//! holder. Release builds compile the tags away: the graph bench runs the same instructions.

mod meta;
#[cfg(any(test, debug_assertions))]
mod ownership;
mod region;

#[cfg(any(test, debug_assertions))]
use ownership::Tags;

/// An ownership-tag statement (`ownership.rs`): run in debug and test builds, absent from
/// release builds, so that the fast path compiles exactly as it would without tags.
macro_rules! tags {
    ($($stmt:tt)*) => {
        #[cfg(any(test, debug_assertions))]
        {
            $($stmt)*
        }
    };
}

// After `tags!`, which it uses.
mod packet;

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use meta::{BufferMeta, FLAG_LOCAL_ORIGIN, FLAG_TRACED, UNTAGGED_L3_OFFSET};
pub use region::Region;

/// Bytes of packet data in one buffer segment.
pub const DATA_SIZE: usize = 2048;
/// Bytes before the data, so that encapsulations can prepend headers without a copy.
pub const HEADROOM: usize = 256;
/// Distance between two buffers in the region.
pub const STRIDE: usize = HEADROOM + DATA_SIZE;
/// "No buffer": ends a chain.
pub const NO_BUFFER: u32 = u32::MAX;
/// How many buffers a worker moves between its cache and the pool at once.
const CACHE_BATCH: usize = 256;
/// A worker's cache never holds more than this; the rest goes back to the pool.
const CACHE_MAX: usize = 4 * CACHE_BATCH;

/// How a pool should get its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// 2 MiB huge pages when the system has enough free, normal pages otherwise.
    Auto,
    /// Huge pages or fail.
    Require,
    /// Normal pages only.
    Never,
}

/// Who holds how many buffers; workers publish theirs once per loop.
#[derive(Default)]
pub struct OwnerCounts {
    /// Free buffers kept in the worker's private cache.
    pub cached: AtomicU64,
    /// Buffers inside frames that the graph has not finished with.
    pub in_frames: AtomicU64,
    /// Buffers held by drivers (rings, pending transmit).
    pub in_drivers: AtomicU64,
}

/// A snapshot of where the buffers are, for `show buffers`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BufferReport {
    pub total: u64,
    pub free_in_pool: u64,
    pub free_in_caches: u64,
    pub in_use: u64,
    pub in_frames: u64,
    pub in_drivers: u64,
    /// In use but claimed by no owner: a leak if it stays above zero when traffic stops.
    pub unaccounted: i64,
    pub buffer_size: u64,
    pub data_size: u64,
    pub region_bytes: u64,
    pub huge_pages: bool,
    /// Times a thread took the shared free list's lock (a batch of 256 buffers to or from
    /// its cache), and how many of those found it held by another thread and waited.
    pub free_list_locks: u64,
    pub free_list_contended: u64,
}

/// The pool shared by all threads. Hand each thread a [`WorkerBuffers`] to use it.
pub struct BufferPool {
    region: Region,
    meta: Box<[UnsafeCell<BufferMeta>]>,
    free: Mutex<Vec<u32>>,
    free_count: AtomicU64,
    /// Takes of `free`'s lock, and those that had to wait for another thread.
    locks: AtomicU64,
    contended: AtomicU64,
    owners: Mutex<Vec<Arc<OwnerCounts>>>,
    count: u32,
    /// Who holds each buffer (debug and test builds only).
    #[cfg(any(test, debug_assertions))]
    tags: Tags,
}

// SAFETY: the metadata cells and the region are only reached through `WorkerBuffers` (and
// `give_back_chains`, for buffers its caller holds), and a buffer index is held by exactly one
// thread at a time: it moves between threads only through the mutex-guarded free list or a
// device ring (see "Ownership and soundness" above, checked in debug builds), so no two
// threads touch the same cell concurrently.
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
        let meta: Box<[UnsafeCell<BufferMeta>]> = (0..count)
            .map(|_| UnsafeCell::new(BufferMeta::FRESH))
            .collect();
        // Hand out low indices first: they are the ones most likely to be warm in cache.
        let free: Vec<u32> = (0..count).rev().collect();
        Ok(Arc::new(BufferPool {
            region,
            meta,
            free: Mutex::new(free),
            free_count: AtomicU64::new(count as u64),
            locks: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            owners: Mutex::new(Vec::new()),
            count,
            #[cfg(any(test, debug_assertions))]
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
            #[cfg(any(test, debug_assertions))]
            id: self.tags.new_handle(),
            pool: self.clone(),
            cache: Vec::with_capacity(CACHE_MAX + CACHE_BATCH),
            owner,
        }
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
    fn free_list(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.locks.fetch_add(1, Ordering::Relaxed);
        match self.free.try_lock() {
            Ok(free) => free,
            Err(std::sync::TryLockError::WouldBlock) => {
                self.contended.fetch_add(1, Ordering::Relaxed);
                self.free.lock().unwrap()
            }
            Err(std::sync::TryLockError::Poisoned(e)) => panic!("buffer free list: {e}"),
        }
    }

    fn take_batch(&self, into: &mut Vec<u32>, n: usize) -> usize {
        let mut free = self.free_list();
        let n = n.min(free.len());
        let at = free.len() - n;
        tags!(for &bi in &free[at..] {
            self.tags.check_free(bi);
        });
        into.extend_from_slice(&free[at..]);
        free.truncate(at);
        self.free_count.store(free.len() as u64, Ordering::Relaxed);
        n
    }

    /// Take back buffers a driver held until its device let go of them (the driver is
    /// closing and has no worker handle any more). The caller must hold every one of them
    /// (or have had them lent to its device, now closed) and use none of them afterwards;
    /// debug builds panic on one that is already free.
    pub fn give_back(&self, from: &[u32]) {
        for &bi in from {
            assert!(bi < self.count, "buffer index {bi} out of range");
            tags!(self.tags.give_back(bi));
        }
        self.give_batch(from);
    }

    /// Like `give_back`, for packets: every segment of each chain goes back.
    pub fn give_back_chains(&self, heads: &[u32]) {
        let mut all = Vec::with_capacity(heads.len());
        for &head in heads {
            let mut bi = head;
            while bi < self.count && all.len() < self.count as usize {
                tags!(self.tags.give_back(bi));
                all.push(bi);
                // SAFETY: the caller holds these buffers (they were its, and no other thread
                // has their indices), so nothing writes this metadata while we read it.
                bi = unsafe { (*self.meta[bi as usize].get()).next };
            }
        }
        self.give_batch(&all);
    }

    fn give_batch(&self, from: &[u32]) {
        tags!(for &bi in from {
            self.tags.check_free(bi);
        });
        let mut free = self.free_list();
        free.extend_from_slice(from);
        self.free_count.store(free.len() as u64, Ordering::Relaxed);
    }
}

/// One thread's access to the pool. Buffer data and metadata are reached only through this
/// handle, and `&mut self` keeps one thread from holding two mutable views at once. A handle
/// may use only the buffers it holds (see "Ownership and soundness" in the module).
pub struct WorkerBuffers {
    /// This handle's owner tag in debug builds' checks and messages.
    #[cfg(any(test, debug_assertions))]
    id: u16,
    pool: Arc<BufferPool>,
    cache: Vec<u32>,
    owner: Arc<OwnerCounts>,
}

impl WorkerBuffers {
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// Counters this thread publishes for `show buffers`.
    pub fn owner(&self) -> &Arc<OwnerCounts> {
        &self.owner
    }

    /// Allocate up to `out.len()` fresh buffers; returns how many were allocated.
    pub fn alloc(&mut self, out: &mut [u32]) -> usize {
        if self.cache.len() < out.len() {
            let want = (out.len() - self.cache.len()).max(CACHE_BATCH);
            self.pool.take_batch(&mut self.cache, want);
        }
        let n = out.len().min(self.cache.len());
        let at = self.cache.len() - n;
        out[..n].copy_from_slice(&self.cache[at..]);
        for &bi in &out[..n] {
            tags!(self.pool.tags.claim(bi, self.id));
            *self.meta_mut(bi) = BufferMeta::FRESH;
        }
        self.cache.truncate(at);
        n
    }

    /// Allocate one fresh buffer.
    pub fn alloc_one(&mut self) -> Option<u32> {
        let mut one = [0u32];
        (self.alloc(&mut one) == 1).then_some(one[0])
    }

    /// Return a packet (its whole chain) to the free buffers. This handle must hold every
    /// segment and use none of them afterwards: debug builds panic on a double free or a
    /// buffer another handle holds (or lent to a device); release builds trust it.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn free(&mut self, bi: u32) {
        let mut bi = bi;
        while bi != NO_BUFFER {
            assert!(bi < self.pool.count, "buffer index {bi} out of range");
            tags!(self.pool.tags.release(bi, self.id));
            // SAFETY: in range; this handle held `bi` until the line above (the ownership
            // invariant), and it reaches no free list before this read.
            let next = unsafe { (*self.pool.meta[bi as usize].get()).next };
            self.cache.push(bi);
            bi = next;
        }
        if self.cache.len() > CACHE_MAX {
            let at = self.cache.len() - CACHE_BATCH;
            self.pool.give_batch(&self.cache[at..]);
            self.cache.truncate(at);
        }
    }

    /// Free every packet in `bis`.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn free_all(&mut self, bis: &[u32]) {
        for &bi in bis {
            self.free(bi);
        }
    }

    /// Give the whole cache back to the pool (when a thread stops).
    pub fn flush_cache(&mut self) {
        self.pool.give_batch(&self.cache);
        self.cache.clear();
        self.publish_cache();
    }

    /// Publish the cache size for `show buffers`.
    pub fn publish_cache(&self) {
        self.owner
            .cached
            .store(self.cache.len() as u64, Ordering::Relaxed);
    }

    /// Hand buffer `bi`, which this handle holds, to a device (put on a ring the kernel or a
    /// peer reads or writes). Until some handle takes it back with `reclaim` (or the driver
    /// gives it back to the pool once the device is closed), debug builds panic on any use.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn lend(&mut self, bi: u32) {
        assert!(bi < self.pool.count, "buffer index {bi} out of range");
        tags!(self.pool.tags.lend(bi, self.id));
    }

    /// Take buffer `bi` back from the device it was lent to (it came back on a ring and the
    /// driver checked that it lent it); this handle holds it from now on.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn reclaim(&mut self, bi: u32) {
        assert!(bi < self.pool.count, "buffer index {bi} out of range");
        tags!(self.pool.tags.reclaim(bi, self.id));
    }

    /// The index as a slot number, after checking it is in range (always) and that this
    /// handle holds the buffer (debug and test builds).
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    fn check(&self, bi: u32) -> usize {
        assert!(bi < self.pool.count, "buffer index {bi} out of range");
        tags!(self.pool.tags.check_held(bi, self.id));
        bi as usize
    }

    /// Buffer `bi`'s metadata. This handle must hold `bi` (checked in debug builds; see
    /// "Ownership and soundness" in the module for what release builds rely on).
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn meta(&self, bi: u32) -> &BufferMeta {
        let i = self.check(bi);
        // SAFETY: the index is in range, and this handle's thread holds buffer `bi` (the
        // module's ownership invariant), so no other thread writes this cell; within this
        // thread the borrow of `self` prevents a simultaneous `meta_mut`.
        unsafe { &*self.pool.meta[i].get() }
    }

    /// As `meta`, writable.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn meta_mut(&mut self, bi: u32) -> &mut BufferMeta {
        let i = self.check(bi);
        // SAFETY: as in `meta`; `&mut self` makes this the only live view from this thread.
        unsafe { &mut *self.pool.meta[i].get() }
    }

    /// The whole buffer, headroom included. This handle must hold `bi`, as for `meta`.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn raw(&self, bi: u32) -> &[u8] {
        let i = self.check(bi);
        // SAFETY: buffer `i` lies inside the region (i < count, region = count * STRIDE) and
        // is owned by this thread, as argued in `meta`.
        unsafe { std::slice::from_raw_parts(self.pool.region.ptr().add(i * STRIDE), STRIDE) }
    }

    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn raw_mut(&mut self, bi: u32) -> &mut [u8] {
        let i = self.check(bi);
        // SAFETY: as in `raw`; `&mut self` makes this the only live view from this thread.
        unsafe { std::slice::from_raw_parts_mut(self.pool.region.ptr().add(i * STRIDE), STRIDE) }
    }

    /// This segment's packet bytes. This handle must hold `bi`, as for `meta`.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn data(&self, bi: u32) -> &[u8] {
        let m = *self.meta(bi);
        let start = (m.offset as usize).min(STRIDE);
        let end = (start + m.len as usize).min(STRIDE);
        &self.raw(bi)[start..end]
    }

    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn data_mut(&mut self, bi: u32) -> &mut [u8] {
        let m = *self.meta(bi);
        let start = (m.offset as usize).min(STRIDE);
        let end = (start + m.len as usize).min(STRIDE);
        &mut self.raw_mut(bi)[start..end]
    }

    /// Drop the first `n` bytes of the packet starting at `bi` (outer headers a node
    /// removes). Refused, with nothing changed, when the first segment is shorter than `n`.
    pub fn advance(&mut self, bi: u32, n: usize) -> bool {
        let m = self.meta_mut(bi);
        let Ok(n16) = u16::try_from(n) else {
            return false;
        };
        if n16 > m.len || n as u32 > m.total_len {
            return false;
        }
        m.offset += n16;
        m.len -= n16;
        m.total_len -= n as u32;
        // The L3 header stays where it was in the bytes: nearer the new start.
        m.l3_offset = m.l3_offset.saturating_sub(n.min(u8::MAX as usize) as u8);
        true
    }

    /// Make room for `n` more bytes in front of the packet starting at `bi` (tags an
    /// output pushes), out of the headroom. Refused, with nothing changed, when the headroom
    /// is shorter than `n`.
    pub fn prepend(&mut self, bi: u32, n: usize) -> bool {
        let m = self.meta_mut(bi);
        let Ok(n16) = u16::try_from(n) else {
            return false;
        };
        if n16 > m.offset || m.len as usize + n > u16::MAX as usize {
            return false;
        }
        m.offset -= n16;
        m.len += n16;
        m.total_len += n as u32;
        m.l3_offset = m.l3_offset.saturating_add(n.min(u8::MAX as usize) as u8);
        true
    }

    /// The first segment's bytes from the L3 header on, where ethernet-input found it.
    /// Empty when the recorded offset lies past the segment's end.
    #[inline(always)]
    pub fn l3(&self, bi: u32) -> &[u8] {
        let at = self.meta(bi).l3_offset as usize;
        self.data(bi).get(at..).unwrap_or_default()
    }

    /// Like `l3`, writable.
    #[inline(always)]
    pub fn l3_mut(&mut self, bi: u32) -> &mut [u8] {
        let at = self.meta(bi).l3_offset as usize;
        self.data_mut(bi).get_mut(at..).unwrap_or_default()
    }

    /// Total length of the packet that starts at `bi`.
    /// Ask the CPU to start loading the first cache line of `bi`'s data and its metadata,
    /// so a node can touch packet k+N while it works on packet k. A hint only.
    #[inline(always)]
    pub fn prefetch(&self, bi: u32) {
        if bi >= self.pool.count {
            return;
        }
        let i = bi as usize;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetch never faults and reads nothing architecturally; both addresses lie
        // inside the pool's region and metadata array (index checked above).
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let data = self.pool.region.ptr().add(i * STRIDE + HEADROOM);
            _mm_prefetch::<_MM_HINT_T0>(data as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(self.pool.meta[i].get() as *const i8);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    pub fn packet_len(&self, bi: u32) -> usize {
        self.meta(bi).total_len as usize
    }
}

impl Drop for WorkerBuffers {
    fn drop(&mut self) {
        self.flush_cache();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that finds the shared free list held waits for it and counts the wait; a
    /// worker whose cache serves it never takes the lock.
    #[test]
    fn free_list_takes_and_waits_are_counted() {
        let pool = BufferPool::new(4096, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let mut some = [0u32; 8];
        assert_eq!(bufs.alloc(&mut some), 8);
        let r = pool.report();
        assert_eq!((r.free_list_locks, r.free_list_contended), (1, 0));
        // Freed into and taken again from the cache: no lock.
        bufs.free_all(&some);
        assert_eq!(bufs.alloc(&mut some), 8);
        assert_eq!(pool.report().free_list_locks, 1);
        bufs.free_all(&some);

        let held = pool.free.lock().unwrap();
        let other = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let mut bufs = pool.worker_handle();
                let mut one = [0u32; 1];
                let n = bufs.alloc(&mut one);
                bufs.free_all(&one[..n]);
                n
            })
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while pool.contended.load(Ordering::Relaxed) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the other worker never waited"
            );
            std::thread::yield_now();
        }
        drop(held);
        assert_eq!(other.join().unwrap(), 1);
        // The other worker took the lock twice: for its batch, and when its handle went
        // and gave its cache back.
        let r = pool.report();
        assert_eq!((r.free_list_locks, r.free_list_contended), (3, 1));
    }

    #[test]
    fn clone_copies_every_segment_and_frees_independently() {
        let pool = BufferPool::new(16, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        for len in [60, 2048, 5000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let bi = w.packet_from_bytes(&bytes).unwrap();
            w.meta_mut(bi).rx_if = 3;
            w.meta_mut(bi).flags = FLAG_TRACED | FLAG_LOCAL_ORIGIN;
            let c = w.clone_packet(bi).unwrap();
            w.free(bi);
            let mut out = Vec::new();
            w.copy_packet(c, &mut out);
            assert_eq!(out, bytes);
            assert_eq!(w.meta(c).rx_if, 3);
            assert_eq!(w.meta(c).flags, FLAG_LOCAL_ORIGIN);
            w.free(c);
        }
        w.publish_cache();
        assert_eq!(pool.report().in_use, 0);
    }

    #[test]
    fn clone_with_the_pool_dry_allocates_nothing() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bi = w.packet_from_bytes(&[1u8; 5000]).unwrap(); // 3 segments
        assert_eq!(w.clone_packet(bi), None);
        w.free(bi);
        w.publish_cache();
        assert_eq!(pool.report().in_use, 0);
    }

    #[test]
    fn alloc_and_free_return_to_idle() {
        let pool = BufferPool::new(1024, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let mut got = [0u32; 300];
        assert_eq!(w.alloc(&mut got), 300);
        assert_eq!(pool.report().in_use, 300);
        w.free_all(&got);
        w.publish_cache();
        let r = pool.report();
        assert_eq!(r.in_use, 0);
        assert_eq!(r.free_in_pool + r.free_in_caches, 1024);
    }

    #[test]
    fn pool_runs_dry_without_panic() {
        let pool = BufferPool::new(10, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let mut got = [0u32; 16];
        assert_eq!(w.alloc(&mut got), 10);
        assert!(w.alloc_one().is_none());
        assert!(w.packet_from_bytes(&[1, 2, 3]).is_none());
    }

    #[test]
    fn jumbo_packet_chains_and_copies_back() {
        let pool = BufferPool::new(64, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bytes: Vec<u8> = (0..9000u32).map(|i| (i * 7) as u8).collect();
        let bi = w.packet_from_bytes(&bytes).unwrap();
        assert_eq!(w.packet_len(bi), 9000);
        assert_ne!(w.meta(bi).next, NO_BUFFER);
        let mut back = Vec::new();
        w.copy_packet(bi, &mut back);
        assert_eq!(back, bytes);
        w.free(bi);
        w.publish_cache();
        assert_eq!(pool.report().in_use, 0);
    }

    #[test]
    fn advance_drops_leading_bytes_within_the_first_segment() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bi = w.packet_from_bytes(&[1, 2, 3, 4, 5]).unwrap();
        assert!(w.advance(bi, 2));
        assert_eq!(w.data(bi), &[3, 4, 5]);
        assert_eq!(w.packet_len(bi), 3);
        assert!(!w.advance(bi, 4));
        assert!(!w.advance(bi, 1 << 20));
        assert!(w.advance(bi, 3));
        assert_eq!(w.packet_len(bi), 0);
    }

    #[test]
    fn zero_length_packet_uses_one_buffer() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bi = w.packet_from_bytes(&[]).unwrap();
        assert_eq!(w.packet_len(bi), 0);
        assert_eq!(w.meta(bi).next, NO_BUFFER);
    }

    // Ownership checks (test and debug builds): misuse panics with the buffer and its holder.

    #[test]
    #[should_panic(expected = "freed by worker handle 1, but it is free")]
    fn double_free_panics() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bi = w.alloc_one().unwrap();
        w.free(bi);
        w.free(bi);
    }

    #[test]
    #[should_panic(expected = "freed by worker handle 2, but it is held by worker handle 1")]
    fn freeing_a_buffer_another_worker_holds_panics() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut a = pool.worker_handle();
        let mut b = pool.worker_handle();
        let bi = a.alloc_one().unwrap();
        b.free(bi);
    }

    #[test]
    #[should_panic(expected = "used by worker handle 1, but it is free")]
    fn meta_mut_on_a_free_buffer_panics() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bi = w.alloc_one().unwrap();
        w.free(bi);
        w.meta_mut(bi).len = 1;
    }

    #[test]
    #[should_panic(expected = "used by worker handle 1, but it is free")]
    fn data_mut_on_a_buffer_never_allocated_panics() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        w.data_mut(2)[0] = 1;
    }

    #[test]
    #[should_panic(expected = "used by worker handle 2, but it is held by worker handle 1")]
    fn reading_a_buffer_another_worker_holds_panics() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut a = pool.worker_handle();
        let b = pool.worker_handle();
        let bi = a.packet_from_bytes(&[1, 2, 3]).unwrap();
        let _ = b.data(bi);
    }

    #[test]
    #[should_panic(expected = "freed by worker handle 1, but it is free")]
    fn freeing_a_chain_whose_segment_is_free_panics() {
        let pool = BufferPool::new(8, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let head = w.packet_from_bytes(&[7; DATA_SIZE + 1]).unwrap();
        let second = w.meta(head).next;
        let lone = w.alloc_one().unwrap();
        w.meta_mut(lone).next = second;
        w.free(lone);
        w.free(head);
    }

    #[test]
    #[should_panic(
        expected = "used by worker handle 1, but it is lent to a device by worker handle 1"
    )]
    fn a_lent_buffer_cannot_be_used_until_reclaimed() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bi = w.alloc_one().unwrap();
        w.lend(bi);
        let _ = w.meta(bi);
    }

    #[test]
    #[should_panic(expected = "given back to the pool, but it is already free")]
    fn giving_back_a_free_buffer_panics() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut w = pool.worker_handle();
        let bi = w.alloc_one().unwrap();
        w.free(bi);
        pool.give_back(&[bi]);
    }

    #[test]
    fn lent_buffers_come_back_through_any_worker_or_the_pool() {
        let pool = BufferPool::new(4, HugePages::Never).unwrap();
        let mut a = pool.worker_handle();
        let mut b = pool.worker_handle();
        let x = a.packet_from_bytes(&[1, 2, 3]).unwrap();
        let y = a.alloc_one().unwrap();
        a.lend(x);
        a.lend(y);
        // A device queue that moved to another thread hands its buffers to that worker.
        b.reclaim(x);
        assert_eq!(b.data(x), &[1, 2, 3]);
        b.free(x);
        // A closing driver returns what its device still had.
        pool.give_back(&[y]);
        drop((a, b));
        let r = pool.report();
        assert_eq!(r.free_in_pool, 4);
        assert_eq!(pool.tags.holder(y), "free");
    }
}
