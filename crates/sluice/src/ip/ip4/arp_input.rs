//! arp-input: ARP on routed interfaces. A request for one of the interface's addresses is
//! turned into the reply in place and sent back out of the interface it came in on; the
//! requester, and the sender of a reply to us, are learnt (sent to the control plane, which
//! completes the adjacencies waiting for them). Everything else is dropped with its reason.

use crate::graph::names::error_counters;
use crate::graph::names::next_nodes;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::lcp::host_punt;
use crate::nodes::{error_drop, interface_output};
use crate::router::adjacency::{L3View, SharedL3View};
use crate::router::nud::Answer;
use crate::router::{LearnKind, LearnSender, NeighborLearn};
use crate::wire::arp::{reply_in_place, ArpError, ArpPacket, OP_REQUEST};
use crate::wire::MacAddress;
use std::net::{IpAddr, Ipv4Addr};

pub const NAME: &str = "arp-input";

next_nodes! {
    pub enum Next {
        InterfaceOutput = interface_output::NAME,
        Drop = error_drop::NAME,
        /// host-punt: a copy for the Linux tap of the interface's lcp pair.
        Punt = host_punt::NAME,
    }
}

error_counters! {
    pub enum Error {
        Replied = "arp requests answered",
        ReplyLearnt = "arp replies learnt (consumed)",
        Truncated = "arp packet truncated",
        NotEthernet = "arp hardware type is not Ethernet",
        NotIpv4 = "arp protocol type is not IPv4",
        BadLengths = "arp address lengths are not 6 and 4",
        BadOperation = "arp operation is not request or reply",
        RequestNotForUs = "arp request not for our address",
        ReplyNotForUs = "arp reply not for our address",
        BadSender = "arp sender MAC or address invalid",
        LearnQueueFull = "neighbour learn queue full (learnt again later)",
        AddressConflict = "arp sender claims one of our addresses (conflict)",
    }
    impl From<ArpError> {
        Truncated,
        NotEthernet,
        NotIpv4,
        BadLengths,
        BadOperation,
    }
}

/// What becomes of one ARP packet.
enum Verdict {
    /// The reply has been written in place.
    Reply,
    /// Learnt from; the packet itself is consumed.
    Consumed,
    Drop(Error),
}

pub struct ArpInput {
    view: SharedL3View,
    learn: LearnSender,
}

impl ArpInput {
    pub fn decl(view: SharedL3View, learn: LearnSender) -> NodeDecl {
        NodeDecl::internal(
            NAME,
            &Next::NAMES,
            &Error::REASONS,
            ArpInput { view, learn },
        )
    }

    /// Tell the control plane what a neighbour said. A request that repeats what the
    /// published view has changes nothing and is not sent; an answer always is (it confirms
    /// the entry, and only the control plane knows whether it was asked for).
    fn learn(
        &self,
        cx: &mut NodeCx<'_>,
        view: &L3View,
        (rx_if, ip, mac): (u32, u32, MacAddress),
        kind: LearnKind,
    ) {
        let ip = IpAddr::V4(Ipv4Addr::from(ip));
        let answer = matches!(kind, LearnKind::Answer(_));
        if !answer && view.neighbors.mac(&(rx_if, ip)) == Some(mac) {
            return;
        }
        let n = NeighborLearn {
            interface: rx_if,
            ip,
            mac,
            kind,
        };
        if self.learn.try_send(n).is_err() {
            cx.count_error(Error::LearnQueueFull as usize, 1);
        }
    }

    fn handle(&self, cx: &mut NodeCx<'_>, view: &L3View, bi: u32) -> Verdict {
        let rx_if = cx.bufs.meta(bi).rx_if;
        let Some(itf) = view.interface(rx_if) else {
            return Verdict::Drop(Error::RequestNotForUs);
        };
        let our_mac = itf.mac;
        let arp = match ArpPacket::parse(cx.bufs.l3(bi)) {
            Ok(p) => p,
            Err(e) => return Verdict::Drop(Error::from(e)),
        };
        let mac_ok = !arp.sender_mac.is_multicast() && arp.sender_mac.0 != [0; 6];
        // An address probe (RFC 5227) comes from 0.0.0.0: answered (so that the prober sees
        // the address is taken) but not learnt.
        let probe = arp.sender_ip == 0;
        let sender_ok = mac_ok && !probe && arp.sender_ip != u32::MAX;
        if itf.has_v4(arp.sender_ip) {
            return Verdict::Drop(Error::AddressConflict);
        }
        let for_us = itf.has_v4(arp.target_ip);
        match arp.op {
            OP_REQUEST if for_us => {
                if !mac_ok || (!probe && !sender_ok) {
                    return Verdict::Drop(Error::BadSender);
                }
                if !probe {
                    let sender = (rx_if, arp.sender_ip, arp.sender_mac);
                    self.learn(cx, view, sender, LearnKind::Request);
                }
                // Tags a sub-interface matched are off already (interface-output puts them
                // back); tags on a parent without sub-interfaces stay.
                let (meta, data) = cx.bufs.meta_data_mut(bi);
                let l3 = meta.l3_offset as usize;
                if reply_in_place(data, l3, &arp, our_mac).is_err() {
                    return Verdict::Drop(Error::Truncated);
                }
                meta.tx_if = rx_if;
                Verdict::Reply
            }
            OP_REQUEST => {
                // Someone else's request still tells us the sender is alive; refresh only
                // neighbours we know already (gratuitous ARP after a MAC change).
                let ip = IpAddr::V4(Ipv4Addr::from(arp.sender_ip));
                if sender_ok && view.neighbors.contains_key(&(rx_if, ip)) {
                    let sender = (rx_if, arp.sender_ip, arp.sender_mac);
                    self.learn(cx, view, sender, LearnKind::Update);
                }
                Verdict::Drop(Error::RequestNotForUs)
            }
            _ if for_us
                || view
                    .neighbors
                    .contains_key(&(rx_if, IpAddr::V4(arp.sender_ip.into()))) =>
            {
                if !sender_ok {
                    return Verdict::Drop(Error::BadSender);
                }
                // A reply to us answers a request (ours, if the control plane is resolving
                // the sender: it decides); one to another host only updates what we know.
                let flags = Answer {
                    solicited: for_us,
                    override_: true,
                };
                let sender = (rx_if, arp.sender_ip, arp.sender_mac);
                self.learn(cx, view, sender, LearnKind::Answer(flags));
                Verdict::Consumed
            }
            _ => Verdict::Drop(Error::ReplyNotForUs),
        }
    }
}

impl Node for ArpInput {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let view = self.view.load();
        for &bi in frame {
            // Linux, behind the interface's tap, resolves its own neighbours: it hears every
            // ARP packet too (before a request is turned into our reply).
            let rx_if = cx.bufs.meta(bi).rx_if;
            if view.interface(rx_if).is_some_and(|i| i.host) {
                if let Some(copy) = cx.bufs.clone_packet(bi) {
                    cx.bufs.meta_mut(copy).aux = super::host_punt::Reason::ArpCopy as u32;
                    cx.enqueue(Next::Punt as usize, copy);
                }
            }
            let verdict = self.handle(cx, &view, bi);
            if cx.tracing() {
                let line = match &verdict {
                    Verdict::Reply => "request for us: replied".to_string(),
                    // The counter's own words, so a trace names what became of the frame.
                    Verdict::Consumed => Error::ReplyLearnt.reason().to_string(),
                    Verdict::Drop(e) => format!("drop: {}", e.reason()),
                };
                cx.trace(bi, line);
            }
            match verdict {
                Verdict::Reply => {
                    cx.count_error(Error::Replied as usize, 1);
                    cx.enqueue(Next::InterfaceOutput as usize, bi);
                }
                Verdict::Consumed => {
                    cx.count_error(Error::ReplyLearnt as usize, 1);
                    cx.bufs.free(bi);
                }
                Verdict::Drop(e) => {
                    cx.count_error(e as usize, 1);
                    cx.enqueue(Next::Drop as usize, bi);
                }
            }
        }
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::Harness;
    use crate::wire::arp::OP_REPLY;
    use std::sync::mpsc::{sync_channel, Receiver};

    const US: u32 = 0xc000_0201;
    const PEER: u32 = 0xc000_0202;
    const PEER_MAC: MacAddress = MacAddress([0x02, 0x11, 0, 0, 0, 2]);

    fn arp_frame(op: u16, sender: (MacAddress, u32), target: (MacAddress, u32)) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&sender.0 .0);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        ArpPacket {
            op,
            sender_mac: sender.0,
            sender_ip: sender.1,
            target_mac: target.0,
            target_ip: target.1,
        }
        .emit(&mut f[14..])
        .unwrap();
        f
    }

    fn setup(queue: usize) -> (Harness, LearnSender, Receiver<NeighborLearn>) {
        let h = Harness::new(2);
        h.add_address(0, US, 24);
        let (tx, rx) = sync_channel(queue);
        (h, tx, rx)
    }

    #[test]
    fn request_for_us_is_answered_in_place_and_requester_learnt() {
        let (h, tx, rx) = setup(8);
        let ours = h.view.load().interfaces[0].mac;
        let req = arp_frame(OP_REQUEST, (PEER_MAC, PEER), (MacAddress([0; 6]), US));
        let captured = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let out = h.run_node_capture(
            ArpInput::decl(h.view.clone(), tx),
            &[req],
            0,
            captured.clone(),
        );
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 1);
        assert_eq!(out.tx_ifs, vec![0]);
        assert_eq!(out.errors[Error::Replied as usize], 1);
        let bytes = captured.lock().unwrap()[0].clone();
        assert_eq!(&bytes[0..6], &PEER_MAC.0);
        assert_eq!(&bytes[6..12], &ours.0);
        let p = ArpPacket::parse(&bytes[14..]).unwrap();
        assert_eq!(p.op, OP_REPLY);
        assert_eq!((p.sender_mac, p.sender_ip), (ours, US));
        assert_eq!((p.target_mac, p.target_ip), (PEER_MAC, PEER));
        let learnt = rx.try_recv().unwrap();
        assert_eq!(learnt.ip, IpAddr::V4(PEER.into()));
        assert_eq!(learnt.mac, PEER_MAC);
    }

    #[test]
    fn replies_are_learnt_and_consumed_others_dropped_by_reason() {
        let (h, tx, rx) = setup(1);
        let ours = h.view.load().interfaces[0].mac;
        let frames = vec![
            arp_frame(OP_REPLY, (PEER_MAC, PEER), (ours, US)),
            arp_frame(OP_REQUEST, (PEER_MAC, PEER), (MacAddress([0; 6]), US + 7)),
            arp_frame(OP_REPLY, (PEER_MAC, PEER + 1), (ours, US + 9)),
            arp_frame(
                OP_REQUEST,
                (MacAddress([1, 0, 0, 0, 0, 1]), PEER),
                (ours, US),
            ),
            // The learn queue holds one: this second learn is counted as lost.
            arp_frame(OP_REPLY, (PEER_MAC, PEER + 2), (ours, US)),
            arp_frame(OP_REQUEST, (PEER_MAC, PEER), (ours, US))[..30].to_vec(),
        ];
        let out = h.run_node(ArpInput::decl(h.view.clone(), tx), &frames, 0);
        assert_eq!(out.errors[Error::ReplyLearnt as usize], 2);
        assert_eq!(out.errors[Error::RequestNotForUs as usize], 1);
        assert_eq!(out.errors[Error::ReplyNotForUs as usize], 1);
        assert_eq!(out.errors[Error::BadSender as usize], 1);
        assert_eq!(out.errors[Error::LearnQueueFull as usize], 1);
        assert_eq!(out.errors[Error::Truncated as usize], 1);
        assert_eq!(out.to_next(Next::Drop as usize), 4);
        assert_eq!(rx.try_recv().unwrap().ip, IpAddr::V4(PEER.into()));
    }

    #[test]
    fn probes_are_answered_unlearnt_and_claims_on_our_address_dropped() {
        let (h, tx, rx) = setup(8);
        let probe = arp_frame(OP_REQUEST, (PEER_MAC, 0), (MacAddress([0; 6]), US));
        let claim = arp_frame(OP_REQUEST, (PEER_MAC, US), (MacAddress([0; 6]), US));
        let out = h.run_node(ArpInput::decl(h.view.clone(), tx), &[probe, claim], 0);
        assert_eq!(out.errors[Error::Replied as usize], 1);
        assert_eq!(out.errors[Error::AddressConflict as usize], 1);
        assert!(rx.try_recv().is_err(), "a probe teaches nothing");
    }

    #[test]
    fn a_neighbour_already_known_is_not_sent_again() {
        let (h, tx, rx) = setup(8);
        h.edit_view(|v| {
            v.neighbors.insert((0, IpAddr::V4(PEER.into())), PEER_MAC);
        });
        let req = arp_frame(OP_REQUEST, (PEER_MAC, PEER), (MacAddress([0; 6]), US));
        h.run_node(ArpInput::decl(h.view.clone(), tx), &[req], 0);
        assert!(rx.try_recv().is_err());
    }
}
