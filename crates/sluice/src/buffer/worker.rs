//! A worker's handle on the pool: allocation, freeing, and the accessors that take a buffer
//! index. Every accessor checks, in every build, that the index is in range and that this
//! handle holds the buffer (`ownership.rs`): a wrong index is a panic naming the buffer and its
//! holder, never a read or write of a buffer another thread may be using.

use super::{
    BufferMeta, BufferPool, OwnerCounts, CACHE_BATCH, CACHE_MAX, HEADROOM, NO_BUFFER, STRIDE,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One thread's access to the pool. Buffer data and metadata are reached only through this
/// handle, and `&mut self` keeps one thread from holding two mutable views at once. A handle
/// may use only the buffers it holds, and checks that it does (see "Ownership and soundness"
/// in the module).
pub struct WorkerBuffers {
    /// This handle's owner tag (`ownership.rs`).
    pub(super) id: u32,
    pub(super) pool: Arc<BufferPool>,
    pub(super) cache: Vec<u32>,
    pub(super) owner: Arc<OwnerCounts>,
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
            self.pool.tags.claim(bi, self.id);
            // SAFETY: `claim` indexed the tags with `bi` (so it is in range) and made this
            // handle its holder, as `check` would have found.
            unsafe { *self.cell(bi as usize).get() = BufferMeta::FRESH };
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
    /// segment: a double free, or a buffer another handle holds (or lent to a device, or
    /// parked), panics in every build.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn free(&mut self, bi: u32) {
        let mut bi = bi;
        while bi != NO_BUFFER {
            assert!(bi < self.pool.count, "buffer index {bi} out of range");
            self.pool.tags.release(bi, self.id);
            // SAFETY: in range; this handle held `bi` until the line above (its tag said so),
            // and it reaches no free list, so no other thread, before this read.
            let next = unsafe { (*self.pool.tags.meta(bi).get()).next };
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
        self.pool.tags.lend(bi, self.id);
    }

    /// Take buffer `bi` back from the device it was lent to (it came back on a ring and the
    /// driver checked that it lent it); this handle holds it from now on.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn reclaim(&mut self, bi: u32) {
        assert!(bi < self.pool.count, "buffer index {bi} out of range");
        self.pool.tags.reclaim(bi, self.id);
    }

    /// `reclaim`, for a buffer a device hands back as a new packet (a DPDK port's receive,
    /// where the mbuf may have been sent before): its metadata starts fresh.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn reclaim_fresh(&mut self, bi: u32) {
        self.reclaim(bi);
        let i = self.check(bi);
        // SAFETY: `check` found `i` in range and held by this handle.
        unsafe { *self.cell(i).get() = BufferMeta::FRESH };
    }

    /// Park packet `bi` (every segment) in a table of held packets that may outlive this
    /// handle (a packet waiting for its neighbour): until `unpark`, no handle may use it,
    /// and if the table goes away with the packet still in it,
    /// [`BufferPool::give_back_parked`] returns it to the pool, safely.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn park(&mut self, bi: u32) {
        let mut seg = bi;
        while seg != NO_BUFFER {
            let next = self.meta(seg).next;
            self.pool.tags.park(seg, self.id);
            seg = next;
        }
    }

    /// Take packet `bi` out of its table: this handle holds it (every segment) again.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    pub fn unpark(&mut self, bi: u32) {
        let mut seg = bi;
        while seg != NO_BUFFER {
            assert!(seg < self.pool.count, "buffer index {seg} out of range");
            self.pool.tags.unpark(seg, self.id);
            seg = self.meta(seg).next;
        }
    }

    /// The index as a slot number, after checking that it is in range and that this handle
    /// holds the buffer (in every build: this is what makes the accessors sound).
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    fn check(&self, bi: u32) -> usize {
        // In range (there are `count` tags) and held by this handle.
        self.pool.tags.check_held(bi, self.id);
        bi as usize
    }

    /// Slot `i`'s metadata cell, without a second bounds check.
    ///
    /// # Safety
    ///
    /// `i` came from `check` (so `i < count`, the metadata's length).
    #[inline(always)]
    unsafe fn cell(&self, i: usize) -> &std::cell::UnsafeCell<super::BufferMeta> {
        // SAFETY: `i < count` (the caller's contract).
        unsafe { self.pool.tags.meta_unchecked(i) }
    }

    /// Buffer `bi`'s metadata. Panics unless this handle holds `bi`.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn meta(&self, bi: u32) -> &BufferMeta {
        let i = self.check(bi);
        // SAFETY: the index is in range, and buffer `bi`'s tag names this handle (`check`),
        // which only this handle can change (and not while `self` is borrowed), so no other
        // thread touches this cell; the borrow of `self` prevents a simultaneous `meta_mut`.
        unsafe { &*self.cell(i).get() }
    }

    /// As `meta`, writable.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn meta_mut(&mut self, bi: u32) -> &mut BufferMeta {
        let i = self.check(bi);
        // SAFETY: as in `meta`; `&mut self` makes this the only live view from this thread.
        unsafe { &mut *self.cell(i).get() }
    }

    /// The whole buffer, headroom included. Panics unless this handle holds `bi`.
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

    /// This segment's packet bytes. Panics unless this handle holds `bi`.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn data(&self, bi: u32) -> &[u8] {
        let i = self.check(bi);
        let (start, len) = self.span(i);
        // SAFETY: `start + len <= STRIDE` (`span`), so the bytes lie inside buffer `i`, which
        // this handle holds, as argued in `meta`.
        unsafe { std::slice::from_raw_parts(self.pool.region.ptr().add(i * STRIDE + start), len) }
    }

    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn data_mut(&mut self, bi: u32) -> &mut [u8] {
        let i = self.check(bi);
        let (start, len) = self.span(i);
        let at = i * STRIDE + start;
        // SAFETY: as in `data`; `&mut self` makes this the only live view from this thread.
        unsafe { std::slice::from_raw_parts_mut(self.pool.region.ptr().add(at), len) }
    }

    /// Buffer `bi`'s metadata and its segment's bytes, for one ownership check where a node
    /// needs both. Panics unless this handle holds `bi`.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn meta_data(&self, bi: u32) -> (&BufferMeta, &[u8]) {
        let i = self.check(bi);
        let (start, len) = self.span(i);
        // SAFETY: as in `meta` and `data`; the metadata and the bytes are apart.
        unsafe {
            (
                &*self.cell(i).get(),
                std::slice::from_raw_parts(self.pool.region.ptr().add(i * STRIDE + start), len),
            )
        }
    }

    /// As `meta_data`, both writable: the metadata cell and the bytes do not overlap.
    #[cfg_attr(any(test, debug_assertions), track_caller)]
    #[inline(always)]
    pub fn meta_data_mut(&mut self, bi: u32) -> (&mut BufferMeta, &mut [u8]) {
        let i = self.check(bi);
        let (start, len) = self.span(i);
        // SAFETY: as in `meta_mut` and `data_mut`; the metadata lives in the slot array and the
        // bytes in the region, so the two borrows are disjoint.
        unsafe {
            (
                &mut *self.cell(i).get(),
                std::slice::from_raw_parts_mut(self.pool.region.ptr().add(i * STRIDE + start), len),
            )
        }
    }

    /// Where slot `i`'s data lies in its buffer, clamped to the buffer: (start, length). One
    /// ownership check serves the metadata and the bytes.
    #[inline(always)]
    fn span(&self, i: usize) -> (usize, usize) {
        // SAFETY: `i` came from `check`: in range and held by this handle (see `meta`).
        let m = unsafe { &*self.cell(i).get() };
        let start = (m.offset as usize).min(STRIDE);
        let end = (start + m.len as usize).min(STRIDE);
        (start, end - start)
    }

    /// Drop the first `n` bytes of the packet starting at `bi` (outer headers a node
    /// removes). Refused, with nothing changed, when the first segment is shorter than `n`.
    pub fn advance(&mut self, bi: u32, n: usize) -> bool {
        self.meta_mut(bi).advance(n)
    }

    /// Make room for `n` more bytes in front of the packet starting at `bi` (tags an
    /// output pushes), out of the headroom. Refused, with nothing changed, when the headroom
    /// is shorter than `n`.
    pub fn prepend(&mut self, bi: u32, n: usize) -> bool {
        self.meta_mut(bi).prepend(n)
    }

    /// The first segment's bytes from the L3 header on, where ethernet-input found it.
    /// Empty when the recorded offset lies past the segment's end.
    #[inline(always)]
    pub fn l3(&self, bi: u32) -> &[u8] {
        let (m, data) = self.meta_data(bi);
        data.get(m.l3_offset as usize..).unwrap_or_default()
    }

    /// Like `l3`, writable.
    #[inline(always)]
    pub fn l3_mut(&mut self, bi: u32) -> &mut [u8] {
        let (m, data) = self.meta_data_mut(bi);
        data.get_mut(m.l3_offset as usize..).unwrap_or_default()
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
            _mm_prefetch::<_MM_HINT_T0>(self.pool.tags.meta(bi).get() as *const i8);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// As `prefetch`, the metadata (and tag) only: for a driver about to hand `bi` over,
    /// which reads no packet byte.
    #[inline(always)]
    pub fn prefetch_meta(&self, bi: u32) {
        if bi >= self.pool.count {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetch never faults and reads nothing architecturally; the address lies
        // inside the metadata array (index checked above).
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.pool.tags.meta(bi).get() as *const i8);
        }
    }

    pub fn packet_len(&self, bi: u32) -> usize {
        self.meta(bi).total_len as usize
    }

    /// How many buffers the chain starting at `bi` holds (1 for an unchained packet).
    pub fn segment_count(&self, bi: u32) -> usize {
        let mut segs = 0;
        let mut seg = bi;
        while seg != NO_BUFFER {
            segs += 1;
            seg = self.meta(seg).next;
        }
        segs
    }
}

impl Drop for WorkerBuffers {
    fn drop(&mut self) {
        self.flush_cache();
    }
}
