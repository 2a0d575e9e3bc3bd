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
//! A client shares the whole buffer pool with its peer: use the server role towards a peer
//! that is not trusted with that memory.

pub mod connection;
pub mod proto;
pub mod shm;
pub mod socket;

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
        d
    }
}

impl Shared {
    fn publish(&self, c: Option<Connection>) {
        let up = c.is_some();
        if let Some(c) = &c {
            if let Ok(mut p) = self.peer.lock() {
                p.clone_from(&c.peer_name);
            }
            self.queues
                .store(c.c2s.len().min(c.s2c.len()) as u64, Ordering::Relaxed);
            self.connects.fetch_add(1, Ordering::Relaxed);
        }
        self.conn.store(c.map(Arc::new));
        self.connected.store(up, Ordering::Relaxed);
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

/// Wait for the peer to go away (or us to stop), refusing anybody else who connects.
fn watch(ch: &Channel, listener: Option<&Channel>, shared: &Shared, name: &str) {
    loop {
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
                let e = format!("unexpected {} after connecting", m.kind());
                let _ = ch.send(
                    &proto::Msg::Disconnect {
                        code: 1,
                        reason: e.clone(),
                    },
                    None,
                );
                shared.note_error(name, &e);
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
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
                shared.publish(Some(conn));
                watch(&ch, listener.as_ref(), &shared, name);
                shared.publish(None);
                eprintln!("sluice: memif {name}: disconnected");
            }
            Err(e) => {
                shared.note_error(name, &format!("connection refused: {e}"));
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
        let cur = self.shared.conn.load();
        match (&*cur, &self.att) {
            (Some(c), Some(a)) if Arc::ptr_eq(c, &a.conn) => return true,
            (None, None) => return false,
            _ => {}
        }
        let held = self.slots.drain();
        bufs.free_all(&held);
        on_change(bufs);
        self.att = None;
        let Some(conn) = (*cur).clone() else {
            return false;
        };
        let rings = if self.c2s { &conn.c2s } else { &conn.s2c };
        let Some(ring) = rings.get(self.index) else {
            return false;
        };
        self.slots = Slots::new(ring.size() as usize);
        // The producer continues at head, the consumer at tail: a client posts at head and
        // reads up to the server's tail; a server reads from the tail up to the client's head.
        self.head = ring.head();
        self.next = ring.tail();
        self.att = Some(Attached { conn });
        true
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
        if let Some(head) = self.finish(bufs) {
            bufs.free(head);
        }
    }

    fn discard_to_pool(&mut self, pool: &BufferPool) {
        if let Some(head) = self.head.take() {
            pool.give_back_chains(&[head]);
        }
    }
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
    fn rx_client(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32], r: &mut RxBurst) {
        let Some(att) = &self.link.att else { return };
        let ring = &att.conn.s2c[self.link.index];
        let size = ring.size() as u16;
        let tail = ring.tail();
        if tail.wrapping_sub(self.link.next) > size {
            // The peer moved the tail past what we posted: nothing there is ours to read.
            r.bad_descriptors += 1;
            self.link.next = tail;
        }
        while self.link.next != tail && r.packets < out.len() {
            let slot = self.link.next;
            self.link.next = self.link.next.wrapping_add(1);
            let d = ring.desc(slot);
            let bi = self.link.slots.take(slot);
            if bi == NO_BUFFER {
                r.bad_descriptors += 1;
                continue;
            }
            if d.length as usize > DATA_SIZE || (d.length == 0 && d.flags & DESC_FLAG_NEXT == 0) {
                bufs.free(bi);
                self.partial.discard(bufs);
                r.bad_descriptors += 1;
                continue;
            }
            let m = bufs.meta_mut(bi);
            m.offset = HEADROOM as u16;
            m.len = d.length as u16;
            m.total_len = d.length;
            self.partial.add(bufs, bi, d.length);
            if d.flags & DESC_FLAG_NEXT != 0 {
                if self.partial.segments >= MAX_SEGMENTS {
                    self.partial.discard(bufs);
                    r.too_long += 1;
                }
                continue;
            }
            if let Some(head) = self.partial.finish(bufs) {
                r.bytes += bufs.meta(head).total_len as u64;
                out[r.packets] = head;
                r.packets += 1;
            }
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
                        offset: (bi as usize * STRIDE + HEADROOM) as u32,
                        metadata: 0,
                    },
                );
                self.link.slots.put(self.link.head, bi, 1);
                self.link.head = self.link.head.wrapping_add(1);
            }
        }
        ring.set_head(self.link.head);
    }

    fn rx_server(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32], r: &mut RxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = att.conn.clone();
        let ring = &conn.c2s[self.link.index];
        let head = ring.head();
        if head.wrapping_sub(self.link.next) > ring.size() as u16 {
            r.bad_descriptors += 1;
            self.link.next = head;
            ring.set_tail(self.link.next);
            return;
        }
        while self.link.next != head && r.packets < out.len() {
            let d = ring.desc(self.link.next);
            self.link.next = self.link.next.wrapping_add(1);
            let region = conn.regions.get(d.region as usize);
            let fits = region.is_some_and(|reg| reg.contains(d.offset as usize, d.length as usize));
            if !fits || d.length as usize > DATA_SIZE {
                self.partial.discard(bufs);
                r.bad_descriptors += 1;
                continue;
            }
            let Some(bi) = bufs.alloc_one() else {
                self.partial.discard(bufs);
                r.no_buffers += 1;
                continue;
            };
            let m = bufs.meta_mut(bi);
            m.offset = HEADROOM as u16;
            m.len = d.length as u16;
            m.total_len = d.length;
            if let Some(reg) = region {
                reg.read(d.offset as usize, bufs.data_mut(bi));
            }
            self.partial.add(bufs, bi, d.length);
            if d.flags & DESC_FLAG_NEXT != 0 {
                if self.partial.segments >= MAX_SEGMENTS {
                    self.partial.discard(bufs);
                    r.too_long += 1;
                }
                continue;
            }
            if let Some(head) = self.partial.finish(bufs) {
                r.bytes += bufs.meta(head).total_len as u64;
                out[r.packets] = head;
                r.packets += 1;
            }
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

impl MemifTx {
    /// Client: put the packets' own buffers on the ring.
    fn tx_client(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32], r: &mut TxBurst) {
        let Some(att) = &self.link.att else { return };
        let conn = att.conn.clone();
        let ring = &conn.c2s[self.link.index];
        let size = ring.size() as u16;
        // Free what the server has consumed.
        let tail = ring.tail();
        if tail.wrapping_sub(self.link.next) <= size {
            while self.link.next != tail {
                let bi = self.link.slots.take(self.link.next);
                if bi != NO_BUFFER {
                    bufs.free(bi);
                }
                self.link.next = self.link.next.wrapping_add(1);
            }
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
                        offset: (seg as usize * STRIDE + m.offset as usize) as u32,
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
            connection::notify(ring, &conn.c2s_irq[self.link.index]);
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
            // The client's head is not where a sane client could have put it.
            posted = 0;
        }
        for &bi in pkts {
            let len = bufs.packet_len(bi);
            if len > self.max_frame {
                r.too_long += 1;
                bufs.free(bi);
                continue;
            }
            match self.copy_out(bufs, &conn, bi, posted) {
                Some(used) => {
                    self.link.next = self.link.next.wrapping_add(used);
                    posted -= used;
                    r.sent += 1;
                    r.bytes += len as u64;
                }
                // Out of posted buffers, or a descriptor outside its region: nothing of the
                // packet is published.
                None => r.queue_full += 1,
            }
            bufs.free(bi);
        }
        ring.set_tail(self.link.next);
        if r.sent > 0 {
            connection::notify(ring, &conn.s2c_irq[self.link.index]);
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
    ) -> Option<u16> {
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
                            return None;
                        }
                        let d = ring.desc(self.link.next.wrapping_add(used as u16));
                        if d.length == 0 {
                            return None;
                        }
                        used += 1;
                        cur = Some(d);
                        d
                    }
                };
                let fill = fills[used - 1] as usize;
                let n = (data.len() - off).min(d.length as usize - fill);
                let region = conn.regions.get(d.region as usize)?;
                if !region.write(d.offset as usize + fill, &data[off..off + n]) {
                    return None;
                }
                off += n;
                fills[used - 1] += n as u32;
            }
            seg = bufs.meta(seg).next;
        }
        if used == 0 {
            return None;
        }
        for (k, &fill) in fills[..used].iter().enumerate() {
            let flags = if k + 1 < used { DESC_FLAG_NEXT } else { 0 };
            ring.set_length(self.link.next.wrapping_add(k as u16), fill, flags);
        }
        Some(used as u16)
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
        Role::Client => Some((
            pool.region()
                .fd()
                .ok_or("the buffer pool has no memfd to share (memif client)")?,
            pool.count() as usize * STRIDE,
        )),
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
