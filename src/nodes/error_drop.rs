//! error-drop: frees dropped packets and counts them on their receive interface. The reason
//! was already counted by the node that dropped the packet.

use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::interface::Interface;
use std::sync::Arc;

pub struct ErrorDrop {
    interfaces: Vec<Arc<Interface>>,
}

impl ErrorDrop {
    pub fn decl(interfaces: Vec<Arc<Interface>>) -> NodeDecl {
        NodeDecl {
            name: super::ERROR_DROP.to_string(),
            kind: NodeKind::Drop,
            next: vec![],
            errors: vec![],
            node: Box::new(ErrorDrop { interfaces }),
        }
    }
}

impl Node for ErrorDrop {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        for &bi in frame {
            let rx = cx.bufs.meta(bi).rx_if as usize;
            if let Some(i) = self.interfaces.get(rx) {
                i.counters(cx.thread).drops.add(1);
            }
            cx.trace(bi, "drop");
            cx.bufs.free(bi);
        }
        frame.len()
    }
}
