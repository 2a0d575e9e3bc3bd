//! error-drop: frees dropped packets and counts them on their receive interface. The reason
//! was already counted by the node that dropped the packet.

use crate::dataplane::pcap_trace::{self, PcapTrace};
use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::interface::Interface;
use crate::subif::SharedSubIfs;
use std::sync::Arc;

pub const NAME: &str = "error-drop";

pub struct ErrorDrop {
    interfaces: Vec<Arc<Interface>>,
    subifs: SharedSubIfs,
    /// `pcap trace drop`.
    capture: Option<Arc<PcapTrace>>,
}

impl ErrorDrop {
    pub fn decl(interfaces: Vec<Arc<Interface>>, subifs: SharedSubIfs) -> NodeDecl {
        Self::decl_captured(interfaces, subifs, None)
    }

    /// The same, with what it drops captured while `pcap trace drop` runs.
    pub fn decl_captured(
        interfaces: Vec<Arc<Interface>>,
        subifs: SharedSubIfs,
        capture: Option<Arc<PcapTrace>>,
    ) -> NodeDecl {
        NodeDecl::new(
            NAME,
            NodeKind::Drop,
            &[],
            &[],
            ErrorDrop {
                interfaces,
                subifs,
                capture,
            },
        )
    }
}

impl Node for ErrorDrop {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let subifs = self.subifs.load();
        let capture = self.capture.as_ref().filter(|t| t.any(pcap_trace::DROP));
        // This worker's capture buffer, taken once for the frame.
        let mut taker = capture.map(|t| (t, t.worker(cx.thread)));
        for &bi in frame {
            let rx = cx.bufs.meta(bi).rx_if;
            if let Some((t, taker)) = &mut taker {
                if t.wants(pcap_trace::DROP, rx) {
                    taker.take(cx.bufs, bi);
                }
            }
            let counted = match self.interfaces.get(rx as usize) {
                Some(i) => Some(i),
                None => subifs.get(rx).map(|s| &s.interface),
            };
            if let Some(i) = counted {
                i.counters(cx.thread).drops.add(1);
            }
            cx.trace(bi, "drop");
            cx.bufs.free(bi);
        }
        frame.len()
    }
}
