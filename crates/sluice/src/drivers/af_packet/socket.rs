//! AF_PACKET sockets: the socket itself and a `sendmmsg` sender (the generator's; the
//! driver's queues send through `tx_ring.rs`); the receive rings are in `rx_ring.rs`.

pub use super::rx_ring::{RingGeometry, RingLayout, RxFrame, RxOptions, RxRing};
use crate::sys::bpf::ClassicInsn;
use std::io;

/// ETH_P_ALL in network byte order, as sockaddr_ll and socket(2) want it.
pub(super) fn eth_p_all() -> u16 {
    (libc::ETH_P_ALL as u16).to_be()
}

/// An owned AF_PACKET socket.
pub struct PacketSocket {
    fd: libc::c_int,
}

impl PacketSocket {
    /// A raw packet socket that receives nothing until it is bound with a protocol.
    pub fn new() -> Result<PacketSocket, String> {
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => {
                    "af_packet needs CAP_NET_RAW (run as root)".to_string()
                }
                _ => format!("af_packet socket: {e}"),
            });
        }
        Ok(PacketSocket { fd })
    }

    pub fn fd(&self) -> libc::c_int {
        self.fd
    }

    /// setsockopt(SOL_PACKET, opt, value).
    pub fn set_option<T>(&self, opt: libc::c_int, value: &T) -> io::Result<()> {
        crate::sys::sockopt::set(self.fd, libc::SOL_PACKET, opt, value)
    }

    /// Bind to interface `ifindex`, receiving `protocol` (network order; 0 receives nothing).
    pub fn bind(&self, ifindex: u32, protocol: u16) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain data; all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = protocol;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll of the size passed.
        let rc = unsafe {
            libc::bind(
                self.fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Attach a classic BPF socket filter (SO_ATTACH_FILTER): the kernel runs it on every
    /// packet before queueing it to this socket and keeps only the packets it accepts, cut to
    /// the length it returns. Attach it before `bind`, so no packet arrives unfiltered.
    pub fn attach_filter(&self, program: &[ClassicInsn]) -> io::Result<()> {
        let len = u16::try_from(program.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "socket filter too long"))?;
        let fprog = libc::sock_fprog {
            len,
            // ClassicInsn is #[repr(C)] with sock_filter's fields in its order, so the array
            // has the layout the kernel reads; it only reads it (the pointer is *mut in C).
            filter: program.as_ptr() as *mut libc::sock_filter,
        };
        // The kernel copies the program during the call; `program` outlives it.
        crate::sys::sockopt::set(self.fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)
    }

    /// Packets the kernel dropped because the ring was full, since the last call (the kernel
    /// resets the count when it is read).
    pub fn take_drops(&self) -> u64 {
        // SAFETY: tpacket_stats_v3 is plain data.
        let mut st: libc::tpacket_stats_v3 = unsafe { std::mem::zeroed() };
        // SAFETY: tpacket_stats_v3 is three u32 counters, valid whatever the kernel writes.
        let read = unsafe {
            crate::sys::sockopt::get(self.fd, libc::SOL_PACKET, libc::PACKET_STATISTICS, &mut st)
        };
        match read {
            Ok(()) => st.tp_drops as u64,
            Err(_) => 0,
        }
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it once. Closing also ends any promiscuous
        // membership the socket held, so the interface's flag is restored by the kernel.
        unsafe { libc::close(self.fd) };
    }
}

/// What one `send` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendResult {
    pub sent: usize,
    /// Not sent because the device queue was full (EAGAIN, ENOBUFS).
    pub queue_full: usize,
    /// Not sent because the kernel refused them.
    pub errors: usize,
}

/// Most frames one `sendmmsg` call carries.
pub const MAX_BATCH: usize = 256;
/// Most segments one frame may have (9000 bytes in 2048-byte buffers is 5).
pub const MAX_SEGMENTS: usize = 8;

/// A transmit socket bound to one interface, sending batches with `sendmmsg` and bypassing
/// the qdisc layer (as a NIC queue would be used directly).
pub struct Sender {
    socket: PacketSocket,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

// SAFETY: the iovec and mmsghdr arrays hold pointers only during `send`, which fills them
// from its arguments and finishes with them before returning.
unsafe impl Send for Sender {}

impl Sender {
    pub fn open(ifindex: u32) -> Result<Sender, String> {
        let socket = PacketSocket::new()?;
        socket
            .set_option(libc::PACKET_QDISC_BYPASS, &(1 as libc::c_int))
            .map_err(|e| format!("PACKET_QDISC_BYPASS: {e}"))?;
        // Protocol 0: this socket receives nothing.
        socket.bind(ifindex, 0).map_err(|e| format!("bind: {e}"))?;
        let empty_iov = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        // SAFETY: mmsghdr is plain data for which all-zero (null pointers, zero lengths) is
        // a valid empty message.
        let empty_msg: libc::mmsghdr = unsafe { std::mem::zeroed() };
        Ok(Sender {
            socket,
            iov: vec![empty_iov; MAX_BATCH * MAX_SEGMENTS],
            msgs: vec![empty_msg; MAX_BATCH],
        })
    }

    /// Send up to MAX_BATCH frames, each given as its segments.
    pub fn send<'a, I, S>(&mut self, frames: I) -> SendResult
    where
        I: IntoIterator<Item = S>,
        S: IntoIterator<Item = &'a [u8]>,
    {
        let mut n = 0;
        let mut k = 0;
        for segments in frames.into_iter().take(MAX_BATCH) {
            let first = k;
            for seg in segments.into_iter().take(MAX_SEGMENTS) {
                self.iov[k] = libc::iovec {
                    iov_base: seg.as_ptr() as *mut libc::c_void,
                    iov_len: seg.len(),
                };
                k += 1;
            }
            let m = &mut self.msgs[n].msg_hdr;
            m.msg_iov = self.iov[first..].as_mut_ptr();
            m.msg_iovlen = k - first;
            n += 1;
        }
        let mut r = SendResult::default();
        let mut at = 0;
        while at < n {
            // SAFETY: msgs[at..n] point at iovecs filled above, which point at slices the
            // caller keeps alive for this call; the socket is bound, so no address is needed.
            let rc = unsafe {
                libc::sendmmsg(
                    self.socket.fd(),
                    self.msgs[at..].as_mut_ptr(),
                    (n - at) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if rc > 0 {
                r.sent += rc as usize;
                at += rc as usize;
                continue;
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => {
                    r.queue_full += n - at;
                    break;
                }
                Some(libc::EINTR) => continue,
                // The device is gone (ENXIO, ENODEV) or down (ENETDOWN): no later frame of
                // the batch can go either, so do not ask the kernel once per frame.
                Some(libc::ENXIO) | Some(libc::ENODEV) | Some(libc::ENETDOWN) => {
                    r.errors += n - at;
                    break;
                }
                _ => {
                    // The first frame was refused (too big, interface down...): skip it.
                    r.errors += 1;
                    at += 1;
                }
            }
        }
        for m in &mut self.msgs[..n] {
            m.msg_hdr.msg_iov = std::ptr::null_mut();
            m.msg_hdr.msg_iovlen = 0;
        }
        r
    }
}
