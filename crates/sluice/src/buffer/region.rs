//! The memory behind the buffer pool: one shared mapping of a memfd (so it can be handed to a
//! memif peer, or registered as an AF_XDP UMEM), huge pages when possible.

use super::HugePages;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const HUGE_PAGE: usize = 2 << 20;

/// A page-aligned, zero-filled mapping that lives as long as the pool.
pub struct Region {
    ptr: *mut u8,
    len: usize,
    huge: bool,
    /// The memfd behind the mapping (none if memfd_create is unavailable).
    fd: Option<OwnedFd>,
}

impl Region {
    /// Map `len` bytes. With `HugePages::Auto`, try 2 MiB pages first and fall back to normal
    /// pages when the system has none reserved.
    pub fn map(len: usize, huge: HugePages) -> io::Result<Region> {
        if huge != HugePages::Never {
            let huge_len = len.div_ceil(HUGE_PAGE) * HUGE_PAGE;
            match Self::mmap(huge_len, true) {
                Ok((ptr, fd)) => {
                    return Ok(Region {
                        ptr,
                        len: huge_len,
                        huge: true,
                        fd,
                    })
                }
                Err(e) if huge == HugePages::Require => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot map {huge_len} bytes of huge pages: {e} (reserve some in /proc/sys/vm/nr_hugepages)"),
                    ))
                }
                Err(_) => {}
            }
        }
        let (ptr, fd) = Self::mmap(len, false)?;
        Ok(Region {
            ptr,
            len,
            huge: false,
            fd,
        })
    }

    /// A sealed memfd of `len` bytes, mapped shared; an anonymous mapping if memfd_create is
    /// not available (the region then cannot be shared with a memif peer).
    fn mmap(len: usize, huge: bool) -> io::Result<(*mut u8, Option<OwnedFd>)> {
        const F_ADD_SEALS: libc::c_int = 1033;
        const F_SEAL_SHRINK: libc::c_int = 0x0002;
        const F_SEAL_GROW: libc::c_int = 0x0004;
        let name = c"sluice-buffers";
        let flags =
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING | if huge { libc::MFD_HUGETLB } else { 0 };
        // SAFETY: a valid C string; the result is checked.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), flags) };
        let fd = if raw >= 0 {
            // SAFETY: a descriptor we just created and own.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: plain calls on our own descriptor.
            if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: as above. Sealed, so a peer that maps it cannot change its size.
            unsafe { libc::fcntl(fd.as_raw_fd(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) };
            Some(fd)
        } else if huge {
            return Err(io::Error::last_os_error());
        } else {
            None
        };
        let (map_flags, map_fd) = match &fd {
            Some(f) => (libc::MAP_SHARED, f.as_raw_fd()),
            None => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1),
        };
        // Huge pages are reserved and faulted in up front (few faults, and a shortage shows
        // now, not under traffic). Small pages are left to fault in as buffers are first
        // used: the free lists hand out the same low, warm buffers again and again, so a
        // daemon holds only what its traffic touches (an AF_XDP socket pins its UMEM, and
        // with it every page, when it registers).
        let populate = if huge { libc::MAP_POPULATE } else { 0 };
        // SAFETY: a new mapping with no address hint (of our memfd, at least `len` bytes
        // long, or anonymous) touches no existing memory; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                map_flags | populate,
                map_fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok((p as *mut u8, fd))
    }

    /// The memfd behind the region, to share it (memif client).
    pub fn fd(&self) -> Option<libc::c_int> {
        self.fd.as_ref().map(|f| f.as_raw_fd())
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn huge_pages(&self) -> bool {
        self.huge
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, and the pool (our only user)
        // is being dropped, so no view into the region outlives this call.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}
