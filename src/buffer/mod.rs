//! The buffer pool: one contiguous region of fixed-size packet buffers named by `u32` index.
//!
//! Every buffer is owned by exactly one place at a time: the pool's free list, a worker's
//! cache, a frame in flight, or a driver. Nothing is tracked per packet; instead each owner
//! reports how many it holds and `show buffers` checks that the sum adds up, so a leak shows
//! as an `unaccounted` count instead of hiding.

mod region;

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

/// Buffer flag: the packet is being traced.
pub const FLAG_TRACED: u16 = 1 << 0;
/// Buffer flag: the router itself made this packet (an ICMP reply or error), so forwarding
/// does not check or decrement its TTL.
pub const FLAG_LOCAL_ORIGIN: u16 = 1 << 1;

/// Per-buffer metadata, kept apart from the packet bytes so that the data region stays a
/// plain array of equal strides (the shape AF_XDP UMEM and memif regions need).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct BufferMeta {
    /// Start of this segment's data, counted from the start of the buffer.
    pub offset: u16,
    /// Bytes of data in this segment.
    pub len: u16,
    /// Bytes in the whole chain; meaningful in the first segment only.
    pub total_len: u32,
    /// Next segment of a chained packet, or `NO_BUFFER`.
    pub next: u32,
    /// Interface the packet arrived on.
    pub rx_if: u32,
    /// Interface the packet leaves by, chosen by a forwarding node.
    pub tx_if: u32,
    /// Next hop (adjacency index) chosen by a lookup node; `u32::MAX` before one ran.
    pub adj: u32,
    /// A word one node leaves for the next: on the way to icmp4-error / icmp6-error, the
    /// error to send (see `nodes::IcmpErrorRequest`). 0 when unused.
    pub aux: u32,
    /// `FLAG_*` bits.
    pub flags: u16,
    /// Index of this packet's record in the worker's trace, when traced.
    pub trace_index: u16,
    /// Receive time in nanoseconds since the Unix epoch (0 when unknown).
    pub timestamp_ns: u64,
}

impl BufferMeta {
    const FRESH: BufferMeta = BufferMeta {
        offset: HEADROOM as u16,
        len: 0,
        total_len: 0,
        next: NO_BUFFER,
        rx_if: u32::MAX,
        tx_if: u32::MAX,
        adj: u32::MAX,
        aux: 0,
        flags: 0,
        trace_index: 0,
        timestamp_ns: 0,
    };
}

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
}

/// The pool shared by all threads. Hand each thread a [`WorkerBuffers`] to use it.
pub struct BufferPool {
    region: Region,
    meta: Box<[UnsafeCell<BufferMeta>]>,
    free: Mutex<Vec<u32>>,
    free_count: AtomicU64,
    owners: Mutex<Vec<Arc<OwnerCounts>>>,
    count: u32,
}

// SAFETY: the metadata cells are only reached through `WorkerBuffers`, and a buffer index is
// held by exactly one thread at a time (it moves between threads only through the mutex-guarded
// free list), so no two threads touch the same cell concurrently.
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
            owners: Mutex::new(Vec::new()),
            count,
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
        }
    }

    fn take_batch(&self, into: &mut Vec<u32>, n: usize) -> usize {
        let mut free = self.free.lock().unwrap();
        let n = n.min(free.len());
        let at = free.len() - n;
        into.extend_from_slice(&free[at..]);
        free.truncate(at);
        self.free_count.store(free.len() as u64, Ordering::Relaxed);
        n
    }

    /// Take back buffers a driver held until its device let go of them (the driver is
    /// closing and has no worker handle any more).
    pub fn give_back(&self, from: &[u32]) {
        self.give_batch(from);
    }

    /// Like `give_back`, for packets: every segment of each chain goes back.
    pub fn give_back_chains(&self, heads: &[u32]) {
        let mut all = Vec::with_capacity(heads.len());
        for &head in heads {
            let mut bi = head;
            while bi < self.count && all.len() < self.count as usize {
                all.push(bi);
                // SAFETY: the caller owns these buffers (they were its, and no thread can
                // reach them), so nothing writes this metadata while we read it.
                bi = unsafe { (*self.meta[bi as usize].get()).next };
            }
        }
        self.give_batch(&all);
    }

    fn give_batch(&self, from: &[u32]) {
        let mut free = self.free.lock().unwrap();
        free.extend_from_slice(from);
        self.free_count.store(free.len() as u64, Ordering::Relaxed);
    }
}

/// One thread's access to the pool. Buffer data and metadata are reached only through this
/// handle, and `&mut self` keeps one thread from holding two mutable views at once.
pub struct WorkerBuffers {
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

    /// Return a packet (its whole chain) to the free buffers.
    pub fn free(&mut self, bi: u32) {
        let mut bi = bi;
        while bi != NO_BUFFER {
            let next = self.meta(bi).next;
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

    fn check(&self, bi: u32) -> usize {
        assert!(bi < self.pool.count, "buffer index {bi} out of range");
        bi as usize
    }

    pub fn meta(&self, bi: u32) -> &BufferMeta {
        let i = self.check(bi);
        // SAFETY: the index is in range, and the caller's thread owns buffer `bi` (ownership
        // moves only through the free list and frames), so no other thread writes this cell;
        // within this thread the borrow of `self` prevents a simultaneous `meta_mut`.
        unsafe { &*self.pool.meta[i].get() }
    }

    pub fn meta_mut(&mut self, bi: u32) -> &mut BufferMeta {
        let i = self.check(bi);
        // SAFETY: as in `meta`; `&mut self` makes this the only live view from this thread.
        unsafe { &mut *self.pool.meta[i].get() }
    }

    /// The whole buffer, headroom included.
    pub fn raw(&self, bi: u32) -> &[u8] {
        let i = self.check(bi);
        // SAFETY: buffer `i` lies inside the region (i < count, region = count * STRIDE) and
        // is owned by this thread, as argued in `meta`.
        unsafe { std::slice::from_raw_parts(self.pool.region.ptr().add(i * STRIDE), STRIDE) }
    }

    pub fn raw_mut(&mut self, bi: u32) -> &mut [u8] {
        let i = self.check(bi);
        // SAFETY: as in `raw`; `&mut self` makes this the only live view from this thread.
        unsafe { std::slice::from_raw_parts_mut(self.pool.region.ptr().add(i * STRIDE), STRIDE) }
    }

    /// This segment's packet bytes.
    pub fn data(&self, bi: u32) -> &[u8] {
        let m = *self.meta(bi);
        let start = (m.offset as usize).min(STRIDE);
        let end = (start + m.len as usize).min(STRIDE);
        &self.raw(bi)[start..end]
    }

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
        true
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

    /// Build a packet from `bytes`, chaining segments when it is larger than one buffer.
    /// Returns `None` (and allocates nothing) when the pool runs dry.
    pub fn packet_from_bytes(&mut self, bytes: &[u8]) -> Option<u32> {
        let segments = bytes.len().div_ceil(DATA_SIZE).max(1);
        let mut idx = [0u32; 8];
        if segments > idx.len() {
            return None;
        }
        let got = self.alloc(&mut idx[..segments]);
        if got < segments {
            // Give back what a short allocation did hand out.
            for &bi in &idx[..got] {
                self.cache.push(bi);
            }
            return None;
        }
        for (k, chunk_start) in (0..segments).map(|k| (k, k * DATA_SIZE)) {
            let chunk = &bytes[chunk_start..bytes.len().min(chunk_start + DATA_SIZE)];
            let bi = idx[k];
            let next = if k + 1 < segments {
                idx[k + 1]
            } else {
                NO_BUFFER
            };
            let m = self.meta_mut(bi);
            m.len = chunk.len() as u16;
            m.next = next;
            m.total_len = if k == 0 { bytes.len() as u32 } else { 0 };
            self.data_mut(bi).copy_from_slice(chunk);
        }
        Some(idx[0])
    }

    /// Copy a packet (all its segments) into `out`, replacing its contents.
    pub fn copy_packet(&self, bi: u32, out: &mut Vec<u8>) {
        out.clear();
        let mut seg = bi;
        while seg != NO_BUFFER {
            out.extend_from_slice(self.data(seg));
            seg = self.meta(seg).next;
        }
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
}
