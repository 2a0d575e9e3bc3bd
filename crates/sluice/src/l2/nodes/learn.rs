//! l2-learn: notes where each bridged frame's source address is. A known address on the
//! same interface only has its age stamp refreshed; a new or moved one is sent to the
//! control thread, which updates the table (one batch per frame, never a lock here). A
//! worker sends an address at most once a second, so a busy unknown source costs one
//! message, not one per frame. Every frame goes on to l2-fwd.

use crate::buffer::FLAG_OFFLOAD;
use crate::graph::names::next_nodes;
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::interface::SharedL2Modes;
use crate::l2::bridge::{L2Clock, MacLearn, MacLearnSender};
use crate::l2::fib::{key_mac, L2FibReader};
use crate::l2::nodes::{fwd, FrameKeys};
use crate::l2::reserved::{learns_from, valid_source};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub const NAME: &str = "l2-learn";

/// Addresses remembered as sent this second (direct-mapped; a collision only resends).
const RECENT_SLOTS: usize = 4096;

next_nodes! {
    enum Next {
        L2Fwd = fwd::NAME,
    }
}

pub struct L2Learn {
    modes: SharedL2Modes,
    fib: L2FibReader,
    clock: L2Clock,
    learns: MacLearnSender,
    lost: Arc<AtomicU64>,
    pending: Vec<MacLearn>,
    /// The frame's source keys.
    keys: FrameKeys,
    /// Tags of (address, interface) sent during `recent_second`.
    recent: Box<[u64]>,
    recent_second: u32,
}

/// What the learn node needs from the bridges.
pub struct LearnParts {
    pub fib: L2FibReader,
    pub clock: L2Clock,
    pub learns: MacLearnSender,
    /// Batches dropped because the control thread's queue was full.
    pub lost: Arc<AtomicU64>,
}

impl L2Learn {
    pub fn decl(modes: SharedL2Modes, parts: LearnParts) -> NodeDecl {
        NodeDecl::internal(
            NAME,
            &Next::NAMES,
            &[],
            L2Learn {
                modes,
                fib: parts.fib,
                clock: parts.clock,
                learns: parts.learns,
                lost: parts.lost,
                pending: Vec::new(),
                keys: FrameKeys::new(),
                recent: vec![0; RECENT_SLOTS].into_boxed_slice(),
                recent_second: u32::MAX,
            },
        )
        // Offload-safe for the frames it says so of: it clears the others' mark itself.
        .offload_safe()
    }

    /// Whether this (key, interface) was already sent this second; remembers it if not.
    fn sent_recently(&mut self, k: u64, interface: u32) -> bool {
        let tag = (k ^ (interface as u64) << 48 ^ 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let slot = &mut self.recent[(tag >> 52) as usize % RECENT_SLOTS];
        std::mem::replace(slot, tag) == tag
    }
}

traced_loop_nodes!(L2Learn);

impl TracedLoop for L2Learn {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        let table = self.fib.load();
        let now = self.clock.now();
        if now != self.recent_second {
            self.recent.fill(0);
            self.recent_second = now;
        }
        // First each frame's key (the headers are in cache): the lookups then prefetch from
        // these. 0: nothing to learn — the interface left its bridge meanwhile, or the source
        // is a group or the all-zero address (l2-fwd drops and counts both), or the frame is
        // a PAUSE (IEEE 802.1D: never learnt, as in Linux).
        let learnt = |src: &[u8], frame: &[u8]| valid_source(src) && learns_from(frame);
        self.keys.read(cx.bufs, frame, &modes, 6..12, learnt);
        for (i, &bi) in frame.iter().enumerate() {
            let k = self.keys.get(i, &table);
            // Only a frame from a source learnt where it came in may be the fast path's:
            // XDP learns nothing.
            let meta = cx.bufs.meta_mut(bi);
            let marked = meta.flags & FLAG_OFFLOAD != 0;
            meta.flags &= !FLAG_OFFLOAD;
            if k == 0 {
                continue;
            }
            let rx = meta.rx_if;
            let verdict = match table.lookup(k) {
                Some(h) if h.interface == rx => {
                    table.touch(h, now);
                    if marked {
                        meta.flags |= FLAG_OFFLOAD;
                    }
                    "known"
                }
                Some(h) if h.is_static => "static elsewhere, kept",
                found => {
                    if !self.sent_recently(k, rx) {
                        self.pending.push(MacLearn {
                            bd: ((k >> 48) - 1) as u16,
                            mac: key_mac(k),
                            interface: rx,
                        });
                    }
                    if found.is_some() {
                        "moved, sent to the learner"
                    } else {
                        "new, sent to the learner"
                    }
                }
            };
            if TRACE {
                cx.trace(bi, format_args!("src {}: {verdict}", key_mac(k)));
            }
        }
        if !self.pending.is_empty() {
            let batch = std::mem::take(&mut self.pending);
            if self.learns.try_send(batch).is_err() {
                self.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
        cx.enqueue_all(Next::L2Fwd as usize, frame);
    }
}
