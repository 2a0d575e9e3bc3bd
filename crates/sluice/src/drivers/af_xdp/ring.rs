//! The four single-producer single-consumer rings an AF_XDP socket shares with the kernel:
//! fill and tx (we produce, the kernel consumes) and rx and completion (the kernel produces,
//! we consume). Each is an mmap'd area holding a producer index, a consumer index, a flags
//! word and a power-of-two array of entries; indices run freely and wrap at 2^32.

use crate::sys::mapping::SharedMapping;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

/// Where the kernel put a ring's fields inside its mapping (struct xdp_ring_offset).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct RingOffsets {
    pub producer: u64,
    pub consumer: u64,
    pub desc: u64,
    pub flags: u64,
}

/// One mapped ring of `T` entries.
pub struct Ring<T: Copy> {
    /// Held for its lifetime: the pointers below point into it.
    _map: SharedMapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    entries: *mut T,
    mask: u32,
    size: u32,
    /// Our copy of the index we advance, and the last value read of the other side's.
    cached_prod: u32,
    cached_cons: u32,
}

// SAFETY: the ring's memory is a private mapping of this socket; one thread at a time uses a
// `Ring` (it is moved, not shared), and the kernel side synchronises through the atomics.
unsafe impl<T: Copy> Send for Ring<T> {}

/// Entry of the rx and tx rings (struct xdp_desc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct XdpDesc {
    pub addr: u64,
    pub len: u32,
    pub options: u32,
}

/// The kernel sets this in a ring's flags when it wants a system call to make progress.
const XDP_RING_NEED_WAKEUP: u32 = 1;

impl<T: Copy> Ring<T> {
    /// Map the ring of `size` entries at page offset `pgoff` of socket `fd`.
    ///
    /// # Safety
    ///
    /// `fd` is an AF_XDP socket whose ring at `pgoff` was configured with `size` entries (a
    /// power of two) of type `T`, and `off` is what XDP_MMAP_OFFSETS reported for that ring:
    /// the pointers built here are trusted to lie inside the mapping.
    pub unsafe fn map(
        fd: libc::c_int,
        pgoff: u64,
        size: u32,
        off: RingOffsets,
    ) -> io::Result<Ring<T>> {
        // The socket's ring at the offset the kernel defines for it: exactly the header and
        // `size` entries the kernel allocated.
        let map_len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        let mapping = SharedMapping::new(fd, map_len, pgoff as libc::off_t)?;
        let map = mapping.ptr();
        // SAFETY: the offsets come from the kernel (XDP_MMAP_OFFSETS) and lie inside the
        // mapping; the index and flag words are 4-byte aligned u32s the kernel updates
        // atomically, so viewing them as AtomicU32 is sound.
        let ring = unsafe {
            Ring {
                _map: mapping,
                producer: map.add(off.producer as usize) as *const AtomicU32,
                consumer: map.add(off.consumer as usize) as *const AtomicU32,
                flags: map.add(off.flags as usize) as *const AtomicU32,
                entries: map.add(off.desc as usize) as *mut T,
                mask: size - 1,
                size,
                cached_prod: 0,
                cached_cons: 0,
            }
        };
        let mut ring = ring;
        ring.cached_prod = ring.producer().load(Ordering::Relaxed);
        ring.cached_cons = ring.consumer().load(Ordering::Relaxed);
        Ok(ring)
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into our live mapping (see `map`).
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: points into our live mapping (see `map`).
        unsafe { &*self.consumer }
    }

    /// Whether the kernel asks to be woken by a system call.
    pub fn needs_wakeup(&self) -> bool {
        // SAFETY: points into our live mapping (see `map`).
        unsafe { &*self.flags }.load(Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    fn slot(&self, index: u32) -> *mut T {
        // SAFETY: masking keeps the slot inside the `size` entries of the mapping.
        unsafe { self.entries.add((index & self.mask) as usize) }
    }

    // --- The side we produce (fill, tx). ---

    /// Free slots, refreshing the kernel's consumer index only when the cached value says
    /// fewer than `want` are free.
    pub fn free_slots(&mut self, want: u32) -> u32 {
        let free = self.size - self.cached_prod.wrapping_sub(self.cached_cons);
        if free >= want {
            return free;
        }
        self.cached_cons = self.consumer().load(Ordering::Acquire);
        self.size - self.cached_prod.wrapping_sub(self.cached_cons)
    }

    /// Write the next entry (call only within `free_slots`); visible after `submit`.
    pub fn push(&mut self, entry: T) {
        // SAFETY: the slot is free (the caller checked `free_slots`), so the kernel does not
        // read it until we publish the producer index.
        unsafe { self.slot(self.cached_prod).write(entry) };
        self.cached_prod = self.cached_prod.wrapping_add(1);
    }

    /// Publish the entries pushed so far.
    pub fn submit(&self) {
        self.producer().store(self.cached_prod, Ordering::Release);
    }

    /// Entries we produced that the kernel has not consumed yet.
    pub fn unconsumed(&mut self) -> u32 {
        self.cached_cons = self.consumer().load(Ordering::Acquire);
        self.cached_prod.wrapping_sub(self.cached_cons)
    }

    // --- The side we consume (rx, completion). ---

    /// Entries ready to read (at most `max`).
    pub fn ready(&mut self, max: u32) -> u32 {
        let mut n = self.cached_prod.wrapping_sub(self.cached_cons);
        if n == 0 {
            self.cached_prod = self.producer().load(Ordering::Acquire);
            n = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        n.min(max)
    }

    /// Read entry `i` of those `ready` returned.
    pub fn peek(&self, i: u32) -> T {
        // SAFETY: the kernel published this slot (it is below the producer index we read
        // with Acquire) and does not reuse it until we release it.
        unsafe { self.slot(self.cached_cons.wrapping_add(i)).read() }
    }

    /// Give `n` read entries back to the kernel.
    pub fn release(&mut self, n: u32) {
        self.cached_cons = self.cached_cons.wrapping_add(n);
        self.consumer().store(self.cached_cons, Ordering::Release);
    }
}
