//! ip6-nd: neighbour discovery (RFC 4861), both halves.
//!
//! Input: neighbour solicitations and advertisements that ip6-local hands over. A valid
//! solicitation for one of our addresses on the receiving interface (including the
//! link-local address derived from its MAC) is answered with a solicited advertisement, and
//! its source link-layer address is learnt; an advertisement's target link-layer address is
//! learnt. Learning is a `try_send` to the control plane, which publishes the neighbour in
//! the next view; a worker never blocks on it.
//!
//! Resolution: packets ip6-rewrite could not send for want of a neighbour's MAC are held here
//! (a few per neighbour, a bounded number of neighbours: see `neighbor_hold`) while a
//! solicitation goes to the neighbour's solicited-node group, once a second, three times
//! (RFC 4861 10: MAX_MULTICAST_SOLICIT, RETRANS_TIMER). The poll hook releases them back to
//! ip6-rewrite once the neighbour appears in the view, or drops them when it never answers. Which of the two a packet is for is
//! told by its adjacency: ip6-rewrite sends only neighbour and glean adjacencies here.
//!
//! Counters: first one per `NdError` (why a message is malformed, named in wire::icmp6),
//! then this node's own outcomes, `Error`.

use super::icmp_error::v6_towards;
use super::neighbor_hold::{HoldSlots, HoldTable, Next, Resolver, Schedule};
use super::rewrite::neighbor_of;
use crate::buffer::{WorkerBuffers, FLAG_LOCAL_ORIGIN};
use crate::graph::names::error_counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::ip::V6;
use crate::router::adjacency::{ethernet_rewrite, AdjKind, L3View, SharedL3View};
use crate::router::neighbor_map::{Probe, ProbeQueue};
use crate::router::nud::Answer;
use crate::router::{LearnKind, LearnSender, NeighborLearn};
use crate::wire::ethernet::{Frame, HEADER_LEN as ETH_HEADER_LEN};
use crate::wire::icmp6::{self, parse_nd, NdError, NdMessage, ND_PACKET_LEN};
use crate::wire::ipv6::{self, Ipv6Header, Ipv6View};
use crate::wire::{EtherType, MacAddress};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const NAME: &str = "ip6-nd";

/// Solicitations before giving up, and the time between them (RFC 4861 section 10); the
/// neighbour is given up one more RETRANS_TIMER after the last.
pub const MAX_SOLICIT: u32 = 3;
pub const RETRANS: Duration = Duration::from_millis(1000);
pub const SCHEDULE: Schedule = Schedule {
    interval: RETRANS,
    max_requests: MAX_SOLICIT,
    give_up: RETRANS,
};

error_counters! {
    /// ip6-nd's counters after the first `NdError::REASONS.len()`, which count the malformed
    /// messages by their `NdError` (its index is `NdError as usize`); `Error::ALL` is both.
    pub enum Error after NdError::REASONS {
        SolicitAnswered = "neighbour solicitations answered",
        SolicitNotOurs = "neighbour solicitation not for our address",
        AdvertLearnt = "neighbour advertisements learnt",
        AdvertNoAddress = "neighbour advertisement without link-layer address",
        LearnDropped = "neighbour learn dropped (control plane busy)",
        Held = "packets held for resolution",
        SolicitSent = "neighbour solicitations sent",
        Released = "held packets released to ip6-rewrite",
        QueueFull = "nd hold queue full for the neighbour (dropped)",
        TableFull = "too many neighbours being resolved (dropped)",
        NoAnswer = "neighbour did not answer solicitations (held packet dropped)",
        NoSourceAddress = "no IPv6 address to solicit from",
        NoBuffer = "buffer allocation failed",
        ProbesSent = "neighbour solicitations sent as unicast probes",
    }
}

/// The hold counters, `Held` to `NoAnswer`, in `HoldSlots` order.
const SLOTS: HoldSlots =
    HoldSlots::new(Error::Held as usize, Error::NoAnswer as usize, &Error::ALL);

/// The clock the resolver times retransmissions by.
pub type Clock = Box<dyn FnMut() -> Instant + Send>;

pub struct Ip6Nd {
    view: SharedL3View,
    learn: Option<LearnSender>,
    hold: Resolver,
    clock: Clock,
    /// Where a solicitation or advertisement is built.
    scratch: Scratch,
    /// The control plane's queue of unicast probes, and those taken from it.
    queue: Arc<ProbeQueue>,
    probes: Vec<Probe>,
}

/// Where a solicitation or advertisement is built: Ethernet header and IPv6 packet.
type Scratch = [u8; ETH_HEADER_LEN + ND_PACKET_LEN];

impl Ip6Nd {
    pub fn decl(view: SharedL3View, learn: Option<LearnSender>) -> NodeDecl {
        Self::decl_with_clock(view, learn, Box::new(Instant::now))
    }

    /// With its own clock (tests).
    pub fn decl_with_clock(
        view: SharedL3View,
        learn: Option<LearnSender>,
        mut clock: Clock,
    ) -> NodeDecl {
        let now = clock();
        NodeDecl::internal(
            NAME,
            &Next::names::<V6>(),
            &Error::ALL,
            Ip6Nd {
                queue: view.load().probes.clone(),
                probes: Vec::new(),
                view,
                learn,
                hold: Resolver::new(HoldTable::with_schedule(SCHEDULE), SLOTS, now),
                clock,
                scratch: [0; ETH_HEADER_LEN + ND_PACKET_LEN],
            },
        )
    }

    /// Tell the control plane what a neighbour said: a solicitation that repeats what the
    /// published view has is not sent; an advertisement always is (see arp-input).
    fn learn(
        &self,
        cx: &mut NodeCx<'_>,
        view: &L3View,
        n: (u32, u128, MacAddress),
        kind: LearnKind,
    ) {
        let Some(tx) = &self.learn else {
            return;
        };
        let (interface, ip, mac) = n;
        let ip = IpAddr::V6(Ipv6Addr::from(ip));
        if kind == LearnKind::Request && view.neighbors.mac(&(interface, ip)) == Some(mac) {
            return;
        }
        let n = NeighborLearn {
            interface,
            ip,
            mac,
            kind,
        };
        if tx.try_send(n).is_err() {
            cx.count_error(Error::LearnDropped as usize, 1);
        }
    }

    /// Put the Ethernet header and `ip_len` bytes of the scratch packet into a new buffer
    /// leaving by `tx_if`.
    fn emit(
        scratch: &mut Scratch,
        cx: &mut NodeCx<'_>,
        dst_mac: MacAddress,
        src_mac: MacAddress,
        tx_if: u32,
    ) {
        scratch[..ETH_HEADER_LEN].copy_from_slice(&ethernet_rewrite(
            dst_mac,
            src_mac,
            EtherType::IPV6.0,
        ));
        let Some(nb) = cx.bufs.packet_from_bytes(scratch) else {
            cx.count_error(Error::NoBuffer as usize, 1);
            return;
        };
        let m = cx.bufs.meta_mut(nb);
        m.tx_if = tx_if;
        m.rx_if = tx_if;
        m.flags = FLAG_LOCAL_ORIGIN;
        m.aux = 0;
        cx.enqueue(Next::InterfaceOutput as usize, nb);
    }

    /// A solicitation or advertisement from ip6-local: answer, learn, and drop it. Returns
    /// what became of it, or why it is malformed (the caller counts and traces either).
    fn input(&mut self, cx: &mut NodeCx<'_>, view: &L3View, bi: u32) -> Result<Error, NdError> {
        let rx_if = cx.bufs.meta(bi).rx_if;
        let Some(ip) = super::l3_header(cx.bufs, bi, EtherType::IPV6) else {
            return Err(NdError::NotIcmp6);
        };
        let link_source =
            Frame::new_checked(cx.bufs.data(bi)).map_or(MacAddress([0; 6]), |f| f.source());
        let msg = parse_nd(ip)?;
        // parse_nd has checked the header.
        let src = Ipv6Header::parse(ip).map_or(0, |h| h.source());
        let Some(itf) = view.interface(rx_if) else {
            return Ok(Error::SolicitNotOurs);
        };
        Ok(match msg {
            NdMessage::Solicit {
                target,
                source_link_addr,
            } => {
                let ours = itf.has_v6(target) || target == ipv6::link_local_from_mac(itf.mac);
                if !ours {
                    return Ok(Error::SolicitNotOurs);
                }
                let our_mac = itf.mac;
                // From :: (duplicate address detection): answer all nodes, unsolicited.
                let (dst_ip, dst_mac, solicited) = if ipv6::is_unspecified(src) {
                    (ipv6::ALL_NODES, ipv6::multicast_mac(ipv6::ALL_NODES), false)
                } else {
                    (src, source_link_addr.unwrap_or(link_source), true)
                };
                if let (Some(mac), false) = (source_link_addr, ipv6::is_unspecified(src)) {
                    self.learn(cx, view, (rx_if, src, mac), LearnKind::Request);
                }
                let ip_out = &mut self.scratch[ETH_HEADER_LEN..];
                icmp6::build_advert(ip_out, target, dst_ip, our_mac, target, solicited);
                Self::emit(&mut self.scratch, cx, dst_mac, our_mac, rx_if);
                Error::SolicitAnswered
            }
            NdMessage::Advert {
                target,
                target_link_addr,
                flags,
            } => match target_link_addr.or_else(|| {
                // A solicited NA to a unicast probe may leave out the address (RFC 4861
                // 7.2.4): it confirms the one we have.
                let key = (rx_if, IpAddr::V6(Ipv6Addr::from(target)));
                view.neighbors.mac(&key).filter(|_| flags.solicited)
            }) {
                Some(mac) => {
                    let answer = Answer {
                        solicited: flags.solicited,
                        override_: flags.override_ || target_link_addr.is_none(),
                    };
                    self.learn(cx, view, (rx_if, target, mac), LearnKind::Answer(answer));
                    Error::AdvertLearnt
                }
                None => Error::AdvertNoAddress,
            },
        })
    }

    /// Send the unicast probes the control plane asks for; how many.
    fn probe(&mut self, cx: &mut NodeCx<'_>, view: &L3View) -> usize {
        self.queue.take(true, &mut self.probes);
        let n = self.probes.len();
        for p in std::mem::take(&mut self.probes) {
            if let IpAddr::V6(ip) = p.ip {
                Self::solicit(
                    &mut self.scratch,
                    cx,
                    view,
                    p.interface,
                    ip.into(),
                    Some(p.mac),
                );
                cx.count_error(Error::ProbesSent as usize, 1);
            }
        }
        n
    }

    /// Send a solicitation for `target` out of `interface`: to its solicited-node group, or
    /// to the target itself at `unicast` (a probe, RFC 4861 7.3.3).
    fn solicit(
        scratch: &mut Scratch,
        cx: &mut NodeCx<'_>,
        view: &L3View,
        interface: u32,
        target: u128,
        unicast: Option<MacAddress>,
    ) {
        let Some(itf) = view.interface(interface) else {
            cx.count_error(Error::NoSourceAddress as usize, 1);
            return;
        };
        let Some(src) = v6_towards(itf, target) else {
            cx.count_error(Error::NoSourceAddress as usize, 1);
            return;
        };
        let mac = itf.mac;
        let (dst_ip, dst_mac) = match unicast {
            Some(m) => (target, m),
            None => {
                let group = ipv6::solicited_node(target);
                (group, ipv6::multicast_mac(group))
            }
        };
        icmp6::build_solicit_to(&mut scratch[ETH_HEADER_LEN..], src, mac, target, dst_ip);
        Self::emit(scratch, cx, dst_mac, mac, interface);
        cx.count_error(Error::SolicitSent as usize, 1);
    }

    /// A packet ip6-rewrite could not send: hold it and solicit its neighbour.
    fn hold(&mut self, cx: &mut NodeCx<'_>, view: &L3View, bi: u32) {
        let adj_index = cx.bufs.meta(bi).adj;
        let adj = *view.adj(adj_index);
        let dst = destination(cx.bufs, bi);
        let IpAddr::V6(neighbor) = neighbor_of(view, adj_index, dst) else {
            cx.count_error(NdError::NotIcmp6 as usize, 1);
            cx.enqueue(Next::Drop as usize, bi);
            return;
        };
        let key = IpAddr::V6(neighbor);
        // Learnt since ip6-rewrite looked (a newer view): straight back.
        if view.neighbors.contains_key(&(adj.interface, key)) {
            cx.count_error(Error::Released as usize, 1);
            cx.enqueue(Next::Rewrite as usize, bi);
            return;
        }
        let now = (self.clock)();
        if self.hold.hold(cx, adj.interface, key, bi, now) {
            if let Some(tx) = &self.learn {
                if tx
                    .try_send(NeighborLearn::solicit(adj.interface, key))
                    .is_err()
                {
                    cx.count_error(Error::LearnDropped as usize, 1);
                }
            }
            Self::solicit(
                &mut self.scratch,
                cx,
                view,
                adj.interface,
                neighbor.into(),
                None,
            );
        }
    }

    /// Packets held here now, for `show buffers`.
    pub fn held(&self) -> usize {
        self.hold.held()
    }
}

/// The IPv6 destination of a packet (:: if unreadable).
fn destination(bufs: &WorkerBuffers, bi: u32) -> u128 {
    super::l3_header(bufs, bi, EtherType::IPV6)
        .and_then(Ipv6View::of)
        .map_or(0, |h| h.destination())
}

impl Node for Ip6Nd {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let view = self.view.load();
        let tracing = cx.tracing();
        for &bi in frame {
            let kind = view.adj(cx.bufs.meta(bi).adj).kind;
            if matches!(kind, AdjKind::Neighbor | AdjKind::Glean) {
                if tracing {
                    cx.trace(bi, "held for neighbour resolution");
                }
                self.hold(cx, &view, bi);
            } else {
                let e = match self.input(cx, &view, bi) {
                    Ok(outcome) => outcome as usize,
                    Err(malformed) => malformed as usize,
                };
                cx.count_error(e, 1);
                if tracing {
                    cx.trace(bi, Error::ALL[e]);
                }
                cx.enqueue(Next::Drop as usize, bi);
            }
        }
        frame.len()
    }

    fn wants_poll(&self) -> bool {
        true
    }

    fn held_buffers(&self) -> usize {
        self.hold.held()
    }

    /// Release packets whose neighbour is now known, re-solicit the others once a second,
    /// give up on those that did not answer `MAX_SOLICIT` solicitations.
    fn poll(&mut self, cx: &mut NodeCx<'_>) -> usize {
        if self.hold.is_empty() && !self.queue.pending() {
            return 0;
        }
        let view = self.view.load();
        let probes = self.probe(cx, &view);
        if self.hold.is_empty() {
            return probes;
        }
        let now = (self.clock)();
        let scratch = &mut self.scratch;
        probes
            + self.hold.poll(cx, &view, now, |cx, itf, ip| {
                if let IpAddr::V6(ip) = ip {
                    Self::solicit(scratch, cx, &view, itf, ip.into(), None);
                }
            })
    }
}

#[cfg(test)]
#[path = "nd_tests.rs"]
mod tests;
