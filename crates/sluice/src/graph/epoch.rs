//! The forwarding epoch: a count of the control-plane changes that may change what the
//! graph decides for a packet. What a worker learns from the packets of one pass (the
//! cross-connect patch, `nodes::patch`) is valid for the epoch it read before the pass began,
//! and no longer once a change is published and the epoch bumped. The XDP fast path keeps an
//! epoch of its own in its BPF maps; `bump` moves both.

use std::sync::atomic::{AtomicU32, Ordering};

/// Starts at 1: 0 stands for "never" in what is stamped with an epoch.
static EPOCH: AtomicU32 = AtomicU32::new(1);

/// The current epoch.
#[inline(always)]
pub fn current() -> u32 {
    EPOCH.load(Ordering::SeqCst)
}

/// A change that may alter what the graph decides has been published: everything learnt
/// under an older epoch is stale.
pub fn bump() {
    // Never 0, even after four billion changes.
    if EPOCH.fetch_add(1, Ordering::SeqCst) == u32::MAX {
        EPOCH.store(1, Ordering::SeqCst);
    }
    crate::drivers::af_xdp::fastpath::bump();
}
