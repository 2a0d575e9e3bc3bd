//! ip4-rewrite: the last step of forwarding. For the adjacency ip4-lookup chose it finds the
//! Ethernet header (from the adjacency when complete, else from the neighbour table), checks
//! TTL and MTU, decrements the TTL with the incremental checksum of RFC 1624, cuts off any
//! bytes after the datagram's total length (link padding is not forwarded), writes the new
//! header in front of the IP header (dropping any VLAN tags the packet came with) and hands
//! the packet to interface-output. A neighbour not known yet sends the packet to ip4-arp,
//! unchanged; ip4-arp brings it back here once the neighbour answers.
//!
//! A forwarded packet's record route option gets the outgoing interface's address. A packet
//! larger than the MTU goes back to its sender as ICMP fragmentation needed when it has DF
//! set, and otherwise leaves in fragments, each in a buffer of its own (a slow path: it
//! copies).

use super::lookup::IP4_REWRITE;
use super::IcmpErrorRequest;
use crate::buffer::{WorkerBuffers, FLAG_LOCAL_ORIGIN};
use crate::features::{self, FeatureView, SharedFeatures, IP4_OUTPUT};
use crate::graph::{NodeCx, NodeDecl, NodeKind, TracedLoop};
use crate::router::adjacency::{ethernet_rewrite, AdjKind, Adjacency, L3View, SharedL3View};
use crate::wire::ethernet::{Repr as EthernetRepr, HEADER_LEN as ETH_HEADER_LEN};
use crate::wire::icmp4;
use crate::wire::ipv4::{decrement_ttl, fragment, record_route, Ipv4View, MIN_HEADER_LEN};
use crate::wire::EtherType;
use std::net::{IpAddr, Ipv4Addr};

/// How many packets ahead the data is prefetched.
const PREFETCH_AHEAD: usize = 4;
/// The first next slot of the ip4-output arc's features (after the `Next` slots).
pub const OUTPUT_FEATURES: usize = 4;

#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    InterfaceOutput,
    Arp,
    IcmpError,
    Drop,
}

#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    NotIpv4,
    DropAdjacency,
    NotNeighbor,
    NoInterface,
    TtlExpired,
    TooBig,
    OwnTooBig,
    Unresolved,
    Fragmented,
    FragmentFailed,
}

pub const ERRORS: [&str; 10] = [
    "not an IPv4 packet",
    "adjacency drops the packet",
    "adjacency is not a neighbour (local, multipath or stale)",
    "adjacency's interface is not in the view",
    "ttl expired (sent to icmp4-error)",
    "larger than the MTU with DF set (sent to icmp4-error)",
    "own packet with DF set larger than the MTU",
    "neighbour not resolved (sent to ip4-arp)",
    "larger than the MTU: fragmented",
    "larger than the MTU: no buffer for its fragments",
];

/// What happens to one packet; `Forward` has already been applied to its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Forward {
        tx_if: u32,
    },
    /// Rewritten like `Forward`, but larger than `mtu`: to be cut into fragments.
    Fragment {
        tx_if: u32,
        mtu: u32,
    },
    Arp,
    Icmp(IcmpErrorRequest, Error),
    Drop(Error),
}

impl Verdict {
    fn next(self) -> Next {
        match self {
            Verdict::Forward { .. } | Verdict::Fragment { .. } => Next::InterfaceOutput,
            Verdict::Arp => Next::Arp,
            Verdict::Icmp(..) => Next::IcmpError,
            Verdict::Drop(_) => Next::Drop,
        }
    }

    fn counted(self) -> Option<Error> {
        match self {
            Verdict::Forward { .. } => None,
            Verdict::Fragment { .. } => Some(Error::Fragmented),
            Verdict::Arp => Some(Error::Unresolved),
            Verdict::Icmp(_, e) | Verdict::Drop(e) => Some(e),
        }
    }
}

/// Why `neighbor_header` found no header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoHeader {
    /// The neighbour's MAC is not known yet.
    Unresolved,
    /// The adjacency's interface is not in the view.
    NoInterface,
}

/// The Ethernet header of `ethertype` a packet by `adj` leaves with: the adjacency's own when
/// complete, else one to the MAC the view knows for `neighbor()` (the next hop, or the
/// destination itself on a connected network). Shared by ip4-rewrite and ip6-rewrite.
pub(crate) fn neighbor_header(
    view: &L3View,
    adj: &Adjacency,
    neighbor: impl FnOnce() -> IpAddr,
    ethertype: EtherType,
) -> Result<[u8; ETH_HEADER_LEN], NoHeader> {
    if adj.kind == AdjKind::Neighbor && adj.complete {
        return Ok(adj.rewrite);
    }
    let mac = view
        .neighbors
        .get(&(adj.interface, neighbor()))
        .ok_or(NoHeader::Unresolved)?;
    let itf = view.interface(adj.interface).ok_or(NoHeader::NoInterface)?;
    Ok(ethernet_rewrite(*mac, itf.mac, ethertype.0))
}

/// Put `header` in front of the IP header at `l3` (VLAN tags in between go) and send the
/// packet out of `tx_if`. False when the packet is too short for it.
pub(crate) fn write_header(
    bufs: &mut WorkerBuffers,
    bi: u32,
    l3: usize,
    header: &[u8; ETH_HEADER_LEN],
    tx_if: u32,
) -> bool {
    let Some(strip) = l3.checked_sub(ETH_HEADER_LEN) else {
        return false;
    };
    if strip > 0 && !bufs.advance(bi, strip) {
        return false;
    }
    bufs.data_mut(bi)[..ETH_HEADER_LEN].copy_from_slice(header);
    bufs.meta_mut(bi).tx_if = tx_if;
    true
}

pub struct Ip4Rewrite {
    view: SharedL3View,
    /// The ip4-output arc's features on each interface (an output ACL).
    features: SharedFeatures,
    /// Fragmentation's scratch: the whole packet, one fragment's datagram and frame, the
    /// fragments' buffers.
    whole: Vec<u8>,
    piece: Vec<u8>,
    frame: Vec<u8>,
    out: Vec<u32>,
}

impl Ip4Rewrite {
    /// With no output feature on any interface.
    pub fn decl(view: SharedL3View) -> NodeDecl {
        Self::decl_with(view, features::shared(FeatureView::new()))
    }

    /// Packets leave for interface-output, or for the ip4-output arc's first feature on
    /// their interface (its features are this node's nexts from `OUTPUT_FEATURES` on).
    pub fn decl_with(view: SharedL3View, features: SharedFeatures) -> NodeDecl {
        let mut next = vec![
            super::INTERFACE_OUTPUT.to_string(),
            super::IP4_ARP.to_string(),
            super::ICMP4_ERROR.to_string(),
            super::ERROR_DROP.to_string(),
        ];
        next.extend(features::feature_names(IP4_OUTPUT));
        NodeDecl {
            name: IP4_REWRITE.to_string(),
            kind: NodeKind::Internal,
            next,
            errors: ERRORS.to_vec(),
            node: Box::new(Ip4Rewrite {
                view,
                features,
                whole: Vec::new(),
                piece: Vec::new(),
                frame: Vec::new(),
                out: Vec::new(),
            }),
        }
    }

    /// Decide one packet's fate and, when it is forwarded, rewrite it in place. Packets sent
    /// anywhere else are left untouched (icmp4-error quotes them as they arrived).
    pub fn rewrite(view: &L3View, bufs: &mut WorkerBuffers, bi: u32) -> Verdict {
        let meta = *bufs.meta(bi);
        let adj = *view.adj(meta.adj);
        match adj.kind {
            AdjKind::Neighbor | AdjKind::Glean => {}
            AdjKind::Drop => return Verdict::Drop(Error::DropAdjacency),
            AdjKind::Local | AdjKind::Multipath => return Verdict::Drop(Error::NotNeighbor),
        }
        let l3 = meta.l3_offset as usize;
        let ip = match super::l3_header(bufs, bi, EtherType::IPV4).and_then(Ipv4View::of) {
            Some(ip) if ip.version() == 4 => ip,
            _ => return Verdict::Drop(Error::NotIpv4),
        };
        // Our own replies and errors start with a fresh TTL and are not forwarded traffic.
        let local = meta.flags & FLAG_LOCAL_ORIGIN != 0;
        if !local && ip.ttl() <= 1 {
            let req = IcmpErrorRequest {
                kind: icmp4::TIME_EXCEEDED,
                code: icmp4::CODE_TTL_EXCEEDED,
                arg: 0,
            };
            return Verdict::Icmp(req, Error::TtlExpired);
        }
        let total = ip.total_len() as u32;
        // MTU 0 means the control plane set none: no limit to enforce.
        let too_big = adj.mtu != 0 && total > adj.mtu;
        if too_big && ip.dont_fragment() {
            if local {
                return Verdict::Drop(Error::OwnTooBig);
            }
            let req = IcmpErrorRequest {
                kind: icmp4::DEST_UNREACHABLE,
                code: icmp4::CODE_FRAGMENTATION_NEEDED,
                arg: adj.mtu.min(u16::MAX as u32) as u16,
            };
            return Verdict::Icmp(req, Error::TooBig);
        }
        let (destination, hl) = (ip.destination(), ip.header_len());

        let neighbor = || match adj.kind {
            AdjKind::Glean => IpAddr::V4(Ipv4Addr::from(destination)),
            _ => adj.next_hop,
        };
        let header = match neighbor_header(view, &adj, neighbor, EtherType::IPV4) {
            Ok(h) => h,
            Err(NoHeader::Unresolved) => return Verdict::Arp,
            Err(NoHeader::NoInterface) => return Verdict::Drop(Error::NoInterface),
        };

        if !local {
            let ip = bufs.l3_mut(bi);
            if hl > MIN_HEADER_LEN {
                // ip4-input checked the header: all of it is in this segment.
                let out = view.interface(adj.interface).map_or(0, |i| i.primary_v4());
                if let Some(header) = ip.get_mut(..hl) {
                    record_route(header, out);
                }
            }
            decrement_ttl(ip);
        }
        super::trim_to(bufs, bi, l3 + total as usize);
        if !write_header(bufs, bi, l3, &header, adj.interface) {
            return Verdict::Drop(Error::NotIpv4);
        }
        let tx_if = adj.interface;
        if too_big {
            return Verdict::Fragment {
                tx_if,
                mtu: adj.mtu,
            };
        }
        Verdict::Forward { tx_if }
    }

    /// Cut the rewritten packet `bi` (Ethernet header, then the datagram) into fragments of
    /// at most `mtu` bytes of IP, each in a new buffer behind the same Ethernet header and
    /// queued for `interface-output`; `bi` itself goes back to the pool. On failure nothing
    /// is sent and `bi` is for the caller to drop.
    fn fragment(&mut self, cx: &mut NodeCx<'_>, bi: u32, mtu: u32) -> Result<usize, Error> {
        let Ip4Rewrite {
            whole,
            piece,
            frame,
            out,
            ..
        } = self;
        cx.bufs.copy_packet(bi, whole);
        let meta = *cx.bufs.meta(bi);
        out.clear();
        let bufs = &mut *cx.bufs;
        let eth = &whole[..ETH_HEADER_LEN];
        let done = fragment(&whole[ETH_HEADER_LEN..], mtu as usize, piece, |f| {
            frame.clear();
            frame.extend_from_slice(eth);
            frame.extend_from_slice(f);
            let Some(nb) = bufs.packet_from_bytes(frame) else {
                return false;
            };
            let m = bufs.meta_mut(nb);
            m.rx_if = meta.rx_if;
            m.tx_if = meta.tx_if;
            m.adj = meta.adj;
            m.flags = meta.flags;
            m.trace_index = meta.trace_index;
            out.push(nb);
            true
        });
        match done {
            Ok(n) => {
                // Fragments take the output arc too: an output ACL sees each of them.
                let features = self.features.load();
                let slot = features::start_slot(&features, IP4_OUTPUT, meta.tx_if, OUTPUT_FEATURES);
                cx.enqueue_all(slot, out);
                cx.bufs.free(bi);
                Ok(n)
            }
            Err(_) => {
                for &nb in out.iter() {
                    cx.bufs.free(nb);
                }
                Err(Error::FragmentFailed)
            }
        }
    }

    fn trace(cx: &mut NodeCx<'_>, bi: u32, verdict: Verdict) {
        let adj = cx.bufs.meta(bi).adj;
        match verdict {
            Verdict::Forward { tx_if } => {
                let eth = EthernetRepr::parse(cx.bufs.data(bi));
                let (Ok(eth), Some(ip)) = (eth, Ipv4View::of(cx.bufs.l3(bi))) else {
                    return;
                };
                let ttl = ip.ttl();
                cx.trace(
                    bi,
                    format_args!("adj {adj} tx if {tx_if} {eth} ttl now {ttl}"),
                );
            }
            Verdict::Fragment { tx_if, mtu } => cx.trace(
                bi,
                format_args!(
                    "adj {adj} tx if {tx_if}: {} (mtu {mtu})",
                    ERRORS[Error::Fragmented as usize]
                ),
            ),
            Verdict::Icmp(req, e) => cx.trace(
                bi,
                format_args!(
                    "adj {adj}: {} (icmp {} code {} arg {})",
                    ERRORS[e as usize], req.kind, req.code, req.arg
                ),
            ),
            Verdict::Arp => cx.trace(
                bi,
                format_args!("adj {adj}: {}", ERRORS[Error::Unresolved as usize]),
            ),
            Verdict::Drop(e) => {
                cx.trace(bi, format_args!("adj {adj}: drop: {}", ERRORS[e as usize]))
            }
        }
    }
}

impl TracedLoop for Ip4Rewrite {
    fn run<const TRACE: bool>(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) {
        let view = self.view.load();
        let features = self.features.load();
        let output_features = features.any(IP4_OUTPUT);
        for (k, &bi) in frame.iter().enumerate() {
            if let Some(&ahead) = frame.get(k + PREFETCH_AHEAD) {
                cx.bufs.prefetch(ahead);
            }
            let mut verdict = Self::rewrite(&view, cx.bufs, bi);
            if let Verdict::Icmp(req, _) = verdict {
                cx.bufs.meta_mut(bi).aux = req.to_aux();
            }
            if TRACE {
                Self::trace(cx, bi, verdict);
            }
            if let Verdict::Fragment { mtu, .. } = verdict {
                match self.fragment(cx, bi, mtu) {
                    Ok(_) => {
                        cx.count_error(Error::Fragmented as usize, 1);
                        continue;
                    }
                    Err(e) => {
                        cx.trace(bi, ERRORS[e as usize]);
                        verdict = Verdict::Drop(e);
                    }
                }
            }
            if let Some(e) = verdict.counted() {
                cx.count_error(e as usize, 1);
            }
            let slot = match verdict {
                Verdict::Forward { tx_if } if output_features => {
                    features::start_slot(&features, IP4_OUTPUT, tx_if, OUTPUT_FEATURES)
                }
                v => v.next() as usize,
            };
            cx.enqueue(slot, bi);
        }
    }
}

/// Frames and views for the tests of the IPv4 routing nodes.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::router::adjacency::{
        ethernet_rewrite, AdjKind, Adjacency, L3Interface, L3View, SharedL3View,
    };
    use crate::wire::ipv4::checksum;
    use crate::wire::MacAddress;
    use arc_swap::ArcSwap;
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;

    pub const HOST_MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 0xaa]);
    pub const NEIGHBOR_MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 0xbb]);
    pub const GLEANED_MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 0xcc]);
    /// Interface k has MAC 02:00:00:00:01:k and address 10.k.0.1/24.
    pub fn if_mac(k: u8) -> MacAddress {
        MacAddress([2, 0, 0, 0, 1, k])
    }
    pub fn if_addr(k: u8) -> u32 {
        u32::from_be_bytes([10, k, 0, 1])
    }

    /// Adjacency indices of `view()`.
    pub const ADJ_COMPLETE: u32 = 2;
    pub const ADJ_GLEAN: u32 = 3;
    pub const ADJ_INCOMPLETE: u32 = 4;
    pub const ADJ_SMALL_MTU: u32 = 5;
    /// 10.1.0.2: the complete neighbour; 10.1.0.3: incomplete in the adjacency but in the
    /// neighbour table; 10.1.0.9: a gleaned host in the table.
    pub const GLEANED: [u8; 4] = [10, 1, 0, 9];

    /// Two interfaces, if0 and if1 (if2 without an address), and one adjacency of each kind
    /// leaving by if1.
    pub fn view() -> SharedL3View {
        let interfaces = (0..3u8)
            .map(|k| L3Interface {
                mac: if_mac(k),
                mtu: 1500,
                v4: if k < 2 {
                    vec![(if_addr(k), 24)]
                } else {
                    vec![]
                },
                v6: vec![],
                glean: if k == 1 { ADJ_GLEAN } else { 0 },
                ..Default::default()
            })
            .collect();
        let mut v = L3View::new(interfaces);
        let neighbor = |ip: [u8; 4], complete: bool, mtu: u32| Adjacency {
            kind: AdjKind::Neighbor,
            interface: 1,
            next_hop: IpAddr::V4(Ipv4Addr::from(ip)),
            complete,
            rewrite: if complete {
                ethernet_rewrite(NEIGHBOR_MAC, if_mac(1), 0x0800)
            } else {
                [0; 14]
            },
            mtu,
            first: 0,
            count: 0,
        };
        v.adjs.push(neighbor([10, 1, 0, 2], true, 1500));
        v.adjs.push(Adjacency {
            kind: AdjKind::Glean,
            interface: 1,
            mtu: 1500,
            ..Adjacency::simple(AdjKind::Glean)
        });
        v.adjs.push(neighbor([10, 1, 0, 3], false, 1500));
        v.adjs.push(neighbor([10, 1, 0, 2], true, 1000));
        v.neighbors
            .insert((1, IpAddr::V4(Ipv4Addr::new(10, 1, 0, 3))), NEIGHBOR_MAC);
        v.neighbors
            .insert((1, IpAddr::V4(Ipv4Addr::from(GLEANED))), GLEANED_MAC);
        Arc::new(ArcSwap::from_pointee(v))
    }

    /// An Ethernet frame to the router (if0) carrying IPv4 from `src` to `dst`.
    pub fn frame(
        src: [u8; 4],
        dst: [u8; 4],
        proto: u8,
        ttl: u8,
        df: bool,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut f = ethernet_rewrite(if_mac(0), HOST_MAC, 0x0800).to_vec();
        let total = (20 + payload.len()) as u16;
        let mut ip = vec![
            0x45,
            0,
            0,
            0,
            0xbe,
            0xef,
            if df { 0x40 } else { 0 },
            0,
            ttl,
            proto,
            0,
            0,
        ];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(payload);
        f
    }

    /// A UDP datagram from 198.18.0.1 to `dst`, `len` bytes of IP.
    pub fn udp(dst: [u8; 4], ttl: u8, df: bool, len: usize) -> Vec<u8> {
        let payload: Vec<u8> = (0..len - 20).map(|i| i as u8).collect();
        frame([198, 18, 0, 1], dst, 17, ttl, df, &payload)
    }

    /// `f` with an 802.1Q tag (VLAN 100) after the MAC addresses.
    pub fn tagged(f: &[u8]) -> Vec<u8> {
        let mut t = f[..12].to_vec();
        t.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
        t.extend_from_slice(&f[12..]);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::buffer::{BufferPool, HugePages};
    use crate::nodes::testing::Harness;
    use crate::wire::ipv4::{checksum, Ipv4Header};
    use proptest::prelude::*;

    /// Run `rewrite` on one packet and return the verdict and the bytes after it.
    fn rewrite_one(frame: &[u8], adj: u32, flags: u8) -> (Verdict, Vec<u8>, u32) {
        let pool = BufferPool::new(16, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let bi = crate::nodes::testing::received(&mut bufs, frame);
        bufs.meta_mut(bi).adj = adj;
        bufs.meta_mut(bi).flags = flags;
        let v = view();
        let verdict = Ip4Rewrite::rewrite(&v.load(), &mut bufs, bi);
        let mut out = Vec::new();
        bufs.copy_packet(bi, &mut out);
        let tx = bufs.meta(bi).tx_if;
        bufs.free(bi);
        (verdict, out, tx)
    }

    fn run(frames: &[Vec<u8>], adjs: &[u32]) -> crate::nodes::testing::Outcome {
        let h = Harness::new(3);
        h.run_node_with(Ip4Rewrite::decl(view()), frames, 0, |m, k| m.adj = adjs[k])
    }

    /// Checks a forwarded packet: the header `eth`, TTL one less, checksum valid, rest as sent.
    fn assert_forwarded(sent: &[u8], out: &[u8], eth: [u8; 14]) {
        assert_eq!(&out[..14], &eth);
        assert_eq!(out.len(), sent.len());
        let h = Ipv4Header::parse(&out[14..]).unwrap();
        assert_eq!(h.ttl() + 1, sent[22]);
        assert_eq!(&out[14..22], &sent[14..22]);
        assert_eq!(&out[23..24], &sent[23..24]);
        assert_eq!(&out[26..], &sent[26..]);
    }

    /// Forwarded to the neighbour on if1 by its complete adjacency.
    fn assert_to_neighbor(sent: &[u8], out: &[u8]) {
        assert_forwarded(sent, out, ethernet_rewrite(NEIGHBOR_MAC, if_mac(1), 0x0800));
    }

    #[test]
    fn complete_neighbor_is_rewritten_and_sent() {
        let sent = udp([192, 0, 2, 1], 64, false, 100);
        let (v, out, tx) = rewrite_one(&sent, ADJ_COMPLETE, 0);
        assert_eq!((v, tx), (Verdict::Forward { tx_if: 1 }, 1));
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn neighbor_table_completes_glean_and_incomplete_adjacencies() {
        let sent = udp(GLEANED, 9, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_GLEAN, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_forwarded(
            &sent,
            &out,
            ethernet_rewrite(GLEANED_MAC, if_mac(1), 0x0800),
        );

        let sent = udp([192, 0, 2, 1], 9, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_INCOMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn bytes_after_the_total_length_are_not_forwarded() {
        let sent = udp([192, 0, 2, 1], 64, false, 100);
        let mut padded = sent.clone();
        padded.extend_from_slice(&[0xee; 50]);
        let (v, out, _) = rewrite_one(&padded, ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&sent, &out);
    }

    #[test]
    fn record_route_gets_the_outgoing_interface_address() {
        let plain = udp([192, 0, 2, 1], 64, false, 60);
        // Insert a record route option with room for one address: IHL 5 -> 7.
        let mut f = plain[..34].to_vec();
        f.extend_from_slice(&[7, 7, 4, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&plain[34..]);
        f[14] = 0x47;
        let total = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[24..26].copy_from_slice(&[0, 0]);
        let c = checksum(&f[14..42]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let (v, out, _) = rewrite_one(&f, ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_eq!(&out[34..42], &[7, 7, 8, 10, 1, 0, 1, 0]);
        assert_eq!(checksum(&out[14..42]), 0);
        assert_eq!(out[22], 63);
    }

    #[test]
    fn unknown_neighbor_goes_to_arp_untouched() {
        let sent = udp([10, 1, 0, 77], 9, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_GLEAN, 0);
        assert_eq!((v, out), (Verdict::Arp, sent));
    }

    #[test]
    fn vlan_tagged_input_leaves_untagged() {
        let plain = udp([192, 0, 2, 1], 64, false, 100);
        let (v, out, _) = rewrite_one(&tagged(&plain), ADJ_COMPLETE, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_to_neighbor(&plain, &out);
    }

    #[test]
    fn ttl_one_and_zero_go_to_icmp_error_untouched() {
        for ttl in [0, 1] {
            let sent = udp([192, 0, 2, 1], ttl, false, 60);
            let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, 0);
            let req = IcmpErrorRequest {
                kind: 11,
                code: 0,
                arg: 0,
            };
            assert_eq!((v, out), (Verdict::Icmp(req, Error::TtlExpired), sent));
        }
        // Unless the router made the packet itself: its TTL is left alone.
        let sent = udp([192, 0, 2, 1], 1, false, 60);
        let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, FLAG_LOCAL_ORIGIN);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
        assert_eq!(&out[14..], &sent[14..]);
    }

    #[test]
    fn too_big_with_df_asks_for_fragmentation_needed_with_the_mtu() {
        let sent = udp([192, 0, 2, 1], 64, true, 1001);
        let (v, out, _) = rewrite_one(&sent, ADJ_SMALL_MTU, 0);
        let req = IcmpErrorRequest {
            kind: 3,
            code: 4,
            arg: 1000,
        };
        assert_eq!((v, out), (Verdict::Icmp(req, Error::TooBig), sent));
        let (v, _, _) = rewrite_one(&udp([192, 0, 2, 1], 64, false, 1001), ADJ_SMALL_MTU, 0);
        assert_eq!(
            v,
            Verdict::Fragment {
                tx_if: 1,
                mtu: 1000
            }
        );
        let (v, _, _) = rewrite_one(
            &udp([192, 0, 2, 1], 64, true, 1001),
            ADJ_SMALL_MTU,
            FLAG_LOCAL_ORIGIN,
        );
        assert_eq!(v, Verdict::Drop(Error::OwnTooBig));
        let (v, _, _) = rewrite_one(&udp([192, 0, 2, 1], 64, true, 1000), ADJ_SMALL_MTU, 0);
        assert_eq!(v, Verdict::Forward { tx_if: 1 });
    }

    #[test]
    fn node_routes_and_counts_each_case() {
        let frames = vec![
            udp([192, 0, 2, 1], 64, false, 100),
            tagged(&udp([192, 0, 2, 1], 64, false, 100)),
            udp([10, 1, 0, 77], 64, false, 100),
            udp([192, 0, 2, 1], 1, false, 100),
            udp([192, 0, 2, 1], 64, true, 1200),
            udp([192, 0, 2, 1], 64, false, 1200),
            udp([192, 0, 2, 1], 64, false, 100),
            udp([192, 0, 2, 1], 64, false, 100),
            udp([192, 0, 2, 1], 64, false, 100),
        ];
        let adjs = [
            ADJ_COMPLETE,
            ADJ_COMPLETE,
            ADJ_GLEAN,
            ADJ_COMPLETE,
            ADJ_SMALL_MTU,
            ADJ_SMALL_MTU,
            0,
            1,
            999,
        ];
        let out = run(&frames, &adjs);
        // The 1200-byte packet without DF leaves as two fragments.
        // (The last slot is the output ACL, off here.)
        assert_eq!(out.per_next, vec![4, 1, 2, 3, 0]);
        let e = &out.errors;
        assert_eq!(e[Error::Unresolved as usize], 1);
        assert_eq!(e[Error::TtlExpired as usize], 1);
        assert_eq!(e[Error::TooBig as usize], 1);
        assert_eq!(e[Error::Fragmented as usize], 1);
        // Adjacency 0 and a stale index both read as drop; 1 is local.
        assert_eq!(e[Error::DropAdjacency as usize], 2);
        assert_eq!(e[Error::NotNeighbor as usize], 1);
        assert_eq!(out.tx_ifs.iter().filter(|&&t| t == 1).count(), 4);
    }

    #[test]
    fn too_big_without_df_leaves_in_fragments_behind_the_neighbour_header() {
        let sent = udp([192, 0, 2, 1], 64, false, 2500);
        let h = Harness::new(3);
        let captured = crate::nodes::testing::Captured::default();
        let decl = Ip4Rewrite::decl(view());
        let to_small_mtu = |m: &mut crate::buffer::BufferMeta, _| m.adj = ADJ_SMALL_MTU;
        let out = h.run_node_capture_with(
            decl,
            std::slice::from_ref(&sent),
            0,
            to_small_mtu,
            captured.clone(),
        );
        // 2500 bytes of IP over an MTU of 1000: 976 + 976 + 528 bytes of data (offsets
        // count in 8 bytes, so 980 rounds down).
        assert_eq!(out.to_next(Next::InterfaceOutput as usize), 3);
        assert_eq!(out.errors[Error::Fragmented as usize], 1);
        let frags = captured.lock().unwrap().clone();
        let mut data = Vec::new();
        for (k, f) in frags.iter().enumerate() {
            assert_eq!(&f[..14], &ethernet_rewrite(NEIGHBOR_MAC, if_mac(1), 0x0800));
            let ip = Ipv4Header::parse(&f[14..]).unwrap();
            assert_eq!((ip.ttl(), ip.total_len()), (63, f.len() - 14));
            assert!(ip.total_len() <= 1000);
            let field = u16::from_be_bytes([f[20], f[21]]);
            assert_eq!(field & 0x1fff, (k * 976 / 8) as u16);
            assert_eq!(field & 0x2000 != 0, k < 2);
            data.extend_from_slice(&f[34..]);
        }
        assert_eq!(data, &sent[34..]);
    }

    #[test]
    fn non_ipv4_frames_are_dropped() {
        let mut arp = udp([192, 0, 2, 1], 64, false, 100);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let short = udp([192, 0, 2, 1], 64, false, 100)[..30].to_vec();
        for f in [arp, short, vec![0; 5]] {
            assert_eq!(
                rewrite_one(&f, ADJ_COMPLETE, 0).0,
                Verdict::Drop(Error::NotIpv4)
            );
        }
    }

    proptest! {
        /// The TTL decrement's incremental checksum equals a full recomputation, whatever
        /// the header holds.
        #[test]
        fn incremental_checksum_equals_recomputation(
            ttl in 2u8..=255, df in any::<bool>(), proto in any::<u8>(),
            src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), tos in any::<u8>(),
            len in 20usize..1500, vlan in any::<bool>(),
        ) {
            let mut f = frame(src, dst, proto, ttl, df, &vec![0x33; len - 20]);
            f[15] = tos;
            f[24..26].copy_from_slice(&[0, 0]);
            let c = checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
            let sent = if vlan { tagged(&f) } else { f };
            let (v, out, _) = rewrite_one(&sent, ADJ_COMPLETE, 0);
            prop_assert_eq!(v, Verdict::Forward { tx_if: 1 });
            prop_assert_eq!(out[22], ttl - 1);
            let incremental = [out[24], out[25]];
            let mut ip = out[14..34].to_vec();
            ip[10..12].copy_from_slice(&[0, 0]);
            prop_assert_eq!(incremental, checksum(&ip).to_be_bytes());
        }

        /// Whatever the bytes and adjacency: a verdict, never a panic.
        #[test]
        fn rewrite_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..120),
            adj in 0u32..8, flags in 0u8..4,
        ) {
            let _ = rewrite_one(&bytes, adj, flags);
        }
    }
}
