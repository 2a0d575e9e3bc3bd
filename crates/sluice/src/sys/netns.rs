//! Entering a named network namespace (`ip netns add NAME`) on the calling thread: sockets
//! the thread opens afterwards belong to that namespace.

use std::os::fd::AsRawFd;

/// Move the calling thread into the network namespace `/var/run/netns/NAME`. Only this
/// thread moves; the rest of the process stays where it was.
pub fn enter(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(format!("'{name}' is not a network namespace name"));
    }
    let path = format!("/var/run/netns/{name}");
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    // SAFETY: setns only reads the descriptor, which `file` keeps open for the call; a file
    // that is not a namespace is an error return, and it changes nothing but this thread's
    // network namespace.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc < 0 {
        return Err(format!(
            "setns into {name}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Run `f` in namespace `netns` (on a thread of its own that enters it, so the caller's
/// thread stays where it is), or here when `netns` is `None`.
pub fn run_in<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    match netns {
        None => f(),
        Some(ns) => std::thread::scope(|s| {
            s.spawn(move || {
                enter(ns).map_err(std::io::Error::other)?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("namespace thread failed")))
        }),
    }
}
