//! l2-xconnect: everything received on an interface leaves by its cross-connected peer
//! (VPP's `set interface l2 xconnect`). The frame is not touched.

use crate::graph::names::{error_counters, next_nodes};
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::interface::SharedL2Modes;
use crate::nodes::{error_drop, interface_output};

pub const NAME: &str = "l2-xconnect";

next_nodes! {
    enum Next {
        InterfaceOutput = interface_output::NAME,
        Drop = error_drop::NAME,
    }
}

error_counters! {
    enum Error {
        NotConnected = "interface no longer cross-connected",
    }
}

pub struct L2Xconnect {
    modes: SharedL2Modes,
}

impl L2Xconnect {
    pub fn decl(modes: SharedL2Modes) -> NodeDecl {
        NodeDecl::internal(NAME, &Next::NAMES, &Error::REASONS, L2Xconnect { modes }).offload_safe()
    }
}

traced_loop_nodes!(L2Xconnect);

impl TracedLoop for L2Xconnect {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        for &bi in frame {
            let meta = cx.bufs.meta_mut(bi);
            let rx = meta.rx_if;
            let next = match modes.xconnect.get(rx as usize).copied().flatten() {
                Some(tx) => {
                    meta.tx_if = tx;
                    if TRACE {
                        cx.trace(bi, format_args!("rx if {rx} -> tx if {tx}"));
                    }
                    Next::InterfaceOutput
                }
                // The table changed between ethernet-input and here.
                None => {
                    cx.count_error(Error::NotConnected as usize, 1);
                    if TRACE {
                        cx.trace(
                            bi,
                            format_args!("rx if {rx}: drop, {}", Error::NotConnected.reason()),
                        );
                    }
                    Next::Drop
                }
            };
            cx.enqueue(next as usize, bi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::{frame_bytes, Harness};

    #[test]
    fn sets_tx_interface_from_table() {
        let h = Harness::new(2);
        h.set_xconnect(0, 1);
        let out = h.run_node(
            L2Xconnect::decl(h.modes.clone()),
            &vec![frame_bytes(64); 3],
            0,
        );
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 3);
        assert!(out.tx_ifs.iter().all(|&t| t == 1));
    }

    #[test]
    fn unconnected_interface_drops_with_reason() {
        let h = Harness::new(2);
        let out = h.run_node(L2Xconnect::decl(h.modes.clone()), &[frame_bytes(64)], 1);
        assert_eq!(out.to_next(Next::Drop as usize), 1);
        assert_eq!(out.errors, vec![1]);
    }
}
