//! ip6-local: IPv6 packets for the router itself (a Local adjacency, or a link-scope group).
//! Echo requests are answered in place and routed back through ip6-lookup; neighbour
//! solicitations and advertisements go to ip6-nd; UDP finds no listener and asks icmp6-error
//! for a port unreachable; any other upper layer is a next header the router does not
//! recognise, answered with a parameter problem pointing at that next header field (RFC 8200
//! 4, RFC 4443 3.4). Everything else is a counted drop: the router runs no other service in
//! the dataplane.

use super::icmp_error::v6_towards;
use super::IcmpErrorRequest;
use crate::buffer::{WorkerBuffers, FLAG_LOCAL_ORIGIN};
use crate::graph::names::error_counters;
pub use crate::ip::local::Next;
use crate::ip::local::{IpLocal, LocalRules};
use crate::ip::V6;
use crate::router::adjacency::L3View;
use crate::wire::icmp6::{self, echo_request_to_reply, upper_layer_named, EchoError};
use crate::wire::ipv6::{self, next_header, Ipv6Header};
use crate::wire::EtherType;

pub const NAME: &str = "ip6-local";

error_counters! {
    pub enum Error {
        EchoReplied = "echo requests answered",
        NeighborDiscovery = "neighbour discovery (to ip6-nd)",
        PortUnreachable = "udp to a closed port (to icmp6-error)",
        NotIpv6 = "not an IPv6 packet",
        EchoChecksum = "icmp6 checksum bad",
        EchoUnanswerable = "echo request not answerable (multicast source, truncated)",
        NoAddress = "no IPv6 address to answer from",
        Icmp6Other = "icmp6 type not handled",
        UdpToGroup = "udp to a group with no listener",
        Fragment = "fragment for us (no reassembly)",
        NoNextHeader = "no next header (nothing to deliver)",
        UnknownNextHeader = "next header not recognised: parameter problem (to icmp6-error)",
    }
}

/// Parameter problem code 1: unrecognised Next Header type.
const UNRECOGNISED_NEXT_HEADER: u8 = 1;

/// The IPv6 local delivery node.
pub type Ip6Local = IpLocal<V6>;
/// What happens to one packet.
pub type Verdict = crate::ip::local::Verdict<Error>;

impl LocalRules for V6 {
    type Counter = Error;
    const DISCOVERY_NODE: Option<&'static str> = Some(super::nd::NAME);

    const HOST_REASON: crate::lcp::host_punt::Reason = crate::lcp::host_punt::Reason::Local6;

    /// TCP, UDP, other next headers, ICMPv6 the router does not take itself (router
    /// advertisements, MLD, an echo reply to Linux's ping), UDP to a group (OSPFv3 is not
    /// UDP, but RIPng and DHCPv6 are) and fragments.
    fn for_host(verdict: Verdict) -> bool {
        matches!(
            verdict,
            Verdict::Icmp(_)
                | Verdict::Drop(Error::Icmp6Other | Error::UdpToGroup | Error::Fragment)
        )
    }

    fn counter(verdict: Verdict) -> Error {
        match verdict {
            Verdict::Reply => Error::EchoReplied,
            Verdict::Discovery => Error::NeighborDiscovery,
            Verdict::Icmp(req) if req.kind == icmp6::kind::PARAMETER_PROBLEM => {
                Error::UnknownNextHeader
            }
            Verdict::Icmp(_) => Error::PortUnreachable,
            Verdict::Drop(e) => e,
        }
    }

    fn local(view: &L3View, bufs: &mut WorkerBuffers, bi: u32) -> Verdict {
        let meta = *bufs.meta(bi);
        let l3 = meta.l3_offset as usize;
        let Some(ip) = super::l3_header(bufs, bi, EtherType::IPV6) else {
            return Verdict::Drop(Error::NotIpv6);
        };
        let Ok(h) = Ipv6Header::parse_in(ip, super::l3_len(bufs, bi)) else {
            return Verdict::Drop(Error::NotIpv6);
        };
        let (src, dst) = (h.source(), h.destination());
        let Some((proto, at, field)) = upper_layer_named(ip) else {
            return Verdict::Drop(Error::NotIpv6);
        };
        match proto {
            next_header::ICMPV6 => {}
            next_header::UDP if ipv6::is_multicast(dst) => return Verdict::Drop(Error::UdpToGroup),
            next_header::UDP => {
                return Verdict::Icmp(IcmpErrorRequest::new(icmp6::kind::DEST_UNREACHABLE, 4, 0))
            }
            next_header::FRAGMENT => return Verdict::Drop(Error::Fragment),
            next_header::NO_NEXT => return Verdict::Drop(Error::NoNextHeader),
            _ => {
                return Verdict::Icmp(IcmpErrorRequest::new(
                    icmp6::kind::PARAMETER_PROBLEM,
                    UNRECOGNISED_NEXT_HEADER,
                    field as u16,
                ))
            }
        }
        match ip.get(at) {
            Some(&icmp6::kind::NEIGHBOR_SOLICIT) | Some(&icmp6::kind::NEIGHBOR_ADVERT) => {
                return Verdict::Discovery
            }
            Some(&icmp6::kind::ECHO_REQUEST) => {}
            _ => return Verdict::Drop(Error::Icmp6Other),
        }
        // A request to a group is answered from our address towards the sender.
        let reply_src = if ipv6::is_multicast(dst) {
            match view.interface(meta.rx_if).and_then(|i| v6_towards(i, src)) {
                Some(a) => a,
                None => return Verdict::Drop(Error::NoAddress),
            }
        } else {
            dst
        };
        match echo_request_to_reply(bufs.l3_mut(bi), reply_src) {
            Ok(n) => {
                // Link padding after the request, and the extension headers the reply does
                // not repeat, are not part of the reply.
                super::trim_to(bufs, bi, l3 + n);
                bufs.meta_mut(bi).flags |= FLAG_LOCAL_ORIGIN;
                Verdict::Reply
            }
            Err(EchoError::Checksum) => Verdict::Drop(Error::EchoChecksum),
            Err(_) => Verdict::Drop(Error::EchoUnanswerable),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ip::ip6::input::test_support::*;
    use crate::nodes::testing::Harness;

    fn handle_one(frame: &[u8]) -> (Verdict, Vec<u8>, u8) {
        let (verdict, out, meta) = crate::ip::local::local_one::<V6>(&view(), frame);
        (verdict, out, meta.flags)
    }

    #[test]
    fn echo_request_is_answered_in_place() {
        let mut req = echo_request(HOST, if_addr(0), 20);
        req.extend_from_slice(&[0; 6]); // padding
        let (v, out, flags) = handle_one(&req);
        assert_eq!(v, Verdict::Reply);
        assert_eq!(flags & FLAG_LOCAL_ORIGIN, FLAG_LOCAL_ORIGIN);
        assert_eq!(out.len(), req.len() - 6);
        let h = Ipv6Header::parse(&out[14..]).unwrap();
        assert_eq!((h.source(), h.destination()), (if_addr(0), HOST));
        assert_eq!(h.payload()[0], icmp6::kind::ECHO_REPLY);
        assert_eq!(&h.payload()[4..], &req[14 + 44..req.len() - 6]);
        assert_eq!(
            ipv6::upper_layer_checksum(h.source(), HOST, 58, h.payload()),
            0
        );
    }

    #[test]
    fn echo_to_all_nodes_is_answered_from_the_interface() {
        let (v, out, _) = handle_one(&echo_request(HOST, ipv6::ALL_NODES, 4));
        assert_eq!(v, Verdict::Reply);
        let h = Ipv6Header::parse(&out[14..]).unwrap();
        assert_eq!(h.source(), if_addr(0));
    }

    #[test]
    fn node_sends_each_kind_its_way() {
        let mut bad = echo_request(HOST, if_addr(0), 8);
        bad[60] ^= 1;
        let mut ns = vec![0u8; 72];
        icmp6::build_solicit(&mut ns, HOST, HOST_MAC, if_addr(0));
        let mut reply = echo_request(HOST, if_addr(0), 8);
        reply[54] = icmp6::kind::ECHO_REPLY;
        let frames = vec![
            echo_request(HOST, if_addr(0), 8),
            eth(if_mac(0), &ns),
            udp(HOST, if_addr(0), 64, 60),
            udp(HOST, ipv6::ALL_NODES, 64, 60),
            bad,
            reply,
            eth(if_mac(0), &ip(HOST, if_addr(0), 6, 64, &[0; 20])),
            eth(if_mac(0), &ip(HOST, if_addr(0), 59, 64, &[0; 20])),
            vec![0; 40],
        ];
        let h = Harness::new(3);
        let out = h.run_node(Ip6Local::decl(view()), &frames, 0);
        assert_eq!(out.per_next, vec![1, 2, 5, 0, 1]);
        out.assert_counted(&[
            (Error::EchoReplied, 1),
            (Error::NeighborDiscovery, 1),
            (Error::PortUnreachable, 1),
            (Error::UdpToGroup, 1),
            (Error::EchoChecksum, 1),
            (Error::Icmp6Other, 1),
            (Error::UnknownNextHeader, 1),
            (Error::NoNextHeader, 1),
            (Error::NotIpv6, 1),
        ]);
    }

    #[test]
    fn unknown_next_header_points_at_the_field_that_names_it() {
        let plain = eth(if_mac(0), &ip(HOST, if_addr(0), 253, 64, &[0; 20]));
        let mut behind_hbh = vec![253, 0, 1, 4, 0, 0, 0, 0];
        behind_hbh.extend_from_slice(&[0; 20]);
        let behind_hbh = eth(if_mac(0), &ip(HOST, if_addr(0), 0, 64, &behind_hbh));
        for (f, pointer) in [(plain, 6), (behind_hbh, 40)] {
            let (v, out, _) = handle_one(&f);
            let req = IcmpErrorRequest::new(icmp6::kind::PARAMETER_PROBLEM, 1, pointer);
            assert_eq!((v, out), (Verdict::Icmp(req), f));
        }
    }

    #[test]
    fn echo_behind_extension_headers_is_answered_without_them() {
        let req = echo_request(HOST, if_addr(0), 20);
        let mut with_dst_opts = req[14..54].to_vec();
        with_dst_opts[6] = 60;
        let plen = u16::from_be_bytes([req[18], req[19]]) + 8;
        with_dst_opts[4..6].copy_from_slice(&plen.to_be_bytes());
        with_dst_opts.extend_from_slice(&[58, 0, 1, 4, 0, 0, 0, 0]);
        with_dst_opts.extend_from_slice(&req[54..]);
        let mut padded = eth(if_mac(0), &with_dst_opts);
        padded.extend_from_slice(&[0; 6]);
        let (v, out, _) = handle_one(&padded);
        assert_eq!(v, Verdict::Reply);
        assert_eq!(out.len(), req.len());
        assert_eq!(out[54], icmp6::kind::ECHO_REPLY);
        assert_eq!(&out[58..], &req[58..]);
    }

    #[test]
    fn port_unreachable_request_is_code_4() {
        let (v, out, _) = handle_one(&udp(HOST, if_addr(0), 64, 60));
        assert_eq!(v, Verdict::Icmp(IcmpErrorRequest::new(1, 4, 0)));
        assert_eq!(out, udp(HOST, if_addr(0), 64, 60));
    }
}
