//! l2-learn: notes where each bridged frame's source address is. A known address on the
//! same interface only has its age stamp refreshed; a new or moved one is sent to the
//! control thread, which updates the table (one batch per frame, never a lock here). A
//! worker sends an address at most once a second, so a busy unknown source costs one
//! message, not one per frame. Every frame goes on to l2-fwd.

use crate::graph::{NodeCx, NodeDecl, NodeKind, TracedLoop};
use crate::interface::SharedL2Modes;
use crate::l2::bridge::{L2Clock, MacLearn, MacLearnSender};
use crate::l2::fib::{key, L2FibReader};
use crate::wire::MacAddress;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Packets ahead whose table slot is prefetched.
const PREFETCH_AHEAD: usize = 16;

/// Addresses remembered as sent this second (direct-mapped; a collision only resends).
const RECENT_SLOTS: usize = 4096;

#[repr(usize)]
enum Next {
    L2Fwd,
}

pub struct L2Learn {
    modes: SharedL2Modes,
    fib: L2FibReader,
    clock: L2Clock,
    learns: MacLearnSender,
    lost: Arc<AtomicU64>,
    pending: Vec<MacLearn>,
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
        NodeDecl {
            name: super::L2_LEARN.to_string(),
            kind: NodeKind::Internal,
            next: vec![super::L2_FWD.to_string()],
            errors: Vec::new(),
            node: Box::new(L2Learn {
                modes,
                fib: parts.fib,
                clock: parts.clock,
                learns: parts.learns,
                lost: parts.lost,
                pending: Vec::new(),
                recent: vec![0; RECENT_SLOTS].into_boxed_slice(),
                recent_second: u32::MAX,
            }),
        }
    }

    /// Whether this (key, interface) was already sent this second; remembers it if not.
    fn sent_recently(&mut self, k: u64, interface: u32) -> bool {
        let tag = (k ^ (interface as u64) << 48 ^ 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let slot = &mut self.recent[(tag >> 52) as usize % RECENT_SLOTS];
        std::mem::replace(slot, tag) == tag
    }
}

impl TracedLoop for L2Learn {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        let table = self.fib.load();
        let now = self.clock.now();
        if now != self.recent_second {
            self.recent.fill(0);
            self.recent_second = now;
        }
        for (i, &bi) in frame.iter().enumerate() {
            if let Some(&ahead) = frame.get(i + PREFETCH_AHEAD) {
                let rx = cx.bufs.meta(ahead).rx_if;
                if let (Some((port, _)), Some(src)) =
                    (modes.bridge_port(rx), cx.bufs.data(ahead).get(6..12))
                {
                    table.prefetch(key(port.bd, src));
                }
            }
            let rx = cx.bufs.meta(bi).rx_if;
            // l2-fwd drops (and counts) frames whose interface left its bridge meanwhile.
            let Some((port, _)) = modes.bridge_port(rx) else {
                continue;
            };
            let Some(src) = cx.bufs.data(bi).get(6..12) else {
                continue;
            };
            if src[0] & 1 != 0 {
                // Group addresses are never sources to learn.
                continue;
            }
            let k = key(port.bd, src);
            let verdict = match table.lookup(k) {
                Some(h) if h.interface == rx => {
                    table.touch(h, now);
                    "known"
                }
                Some(h) if h.is_static => "static elsewhere, kept",
                found => {
                    if !self.sent_recently(k, rx) {
                        let mac = MacAddress::from_slice(src).unwrap_or_default();
                        self.pending.push(MacLearn {
                            bd: port.bd,
                            mac,
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
                let src = MacAddress::from_slice(src).unwrap_or_default();
                cx.trace(bi, format_args!("src {src}: {verdict}"));
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
