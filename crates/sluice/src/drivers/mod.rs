//! Drivers: each one folder, each a small pair of traits (ixy style). A driver moves packets
//! between its device and pool buffers; the generic input and tx nodes do the rest (counters,
//! trace, enqueue), so a driver never sees the graph.

pub mod af_packet;
pub mod af_xdp;
pub mod dpdk;
pub mod host_device;
pub mod host_link;
pub mod memif;
pub mod null;
pub mod pcap;
pub mod tap;

use crate::buffer::WorkerBuffers;

/// What one receive burst did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxBurst {
    /// Packets written to the output slice.
    pub packets: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Packets dropped because the pool had no free buffers.
    pub no_buffers: u64,
    /// Packets dropped because they do not fit a buffer chain.
    pub too_long: u64,
    /// Packets dropped because the device delivered only part of them.
    pub truncated: u64,
    /// Descriptors from the device that named no buffer we gave it, or lay outside it.
    pub bad_descriptors: u64,
}

/// A transmit queue that a receive queue of the same driver may hand frames to past the
/// graph (the cross-connect patch, `nodes::patch`). What it holds is the driver's own.
pub type DirectTx = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// What a receive with the patch did: the frames laid out for the graph, and the frames kept
/// back for the patch's transmit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatchRx {
    pub graph: RxBurst,
    pub held: usize,
    pub held_bytes: u64,
}

/// The receive side of one queue.
pub trait RxQueue: Send {
    /// Take up to `out.len()` packets into freshly allocated buffers, whose indices go to
    /// `out[..packets]`.
    fn rx_burst(&mut self, bufs: &mut WorkerBuffers, out: &mut [u32]) -> RxBurst;
    /// Packets the device dropped before we saw them, since the last call.
    fn take_missed(&mut self) -> u64 {
        0
    }
    /// Like `take_missed`, but read the device's counters now (drivers that read them only
    /// every so many polls): for a final count.
    fn take_missed_now(&mut self) -> u64 {
        self.take_missed()
    }
    /// Pool buffers this queue holds (for `show buffers`).
    fn held_buffers(&self) -> usize {
        0
    }
    /// `rx_burst`, but keeping back, untouched, the frames that a cross-connect would send
    /// to `to` as they came in (one segment, `min_frame` bytes or more, not longer than `to`
    /// sends, untagged), up to the first that it would not: `send_held` sends them before
    /// the graph sends the rest, so the burst leaves in its order. `None`, with nothing
    /// received, where the driver has no such path to `to`.
    fn rx_patch(
        &mut self,
        _to: &DirectTx,
        _min_frame: usize,
        _bufs: &mut WorkerBuffers,
        _out: &mut [u32],
    ) -> Option<PatchRx> {
        None
    }
    /// Send to `to` what the last `rx_patch` kept back; what the queue does not take is
    /// dropped as `queue_full`.
    fn send_held(&mut self, _to: &DirectTx) -> TxBurst {
        TxBurst::default()
    }
}

/// What one transmit burst did. Every packet handed to `tx_burst` is accounted for in
/// exactly one of these counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxBurst {
    pub sent: usize,
    pub bytes: u64,
    /// Dropped because the device's queue was full.
    pub queue_full: usize,
    /// Dropped because the device refused them (an error from the kernel).
    pub errors: usize,
    /// Dropped because they exceed the interface MTU.
    pub too_long: usize,
    /// Dropped without trying because the host link is down or its device is gone.
    pub link_down: usize,
    /// Dropped because the peer had no room for them (a memif client that has not posted
    /// receive buffers): the receiver's limit, not this one's.
    pub peer_full: usize,
    /// Dropped because the kernel found them malformed in a transmit ring
    /// (TP_STATUS_WRONG_FORMAT: e.g. longer than the device's MTU, lowered under us).
    pub wrong_format: usize,
}

/// The transmit side of one queue.
pub trait TxQueue: Send {
    /// Transmit `pkts`. The queue takes ownership of every packet: it sends or drops each
    /// one and frees (or keeps, for zero-copy devices) its buffers.
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst;
    /// Pool buffers this queue holds (for `show buffers`).
    fn held_buffers(&self) -> usize {
        0
    }
    /// This queue as the patch's target, where its driver's receive queues can send to it
    /// directly (`RxQueue::rx_patch`).
    fn direct(&self) -> Option<DirectTx> {
        None
    }
}

/// An opened interface: one rx queue per worker that polls it, and one tx queue per worker
/// plus one for the main thread (TX = RX + 1, so no two threads share a tx queue).
pub struct DriverPorts {
    pub rx: Vec<Box<dyn RxQueue>>,
    pub tx: Vec<Box<dyn TxQueue>>,
    pub mtu: u32,
    /// Facts for `show interface`.
    pub details: Vec<(String, String)>,
    /// Device state to restore when the interface is closed (MTU, promiscuous mode): these
    /// values undo their change when dropped.
    pub restore: Vec<Box<dyn Send + Sync>>,
    /// State the driver changes while running (a memif peer that comes and goes).
    pub live: Option<std::sync::Arc<dyn LiveStatus>>,
    /// The device's own MAC address, where the driver knows one (a DPDK port's).
    pub mac: Option<[u8; 6]>,
}

/// What a driver knows now about its link: for `show interface` and `show hardware`.
pub trait LiveStatus: Send + Sync {
    fn link_up(&self) -> bool;
    fn details(&self) -> Vec<(String, String)>;
    /// The link state by name ("up", "down"; host devices also "lower-down", "deleted").
    fn link_state(&self) -> &'static str {
        if self.link_up() {
            "up"
        } else {
            "down"
        }
    }
    /// Counters of the link itself (changes, frames dropped because it was down).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// The device's own counters by the device's names (a DPDK port's extended statistics),
    /// for the metrics endpoint.
    fn device_counters(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// The host device, for drivers that sit on a Linux interface (af_packet, af_xdp): the
    /// link monitor keeps these current.
    fn host_link(self: std::sync::Arc<Self>) -> Option<std::sync::Arc<host_link::HostLink>> {
        None
    }
}

/// The transmit side of an interface that has none (a pcap interface without `tx-file`):
/// every packet is dropped and counted as a device error.
pub struct NoTx;

impl TxQueue for NoTx {
    fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
        bufs.free_all(pkts);
        TxBurst {
            errors: pkts.len(),
            ..TxBurst::default()
        }
    }
}
