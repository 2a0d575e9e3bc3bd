//! icmp6-error: sends the ICMPv6 error another node asked for (in `BufferMeta::aux`) about the
//! packet it could not deliver, then drops that packet. The error is a new packet from an
//! address of the interface the original came in by, routed back through ip6-lookup like any
//! other. RFC 4443 2.4(e) says when not to send one (each case counted); a per-worker token
//! bucket (2.4(f)) keeps a flood of bad packets from becoming a flood of errors.

use super::IcmpErrorRequest;
use crate::ip::icmp_error::{icmp_error_counters, ErrorBuilder, IcmpError, Original};
use crate::ip::V6;
use crate::router::adjacency::{L3Interface, L3View};
use crate::wire::icmp6::{self, build_error, error_forbidden, Forbidden};
use crate::wire::ipv6::{self, Ipv6Header, MIN_MTU};

pub const NAME: &str = "icmp6-error";

icmp_error_counters! {
    sent {
        SentUnreachable = "sent destination unreachable",
        SentPacketTooBig = "sent packet too big",
        SentOther = "sent other ICMPv6 error",
    }
    not_sent {
        AboutError = "not sent: about an ICMPv6 error or redirect",
        AboutMulticast = "not sent: about a multicast packet",
        BadSource = "not sent: source multicast or unspecified",
        NotIpv6 = "not sent: original is not an IPv6 packet",
        NoAddress = "not sent: no IPv6 address on the receiving interface",
    }
    impl From<Forbidden> {
        NotIpv6,
        ErrorMessage => AboutError,
        MulticastDestination => AboutMulticast,
        BadSource,
    }
}

/// The address an interface answers `to` from: one on the same prefix, a link-local one
/// (derived from the MAC) to a link-local peer, else its first. `None` without IPv6 addresses.
pub fn v6_towards(itf: &L3Interface, to: u128) -> Option<u128> {
    let on_prefix = itf.v6.iter().find(|&&(a, len)| {
        let mask = if len == 0 {
            0
        } else {
            u128::MAX << (128 - len.min(128) as u32)
        };
        a & mask == to & mask
    });
    if let Some(&(a, _)) = on_prefix {
        return Some(a);
    }
    let first = itf.v6.first()?.0;
    if ipv6::is_link_local(to) {
        return Some(ipv6::link_local_from_mac(itf.mac));
    }
    Some(first)
}

/// The ICMP error node of IPv6 (`nodes::ip::icmp_error`, with the rules above).
pub type Icmp6Error = IcmpError<V6>;

impl ErrorBuilder for V6 {
    type Counter = Error;
    type Addr = u128;
    const NOT_OF_FAMILY: Error = Error::NotIpv6;
    const MAX_LEN: usize = MIN_MTU;

    fn source(view: &L3View, orig: &Original) -> Result<u128, Error> {
        let req = orig.req;
        if let Some(f) = error_forbidden(orig.ip, req.kind, req.code) {
            return Err(Error::from(f));
        }
        // (e.4) A link-layer multicast is the one case error_forbidden cannot see; it has
        // the same exceptions as (e.3).
        let group_ok = req.kind == icmp6::kind::PACKET_TOO_BIG
            || (req.kind == icmp6::kind::PARAMETER_PROBLEM && req.code == 2);
        if orig.link_group && !group_ok {
            return Err(Error::AboutMulticast);
        }
        let orig_src = Ipv6Header::parse_in(orig.ip, usize::MAX)
            .map_err(|_| Error::NotIpv6)?
            .source();
        view.interface(orig.rx_if)
            .and_then(|itf| v6_towards(itf, orig_src))
            .ok_or(Error::NoAddress)
    }

    fn build(out: &mut [u8], orig: &Original, from: u128) -> Option<usize> {
        let req = orig.req;
        build_error(out, orig.ip, req.kind, req.code, req.arg as u32, from)
    }

    fn sent(req: IcmpErrorRequest) -> Error {
        match req.kind {
            icmp6::kind::TIME_EXCEEDED => Error::SentTimeExceeded,
            icmp6::kind::DEST_UNREACHABLE => Error::SentUnreachable,
            icmp6::kind::PACKET_TOO_BIG => Error::SentPacketTooBig,
            _ => Error::SentOther,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::icmp_error::testing;
    use crate::ip::ip6::input::test_support::*;
    use crate::nodes::testing::Outcome;
    use crate::wire::ipv6::next_header;

    const TIME_EXCEEDED: IcmpErrorRequest = IcmpErrorRequest::new(3, 0, 0);
    const TOO_BIG: IcmpErrorRequest = IcmpErrorRequest::new(2, 0, 1280);

    fn run(frames: &[Vec<u8>], req: IcmpErrorRequest, rx_if: u32, burst: u64) -> Outcome {
        testing::run::<V6>(view(), frames, req, rx_if, burst)
    }

    /// The error built about `frame`, as bytes, or why none was.
    fn build(frame: &[u8], req: IcmpErrorRequest, rx_if: u32) -> Result<(Vec<u8>, Error), Error> {
        testing::build::<V6>(view(), frame, req, rx_if)
    }

    #[test]
    fn time_exceeded_goes_back_to_the_sender_from_the_rx_interface() {
        let orig = udp(HOST, FAR, 1, 100);
        let (out, c) = build(&orig, TIME_EXCEEDED, 0).unwrap();
        assert_eq!(c, Error::SentTimeExceeded);
        assert_eq!(&out[12..14], &[0x86, 0xdd]);
        let h = Ipv6Header::parse(&out[14..]).unwrap();
        assert_eq!((h.source(), h.destination()), (if_addr(0), HOST));
        assert_eq!((h.next_header(), h.hop_limit()), (next_header::ICMPV6, 64));
        let msg = h.payload();
        assert_eq!(&msg[..2], &[3, 0]);
        assert_eq!(&msg[8..], &orig[14..]);
        assert_eq!(
            ipv6::upper_layer_checksum(h.source(), h.destination(), 58, msg),
            0
        );
    }

    #[test]
    fn packet_too_big_carries_the_mtu_and_fits_1280() {
        let orig = udp(HOST, FAR, 64, 1500);
        let (out, c) = build(&orig, TOO_BIG, 0).unwrap();
        assert_eq!(c, Error::SentPacketTooBig);
        assert_eq!(out.len(), 14 + 1280);
        assert_eq!(&out[14 + 44..14 + 48], &1280u32.to_be_bytes());
    }

    #[test]
    fn link_local_sender_gets_a_link_local_source() {
        let ll = 0xfe80u128 << 112 | 0x42;
        let (out, _) = build(&udp(ll, FAR, 1, 80), TIME_EXCEEDED, 0).unwrap();
        let h = Ipv6Header::parse(&out[14..]).unwrap();
        assert_eq!(h.source(), ipv6::link_local_from_mac(if_mac(0)));
    }

    #[test]
    fn forbidden_cases_are_counted_and_nothing_is_sent() {
        let mut err = echo_request(HOST, FAR, 8);
        err[14 + 40] = 1; // a destination unreachable now (checksum is not looked at)
        let mut l2_group = udp(HOST, FAR, 1, 80);
        l2_group[0] = 0x33;
        let frames = vec![
            err,
            udp(HOST, 0xff0e << 112 | 1, 1, 80),
            udp(0, FAR, 1, 80),
            l2_group,
            vec![0; 30],
        ];
        let out = run(&frames, TIME_EXCEEDED, 0, 10);
        assert_eq!(out.per_next, vec![0, 5]);
        out.assert_counted(&[
            (Error::AboutError, 1),
            (Error::AboutMulticast, 2),
            (Error::BadSource, 1),
            (Error::NotIpv6, 1),
        ]);
        // Packet Too Big about a packet to a group is allowed.
        let out = run(&[udp(HOST, 0xff0e << 112 | 1, 64, 1400)], TOO_BIG, 0, 10);
        assert_eq!(out.per_next, vec![1, 1]);
    }

    #[test]
    fn rate_limit_and_missing_address() {
        let frames: Vec<Vec<u8>> = (0..5).map(|_| udp(HOST, FAR, 1, 80)).collect();
        let out = run(&frames, TIME_EXCEEDED, 0, 3);
        assert_eq!(out.per_next, vec![3, 5]);
        assert_eq!(out.errors[Error::SentTimeExceeded as usize], 3);
        assert_eq!(out.errors[Error::RateLimited as usize], 2);
        // if2 has no IPv6 address.
        let out = run(&frames[..1], TIME_EXCEEDED, 2, 3);
        assert_eq!(out.errors[Error::NoAddress as usize], 1);
    }
}
