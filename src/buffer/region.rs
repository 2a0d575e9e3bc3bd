//! The memory behind the buffer pool: one anonymous mapping, huge pages when possible.

use super::HugePages;
use std::io;

const HUGE_PAGE: usize = 2 << 20;

/// An anonymous, page-aligned, zero-filled mapping that lives as long as the pool.
pub struct Region {
    ptr: *mut u8,
    len: usize,
    huge: bool,
}

impl Region {
    /// Map `len` bytes. With `HugePages::Auto`, try 2 MiB pages first and fall back to normal
    /// pages when the system has none reserved.
    pub fn map(len: usize, huge: HugePages) -> io::Result<Region> {
        if huge != HugePages::Never {
            let huge_len = len.div_ceil(HUGE_PAGE) * HUGE_PAGE;
            match Self::mmap(huge_len, libc::MAP_HUGETLB) {
                Ok(ptr) => {
                    return Ok(Region {
                        ptr,
                        len: huge_len,
                        huge: true,
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
        let ptr = Self::mmap(len, 0)?;
        Ok(Region {
            ptr,
            len,
            huge: false,
        })
    }

    fn mmap(len: usize, extra_flags: libc::c_int) -> io::Result<*mut u8> {
        // SAFETY: an anonymous private mapping with no address hint touches no existing
        // memory; the result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE | extra_flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(p as *mut u8)
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
