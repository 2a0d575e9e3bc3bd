//! Thread placement: pinning to a CPU and the kernel thread id for `show threads`; and the
//! process-wide helpers beside them (file locks, the file-creation mask).

/// Pin the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    // SAFETY: cpu_set_t is plain data for which all-zero bytes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("CPU {cpu} is out of range"));
    }
    // SAFETY: `cpu` was checked to be below CPU_SETSIZE, so the bit lies inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 means the calling thread; `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(format!(
            "cannot pin thread to CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Give the calling thread the nice value `nice` (its scheduler weight against the other
/// threads on its CPU). Lowering it below 0 needs CAP_SYS_NICE.
pub fn set_current_thread_nice(nice: i32) -> Result<(), String> {
    // SAFETY: setpriority takes plain integers; PRIO_PROCESS with a thread id applies to that
    // thread alone on Linux, and the id is the caller's own.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, current_thread_id() as u32, nice) };
    if rc != 0 {
        return Err(format!(
            "cannot set nice {nice}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The nice value of this process's thread `tid`, from /proc (None if it is gone).
pub fn thread_nice(tid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // The name (field 2) may hold spaces: count fields after its closing parenthesis, where
    // field 3 (state) comes first and field 19 is the nice value.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(16)?
        .parse()
        .ok()
}

/// The kernel's id of the calling thread (the LWP column of `show threads`).
pub fn current_thread_id() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on right now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments; a negative result means unknown.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// Take an exclusive advisory lock on `file`, waiting for it; released when the file closes.
pub fn lock_file(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor the caller keeps open for the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Run `f` with the process's file-creation mask set to `mask`, then put the old one back.
/// The mask is process-wide: call this only while no other thread creates files (the daemon
/// binds its control socket before it starts any thread).
pub fn with_umask<T>(mask: u32, f: impl FnOnce() -> T) -> T {
    // SAFETY: umask takes a plain integer and cannot fail; it only swaps the process's mask.
    let old = unsafe { libc::umask(mask as libc::mode_t) };
    let out = f();
    // SAFETY: as above, restoring the mask umask returned.
    unsafe { libc::umask(old) };
    out
}
