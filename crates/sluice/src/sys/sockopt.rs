//! `setsockopt` and `getsockopt` for any option value, shared by the drivers' sockets.

use std::io;

/// setsockopt(fd, level, opt, value): the kernel reads `value`'s bytes.
pub fn set<T>(fd: libc::c_int, level: libc::c_int, opt: libc::c_int, value: &T) -> io::Result<()> {
    let (ptr, len) = (value as *const T as *const libc::c_void, size_of::<T>());
    // SAFETY: `ptr` is a live T whose exact size is passed; the kernel only reads it, and a
    // bad fd or option is an error return, not undefined behaviour.
    result(unsafe { libc::setsockopt(fd, level, opt, ptr, len as libc::socklen_t) })
}

/// getsockopt(fd, level, opt, value): the kernel writes at most `value`'s bytes.
///
/// # Safety
///
/// `T` is plain C data: any bytes the kernel writes for this option make a valid `T`.
pub unsafe fn get<T>(
    fd: libc::c_int,
    level: libc::c_int,
    opt: libc::c_int,
    value: &mut T,
) -> io::Result<()> {
    let (ptr, mut len) = (value as *mut T as *mut libc::c_void, size_of::<T>() as _);
    // SAFETY: `ptr` is a live, writable T whose size is passed in `len`; the kernel writes at
    // most that many bytes, which our caller promises make a valid T.
    result(unsafe { libc::getsockopt(fd, level, opt, ptr, &mut len) })
}

/// A socket call's return code: negative is the error in errno.
fn result(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
