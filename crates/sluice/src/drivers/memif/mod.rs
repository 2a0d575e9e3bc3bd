//! The memif driver: shared-memory packet interfaces, as VPP and DPDK (`net_memif`) speak them.
//!
//! A control thread per interface runs the protocol (listening as server, or connecting and
//! retrying once a second as client), and publishes each established connection to the
//! queues with an atomic swap and a generation counter. A worker reads the counter at every
//! burst; when it moved and the published connection differs from its own, it gives back what
//! it held in the old rings and takes up the new ones. No lock is taken per packet, and the old shared memory is unmapped only when the
//! last queue has let go of it.
//!
//! Who copies: as **client**, the regions are ours. By default region 1 is a memfd of its
//! own with one buffer per ring slot (`copy`): frames are copied into it on transmit and out
//! of it on receive, and the peer never sees the buffer pool. With `zero_copy` (for trusted
//! peers) region 1 *is* the buffer pool, so descriptors point at pool buffers: the peer
//! writes received frames straight into the buffers the graph then uses, and transmitted
//! buffers go out as they are — no copy, but the peer can read and rewrite every buffer of
//! every interface, at any time. As **server**, the memory is the client's (its buffers are
//! not in our pool), so frames are copied out of the client's buffers on receive and into
//! them on transmit. Every offset and length the peer gives is checked against its region
//! first.
//!
//! A peer is not trusted with anything it writes: ring indices must stay within what was
//! posted, descriptors within its regions (and, handed back to a client, be the very buffer
//! posted in that slot), regions must be memfds sealed against shrinking, interrupt
//! descriptors non-blocking eventfds, messages in protocol order. Each breach is a named
//! [`violation`] counted on the interface (`show hardware`); the queue that saw it lets go
//! of the rings at once (every pool buffer they held comes back), and the control thread
//! disconnects the peer with the violation as the reason.
//!
//! Only a zero-copy client shares the whole buffer pool with its peer.
//!
//! Layout: this file opens an interface and holds what its threads share; `control` runs the
//! protocol; `rings` is a queue's hold on the published rings; `rx` and `tx` are the queues;
//! `copy` is a copying client's own buffers; `irq` writes interrupts for the workers;
//! `connection`, `proto`, `shm` and `socket` are the protocol's pieces; `violation` names
//! what a peer may not do.

pub mod connection;
mod control;
pub mod copy;
pub mod irq;
pub mod proto;
mod rings;
mod rx;
pub mod shm;
pub mod socket;
mod tx;
pub mod violation;

use super::{DriverPorts, LiveStatus, RxQueue, TxQueue};
use crate::buffer::{BufferPool, STRIDE};
use arc_swap::ArcSwapOption;
use connection::{Connection, Role, Settings};
use control::{control_loop, ControlThread};
use rings::{CopyCounts, RingLink};
use rx::{MemifRx, Partial};
use socket::Channel;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tx::MemifTx;
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
    /// Client: lend the buffer pool to the peer as region 1 (no copy; for trusted peers)
    /// instead of a region of its own.
    pub zero_copy: bool,
    pub workers: usize,
    /// Say on stderr when a peer connects, leaves or is refused (a daemon does; the lab's
    /// own short-lived servers do not).
    pub log: bool,
}

pub const DEFAULT_RING_SIZE: u32 = 1024;
/// Segments of one packet we accept from a peer (9000-byte frames in 2048-byte buffers: 5).
const MAX_SEGMENTS: usize = 8;

/// What the control thread shares with the queues and `show interface`.
pub struct Shared {
    /// The current connection; queues look at it again when `generation` moved.
    conn: ArcSwapOption<Connection>,
    /// Bumped after every change a queue must act on (a connection published or gone, a
    /// violation found): one plain load per burst instead of loading `conn`.
    generation: AtomicU64,
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
    /// Every queue's copied and zero-copy frame counts.
    copy_counts: Mutex<Vec<Arc<CopyCounts>>>,
    /// `MemifConfig::log`.
    log: bool,
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
        let (mut copied, mut zero_copy) = (0, 0);
        if let Ok(all) = self.copy_counts.lock() {
            for c in all.iter() {
                copied += c.copied.load(Ordering::Relaxed);
                zero_copy += c.zero_copy.load(Ordering::Relaxed);
            }
        }
        d.push(("frames copied".to_string(), copied.to_string()));
        d.push(("frames zero-copy".to_string(), zero_copy.to_string()));
        for (v, n) in self.violations.nonzero() {
            d.push((format!("violation: {v}"), n.to_string()));
        }
        d
    }
}

impl Shared {
    /// A line about the connection on stderr, when this interface logs.
    fn say(&self, name: &str, what: &str) {
        if self.log {
            eprintln!("sluice: memif {name}: {what}");
        }
    }

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
        self.generation.fetch_add(1, Ordering::Release);
        self.connected.store(up, Ordering::Relaxed);
    }

    /// Count `v` if it is the first violation on `conn` (later ones follow from it), and
    /// mark the connection so every queue lets go of its rings.
    fn count_violation(&self, conn: &Connection, v: Violation) {
        if conn.verdict.set(v) {
            self.violations.add(v);
            self.generation.fetch_add(1, Ordering::Release);
        }
    }

    fn note_error(&self, name: &str, e: &str) {
        self.say(name, e);
        if let Ok(mut l) = self.last_error.lock() {
            e.clone_into(&mut l);
        }
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
    let zero_copy = cfg.role == Role::Client && cfg.zero_copy;
    if cfg.role == Role::Client && !zero_copy {
        let bytes =
            copy::OwnBuffers::bytes(cfg.workers.max(1), cfg.ring_size.trailing_zeros() as u8);
        if bytes > 1 << 32 {
            return Err(format!(
                "a copying memif client needs {bytes} bytes of buffers for {} queue pairs of \
                 {} slots, more than the 4 GiB that 32-bit descriptor offsets reach: use \
                 smaller rings",
                cfg.workers.max(1),
                cfg.ring_size
            ));
        }
    }
    let pool_share = match zero_copy {
        true => {
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
        false => None,
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
        generation: AtomicU64::new(0),
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
        copy_counts: Mutex::new(Vec::new()),
        log: cfg.log,
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
                zero_copy,
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
                zero_copy,
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
            match (cfg.role, zero_copy) {
                (Role::Client, true) => {
                    "none (zero-copy): the peer reads and writes our buffer pool (region 1)"
                }
                (Role::Client, false) => {
                    "both ways: frames are copied into and out of our own region 1"
                }
                (Role::Server, _) => {
                    "both ways: frames are copied out of and into the client's buffers"
                }
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
        mac: None,
    })
}
