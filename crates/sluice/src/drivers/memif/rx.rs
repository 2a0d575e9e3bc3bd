//! The receive queues: a client takes the buffers it posted and the server filled; a server
//! copies the client's packets into pool buffers. Chained descriptors become chained buffers.

use super::connection::{Role, POOL_REGION};
use super::rings::{pool_offset, prefetch_buffer, RingLink, PREFETCH_AHEAD};
use super::shm::{Desc, Region, DESC_FLAG_NEXT};
use super::violation::Violation;
use super::MAX_SEGMENTS;
use crate::buffer::{BufferPool, WorkerBuffers, DATA_SIZE, HEADROOM, NO_BUFFER};
use crate::drivers::{RxBurst, RxQueue};
use std::sync::Arc;

/// A packet being put together from several descriptors.
#[derive(Default)]
pub(super) struct Partial {
    pub(super) head: Option<u32>,
    pub(super) last: u32,
    pub(super) total: u32,
    pub(super) segments: usize,
    /// The rest of a chain whose earlier segment was dropped: consumed, not delivered (else
    /// its tail would arrive as a packet of its own).
    pub(super) skipping: bool,
}

impl Partial {
    pub(super) fn add(&mut self, bufs: &mut WorkerBuffers, bi: u32, len: u32) {
        match self.head {
            None => {
                self.head = Some(bi);
                bufs.meta_mut(bi).next = NO_BUFFER;
            }
            Some(_) => bufs.meta_mut(self.last).next = bi,
        }
        self.last = bi;
        self.total += len;
        self.segments += 1;
    }

    /// Take segment `bi` (`length` bytes in place) of a packet; at its last segment (no
    /// NEXT in `flags`) the packet goes to `out`. A packet of too many segments is dropped.
    pub(super) fn take(
        &mut self,
        bufs: &mut WorkerBuffers,
        bi: u32,
        length: u32,
        flags: u16,
        out: &mut [u32],
        r: &mut RxBurst,
    ) {
        if self.head.is_none() && flags & DESC_FLAG_NEXT == 0 {
            // A whole packet in one descriptor, the common case: no chain to keep.
            bufs.meta_mut(bi).next = NO_BUFFER;
            out[r.packets] = bi;
            r.packets += 1;
            r.bytes += length as u64;
            return;
        }
        self.add(bufs, bi, length);
        if flags & DESC_FLAG_NEXT != 0 {
            if self.segments >= MAX_SEGMENTS {
                self.drop_packet(bufs, flags);
                r.too_long += 1;
            }
            return;
        }
        if let Some(head) = self.finish(bufs) {
            r.bytes += bufs.meta(head).total_len as u64;
            out[r.packets] = head;
            r.packets += 1;
        }
    }

    /// Copies descriptor `d`'s segment out of `region` into `fresh` and takes it; with no
    /// fresh buffer left the packet is dropped and counted. Whether `fresh` was used.
    #[inline]
    pub(super) fn copy_in(
        &mut self,
        (region, d): (&Region, &Desc),
        bufs: &mut WorkerBuffers,
        fresh: Option<u32>,
        out: &mut [u32],
        r: &mut RxBurst,
    ) -> bool {
        let Some(bi) = fresh else {
            self.drop_packet(bufs, d.flags);
            r.no_buffers += 1;
            return false;
        };
        copy_segment(region, bufs, bi, d);
        self.take(bufs, bi, d.length, d.flags, out, r);
        true
    }

    /// The finished packet's first buffer.
    pub(super) fn finish(&mut self, bufs: &mut WorkerBuffers) -> Option<u32> {
        let head = self.head.take()?;
        bufs.meta_mut(head).total_len = self.total;
        bufs.meta_mut(self.last).next = NO_BUFFER;
        self.total = 0;
        self.segments = 0;
        Some(head)
    }

    pub(super) fn discard(&mut self, bufs: &mut WorkerBuffers) {
        self.skipping = false;
        if let Some(head) = self.finish(bufs) {
            bufs.free(head);
        }
    }

    /// Drop the packet whose segment had descriptor flags `flags`, and skip the segments
    /// still to come when there are more.
    pub(super) fn drop_packet(&mut self, bufs: &mut WorkerBuffers, flags: u16) {
        self.discard(bufs);
        self.skipping = flags & DESC_FLAG_NEXT != 0;
    }

    pub(super) fn discard_to_pool(&mut self, pool: &BufferPool) {
        if let Some(head) = self.head.take() {
            // SAFETY: the partial packet is this queue's alone (no frame carries it yet) and
            // the queue is closing, so no handle uses its segments again.
            unsafe { pool.give_back_chains(&[head]) };
        }
    }
}

/// A received segment's buffer metadata: its data after the headroom, `length` bytes.
fn segment_meta(bufs: &mut WorkerBuffers, bi: u32, length: u32) {
    let m = bufs.meta_mut(bi);
    m.offset = HEADROOM as u16;
    m.len = length as u16;
    m.total_len = length;
}

/// Copies descriptor `d`'s bytes out of `region` into fresh buffer `bi` (the caller checked
/// that the region holds them and that they fit a buffer) and sets its metadata.
fn copy_segment(region: &Region, bufs: &mut WorkerBuffers, bi: u32, d: &Desc) {
    let len = d.length as usize;
    region.read(
        d.offset as usize,
        &mut bufs.raw_mut(bi)[HEADROOM..HEADROOM + len],
    );
    segment_meta(bufs, bi, d.length);
}

/// One receive queue: ring `index` of the connection's server-to-us direction.
pub(super) struct MemifRx {
    pub(super) pool: Arc<BufferPool>,
    pub(super) role: Role,
    /// Client: our buffer pool is region 1 (else a region of our own, copied out of).
    pub(super) zero_copy: bool,
    /// Client, zero-copy: `slots` are the buffers posted in the S2C ring.
    pub(super) link: RingLink,
    pub(super) partial: Partial,
}

impl MemifRx {
    /// Client: the server filled buffers we posted, from `next` up to its tail; they join
    /// the graph as they are. Each descriptor must be the buffer we posted in its slot.
    pub(super) fn rx_client(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32], r: &mut RxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = &*att.conn;
        let ring = &conn.s2c[self.link.index];
        let size = ring.size() as u16;
        let tail = ring.tail();
        if tail.wrapping_sub(self.link.next) > self.link.head.wrapping_sub(self.link.next) {
            // Beyond what we posted (or backwards): slots that are not ours to read.
            r.bad_descriptors += 1;
            self.link.violated(Violation::TailPastHead);
            return;
        }
        // The server wrote these buffers from another core: start loading the ones a few
        // slots ahead (data and metadata), for us and for ethernet-input after us.
        let filled = tail.wrapping_sub(self.link.next) as usize;
        for k in 0..PREFETCH_AHEAD.min(filled) {
            bufs.prefetch(self.link.slots.peek(self.link.next.wrapping_add(k as u16)));
        }
        while self.link.next != tail && r.packets < out.len() {
            let slot = self.link.next;
            self.link.next = self.link.next.wrapping_add(1);
            let ahead = slot.wrapping_add(PREFETCH_AHEAD as u16);
            // Slots from `ahead` up to the tail, or (past the tail) a wrapped large number.
            let left = tail.wrapping_sub(ahead) as usize;
            if left > 0 && left <= filled {
                ring.prefetch_desc(ahead.wrapping_add(PREFETCH_AHEAD as u16));
                bufs.prefetch(self.link.slots.peek(ahead));
            }
            let d = ring.desc(slot);
            let bi = self.link.slots.take(slot);
            if bi == NO_BUFFER {
                // Every slot from next to head holds a buffer; not reached.
                r.bad_descriptors += 1;
                continue;
            }
            let violation = if d.region != POOL_REGION || d.offset != pool_offset(bi, HEADROOM) {
                Some(Violation::NotPosted)
            } else if d.length as usize > DATA_SIZE
                || (d.length == 0 && d.flags & DESC_FLAG_NEXT == 0)
            {
                Some(Violation::BadLength)
            } else {
                None
            };
            if let Some(v) = violation {
                bufs.free(bi);
                self.partial.discard(bufs);
                r.bad_descriptors += 1;
                self.link.violated(v);
                return;
            }
            if self.partial.skipping {
                bufs.free(bi);
                self.partial.skipping = d.flags & DESC_FLAG_NEXT != 0;
                continue;
            }
            segment_meta(bufs, bi, d.length);
            self.partial.take(bufs, bi, d.length, d.flags, out, r);
        }
        // Post fresh buffers in every slot the peer has given back.
        let mut fresh = [0u32; 64];
        loop {
            let room = size.wrapping_sub(self.link.head.wrapping_sub(self.link.next)) as usize;
            if room == 0 {
                break;
            }
            let n = bufs.alloc(&mut fresh[..room.min(64)]);
            if n == 0 {
                break;
            }
            for &bi in &fresh[..n] {
                ring.set_desc(
                    self.link.head,
                    Desc {
                        flags: 0,
                        region: POOL_REGION,
                        length: DATA_SIZE as u32,
                        offset: pool_offset(bi, HEADROOM),
                        metadata: 0,
                    },
                );
                self.link.slots.put(self.link.head, bi, 1);
                self.link.head = self.link.head.wrapping_add(1);
            }
        }
        ring.set_head(self.link.head);
    }

    /// Server: copy the client's packets, from `next` up to its head, into pool buffers.
    /// Each descriptor must lie inside one of the client's regions. Buffers are taken in one
    /// batch for the whole burst, and the client's descriptors and buffers are prefetched a
    /// few slots ahead (the client wrote them from another core).
    pub(super) fn rx_server(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32], r: &mut RxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = &*att.conn;
        let ring = &conn.c2s[self.link.index];
        let head = ring.head();
        let ready = head.wrapping_sub(self.link.next);
        if ready > ring.size() as u16 {
            r.bad_descriptors += 1;
            self.link.violated(Violation::HeadPastRing);
            return;
        }
        // Each descriptor gives at most one packet, so `n` descriptors fit `out`.
        let n = (ready as usize).min(out.len() - r.packets).min(RX_BATCH);
        if n == 0 {
            return;
        }
        let mut fresh = [NO_BUFFER; RX_BATCH];
        let got = bufs.alloc(&mut fresh[..n]);
        let mut used = 0;
        let first = self.link.next;
        for k in 0..PREFETCH_AHEAD.min(n) {
            prefetch_buffer(conn, ring.desc(first.wrapping_add(k as u16)));
        }
        for k in 0..n {
            let slot = first.wrapping_add(k as u16);
            if k + PREFETCH_AHEAD < n {
                let ahead = slot.wrapping_add(PREFETCH_AHEAD as u16);
                ring.prefetch_desc(ahead.wrapping_add(PREFETCH_AHEAD as u16));
                prefetch_buffer(conn, ring.desc(ahead));
            }
            let d = ring.desc(slot);
            self.link.next = slot.wrapping_add(1);
            let region = conn.regions.get(d.region as usize);
            let Some(reg) = region.filter(|reg| reg.contains(d.offset as usize, d.length as usize))
            else {
                self.partial.discard(bufs);
                r.bad_descriptors += 1;
                self.link.violated(Violation::BadDescriptor);
                // What was consumed is given back; the rest stays unread.
                ring.set_tail(self.link.next);
                bufs.free_all(&fresh[used..got]);
                return;
            };
            if self.partial.skipping {
                self.partial.skipping = d.flags & DESC_FLAG_NEXT != 0;
                continue;
            }
            if d.length as usize > DATA_SIZE {
                // A client with larger buffers than ours: not an error, but not ours to take.
                self.partial.drop_packet(bufs, d.flags);
                r.too_long += 1;
                continue;
            }
            let next = (used < got).then(|| fresh[used]);
            used += self.partial.copy_in((reg, &d), bufs, next, out, r) as usize;
        }
        ring.set_tail(self.link.next);
        bufs.free_all(&fresh[used..got]);
    }
}

/// Descriptors a server's receive burst takes at most (one graph frame).
const RX_BATCH: usize = crate::graph::frame::FRAME_SIZE;

impl RxQueue for MemifRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        let mut r = RxBurst::default();
        let partial = &mut self.partial;
        if !self.link.sync(bufs, |b| partial.discard(b)) {
            return r;
        }
        match (self.role, self.zero_copy) {
            (Role::Client, true) => self.rx_client(bufs, out, &mut r),
            (Role::Client, false) => self.rx_client_copy(bufs, out, &mut r),
            (Role::Server, _) => self.rx_server(bufs, out, &mut r),
        }
        self.link.copies.add(!self.zero_copy, r.packets);
        r
    }

    fn held_buffers(&self) -> usize {
        self.link.slots.held + self.partial.segments
    }
}

impl Drop for MemifRx {
    fn drop(&mut self) {
        // SAFETY: the slots are the buffers this queue put on its ring, held by no frame;
        // the queue is closing, so no handle uses them again.
        unsafe { self.pool.give_back(&self.link.slots.drain()) };
        self.partial.discard_to_pool(&self.pool);
    }
}
