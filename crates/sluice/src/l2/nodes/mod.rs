//! Layer 2's graph nodes: the cross-connect, and the bridge: l2-learn, l2-fwd, l2-flood,
//! l2-arp-term (ethernet-input, which feeds them and the IP nodes, is `ethernet/`).

pub mod arp_term;
pub mod flood;
pub mod fwd;
pub mod learn;
#[cfg(test)]
mod offload_tests;
pub mod xconnect;

use crate::buffer::WorkerBuffers;
use crate::interface::L2Modes;
use crate::l2::fib::{key, L2Fib};
use std::ops::Range;

/// Packets ahead whose bridge table slot is prefetched.
const PREFETCH_AHEAD: usize = 16;

/// A frame's bridge table keys (l2-learn's sources, l2-fwd's destinations), read from the
/// headers first, while they are in cache, so that the lookups that follow can prefetch;
/// reused between frames.
pub(crate) struct FrameKeys(Vec<u64>);

impl FrameKeys {
    pub fn new() -> FrameKeys {
        FrameKeys(Vec::with_capacity(256))
    }

    /// Each packet's key: the address at `mac` of its frame (`0..6` the destination, `6..12`
    /// the source) in the bridge domain of the port it came in by, when `wanted(address,
    /// frame)`; else 0, nothing to look up.
    #[inline(always)]
    pub fn read(
        &mut self,
        bufs: &WorkerBuffers,
        frame: &[u32],
        modes: &L2Modes,
        mac: Range<usize>,
        wanted: impl Fn(&[u8], &[u8]) -> bool,
    ) {
        self.0.clear();
        for &bi in frame {
            let (meta, data) = bufs.meta_data(bi);
            let k = match (modes.bridge_port(meta.rx_if), data.get(mac.clone())) {
                (Some((port, _)), Some(addr)) if wanted(addr, data) => key(port.bd, addr),
                _ => 0,
            };
            self.0.push(k);
        }
    }

    /// Packet `i`'s key, once the table slot of the key `PREFETCH_AHEAD` later is prefetched.
    #[inline(always)]
    pub fn get(&self, i: usize, table: &L2Fib) -> u64 {
        if let Some(&ahead) = self.0.get(i + PREFETCH_AHEAD) {
            table.prefetch(ahead);
        }
        self.0[i]
    }
}
