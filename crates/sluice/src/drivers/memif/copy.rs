//! A client that lends nothing (the default): region 1 is a memfd of its own with one buffer
//! per ring slot, and frames are copied into it on transmit and out of it on receive. The
//! peer sees those buffers only, never the buffer pool, so it can neither read nor rewrite
//! another interface's packets, and nothing it writes is ever behind a Rust reference: every
//! byte goes through the region's checked raw copies. Slot `s` of a ring always names the same
//! buffer, so what the server hands back must be exactly the buffer of its slot.

use super::connection::POOL_REGION;
use super::rings::PREFETCH_AHEAD;
use super::rx::MemifRx;
use super::shm::{Desc, Region, DESC_FLAG_NEXT};
use super::tx::MemifTx;
use super::violation::Violation;
use crate::buffer::{WorkerBuffers, DATA_SIZE, NO_BUFFER, STRIDE};
use crate::drivers::{RxBurst, TxBurst};
use std::sync::Arc;

/// Bytes of one slot's buffer: a whole pool buffer, so any segment fits one descriptor.
pub const SLOT_BYTES: usize = STRIDE;

/// The client's own buffers: region 1, laid out ring after ring (C2S 0..q, then S2C 0..q).
pub struct OwnBuffers {
    pub region: Arc<Region>,
    pub queues: usize,
    pub log2: u8,
}

impl OwnBuffers {
    /// Bytes of the region for `queues` pairs of 2^log2-slot rings.
    pub fn bytes(queues: usize, log2: u8) -> u64 {
        2 * queues as u64 * (1u64 << log2) * SLOT_BYTES as u64
    }

    /// The descriptor offset of `slot`'s buffer in ring `index` of one direction. `open`
    /// keeps the region within 4 GiB, so it fits 32 bits.
    pub fn offset(&self, c2s: bool, index: usize, slot: u16) -> u32 {
        let ring = if c2s { index } else { self.queues + index };
        let slot = slot as usize & ((1 << self.log2) - 1);
        (((ring << self.log2) + slot) * SLOT_BYTES) as u32
    }
}

/// What the receive path does with one descriptor the server handed back.
fn check(own: &OwnBuffers, index: usize, slot: u16, d: &Desc) -> Option<Violation> {
    if d.region != POOL_REGION || d.offset != own.offset(false, index, slot) {
        Some(Violation::NotPosted)
    } else if d.length as usize > DATA_SIZE || (d.length == 0 && d.flags & DESC_FLAG_NEXT == 0) {
        Some(Violation::BadLength)
    } else {
        None
    }
}

/// Descriptors one receive burst copies at most (one graph frame).
const RX_BATCH: usize = crate::graph::frame::FRAME_SIZE;

impl MemifRx {
    /// Client, copying: copy what the server filled, from `next` up to its tail, into pool
    /// buffers, then post every slot it gave back again.
    pub(super) fn rx_client_copy(
        &mut self,
        bufs: &mut WorkerBuffers,
        out: &mut [u32],
        r: &mut RxBurst,
    ) {
        let Some(att) = &self.link.att else { return };
        let conn = &*att.conn;
        let Some(own) = &conn.own_buffers else { return };
        let index = self.link.index;
        let ring = &conn.s2c[index];
        let tail = ring.tail();
        let filled = tail.wrapping_sub(self.link.next);
        if filled > self.link.head.wrapping_sub(self.link.next) {
            r.bad_descriptors += 1;
            self.link.violated(Violation::TailPastHead);
            return;
        }
        let n = (filled as usize).min(out.len() - r.packets).min(RX_BATCH);
        let mut fresh = [NO_BUFFER; RX_BATCH];
        let got = bufs.alloc(&mut fresh[..n]);
        let mut used = 0;
        let first = self.link.next;
        for k in 0..PREFETCH_AHEAD.min(n) {
            own.region
                .prefetch(own.offset(false, index, first.wrapping_add(k as u16)) as usize);
        }
        for k in 0..n {
            let slot = first.wrapping_add(k as u16);
            if k + PREFETCH_AHEAD < n {
                let ahead = slot.wrapping_add(PREFETCH_AHEAD as u16);
                own.region
                    .prefetch(own.offset(false, index, ahead) as usize);
            }
            let d = ring.desc(slot);
            self.link.next = slot.wrapping_add(1);
            if let Some(v) = check(own, index, slot, &d) {
                self.partial.discard(bufs);
                r.bad_descriptors += 1;
                self.link.violated(v);
                bufs.free_all(&fresh[used..got]);
                return;
            }
            if self.partial.skipping {
                self.partial.skipping = d.flags & DESC_FLAG_NEXT != 0;
                continue;
            }
            let next = (used < got).then(|| fresh[used]);
            used += self.partial.copy_in((&own.region, &d), bufs, next, out, r) as usize;
        }
        bufs.free_all(&fresh[used..got]);
        // Post again every slot the server gave back: the buffers are ours, always there.
        let size = ring.size() as u16;
        while self.link.head.wrapping_sub(self.link.next) < size {
            let slot = self.link.head;
            ring.set_desc(
                slot,
                Desc {
                    flags: 0,
                    region: POOL_REGION,
                    length: DATA_SIZE as u32,
                    offset: own.offset(false, index, slot),
                    metadata: 0,
                },
            );
            self.link.head = slot.wrapping_add(1);
        }
        ring.set_head(self.link.head);
    }
}

impl MemifTx {
    /// Client, copying: copy each packet, a segment a slot, into the buffers of the next free
    /// slots; the pool buffers are freed at once.
    pub(super) fn tx_client_copy(
        &mut self,
        bufs: &mut WorkerBuffers,
        pkts: &[u32],
        r: &mut TxBurst,
    ) {
        let Some(att) = &self.link.att else { return };
        let conn = &*att.conn;
        let Some(own) = &conn.own_buffers else { return };
        let index = self.link.index;
        let ring = &conn.c2s[index];
        let size = ring.size() as u16;
        let tail = ring.tail();
        if tail.wrapping_sub(self.link.next) > self.link.head.wrapping_sub(self.link.next) {
            return self.give_up(bufs, pkts, r, Violation::TailPastHead);
        }
        self.link.next = tail;
        for &bi in pkts {
            if let Some((len, _)) = self.admit(bufs, bi, size, r) {
                let mut seg = bi;
                while seg != NO_BUFFER {
                    let data = bufs.data(seg);
                    let next = bufs.meta(seg).next;
                    let offset = own.offset(true, index, self.link.head);
                    own.region.write(offset as usize, data);
                    ring.set_desc(
                        self.link.head,
                        Desc {
                            flags: if next == NO_BUFFER { 0 } else { DESC_FLAG_NEXT },
                            region: POOL_REGION,
                            length: data.len() as u32,
                            offset,
                            metadata: 0,
                        },
                    );
                    self.link.head = self.link.head.wrapping_add(1);
                    seg = next;
                }
                r.sent += 1;
                r.bytes += len as u64;
            }
            bufs.free(bi);
        }
        ring.set_head(self.link.head);
        if r.sent > 0 {
            conn.interrupt(true, index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_have_buffers_of_their_own() {
        let fd = super::super::shm::memfd("t", 4096).unwrap();
        let own = OwnBuffers {
            region: Arc::new(Region::map(fd, 4096, true).unwrap()),
            queues: 2,
            log2: 4,
        };
        assert_eq!(own.offset(true, 0, 0), 0);
        assert_eq!(
            own.offset(true, 0, 17),
            SLOT_BYTES as u32,
            "slot 17 of 16 is slot 1"
        );
        assert_eq!(own.offset(true, 1, 0), 16 * SLOT_BYTES as u32);
        assert_eq!(own.offset(false, 0, 0), 32 * SLOT_BYTES as u32);
        assert_eq!(own.offset(false, 1, 15), 63 * SLOT_BYTES as u32);
        assert_eq!(OwnBuffers::bytes(2, 4), 64 * SLOT_BYTES as u64);
    }
}
