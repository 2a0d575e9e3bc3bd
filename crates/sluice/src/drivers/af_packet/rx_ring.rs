//! AF_PACKET receive rings: TPACKET_V3 blocks for the generator (few wakeups, kernel
//! timestamps), TPACKET_V2 slots for the dataplane's busy-polling workers (each frame handed
//! over as it is written).

use super::socket::{eth_p_all, PacketSocket};
use crate::sys::bpf::ClassicInsn;
use crate::sys::mapping::SharedMapping;
use std::sync::atomic::{AtomicU32, Ordering};

/// Receive ring geometry.
#[derive(Clone, Copy, Debug)]
pub struct RingGeometry {
    /// Bytes per block; a block holds many frames and is handed over whole.
    pub block_size: u32,
    pub block_count: u32,
    /// How long the kernel may keep a partly filled block before handing it over (ms). Small
    /// keeps latency low at low rates; at high rates blocks fill long before.
    pub retire_ms: u32,
}

impl Default for RingGeometry {
    fn default() -> Self {
        // 64 blocks of 256 KiB = 16 MiB: about 2 ms of 64-byte frames at 10 Mpps per block
        // set, and room for 28 jumbo frames per block.
        RingGeometry {
            block_size: 256 << 10,
            block_count: 64,
            retire_ms: 1,
        }
    }
}

/// How a receive ring hands frames over.
#[derive(Clone, Copy, Debug)]
pub enum RingLayout {
    /// TPACKET_V3: blocks of many frames, each handed over when full or `retire_ms` after its
    /// first frame. Fewest wakeups for a receiver that sleeps (the generator, which reads the
    /// kernel's receive timestamps), but at light load a frame waits for its block.
    Blocks(RingGeometry),
    /// TPACKET_V2: one slot of `frame_size` bytes per frame, handed over as soon as it is
    /// written: nothing waits for a busy-polling worker. `frame_count` slots bound the queue
    /// by time: at a worker's rate the ring holds a few milliseconds, so overload drops at
    /// the tail instead of queueing a quarter of a second.
    Frames { frame_size: u32, frame_count: u32 },
}

impl Default for RingLayout {
    fn default() -> Self {
        RingLayout::Blocks(RingGeometry::default())
    }
}

impl RingLayout {
    /// Per-frame slots for frames of up to `max_frame` bytes, `frame_count` of them.
    pub fn frames(max_frame: usize, frame_count: u32) -> RingLayout {
        // The slot holds the tpacket2 header and sockaddr_ll (aligned), room for a VLAN tag
        // the kernel may re-insert, and the frame.
        let need = FRAME_HEADROOM + max_frame + 4;
        RingLayout::Frames {
            frame_size: need.next_power_of_two().max(2048) as u32,
            frame_count,
        }
    }

    /// A line for `show hardware`.
    pub fn describe(&self) -> String {
        match self {
            RingLayout::Blocks(g) => format!(
                "TPACKET_V3, {} blocks of {} KiB, retire {} ms",
                g.block_count,
                g.block_size >> 10,
                g.retire_ms
            ),
            RingLayout::Frames {
                frame_size,
                frame_count,
            } => format!(
                "TPACKET_V2, {frame_count} frames of {frame_size} B, handed over one by one"
            ),
        }
    }
}

/// Bytes a V2 slot spends before the frame: the tpacket2 header and sockaddr_ll, aligned.
const FRAME_HEADROOM: usize = 64;
/// Bytes of one V2 ring block: slots never straddle blocks.
const FRAME_BLOCK: usize = 128 << 10;

/// Options for a receive ring.
#[derive(Clone, Debug, Default)]
pub struct RxOptions {
    pub layout: RingLayout,
    /// Put the interface in promiscuous mode while the socket lives.
    pub promiscuous: bool,
    /// Join this fanout group (hash of the flow), so several rings share the traffic.
    pub fanout_group: Option<u16>,
    /// A classic BPF socket filter, attached before the socket is bound (empty: none).
    pub filter: Vec<ClassicInsn>,
}

/// One received frame, borrowed from the ring.
pub struct RxFrame<'a> {
    pub data: &'a [u8],
    /// Length on the wire; larger than `data.len()` when the ring cut the frame.
    pub wire_len: u32,
    pub timestamp_ns: u64,
    /// A VLAN tag the kernel took off the frame (TPID, TCI), to be put back.
    pub vlan: Option<(u16, u16)>,
}

/// A receive ring, read without system calls: the kernel fills a block (V3) or a slot (V2)
/// and flips its status word; we read the frames and flip it back.
pub struct RxRing {
    /// Declared before `socket`, so it is unmapped before the socket closes.
    map: SharedMapping,
    socket: PacketSocket,
    layout: RingLayout,
    /// V3: block being read. V2: slot to read next.
    block: u32,
    /// V3: frames of the current block already read, and the offset of the next one.
    read_in_block: u32,
    next_offset: usize,
    /// V2: a slot read but not yet handed back (its frame was borrowed until this call).
    held: Option<u32>,
}

// SAFETY: the ring's mapping is owned by this value alone and used from one thread at a time.
unsafe impl Send for RxRing {}

/// Byte offsets inside a block descriptor (struct tpacket_block_desc with tpacket_hdr_v1).
const BLOCK_STATUS: usize = 8;
const BLOCK_NUM_PKTS: usize = 12;
const BLOCK_FIRST_PKT: usize = 16;

impl RxRing {
    /// Open a ring on interface `ifindex`.
    pub fn open(ifindex: u32, opts: &RxOptions) -> Result<RxRing, String> {
        let socket = PacketSocket::new()?;
        let mut layout = opts.layout;
        let map_len = match opts.layout {
            RingLayout::Blocks(g) => {
                set_version(
                    &socket,
                    libc::tpacket_versions::TPACKET_V3 as libc::c_int,
                    "v3",
                )?;
                let req = libc::tpacket_req3 {
                    tp_block_size: g.block_size,
                    tp_block_nr: g.block_count,
                    // Only used by the kernel to check the geometry in V3.
                    tp_frame_size: 2048,
                    tp_frame_nr: g.block_size / 2048 * g.block_count,
                    tp_retire_blk_tov: g.retire_ms,
                    tp_sizeof_priv: 0,
                    tp_feature_req_word: 0,
                };
                socket
                    .set_option(libc::PACKET_RX_RING, &req)
                    .map_err(|e| format!("PACKET_RX_RING: {e}"))?;
                g.block_size as usize * g.block_count as usize
            }
            RingLayout::Frames {
                frame_size,
                frame_count,
            } => {
                let slots = v2_ring(&socket, RxOrTx::Rx, frame_size, frame_count)?;
                // The kernel wraps at the slots it made, whole blocks of them.
                layout = RingLayout::Frames {
                    frame_size,
                    frame_count: slots,
                };
                (slots * frame_size) as usize
            }
        };
        // The ring the kernel just allocated for this socket, at the size it was asked for.
        let map = SharedMapping::new(socket.fd(), map_len, 0)
            .map_err(|e| format!("mmap rx ring: {e}"))?;
        let ring = RxRing {
            map,
            socket,
            layout,
            block: 0,
            read_in_block: 0,
            next_offset: 0,
            held: None,
        };
        if !opts.filter.is_empty() {
            ring.socket
                .attach_filter(&opts.filter)
                .map_err(|e| format!("SO_ATTACH_FILTER: {e}"))?;
        }
        // Our own transmissions would otherwise come back to us.
        let _ = ring
            .socket
            .set_option(libc::PACKET_IGNORE_OUTGOING, &(1 as libc::c_int));
        ring.socket
            .bind(ifindex, eth_p_all())
            .map_err(|e| format!("bind: {e}"))?;
        if opts.promiscuous {
            let mreq = libc::packet_mreq {
                mr_ifindex: ifindex as i32,
                mr_type: libc::PACKET_MR_PROMISC as u16,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            ring.socket
                .set_option(libc::PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|e| format!("promiscuous mode: {e}"))?;
        }
        if let Some(group) = opts.fanout_group {
            let arg: libc::c_int =
                group as libc::c_int | ((libc::PACKET_FANOUT_HASH as libc::c_int) << 16);
            ring.socket
                .set_option(libc::PACKET_FANOUT, &arg)
                .map_err(|e| format!("PACKET_FANOUT: {e}"))?;
        }
        Ok(ring)
    }

    pub fn socket(&self) -> &PacketSocket {
        &self.socket
    }

    /// Where V3 block `b`, or V2 slot `b`, starts.
    fn block_ptr(&self, b: u32) -> *mut u8 {
        let at = match self.layout {
            RingLayout::Blocks(g) => b as usize * g.block_size as usize,
            RingLayout::Frames { frame_size, .. } => {
                // Slots fill each block whole and never straddle one: with every block
                // holding `per_block` slots, slot b sits at b * frame_size.
                b as usize * frame_size as usize
            }
        };
        // SAFETY: b < the block (V3) or slot (V2) count, so `at` lies inside the mapping.
        unsafe { self.map.ptr().add(at) }
    }

    /// The status word of V3 block `b` (in its descriptor) or V2 slot `b` (first in its
    /// header).
    fn status(&self, b: u32) -> &AtomicU32 {
        let at = match self.layout {
            RingLayout::Blocks(_) => BLOCK_STATUS,
            RingLayout::Frames { .. } => 0,
        };
        // SAFETY: the status word is a 4-byte-aligned u32 inside the block or slot header
        // that the kernel and we hand back and forth; AtomicU32 has the same layout as u32.
        unsafe { &*(self.block_ptr(b).add(at) as *const AtomicU32) }
    }

    fn read_u32(&self, at: *const u8) -> u32 {
        // SAFETY: callers pass pointers inside a block we own (status USER), 4-byte aligned
        // as the kernel lays out its headers.
        unsafe { std::ptr::read_volatile(at as *const u32) }
    }

    /// The next frame the kernel has handed over, if any. The frame borrows the ring; call
    /// again only after it is dropped.
    pub fn next_frame(&mut self) -> Option<RxFrame<'_>> {
        match self.layout {
            RingLayout::Blocks(g) => self.next_in_block(g.block_size as usize),
            RingLayout::Frames {
                frame_size,
                frame_count,
            } => self.next_slot(frame_size as usize, frame_count),
        }
    }

    /// V2: the frame in the next slot, once the kernel has written it; the slot read before
    /// goes back to the kernel first.
    fn next_slot(&mut self, frame_size: usize, count: u32) -> Option<RxFrame<'_>> {
        if let Some(prev) = self.held.take() {
            // Release: our reads of the slot happen before the kernel may refill it.
            self.status(prev)
                .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        }
        loop {
            let slot = self.block;
            // Acquire: the kernel's writes to the slot happen before it sets USER.
            if self.status(slot).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                return None;
            }
            self.block = (slot + 1) % count;
            let base = self.block_ptr(slot);
            // SAFETY: the header lies at the start of the slot we now own, aligned as the
            // kernel lays slots out (frame_size is a power of two).
            let h: libc::tpacket2_hdr =
                unsafe { std::ptr::read_volatile(base as *const libc::tpacket2_hdr) };
            let start = h.tp_mac as usize;
            let len = h.tp_snaplen as usize;
            if start + len > frame_size {
                // A corrupt header would read outside the slot: hand it back unread.
                self.status(slot)
                    .store(libc::TP_STATUS_KERNEL, Ordering::Release);
                continue;
            }
            self.held = Some(slot);
            // SAFETY: [start, start+len) is inside the slot, which stays ours until the
            // next call, after this borrow ends.
            let data = unsafe { std::slice::from_raw_parts(base.add(start), len) };
            let vlan = (h.tp_status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
                let tpid = if h.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                    h.tp_vlan_tpid
                } else {
                    0x8100
                };
                (tpid, h.tp_vlan_tci)
            });
            return Some(RxFrame {
                data,
                wire_len: h.tp_len,
                timestamp_ns: h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64,
                vlan,
            });
        }
    }

    /// V3: the next frame of a block the kernel has handed over, if any.
    fn next_in_block(&mut self, bs: usize) -> Option<RxFrame<'_>> {
        loop {
            // Acquire: the kernel's writes to the block happen before it sets USER.
            if self.status(self.block).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                return None;
            }
            let base = self.block_ptr(self.block);
            // SAFETY: header fields inside the block we now own.
            let num = self.read_u32(unsafe { base.add(BLOCK_NUM_PKTS) });
            if self.read_in_block == 0 {
                self.next_offset = self.read_u32(unsafe { base.add(BLOCK_FIRST_PKT) }) as usize;
            }
            if self.read_in_block >= num {
                self.release_block();
                continue;
            }
            if self.next_offset + std::mem::size_of::<libc::tpacket3_hdr>() > bs {
                // A corrupt offset would read outside the block: skip the rest of it.
                self.release_block();
                continue;
            }
            // SAFETY: the frame header lies inside the block (checked above) and is aligned
            // (the kernel aligns frames to TPACKET_ALIGNMENT).
            let h: libc::tpacket3_hdr = unsafe {
                std::ptr::read_volatile(base.add(self.next_offset) as *const libc::tpacket3_hdr)
            };
            let start = self.next_offset + h.tp_mac as usize;
            let len = h.tp_snaplen as usize;
            self.read_in_block += 1;
            self.next_offset += h.tp_next_offset as usize;
            if start + len > bs {
                continue;
            }
            // SAFETY: [start, start+len) is inside the block, which stays ours until we
            // release it, after this borrow ends.
            let data = unsafe { std::slice::from_raw_parts(base.add(start), len) };
            let vlan = (h.tp_status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
                let tpid = if h.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                    h.hv1.tp_vlan_tpid
                } else {
                    0x8100
                };
                (tpid, h.hv1.tp_vlan_tci as u16)
            });
            return Some(RxFrame {
                data,
                wire_len: h.tp_len,
                timestamp_ns: h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64,
                vlan,
            });
        }
    }

    /// Hand the current block back to the kernel and move to the next.
    fn release_block(&mut self) {
        // Release: our reads of the block happen before the kernel may refill it.
        self.status(self.block)
            .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        let RingLayout::Blocks(g) = self.layout else {
            return;
        };
        self.block = (self.block + 1) % g.block_count;
        self.read_in_block = 0;
        self.next_offset = 0;
    }

    /// Wait up to `timeout_ms` for a block (for receivers that may sleep, like the generator).
    pub fn wait(&self, timeout_ms: i32) {
        let mut pfd = libc::pollfd {
            fd: self.socket.fd(),
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    }
}

/// PACKET_VERSION.
fn set_version(socket: &PacketSocket, v: libc::c_int, name: &str) -> Result<(), String> {
    socket
        .set_option(libc::PACKET_VERSION, &v)
        .map_err(|e| format!("PACKET_VERSION {name}: {e}"))
}

/// V2 ring blocks: (slots per block, blocks) for at least `count` slots of `frame_size`.
pub(super) fn frame_blocks(frame_size: u32, count: u32) -> (u32, u32) {
    let per_block = (FRAME_BLOCK as u32 / frame_size).max(1);
    (per_block, count.div_ceil(per_block).max(1))
}

/// Which of a socket's rings `v2_ring` asks for.
#[derive(Clone, Copy)]
pub(super) enum RxOrTx {
    Rx,
    Tx,
}

/// Ask the kernel for a TPACKET_V2 ring of at least `count` slots of `frame_size` bytes,
/// whole blocks of them (`frame_blocks`); the slots it made.
pub(super) fn v2_ring(
    socket: &PacketSocket,
    ring: RxOrTx,
    frame_size: u32,
    count: u32,
) -> Result<u32, String> {
    set_version(
        socket,
        libc::tpacket_versions::TPACKET_V2 as libc::c_int,
        "v2",
    )?;
    let (per_block, blocks) = frame_blocks(frame_size, count);
    let req = libc::tpacket_req {
        tp_block_size: per_block * frame_size,
        tp_block_nr: blocks,
        tp_frame_size: frame_size,
        tp_frame_nr: per_block * blocks,
    };
    let (option, name) = match ring {
        RxOrTx::Rx => (libc::PACKET_RX_RING, "PACKET_RX_RING"),
        RxOrTx::Tx => (libc::PACKET_TX_RING, "PACKET_TX_RING"),
    };
    socket
        .set_option(option, &req)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok(req.tp_frame_nr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fit_the_largest_frame_and_whole_blocks() {
        let RingLayout::Frames { frame_size, .. } = RingLayout::frames(1518, 2048) else {
            panic!("not frames");
        };
        assert_eq!(frame_size, 2048);
        let RingLayout::Frames { frame_size, .. } = RingLayout::frames(9018, 2048) else {
            panic!("not frames");
        };
        assert_eq!(frame_size, 16384);
        // 64 slots of 2 KiB per 128 KiB block; a count that is not a whole number of
        // blocks is rounded up, never down.
        assert_eq!(frame_blocks(2048, 2048), (64, 32));
        assert_eq!(frame_blocks(16384, 100), (8, 13));
        assert_eq!(frame_blocks(1 << 18, 1), (1, 1));
    }
}
