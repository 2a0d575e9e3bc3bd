//! A memory area a descriptor offers for sharing with the kernel (a packet socket's receive
//! ring, an AF_XDP ring), mapped read-write and populated up front so that the first packets
//! take no page faults, and unmapped when dropped.

use std::io;
use std::os::fd::RawFd;

/// One `mmap(MAP_SHARED | MAP_POPULATE)` of a descriptor, owned: dropping it unmaps it.
pub struct SharedMapping {
    ptr: *mut u8,
    len: usize,
}

impl SharedMapping {
    /// Map `len` bytes of `fd` from byte `offset` (a multiple of the page size).
    pub fn new(fd: RawFd, len: usize, offset: libc::off_t) -> io::Result<SharedMapping> {
        // SAFETY: a new mapping at an address the kernel chooses, so no existing memory is
        // touched; the kernel refuses (MAP_FAILED, checked) a length or offset that the
        // descriptor does not offer.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedMapping {
            ptr: ptr as *mut u8,
            len,
        })
    }

    /// The first byte of the mapping; the `len` bytes from it stay mapped while `self` lives.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: exactly what `new` mapped; its owner drops it only when nothing it handed
        // out points into it any more.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    #[test]
    fn maps_what_the_descriptor_offers_and_refuses_a_bad_descriptor() {
        // SAFETY: memfd_create with a valid name; the result is checked before use.
        let raw = unsafe { libc::memfd_create(c"sl-mapping-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(raw >= 0);
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: resizing our own memfd.
        assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 8192) }, 0);
        let a = SharedMapping::new(fd.as_raw_fd(), 8192, 0).unwrap();
        let b = SharedMapping::new(fd.as_raw_fd(), 4096, 4096).unwrap();
        // SAFETY: both pointers lie inside their live mappings; the second page of `a` is
        // the first of `b`.
        unsafe {
            a.ptr().add(4096).write(0x5a);
            assert_eq!(b.ptr().read(), 0x5a);
        }
        assert!(SharedMapping::new(-1, 4096, 0).is_err());
    }
}
