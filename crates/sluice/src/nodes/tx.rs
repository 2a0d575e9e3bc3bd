//! An interface's tx node (`IF-tx`): hands a frame to the driver's tx queue of this thread
//! and counts what was sent and what the driver had to drop, by reason.

use crate::dataplane::pcap_trace::{self, PcapTrace};
use crate::drivers::TxQueue;
use crate::graph::names::error_counters;
use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::interface::Interface;
use std::sync::Arc;

error_counters! {
    enum Error {
        QueueFull = "transmit queue full",
        DeviceRefused = "transmit error from the device",
        TooLong = "packet larger than the interface MTU",
        LinkDown = "link down or device gone",
        PeerFull = "peer had no room (its receiver is behind)",
        WrongFormat = "frame refused by the kernel's transmit ring (wrong format)",
    }
}

pub struct TxNode {
    interface: Arc<Interface>,
    queue: Box<dyn TxQueue>,
    /// `pcap trace tx`.
    capture: Option<Arc<PcapTrace>>,
}

impl TxNode {
    pub fn decl(interface: Arc<Interface>, queue: Box<dyn TxQueue>) -> NodeDecl {
        Self::decl_captured(interface, queue, None)
    }

    /// The same, with what it sends captured while `pcap trace tx` runs.
    pub fn decl_captured(
        interface: Arc<Interface>,
        queue: Box<dyn TxQueue>,
        capture: Option<Arc<PcapTrace>>,
    ) -> NodeDecl {
        NodeDecl::new(
            &super::tx_node_name(&interface.name),
            NodeKind::Output,
            &[],
            &Error::REASONS,
            TxNode {
                interface,
                queue,
                capture,
            },
        )
        .offload_safe()
    }
}

impl Node for TxNode {
    fn held_buffers(&self) -> usize {
        self.queue.held_buffers()
    }

    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        if cx.tracing() {
            for &bi in frame {
                let len = cx.bufs.packet_len(bi);
                cx.trace(bi, format_args!("{} len {len}", self.interface.name));
            }
        }
        if let Some(t) = &self.capture {
            if t.wants(pcap_trace::TX, self.interface.index) {
                let mut capture = t.worker(cx.thread);
                for &bi in frame {
                    capture.take(cx.bufs, bi);
                }
            }
        }
        let r = self.queue.tx_burst(cx.bufs, frame);
        let c = self.interface.counters(cx.thread);
        c.tx_packets.add(r.sent as u64);
        c.tx_bytes.add(r.bytes);
        let failed =
            r.queue_full + r.errors + r.too_long + r.link_down + r.peer_full + r.wrong_format;
        if failed > 0 {
            c.tx_errors.add(failed as u64);
            c.tx_peer_full.add(r.peer_full as u64);
            cx.count_error(Error::PeerFull as usize, r.peer_full as u64);
            cx.count_error(Error::QueueFull as usize, r.queue_full as u64);
            cx.count_error(Error::DeviceRefused as usize, r.errors as u64);
            cx.count_error(Error::TooLong as usize, r.too_long as u64);
            cx.count_error(Error::LinkDown as usize, r.link_down as u64);
            cx.count_error(Error::WrongFormat as usize, r.wrong_format as u64);
        }
        debug_assert_eq!(r.sent + failed, frame.len(), "tx queue lost packets");
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::WorkerBuffers;
    use crate::drivers::TxBurst;
    use crate::nodes::testing::{frame_bytes, Harness};

    /// A queue whose kernel refuses every other frame as malformed (a transmit ring's
    /// TP_STATUS_WRONG_FORMAT).
    struct HalfWrongFormat;

    impl TxQueue for HalfWrongFormat {
        fn tx_burst(&mut self, bufs: &mut WorkerBuffers, pkts: &[u32]) -> TxBurst {
            bufs.free_all(pkts);
            let wrong = pkts.len() / 2;
            TxBurst {
                sent: pkts.len() - wrong,
                wrong_format: wrong,
                ..TxBurst::default()
            }
        }
    }

    #[test]
    fn wrong_format_frames_are_tx_errors_under_their_own_reason() {
        let h = Harness::new(1);
        let itf = h.interfaces[0].clone();
        let decl = TxNode::decl(itf.clone(), Box::new(HalfWrongFormat));
        let out = h.run_node(decl, &vec![frame_bytes(64); 4], 0);
        out.assert_counted(&[(Error::WrongFormat, 2)]);
        let t = itf.totals();
        assert_eq!((t.tx_packets, t.tx_errors), (2, 2));
    }
}
