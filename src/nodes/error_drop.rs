//! error-drop: frees dropped packets and counts them on their receive interface. The reason
//! was already counted by the node that dropped the packet.

use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::interface::Interface;
use crate::subif::SharedSubIfs;
use std::sync::Arc;

pub struct ErrorDrop {
    interfaces: Vec<Arc<Interface>>,
    subifs: SharedSubIfs,
}

impl ErrorDrop {
    pub fn decl(interfaces: Vec<Arc<Interface>>, subifs: SharedSubIfs) -> NodeDecl {
        NodeDecl::new(
            super::ERROR_DROP,
            NodeKind::Drop,
            &[],
            &[],
            ErrorDrop { interfaces, subifs },
        )
    }
}

impl Node for ErrorDrop {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let subifs = self.subifs.load();
        for &bi in frame {
            let rx = cx.bufs.meta(bi).rx_if;
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
