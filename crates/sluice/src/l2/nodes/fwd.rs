//! l2-fwd: sends each bridged frame to the port its destination address was learnt on, or
//! to l2-flood (broadcast, multicast, and unicast to an address not in the table), or drops
//! it with the reason: flooding switched off, the destination behind the port it came in by,
//! or both ports in one split-horizon group. As IEEE 802.1D says (`l2::reserved`), a frame
//! whose source is a group or all-zero address is dropped, and so is one to a reserved
//! link-local group 01:80:C2:00:00:0N that the domain's `group-fwd-mask` does not let through.

use crate::buffer::{FLAG_L2_OFFER, FLAG_OFFLOAD};
use crate::ethernet::input as ethernet_input;
use crate::graph::names::{error_counters, next_nodes};
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::interface::SharedL2Modes;
use crate::l2::fib::L2FibReader;
use crate::l2::nodes::{arp_term, flood, FrameKeys};
use crate::l2::reserved::{forwarded, link_local_group, valid_source};
use crate::nodes::{error_drop, interface_output};

pub const NAME: &str = "l2-fwd";

next_nodes! {
    enum Next {
        InterfaceOutput = interface_output::NAME,
        Flood = flood::NAME,
        Drop = error_drop::NAME,
        /// To the domain's BVI: the routing nodes, through ethernet-input.
        Bvi = ethernet_input::NAME,
        /// A broadcast ARP request the domain answers itself.
        ArpTerm = arp_term::NAME,
    }
}

error_counters! {
    enum Error {
        NotBridged = "interface is no longer in a bridge domain",
        Runt = "frame shorter than the ethernet header",
        FloodOff = "broadcast or multicast, and the bridge domain does not flood",
        UnknownUnicastOff = "unknown unicast, and the bridge domain does not flood it (uu-flood off)",
        SameInterface = "destination is behind the interface the frame came in by",
        SplitHorizon = "destination is in the input interface's split-horizon group",
        BadSource = "source is a group or all-zero address (IEEE 802.1D)",
        ReservedGroup = "to a reserved link-local group 01:80:c2:00:00:0x not in group-fwd-mask (IEEE 802.1D)",
    }
}

pub struct L2Fwd {
    modes: SharedL2Modes,
    fib: L2FibReader,
    /// The frame's destination keys.
    keys: FrameKeys,
}

impl L2Fwd {
    pub fn decl(modes: SharedL2Modes, fib: L2FibReader) -> NodeDecl {
        NodeDecl::internal(
            NAME,
            &Next::NAMES,
            &Error::REASONS,
            L2Fwd {
                modes,
                fib,
                keys: FrameKeys::new(),
            },
        )
        // Offload-safe for the frames it says so of: it clears the others' mark itself.
        .offload_safe()
    }
}

traced_loop_nodes!(L2Fwd);

impl TracedLoop for L2Fwd {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        let table = self.fib.load();
        // First each frame's destination key, 0 for a group address (nothing to look up).
        let unicast = |dst: &[u8], _: &[u8]| dst[0] & 1 == 0;
        self.keys.read(cx.bufs, frame, &modes, 0..6, unicast);
        for (i, &bi) in frame.iter().enumerate() {
            let k = self.keys.get(i, &table);
            let (meta, frame) = cx.bufs.meta_data_mut(bi);
            let rx = meta.rx_if;
            let frame: &[u8] = frame;
            let verdict = (|| {
                let (port, domain) = modes.bridge_port(rx).ok_or(Error::NotBridged)?;
                let dst = frame.get(..6).ok_or(Error::Runt)?;
                if !valid_source(frame.get(6..12).ok_or(Error::Runt)?) {
                    return Err(Error::BadSource);
                }
                if dst[0] & 1 != 0 {
                    if let Some(n) = link_local_group(dst) {
                        if !forwarded(n, domain.settings.group_fwd_mask) {
                            return Err(Error::ReservedGroup);
                        }
                    }
                    if domain.settings.arp_term
                        && super::arp_term::request_target(frame)
                            .is_some_and(|ip| domain.arp.contains_key(&ip))
                    {
                        return Ok((Next::ArpTerm, rx));
                    }
                    return if domain.settings.flood {
                        Ok((Next::Flood, rx))
                    } else {
                        Err(Error::FloodOff)
                    };
                }
                // An entry for a port that has left this domain is as good as none.
                let out = table
                    .lookup(k)
                    .map(|h| h.interface)
                    .and_then(|tx| Some((tx, modes.bridge_port(tx)?.0)))
                    .filter(|(_, p)| p.bd == port.bd);
                match out {
                    Some((tx, _)) if tx == rx => Err(Error::SameInterface),
                    Some((_, p)) if port.shg != 0 && p.shg == port.shg => Err(Error::SplitHorizon),
                    Some((tx, p)) if p.bvi => Ok((Next::Bvi, tx)),
                    Some((tx, _)) => Ok((Next::InterfaceOutput, tx)),
                    None if domain.settings.uu_flood => Ok((Next::Flood, rx)),
                    None => Err(Error::UnknownUnicastOff),
                }
            })();
            // The fast path may carry the frame's flow only when it goes to the port its
            // destination was learnt on (interface-output offers it, `FLAG_L2_OFFER`).
            let marked = meta.flags & FLAG_OFFLOAD != 0;
            meta.flags &= !FLAG_OFFLOAD;
            let next = match verdict {
                Ok((Next::InterfaceOutput, tx)) if marked => {
                    meta.tx_if = tx;
                    if let Some((port, _)) = modes.bridge_port(rx) {
                        meta.flags |= FLAG_OFFLOAD | FLAG_L2_OFFER;
                        meta.aux = u32::from(port.bd);
                    }
                    if TRACE {
                        cx.trace(bi, format_args!("to tx if {tx}"));
                    }
                    Next::InterfaceOutput
                }
                Ok((Next::Bvi, bvi)) => {
                    // The router sees the frame arrive on the BVI.
                    meta.rx_if = bvi;
                    if TRACE {
                        cx.trace(bi, format_args!("to the BVI, if {bvi}"));
                    }
                    Next::Bvi
                }
                Ok((next, tx)) => {
                    meta.tx_if = tx;
                    if TRACE {
                        match next {
                            Next::Flood => cx.trace(bi, "flood"),
                            Next::ArpTerm => cx.trace(bi, "ARP request the domain answers"),
                            _ => cx.trace(bi, format_args!("to tx if {tx}")),
                        }
                    }
                    next
                }
                Err(e) => {
                    cx.count_error(e as usize, 1);
                    if TRACE {
                        cx.trace(bi, format_args!("drop: {}", e.reason()));
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
    use crate::l2::bridge::{Bridges, DomainSettings};
    use crate::nodes::testing::{frame_bytes, Harness};
    use crate::wire::MacAddress;

    /// Interfaces 0-3 in bridge domain 1; 2 and 3 in split-horizon group 1. 02:..:0a is
    /// behind 1, 02:..:0b behind 0, 02:..:0c behind 3.
    fn setup(settings: DomainSettings) -> (Harness, Bridges) {
        let h = Harness::new(4);
        let mut b = Bridges::default();
        b.create(1, settings).unwrap();
        for (i, shg) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
            b.set_member(i, Some((1, shg))).unwrap();
        }
        for (m, i) in [(0x0a, 1), (0x0b, 0), (0x0c, 3)] {
            b.add_mac(1, MacAddress([2, 0, 0, 0, 0, m]), i, true)
                .unwrap();
        }
        h.set_bridges(&b);
        (h, b)
    }

    fn to(dst: u8) -> Vec<u8> {
        let mut f = frame_bytes(64);
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
        f
    }

    #[test]
    fn known_unknown_group_same_port_and_split_horizon() {
        let (h, b) = setup(DomainSettings::default());
        let decl = || L2Fwd::decl(h.modes.clone(), b.reader());
        let out = h.run_node(decl(), &[to(0x0a), to(0x0e), frame_bytes(64), to(0x0b)], 0);
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 1);
        assert_eq!(out.to_next(Next::Flood as usize), 2);
        assert_eq!(out.errors[Error::SameInterface as usize], 1);
        // From 2 (group 1) to 0c behind 3 (group 1): split horizon.
        let out = h.run_node(decl(), &[to(0x0c), to(0x0a)], 2);
        assert_eq!(out.errors[Error::SplitHorizon as usize], 1);
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 1);
        let sent: Vec<u32> = out.tx_ifs.into_iter().filter(|&t| t != u32::MAX).collect();
        assert_eq!(sent, vec![1], "the dropped one never got a tx interface");
    }

    fn frame(src: [u8; 6], dst: [u8; 6]) -> Vec<u8> {
        let mut f = frame_bytes(64);
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
    }

    #[test]
    fn bad_sources_and_reserved_groups_drop_as_8021d_says() {
        let mask = 1 << 3 | 1 << 14;
        let (h, b) = setup(DomainSettings {
            group_fwd_mask: mask,
            ..Default::default()
        });
        let ok = [2, 0, 0, 0, 0, 0x0e];
        let group = |n: u8| [1, 0x80, 0xc2, 0, 0, n];
        let mut frames = vec![
            frame([0; 6], [2, 0, 0, 0, 0, 0x0a]),
            frame([1, 0, 0x5e, 0, 0, 1], [2, 0, 0, 0, 0, 0x0a]),
            frame([0xff; 6], [0xff; 6]),
        ];
        frames.extend((0..16).map(|n| frame(ok, group(n))));
        frames.push(frame(ok, group(0x10)));
        let out = h.run_node(L2Fwd::decl(h.modes.clone(), b.reader()), &frames, 0);
        assert_eq!(out.errors[Error::BadSource as usize], 3);
        // :00 (no spanning tree here), :03 and :0e (the mask) and 01:80:c2:00:00:10 flood.
        assert_eq!(out.errors[Error::ReservedGroup as usize], 13);
        assert_eq!(out.to_next(Next::Flood as usize), 4);
    }

    #[test]
    fn flooding_switched_off_drops_with_reasons() {
        let off = DomainSettings {
            flood: false,
            uu_flood: false,
            ..Default::default()
        };
        let (h, b) = setup(off);
        let out = h.run_node(
            L2Fwd::decl(h.modes.clone(), b.reader()),
            &[to(0x0e), frame_bytes(64), to(0x0a)],
            0,
        );
        assert_eq!(out.errors[Error::UnknownUnicastOff as usize], 1);
        assert_eq!(out.errors[Error::FloodOff as usize], 1);
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 1);
    }
}
