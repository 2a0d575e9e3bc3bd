//! The af_packet driver: a Linux interface through AF_PACKET sockets. Receive uses a
//! TPACKET_V3 ring per queue (several queues share the traffic through PACKET_FANOUT);
//! transmit copies each frame into a TPACKET_V2 transmit ring and kicks the kernel once per
//! burst, bypassing the qdisc layer. Each copies once; zero-copy is the AF_XDP driver's job.
//!
//! The host device's state comes from the link monitor (`HostLink`): while it is not up,
//! transmit drops at once with a named count; when it is deleted and a device of the same
//! name appears again, the monitor opens new sockets on it and each queue takes its own at
//! its next burst (the rings hold no pool buffers, so nothing is lost in the swap).

pub mod netdev;
mod rx_ring;
pub mod socket;
pub mod tx_ring;

use super::host_device;
use super::host_link::{HostLink, LinkState};
use super::{DriverPorts, RxBurst, RxQueue, TxBurst, TxQueue};
use crate::buffer::{WorkerBuffers, DATA_SIZE, NO_BUFFER};
use socket::{RingLayout, RxOptions, RxRing, MAX_BATCH, MAX_SEGMENTS};
use std::sync::{Arc, Mutex};
use tx_ring::{TxRing, TX_SLOTS};

/// An af_packet interface as configured.
#[derive(Clone, Debug, Default)]
pub struct AfPacketConfig {
    /// The Linux interface to attach to.
    pub host: String,
    /// MTU to set on the host interface (restored on exit); `None` keeps the current one.
    pub mtu: Option<u32>,
    /// Receive queues (one per worker that polls this interface; >1 uses PACKET_FANOUT).
    pub rx_queues: usize,
    /// Transmit queues: workers + 1.
    pub tx_queues: usize,
    /// Receive slots per queue (`ring-size`).
    pub rx_slots: u32,
}

/// Largest frame we can hold: a chain of MAX_SEGMENTS buffers.
const MAX_FRAME: usize = DATA_SIZE * MAX_SEGMENTS;
/// Polls between two reads of the kernel's drop counter (a system call).
const DROP_CHECK_POLLS: u32 = 4096;
/// Receive slots per queue by default (`ring-size` changes it), sized by the time they hold. A worker drains them as they are
/// written (TPACKET_V2: no block to wait for); in overload the kernel drops at the tail
/// (counted as missed), which costs it least, and the ring holds about 2.5 ms at the 0.2 Mpps
/// a worker forwards between veths here (16 MiB of V3 blocks queued 0.3 s). Measured in
/// overload, 3 runs each: 2048 slots p50/p99 8.9/16.5 ms, 512 slots 3.0/5.1 ms at the same
/// rate; dropping frames older than 1 ms at the head instead cost 14 % of the rate. Fewer
/// slots would lose frames whenever the worker's CPU is taken from it for longer than the
/// ring lasts (5 ms at 100 kpps).
pub const RX_SLOTS: u32 = 512;

/// Sockets opened on a device that came back, waiting for their queues to take them.
#[derive(Default)]
struct Fresh {
    rx: Vec<Option<RxRing>>,
    tx: Vec<Option<TxRing>>,
}

/// What it takes to open an interface's sockets again, on a new device of the same name.
struct Reopen {
    host: String,
    mtu: Option<u32>,
    layout: RingLayout,
    /// Largest frame the tx rings take: the MTU at open plus the Ethernet header and a tag.
    max_frame: usize,
    rx_queues: usize,
    tx_queues: usize,
    fresh: Mutex<Fresh>,
}

impl Reopen {
    fn open(&self, ifindex: u32) -> Result<(), String> {
        let host = &self.host;
        if let Some(m) = self.mtu {
            if netdev::mtu(host).map_err(|e| e.to_string())? != m {
                netdev::set_mtu(host, m).map_err(|e| format!("cannot set MTU {m}: {e}"))?;
            }
        }
        let rx = rx_rings(host, ifindex, self.rx_queues, self.layout)?;
        let tx = tx_rings(host, ifindex, self.tx_queues, self.max_frame)?;
        let mut f = self.fresh.lock().unwrap_or_else(|p| p.into_inner());
        f.rx = rx.into_iter().map(Some).collect();
        f.tx = tx.into_iter().map(Some).collect();
        Ok(())
    }

    /// Queue `q`'s new ring: `None` while the monitor holds the lock (try again next burst),
    /// `Some(None)` when there is none for it.
    fn take_rx(&self, q: usize) -> Option<Option<RxRing>> {
        let mut f = self.fresh.try_lock().ok()?;
        Some(f.rx.get_mut(q).and_then(Option::take))
    }

    fn take_tx(&self, q: usize) -> Option<Option<TxRing>> {
        let mut f = self.fresh.try_lock().ok()?;
        Some(f.tx.get_mut(q).and_then(Option::take))
    }
}

struct AfPacketRx {
    ring: RxRing,
    polls: u32,
    /// Frames whose VLAN tag the kernel took off are rebuilt here.
    scratch: Vec<u8>,
    queue: usize,
    link: Arc<HostLink>,
    reopen: Arc<Reopen>,
    /// The link generation `ring` belongs to.
    generation: u32,
}

impl AfPacketRx {
    /// Take the ring opened on a device that came back (rare: a deleted device reappeared).
    #[cold]
    fn adopt(&mut self, generation: u32) {
        if let Some(fresh) = self.reopen.take_rx(self.queue) {
            if let Some(ring) = fresh {
                self.ring = ring;
                self.polls = 0;
            }
            self.generation = generation;
        }
    }
}

impl RxQueue for AfPacketRx {
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst {
        let g = self.link.generation();
        if g != self.generation {
            self.adopt(g);
        }
        let mut r = RxBurst::default();
        while r.packets < out.len() {
            let Some(f) = self.ring.next_frame() else {
                break;
            };
            if (f.data.len() as u32) < f.wire_len {
                r.truncated += 1;
                continue;
            }
            let bytes: &[u8] = match f.vlan {
                None => f.data,
                Some((tpid, tci)) if f.data.len() >= 12 => {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(&f.data[..12]);
                    self.scratch.extend_from_slice(&tpid.to_be_bytes());
                    self.scratch.extend_from_slice(&tci.to_be_bytes());
                    self.scratch.extend_from_slice(&f.data[12..]);
                    &self.scratch
                }
                Some(_) => f.data,
            };
            if bytes.len() > MAX_FRAME {
                r.too_long += 1;
                continue;
            }
            let ts = f.timestamp_ns;
            match bufs.packet_from_bytes(bytes) {
                Some(bi) => {
                    bufs.meta_mut(bi).timestamp_ns = ts;
                    out[r.packets] = bi;
                    r.packets += 1;
                    r.bytes += bytes.len() as u64;
                }
                None => r.no_buffers += 1,
            }
        }
        r
    }

    fn take_missed(&mut self) -> u64 {
        self.polls += 1;
        if self.polls < DROP_CHECK_POLLS {
            return 0;
        }
        self.polls = 0;
        self.ring.socket().take_drops()
    }
}

/// A transmit queue on its own packet socket (other drivers borrow it for threads that have
/// no queue of their own on the device). It does not reattach.
pub fn tx_queue(ifindex: u32, mtu: u32, link: Arc<HostLink>) -> Result<Box<dyn TxQueue>, String> {
    let max_frame = mtu as usize + 18;
    Ok(Box::new(AfPacketTx {
        ring: TxRing::open(ifindex, max_frame, TX_SLOTS)?,
        max_frame,
        queue: 0,
        generation: link.generation(),
        link,
        reopen: None,
    }))
}

/// Drop a whole burst because the link cannot send: `link_down` for the tx node, and the
/// reason (link down, device gone) on the link.
pub fn drop_burst(
    bufs: &mut WorkerBuffers,
    pkts: &[u32],
    link: &HostLink,
    state: LinkState,
) -> TxBurst {
    bufs.free_all(pkts);
    link.count_tx_drops(state, pkts.len());
    TxBurst {
        link_down: pkts.len(),
        ..TxBurst::default()
    }
}

struct AfPacketTx {
    ring: TxRing,
    /// Largest frame allowed out: MTU plus the Ethernet header and one VLAN tag.
    max_frame: usize,
    queue: usize,
    link: Arc<HostLink>,
    reopen: Option<Arc<Reopen>>,
    generation: u32,
}

impl AfPacketTx {
    #[cold]
    fn adopt(&mut self, generation: u32) {
        let Some(reopen) = &self.reopen else {
            self.generation = generation;
            return;
        };
        if let Some(fresh) = reopen.take_tx(self.queue) {
            if let Some(ring) = fresh {
                self.ring = ring;
            }
            self.generation = generation;
        }
    }
}

impl TxQueue for AfPacketTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        let g = self.link.generation();
        if g != self.generation {
            self.adopt(g);
        }
        let state = self.link.state();
        if state != LinkState::Up {
            return drop_burst(bufs, pkts, &self.link, state);
        }
        let mut r = TxBurst::default();
        for chunk in pkts.chunks(MAX_BATCH) {
            let mut ok = [0u32; MAX_BATCH];
            let mut n = 0;
            for &bi in chunk {
                if bufs.packet_len(bi) > self.max_frame {
                    r.too_long += 1;
                } else {
                    ok[n] = bi;
                    n += 1;
                }
            }
            let b: &WorkerBuffers = bufs;
            let s = self.ring.send(n, |i, slot| copy_chain(b, ok[i], slot));
            r.sent += s.sent;
            r.bytes += s.bytes;
            r.queue_full += s.queue_full;
            r.errors += s.errors;
            r.wrong_format += s.wrong_format;
        }
        bufs.free_all(pkts);
        r
    }
}

/// Copy packet `bi`'s segments into `dst`; returns its length (cut to `dst`, which the
/// caller made long enough).
fn copy_chain(bufs: &WorkerBuffers, bi: u32, dst: &mut [u8]) -> usize {
    let mut at = 0;
    let mut seg = bi;
    while seg != NO_BUFFER && at < dst.len() {
        let d = bufs.data(seg);
        let n = d.len().min(dst.len() - at);
        dst[at..at + n].copy_from_slice(&d[..n]);
        at += n;
        seg = bufs.meta(seg).next;
    }
    at
}

/// Open interface `cfg.host`: check it, set its MTU, and open the rx rings and tx sockets.
pub fn open(cfg: &AfPacketConfig) -> Result<DriverPorts, String> {
    let host = cfg.host.as_str();
    let ifindex = host_device::index_if_up(host)?;
    let mut restore: Vec<Box<dyn Send + Sync>> = Vec::new();
    let mtu = host_device::set_mtu(host, cfg.mtu, |_| Ok(()), &mut restore)?;
    let queues = cfg.rx_queues.max(1);
    let tx_queues = cfg.tx_queues.max(1);
    let max_frame = mtu as usize + 18;
    let layout = RingLayout::frames(max_frame, cfg.rx_slots);
    let reopen = Arc::new(Reopen {
        host: host.to_string(),
        mtu: cfg.mtu,
        layout,
        max_frame,
        rx_queues: queues,
        tx_queues,
        fresh: Mutex::new(Fresh::default()),
    });
    let r = reopen.clone();
    let link = Arc::new(HostLink::new(
        host,
        ifindex,
        Some(Box::new(move |ifindex| r.open(ifindex))),
    ));
    let mut rx: Vec<Box<dyn RxQueue>> = Vec::new();
    for (q, ring) in rx_rings(host, ifindex, queues, layout)?
        .into_iter()
        .enumerate()
    {
        rx.push(Box::new(AfPacketRx {
            ring,
            polls: 0,
            scratch: Vec::with_capacity(MAX_FRAME + 4),
            queue: q,
            link: link.clone(),
            reopen: reopen.clone(),
            generation: 0,
        }));
    }
    let mut tx: Vec<Box<dyn TxQueue>> = Vec::new();
    let rings = tx_rings(host, ifindex, tx_queues, max_frame)?;
    let tx_detail = rings.first().map(TxRing::describe).unwrap_or_default();
    for (q, ring) in rings.into_iter().enumerate() {
        tx.push(Box::new(AfPacketTx {
            ring,
            max_frame,
            queue: q,
            link: link.clone(),
            reopen: Some(reopen.clone()),
            generation: 0,
        }));
    }
    let group = fanout_group(ifindex);
    let details = vec![
        ("rx-ring".to_string(), layout.describe()),
        (
            "fanout".to_string(),
            if queues > 1 {
                format!("hash, group {group}")
            } else {
                "none".into()
            },
        ),
        ("tx".to_string(), tx_detail),
    ];
    Ok(host_device::ports(
        host, link, rx, tx, mtu, restore, details,
    ))
}

/// One fanout group per device and process.
fn fanout_group(ifindex: u32) -> u16 {
    ((std::process::id() ^ ifindex.wrapping_mul(2654435761)) & 0xffff) as u16
}

/// `queues` receive rings on device `ifindex`, sharing its traffic through a fanout group
/// when there are several.
fn rx_rings(
    host: &str,
    ifindex: u32,
    queues: usize,
    layout: RingLayout,
) -> Result<Vec<RxRing>, String> {
    let options = RxOptions {
        layout,
        promiscuous: true,
        fanout_group: (queues > 1).then_some(fanout_group(ifindex)),
        filter: Vec::new(),
    };
    (0..queues)
        .map(|q| {
            RxRing::open(ifindex, &options)
                .map_err(|e| format!("interface '{host}' rx queue {q}: {e}"))
        })
        .collect()
}

fn tx_rings(
    host: &str,
    ifindex: u32,
    queues: usize,
    max_frame: usize,
) -> Result<Vec<TxRing>, String> {
    (0..queues)
        .map(|q| {
            TxRing::open(ifindex, max_frame, TX_SLOTS)
                .map_err(|e| format!("interface '{host}' tx queue {q}: {e}"))
        })
        .collect()
}
