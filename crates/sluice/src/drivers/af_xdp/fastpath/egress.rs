//! Egresses that drop what XDP redirects to them. A frame the program redirects is counted
//! sent, but the kernel may still drop it: a veth whose peer is not in NAPI mode (no XDP
//! program, GRO off) drops every frame redirected into it, and on Linux 6.18 counts it
//! nowhere (not tx_dropped, not the veth's XDP counters). What the kernel does count is the
//! frames it sent: the device's tx_packets. The installer compares, for each fast-path
//! interface, what the program redirected to it with what the kernel sent on it (which also
//! holds what the graph sent); when the program sent more, the difference was lost: it is
//! counted, and the interface stops being an egress of the fast path for `BACKOFF` (its
//! entries removed, no new ones), so its flows go back to the graph and the socket, which
//! deliver them. Then it is tried again.

use super::maps::Maps;
use crate::sys::rtnetlink::get_link;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long an egress that lost redirected frames is not used.
pub const BACKOFF: Duration = Duration::from_secs(10);
/// How often the installer reads the counters.
pub const EVERY: Duration = Duration::from_millis(100);
/// Redirected frames the kernel may not have counted yet when the counters are read (it
/// counts at the end of a receive poll): a loss below this is not believed.
const SLACK: u64 = 64;

/// One bit per devmap slot: set while the slot is backed off (read by the workers).
#[derive(Default)]
pub struct Refused([AtomicU64; 4]);

impl Refused {
    pub fn get(&self, slot: u32) -> bool {
        let (w, b) = ((slot / 64) as usize, slot % 64);
        self.0
            .get(w)
            .is_some_and(|x| x.load(Ordering::Relaxed) & (1 << b) != 0)
    }

    fn set(&self, slot: u32, on: bool) {
        let (w, b) = ((slot / 64) as usize, slot % 64);
        if let Some(x) = self.0.get(w) {
            if on {
                x.fetch_or(1 << b, Ordering::Relaxed);
            } else {
                x.fetch_and(!(1 << b), Ordering::Relaxed);
            }
        }
    }
}

/// What the installer last saw of one slot's interface.
#[derive(Clone, Copy, Default)]
struct Seen {
    kernel_tx: u64,
    xdp_tx: u64,
    until: Option<Instant>,
    /// Looked at once: the counters are a baseline.
    known: bool,
}

#[derive(Default)]
pub struct EgressWatch {
    seen: Vec<Seen>,
    last: Option<Instant>,
}

/// What one look found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Slots newly backed off.
    pub backed_off: Vec<u32>,
    /// Redirected frames the kernel did not send (at least).
    pub lost: u64,
}

impl EgressWatch {
    /// Look at every slot (ifindex by slot in `ports`) if `EVERY` has passed.
    pub fn check(&mut self, maps: &Maps, ports: &[u32], refused: &Refused) -> Found {
        let now = Instant::now();
        let mut found = Found::default();
        if self.last.is_some_and(|t| now.duration_since(t) < EVERY) {
            return found;
        }
        self.last = Some(now);
        self.seen.resize(ports.len(), Seen::default());
        for (slot, (&ifindex, seen)) in ports.iter().zip(self.seen.iter_mut()).enumerate() {
            let slot = slot as u32;
            // The program's count first: a frame it counts the kernel counts later.
            let xdp_tx = maps.interface_counts(slot).tx_packets;
            let Some(kernel_tx) = get_link(ifindex).ok().flatten().and_then(|l| l.tx_packets)
            else {
                continue;
            };
            let sent = xdp_tx.saturating_sub(seen.xdp_tx);
            let counted = kernel_tx.saturating_sub(seen.kernel_tx);
            let lost = sent.saturating_sub(counted);
            let first = !seen.known;
            *seen = Seen {
                kernel_tx,
                xdp_tx,
                until: seen.until,
                known: true,
            };
            if !first && lost > SLACK + sent / 16 {
                found.lost += lost;
                if seen.until.is_none() {
                    found.backed_off.push(slot);
                }
                seen.until = Some(now + BACKOFF);
                refused.set(slot, true);
            } else if seen.until.is_some_and(|t| now >= t) {
                seen.until = None;
                refused.set(slot, false);
            }
        }
        found
    }
}
