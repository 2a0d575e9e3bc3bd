//! The af_xdp driver: a Linux interface through AF_XDP sockets, one per receive queue, with the
//! buffer pool's region as the UMEM of each, so frames move between the device and our
//! buffers with no copy in user space (and none in the kernel where the driver does
//! zero-copy). A small XDP program sends each queue's frames to that queue's socket.
//!
//! Receive: the rx half keeps the fill ring stocked with free pool buffers; the kernel writes
//! frames into them and returns them on the rx ring, and they enter the graph as they are.
//! Transmit: the tx half puts the packet's buffer itself on the tx ring and frees it when the
//! completion ring returns it. Frames must fit one buffer (2048 bytes): AF_XDP multi-buffer is
//! not used, so the MTU is at most 2030.
//!
//! Each worker transmits on the socket of the queue it polls; threads without a queue of their
//! own on the device (the main thread, workers beyond the device's queue count) transmit
//! through an AF_PACKET socket instead.

pub mod fastpath;
pub mod netlink;
pub mod program;
pub mod ring;
pub mod xsk;

use super::af_packet;
use super::host_device;
use super::host_link::{HostLink, LinkState};
use super::{DriverPorts, RxBurst, RxQueue, TxBurst, TxQueue};
use crate::buffer::{BufferPool, WorkerBuffers, DATA_SIZE, NO_BUFFER, STRIDE};
use program::XdpMode;
use ring::{Ring, XdpDesc};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use xsk::{CopyMode, Xsk, XskFd, XskOptions, ADDR_MASK, OFFSET_SHIFT};

/// Largest MTU: a frame (plus Ethernet header and a VLAN tag) must fit one buffer.
pub const MAX_MTU: u32 = DATA_SIZE as u32 - 18;
/// Polls between two reads of the kernel's drop counters (a system call).
const STATS_POLLS: u32 = 4096;
/// Refill the fill ring once this many slots are free, so refills come in batches.
const REFILL_BATCH: u32 = 64;

/// An af_xdp interface as configured.
#[derive(Clone, Debug)]
pub struct AfXdpConfig {
    pub host: String,
    pub mtu: Option<u32>,
    /// Worker threads; tx queues are workers + 1.
    pub workers: usize,
    /// Force native or generic XDP (default: native if the driver has it).
    pub xdp_mode: Option<XdpMode>,
    /// Force zero-copy or copy sockets (default: zero-copy if the driver allows it).
    pub copy_mode: Option<CopyMode>,
    /// Entries of each of the four rings (power of two).
    pub ring_size: u32,
    /// Microseconds of preferred busy polling per receive call (0: off).
    pub busy_poll: u32,
    /// The XDP fast path (`fastpath`): offloaded flows forwarded in the kernel.
    pub fast_path: bool,
    /// ARP and IPv6 neighbour discovery go to the kernel, not the sockets
    /// (`program::host_neighbours_program`: a generator's port, whose host answers them).
    pub host_neighbours: bool,
}

pub const DEFAULT_RING_SIZE: u32 = 2048;

/// Which buffers a ring half has handed to the kernel: a bit per pool buffer, so that a
/// buffer coming back is checked to be ours and a closing socket returns exactly the rest.
struct Outstanding {
    bits: Vec<u64>,
    count: usize,
}

impl Outstanding {
    fn new(buffers: u32) -> Outstanding {
        Outstanding {
            bits: vec![0; (buffers as usize).div_ceil(64)],
            count: 0,
        }
    }

    fn set(&mut self, bi: u32) {
        let (w, b) = (bi as usize / 64, bi % 64);
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.count += 1;
        }
    }

    /// Clear `bi`'s bit; false when it was not set (not ours, or out of range).
    fn clear(&mut self, bi: u32) -> bool {
        let (w, b) = (bi as usize / 64, bi % 64);
        match self.bits.get_mut(w) {
            Some(word) if *word & (1 << b) != 0 => {
                *word &= !(1 << b);
                self.count -= 1;
                true
            }
            _ => false,
        }
    }

    fn drain(&mut self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.count);
        for (w, word) in self.bits.iter_mut().enumerate() {
            let mut x = *word;
            while x != 0 {
                out.push((w * 64) as u32 + x.trailing_zeros());
                x &= x - 1;
            }
            *word = 0;
        }
        self.count = 0;
        out
    }
}

/// What the rx and tx halves of one socket share: the descriptor, and the buffers the halves
/// still had in the kernel when they closed. Those go back to the pool only after the socket
/// is closed, when the kernel can no longer write into them.
struct SocketShared {
    fd: Option<XskFd>,
    pool: Arc<BufferPool>,
    leftovers: Mutex<Vec<u32>>,
}

impl SocketShared {
    fn fd(&self) -> libc::c_int {
        self.fd.as_ref().map_or(-1, |f| f.as_raw_fd())
    }
}

impl Drop for SocketShared {
    fn drop(&mut self) {
        drop(self.fd.take());
        let left = std::mem::take(&mut *self.leftovers.lock().unwrap_or_else(|e| e.into_inner()));
        // SAFETY: `left` are the buffers this socket's rings still had (lent to the kernel),
        // and the socket is closed above, so neither the kernel nor any handle uses them.
        unsafe { self.pool.give_back(&left) };
    }
}

struct AfXdpRx {
    fill: Ring<u64>,
    rx: Ring<XdpDesc>,
    held: Outstanding,
    scratch: Vec<u32>,
    polls: u32,
    dropped_seen: u64,
    /// Preferred busy polling: an empty rx ring makes the worker run the NAPI poll itself.
    busy_poll: bool,
    /// Last, so that it drops after the rings: a ring mapping keeps the socket open, and the
    /// socket must be closed before `SocketShared::drop` gives the lent buffers back.
    shared: Arc<SocketShared>,
}

impl AfXdpRx {
    /// Keep the fill ring stocked with free buffers for the kernel to receive into.
    fn refill(&mut self, bufs: &mut WorkerBuffers) {
        let free = self.fill.free_slots(REFILL_BATCH);
        if free < REFILL_BATCH {
            return;
        }
        let n = bufs.alloc(&mut self.scratch[..free as usize]);
        for &bi in &self.scratch[..n] {
            self.fill.push(bi as u64 * STRIDE as u64);
            bufs.lend(bi);
            self.held.set(bi);
        }
        if n > 0 {
            self.fill.submit();
        }
        if self.fill.needs_wakeup() {
            xsk::kick_rx(self.shared.fd());
        }
    }
}

impl RxQueue for AfXdpRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        let mut r = RxBurst::default();
        let n = self.rx.ready(out.len() as u32);
        for i in 0..n {
            let d = self.rx.peek(i);
            let base = d.addr & ADDR_MASK;
            let bi = (base / STRIDE as u64) as u32;
            let start = (base % STRIDE as u64 + (d.addr >> OFFSET_SHIFT)) as usize;
            if !self.held.clear(bi) {
                r.bad_descriptors += 1;
                continue;
            }
            bufs.reclaim(bi);
            if start + d.len as usize > STRIDE || d.len == 0 {
                bufs.free(bi);
                r.bad_descriptors += 1;
                continue;
            }
            let m = bufs.meta_mut(bi);
            m.offset = start as u16;
            m.len = d.len as u16;
            m.total_len = d.len;
            m.next = NO_BUFFER;
            out[r.packets] = bi;
            r.packets += 1;
            r.bytes += d.len as u64;
        }
        if n > 0 {
            self.rx.release(n);
        } else if self.busy_poll {
            // Nothing waiting: this call runs the queue's NAPI poll on our CPU, so the
            // next burst finds what it received.
            xsk::kick_rx(self.shared.fd());
        }
        self.refill(bufs);
        r
    }

    fn take_missed(&mut self) -> u64 {
        self.polls += 1;
        if self.polls < STATS_POLLS {
            return 0;
        }
        self.polls = 0;
        let Ok(s) = xsk::stats(self.shared.fd()) else {
            return 0;
        };
        let total = s.rx_dropped + s.rx_ring_full + s.rx_invalid_descs;
        let new = total.saturating_sub(self.dropped_seen);
        self.dropped_seen = total;
        new
    }

    fn take_missed_now(&mut self) -> u64 {
        self.polls = STATS_POLLS;
        self.take_missed()
    }

    fn held_buffers(&self) -> usize {
        self.held.count
    }
}

impl Drop for AfXdpRx {
    fn drop(&mut self) {
        let held = self.held.drain();
        if let Ok(mut l) = self.shared.leftovers.lock() {
            l.extend(held);
        }
    }
}

struct AfXdpTx {
    tx: Ring<XdpDesc>,
    completion: Ring<u64>,
    held: Outstanding,
    max_frame: usize,
    link: Arc<HostLink>,
    /// Last, for the reason given in `AfXdpRx`.
    shared: Arc<SocketShared>,
}

impl AfXdpTx {
    /// Free the buffers the kernel has finished sending.
    fn reap(&mut self, bufs: &mut WorkerBuffers) {
        let n = self.completion.ready(u32::MAX);
        for i in 0..n {
            let bi = ((self.completion.peek(i) & ADDR_MASK) / STRIDE as u64) as u32;
            if self.held.clear(bi) {
                bufs.reclaim(bi);
                bufs.free(bi);
            }
        }
        if n > 0 {
            self.completion.release(n);
        }
    }

    /// Make the kernel send what the ring holds. In copy mode each system call sends a
    /// bounded batch (32 frames), so kick until the ring drains or a kick makes no progress.
    fn kick(&mut self) -> std::io::Result<()> {
        if !self.tx.needs_wakeup() {
            return Ok(());
        }
        let mut left = self.tx.unconsumed();
        let mut tries = self.tx.size() / 16 + 2;
        while left > 0 && tries > 0 {
            xsk::kick_tx(self.shared.fd())?;
            let now = self.tx.unconsumed();
            if now == left {
                break;
            }
            left = now;
            tries -= 1;
        }
        Ok(())
    }
}

impl TxQueue for AfXdpTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        self.reap(bufs);
        let state = self.link.state();
        if state != LinkState::Up {
            return af_packet::drop_burst(bufs, pkts, &self.link, state);
        }
        let mut r = TxBurst::default();
        let free = self.tx.free_slots(pkts.len() as u32) as usize;
        for &bi in pkts {
            let m = *bufs.meta(bi);
            if m.next != NO_BUFFER || m.total_len as usize > self.max_frame {
                r.too_long += 1;
                bufs.free(bi);
            } else if r.sent >= free {
                r.queue_full += 1;
                bufs.free(bi);
            } else {
                self.tx.push(XdpDesc {
                    addr: bi as u64 * STRIDE as u64 + m.offset as u64,
                    len: m.len as u32,
                    options: 0,
                });
                bufs.lend(bi);
                self.held.set(bi);
                r.sent += 1;
                r.bytes += m.len as u64;
            }
        }
        if r.sent > 0 {
            self.tx.submit();
        }
        if self.kick().is_err() {
            // The device refused (it went down): what the ring holds stays there and is
            // returned when the socket closes; report this burst as errors.
            r.errors += r.sent;
            r.sent = 0;
            r.bytes = 0;
        }
        r
    }

    fn held_buffers(&self) -> usize {
        self.held.count
    }
}

impl Drop for AfXdpTx {
    fn drop(&mut self) {
        let held = self.held.drain();
        if let Ok(mut l) = self.shared.leftovers.lock() {
            l.extend(held);
        }
    }
}

/// Receive queues the device has (veth: 1 unless created with more).
fn device_queues(host: &str) -> u32 {
    let n = std::fs::read_dir(format!("/sys/class/net/{host}/queues"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count()
        })
        .unwrap_or(1);
    n.max(1) as u32
}

/// Open interface `cfg.host`: attach the XDP program, open one socket per receive queue.
pub fn open(cfg: &AfXdpConfig, pool: &Arc<BufferPool>) -> Result<DriverPorts, String> {
    let host = cfg.host.as_str();
    let ifindex = host_device::index_if_up(host)?;
    if !cfg.ring_size.is_power_of_two() || !(64..=32768).contains(&cfg.ring_size) {
        return Err(format!(
            "ring size {} must be a power of two between 64 and 32768",
            cfg.ring_size
        ));
    }
    let mut restore: Vec<Box<dyn Send + Sync>> = Vec::new();
    let fits = |mtu: u32| {
        if mtu > MAX_MTU {
            return Err(format!(
                "MTU {mtu} of '{host}' is too large for af_xdp: frames must fit one {DATA_SIZE}-byte buffer (MTU at most {MAX_MTU}; set mtu = {MAX_MTU} or use af_packet)"
            ));
        }
        Ok(())
    };
    let mtu = host_device::set_mtu(host, cfg.mtu, fits, &mut restore)?;
    // A deleted device stays deleted for af_xdp: reattaching would mean a new XDP program
    // and new sockets over a UMEM whose buffers the old rings still hold.
    let link = Arc::new(HostLink::new(host, ifindex, None));
    let queues = device_queues(host);
    let fast_path = match cfg.fast_path {
        true => Some(fastpath::shared()?),
        false => None,
    };
    let which = match (&fast_path, cfg.host_neighbours) {
        (Some(fp), _) => program::Program::FastPath(fp),
        (None, true) => program::Program::HostNeighbours,
        (None, false) => program::Program::Sockets,
    };
    let attachment = program::attach(ifindex, host, queues, cfg.xdp_mode, which)?;
    if let Some(note) = &attachment.replaced {
        eprintln!("sluice: interface '{host}': {note}");
    }
    let region = pool.region();
    let mut rx: Vec<Box<dyn RxQueue>> = Vec::new();
    let mut xsk_tx: Vec<Box<dyn TxQueue>> = Vec::new();
    let mut copy_mode = None;
    for q in 0..queues {
        // SAFETY: the UMEM is the pool's region (count * STRIDE bytes of one mapping), which
        // lives as long as the pool; every SocketShared holds the pool and drops the socket
        // first. Buffers go to the kernel only from this worker's own (rx refill: freshly
        // allocated; tx: handed over by tx_burst), are lent (`WorkerBuffers::lend`) and
        // recorded in `Outstanding`, and are taken back only from the rx and completion rings
        // or, when the socket is closed, by `SocketShared::drop`.
        let x = unsafe {
            Xsk::open(&XskOptions {
                ifindex,
                queue: q,
                umem: region.ptr(),
                umem_len: pool.count() as usize * STRIDE,
                ring_size: cfg.ring_size,
                force: cfg.copy_mode,
                busy_poll: cfg.busy_poll,
            })
        }
        .map_err(|e| format!("interface '{host}' queue {q}: {e}"))?;
        attachment
            .add_socket(q, x.fd.as_raw_fd())
            .map_err(|e| format!("interface '{host}': {e}"))?;
        copy_mode = Some(x.mode);
        let Xsk {
            fd,
            fill,
            completion,
            rx: rx_ring,
            tx: tx_ring,
            ..
        } = x;
        let shared = Arc::new(SocketShared {
            fd: Some(fd),
            pool: pool.clone(),
            leftovers: Mutex::new(Vec::new()),
        });
        rx.push(Box::new(AfXdpRx {
            shared: shared.clone(),
            fill,
            rx: rx_ring,
            held: Outstanding::new(pool.count()),
            scratch: vec![0; cfg.ring_size as usize],
            polls: 0,
            dropped_seen: 0,
            busy_poll: cfg.busy_poll > 0,
        }));
        xsk_tx.push(Box::new(AfXdpTx {
            shared,
            tx: tx_ring,
            completion,
            held: Outstanding::new(pool.count()),
            max_frame: mtu as usize + 18,
            link: link.clone(),
        }));
    }
    // Thread t transmits on queue t's socket when the device has that queue and worker t
    // polls it; the others (and the main thread, the last) use a packet socket.
    let threads = cfg.workers + 1;
    let own = (queues as usize).min(cfg.workers);
    let mut tx: Vec<Box<dyn TxQueue>> = xsk_tx.into_iter().take(own).collect();
    for t in own..threads {
        tx.push(
            af_packet::tx_queue(ifindex, mtu, link.clone())
                .map_err(|e| format!("interface '{host}' tx queue {t}: {e}"))?,
        );
    }
    let mode = copy_mode.map_or("?", |m| m.name());
    let mut details = vec![
        ("xdp-mode".to_string(), attachment.mode.name().to_string()),
        ("socket-mode".to_string(), mode.to_string()),
        (
            "queues".to_string(),
            format!("{queues} (one AF_XDP socket each)"),
        ),
        (
            "rings".to_string(),
            format!("fill/completion/rx/tx {} entries", cfg.ring_size),
        ),
        (
            "busy-poll".to_string(),
            match cfg.busy_poll {
                0 => "off (the kernel's NAPI receives)".to_string(),
                us => format!(
                    "preferred, {us} us per receive call, budget {}",
                    xsk::BUSY_POLL_BUDGET
                ),
            },
        ),
        (
            "umem".to_string(),
            format!(
                "the buffer pool: {} chunks of {STRIDE} B, unaligned",
                pool.count()
            ),
        ),
        (
            "tx".to_string(),
            format!(
                "AF_XDP on threads 0..{own}, AF_PACKET on threads {own}..{threads} (main thread last)"
            ),
        ),
    ];
    if let Some(note) = &attachment.replaced {
        details.push(("xdp-program".to_string(), note.clone()));
    }
    restore.push(Box::new(attachment));
    Ok(host_device::ports(
        host, link, rx, tx, mtu, restore, details,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outstanding_tracks_each_buffer_once() {
        let mut o = Outstanding::new(200);
        o.set(3);
        o.set(3);
        o.set(130);
        o.set(199);
        assert_eq!(o.count, 3);
        assert!(o.clear(130));
        assert!(!o.clear(130), "a buffer is returned once");
        assert!(!o.clear(5), "a buffer we never gave");
        assert!(!o.clear(100_000), "out of range");
        assert_eq!(o.drain(), vec![3, 199]);
        assert_eq!(o.count, 0);
        assert!(o.drain().is_empty());
    }
}
