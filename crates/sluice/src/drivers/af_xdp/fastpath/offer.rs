//! The worker's side of the fast path: at the end of the output path (interface-output), a
//! packet that crossed only offload-safe nodes makes its flow a candidate for the installer.

use super::maps::{Key, Value};
use super::{Candidate, FastPath, REOFFER};
use crate::interface::Interface;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

pub struct Offerer {
    fp: Arc<FastPath>,
    /// Flows offered lately, by ingress ifindex: the epoch and when.
    offered: HashMap<u32, (u32, Instant)>,
}

impl Offerer {
    pub fn new(fp: Arc<FastPath>) -> Offerer {
        Offerer {
            fp,
            offered: HashMap::new(),
        }
    }

    /// A packet received on `rx` leaves unchanged by `tx` (a cross-connect), decided in a
    /// pass of epoch `epoch`: offer the flow, unless offered in this epoch lately. Both
    /// interfaces need the fast path, and `tx` an MTU that takes whatever `rx` receives
    /// (the kernel would drop a longer frame where sluice counts it).
    pub fn cross_connect(&mut self, rx: &Interface, tx: &Interface, epoch: u32) {
        let (Some(rx_port), Some(tx_port)) = (rx.fast_path, tx.fast_path) else {
            return;
        };
        // A link that is down drops in the graph (counted); the kernel would drop silently.
        let down = |i: &Interface| i.live.as_ref().is_some_and(|l| !l.link_up());
        if rx.mtu > tx.mtu || epoch == 0 || down(tx) {
            return;
        }
        if let Some((e, when)) = self.offered.get(&rx_port.ifindex) {
            if *e == epoch && when.elapsed() < REOFFER {
                return;
            }
        }
        self.offered
            .insert(rx_port.ifindex, (epoch, Instant::now()));
        self.fp.offer(Candidate {
            key: Key::xconnect(rx_port.ifindex),
            value: Value {
                epoch,
                out_slot: tx_port.slot as u32,
                in_stat: rx_port.slot,
                out_stat: tx_port.slot,
                last_ns: 0,
                route: None,
            },
        });
    }
}
