//! One AF_XDP socket bound to one queue of an interface, with the buffer pool's whole region
//! registered as its UMEM.
//!
//! The UMEM uses unaligned chunks of the pool's 2304-byte stride, so a UMEM address is simply
//! `buffer index * STRIDE + offset`: the kernel writes received frames at chunk + 256
//! (XDP_PACKET_HEADROOM, which is our buffer headroom), and we transmit from wherever a
//! packet's data starts — no copy in user space either way.

use super::ring::{Ring, RingOffsets, XdpDesc};
use crate::buffer::STRIDE;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const AF_XDP: libc::c_int = 44;
const SOL_XDP: libc::c_int = 283;
const XDP_MMAP_OFFSETS: libc::c_int = 1;
const XDP_RX_RING: libc::c_int = 2;
const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_STATISTICS: libc::c_int = 7;
const XDP_COPY: u16 = 1 << 1;
const XDP_ZEROCOPY: u16 = 1 << 2;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
const XDP_UMEM_UNALIGNED_CHUNK_FLAG: u32 = 1;
const XDP_PGOFF_RX_RING: u64 = 0;
const XDP_PGOFF_TX_RING: u64 = 0x8000_0000;
const XDP_UMEM_PGOFF_FILL_RING: u64 = 0x1_0000_0000;
const XDP_UMEM_PGOFF_COMPLETION_RING: u64 = 0x1_8000_0000;

/// In unaligned mode the kernel returns rx addresses as chunk base | (offset << 48).
pub const ADDR_MASK: u64 = (1 << 48) - 1;
pub const OFFSET_SHIFT: u32 = 48;

#[repr(C)]
struct UmemReg {
    addr: u64,
    len: u64,
    chunk_size: u32,
    headroom: u32,
    flags: u32,
    tx_metadata_len: u32,
}

#[repr(C)]
struct SockaddrXdp {
    family: u16,
    flags: u16,
    ifindex: u32,
    queue_id: u32,
    shared_umem_fd: u32,
}

#[repr(C)]
#[derive(Default)]
struct MmapOffsets {
    rx: RingOffsets,
    tx: RingOffsets,
    fill: RingOffsets,
    completion: RingOffsets,
}

/// The kernel's per-socket drop counters (struct xdp_statistics).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct XskStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// How the socket moves frames: straight into the UMEM by the driver, or copied by the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyMode {
    ZeroCopy,
    Copy,
}

impl CopyMode {
    pub fn name(self) -> &'static str {
        match self {
            CopyMode::ZeroCopy => "zero-copy",
            CopyMode::Copy => "copy",
        }
    }
}

/// The socket descriptor; shared by the queue's rx and tx halves, closed (once, by
/// `OwnedFd`) when both are gone. The rings mapped from it hold their own mappings, which
/// stay valid after a close, so the order of the two drops does not matter for memory.
pub struct XskFd(OwnedFd);

impl AsRawFd for XskFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// A bound socket and its four rings, ready to be split into rx and tx halves.
pub struct Xsk {
    pub fd: XskFd,
    pub fill: Ring<u64>,
    pub completion: Ring<u64>,
    pub rx: Ring<XdpDesc>,
    pub tx: Ring<XdpDesc>,
    pub mode: CopyMode,
}

fn setsockopt<T>(fd: libc::c_int, opt: libc::c_int, value: &T) -> io::Result<()> {
    crate::sys::sockopt::set(fd, SOL_XDP, opt, value)
}

/// getsockopt(SOL_XDP) into one of this module's `repr(C)` structs of integers.
fn getsockopt<T>(fd: libc::c_int, opt: libc::c_int, value: &mut T) -> io::Result<()> {
    // SAFETY: T is one of this module's `repr(C)` structs of integers (MmapOffsets,
    // XskStats), which any bytes make valid.
    unsafe { crate::sys::sockopt::get(fd, SOL_XDP, opt, value) }
}

/// What to open.
pub struct XskOptions {
    pub ifindex: u32,
    pub queue: u32,
    /// The UMEM: the buffer pool's region.
    pub umem: *mut u8,
    pub umem_len: usize,
    pub ring_size: u32,
    /// `None`: zero-copy if the driver can, copy otherwise.
    pub force: Option<CopyMode>,
    /// Microseconds of preferred busy polling per receive call (0: off).
    pub busy_poll: u32,
}

impl Xsk {
    /// Open a socket on `o.ifindex` queue `o.queue` with `o.umem` registered as its UMEM.
    ///
    /// # Safety
    ///
    /// `o.umem .. o.umem + o.umem_len` must be one mapping that stays mapped as long as the
    /// socket is open. From then on the kernel writes into the buffers put on the fill ring
    /// and reads those put on the tx ring, behind the compiler's back: the caller must put
    /// there only buffers it owns, and neither touch them nor let them go to anyone else
    /// until they come back on the rx or completion ring or the socket is closed.
    pub unsafe fn open(o: &XskOptions) -> Result<Xsk, String> {
        // SAFETY: our caller's promise is the one `open_mode` asks for.
        unsafe {
            match o.force {
                Some(mode) => Self::open_mode(o, mode).map_err(|e| explain(e, mode)),
                None => Self::open_mode(o, CopyMode::ZeroCopy).or_else(|_| {
                    Self::open_mode(o, CopyMode::Copy).map_err(|e| explain(e, CopyMode::Copy))
                }),
            }
        }
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe fn open_mode(o: &XskOptions, mode: CopyMode) -> io::Result<Xsk> {
        // SAFETY: plain socket creation; the result is checked.
        let fd = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just created and nothing else holds.
        let fd = XskFd(unsafe { OwnedFd::from_raw_fd(fd) });
        let raw = fd.as_raw_fd();
        let reg = UmemReg {
            addr: o.umem as u64,
            len: o.umem_len as u64,
            chunk_size: STRIDE as u32,
            headroom: 0,
            flags: XDP_UMEM_UNALIGNED_CHUNK_FLAG,
            tx_metadata_len: 0,
        };
        setsockopt(raw, XDP_UMEM_REG, &reg)?;
        let n = o.ring_size;
        setsockopt(raw, XDP_UMEM_FILL_RING, &n)?;
        setsockopt(raw, XDP_UMEM_COMPLETION_RING, &n)?;
        setsockopt(raw, XDP_RX_RING, &n)?;
        setsockopt(raw, XDP_TX_RING, &n)?;
        let mut off = MmapOffsets::default();
        getsockopt(raw, XDP_MMAP_OFFSETS, &mut off)?;
        // SAFETY: each ring was given `n` entries above (the kernel refuses a size that is not
        // a power of two),
        // at the page offset the kernel defines for it, with the offsets it just reported;
        // fill and completion hold u64 addresses, rx and tx struct xdp_desc.
        let (fill, completion, rx, tx) = unsafe {
            (
                Ring::map(raw, XDP_UMEM_PGOFF_FILL_RING, n, off.fill)?,
                Ring::map(raw, XDP_UMEM_PGOFF_COMPLETION_RING, n, off.completion)?,
                Ring::map(raw, XDP_PGOFF_RX_RING, n, off.rx)?,
                Ring::map(raw, XDP_PGOFF_TX_RING, n, off.tx)?,
            )
        };
        let flags = XDP_USE_NEED_WAKEUP
            | match mode {
                CopyMode::ZeroCopy => XDP_ZEROCOPY,
                CopyMode::Copy => XDP_COPY,
            };
        let sa = SockaddrXdp {
            family: AF_XDP as u16,
            flags,
            ifindex: o.ifindex,
            queue_id: o.queue,
            shared_umem_fd: 0,
        };
        // SAFETY: `sa` is a live sockaddr_xdp and its size is passed.
        let rc = unsafe {
            libc::bind(
                raw,
                &sa as *const SockaddrXdp as *const libc::sockaddr,
                std::mem::size_of::<SockaddrXdp>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        if o.busy_poll > 0 {
            prefer_busy_poll(raw, o.busy_poll)?;
        }
        Ok(Xsk {
            fd,
            fill,
            completion,
            rx,
            tx,
            mode,
        })
    }
}

fn explain(e: io::Error, mode: CopyMode) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => "AF_XDP needs CAP_NET_RAW and CAP_NET_ADMIN (run as root)".into(),
        Some(libc::EBUSY) => {
            format!("the queue already has an AF_XDP socket (another program uses it): {e}")
        }
        Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) if mode == CopyMode::ZeroCopy => {
            format!("the driver refused zero-copy: {e}")
        }
        _ => format!("AF_XDP socket ({} mode): {e}", mode.name()),
    }
}

/// Let the worker run the device queue's NAPI poll itself, in its receive calls, instead of
/// the kernel's softirq or NAPI thread competing with it for the CPU: preferred busy polling
/// of `usecs` per call, a NAPI budget of `BUSY_POLL_BUDGET` frames.
fn prefer_busy_poll(fd: libc::c_int, usecs: u32) -> io::Result<()> {
    let one: libc::c_int = 1;
    let set =
        |opt: libc::c_int, v: libc::c_int| crate::sys::sockopt::set(fd, libc::SOL_SOCKET, opt, &v);
    set(SO_PREFER_BUSY_POLL, one)?;
    set(libc::SO_BUSY_POLL, usecs as libc::c_int)?;
    set(SO_BUSY_POLL_BUDGET, BUSY_POLL_BUDGET as libc::c_int)
}

/// SOL_SOCKET options of Linux 5.11 (include/uapi/asm-generic/socket.h).
const SO_PREFER_BUSY_POLL: libc::c_int = 69;
const SO_BUSY_POLL_BUDGET: libc::c_int = 70;
/// Frames one busy poll may take from the device queue: a vector's worth.
pub const BUSY_POLL_BUDGET: u32 = 64;

/// The kernel's drop counters of socket `fd`.
pub fn stats(fd: libc::c_int) -> io::Result<XskStats> {
    let mut s = XskStats::default();
    getsockopt(fd, XDP_STATISTICS, &mut s)?;
    Ok(s)
}

/// Ask the kernel to transmit what the tx ring holds. Transient refusals (the device queue
/// is busy or full) are not errors: the frames stay in the ring for the next kick.
pub fn kick_tx(fd: libc::c_int) -> io::Result<()> {
    // SAFETY: a zero-length send with no buffer; the kernel only reads the socket's rings.
    let rc = unsafe {
        libc::sendto(
            fd,
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => Ok(()),
            _ => Err(e),
        };
    }
    Ok(())
}

/// Wake the driver's receive side when it asked for it (fill ring flagged).
pub fn kick_rx(fd: libc::c_int) {
    // SAFETY: a zero-length non-blocking receive; nothing is written to user memory.
    unsafe {
        libc::recvfrom(
            fd,
            std::ptr::null_mut(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
}
