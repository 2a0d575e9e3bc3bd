//! The cross-connect patch on DPDK ports (`nodes::patch` decides when it applies): a frame
//! that a cross-connect would send out as it came in goes from one port's receive burst to
//! the other port's transmit burst as the mbuf the PMD gave, never becoming a graph buffer.
//! It stays lent to DPDK all the way (its owner tag is never touched and `show buffers`
//! counts it in the driver rings), as it would in testpmd's io forwarding.

use super::ffi;
use super::port::Port;
use super::queues::BURST;
use crate::drivers::{DirectTx, TxBurst};
use std::sync::{Arc, Mutex};

/// A DPDK transmit queue as the patch's target (`TxQueue::direct`).
pub struct PatchTx {
    pub port: Arc<Port>,
    pub q: u16,
    /// Held while sending when other threads share this DPDK queue.
    pub shared: Option<Arc<Mutex<()>>>,
    /// The largest frame the port sends: longer frames go to the graph, which drops them.
    pub max_frame: usize,
}

impl PatchTx {
    /// `to` as a DPDK queue, if it is one.
    pub fn of(to: &DirectTx) -> Option<&PatchTx> {
        to.downcast_ref::<PatchTx>()
    }
}

/// The frames one receive kept back for the patch: mbuf addresses (kept as integers, so the
/// queue stays `Send`; only the shim reads them) and their lengths.
pub struct Held {
    pub mbufs: Vec<usize>,
    pub len: Vec<u16>,
    pub count: usize,
}

impl Held {
    pub fn new() -> Held {
        Held {
            mbufs: vec![0; BURST],
            len: vec![0; BURST],
            count: 0,
        }
    }

    /// Send the held frames on `to`; the port frees what it does not take, counted as a full
    /// queue.
    pub fn send(&mut self, to: &PatchTx) -> TxBurst {
        let n = std::mem::take(&mut self.count);
        if n == 0 {
            return TxBurst::default();
        }
        let _one_at_a_time = to
            .shared
            .as_ref()
            .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()));
        // SAFETY: `mbufs[..n]` are mbufs the port's last receive gave and nothing since has
        // sent or freed (`count` was set by that receive and is taken here, once); the shim
        // sends them or frees what the port refuses, so none is used again. The port is open
        // while `to` holds its `Arc`.
        let sent =
            unsafe { ffi::sd_patch_tx(to.port.id, to.q, self.mbufs.as_mut_ptr().cast(), n as u16) }
                as usize;
        TxBurst {
            sent,
            bytes: self.len[..sent].iter().map(|&l| l as u64).sum(),
            queue_full: n - sent,
            ..TxBurst::default()
        }
    }
}
