//! AF_PACKET transmit ring (PACKET_TX_RING, TPACKET_V2): frames are copied into slots of a
//! ring shared with the kernel and one `sendto` per burst has the kernel send every slot
//! marked for it, with no per-frame system call or message header. The qdisc is bypassed
//! (as a NIC queue would be used directly).
//!
//! The kernel reads the ring from its own head and stops at the first slot that is not
//! marked SEND_REQUEST, so a slot it did not take (device busy, bad frame) must not be left
//! behind: after each kick every slot it did not take is handed back here and the next
//! write starts there again, which keeps our cursor and the kernel's head the same slot
//! between bursts.

use super::rx_ring::{v2_ring, RxOrTx};
use super::socket::PacketSocket;
use crate::sys::mapping::SharedMapping;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

/// Slots per transmit ring. On a veth the kernel is done with each slot before `sendto`
/// returns; on a NIC slots stay taken until the device has sent them, so this bounds the
/// frames in flight per queue (a NIC ring's size).
pub const TX_SLOTS: u32 = 512;

/// Where a slot's frame starts: after the tpacket2 header, aligned (TPACKET2_HDRLEN minus
/// the sockaddr_ll the kernel counts in it), as the kernel reads it without PACKET_TX_HAS_OFF.
const DATA_OFFSET: usize = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();

/// Slot states that mean the kernel still has the slot (or has refused it).
const BUSY: u32 = libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_SENDING;
const NOT_TAKEN: u32 = libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_WRONG_FORMAT;

/// What one `send` did with its frames; every frame is in exactly one count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingSend {
    pub sent: usize,
    /// Bytes of the frames sent.
    pub bytes: u64,
    /// Not sent: no free slot (the kernel still holds them) or the device's queue was full
    /// (EAGAIN, ENOBUFS).
    pub queue_full: usize,
    /// Not sent because the kernel refused them (device gone or down, other errors).
    pub errors: usize,
    /// Refused by the kernel as TP_STATUS_WRONG_FORMAT (longer than the device takes).
    pub wrong_format: usize,
}

/// A transmit ring bound to one interface.
pub struct TxRing {
    /// Declared before `socket`, so it is unmapped before the socket closes.
    map: SharedMapping,
    socket: PacketSocket,
    frame_size: usize,
    frame_count: u32,
    /// The slot the next frame goes in; between bursts also the kernel's head.
    next: u32,
}

// SAFETY: the ring's mapping is owned by this value alone and used from one thread at a time
// (`send` takes `&mut self`).
unsafe impl Send for TxRing {}

impl TxRing {
    /// A ring of `count` slots (rounded up to whole ring blocks) for frames of up to
    /// `max_frame` bytes on interface `ifindex`.
    pub fn open(ifindex: u32, max_frame: usize, count: u32) -> Result<TxRing, String> {
        let socket = PacketSocket::new()?;
        let frame_size = (DATA_OFFSET + max_frame).next_power_of_two().max(2048) as u32;
        let slots = v2_ring(&socket, RxOrTx::Tx, frame_size, count)?;
        socket
            .set_option(libc::PACKET_QDISC_BYPASS, &(1 as libc::c_int))
            .map_err(|e| format!("PACKET_QDISC_BYPASS: {e}"))?;
        // Protocol 0: this socket receives nothing.
        socket.bind(ifindex, 0).map_err(|e| format!("bind: {e}"))?;
        let len = slots as usize * frame_size as usize;
        // The ring the kernel just allocated for this socket, at its size.
        let map =
            SharedMapping::new(socket.fd(), len, 0).map_err(|e| format!("mmap tx ring: {e}"))?;
        Ok(TxRing {
            map,
            socket,
            frame_size: frame_size as usize,
            frame_count: slots,
            next: 0,
        })
    }

    /// The longest frame a slot holds.
    pub fn max_frame(&self) -> usize {
        self.frame_size - DATA_OFFSET
    }

    /// A line for `show hardware`.
    pub fn describe(&self) -> String {
        format!(
            "TPACKET_V2 ring, {} frames of {} B, one sendto per burst, qdisc bypass",
            self.frame_count, self.frame_size
        )
    }

    fn slot(&self, s: u32) -> *mut u8 {
        // SAFETY: s < frame_count, and slots fill each ring block whole (the frame size is a
        // power of two that divides the block), so slot s is the s-th frame_size bytes of
        // the mapping.
        unsafe { self.map.ptr().add(s as usize * self.frame_size) }
    }

    fn status(&self, s: u32) -> &AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte-aligned u32 of the slot's header, handed
        // back and forth between the kernel and us; AtomicU32 has the layout of u32.
        unsafe { &*(self.slot(s) as *const AtomicU32) }
    }

    fn header(&self, s: u32) -> *mut libc::tpacket2_hdr {
        self.slot(s) as *mut libc::tpacket2_hdr
    }

    /// Send `n` frames: `fill(i, slot)` copies frame `i` into `slot` (at least `max_frame()`
    /// bytes) and returns its length. Frames go in order; a frame the kernel refuses is
    /// counted and the ones after it are written again, so each is sent or counted once.
    pub fn send(&mut self, n: usize, mut fill: impl FnMut(usize, &mut [u8]) -> usize) -> RingSend {
        let mut r = RingSend::default();
        let mut p = 0;
        // EINTR retries the same frames; a few at most, so a signal storm cannot hang us.
        let mut interrupts = 0;
        while p < n {
            let first = self.next;
            let from = p;
            while p < n && self.status(self.next).load(Ordering::Acquire) & BUSY == 0 {
                self.write(self.next, |d| fill(p, d));
                self.next = (self.next + 1) % self.frame_count;
                p += 1;
            }
            let written = p - from;
            if written == 0 {
                // Every slot is still the kernel's: back-pressure.
                r.queue_full += n - p;
                break;
            }
            let kick = self.kick();
            let taken = self.reap(first, written, &mut r);
            if taken == written {
                continue;
            }
            // The kernel stopped at slot `first + taken` (its head): take back that slot and
            // every later one, and write from there again.
            let stop = (first + taken as u32) % self.frame_count;
            let refused = self.status(stop).load(Ordering::Acquire) & libc::TP_STATUS_WRONG_FORMAT;
            for k in taken..written {
                let s = (first + k as u32) % self.frame_count;
                // Release: nothing of ours in the slot is read after this.
                self.status(s)
                    .store(libc::TP_STATUS_AVAILABLE, Ordering::Release);
            }
            self.next = stop;
            p = from + taken;
            if refused != 0 {
                r.wrong_format += 1;
                p += 1;
                continue;
            }
            match kick.err().and_then(|e| e.raw_os_error()) {
                Some(libc::EINTR) if interrupts < 3 => interrupts += 1,
                // No skb for it (the socket's send buffer is full: sendto then says how much
                // it did send) or the device's queue is full.
                None | Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => {
                    r.queue_full += n - p;
                    break;
                }
                // The device is gone or down: no later frame can go either.
                Some(libc::ENXIO) | Some(libc::ENODEV) | Some(libc::ENETDOWN) => {
                    r.errors += n - p;
                    break;
                }
                // This frame was refused: skip it.
                Some(_) => {
                    r.errors += 1;
                    p += 1;
                }
            }
        }
        r
    }

    /// Copy a frame into free slot `s` and mark it for the kernel.
    fn write(&self, s: u32, fill: impl FnOnce(&mut [u8]) -> usize) {
        let room = self.max_frame();
        // SAFETY: the slot is ours (AVAILABLE: the kernel neither reads nor writes it until
        // we mark it SEND_REQUEST), and [DATA_OFFSET, frame_size) lies inside it.
        let data = unsafe { std::slice::from_raw_parts_mut(self.slot(s).add(DATA_OFFSET), room) };
        let len = fill(data).min(room);
        // SAFETY: the header starts the slot, which is ours, aligned (power-of-two slots).
        unsafe { std::ptr::addr_of_mut!((*self.header(s)).tp_len).write_volatile(len as u32) };
        // Release: the frame and its length are written before the kernel sees the request.
        self.status(s)
            .store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
    }

    /// After a kick, the slots from `first` the kernel took (sent or sending), counted into
    /// `r`: they are a prefix of the `written` slots, since the kernel takes them in order
    /// and stops at the first it cannot send.
    fn reap(&self, first: u32, written: usize, r: &mut RingSend) -> usize {
        for k in 0..written {
            let s = (first + k as u32) % self.frame_count;
            // Acquire: pairs with the kernel's status write.
            if self.status(s).load(Ordering::Acquire) & NOT_TAKEN != 0 {
                return k;
            }
            // SAFETY: the header is inside the slot; tp_len is what we wrote, which the
            // kernel does not change.
            let len = unsafe { std::ptr::addr_of!((*self.header(s)).tp_len).read_volatile() };
            r.sent += 1;
            r.bytes += len as u64;
        }
        written
    }

    /// Have the kernel send every slot marked for it, from its head on.
    fn kick(&self) -> io::Result<usize> {
        // SAFETY: sendto with no buffer and no address on a bound socket with a tx ring:
        // the kernel reads only the ring, which we own and keep mapped.
        let rc = unsafe {
            libc::sendto(
                self.socket.fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(rc as usize)
    }
}

#[cfg(test)]
#[path = "tx_ring_tests.rs"]
mod tests;
