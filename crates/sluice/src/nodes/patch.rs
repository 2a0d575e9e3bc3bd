//! The cross-connect patch (`l2-patch`), as VPP's l2-patch and testpmd's io forwarding do it:
//! a frame received on an interface cross-connected to another, that the graph would send
//! out unchanged, goes from the receive burst straight to the other interface's transmit
//! queue, where both drivers can (DPDK ports: `RxQueue::rx_patch`, `TxQueue::direct`).
//!
//! The graph decides, not a rule of its own: the input node marks the packets of an
//! interface with a patch slot `FLAG_OFFLOAD`, every node that is not offload-safe clears the
//! mark (an ACL, any feature), and interface-output, seeing a marked cross-connected frame
//! leave untouched, offers the patch for the forwarding epoch its pass began in. The input
//! node uses it while the epoch lasts: any change a command makes bumps it (`graph::epoch`),
//! and the next frame through the graph offers it again if it still holds. Per frame, the
//! driver sends to the graph what a cross-connect would not send as it is (runts it pads,
//! frames longer than the egress sends, VLAN-tagged frames, chains), and with it the rest of
//! its burst, so that frames leave in the order they came; a trace, a pcap capture or a
//! worker handoff on the interface turns the patch off. The transmit's clocks, packets
//! and full-queue drops are this node's in `show runtime`, though it runs inside the input
//! node.

use crate::graph::names::error_counters;
use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use std::sync::atomic::{AtomicU64, Ordering};

pub const NAME: &str = "l2-patch";

error_counters! {
    pub enum Error {
        QueueFull = "transmit queue full",
    }
}

/// An interface's patch, as interface-output last offered it: the egress interface and the
/// epoch of the offer, in one word (epoch 0: none).
#[derive(Debug, Default)]
pub struct PatchSlot(AtomicU64);

impl PatchSlot {
    /// Frames of this interface may go straight to interface `tx` while `epoch` lasts. Written
    /// only when it changes, so the line stays shared between the workers that read it.
    #[inline(always)]
    pub fn offer(&self, tx: u32, epoch: u32) {
        let v = (epoch as u64) << 32 | tx as u64;
        if epoch != 0 && self.0.load(Ordering::Relaxed) != v {
            self.0.store(v, Ordering::Relaxed);
        }
    }

    /// The egress interface, if the patch was offered in epoch `now`.
    #[inline(always)]
    pub fn target(&self, now: u32) -> Option<u32> {
        let v = self.0.load(Ordering::Relaxed);
        ((v >> 32) as u32 == now && now != 0).then_some(v as u32)
    }
}

/// The node the patch's transmits are counted under. No frame is ever enqueued to it (its
/// work runs inside the input node); one that were would be freed.
pub struct L2Patch;

impl L2Patch {
    pub fn decl() -> NodeDecl {
        NodeDecl::new(NAME, NodeKind::Output, &[], &Error::REASONS, L2Patch).offload_safe()
    }
}

impl Node for L2Patch {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        cx.bufs.free_all(frame);
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_holds_for_the_epoch_it_was_offered_in_only() {
        let s = PatchSlot::default();
        assert_eq!(s.target(1), None);
        s.offer(7, 3);
        assert_eq!(s.target(3), Some(7));
        assert_eq!(s.target(4), None);
        s.offer(9, 0);
        assert_eq!(s.target(3), Some(7), "an offer of no epoch changes nothing");
        s.offer(9, 4);
        assert_eq!((s.target(3), s.target(4)), (None, Some(9)));
    }
}
