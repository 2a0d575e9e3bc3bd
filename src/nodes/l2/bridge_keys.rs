//! The bridge-table keys of a frame's packets, shared by l2-learn (source addresses) and
//! l2-fwd (destinations). They are gathered first, while the headers are in cache, so that
//! the lookups can prefetch the table slot of the packet `PREFETCH_AHEAD` places on: a
//! table larger than the cache then costs one miss per frame, not one per packet.

use crate::buffer::WorkerBuffers;
use crate::interface::L2Modes;
use crate::l2::fib::{key, L2Fib};

/// Packets ahead whose table slot is prefetched.
const PREFETCH_AHEAD: usize = 16;

/// One key per packet of the frame, 0 where there is nothing to look up; reused between
/// frames.
pub struct BridgeKeys {
    keys: Vec<u64>,
}

impl Default for BridgeKeys {
    fn default() -> BridgeKeys {
        BridgeKeys {
            keys: Vec::with_capacity(256),
        }
    }
}

impl BridgeKeys {
    /// Gather the keys of `frame`: `address` picks from a packet's bytes the MAC to look up
    /// (none: nothing to look up), keyed in the bridge domain of the port it came in by.
    /// Takes each packet's metadata and bytes with one buffer access.
    #[inline(always)]
    pub fn gather(
        &mut self,
        bufs: &WorkerBuffers,
        modes: &L2Modes,
        frame: &[u32],
        address: impl Fn(&[u8]) -> Option<&[u8]>,
    ) {
        self.keys.clear();
        for &bi in frame {
            let (meta, data) = bufs.meta_data(bi);
            let k = match (modes.bridge_port(meta.rx_if), address(data)) {
                (Some((port, _)), Some(mac)) => key(port.bd, mac),
                _ => 0,
            };
            self.keys.push(k);
        }
    }

    /// The key of the frame's packet `i`, prefetching the table slot of the one
    /// `PREFETCH_AHEAD` places on.
    #[inline(always)]
    pub fn next(&self, i: usize, table: &L2Fib) -> u64 {
        if let Some(&ahead) = self.keys.get(i + PREFETCH_AHEAD) {
            table.prefetch(ahead);
        }
        self.keys[i]
    }
}
