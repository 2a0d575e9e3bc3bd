//! ethernet-input: checks the Ethernet header and sends each frame to the feature its
//! receive interface is configured for: the cross-connect, the bridge (l2-learn, or l2-fwd
//! when the domain does not learn), or the routing nodes. Frames too short to be real are
//! dropped here, each with its reason counted. It records where the L3 header starts (after any VLAN tags) in
//! the buffer's metadata, so no node behind it parses the Ethernet header again.

use crate::graph::{NodeCx, NodeDecl, NodeKind, TracedLoop};
use crate::interface::SharedL2Modes;
use crate::router::adjacency::SharedL3View;
use crate::wire::ethernet::{EtherType, ParseError, Repr};

/// How many packets ahead the data is prefetched.
const PREFETCH_AHEAD: usize = 4;

#[repr(usize)]
#[derive(Clone, Copy)]
enum Next {
    L2Xconnect,
    L2Learn,
    L2Fwd,
    Ip4Input,
    ArpInput,
    Ip6Input,
    Drop,
}

#[repr(usize)]
#[derive(Clone, Copy)]
enum Error {
    TruncatedHeader,
    Runt,
    TruncatedVlan,
    TooManyVlans,
    NoMode,
    NotOurMac,
    L3Protocol,
}
const ERRORS: [&str; 7] = [
    "frame shorter than the ethernet header",
    "runt frame (shorter than the 60-byte minimum)",
    "truncated VLAN tag",
    "more than two VLAN tags",
    "interface has no L2 or L3 mode (unhandled)",
    "routed interface: destination MAC is not ours",
    "routed interface: ethertype not routed",
];

pub struct EthernetInput {
    modes: SharedL2Modes,
    view: SharedL3View,
    /// Frames shorter than this are runts. 60 (IEEE 802.3 without FCS) unless configured.
    min_frame: usize,
}

impl EthernetInput {
    pub fn decl(modes: SharedL2Modes, view: SharedL3View, min_frame: usize) -> NodeDecl {
        NodeDecl {
            name: super::ETHERNET_INPUT.to_string(),
            kind: NodeKind::Internal,
            next: vec![
                super::L2_XCONNECT.to_string(),
                super::L2_LEARN.to_string(),
                super::L2_FWD.to_string(),
                crate::nodes::ip4::input::IP4_INPUT.to_string(),
                super::ARP_INPUT.to_string(),
                super::IP6_INPUT.to_string(),
                super::ERROR_DROP.to_string(),
            ],
            errors: ERRORS.to_vec(),
            node: Box::new(EthernetInput {
                modes,
                view,
                min_frame,
            }),
        }
    }

    /// Read the Ethernet header and VLAN tags; `Err` names the drop reason.
    #[inline(always)]
    fn classify(first_segment: &[u8]) -> Result<Repr, Error> {
        Repr::parse(first_segment).map_err(|e| match e {
            ParseError::TruncatedHeader => Error::TruncatedHeader,
            ParseError::TruncatedVlan => Error::TruncatedVlan,
            ParseError::TooManyVlans => Error::TooManyVlans,
        })
    }
}

impl TracedLoop for EthernetInput {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let modes = self.modes.load();
        let view = self.view.load();
        for (k, &bi) in frame.iter().enumerate() {
            // Frames written by the device (or another core) are not in our cache yet: start
            // loading a few packets ahead while this one is classified.
            if let Some(&ahead) = frame.get(k + PREFETCH_AHEAD) {
                cx.bufs.prefetch(ahead);
            }
            let len = cx.bufs.packet_len(bi);
            let verdict = Self::classify(cx.bufs.data(bi));
            let next = match verdict {
                Ok(repr) => {
                    let meta = cx.bufs.meta_mut(bi);
                    // Recorded once here: the L3 nodes read their header at this offset.
                    meta.l3_offset = repr.l3_offset as u8;
                    let rx = meta.rx_if;
                    if modes.xconnect.get(rx as usize).copied().flatten().is_some() {
                        // A switch must not pass runts on to a wire that would reject them;
                        // a router reads lengths from the headers and checks those instead
                        // (virtual links such as veth carry unpadded 42-byte ARP frames).
                        if len < self.min_frame {
                            Err(Error::Runt)
                        } else {
                            Ok(Next::L2Xconnect)
                        }
                    } else if let Some((_, domain)) = modes.bridge_port(rx) {
                        if len < self.min_frame {
                            Err(Error::Runt)
                        } else if domain.settings.learn {
                            Ok(Next::L2Learn)
                        } else {
                            Ok(Next::L2Fwd)
                        }
                    } else if let Some(l3) = view.interface(rx).filter(|i| i.routed()) {
                        // Promiscuous drivers see every frame on the wire: a router takes
                        // only its own, broadcast and multicast ones.
                        let dst = &cx.bufs.data(bi)[..6];
                        if dst != l3.mac.0 && dst[0] & 1 == 0 {
                            Err(Error::NotOurMac)
                        } else {
                            match repr.ethertype {
                                EtherType::IPV4 => Ok(Next::Ip4Input),
                                EtherType::ARP => Ok(Next::ArpInput),
                                EtherType::IPV6 => Ok(Next::Ip6Input),
                                _ => Err(Error::L3Protocol),
                            }
                        }
                    } else {
                        Err(Error::NoMode)
                    }
                }
                Err(e) => Err(e),
            };
            if TRACE {
                match (verdict, next) {
                    (Ok(r), Ok(_)) => cx.trace(bi, r),
                    (Ok(r), Err(e)) => {
                        cx.trace(bi, format_args!("{r}: drop: {}", ERRORS[e as usize]))
                    }
                    (Err(_), Err(e)) => cx.trace(bi, format_args!("drop: {}", ERRORS[e as usize])),
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
            EthernetInput::decl(h.modes.clone(), h.view.clone(), 60),
            &[frame_bytes(64)],
            0,
        );
        assert_eq!(out.to_next(Next::L2Xconnect as usize), 1);
        assert_eq!(out.errors, vec![0; ERRORS.len()]);
    }

    #[test]
    fn short_frames_are_dropped_by_reason() {
        let h = harness();
        let mut tagged_short = frame_bytes(64);
        tagged_short[12..14].copy_from_slice(&[0x81, 0x00]);
        tagged_short.truncate(16);
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), 60),
            &[
                frame_bytes(10),
                frame_bytes(40),
                tagged_short,
                frame_bytes(0),
            ],
            0,
        );
        assert_eq!(out.to_next(Next::Drop as usize), 4);
        assert_eq!(out.errors[Error::TruncatedHeader as usize], 2);
        assert_eq!(out.errors[Error::Runt as usize], 1);
        assert_eq!(out.errors[Error::TruncatedVlan as usize], 1);
    }

    #[test]
    fn interface_without_mode_drops_with_reason() {
        let h = harness();
        let out = h.run_node(
            EthernetInput::decl(h.modes.clone(), h.view.clone(), 60),
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
            EthernetInput::decl(h.modes.clone(), h.view.clone(), 60),
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
