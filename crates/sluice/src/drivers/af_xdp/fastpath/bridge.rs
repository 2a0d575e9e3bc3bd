//! Bridged flows in the fast path: an entry carries the frames one ingress receives from
//! one learnt source address to one learnt destination (l2-learn found the source where it
//! was, l2-fwd the destination behind another member). The MAC table stays the graph's:
//! each second the installer refreshes the age of the sources whose entries carried frames
//! (as l2-learn does for the frames it sees), and a move or an age-out there bumps the
//! epoch (`Bridges::learn`, `Bridges::age`), which makes every entry stale.

use crate::l2::bridge::L2Clock;
use crate::l2::fib::L2FibReader;

/// A bridge's learnt source address as an entry knows it: its MAC table key (domain and
/// address) and the interface (sluice's index) it was learnt on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacRef {
    pub key: u64,
    pub interface: u32,
}

/// The bridges' MAC table, read as the workers read it.
#[derive(Clone)]
pub struct MacTable {
    pub fib: L2FibReader,
    pub clock: L2Clock,
}

impl MacTable {
    /// Frames from `m` went through the fast path lately: its age starts again, if it is
    /// still learnt where the entry says.
    pub fn touch(&self, m: &MacRef) {
        let table = self.fib.load();
        if let Some(hit) = table.lookup(m.key).filter(|h| h.interface == m.interface) {
            table.touch(hit, self.clock.now());
        }
    }
}

impl super::FastPath {
    /// The bridges whose flows are offloaded (one set per process, as the fast path).
    pub fn set_macs(&self, macs: MacTable) {
        *self.macs.lock().unwrap_or_else(|p| p.into_inner()) = Some(macs);
    }
}
