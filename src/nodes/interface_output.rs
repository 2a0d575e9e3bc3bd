//! interface-output: sends each packet to the tx node of the interface a forwarding node
//! chose (`tx_if`), or drops it when that interface is down or unknown.

use crate::graph::{NodeCx, NodeDecl, NodeKind, TracedLoop};
use crate::interface::Interface;
use std::sync::Arc;

#[repr(usize)]
enum Error {
    InterfaceDown,
    NoInterface,
}
const ERRORS: [&str; 2] = ["output interface is down", "no such output interface"];

/// Next slots: one per interface, in interface index order, then the drop node.
pub struct InterfaceOutput {
    interfaces: Vec<Arc<Interface>>,
}

impl InterfaceOutput {
    pub fn decl(interfaces: Vec<Arc<Interface>>) -> NodeDecl {
        let mut next: Vec<String> = interfaces
            .iter()
            .map(|i| super::tx_node_name(&i.name))
            .collect();
        next.push(super::ERROR_DROP.to_string());
        NodeDecl {
            name: super::INTERFACE_OUTPUT.to_string(),
            kind: NodeKind::Internal,
            next,
            errors: ERRORS.to_vec(),
            node: Box::new(InterfaceOutput { interfaces }),
        }
    }
}

impl TracedLoop for InterfaceOutput {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let drop = self.interfaces.len();
        for &bi in frame {
            let tx = cx.bufs.meta(bi).tx_if as usize;
            let next = match self.interfaces.get(tx) {
                Some(i) if i.is_up() => tx,
                Some(_) => {
                    cx.count_error(Error::InterfaceDown as usize, 1);
                    drop
                }
                None => {
                    cx.count_error(Error::NoInterface as usize, 1);
                    drop
                }
            };
            if TRACE {
                match self.interfaces.get(tx) {
                    Some(i) if next != drop => cx.trace(bi, &i.name),
                    _ => cx.trace(bi, format_args!("drop: tx if {tx} down or unknown")),
                }
            }
            cx.enqueue(next, bi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::{frame_bytes, Harness};

    #[test]
    fn routes_by_tx_interface_and_drops_when_down() {
        let h = Harness::new(2);
        h.interfaces[1].set_up(false);
        let pkts = [frame_bytes(64), frame_bytes(64)];
        let out = h.run_node_with(
            InterfaceOutput::decl(h.interfaces.clone()),
            &pkts,
            0,
            |m, k| m.tx_if = k as u32,
        );
        assert_eq!(out.to_next(0), 1);
        assert_eq!(out.to_next(2), 1);
        assert_eq!(out.errors[Error::InterfaceDown as usize], 1);
    }
}
