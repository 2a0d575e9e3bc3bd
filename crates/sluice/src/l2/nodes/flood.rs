//! l2-flood: sends a frame to every member of its bridge domain but the one it came in by
//! and those in the input's split-horizon group: a copy to each but the last, which gets the
//! frame itself. A copy the pool has no buffer for is counted, never silently missing.

use crate::ethernet::input as ethernet_input;
use crate::graph::names::{error_counters, next_nodes};
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::interface::SharedL2Modes;
use crate::nodes::{error_drop, interface_output};

pub const NAME: &str = "l2-flood";

next_nodes! {
    enum Next {
        InterfaceOutput = interface_output::NAME,
        Drop = error_drop::NAME,
        /// A copy for the domain's BVI: the routing nodes, through ethernet-input.
        Bvi = ethernet_input::NAME,
    }
}

error_counters! {
    enum Error {
        NotBridged = "interface is no longer in a bridge domain",
        NoMembers = "no other member to flood to",
        NoBuffer = "flood copy lost: no free buffer",
    }
}

pub struct L2Flood {
    modes: SharedL2Modes,
    /// The members a frame goes to, reused between frames.
    targets: Vec<u32>,
}

impl L2Flood {
    pub fn decl(modes: SharedL2Modes) -> NodeDecl {
        NodeDecl::internal(
            NAME,
            &Next::NAMES,
            &Error::REASONS,
            L2Flood {
                modes,
                targets: Vec::new(),
            },
        )
    }
}

traced_loop_nodes!(L2Flood);

impl TracedLoop for L2Flood {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        for &bi in frame {
            let rx = cx.bufs.meta(bi).rx_if;
            let Some((port, domain)) = modes.bridge_port(rx) else {
                cx.count_error(Error::NotBridged as usize, 1);
                cx.enqueue(Next::Drop as usize, bi);
                continue;
            };
            self.targets.clear();
            self.targets.extend(
                domain
                    .members
                    .iter()
                    .filter(|&&(itf, shg)| itf != rx && (port.shg == 0 || shg != port.shg))
                    .map(|&(itf, _)| itf),
            );
            let Some((&last, rest)) = self.targets.split_last() else {
                cx.count_error(Error::NoMembers as usize, 1);
                if TRACE {
                    cx.trace(bi, format_args!("drop: {}", Error::NoMembers.reason()));
                }
                cx.enqueue(Next::Drop as usize, bi);
                continue;
            };
            let bvi = domain.bvi;
            // The BVI's copy goes to the router as if received there; the others out.
            let send = |cx: &mut NodeCx<'_>, p: u32, to: u32| {
                if Some(to) == bvi {
                    cx.bufs.meta_mut(p).rx_if = to;
                    cx.enqueue(Next::Bvi as usize, p);
                } else {
                    cx.bufs.meta_mut(p).tx_if = to;
                    cx.enqueue(Next::InterfaceOutput as usize, p);
                }
            };
            for &tx in rest {
                match cx.bufs.clone_packet(bi) {
                    Some(copy) => send(cx, copy, tx),
                    None => cx.count_error(Error::NoBuffer as usize, 1),
                }
            }
            if TRACE {
                cx.trace(
                    bi,
                    format_args!("to {} members, this one to if {last}", rest.len() + 1),
                );
            }
            send(cx, bi, last);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l2::bridge::{Bridges, DomainSettings};
    use crate::nodes::testing::{frame_bytes, Harness};

    fn setup(members: &[(u32, u8)]) -> Harness {
        let h = Harness::new(5);
        let mut b = Bridges::default();
        b.create(7, DomainSettings::default()).unwrap();
        for &(i, shg) in members {
            b.set_member(i, Some((7, shg))).unwrap();
        }
        h.set_bridges(&b);
        h
    }

    #[test]
    fn floods_to_every_other_member_and_the_buffers_come_back() {
        let h = setup(&[(0, 0), (1, 0), (2, 0), (3, 0)]);
        let out = h.run_node(
            L2Flood::decl(h.modes.clone()),
            &vec![frame_bytes(64); 10],
            1,
        );
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 30);
        let mut tx = out.tx_ifs.clone();
        tx.sort();
        assert_eq!(tx, [vec![0; 10], vec![2; 10], vec![3; 10]].concat());
        assert_eq!(h.pool.report().in_use, 0, "every copy freed by the sinks");
    }

    #[test]
    fn split_horizon_and_lone_ports() {
        let h = setup(&[(0, 1), (1, 1), (2, 0)]);
        let out = h.run_node(L2Flood::decl(h.modes.clone()), &[frame_bytes(64)], 0);
        assert_eq!(out.tx_ifs, vec![2]);
        let lone = setup(&[(0, 0)]);
        let out = lone.run_node(L2Flood::decl(lone.modes.clone()), &[frame_bytes(64)], 0);
        assert_eq!(out.errors[Error::NoMembers as usize], 1);
        let out = lone.run_node(L2Flood::decl(lone.modes.clone()), &[frame_bytes(64)], 4);
        assert_eq!(out.errors[Error::NotBridged as usize], 1);
    }
}
