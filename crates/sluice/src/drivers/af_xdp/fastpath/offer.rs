//! The worker's side of the fast path: at the end of the output path (interface-output), a
//! packet that crossed only offload-safe nodes makes its flow a candidate for the installer.

use super::maps::{Key, RouteRewrite, Value};
use super::{Candidate, FastPath, REOFFER};
use crate::interface::Interface;
use crate::router::adjacency::{AdjKind, L3View};
use crate::router::neighbor_map::NO_SLOT;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

/// Flows remembered as offered at most (then forgotten all at once: offered again).
const REMEMBERED: usize = 2 * super::MAX_FLOWS as usize;

pub struct Offerer {
    fp: Arc<FastPath>,
    /// Flows offered lately: the epoch and when.
    offered: HashMap<Key, (u32, Instant)>,
}

/// A link that is down drops in the graph (counted); the kernel would drop silently.
fn down(i: &Interface) -> bool {
    i.live.as_ref().is_some_and(|l| !l.link_up())
}

impl Offerer {
    pub fn new(fp: Arc<FastPath>) -> Offerer {
        Offerer {
            fp,
            offered: HashMap::new(),
        }
    }

    /// Whether `key` was offered in `epoch` lately; if not, it is now.
    fn fresh(&mut self, key: Key, epoch: u32) -> bool {
        if let Some((e, when)) = self.offered.get(&key) {
            if *e == epoch && when.elapsed() < REOFFER {
                return false;
            }
        }
        if self.offered.len() >= REMEMBERED {
            self.offered.clear();
        }
        self.offered.insert(key, (epoch, Instant::now()));
        true
    }

    /// A packet received on `rx` leaves unchanged by `tx` (a cross-connect), decided in a
    /// pass of epoch `epoch`: offer the flow, unless offered in this epoch lately. Both
    /// interfaces need the fast path, and `tx` an MTU that takes whatever `rx` receives
    /// (the kernel would drop a longer frame where sluice counts it).
    pub fn cross_connect(&mut self, rx: &Interface, tx: &Interface, epoch: u32) {
        let (Some(rx_port), Some(tx_port)) = (rx.fast_path, tx.fast_path) else {
            return;
        };
        if rx.mtu > tx.mtu || epoch == 0 || down(tx) || self.fp.backed_off.get(tx_port.slot.into())
        {
            return;
        }
        let key = Key::xconnect(rx_port.ifindex);
        if !self.fresh(key, epoch) {
            return;
        }
        let value = Value::between(epoch, rx_port, tx_port, None);
        self.fp.offer(Candidate {
            key,
            value,
            rx_if: rx.index,
            adj: u32::MAX,
        });
    }

    /// A packet received on `rx` was routed by adjacency `adj` of `view` and leaves by `tx`
    /// as `frame` (rewritten: the next hop's Ethernet header, untagged, then IPv4), decided
    /// in a pass of epoch `epoch`: offer its destination from `rx`. The entry carries what
    /// ip4-rewrite did (the header) and what it checked (the MTU; the TTL and the rest the
    /// program checks itself).
    pub fn route(
        &mut self,
        rx: &Interface,
        tx: &Interface,
        view: &L3View,
        adj: u32,
        frame: &[u8],
        epoch: u32,
    ) {
        let (Some(rx_port), Some(tx_port)) = (rx.fast_path, tx.fast_path) else {
            return;
        };
        let backed_off = self.fp.backed_off.get(tx_port.slot.into());
        if epoch == 0 || down(tx) || backed_off || frame.len() < 34 || frame[12..14] != [0x08, 0x00]
        {
            return;
        }
        let a = view.adj(adj);
        if !matches!(a.kind, AdjKind::Neighbor | AdjKind::Glean) || a.interface != tx.index {
            return;
        }
        // The MAC ethernet-input takes routed frames for (the program checks it).
        let Some(in_mac) = view.interface(rx.index).map(|i| i.mac.0) else {
            return;
        };
        let dst: [u8; 4] = frame[30..34].try_into().unwrap_or_default();
        let key = Key::route4(rx_port.ifindex, dst);
        if !self.fresh(key, epoch) {
            return;
        }
        let use_slot = if a.kind == AdjKind::Neighbor && a.complete {
            a.slot
        } else {
            let on_link = IpAddr::V4(Ipv4Addr::from(dst));
            view.neighbors
                .get(&(a.interface, on_link))
                .map_or(NO_SLOT, |n| n.slot)
        };
        // MTU 0: the control plane set none; the interface's is the limit then.
        let mtu = if a.mtu == 0 {
            tx.mtu
        } else {
            a.mtu.min(tx.mtu)
        };
        let mac = |at: usize| -> [u8; 6] { frame[at..at + 6].try_into().unwrap_or_default() };
        let route = RouteRewrite {
            dst_mac: mac(0),
            src_mac: mac(6),
            max_len: (mtu + 14).min(u16::MAX as u32) as u16,
            in_mac,
            use_slot,
        };
        self.fp.offer(Candidate {
            key,
            value: Value::between(epoch, rx_port, tx_port, Some(route)),
            rx_if: rx.index,
            adj,
        });
    }
}
