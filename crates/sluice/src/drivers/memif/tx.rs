//! The transmit queues: a client posts its buffers as they are; a server copies packets into
//! the buffers the client posted.

use super::connection::{Connection, Role, POOL_REGION};
use super::rings::{pool_offset, prefetch_buffer, RingLink, PREFETCH_AHEAD};
use super::shm::{Desc, DESC_FLAG_NEXT};
use super::violation::Violation;
use super::MAX_SEGMENTS;
use crate::buffer::{BufferPool, WorkerBuffers, NO_BUFFER};
use crate::drivers::{TxBurst, TxQueue};
use std::sync::Arc;

/// One transmit queue: ring `index` of the us-to-peer direction.
pub(super) struct MemifTx {
    pub(super) pool: Arc<BufferPool>,
    pub(super) role: Role,
    /// Client: our buffer pool is region 1 (else a region of our own, copied into).
    pub(super) zero_copy: bool,
    /// Client, zero-copy: `slots` are the packets (first buffers, on their last slot) not yet consumed.
    pub(super) link: RingLink,
    pub(super) max_frame: usize,
}

/// Why a packet could not be copied into the client's buffers.
pub(super) enum CopyFail {
    /// Not enough posted buffers: the client is slow.
    NoRoom,
    /// A posted descriptor outside the client's regions, or with no room at all.
    Bad,
}

impl MemifTx {
    /// The peer broke the protocol: drop the whole burst as errors and let go of the ring.
    pub(super) fn give_up(
        &self,
        bufs: &mut WorkerBuffers,
        pkts: &[u32],
        r: &mut TxBurst,
        v: Violation,
    ) {
        self.link.violated(v);
        bufs.free_all(pkts);
        r.errors += pkts.len();
    }

    /// Whether packet `bi` can go on a ring of `size` slots now: its length and the buffers
    /// it spans (`Some((len, segs))`), or `None` with the reason counted (longer than the
    /// interface's frames, or more segments than free slots).
    pub(super) fn admit(
        &self,
        bufs: &WorkerBuffers,
        bi: u32,
        size: u16,
        r: &mut TxBurst,
    ) -> Option<(usize, usize)> {
        let len = bufs.packet_len(bi);
        let segs = bufs.segment_count(bi);
        let room = size.wrapping_sub(self.link.head.wrapping_sub(self.link.next)) as usize;
        if len > self.max_frame {
            r.too_long += 1;
            None
        } else if segs > room {
            r.queue_full += 1;
            None
        } else {
            Some((len, segs))
        }
    }

    /// Client: put the packets' own buffers on the ring.
    pub(super) fn tx_client(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32], r: &mut TxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = &*att.conn;
        let ring = &conn.c2s[self.link.index];
        let size = ring.size() as u16;
        // Free what the server has consumed: never beyond what we posted.
        let tail = ring.tail();
        if tail.wrapping_sub(self.link.next) > self.link.head.wrapping_sub(self.link.next) {
            return self.give_up(bufs, pkts, r, Violation::TailPastHead);
        }
        while self.link.next != tail {
            let bi = self.link.slots.take(self.link.next);
            if bi != NO_BUFFER {
                bufs.free(bi);
            }
            self.link.next = self.link.next.wrapping_add(1);
        }
        for &bi in pkts {
            let Some((len, segs)) = self.admit(bufs, bi, size, r) else {
                bufs.free(bi);
                continue;
            };
            let mut seg = bi;
            while seg != NO_BUFFER {
                let m = *bufs.meta(seg);
                let last = m.next == NO_BUFFER;
                ring.set_desc(
                    self.link.head,
                    Desc {
                        flags: if last { 0 } else { DESC_FLAG_NEXT },
                        region: POOL_REGION,
                        length: m.len as u32,
                        offset: pool_offset(seg, m.offset as usize),
                        metadata: 0,
                    },
                );
                if last {
                    // Freed (the whole chain) when the server has consumed this slot.
                    self.link.slots.put(self.link.head, bi, segs);
                }
                self.link.head = self.link.head.wrapping_add(1);
                seg = m.next;
            }
            r.sent += 1;
            r.bytes += len as u64;
        }
        ring.set_head(self.link.head);
        if r.sent > 0 {
            conn.interrupt(true, self.link.index);
        }
    }

    /// Server: copy the packets into the buffers the client posted.
    pub(super) fn tx_server(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32], r: &mut TxBurst) {
        let Some(att) = &self.link.att else {
            return;
        };
        let conn = &*att.conn;
        let ring = &conn.s2c[self.link.index];
        let mut posted = ring.head().wrapping_sub(self.link.next);
        if posted > ring.size() as u16 {
            return self.give_up(bufs, pkts, r, Violation::HeadPastRing);
        }
        let first = self.link.next;
        for k in 0..PREFETCH_AHEAD.min(posted as usize) {
            prefetch_buffer(conn, ring.desc(first.wrapping_add(k as u16)));
        }
        for (k, &bi) in pkts.iter().enumerate() {
            let len = bufs.packet_len(bi);
            if len > self.max_frame {
                r.too_long += 1;
                bufs.free(bi);
                continue;
            }
            if posted as usize > PREFETCH_AHEAD {
                let ahead = self.link.next.wrapping_add(PREFETCH_AHEAD as u16);
                ring.prefetch_desc(ahead.wrapping_add(PREFETCH_AHEAD as u16));
                prefetch_buffer(conn, ring.desc(ahead));
            }
            let done = match self.copy_one(bufs, conn, bi, posted) {
                true => Ok(1),
                false => self.copy_out(bufs, conn, bi, posted),
            };
            match done {
                Ok(used) => {
                    self.link.next = self.link.next.wrapping_add(used);
                    posted -= used;
                    r.sent += 1;
                    r.bytes += len as u64;
                }
                // Nothing of the packet is published.
                Err(CopyFail::NoRoom) => r.peer_full += 1,
                Err(CopyFail::Bad) => {
                    ring.set_tail(self.link.next);
                    return self.give_up(bufs, &pkts[k..], r, Violation::BadDescriptor);
                }
            }
            bufs.free(bi);
        }
        if self.link.next != first {
            ring.set_tail(self.link.next);
        }
        if r.sent > 0 {
            conn.interrupt(false, self.link.index);
        }
    }

    /// The common case: a one-buffer packet that fits the client's buffer in slot `next`.
    /// False (nothing written) for anything else; `copy_out` then handles it, errors too.
    pub(super) fn copy_one(
        &self,
        bufs: &WorkerBuffers,
        conn: &Connection,
        bi: u32,
        posted: u16,
    ) -> bool {
        let data = bufs.data(bi);
        if posted == 0 || data.is_empty() || bufs.meta(bi).next != NO_BUFFER {
            return false;
        }
        let ring = &conn.s2c[self.link.index];
        let d = ring.desc(self.link.next);
        let fits = (d.length as usize) >= data.len()
            && conn.regions.get(d.region as usize).is_some_and(|reg| {
                reg.contains(d.offset as usize, d.length as usize)
                    && reg.write(d.offset as usize, data)
            });
        if fits {
            ring.set_length(self.link.next, data.len() as u32, 0);
        }
        fits
    }

    /// Copy packet `bi` into the client's buffers from slot `next` on, using at most `posted`
    /// slots. The descriptors' lengths and flags are written only once the whole packet fits
    /// (a failed packet leaves the slots as the client posted them). Returns slots used.
    pub(super) fn copy_out(
        &self,
        bufs: &WorkerBuffers,
        conn: &Connection,
        bi: u32,
        posted: u16,
    ) -> Result<u16, CopyFail> {
        let ring = &conn.s2c[self.link.index];
        let mut fills = [0u32; MAX_SEGMENTS];
        let mut used = 0usize;
        let mut cur: Option<Desc> = None;
        let mut seg = bi;
        while seg != NO_BUFFER {
            let data = bufs.data(seg);
            let mut off = 0;
            while off < data.len() {
                let d = match cur {
                    Some(d) if (fills[used - 1] as usize) < d.length as usize => d,
                    _ => {
                        if used >= posted as usize || used >= MAX_SEGMENTS {
                            return Err(CopyFail::NoRoom);
                        }
                        let d = ring.desc(self.link.next.wrapping_add(used as u16));
                        let inside = conn
                            .regions
                            .get(d.region as usize)
                            .is_some_and(|reg| reg.contains(d.offset as usize, d.length as usize));
                        if d.length == 0 || !inside {
                            return Err(CopyFail::Bad);
                        }
                        used += 1;
                        cur = Some(d);
                        d
                    }
                };
                let fill = fills[used - 1] as usize;
                let n = (data.len() - off).min(d.length as usize - fill);
                let region = conn.regions.get(d.region as usize).ok_or(CopyFail::Bad)?;
                if !region.write(d.offset as usize + fill, &data[off..off + n]) {
                    return Err(CopyFail::Bad);
                }
                off += n;
                fills[used - 1] += n as u32;
            }
            seg = bufs.meta(seg).next;
        }
        if used == 0 {
            return Err(CopyFail::NoRoom);
        }
        for (k, &fill) in fills[..used].iter().enumerate() {
            let flags = if k + 1 < used { DESC_FLAG_NEXT } else { 0 };
            ring.set_length(self.link.next.wrapping_add(k as u16), fill, flags);
        }
        Ok(used as u16)
    }
}

impl TxQueue for MemifTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        let mut r = TxBurst::default();
        if !self.link.sync(bufs, |_| {}) {
            // No peer, or no ring for this thread: nothing can be sent.
            bufs.free_all(pkts);
            r.errors = pkts.len();
            return r;
        }
        match (self.role, self.zero_copy) {
            (Role::Client, true) => self.tx_client(bufs, pkts, &mut r),
            (Role::Client, false) => self.tx_client_copy(bufs, pkts, &mut r),
            (Role::Server, _) => self.tx_server(bufs, pkts, &mut r),
        }
        self.link.copies.add(!self.zero_copy, r.sent);
        r
    }

    fn held_buffers(&self) -> usize {
        self.link.slots.held
    }
}

impl Drop for MemifTx {
    fn drop(&mut self) {
        // SAFETY: the slots hold the packets this queue sent and the peer has not released,
        // held by no frame; the queue is closing, so no handle uses them again.
        unsafe { self.pool.give_back_chains(&self.link.slots.drain()) };
    }
}
