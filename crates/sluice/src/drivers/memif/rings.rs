//! A queue's hold on the published connection: its ring, the pool buffers it posted there
//! (a client's slots) and its head and tail positions.

use super::connection::{Connection, Role};
use super::shm::Desc;
use super::violation::Violation;
use super::Shared;
use crate::buffer::{WorkerBuffers, NO_BUFFER, STRIDE};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The rings a queue works on, while a connection lasts.
pub(super) struct Attached {
    pub(super) conn: Arc<Connection>,
}

/// A queue's hold on the published connection: ring `index` of one direction, the pool
/// buffers it put in that ring, and its head and tail positions. A queue calls `sync` at
/// every burst; when the shared generation moved it compares the published connection with
/// its own by pointer.
pub(super) struct RingLink {
    pub(super) shared: Arc<Shared>,
    pub(super) index: usize,
    /// Which direction this queue's ring carries: client to server, or back.
    pub(super) c2s: bool,
    pub(super) att: Option<Attached>,
    pub(super) slots: Slots,
    pub(super) head: u16,
    pub(super) next: u16,
    /// The shared generation `att` was taken at (`u64::MAX`: never synced).
    seen: u64,
    /// Frames this queue moved, copied or not (`show hardware`).
    pub(super) copies: Arc<CopyCounts>,
}

impl RingLink {
    pub(super) fn new(shared: Arc<Shared>, index: usize, c2s: bool) -> RingLink {
        let copies = Arc::new(CopyCounts::default());
        if let Ok(mut all) = shared.copy_counts.lock() {
            all.push(copies.clone());
        }
        RingLink {
            copies,
            shared,
            index,
            c2s,
            att: None,
            slots: Slots::new(1),
            head: 0,
            next: 0,
            seen: u64::MAX,
        }
    }

    /// Follow the published connection: when it changed, give back what the old rings held
    /// (and call `on_change`), then take up the new ring. False while there is none.
    pub(super) fn sync(
        &mut self,
        bufs: &mut WorkerBuffers,
        on_change: impl FnOnce(&mut WorkerBuffers),
    ) -> bool {
        // Nothing changed since the last look: the common case, one load.
        let generation = self.shared.generation.load(Ordering::Acquire);
        if generation == self.seen {
            return self.att.is_some();
        }
        self.seen = generation;
        let loaded = self.shared.conn.load();
        // A connection with a violation is as good as gone: let go of its rings now, before
        // the control thread has hung up.
        let cur = loaded.as_ref().filter(|c| c.verdict.get().is_none());
        match (cur, &self.att) {
            (Some(c), Some(a)) if Arc::ptr_eq(c, &a.conn) => return true,
            (None, None) => return false,
            _ => {}
        }
        let held = self.slots.drain();
        bufs.free_all(&held);
        on_change(bufs);
        self.att = None;
        let Some(conn) = cur.cloned() else {
            return false;
        };
        let rings = if self.c2s { &conn.c2s } else { &conn.s2c };
        let Some(ring) = rings.get(self.index) else {
            return false;
        };
        self.slots = Slots::new(ring.size() as usize);
        // A client starts its fresh rings at 0 (whatever the peer has written there since); a
        // server takes the client's rings where they are and reads from the tail on.
        (self.head, self.next) = match self.shared.role {
            Role::Client => (0, 0),
            Role::Server => (ring.head(), ring.tail()),
        };
        self.att = Some(Attached { conn });
        true
    }

    /// The peer broke the protocol on this ring: count it and mark the connection, so that
    /// every queue (this one at its next burst) lets go of it and the peer is disconnected.
    pub(super) fn violated(&self, v: Violation) {
        if let Some(a) = &self.att {
            self.shared.count_violation(&a.conn, v);
        }
    }
}

/// Frames one queue moved, by whether their bytes were copied (a server copies in and out of
/// the client's buffers; a client's peer reads and writes our pool). Only the queue's own
/// thread writes them: a load and a store per burst, no locked instruction.
#[derive(Default)]
pub(super) struct CopyCounts {
    pub(super) copied: AtomicU64,
    pub(super) zero_copy: AtomicU64,
}

impl CopyCounts {
    pub(super) fn add(&self, copied: bool, frames: usize) {
        let c = if copied {
            &self.copied
        } else {
            &self.zero_copy
        };
        c.store(c.load(Ordering::Relaxed) + frames as u64, Ordering::Relaxed);
    }
}

/// Per-slot owners of a client's rings: the pool buffer each descriptor points at, and how
/// many buffers hang off it (a chained packet is owned by its last slot). The size is the
/// ring's, a power of two, so a slot number is masked (a division per packet costs more).
pub(super) struct Slots {
    pub(super) bufs: Vec<u32>,
    pub(super) segs: Vec<u16>,
    pub(super) held: usize,
}

impl Slots {
    pub(super) fn new(size: usize) -> Slots {
        debug_assert!(size.is_power_of_two());
        Slots {
            bufs: vec![NO_BUFFER; size],
            segs: vec![0; size],
            held: 0,
        }
    }

    pub(super) fn put(&mut self, slot: u16, bi: u32, segments: usize) {
        let i = slot as usize & (self.bufs.len() - 1);
        self.bufs[i] = bi;
        self.segs[i] = segments as u16;
        self.held += segments;
    }

    /// The buffer in `slot`, left there.
    pub(super) fn peek(&self, slot: u16) -> u32 {
        self.bufs[slot as usize & (self.bufs.len() - 1)]
    }

    pub(super) fn take(&mut self, slot: u16) -> u32 {
        let i = slot as usize & (self.bufs.len() - 1);
        let bi = std::mem::replace(&mut self.bufs[i], NO_BUFFER);
        self.held -= std::mem::take(&mut self.segs[i]) as usize;
        bi
    }

    pub(super) fn drain(&mut self) -> Vec<u32> {
        self.held = 0;
        self.segs.iter_mut().for_each(|s| *s = 0);
        self.bufs
            .iter_mut()
            .map(|b| std::mem::replace(b, NO_BUFFER))
            .filter(|&b| b != NO_BUFFER)
            .collect()
    }
}

/// Where a pool buffer's bytes start in region 1, as a descriptor offset. `open` refuses a
/// client pool larger than 4 GiB, so every offset fits the descriptor's 32 bits.
pub(super) fn pool_offset(bi: u32, within: usize) -> u32 {
    let at = bi as u64 * STRIDE as u64 + within as u64;
    debug_assert!(at <= u32::MAX as u64);
    at as u32
}

/// How many slots ahead a server prefetches the client's buffers (descriptors twice as far):
/// the client last wrote them from another core, and the load takes longer than a packet.
pub(super) const PREFETCH_AHEAD: usize = 4;

/// Start loading the client's buffer that descriptor `d` names (if it names one at all).
pub(super) fn prefetch_buffer(conn: &Connection, d: Desc) {
    if let Some(reg) = conn.regions.get(d.region as usize) {
        reg.prefetch(d.offset as usize);
    }
}
