//! ip4-local: IPv4 packets addressed to the router itself. Echo requests are answered in
//! place: the request becomes the reply, from the address it was sent to, and goes back
//! through ip4-lookup to be routed like any packet. UDP gets port unreachable (nothing
//! listens) and other protocols protocol unreachable, through icmp4-error. Fragments are
//! dropped: the router reassembles nothing.

use super::IcmpErrorRequest;
use crate::buffer::{WorkerBuffers, FLAG_LOCAL_ORIGIN};
use crate::graph::names::error_counters;
pub use crate::ip::local::Next;
use crate::ip::local::{IpLocal, LocalRules};
use crate::ip::V4;
use crate::router::adjacency::L3View;
use crate::wire::ethernet::HEADER_LEN as ETH_HEADER_LEN;
use crate::wire::icmp4::{self, echo_request_to_reply, Icmp4Error};
use crate::wire::ipv4::Ipv4Header;
use crate::wire::EtherType;

pub const NAME: &str = "ip4-local";

const UDP: u8 = 17;

error_counters! {
    pub enum Error {
        NotIpv4 = "not an IPv4 packet",
        BadHeader = "ip4 header invalid",
        Fragment = "fragment to us (reassembly not supported)",
        EchoReplied = "echo request answered",
        EchoNotOurs = "echo request to a broadcast or multicast address (ignored)",
        EchoTooLong = "echo request larger than one buffer (ignored)",
        IcmpChecksum = "icmp checksum bad",
        IcmpTruncated = "icmp message truncated",
        IcmpOtherType = "icmp type not handled",
        PortUnreachable = "udp to us: port unreachable (to icmp4-error)",
        ProtocolUnreachable = "protocol not handled: protocol unreachable (to icmp4-error)",
    }
}

/// The IPv4 local delivery node.
pub type Ip4Local = IpLocal<V4>;
/// What happens to one packet.
pub type Verdict = crate::ip::local::Verdict<Error>;

impl LocalRules for V4 {
    type Counter = Error;
    const DISCOVERY_NODE: Option<&'static str> = None;

    const HOST_REASON: crate::lcp::host_punt::Reason = crate::lcp::host_punt::Reason::Local4;

    /// TCP, UDP, other protocols, ICMP other than an echo request (an echo reply to Linux's
    /// ping) and fragments (Linux reassembles).
    fn for_host(verdict: Verdict) -> bool {
        matches!(
            verdict,
            Verdict::Icmp(_) | Verdict::Drop(Error::IcmpOtherType | Error::Fragment)
        )
    }

    fn counter(verdict: Verdict) -> Error {
        match verdict {
            Verdict::Reply => Error::EchoReplied,
            Verdict::Icmp(req) if req.code == icmp4::CODE_PORT_UNREACHABLE => {
                Error::PortUnreachable
            }
            Verdict::Icmp(_) => Error::ProtocolUnreachable,
            // (ARP comes by arp-input, never here.)
            Verdict::Discovery => Error::NotIpv4,
            Verdict::Drop(e) => e,
        }
    }

    /// Decide one packet's fate; an echo request is turned into its reply, ready for
    /// ip4-lookup. Other packets are left as they are (icmp4-error quotes them).
    fn local(view: &L3View, bufs: &mut WorkerBuffers, bi: u32) -> Verdict {
        let l3 = bufs.meta(bi).l3_offset as usize;
        let segment_len = bufs.data(bi).len();
        let Some(bytes) = super::l3_header(bufs, bi, EtherType::IPV4) else {
            return Verdict::Drop(Error::NotIpv4);
        };
        let (proto, dst, end, fragment) = match Ipv4Header::parse_in(bytes, super::l3_len(bufs, bi))
        {
            Ok(h) => (
                h.protocol(),
                h.destination(),
                l3 + h.total_len(),
                h.is_fragment(),
            ),
            Err(_) => return Verdict::Drop(Error::BadHeader),
        };
        if fragment {
            return Verdict::Drop(Error::Fragment);
        }
        match proto {
            icmp4::PROTOCOL => {}
            UDP => {
                return Verdict::Icmp(IcmpErrorRequest::new(
                    icmp4::DEST_UNREACHABLE,
                    icmp4::CODE_PORT_UNREACHABLE,
                    0,
                ))
            }
            _ => {
                return Verdict::Icmp(IcmpErrorRequest::new(
                    icmp4::DEST_UNREACHABLE,
                    icmp4::CODE_PROTOCOL_UNREACHABLE,
                    0,
                ))
            }
        }
        // The checksum covers the whole message: it must all be in this segment.
        if end > segment_len {
            return Verdict::Drop(Error::EchoTooLong);
        }
        match echo_request_to_reply(&mut bufs.data_mut(bi)[l3..end], dst) {
            Ok(()) => {}
            Err(Icmp4Error::Checksum) => return Verdict::Drop(Error::IcmpChecksum),
            Err(Icmp4Error::Truncated) => return Verdict::Drop(Error::IcmpTruncated),
            Err(Icmp4Error::NotEchoRequest) => return Verdict::Drop(Error::IcmpOtherType),
            Err(Icmp4Error::Fragment) => return Verdict::Drop(Error::Fragment),
            Err(Icmp4Error::Ip(_) | Icmp4Error::NotIcmp) => return Verdict::Drop(Error::BadHeader),
        }
        // RFC 1122 3.2.2.6 lets a host ignore echoes to broadcast and multicast addresses;
        // a reply must come from one of our unicast addresses, so those are dropped here.
        if !view.interfaces.iter().any(|itf| itf.has_v4(dst)) {
            return Verdict::Drop(Error::EchoNotOurs);
        }
        // Ethernet padding goes; VLAN tags go so that a 14-byte header (rewritten by
        // ip4-rewrite) sits just before the IP header, ending in the IPv4 EtherType that
        // ip4-lookup reads.
        {
            let m = bufs.meta_mut(bi);
            m.len = end as u16;
            m.total_len = end as u32;
            m.flags |= FLAG_LOCAL_ORIGIN;
            m.adj = u32::MAX;
        }
        let tags = l3.checked_sub(ETH_HEADER_LEN);
        if !tags.is_some_and(|n| bufs.advance(bi, n)) {
            return Verdict::Drop(Error::NotIpv4);
        }
        bufs.data_mut(bi)[12..14].copy_from_slice(&EtherType::IPV4.0.to_be_bytes());
        Verdict::Reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ip::ip4::rewrite::test_support::*;
    use crate::nodes::testing::Harness;
    use crate::wire::ipv4::checksum;

    const HOST: [u8; 4] = [198, 18, 0, 1];

    fn echo(kind: u8, data_len: usize) -> Vec<u8> {
        let mut m = vec![kind, 0, 0, 0, 0x12, 0x34, 0, 9];
        m.extend((0..data_len).map(|i| (i * 3) as u8));
        let c = checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        m
    }

    fn ping(dst: [u8; 4], data_len: usize) -> Vec<u8> {
        frame(HOST, dst, 1, 64, false, &echo(8, data_len))
    }

    fn local_one(f: &[u8]) -> (Verdict, Vec<u8>, crate::buffer::BufferMeta) {
        crate::ip::local::local_one::<V4>(&view(), f)
    }

    /// A reply to `request` (an untagged frame) from `from`.
    fn assert_reply(out: &[u8], request: &[u8], from: u32) {
        let ip_len = request.len() - 14;
        assert_eq!(out.len(), 14 + ip_len);
        assert_eq!(&out[12..14], &[8, 0]);
        let h = Ipv4Header::parse(&out[14..]).unwrap();
        assert_eq!(
            (h.source(), h.destination()),
            (from, u32::from_be_bytes(HOST))
        );
        assert_eq!((h.ttl(), h.total_len()), (64, ip_len));
        assert_eq!(checksum(&out[34..]), 0);
        assert_eq!(out[34], 0);
        assert_eq!(&out[38..], &request[38..]);
    }

    #[test]
    fn echo_request_is_answered_from_the_address_it_was_sent_to() {
        let req = ping(if_addr(0).to_be_bytes(), 56);
        let (v, out, meta) = local_one(&req);
        assert_eq!(v, Verdict::Reply);
        assert_reply(&out, &req, if_addr(0));
        assert_eq!(meta.rx_if, 0);
        assert_ne!(meta.flags & FLAG_LOCAL_ORIGIN, 0);
        // Another interface's address, reached through if0: the reply comes from it.
        let req = ping(if_addr(1).to_be_bytes(), 0);
        let (v, out, _) = local_one(&req);
        assert_eq!(v, Verdict::Reply);
        assert_reply(&out, &req, if_addr(1));
    }

    #[test]
    fn tags_and_padding_are_stripped_from_the_reply() {
        let req = ping(if_addr(0).to_be_bytes(), 4);
        let mut padded = tagged(&req);
        padded.resize(64, 0);
        let (v, out, _) = local_one(&padded);
        assert_eq!(v, Verdict::Reply);
        assert_reply(&out, &req, if_addr(0));
    }

    #[test]
    fn udp_and_other_protocols_ask_for_unreachables() {
        let udp = frame(HOST, if_addr(0).to_be_bytes(), 17, 64, false, &[0; 8]);
        let tcp = frame(HOST, if_addr(0).to_be_bytes(), 6, 64, false, &[0; 20]);
        let (v, out, _) = local_one(&udp);
        assert_eq!(v, Verdict::Icmp(IcmpErrorRequest::new(3, 3, 0)));
        assert_eq!(out, udp);
        let (v, out, _) = local_one(&tcp);
        assert_eq!(v, Verdict::Icmp(IcmpErrorRequest::new(3, 2, 0)));
        assert_eq!(out, tcp);
    }

    #[test]
    fn each_unanswered_icmp_is_its_own_drop() {
        let me = if_addr(0).to_be_bytes();
        let mut bad_sum = ping(me, 8);
        bad_sum[40] ^= 0x10;
        let reply = frame(HOST, me, 1, 64, false, &echo(0, 8));
        let short = frame(HOST, me, 1, 64, false, &[8, 0, 0]);
        let mut frag = ping(me, 8);
        frag[20] = 0x20;
        frag[24..26].copy_from_slice(&[0, 0]);
        let c = checksum(&frag[14..34]);
        frag[24..26].copy_from_slice(&c.to_be_bytes());
        let mut bad_ip = ping(me, 8);
        bad_ip[24] ^= 1;
        let big = ping(me, 3000);
        let broadcast = ping([10, 0, 0, 255], 8);
        let mut arp = ping(me, 8);
        arp[12..14].copy_from_slice(&[8, 6]);
        for (f, e) in [
            (bad_sum, Error::IcmpChecksum),
            (reply, Error::IcmpOtherType),
            (short, Error::IcmpTruncated),
            (frag, Error::Fragment),
            (bad_ip, Error::BadHeader),
            (big, Error::EchoTooLong),
            (broadcast, Error::EchoNotOurs),
            (arp, Error::NotIpv4),
        ] {
            assert_eq!(local_one(&f).0, Verdict::Drop(e), "{e:?}");
        }
    }

    #[test]
    fn node_routes_and_counts() {
        let me = if_addr(0).to_be_bytes();
        let frames = vec![
            ping(me, 56),
            tagged(&ping(me, 56)),
            frame(HOST, me, 17, 64, false, &[0; 8]),
            frame(HOST, me, 47, 64, false, &[0; 8]),
            frame(HOST, me, 1, 64, false, &echo(0, 8)),
        ];
        let h = Harness::new(3);
        let out = h.run_node(Ip4Local::decl(view()), &frames, 0);
        assert_eq!(out.per_next, vec![2, 2, 1, 0]);
        out.assert_counted(&[
            (Error::EchoReplied, 2),
            (Error::PortUnreachable, 1),
            (Error::ProtocolUnreachable, 1),
            (Error::IcmpOtherType, 1),
        ]);
        // With a Linux tap on the interface (an lcp pair), what the router does not take
        // goes up to it, uncounted here; echo requests are still answered, and a bad
        // header is still dropped.
        let v = view();
        let mut edited = (**v.load()).clone();
        edited.interfaces[0].host = true;
        v.store(std::sync::Arc::new(edited));
        let mut frames = frames;
        frames.push(frame(HOST, me, 1, 64, false, &echo(8, 4))[..20].to_vec());
        let out = h.run_node(Ip4Local::decl(v), &frames, 0);
        assert_eq!(out.per_next, vec![2, 0, 1, 3]);
        out.assert_counted(&[(Error::EchoReplied, 2), (Error::BadHeader, 1)]);
    }

    proptest::proptest! {
        /// Whatever the bytes: a verdict, never a panic.
        #[test]
        fn local_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120)) {
            let _ = local_one(&bytes);
        }
    }
}
