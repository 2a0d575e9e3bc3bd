//! interface-output: sends each packet to the tx node of the interface a forwarding node
//! chose (`tx_if`), or drops it when that interface is down or unknown. A packet for a
//! sub-interface is counted there, gets the sub-interface's VLAN tags and leaves by the
//! parent's tx node.

use crate::buffer::{FLAG_L2_OFFER, FLAG_NAT_HINT, FLAG_NAT_OFFER, FLAG_OFFLOAD};
use crate::drivers::af_xdp::fastpath::offer::{Offerer, ReplyPath, Routed};
use crate::drivers::af_xdp::fastpath::FastPath;
use crate::graph::names::error_counters;
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::interface::Interface;
use crate::nat44::shared::Nat44Shared;
use crate::router::adjacency::SharedL3View;
use crate::subif::{push_tags, SharedSubIfs};
use std::sync::Arc;

pub const NAME: &str = "interface-output";

error_counters! {
    enum Error {
        InterfaceDown = "output interface is down",
        NoInterface = "no such output interface",
        NoHeadroom = "no headroom for the sub-interface's VLAN tags",
    }
}

/// Next slots: one per interface, in interface index order, then the drop node, then l2-fwd
/// (for BVIs).
pub struct InterfaceOutput {
    interfaces: Vec<Arc<Interface>>,
    subifs: SharedSubIfs,
    /// The XDP fast path, when an interface has it: flows offered for offload.
    offload: Option<Offerer>,
    /// The router's view, when the graph routes: what a routed packet's adjacency did.
    view: Option<SharedL3View>,
}

impl InterfaceOutput {
    pub fn decl(interfaces: Vec<Arc<Interface>>, subifs: SharedSubIfs) -> NodeDecl {
        Self::decl_offloading(interfaces, subifs, None, (None, None, None))
    }

    /// The same, offering the flows of packets still marked `FLAG_OFFLOAD` to `fast_path`:
    /// routes of `view`'s router, sessions of `nat` (with their replies where `reply`
    /// says how the graph would route them).
    pub fn decl_offloading(
        interfaces: Vec<Arc<Interface>>,
        subifs: SharedSubIfs,
        fast_path: Option<Arc<FastPath>>,
        (view, nat, reply): (
            Option<SharedL3View>,
            Option<Arc<Nat44Shared>>,
            Option<ReplyPath>,
        ),
    ) -> NodeDecl {
        let mut next: Vec<String> = interfaces
            .iter()
            .map(|i| super::tx_node_name(&i.name))
            .collect();
        next.push(super::error_drop::NAME.to_string());
        // After the drop: what a BVI sends goes into its bridge domain.
        next.push(crate::l2::nodes::fwd::NAME.to_string());
        let node = InterfaceOutput {
            interfaces,
            subifs,
            offload: fast_path.map(|fp| Offerer::new(fp, nat, reply)),
            view,
        };
        NodeDecl::internal(NAME, &[], &Error::REASONS, node)
            .with_next(next)
            .offload_safe()
    }
}

traced_loop_nodes!(InterfaceOutput);

impl TracedLoop for InterfaceOutput {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let drop = self.interfaces.len();
        let subifs = self.subifs.load();
        // Loaded once a frame, and only for the fast path's offers.
        let view = match (&mut self.offload, &self.view) {
            (Some(o), Some(v)) => {
                o.begin_frame();
                Some(v.load())
            }
            (Some(o), None) => {
                o.begin_frame();
                None
            }
            _ => None,
        };
        for &bi in frame {
            let mut tx = cx.bufs.meta(bi).tx_if as usize;
            if let Some(bvi) = subifs.get(tx as u32).filter(|s| s.bvi) {
                // Routed out of a BVI: into its bridge domain, as if received on the BVI.
                if !bvi.interface.is_up() {
                    cx.count_error(Error::InterfaceDown as usize, 1);
                    cx.enqueue(drop, bi);
                    continue;
                }
                let c = bvi.interface.counters(cx.thread);
                c.tx_packets.add(1);
                c.tx_bytes.add(cx.bufs.packet_len(bi) as u64);
                cx.bufs.meta_mut(bi).rx_if = tx as u32;
                if TRACE {
                    cx.trace(
                        bi,
                        format_args!("{}: into its bridge domain", bvi.interface.name),
                    );
                }
                cx.enqueue(drop + 1, bi);
                continue;
            }
            let via_subif = subifs.get(tx as u32).is_some();
            if let Some(sub) = subifs.get(tx as u32) {
                let verdict = if !sub.interface.is_up() {
                    Err(Error::InterfaceDown)
                } else if !push_tags(cx.bufs, bi, sub.push_bytes()) {
                    Err(Error::NoHeadroom)
                } else {
                    Ok(())
                };
                if let Err(e) = verdict {
                    cx.count_error(e as usize, 1);
                    if TRACE {
                        cx.trace(bi, format_args!("drop: {}", sub.interface.name));
                    }
                    cx.enqueue(drop, bi);
                    continue;
                }
                let meta = cx.bufs.meta_mut(bi);
                meta.tx_if = sub.parent;
                let c = sub.interface.counters(cx.thread);
                c.tx_packets.add(1);
                c.tx_bytes.add(meta.total_len as u64);
                if TRACE {
                    cx.trace(bi, format_args!("{}: tags pushed", sub.interface.name));
                }
                tx = sub.parent as usize;
            }
            let next = match self.interfaces.get(tx) {
                Some(i) if i.is_up() => {
                    let meta = *cx.bufs.meta(bi);
                    // Marked, with no adjacency, no tags pushed and not bridged: a frame
                    // cross-connected untouched, which the patch can take from here on.
                    if meta.flags & (FLAG_OFFLOAD | FLAG_L2_OFFER) == FLAG_OFFLOAD
                        && meta.adj == u32::MAX
                        && !via_subif
                        && i.patch.is_some()
                    {
                        if let Some(slot) = self
                            .interfaces
                            .get(meta.rx_if as usize)
                            .and_then(|rx| rx.patch.as_ref())
                        {
                            slot.offer(tx as u32, cx.config_epoch);
                        }
                    }
                    if let Some(o) = &mut self.offload {
                        // Marked: every node it crossed can be done in XDP. No tags pushed
                        // here; bridged by a learnt entry, or no adjacency: a
                        // cross-connect, else a route.
                        let rx = self.interfaces.get(meta.rx_if as usize);
                        if let (true, false, Some(rx)) =
                            (meta.flags & FLAG_OFFLOAD != 0, via_subif, rx)
                        {
                            if meta.flags & FLAG_L2_OFFER != 0 {
                                let frame = cx.bufs.data(bi);
                                o.bridge((rx, i), frame, meta.aux, cx.pass_epoch);
                            } else if meta.adj == u32::MAX {
                                o.cross_connect(rx, i, cx.pass_epoch);
                            } else if let Some(view) = &view {
                                let routed = Routed {
                                    view,
                                    adj: meta.adj,
                                    frame: cx.bufs.data(bi),
                                };
                                // A NAT node's packet is its session's to offer, never
                                // its route's (others to the same place are translated).
                                let epoch = cx.pass_epoch;
                                if meta.flags & FLAG_NAT_OFFER != 0 {
                                    let session = (cx.thread, meta.aux);
                                    o.nat((rx, i), routed, session, epoch);
                                } else if meta.flags & FLAG_NAT_HINT == 0 {
                                    o.route(rx, i, routed, epoch);
                                }
                            }
                        }
                    }
                    tx
                }
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
            InterfaceOutput::decl(h.interfaces.clone(), h.subifs.clone()),
            &pkts,
            0,
            |m, k| m.tx_if = k as u32,
        );
        assert_eq!(out.to_next(0), 1);
        assert_eq!(out.to_next(2), 1);
        assert_eq!(out.errors[Error::InterfaceDown as usize], 1);
    }
}
