//! The memif driver: shared-memory packet interfaces, as VPP and DPDK (`net_memif`) speak them.
//!
//! A control thread per interface runs the protocol (listening as server, or connecting and
//! retrying once a second as client), and publishes each established connection to the
//! queues with an atomic swap. A worker compares the published connection with its own at
//! every burst; when they differ it gives back what it held in the old rings and takes up the
//! new ones. No lock is taken per packet, and the old shared memory is unmapped only when the
//! last queue has let go of it.
//!
//! Who copies: as **client**, the regions are ours, and region 1 *is* the buffer pool, so
//! descriptors point at pool buffers: the peer writes received frames straight into the
//! buffers the graph then uses, and transmitted buffers go out as they are — no copy on our
//! side in either direction. As **server**, the memory is the client's (its buffers are not
//! in our pool), so frames are copied out of the client's buffers on receive and into them
//! on transmit. Every offset and length the peer gives is checked against its region first.
//!
//! A peer is not trusted with anything it writes: ring indices must stay within what was
//! posted, descriptors within its regions (and, handed back to a client, be the very buffer
//! posted in that slot), regions must be memfds sealed against shrinking, interrupt
//! descriptors non-blocking eventfds, messages in protocol order. Each breach is a named
//! [`violation`] counted on the interface (`show hardware`); the queue that saw it lets go
//! of the rings at once (every pool buffer they held comes back), and the control thread
//! disconnects the peer with the violation as the reason.
//!
//! A client shares the whole buffer pool with its peer: use the server role towards a peer
//! that is not trusted with that memory.

pub mod connection;
pub mod proto;
pub mod shm;
pub mod socket;
pub mod violation;

use super::{DriverPorts, LiveStatus, RxBurst, RxQueue, TxBurst, TxQueue};
use crate::buffer::{BufferPool, WorkerBuffers, DATA_SIZE, HEADROOM, NO_BUFFER, STRIDE};
use arc_swap::ArcSwapOption;
use connection::{Connection, Role, Settings, POOL_REGION};
use shm::{Desc, DESC_FLAG_NEXT};
use socket::Channel;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use violation::Violation;

/// A memif interface as configured.
#[derive(Clone, Debug)]
pub struct MemifConfig {
    /// Our interface name (in the protocol's messages too).
    pub name: String,
    pub socket: PathBuf,
    pub role: Role,
    pub id: u32,
    pub secret: Option<String>,
    /// Descriptors per ring (power of two).
    pub ring_size: u32,
    pub workers: usize,
}

pub const DEFAULT_RING_SIZE: u32 = 1024;
/// Segments of one packet we accept from a peer (9000-byte frames in 2048-byte buffers: 5).
const MAX_SEGMENTS: usize = 8;

/// What the control thread shares with the queues and `show interface`.
pub struct Shared {
    /// The current connection; queues compare it with the one they work on at every burst.
    conn: ArcSwapOption<Connection>,
    connected: AtomicBool,
    stop: AtomicBool,
    peer: Mutex<String>,
    connects: AtomicU64,
    last_error: Mutex<String>,
    role: Role,
    socket: PathBuf,
    queues: AtomicU64,
    ring_size: u32,
    /// What peers did wrong, by kind; each one cost that peer its connection.
    violations: violation::Counters,
}

impl LiveStatus for Shared {
    fn link_up(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    fn details(&self) -> Vec<(String, String)> {
        let up = self.link_up();
        let mut d = vec![(
            "peer".to_string(),
            if up {
                format!(
                    "{} ({} queue pairs)",
                    self.peer.lock().map(|p| p.clone()).unwrap_or_default(),
                    self.queues.load(Ordering::Relaxed)
                )
            } else {
                "none: disconnected".to_string()
            },
        )];
        d.push((
            "connects".to_string(),
            self.connects.load(Ordering::Relaxed).to_string(),
        ));
        let err = self
            .last_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default();
        if !err.is_empty() {
            d.push(("last-error".to_string(), err));
        }
        for (v, n) in self.violations.nonzero() {
            d.push((format!("violation: {v}"), n.to_string()));
        }
        d
    }
}

impl Shared {
    fn publish(&self, c: Option<Arc<Connection>>) {
        let up = c.is_some();
        if let Some(c) = &c {
            if let Ok(mut p) = self.peer.lock() {
                p.clone_from(&c.peer_name);
            }
            self.queues
                .store(c.c2s.len().min(c.s2c.len()) as u64, Ordering::Relaxed);
            self.connects.fetch_add(1, Ordering::Relaxed);
        }
        self.conn.store(c);
        self.connected.store(up, Ordering::Relaxed);
    }

    /// Count `v` if it is the first violation on `conn` (later ones follow from it), and
    /// mark the connection so every queue lets go of its rings.
    fn count_violation(&self, conn: &Connection, v: Violation) {
        if conn.verdict.set(v) {
            self.violations.add(v);
        }
    }

    fn note_error(&self, name: &str, e: &str) {
        eprintln!("sluice: memif {name}: {e}");
        if let Ok(mut l) = self.last_error.lock() {
            e.clone_into(&mut l);
        }
    }
}

/// The control thread; stopping it (drop) disconnects the peer and removes our socket file.
struct ControlThread {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for ControlThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.shared.publish(None);
        if self.shared.role == Role::Server {
            let _ = std::fs::remove_file(&self.shared.socket);
        }
    }
}

/// Hang up on a peer that broke the protocol, saying why.
fn disconnect(ch: &Channel, shared: &Shared, name: &str, reason: String) {
    let _ = ch.send(
        &proto::Msg::Disconnect {
            code: 1,
            reason: reason.clone(),
        },
        None,
    );
    shared.note_error(name, &reason);
}

/// Wait for the peer to go away, break the protocol (a queue found a violation in the
/// rings, or a message came) or us to stop, refusing anybody else who connects.
fn watch(ch: &Channel, listener: Option<&Channel>, shared: &Shared, name: &str, conn: &Connection) {
    loop {
        if let Some(v) = conn.verdict.get() {
            // Counted by the queue that saw it.
            disconnect(
                ch,
                shared,
                name,
                format!("protocol violation: {}", v.name()),
            );
            return;
        }
        if shared.stop.load(Ordering::Relaxed) {
            let _ = ch.send(
                &proto::Msg::Disconnect {
                    code: 0,
                    reason: "sluice is stopping".into(),
                },
                None,
            );
            return;
        }
        if let Some(l) = listener {
            if l.wait(0) {
                if let Ok(other) = l.accept() {
                    let _ = other.send(
                        &proto::Msg::Disconnect {
                            code: 1,
                            reason: "interface already connected".into(),
                        },
                        None,
                    );
                }
            }
        }
        if !ch.wait(100) {
            continue;
        }
        match ch.recv() {
            Ok((proto::Msg::Disconnect { reason, .. }, _)) => {
                shared.note_error(name, &format!("peer disconnected: {reason}"));
                return;
            }
            Ok((m, _)) => {
                let v = Violation::OutOfOrder;
                shared.count_violation(conn, v);
                let e = format!("{}: unexpected {} after connecting", v.name(), m.kind());
                disconnect(ch, shared, name, e);
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                let v = Channel::proto_error(&e).map_or(Violation::BadMessage, |p| p.violation());
                shared.count_violation(conn, v);
                disconnect(ch, shared, name, format!("{}: {e}", v.name()));
                return;
            }
            Err(e) => {
                shared.note_error(name, &format!("peer lost: {e}"));
                return;
            }
        }
    }
}

fn sleep_unless_stopped(shared: &Shared, d: Duration) {
    let step = Duration::from_millis(50);
    let mut left = d;
    while !left.is_zero() && !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(step.min(left));
        left = left.saturating_sub(step);
    }
}

fn control_loop(
    shared: Arc<Shared>,
    listener: Option<Channel>,
    cfg: MemifConfig,
    settings: Settings,
) {
    let name = cfg.name.as_str();
    while !shared.stop.load(Ordering::Relaxed) {
        let ch = match &listener {
            Some(l) => {
                if !l.wait(100) {
                    continue;
                }
                match l.accept() {
                    Ok(c) => c,
                    Err(e) => {
                        shared.note_error(name, &format!("accept: {e}"));
                        continue;
                    }
                }
            }
            None => match Channel::connect(&cfg.socket) {
                Ok(c) => c,
                Err(_) => {
                    // Nobody listens yet: try again in a second.
                    sleep_unless_stopped(&shared, Duration::from_secs(1));
                    continue;
                }
            },
        };
        let setup = match cfg.role {
            Role::Server => connection::serve(&ch, &settings),
            Role::Client => connection::connect(&ch, &settings),
        };
        match setup {
            Ok(conn) => {
                eprintln!(
                    "sluice: memif {name}: connected to {} ({} queue pairs)",
                    conn.peer_name,
                    conn.c2s.len().min(conn.s2c.len())
                );
                let conn = Arc::new(conn);
                shared.publish(Some(conn.clone()));
                watch(&ch, listener.as_ref(), &shared, name, &conn);
                shared.publish(None);
                eprintln!("sluice: memif {name}: disconnected");
            }
            Err(f) => {
                if let Some(v) = f.violation {
                    shared.violations.add(v);
                }
                shared.note_error(name, &format!("connection refused: {}", f.reason));
                if cfg.role == Role::Client {
                    sleep_unless_stopped(&shared, Duration::from_secs(1));
                }
            }
        }
    }
}

/// The rings a queue works on, while a connection lasts.
struct Attached {
    conn: Arc<Connection>,
}

/// A queue's hold on the published connection: ring `index` of one direction, the pool
/// buffers it put in that ring, and its head and tail positions. A queue calls `sync` at
/// every burst; it compares the published connection with its own by pointer.
struct RingLink {
    shared: Arc<Shared>,
    index: usize,
    /// Which direction this queue's ring carries: client to server, or back.
    c2s: bool,
    att: Option<Attached>,
    slots: Slots,
    head: u16,
    next: u16,
}

impl RingLink {
    fn new(shared: Arc<Shared>, index: usize, c2s: bool) -> RingLink {
        RingLink {
            shared,
            index,
            c2s,
            att: None,
            slots: Slots::new(1),
            head: 0,
            next: 0,
        }
    }

    /// Follow the published connection: when it changed, give back what the old rings held
    /// (and call `on_change`), then take up the new ring. False while there is none.
    fn sync(
        &mut self,
        bufs: &mut WorkerBuffers,
        on_change: impl FnOnce(&mut WorkerBuffers),
    ) -> bool {
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
    fn violated(&self, v: Violation) {
        if let Some(a) = &self.att {
            self.shared.count_violation(&a.conn, v);
        }
    }
}

/// Per-slot owners of a client's rings: the pool buffer each descriptor points at, and how
/// many buffers hang off it (a chained packet is owned by its last slot).
struct Slots {
    bufs: Vec<u32>,
    segs: Vec<u16>,
    held: usize,
}

impl Slots {
    fn new(size: usize) -> Slots {
        Slots {
            bufs: vec![NO_BUFFER; size],
            segs: vec![0; size],
            held: 0,
        }
    }

    fn put(&mut self, slot: u16, bi: u32, segments: usize) {
        let i = slot as usize % self.bufs.len();
        self.bufs[i] = bi;
        self.segs[i] = segments as u16;
        self.held += segments;
    }

    fn take(&mut self, slot: u16) -> u32 {
        let i = slot as usize % self.bufs.len();
        let bi = std::mem::replace(&mut self.bufs[i], NO_BUFFER);
        self.held -= std::mem::take(&mut self.segs[i]) as usize;
        bi
    }

    fn drain(&mut self) -> Vec<u32> {
        self.held = 0;
        self.segs.iter_mut().for_each(|s| *s = 0);
        self.bufs
            .iter_mut()
            .map(|b| std::mem::replace(b, NO_BUFFER))
            .filter(|&b| b != NO_BUFFER)
            .collect()
    }
}

/// A packet being put together from several descriptors.
#[derive(Default)]
struct Partial {
    head: Option<u32>,
    last: u32,
    total: u32,
    segments: usize,
    /// The rest of a chain whose earlier segment was dropped: consumed, not delivered (else
    /// its tail would arrive as a packet of its own).
    skipping: bool,
}

impl Partial {
    fn add(&mut self, bufs: &mut WorkerBuffers, bi: u32, len: u32) {
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
    fn take(
        &mut self,
        bufs: &mut WorkerBuffers,
        bi: u32,
        length: u32,
        flags: u16,
        out: &mut [u32],
        r: &mut RxBurst,
    ) {
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

    /// The finished packet's first buffer.
    fn finish(&mut self, bufs: &mut WorkerBuffers) -> Option<u32> {
        let head = self.head.take()?;
        bufs.meta_mut(head).total_len = self.total;
        bufs.meta_mut(self.last).next = NO_BUFFER;
        self.total = 0;
        self.segments = 0;
        Some(head)
    }

    fn discard(&mut self, bufs: &mut WorkerBuffers) {
        self.skipping = false;
        if let Some(head) = self.finish(bufs) {
            bufs.free(head);
        }
    }

    /// Drop the packet whose segment had descriptor flags `flags`, and skip the segments
    /// still to come when there are more.
    fn drop_packet(&mut self, bufs: &mut WorkerBuffers, flags: u16) {
        self.discard(bufs);
        self.skipping = flags & DESC_FLAG_NEXT != 0;
    }

    fn discard_to_pool(&mut self, pool: &BufferPool) {
        if let Some(head) = self.head.take() {
            pool.give_back_chains(&[head]);
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

/// Where a pool buffer's bytes start in region 1, as a descriptor offset. `open` refuses a
/// client pool larger than 4 GiB, so every offset fits the descriptor's 32 bits.
fn pool_offset(bi: u32, within: usize) -> u32 {
    let at = bi as u64 * STRIDE as u64 + within as u64;
    debug_assert!(at <= u32::MAX as u64);
    at as u32
}

/// One receive queue: ring `index` of the connection's server-to-us direction.
struct MemifRx {
    pool: Arc<BufferPool>,
    role: Role,
    /// Client: `slots` are the buffers posted in the S2C ring.
    link: RingLink,
    partial: Partial,
}

impl MemifRx {
    /// Client: the server filled buffers we posted, from `next` up to its tail; they join
    /// the graph as they are. Each descriptor must be the buffer we posted in its slot.
    fn rx_client(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32], r: &mut RxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = att.conn.clone();
        let ring = &conn.s2c[self.link.index];
        let size = ring.size() as u16;
        let tail = ring.tail();
        if tail.wrapping_sub(self.link.next) > self.link.head.wrapping_sub(self.link.next) {
            // Beyond what we posted (or backwards): slots that are not ours to read.
            r.bad_descriptors += 1;
            self.link.violated(Violation::TailPastHead);
            return;
        }
        while self.link.next != tail && r.packets < out.len() {
            let slot = self.link.next;
            self.link.next = self.link.next.wrapping_add(1);
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
    /// Each descriptor must lie inside one of the client's regions.
    fn rx_server(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32], r: &mut RxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = att.conn.clone();
        let ring = &conn.c2s[self.link.index];
        let head = ring.head();
        if head.wrapping_sub(self.link.next) > ring.size() as u16 {
            r.bad_descriptors += 1;
            self.link.violated(Violation::HeadPastRing);
            return;
        }
        while self.link.next != head && r.packets < out.len() {
            let d = ring.desc(self.link.next);
            self.link.next = self.link.next.wrapping_add(1);
            let region = conn.regions.get(d.region as usize);
            let Some(reg) = region.filter(|reg| reg.contains(d.offset as usize, d.length as usize))
            else {
                self.partial.discard(bufs);
                r.bad_descriptors += 1;
                self.link.violated(Violation::BadDescriptor);
                // What was consumed is given back; the rest stays unread.
                ring.set_tail(self.link.next);
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
            let Some(bi) = bufs.alloc_one() else {
                self.partial.drop_packet(bufs, d.flags);
                r.no_buffers += 1;
                continue;
            };
            segment_meta(bufs, bi, d.length);
            reg.read(d.offset as usize, bufs.data_mut(bi));
            self.partial.take(bufs, bi, d.length, d.flags, out, r);
        }
        ring.set_tail(self.link.next);
    }
}

impl RxQueue for MemifRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        let mut r = RxBurst::default();
        let partial = &mut self.partial;
        if !self.link.sync(bufs, |b| partial.discard(b)) {
            return r;
        }
        match self.role {
            Role::Client => self.rx_client(bufs, out, &mut r),
            Role::Server => self.rx_server(bufs, out, &mut r),
        }
        r
    }

    fn held_buffers(&self) -> usize {
        self.link.slots.held + self.partial.segments
    }
}

impl Drop for MemifRx {
    fn drop(&mut self) {
        self.pool.give_back(&self.link.slots.drain());
        self.partial.discard_to_pool(&self.pool);
    }
}

/// One transmit queue: ring `index` of the us-to-peer direction.
struct MemifTx {
    pool: Arc<BufferPool>,
    role: Role,
    /// Client: `slots` are the packets (first buffers, on their last slot) not yet consumed.
    link: RingLink,
    max_frame: usize,
}

/// Why a packet could not be copied into the client's buffers.
enum CopyFail {
    /// Not enough posted buffers: the client is slow.
    NoRoom,
    /// A posted descriptor outside the client's regions, or with no room at all.
    Bad,
}

impl MemifTx {
    /// The peer broke the protocol: drop the whole burst as errors and let go of the ring.
    fn give_up(&self, bufs: &mut WorkerBuffers, pkts: &[u32], r: &mut TxBurst, v: Violation) {
        self.link.violated(v);
        bufs.free_all(pkts);
        r.errors += pkts.len();
    }

    /// Client: put the packets' own buffers on the ring.
    fn tx_client(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32], r: &mut TxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = att.conn.clone();
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
            let len = bufs.packet_len(bi);
            let mut segs = 0;
            let mut seg = bi;
            while seg != NO_BUFFER {
                segs += 1;
                seg = bufs.meta(seg).next;
            }
            let room = size.wrapping_sub(self.link.head.wrapping_sub(self.link.next)) as usize;
            if len > self.max_frame {
                r.too_long += 1;
                bufs.free(bi);
                continue;
            }
            if segs > room {
                r.queue_full += 1;
                bufs.free(bi);
                continue;
            }
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
        if r.sent > 0 && !connection::notify(ring, &conn.c2s_irq[self.link.index]) {
            self.link.violated(Violation::BadInterrupt);
        }
    }

    /// Server: copy the packets into the buffers the client posted.
    fn tx_server(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32], r: &mut TxBurst) {
        let Some(att) = &self.link.att else {
            return;
        };
        let conn = att.conn.clone();
        let ring = &conn.s2c[self.link.index];
        let mut posted = ring.head().wrapping_sub(self.link.next);
        if posted > ring.size() as u16 {
            return self.give_up(bufs, pkts, r, Violation::HeadPastRing);
        }
        for (k, &bi) in pkts.iter().enumerate() {
            let len = bufs.packet_len(bi);
            if len > self.max_frame {
                r.too_long += 1;
                bufs.free(bi);
                continue;
            }
            match self.copy_out(bufs, &conn, bi, posted) {
                Ok(used) => {
                    self.link.next = self.link.next.wrapping_add(used);
                    posted -= used;
                    r.sent += 1;
                    r.bytes += len as u64;
                }
                // Nothing of the packet is published.
                Err(CopyFail::NoRoom) => r.queue_full += 1,
                Err(CopyFail::Bad) => {
                    ring.set_tail(self.link.next);
                    return self.give_up(bufs, &pkts[k..], r, Violation::BadDescriptor);
                }
            }
            bufs.free(bi);
        }
        ring.set_tail(self.link.next);
        if r.sent > 0 && !connection::notify(ring, &conn.s2c_irq[self.link.index]) {
            self.link.violated(Violation::BadInterrupt);
        }
    }

    /// Copy packet `bi` into the client's buffers from slot `next` on, using at most `posted`
    /// slots. The descriptors' lengths and flags are written only once the whole packet fits
    /// (a failed packet leaves the slots as the client posted them). Returns slots used.
    fn copy_out(
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
        match self.role {
            Role::Client => self.tx_client(bufs, pkts, &mut r),
            Role::Server => self.tx_server(bufs, pkts, &mut r),
        }
        r
    }

    fn held_buffers(&self) -> usize {
        self.link.slots.held
    }
}

impl Drop for MemifTx {
    fn drop(&mut self) {
        self.pool.give_back_chains(&self.link.slots.drain());
    }
}

/// Open a memif interface: start its control thread (listening now, as server, so a peer
/// can connect as soon as we return) and make one queue pair per worker.
pub fn open(cfg: &MemifConfig, pool: &Arc<BufferPool>) -> Result<DriverPorts, String> {
    if !cfg.ring_size.is_power_of_two() || !(16..=16384).contains(&cfg.ring_size) {
        return Err(format!(
            "ring size {} must be a power of two between 16 and 16384",
            cfg.ring_size
        ));
    }
    let pool_share = match cfg.role {
        Role::Client => {
            // Descriptor offsets are 32 bits: every buffer of the shared pool must lie in
            // the first 4 GiB of region 1, or its offset would name another buffer.
            let bytes = pool.count() as u64 * STRIDE as u64;
            if bytes > 1 << 32 {
                return Err(format!(
                    "a memif client shares the buffer pool, whose {} buffers ({bytes} bytes) \
                     exceed the 4 GiB that 32-bit descriptor offsets reach: use at most {} \
                     buffers, or the server role",
                    pool.count(),
                    (1u64 << 32) / STRIDE as u64
                ));
            }
            Some((
                pool.region()
                    .fd()
                    .ok_or("the buffer pool has no memfd to share (memif client)")?,
                bytes as usize,
            ))
        }
        Role::Server => None,
    };
    let listener = match cfg.role {
        Role::Server => Some(
            Channel::listen(&cfg.socket)
                .map_err(|e| format!("memif socket {}: {e}", cfg.socket.display()))?,
        ),
        Role::Client => None,
    };
    let queues = cfg.workers.max(1);
    let shared = Arc::new(Shared {
        conn: ArcSwapOption::empty(),
        connected: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        peer: Mutex::new(String::new()),
        connects: AtomicU64::new(0),
        last_error: Mutex::new(String::new()),
        role: cfg.role,
        socket: cfg.socket.clone(),
        queues: AtomicU64::new(0),
        ring_size: cfg.ring_size,
        violations: violation::Counters::default(),
    });
    let settings = Settings {
        id: cfg.id,
        secret: cfg.secret.clone(),
        name: cfg.name.clone(),
        queues,
        log2_ring_size: cfg.ring_size.trailing_zeros() as u8,
        pool: pool_share,
    };
    let handle = {
        let (shared, cfg) = (shared.clone(), cfg.clone());
        std::thread::Builder::new()
            .name(format!("memif-{}", cfg.name))
            .spawn(move || control_loop(shared, listener, cfg, settings))
            .map_err(|e| format!("cannot start the memif control thread: {e}"))?
    };
    let control = ControlThread {
        shared: shared.clone(),
        handle: Some(handle),
    };
    let max_frame = crate::config::MAX_MTU as usize + 18;
    let rx: Vec<Box<dyn RxQueue>> = (0..queues)
        .map(|q| {
            Box::new(MemifRx {
                pool: pool.clone(),
                role: cfg.role,
                // A client receives on server-to-client rings, a server on client-to-server.
                link: RingLink::new(shared.clone(), q, cfg.role == Role::Server),
                partial: Partial::default(),
            }) as Box<dyn RxQueue>
        })
        .collect();
    // Thread t transmits on ring t; the main thread (last) has a ring only if the peer
    // agreed to more rings than we have workers, which a sluice peer does not.
    let tx: Vec<Box<dyn TxQueue>> = (0..=queues)
        .map(|t| {
            Box::new(MemifTx {
                pool: pool.clone(),
                role: cfg.role,
                link: RingLink::new(shared.clone(), t, cfg.role == Role::Client),
                max_frame,
            }) as Box<dyn TxQueue>
        })
        .collect();
    let details = vec![
        ("socket".to_string(), cfg.socket.display().to_string()),
        ("role".to_string(), cfg.role.name().to_string()),
        ("id".to_string(), cfg.id.to_string()),
        (
            "rings".to_string(),
            format!(
                "{} descriptors, up to {queues} queue pairs",
                shared.ring_size
            ),
        ),
        (
            "copy".to_string(),
            match cfg.role {
                Role::Client => "none: the peer reads and writes our buffer pool (region 1)",
                Role::Server => "both ways: frames are copied out of and into the client's buffers",
            }
            .to_string(),
        ),
    ];
    Ok(DriverPorts {
        rx,
        tx,
        mtu: crate::config::MAX_MTU,
        details,
        restore: vec![Box::new(control)],
        live: Some(shared),
    })
}
