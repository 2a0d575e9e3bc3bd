//! The generator's ports: where its frames go out and come in. An af_packet port uses a packet
//! socket and a TPACKET ring (with kernel receive timestamps); an af_xdp or memif port uses
//! the dataplane's own rx and tx queues over a small buffer pool of the generator's, so
//! `sluice gen` measures through exactly the code `sluice run` uses. memif ports are named by
//! their socket path, and the generator is the client (the DUT listens, as VPP does).

use sluice::buffer::{BufferPool, HugePages, WorkerBuffers};
use sluice::drivers::af_packet::netdev;
use sluice::drivers::af_packet::socket::{RxOptions, RxRing, SendResult, Sender};
use sluice::drivers::af_xdp::{self, AfXdpConfig};
use sluice::drivers::memif::{self, connection::Role, MemifConfig};
use sluice::drivers::{DriverPorts, RxQueue, TxQueue};
use sluice::graph::frame::FRAME_SIZE;
use std::sync::Arc;

/// How the generator reaches its interfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    AfPacket,
    AfXdp,
    Memif,
    /// No generator: the lab's DUTs forward between two DPDK net_null ports, which are the
    /// source and the sink (`lab run --io dpdk-null`).
    DpdkNull,
}

impl Io {
    pub fn parse(v: &str) -> Result<Io, String> {
        match v {
            "af_packet" => Ok(Io::AfPacket),
            "af_xdp" => Ok(Io::AfXdp),
            "memif" => Ok(Io::Memif),
            "dpdk-null" => Ok(Io::DpdkNull),
            other => Err(format!(
                "--io: '{other}' is not af_packet, af_xdp, memif or dpdk-null"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Io::AfPacket => "af_packet",
            Io::AfXdp => "af_xdp",
            Io::Memif => "memif",
            Io::DpdkNull => "dpdk-null",
        }
    }

    /// Largest frame (without FCS) this I/O can send.
    pub fn max_frame(self) -> usize {
        match self {
            Io::AfPacket => 9014,
            Io::AfXdp => af_xdp::MAX_MTU as usize + 14,
            Io::Memif | Io::DpdkNull => 9014,
        }
    }
}

/// Somewhere frames are sent. Frames not taken because a queue was full are the tail of the
/// batch (`queue_full` of them), so the caller sends them again.
pub trait FrameSink: Send {
    fn send(&mut self, frames: &[Vec<u8>]) -> SendResult;
    /// Wait up to `timeout` for frames taken but still queued in the port to leave; returns
    /// how many never did (counted by `send` as sent, so the caller takes them back).
    fn drain(&mut self, _timeout: std::time::Duration) -> usize {
        0
    }
}

/// Somewhere frames arrive.
pub trait FrameSource: Send {
    /// Hand every waiting frame to `f` with its receive time (ns since the epoch).
    fn poll(&mut self, f: &mut dyn FnMut(u64, &[u8])) -> usize;
    /// Sleep until a frame may be waiting, at most `ms`.
    fn wait(&mut self, ms: i32);
    /// Frames the port dropped before we saw them.
    fn drops(&mut self) -> u64;
}

impl FrameSink for Sender {
    fn send(&mut self, frames: &[Vec<u8>]) -> SendResult {
        Sender::send(self, frames.iter().map(|f| std::iter::once(f.as_slice())))
    }
}

/// An AF_PACKET receive ring as the generator reads it: a VLAN tag the kernel took off a
/// frame is put back, so tagged frames compare equal to what was sent.
pub struct RingSource {
    ring: RxRing,
    scratch: Vec<u8>,
}

impl FrameSource for RingSource {
    fn poll(&mut self, f: &mut dyn FnMut(u64, &[u8])) -> usize {
        let mut n = 0;
        while let Some(fr) = self.ring.next_frame() {
            match fr.vlan {
                Some((tpid, tci)) if fr.data.len() >= 12 => {
                    self.scratch.clear();
                    self.scratch.extend_from_slice(&fr.data[..12]);
                    self.scratch.extend_from_slice(&tpid.to_be_bytes());
                    self.scratch.extend_from_slice(&tci.to_be_bytes());
                    self.scratch.extend_from_slice(&fr.data[12..]);
                    f(fr.timestamp_ns, &self.scratch);
                }
                _ => f(fr.timestamp_ns, fr.data),
            }
            n += 1;
        }
        n
    }

    fn wait(&mut self, ms: i32) {
        self.ring.wait(ms)
    }

    fn drops(&mut self) -> u64 {
        self.ring.socket().take_drops()
    }
}

/// A dataplane tx queue used by the generator: frames are copied into pool buffers and
/// handed to the queue.
pub struct QueueSink {
    bufs: WorkerBuffers,
    tx: Box<dyn TxQueue>,
    idx: Vec<u32>,
}

impl FrameSink for QueueSink {
    fn send(&mut self, frames: &[Vec<u8>]) -> SendResult {
        self.idx.clear();
        for f in frames {
            match self.bufs.packet_from_bytes(f) {
                Some(bi) => self.idx.push(bi),
                None => break,
            }
        }
        let t = self.tx.tx_burst(&mut self.bufs, &self.idx);
        // Frames we had no buffer for count as a full queue too: sent again next time. So do
        // frames a memif client had posted no buffers for (the generator as server): the
        // peer is not ready or not keeping up, and a tester waits for it rather than losing
        // frames that no counter would show.
        let unbuilt = frames.len() - self.idx.len();
        SendResult {
            sent: t.sent,
            queue_full: t.queue_full + t.peer_full + unbuilt,
            errors: t.errors + t.too_long + t.link_down + t.wrong_format,
        }
    }

    fn drain(&mut self, timeout: std::time::Duration) -> usize {
        // An AF_XDP socket in copy mode sends what its ring holds only when kicked, and a
        // veth whose peer's queue is full turns a kick back: the run's last frames may still
        // be in the ring when the sending stops. Empty bursts reap and kick again.
        let until = std::time::Instant::now() + timeout;
        loop {
            self.tx.tx_burst(&mut self.bufs, &[]);
            let held = self.tx.held_buffers();
            if held == 0 || std::time::Instant::now() >= until {
                return held;
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

// SAFETY-free note: WorkerBuffers is Send (it holds an Arc of the pool and plain vectors).

/// Dataplane rx queues used by the generator. The driver gives no receive timestamp, so
/// frames are stamped when the poll sees them.
pub struct QueueSource {
    bufs: WorkerBuffers,
    rx: Vec<Box<dyn RxQueue>>,
    burst: Vec<u32>,
    scratch: Vec<u8>,
    missed: u64,
}

impl FrameSource for QueueSource {
    fn poll(&mut self, f: &mut dyn FnMut(u64, &[u8])) -> usize {
        let mut total = 0;
        for q in self.rx.iter_mut() {
            self.missed += q.take_missed();
            let r = q.rx_burst(&mut self.bufs, &mut self.burst);
            self.missed += r.no_buffers + r.too_long + r.truncated + r.bad_descriptors;
            if r.packets == 0 {
                continue;
            }
            let now = super::now_ns();
            for &bi in &self.burst[..r.packets] {
                // One-buffer frames are read where they are; chains are gathered first.
                if self.bufs.meta(bi).next == sluice::buffer::NO_BUFFER {
                    f(now, self.bufs.data(bi));
                } else {
                    self.bufs.copy_packet(bi, &mut self.scratch);
                    f(now, &self.scratch);
                }
            }
            self.bufs.free_all(&self.burst[..r.packets]);
            total += r.packets;
        }
        total
    }

    fn wait(&mut self, _ms: i32) {
        // Busy polling: an AF_XDP ring has nothing to sleep on without a system call per
        // poll; a short pause keeps an idle receiver from spinning hard.
        std::thread::sleep(std::time::Duration::from_micros(50));
    }

    fn drops(&mut self) -> u64 {
        for q in self.rx.iter_mut() {
            self.missed += q.take_missed_now();
        }
        std::mem::take(&mut self.missed)
    }
}

/// The interfaces of one generator run, opened once each (a port may send one direction and
/// receive the other). Holds what must be restored when the run ends.
pub struct Ports {
    io: Io,
    pool: Option<Arc<BufferPool>>,
    opened: Vec<(String, DriverPorts)>,
}

/// Buffers of the generator's own pool (af_xdp ports): rings of both ports plus frames in
/// flight, with room to spare.
const GEN_BUFFERS: u32 = 16384;

impl Ports {
    pub fn new(io: Io) -> Ports {
        Ports {
            io,
            pool: None,
            opened: Vec::new(),
        }
    }

    fn driver_ports(&mut self, name: &str) -> Result<&mut DriverPorts, String> {
        if self.io == Io::DpdkNull {
            return Err(
                "dpdk-null has no generator ports: a DUT's net_null ports are its source and sink"
                    .into(),
            );
        }
        if let Some(i) = self.opened.iter().position(|(n, _)| n == name) {
            return Ok(&mut self.opened[i].1);
        }
        let pool = match &self.pool {
            Some(p) => p.clone(),
            None => {
                let p = BufferPool::new(GEN_BUFFERS, HugePages::Never)
                    .map_err(|e| format!("buffer pool: {e}"))?;
                self.pool = Some(p.clone());
                p
            }
        };
        if self.io == Io::Memif {
            // `server:PATH` listens at PATH (to measure a DUT that is a memif client).
            let (role, socket) = match name.strip_prefix("server:") {
                Some(path) => (Role::Server, path),
                None => (Role::Client, name),
            };
            let ports = memif::open(
                &MemifConfig {
                    name: format!("gen{}", self.opened.len()),
                    socket: socket.into(),
                    role,
                    id: 0,
                    secret: None,
                    ring_size: 2048,
                    // The tester trusts the device under test with its own buffers.
                    zero_copy: true,
                    workers: 1,
                    log: true,
                },
                &pool,
            )
            .map_err(|e| format!("{name}: {e}"))?;
            self.opened.push((name.to_string(), ports));
            return Ok(&mut self.opened.last_mut().expect("just pushed").1);
        }
        let mtu = netdev::mtu(name).map_err(|e| format!("interface '{name}': {e}"))?;
        let ports = af_xdp::open(
            &AfXdpConfig {
                host: name.to_string(),
                // Frames must fit one buffer: a jumbo MTU is lowered for the run.
                mtu: (mtu > af_xdp::MAX_MTU).then_some(af_xdp::MAX_MTU),
                workers: 1,
                xdp_mode: None,
                copy_mode: None,
                ring_size: af_xdp::DEFAULT_RING_SIZE,
                busy_poll: 0,
                fast_path: false,
                // The tester's host answers the DUT's ARP and ND for the port's address.
                host_neighbours: true,
            },
            &pool,
        )
        .map_err(|e| format!("{name}: {e}"))?;
        self.opened.push((name.to_string(), ports));
        Ok(&mut self.opened.last_mut().expect("just pushed").1)
    }

    /// Wait until every port with a link (memif) has its peer, at most `timeout`.
    pub fn wait_links(&self, timeout: std::time::Duration) -> Result<(), String> {
        let deadline = std::time::Instant::now() + timeout;
        for (name, p) in &self.opened {
            let Some(live) = &p.live else { continue };
            while !live.link_up() {
                if std::time::Instant::now() > deadline {
                    return Err(format!(
                        "{name}: no memif peer after {} s (is the DUT listening there?)",
                        timeout.as_secs()
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        Ok(())
    }

    fn worker_buffers(&self) -> WorkerBuffers {
        self.pool
            .as_ref()
            .expect("pool opened with a port")
            .worker_handle()
    }

    pub fn sink(&mut self, name: &str) -> Result<Box<dyn FrameSink>, String> {
        if self.io == Io::AfPacket {
            let idx = netdev::index(name).ok_or_else(|| format!("interface '{name}' not found"))?;
            if !netdev::is_up(name).map_err(|e| e.to_string())? {
                return Err(format!("interface '{name}' is down"));
            }
            return Ok(Box::new(
                Sender::open(idx).map_err(|e| format!("{name}: {e}"))?,
            ));
        }
        let ports = self.driver_ports(name)?;
        // Queue 0's own socket (the others are the fallback packet sockets).
        let tx = std::mem::replace(&mut ports.tx[0], Box::new(sluice::drivers::NoTx));
        Ok(Box::new(QueueSink {
            bufs: self.worker_buffers(),
            tx,
            idx: Vec::with_capacity(FRAME_SIZE),
        }))
    }

    pub fn source(&mut self, name: &str) -> Result<Box<dyn FrameSource>, String> {
        if self.io == Io::AfPacket {
            let idx = netdev::index(name).ok_or_else(|| format!("interface '{name}' not found"))?;
            let ring = RxRing::open(
                idx,
                &RxOptions {
                    promiscuous: true,
                    ..RxOptions::default()
                },
            )
            .map_err(|e| format!("{name}: {e}"))?;
            return Ok(Box::new(RingSource {
                ring,
                scratch: Vec::with_capacity(9018 + 4),
            }));
        }
        let ports = self.driver_ports(name)?;
        let rx = std::mem::take(&mut ports.rx);
        Ok(Box::new(QueueSource {
            bufs: self.worker_buffers(),
            rx,
            burst: vec![0; FRAME_SIZE],
            scratch: Vec::with_capacity(9018),
            missed: 0,
        }))
    }
}
