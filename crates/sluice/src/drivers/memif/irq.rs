//! Interrupts to a memif peer, written by a thread of their own, never by a worker.
//!
//! A ring's interrupt eventfd is one open file description shared with the peer, and
//! O_NONBLOCK is a flag of the description, not of our descriptor: the peer can clear it at
//! any moment (F_SETFL on its copy) and fill the counter to 2^64 - 2, after which a write of
//! 1 sleeps until somebody reads. Looking at the flag before writing leaves a window the peer
//! can hit (it flips the flag in a loop); eventfds take no per-call MSG_DONTWAIT; an anonymous
//! inode cannot be reopened through /proc/self/fd for a description of our own. So a worker
//! only marks the ring pending and unparks the connection's notifier (an atomic swap, and a
//! futex wake only when the notifier sleeps), and the notifier writes. If the peer makes the
//! notifier sleep, only that peer's interrupts wait; pending marks coalesce (one write per
//! ring however many bursts asked), so nothing piles up behind it. When the connection ends,
//! `stop` interrupts a sleeping write with a signal whose handler is installed without
//! SA_RESTART (the write returns EINTR) and joins the thread.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

/// What the workers and the notifier share.
struct Inner {
    /// Client-to-server rings' descriptors, then server-to-client ones.
    fds: Vec<OwnedFd>,
    c2s: usize,
    pending: Vec<AtomicBool>,
    stop: AtomicBool,
    /// The peer made a descriptor blocking after the handshake (a protocol violation).
    saw_blocking: AtomicBool,
}

/// A connection's interrupt writer.
pub struct Notifier {
    inner: Arc<Inner>,
    thread: Thread,
    handle: Mutex<Option<JoinHandle<()>>>,
}

/// The signal that interrupts a notifier's write (a real-time one: no default meaning).
fn wake_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

extern "C" fn on_wake_signal(_: libc::c_int) {}

fn install_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a zeroed sigaction with an empty mask and a handler that does nothing (so
        // it is async-signal-safe); no SA_RESTART, so a write it interrupts fails with EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wake_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(wake_signal(), &sa, std::ptr::null_mut());
        }
    });
}

pub fn is_nonblocking(fd: &OwnedFd) -> bool {
    // SAFETY: reads the descriptor's status flags; no memory is passed.
    let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    fl >= 0 && fl & libc::O_NONBLOCK != 0
}

impl Notifier {
    /// Start the notifier of a connection whose rings have these interrupt descriptors
    /// (duplicates of the connection's: the same descriptions).
    pub fn start(name: &str, c2s: &[OwnedFd], s2c: &[OwnedFd]) -> io::Result<Notifier> {
        install_handler();
        let mut fds = Vec::with_capacity(c2s.len() + s2c.len());
        for fd in c2s.iter().chain(s2c) {
            fds.push(fd.try_clone()?);
        }
        let inner = Arc::new(Inner {
            pending: fds.iter().map(|_| AtomicBool::new(false)).collect(),
            fds,
            c2s: c2s.len(),
            stop: AtomicBool::new(false),
            saw_blocking: AtomicBool::new(false),
        });
        let handle = {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(format!("memif-irq-{name}"))
                .spawn(move || run(&inner))?
        };
        Ok(Notifier {
            inner,
            thread: handle.thread().clone(),
            handle: Mutex::new(Some(handle)),
        })
    }

    /// Ask for an interrupt on ring `index` of one direction. Never blocks: a store, and a
    /// wake of the notifier when it was not already asked.
    pub fn kick(&self, c2s: bool, index: usize) {
        let k = if c2s { index } else { self.inner.c2s + index };
        let Some(p) = self.inner.pending.get(k) else {
            return;
        };
        if !p.load(Ordering::Relaxed) {
            p.store(true, Ordering::Release);
            self.thread.unpark();
        }
    }

    /// Whether the peer made one of the descriptors blocking since the handshake.
    pub fn saw_blocking(&self) -> bool {
        self.inner.saw_blocking.load(Ordering::Relaxed)
    }

    /// Stop the notifier and wait for it, interrupting a write the peer made sleep. A signal
    /// may arrive just before the write starts (and so be lost), hence one every millisecond
    /// until the thread is gone.
    pub fn stop(&self) {
        let Some(h) = self.handle.lock().ok().and_then(|mut h| h.take()) else {
            return;
        };
        self.inner.stop.store(true, Ordering::Release);
        self.thread.unpark();
        while !h.is_finished() {
            // SAFETY: the thread is not joined yet, so its pthread_t is valid; the signal's
            // handler was installed before the thread started.
            unsafe { libc::pthread_kill(h.as_pthread_t(), wake_signal()) };
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = h.join();
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(inner: &Inner) {
    let one = 1u64.to_ne_bytes();
    while !inner.stop.load(Ordering::Acquire) {
        let mut wrote = false;
        for (p, fd) in inner.pending.iter().zip(&inner.fds) {
            if !p.swap(false, Ordering::Acquire) {
                continue;
            }
            wrote = true;
            if !is_nonblocking(fd) {
                inner.saw_blocking.store(true, Ordering::Relaxed);
            }
            // SAFETY: an 8-byte write from a local array to an eventfd we hold. It may sleep
            // (see the module's comment); EAGAIN (counter full) and EINTR are the peer's loss.
            unsafe { libc::write(fd.as_raw_fd(), one.as_ptr() as *const libc::c_void, 8) };
        }
        if !wrote {
            std::thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    fn eventfd() -> OwnedFd {
        // SAFETY: plain eventfd creation, checked and owned right away.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: just created.
        unsafe { OwnedFd::from_raw_fd(fd) }
    }

    fn read(fd: &OwnedFd) -> u64 {
        let mut b = [0u8; 8];
        // SAFETY: an 8-byte read into a local array.
        let n = unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr() as *mut libc::c_void, 8) };
        if n == 8 {
            u64::from_ne_bytes(b)
        } else {
            0
        }
    }

    #[test]
    fn kicks_reach_the_right_ring() {
        let (a, b) = (eventfd(), eventfd());
        let n = Notifier::start("t", std::slice::from_ref(&a), std::slice::from_ref(&b)).unwrap();
        n.kick(false, 0);
        n.kick(true, 7); // no such ring: ignored
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut got = 0;
        while got == 0 && std::time::Instant::now() < deadline {
            got = read(&b);
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!((got, read(&a)), (1, 0));
        n.stop();
    }

    #[test]
    fn a_write_the_peer_made_sleep_is_interrupted_at_stop() {
        let fd = eventfd();
        let full = (u64::MAX - 1).to_ne_bytes();
        // SAFETY: an 8-byte write from a local array.
        assert_eq!(
            unsafe { libc::write(fd.as_raw_fd(), full.as_ptr() as *const libc::c_void, 8) },
            8
        );
        // SAFETY: plain fcntl on our descriptor: the "peer" makes it blocking.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, 0) };
        let n = Notifier::start("t", std::slice::from_ref(&fd), &[]).unwrap();
        n.kick(true, 0);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !n.saw_blocking() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20)); // now asleep in write
        n.kick(true, 0); // and the caller is not
        let (done, stopped) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            n.stop();
            let _ = done.send(());
        });
        assert!(
            stopped.recv_timeout(Duration::from_secs(10)).is_ok(),
            "stop did not interrupt the sleeping write"
        );
    }
}
