//! `setsockopt` for any option value, shared by the drivers' sockets.

use std::io;

/// setsockopt(fd, level, opt, value): the kernel reads `value`'s bytes.
pub fn set<T>(fd: libc::c_int, level: libc::c_int, opt: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live T whose exact size is passed; the kernel only reads it, and a
    // bad fd or option is an error return, not undefined behaviour.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
