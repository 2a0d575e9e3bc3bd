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
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::router::adjacency::{L3View, SharedL3View};
use crate::wire::icmp6::{self, echo_request_to_reply, upper_layer_named, EchoError};
use crate::wire::ipv6::{self, next_header, Ipv6Header};
use crate::wire::EtherType;

#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Lookup,
    Nd,
    IcmpError,
    Drop,
}

#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    EchoReplied,
    NeighborDiscovery,
    PortUnreachable,
    NotIpv6,
    EchoChecksum,
    EchoUnanswerable,
    NoAddress,
    Icmp6Other,
    UdpToGroup,
    Fragment,
    NoNextHeader,
    UnknownNextHeader,
}

pub const ERRORS: [&str; 12] = [
    "echo requests answered",
    "neighbour discovery (to ip6-nd)",
    "udp to a closed port (to icmp6-error)",
    "not an IPv6 packet",
    "icmp6 checksum bad",
    "echo request not answerable (multicast source, truncated)",
    "no IPv6 address to answer from",
    "icmp6 type not handled",
    "udp to a group with no listener",
    "fragment for us (no reassembly)",
    "no next header (nothing to deliver)",
    "next header not recognised: parameter problem (to icmp6-error)",
];

/// Parameter problem code 1: unrecognised Next Header type.
const UNRECOGNISED_NEXT_HEADER: u8 = 1;

/// What happens to one packet; an echo reply has already been written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Reply,
    Nd,
    Icmp(IcmpErrorRequest),
    Drop(Error),
}

impl Verdict {
    fn next(self) -> Next {
        match self {
            Verdict::Reply => Next::Lookup,
            Verdict::Nd => Next::Nd,
            Verdict::Icmp(_) => Next::IcmpError,
            Verdict::Drop(_) => Next::Drop,
        }
    }

    fn counter(self) -> Error {
        match self {
            Verdict::Reply => Error::EchoReplied,
            Verdict::Nd => Error::NeighborDiscovery,
            Verdict::Icmp(req) if req.kind == icmp6::kind::PARAMETER_PROBLEM => {
                Error::UnknownNextHeader
            }
            Verdict::Icmp(_) => Error::PortUnreachable,
            Verdict::Drop(e) => e,
        }
    }
}

pub struct Ip6Local {
    view: SharedL3View,
}

impl Ip6Local {
    pub fn decl(view: SharedL3View) -> NodeDecl {
        NodeDecl::internal(
            super::IP6_LOCAL,
            &[
                super::IP6_LOOKUP,
                super::IP6_ND,
                super::ICMP6_ERROR,
                super::ERROR_DROP,
            ],
            &ERRORS,
            Ip6Local { view },
        )
    }

    pub fn handle(view: &L3View, bufs: &mut WorkerBuffers, bi: u32) -> Verdict {
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
                return Verdict::Icmp(IcmpErrorRequest {
                    kind: icmp6::kind::DEST_UNREACHABLE,
                    code: 4,
                    arg: 0,
                })
            }
            next_header::FRAGMENT => return Verdict::Drop(Error::Fragment),
            next_header::NO_NEXT => return Verdict::Drop(Error::NoNextHeader),
            _ => {
                return Verdict::Icmp(IcmpErrorRequest {
                    kind: icmp6::kind::PARAMETER_PROBLEM,
                    code: UNRECOGNISED_NEXT_HEADER,
                    arg: field as u16,
                })
            }
        }
        match ip.get(at) {
            Some(&icmp6::kind::NEIGHBOR_SOLICIT) | Some(&icmp6::kind::NEIGHBOR_ADVERT) => {
                return Verdict::Nd
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

impl Node for Ip6Local {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let view = self.view.load();
        let tracing = cx.tracing();
        for &bi in frame {
            let verdict = Self::handle(&view, cx.bufs, bi);
            cx.count_error(verdict.counter() as usize, 1);
            if let Verdict::Icmp(req) = verdict {
                cx.bufs.meta_mut(bi).aux = req.to_aux();
            }
            if tracing {
                cx.trace(bi, ERRORS[verdict.counter() as usize]);
            }
            cx.enqueue(verdict.next() as usize, bi);
        }
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{BufferPool, HugePages};
    use crate::nodes::ip6::input::test_support::*;
    use crate::nodes::testing::Harness;

    fn handle_one(frame: &[u8]) -> (Verdict, Vec<u8>, u8) {
        let pool = BufferPool::new(16, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let bi = crate::nodes::testing::received(&mut bufs, frame);
        bufs.meta_mut(bi).rx_if = 0;
        let v = view();
        let verdict = Ip6Local::handle(&v.load(), &mut bufs, bi);
        let mut out = Vec::new();
        bufs.copy_packet(bi, &mut out);
        let flags = bufs.meta(bi).flags;
        bufs.free(bi);
        (verdict, out, flags)
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
        assert_eq!(out.per_next, vec![1, 1, 2, 5]);
        let e = &out.errors;
        assert_eq!(e[Error::EchoReplied as usize], 1);
        assert_eq!(e[Error::NeighborDiscovery as usize], 1);
        assert_eq!(e[Error::PortUnreachable as usize], 1);
        assert_eq!(e[Error::UdpToGroup as usize], 1);
        assert_eq!(e[Error::EchoChecksum as usize], 1);
        assert_eq!(e[Error::Icmp6Other as usize], 1);
        assert_eq!(e[Error::UnknownNextHeader as usize], 1);
        assert_eq!(e[Error::NoNextHeader as usize], 1);
        assert_eq!(e[Error::NotIpv6 as usize], 1);
    }

    #[test]
    fn unknown_next_header_points_at_the_field_that_names_it() {
        let plain = eth(if_mac(0), &ip(HOST, if_addr(0), 253, 64, &[0; 20]));
        let mut behind_hbh = vec![253, 0, 1, 4, 0, 0, 0, 0];
        behind_hbh.extend_from_slice(&[0; 20]);
        let behind_hbh = eth(if_mac(0), &ip(HOST, if_addr(0), 0, 64, &behind_hbh));
        for (f, pointer) in [(plain, 6), (behind_hbh, 40)] {
            let (v, out, _) = handle_one(&f);
            let req = IcmpErrorRequest {
                kind: icmp6::kind::PARAMETER_PROBLEM,
                code: 1,
                arg: pointer,
            };
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
        assert_eq!(
            v,
            Verdict::Icmp(IcmpErrorRequest {
                kind: 1,
                code: 4,
                arg: 0
            })
        );
        assert_eq!(out, udp(HOST, if_addr(0), 64, 60));
    }
}
