//! ethernet-input: checks the Ethernet header and sends each frame to the feature its
//! receive interface is configured for: the cross-connect, the bridge (l2-learn, or l2-fwd
//! when the domain does not learn), or the routing nodes. Frames too short to be real are
//! dropped here, each with its reason counted. It records where the L3 header starts (after any VLAN tags) in
//! the buffer's metadata, so no node behind it parses the Ethernet header again.

use crate::graph::names::{error_counters, next_nodes};
use crate::graph::{traced_loop_nodes, NodeCx, NodeDecl, TracedLoop};
use crate::interface::{L2Modes, SharedL2Modes};
use crate::ip::ip4;
use crate::ip::ip6;
use crate::l2::nodes::{fwd, learn, xconnect};
use crate::nodes::error_drop;
use crate::router::adjacency::{L3View, SharedL3View};
use crate::subif::{pop_tags, Classified, SharedSubIfs, SubIfs};
use crate::wire::ethernet::{EtherType, ParseError, Repr};

pub const NAME: &str = "ethernet-input";

/// How many packets ahead the data is prefetched.
const PREFETCH_AHEAD: usize = 4;

next_nodes! {
    enum Next {
        L2Xconnect = xconnect::NAME,
        L2Learn = learn::NAME,
        L2Fwd = fwd::NAME,
        Ip4Input = ip4::input::NAME,
        ArpInput = ip4::arp_input::NAME,
        Ip6Input = ip6::input::NAME,
        Drop = error_drop::NAME,
    }
}

error_counters! {
    enum Error {
        TruncatedHeader = "frame shorter than the ethernet header",
        TruncatedVlan = "truncated VLAN tag",
        TooManyVlans = "more than two VLAN tags",
        NoMode = "interface has no L2 or L3 mode (unhandled)",
        NotOurMac = "routed interface: destination MAC is not ours",
        L3Protocol = "routed interface: ethertype not routed",
        NoSubInterface = "no sub-interface for the frame's VLAN tags",
        SubInterfaceDown = "sub-interface is down",
    }
    impl From<ParseError> {
        TruncatedHeader,
        TruncatedVlan,
        TooManyVlans,
    }
}

pub struct EthernetInput {
    modes: SharedL2Modes,
    view: SharedL3View,
    subifs: SharedSubIfs,
    /// Frames shorter than this are runts. 60 (IEEE 802.3 without FCS) unless configured.
    min_frame: usize,
}

impl EthernetInput {
    pub fn decl(
        modes: SharedL2Modes,
        view: SharedL3View,
        subifs: SharedSubIfs,
        min_frame: usize,
    ) -> NodeDecl {
        NodeDecl::internal(
            NAME,
            &Next::NAMES,
            &Error::REASONS,
            EthernetInput {
                modes,
                view,
                subifs,
                min_frame,
            },
        )
        // The XDP fast path sends short and tagged frames here, and passes the others on
        // as the cross-connect does (drivers::af_xdp::fastpath::program).
        .offload_safe()
    }

    /// Read the Ethernet header and VLAN tags; `Err` names the drop reason.
    #[inline(always)]
    fn classify(first_segment: &[u8]) -> Result<Repr, Error> {
        Repr::parse(first_segment).map_err(Error::from)
    }
}

/// Pad a one-segment frame shorter than `min` with zeros up to `min`.
#[inline(always)]
fn pad(bufs: &mut crate::buffer::WorkerBuffers, bi: u32, min: usize) {
    let m = bufs.meta_mut(bi);
    let len = m.total_len as usize;
    if len >= min || m.next != crate::buffer::NO_BUFFER || m.len as usize != len {
        return;
    }
    if m.offset as usize + min > crate::buffer::STRIDE {
        return;
    }
    m.len = min as u16;
    m.total_len = min as u32;
    bufs.data_mut(bi)[len..].fill(0);
}

/// What ethernet-input decides by, loaded once per frame.
type Tables<'a> = (&'a L2Modes, &'a L3View, &'a SubIfs);

impl EthernetInput {
    /// Where a well-formed frame goes: its sub-interface (tags matched, counted), then that
    /// interface's mode. An L2 sub-interface's frames lose their matched tags here.
    #[inline(always)]
    fn dispatch(
        &self,
        cx: &mut NodeCx<'_>,
        bi: u32,
        repr: &Repr,
        len: usize,
        (modes, view, subifs): Tables<'_>,
    ) -> Result<Next, Error> {
        let meta = cx.bufs.meta_mut(bi);
        // Recorded once here: the L3 nodes read their header at this offset.
        meta.l3_offset = repr.l3_offset as u8;
        let mut rx = meta.rx_if;
        let mut pop = 0;
        match subifs.classify(rx, &repr.vlans[..repr.vlan_count as usize]) {
            Classified::Parent => {}
            Classified::NoMatch => return Err(Error::NoSubInterface),
            Classified::Sub { index, pop: p } => {
                let sub = subifs.get(index).ok_or(Error::NoSubInterface)?;
                if !sub.interface.is_up() {
                    return Err(Error::SubInterfaceDown);
                }
                let c = sub.interface.counters(cx.thread);
                c.rx_packets.add(1);
                c.rx_bytes.add(len as u64);
                cx.bufs.meta_mut(bi).rx_if = index;
                (rx, pop) = (index, p as usize);
            }
        }
        let port = modes.bridge_port(rx);
        if let Some(bvi) = subifs.get(rx).filter(|s| s.bvi) {
            // From its bridge domain (l2-fwd, l2-flood) to the router.
            let c = bvi.interface.counters(cx.thread);
            c.rx_packets.add(1);
            c.rx_bytes.add(len as u64);
        }
        let l2 = if modes.xconnect.get(rx as usize).copied().flatten().is_some() {
            Next::L2Xconnect
        } else if let Some((_, domain)) = port.filter(|(p, _)| !p.bvi) {
            if domain.settings.learn {
                Next::L2Learn
            } else {
                Next::L2Fwd
            }
        } else if let Some(l3) = view.interface(rx).filter(|i| i.routed()) {
            // Promiscuous drivers see every frame on the wire: a router takes only its own,
            // broadcast and multicast ones.
            let dst = &cx.bufs.data(bi)[..6];
            if dst != l3.mac.0 && dst[0] & 1 == 0 {
                return Err(Error::NotOurMac);
            }
            let next = match repr.ethertype {
                EtherType::IPV4 => Next::Ip4Input,
                EtherType::ARP => Next::ArpInput,
                EtherType::IPV6 => Next::Ip6Input,
                _ => return Err(Error::L3Protocol),
            };
            // An L3 sub-interface's tags come off too: what the L3 nodes answer in place
            // (ARP, ND) or route gets the tags of the sub-interface it leaves by, once.
            if pop > 0 && !pop_tags(cx.bufs, bi, pop) {
                return Err(Error::TruncatedVlan);
            }
            return Ok(next);
        } else {
            return Err(Error::NoMode);
        };
        if pop > 0 && !pop_tags(cx.bufs, bi, pop) {
            return Err(Error::TruncatedVlan);
        }
        // Virtual links (veth, tap) carry unpadded frames, such as 42-byte ARP requests: a
        // switch passes them on padded, as a NIC pads what it sends, so they are legal on any
        // wire (a router reads lengths from the headers instead).
        pad(cx.bufs, bi, self.min_frame);
        Ok(l2)
    }
}

traced_loop_nodes!(EthernetInput);

impl TracedLoop for EthernetInput {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        let view = self.view.load();
        let subifs = self.subifs.load();
        for (k, &bi) in frame.iter().enumerate() {
            // Frames written by the device (or another core) are not in our cache yet: start
            // loading a few packets ahead while this one is classified.
            if let Some(&ahead) = frame.get(k + PREFETCH_AHEAD) {
                cx.bufs.prefetch(ahead);
            }
            let (meta, data) = cx.bufs.meta_data(bi);
            let len = meta.total_len as usize;
            let verdict = Self::classify(data);
            let next = match verdict {
                Ok(repr) => self.dispatch(cx, bi, &repr, len, (&modes, &view, &subifs)),
                Err(e) => Err(e),
            };
            if TRACE {
                match (verdict, next) {
                    (Ok(r), Ok(_)) => cx.trace(bi, r),
                    (Ok(r), Err(e)) => cx.trace(bi, format_args!("{r}: drop: {}", e.reason())),
                    (Err(_), Err(e)) => cx.trace(bi, format_args!("drop: {}", e.reason())),
                    (Err(_), Ok(_)) => {}
                }
            }
            let next = next.unwrap_or_else(|e| {
                cx.count_error(e as usize, 1);
                Next::Drop
            });
            cx.enqueue(next as usize, bi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::{frame_bytes, Harness};

    fn harness() -> Harness {
        let h = Harness::new(2);
        h.set_xconnect(0, 1);
        h
    }

    #[test]
    fn good_frame_goes_to_xconnect() {
        let h = harness();
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), h.subifs.clone(), 60),
            &[frame_bytes(64)],
            0,
        );
        assert_eq!(out.to_next(Next::L2Xconnect as usize), 1);
        assert_eq!(out.errors, vec![0; Error::REASONS.len()]);
    }

    #[test]
    fn short_frames_are_dropped_by_reason() {
        let h = harness();
        let mut tagged_short = frame_bytes(64);
        tagged_short[12..14].copy_from_slice(&[0x81, 0x00]);
        tagged_short.truncate(16);
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), h.subifs.clone(), 60),
            &[
                frame_bytes(10),
                frame_bytes(40),
                tagged_short,
                frame_bytes(0),
            ],
            0,
        );
        assert_eq!(out.to_next(Next::Drop as usize), 3);
        assert_eq!(out.errors[Error::TruncatedHeader as usize], 2);
        assert_eq!(out.errors[Error::TruncatedVlan as usize], 1);
        // The 40-byte frame was cross-connected, padded to 60.
        assert_eq!(out.to_next(Next::L2Xconnect as usize), 1);
    }

    #[test]
    fn short_l2_frames_are_padded_with_zeros() {
        let h = harness();
        let captured = crate::nodes::testing::Captured::default();
        let short = frame_bytes(42);
        h.run_node_capture(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), h.subifs.clone(), 60),
            std::slice::from_ref(&short),
            0,
            captured.clone(),
        );
        let got = &captured.lock().unwrap()[0];
        assert_eq!(got.len(), 60);
        assert_eq!(&got[..42], &short[..]);
        assert!(got[42..].iter().all(|&b| b == 0));
    }

    #[test]
    fn interface_without_mode_drops_with_reason() {
        let h = harness();
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), h.subifs.clone(), 60),
            &[frame_bytes(64)],
            1,
        );
        assert_eq!(out.to_next(Next::Drop as usize), 1);
        assert_eq!(out.errors[Error::NoMode as usize], 1);
    }

    #[test]
    fn routed_interface_takes_its_own_ipv4_and_arp_only() {
        let h = harness();
        h.add_address(1, 0xc000_0201, 24);
        let ours = h.view.load().interfaces[1].mac;
        let mut to_us = frame_bytes(64);
        to_us[..6].copy_from_slice(&ours.0);
        let mut other = frame_bytes(64);
        other[..6].copy_from_slice(&[0x02, 9, 9, 9, 9, 9]);
        let mut arp = frame_bytes(64);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let mut v6 = to_us.clone();
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        let mut other_type = to_us.clone();
        other_type[12..14].copy_from_slice(&[0x88, 0xcc]);
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), h.subifs.clone(), 60),
            &[to_us, other, arp, v6, other_type],
            1,
        );
        assert_eq!(out.to_next(Next::Ip4Input as usize), 1);
        assert_eq!(out.to_next(Next::ArpInput as usize), 1);
        assert_eq!(out.to_next(Next::Ip6Input as usize), 1);
        assert_eq!(out.to_next(Next::Drop as usize), 2);
        assert_eq!(out.errors[Error::NotOurMac as usize], 1);
        assert_eq!(out.errors[Error::L3Protocol as usize], 1);
    }
}

#[cfg(test)]
mod sub_interface_tests {
    use super::*;
    use crate::interface::Interface;
    use crate::nodes::testing::{frame_bytes, Captured, Harness};
    use crate::subif::{SubIf, TagMatch};
    use std::sync::Arc;

    fn tagged(vids: &[u16]) -> Vec<u8> {
        let mut f = frame_bytes(64);
        let mut tags = Vec::new();
        for &v in vids {
            tags.extend_from_slice(&[0x81, 0x00]);
            tags.extend_from_slice(&v.to_be_bytes());
        }
        f.splice(12..12, tags);
        f
    }

    /// Interfaces 0 and 1; sub-interface 2 = 0.100 (dot1q 100) cross-connected to 1.
    fn harness() -> (Harness, Arc<Interface>) {
        let h = Harness::new(2);
        let sub = Arc::new(Interface::new(2, "p0.100", "sub-interface", 1));
        sub.set_up(true);
        let mut t = (**h.subifs.load()).clone();
        t.insert(SubIf::new(
            sub.clone(),
            0,
            TagMatch::Dot1q {
                vid: 100,
                exact: true,
            },
        ));
        h.subifs.store(Arc::new(t));
        let mut m = (**h.modes.load()).clone();
        m.xconnect = vec![Some(1), None, Some(1)];
        h.modes.store(Arc::new(m));
        (h, sub)
    }

    #[test]
    fn tagged_frames_go_to_their_sub_interface_untagged() {
        let (h, sub) = harness();
        let captured = Captured::default();
        let decl = EthernetInput::decl(h.modes.clone(), h.view.clone(), h.subifs.clone(), 60);
        let out = h.run_node_capture(
            decl,
            &[
                tagged(&[100]),
                tagged(&[200]),
                tagged(&[100, 5]),
                frame_bytes(64),
            ],
            0,
            captured.clone(),
        );
        // 100: popped, to the cross-connect; 200: no sub-interface; 100+5: exact-match says
        // no; untagged: the parent's own cross-connect.
        assert_eq!(out.to_next(Next::L2Xconnect as usize), 2);
        assert_eq!(out.errors[Error::NoSubInterface as usize], 2);
        let frames = captured.lock().unwrap();
        assert_eq!(frames[0], frame_bytes(64), "the tag came off");
        assert_eq!(sub.totals().rx_packets, 1);
        sub.set_up(false);
        drop(frames);
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), h.subifs.clone(), 60),
            &[tagged(&[100])],
            0,
        );
        assert_eq!(out.errors[Error::SubInterfaceDown as usize], 1);
    }
}
