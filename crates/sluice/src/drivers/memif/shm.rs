//! The memory memif peers share: regions (memfd mappings) and the rings inside them.
//!
//! Everything here is reached through raw pointers, never through Rust references: the peer
//! writes the same memory at the same time, so only copies in and out of it are made, and
//! every offset and length that comes from the peer is checked against the region first.

use super::proto::{MAX_LOG2_RING_SIZE, RING_COOKIE};
use super::violation::Violation;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU16, Ordering};

/// Ring header: cookie, flags and head on the first cache line, tail on the second,
/// descriptors from the third.
pub const RING_HEADER: usize = 128;
const FLAGS_AT: usize = 4;
const HEAD_AT: usize = 6;
const TAIL_AT: usize = 64;
/// Ring flag set by the consumer: "do not interrupt me, I poll".
pub const RING_FLAG_MASK_INT: u16 = 1;
/// Descriptor flag: the packet continues in the next descriptor.
pub const DESC_FLAG_NEXT: u16 = 1;
pub const DESC_SIZE: usize = 16;

/// Bytes of a ring of 2^log2 descriptors.
pub fn ring_bytes(log2: u8) -> usize {
    RING_HEADER + (DESC_SIZE << log2)
}

/// One descriptor (memif_desc_t).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Desc {
    pub flags: u16,
    pub region: u16,
    pub length: u32,
    pub offset: u32,
    pub metadata: u32,
}

/// A region mapped from a peer's (or our own) descriptor.
pub struct Region {
    ptr: *mut u8,
    len: usize,
    /// Keeps the memory alive for peers that map it after us (our own regions).
    _fd: Option<OwnedFd>,
}

// SAFETY: a region is plain shared memory; all access goes through raw-pointer copies and
// atomics, which are sound from any thread.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

const F_ADD_SEALS: libc::c_int = 1033;
const F_GET_SEALS: libc::c_int = 1034;
const F_SEAL_SHRINK: libc::c_int = 0x0002;
const F_SEAL_GROW: libc::c_int = 0x0004;

/// A sealed memfd of `len` bytes: it can neither shrink under a peer that mapped it nor grow.
pub fn memfd(name: &str, len: usize) -> io::Result<OwnedFd> {
    let cname = std::ffi::CString::new(name).unwrap_or_default();
    // SAFETY: a valid NUL-terminated name; the result is checked.
    let fd =
        unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just created and own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: plain fcntl/ftruncate calls on our descriptor.
    unsafe {
        if libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) < 0 {
            return Err(io::Error::last_os_error());
        }
        libc::fcntl(fd.as_raw_fd(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
    }
    Ok(fd)
}

impl Region {
    /// Map `len` bytes of `fd`. A peer's descriptor must be a memfd sealed against shrinking
    /// (memory that vanished under a mapping would kill us with SIGBUS on the next access),
    /// checked before its size, which the seal then keeps. Our own regions are trusted.
    pub fn map(fd: OwnedFd, len: usize, keep_fd: bool) -> Result<Region, (Violation, String)> {
        if !keep_fd {
            // SAFETY: reads the seals of the descriptor; no memory is passed.
            let seals = unsafe { libc::fcntl(fd.as_raw_fd(), F_GET_SEALS) };
            if seals < 0 {
                return Err((
                    Violation::RegionUnsealed,
                    format!(
                        "region file cannot be sealed (not a memfd: {})",
                        io::Error::last_os_error()
                    ),
                ));
            }
            if seals & F_SEAL_SHRINK == 0 {
                return Err((
                    Violation::RegionUnsealed,
                    "region memfd is not sealed against shrinking".into(),
                ));
            }
        }
        // SAFETY: fstat writes into the zeroed stat we pass.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above; the descriptor is open.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
            return Err((
                Violation::BadRegion,
                format!("region: fstat: {}", io::Error::last_os_error()),
            ));
        }
        if len == 0 || (st.st_size as u64) < len as u64 {
            return Err((
                Violation::BadRegion,
                format!(
                    "region of {len} bytes announced, but its file has {} bytes",
                    st.st_size
                ),
            ));
        }
        // SAFETY: a shared mapping of a descriptor at least `len` bytes long (checked above);
        // the result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err((
                Violation::BadRegion,
                format!("region: mmap: {}", io::Error::last_os_error()),
            ));
        }
        Ok(Region {
            ptr: ptr as *mut u8,
            len,
            _fd: keep_fd.then_some(fd),
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The descriptor behind a region we created (to send to the peer).
    pub fn fd(&self) -> Option<libc::c_int> {
        self._fd.as_ref().map(|f| f.as_raw_fd())
    }

    /// Whether `len` bytes at `offset` lie inside the region.
    pub fn contains(&self, offset: usize, len: usize) -> bool {
        offset.checked_add(len).is_some_and(|end| end <= self.len)
    }

    /// Copy out `dst.len()` bytes at `offset`; false (nothing copied) if out of range.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> bool {
        if !self.contains(offset, dst.len()) {
            return false;
        }
        // SAFETY: the range lies inside the mapping (checked); a byte copy from shared memory
        // the peer may be writing gives some bytes, never undefined reads of our memory.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), dst.as_mut_ptr(), dst.len()) };
        true
    }

    /// Copy `src` in at `offset`; false (nothing copied) if out of range.
    pub fn write(&self, offset: usize, src: &[u8]) -> bool {
        if !self.contains(offset, src.len()) {
            return false;
        }
        // SAFETY: the range lies inside the mapping (checked); see `read`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(offset), src.len()) };
        true
    }

    /// Ask the CPU to start loading the cache line at `offset` (a peer's buffer we will copy
    /// soon; the peer wrote it from another core). A hint only: out of range does nothing.
    #[inline(always)]
    pub fn prefetch(&self, offset: usize) {
        if offset >= self.len {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetch never faults and reads nothing architecturally; the address lies
        // inside the mapping (checked above).
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.ptr.add(offset) as *const i8);
        }
    }

    /// The ring of 2^log2 descriptors at `offset`, if it fits the region.
    pub fn ring(self: &std::sync::Arc<Self>, offset: usize, log2: u8) -> Option<Ring> {
        if log2 > MAX_LOG2_RING_SIZE
            || !self.contains(offset, ring_bytes(log2))
            || !offset.is_multiple_of(64)
        {
            return None;
        }
        Some(Ring {
            region: self.clone(),
            // SAFETY: inside the mapping (checked above).
            base: unsafe { self.ptr.add(offset) },
            mask: (1u32 << log2) as u16 - 1,
            size: 1 << log2,
        })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping `map` made; rings hold an Arc of their region, so none
        // outlives it.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// A ring inside a region.
pub struct Ring {
    region: std::sync::Arc<Region>,
    base: *mut u8,
    mask: u16,
    size: u32,
}

// SAFETY: the ring's words are reached through atomics and raw copies only.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    fn word(&self, at: usize) -> &AtomicU16 {
        // SAFETY: `at` is a fixed offset inside the 128-byte header, which lies inside the
        // mapping (checked when the ring was made); u16 words at even offsets are aligned
        // (the ring is 64-byte aligned), and the peer updates them atomically too.
        unsafe { &*(self.base.add(at) as *const AtomicU16) }
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    pub fn cookie(&self) -> u32 {
        let mut b = [0u8; 4];
        // SAFETY: the first 4 bytes of the header, inside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.base, b.as_mut_ptr(), 4) };
        u32::from_le_bytes(b)
    }

    /// Write a fresh header: cookie, flags, head = tail = 0.
    pub fn init(&self, flags: u16) {
        // SAFETY: the first 4 bytes of the header, inside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(RING_COOKIE.to_le_bytes().as_ptr(), self.base, 4) };
        self.word(FLAGS_AT).store(flags, Ordering::Relaxed);
        self.word(HEAD_AT).store(0, Ordering::Relaxed);
        self.word(TAIL_AT).store(0, Ordering::Release);
    }

    pub fn flags(&self) -> u16 {
        self.word(FLAGS_AT).load(Ordering::Relaxed)
    }

    pub fn set_flags(&self, f: u16) {
        self.word(FLAGS_AT).store(f, Ordering::Relaxed);
    }

    pub fn head(&self) -> u16 {
        self.word(HEAD_AT).load(Ordering::Acquire)
    }

    pub fn set_head(&self, v: u16) {
        self.word(HEAD_AT).store(v, Ordering::Release);
    }

    pub fn tail(&self) -> u16 {
        self.word(TAIL_AT).load(Ordering::Acquire)
    }

    pub fn set_tail(&self, v: u16) {
        self.word(TAIL_AT).store(v, Ordering::Release);
    }

    fn desc_ptr(&self, slot: u16) -> *mut u8 {
        // SAFETY: masking keeps the slot inside the ring's descriptors, which lie inside the
        // mapping.
        unsafe {
            self.base
                .add(RING_HEADER + (slot & self.mask) as usize * DESC_SIZE)
        }
    }

    pub fn desc(&self, slot: u16) -> Desc {
        let mut b = [0u8; DESC_SIZE];
        // SAFETY: 16 bytes of one descriptor inside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.desc_ptr(slot), b.as_mut_ptr(), DESC_SIZE) };
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Desc {
            flags: u16_at(0),
            region: u16_at(2),
            length: u32_at(4),
            offset: u32_at(8),
            metadata: u32_at(12),
        }
    }

    pub fn set_desc(&self, slot: u16, d: Desc) {
        let mut b = [0u8; DESC_SIZE];
        b[0..2].copy_from_slice(&d.flags.to_le_bytes());
        b[2..4].copy_from_slice(&d.region.to_le_bytes());
        b[4..8].copy_from_slice(&d.length.to_le_bytes());
        b[8..12].copy_from_slice(&d.offset.to_le_bytes());
        b[12..16].copy_from_slice(&d.metadata.to_le_bytes());
        // SAFETY: 16 bytes of one descriptor inside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.desc_ptr(slot), DESC_SIZE) };
    }

    /// Set only the length and flags of a descriptor (what a server fills in); the region and
    /// offset the client posted are left as they are.
    pub fn set_length(&self, slot: u16, length: u32, flags: u16) {
        let at = self.desc_ptr(slot);
        // SAFETY: bytes 0..2 (flags) and 4..8 (length) of one descriptor inside the mapping;
        // unaligned byte-wise stores, as the peer may write the same memory.
        unsafe {
            std::ptr::copy_nonoverlapping(flags.to_le_bytes().as_ptr(), at, 2);
            std::ptr::copy_nonoverlapping(length.to_le_bytes().as_ptr(), at.add(4), 4);
        }
    }

    /// Ask the CPU to start loading the descriptor of `slot` (the peer wrote it from another
    /// core). A hint only.
    #[inline(always)]
    pub fn prefetch_desc(&self, slot: u16) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetch never faults; the masked slot lies inside the mapping.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.desc_ptr(slot) as *const i8);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Keep the region mapped as long as the ring is used.
    pub fn region(&self) -> &std::sync::Arc<Region> {
        &self.region
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn rings_and_bounds() {
        let fd = memfd("t", 4096).unwrap();
        let r = Arc::new(Region::map(fd, 4096, true).unwrap());
        assert!(r.ring(0, 4).is_some());
        assert!(r.ring(4096 - 64, 4).is_none(), "ring past the end");
        assert!(r.ring(8, 2).is_none(), "unaligned ring");
        assert!(r.ring(usize::MAX - 10, 2).is_none());
        let ring = r.ring(0, 4).unwrap();
        ring.init(RING_FLAG_MASK_INT);
        assert_eq!(ring.cookie(), RING_COOKIE);
        assert_eq!((ring.head(), ring.tail(), ring.flags()), (0, 0, 1));
        let d = Desc {
            flags: 1,
            region: 1,
            length: 60,
            offset: 2304,
            metadata: 0,
        };
        ring.set_desc(17, d); // slot 17 of 16 wraps to 1
        assert_eq!(ring.desc(1), d);
        ring.set_length(1, 99, 0);
        assert_eq!(
            ring.desc(1),
            Desc {
                flags: 0,
                length: 99,
                ..d
            },
            "only length and flags change"
        );
        let mut b = [0u8; 8];
        assert!(r.read(4088, &mut b));
        assert!(!r.read(4089, &mut b));
        assert!(!r.write(usize::MAX, &b));
    }

    #[test]
    fn short_or_unsealed_peer_regions_are_refused() {
        let fd = memfd("t", 4096).unwrap();
        assert!(
            Region::map(fd, 8192, false).is_err(),
            "announced longer than the file"
        );
        // An unsealed memfd could shrink under the mapping.
        let name = std::ffi::CString::new("u").unwrap();
        // SAFETY: test-only memfd; checked and owned right away.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        assert!(raw >= 0);
        // SAFETY: just created, owned by the test.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: plain ftruncate on our descriptor.
        unsafe { libc::ftruncate(fd.as_raw_fd(), 4096) };
        let e = Region::map(fd, 4096, false).err().unwrap();
        assert_eq!(e.0, Violation::RegionUnsealed, "{}", e.1);
        // Nor is a file that is no memfd (it has no seals at all).
        let f = std::fs::File::open("/proc/self/exe").unwrap();
        let e = Region::map(f.into(), 4096, false).err().unwrap();
        assert_eq!(e.0, Violation::RegionUnsealed, "{}", e.1);
    }
}
