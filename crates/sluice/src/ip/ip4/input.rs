//! ip4-input: the checks a router makes on every IPv4 packet before it looks at the
//! destination (RFC 1812 section 5.2.2): version, header length, total length against the
//! frame, header checksum, and the martian addresses of 5.3.7 (a source or destination that
//! cannot name one host). Each failure is its own counter; packets with options are counted
//! and go on (they are not dropped). The TTL is not checked here: a packet for the router is
//! received whatever its TTL (5.3.1), and ip4-rewrite answers an expired one with time
//! exceeded.

use crate::graph::names::error_counters;
pub use crate::ip::input::Next;
use crate::ip::input::{InputChecks, IpInput};
use crate::ip::V4;
use crate::wire::ipv4::{Ipv4Error, Ipv4Header};

pub const NAME: &str = "ip4-input";

error_counters! {
    pub enum Error {
        NotIpv4 = "not an IPv4 frame",
        Truncated = "ip4 header truncated",
        Version = "ip4 version is not 4",
        HeaderLength = "ip4 header length (IHL) invalid",
        TotalLength = "ip4 total length invalid",
        Checksum = "ip4 header checksum bad",
        MartianSource = "ip4 source invalid (0/8, 127/8, multicast, class E, broadcast)",
        MartianDestination = "ip4 destination invalid (0/8, 127/8, class E)",
        Options = "ip4 options present (forwarded)",
    }
    impl From<Ipv4Error> {
        Truncated,
        Version,
        HeaderLength,
        TotalLength,
        Checksum,
    }
}

/// RFC 1812 4.2.2.11 and 5.3.7: a source on network 0 or 127, a multicast source, or a
/// class E one (which includes the limited broadcast 255.255.255.255) names no single host.
pub fn martian_source(a: u32) -> bool {
    matches!(a >> 24, 0 | 127) || a >> 28 >= 0xe
}

/// RFC 1812 5.3.7: a destination on network 0 or 127, or in class E other than the limited
/// broadcast, is not forwarded (nor received: it cannot be one of ours).
pub fn martian_destination(a: u32) -> bool {
    matches!(a >> 24, 0 | 127) || (a >> 28 == 0xf && a != u32::MAX)
}

/// The input node of IPv4 (`nodes::ip::input`, with the checks below).
pub type Ip4Input = IpInput<V4>;

impl InputChecks for V4 {
    type Counter = Error;

    /// The verdict for one packet: where it goes, and which counter (if any) it bumps.
    /// `ip` is the packet from its L3 header on (`None` when it is not IPv4), `ip_len` the
    /// bytes from there to the end of the whole packet.
    fn check(ip: Option<&[u8]>, ip_len: usize) -> (Next, Option<Error>) {
        let Some(bytes) = ip else {
            return (Next::Drop, Some(Error::NotIpv4));
        };
        match Ipv4Header::parse_in(bytes, ip_len) {
            Err(e) => (Next::Drop, Some(Error::from(e))),
            Ok(h) if martian_source(h.source()) => (Next::Drop, Some(Error::MartianSource)),
            Ok(h) if martian_destination(h.destination()) => {
                (Next::Drop, Some(Error::MartianDestination))
            }
            Ok(h) if h.has_options() => (Next::Lookup, Some(Error::Options)),
            Ok(_) => (Next::Lookup, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::Harness;
    use crate::wire::ipv4::checksum;

    /// Ethernet + IPv4 (+ `options` bytes of options) + UDP-ish payload, `len` bytes in all.
    fn packet(len: usize, ttl: u8, options: usize) -> Vec<u8> {
        addressed(len, ttl, options, [198, 18, 0, 1], [198, 19, 0, 1])
    }

    fn addressed(len: usize, ttl: u8, options: usize, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        let ihl = (20 + options) / 4;
        let ip = &mut f[14..14 + 20 + options];
        ip[0] = 0x40 | ihl as u8;
        ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        ip[8] = ttl;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        let c = checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f
    }

    fn run(frames: &[Vec<u8>]) -> (usize, usize, Vec<u64>) {
        let h = Harness::new(1);
        let out = h.run_node(
            Ip4Input::decl(crate::graph::features::shared(Default::default())),
            frames,
            0,
        );
        (
            out.to_next(Ip4Input::slot(Next::Lookup)),
            out.to_next(Ip4Input::slot(Next::Drop)),
            out.errors,
        )
    }

    #[test]
    fn good_packets_go_to_lookup_jumbo_and_ttl_0_included() {
        let frames = [
            packet(60, 64, 0),
            packet(1514, 1, 0),
            packet(9014, 2, 0),
            packet(60, 0, 0),
            addressed(60, 64, 0, [198, 18, 0, 1], [255, 255, 255, 255]),
            addressed(60, 64, 0, [198, 18, 0, 1], [224, 0, 0, 1]),
        ];
        let (ok, drop, errors) = run(&frames);
        assert_eq!((ok, drop), (6, 0));
        assert!(errors.iter().all(|&e| e == 0), "{errors:?}");
    }

    #[test]
    fn each_bad_header_is_dropped_by_its_own_counter() {
        let mut bad_sum = packet(60, 64, 0);
        bad_sum[24] ^= 0xff;
        let mut v6 = packet(60, 64, 0);
        v6[14] = 0x65;
        let mut ihl = packet(60, 64, 0);
        ihl[14] = 0x43;
        let mut long = packet(60, 64, 0);
        long[16..18].copy_from_slice(&1500u16.to_be_bytes());
        let mut arp = packet(60, 64, 0);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let cut = packet(60, 64, 0)[..30].to_vec();
        let frames = vec![bad_sum, v6, ihl, long, arp, cut];
        let (ok, drop, e) = run(&frames);
        assert_eq!((ok, drop), (0, 6));
        // IHL 3 fails the length check; so does a checksum over a wrong IHL, counted there.
        crate::nodes::testing::assert_counted(
            &e,
            &[
                (Error::Checksum, 1),
                (Error::Version, 1),
                (Error::HeaderLength, 1),
                (Error::TotalLength, 1),
                (Error::NotIpv4, 1),
                (Error::Truncated, 1),
            ],
        );
    }

    #[test]
    fn martian_sources_and_destinations_are_dropped() {
        let from = |src| addressed(60, 64, 0, src, [198, 19, 0, 1]);
        let to = |dst| addressed(60, 64, 0, [198, 18, 0, 1], dst);
        let frames = vec![
            from([0, 0, 0, 5]),
            from([127, 0, 0, 1]),
            from([224, 0, 0, 5]),
            from([240, 0, 0, 1]),
            from([255, 255, 255, 255]),
            to([0, 1, 2, 3]),
            to([127, 0, 0, 1]),
            to([240, 0, 0, 1]),
        ];
        let (ok, drop, e) = run(&frames);
        assert_eq!((ok, drop), (0, 8));
        assert_eq!(e[Error::MartianSource as usize], 5);
        assert_eq!(e[Error::MartianDestination as usize], 3);
    }

    #[test]
    fn options_are_counted_and_forwarded() {
        let (ok, drop, e) = run(&[packet(80, 64, 8)]);
        assert_eq!((ok, drop), (1, 0));
        assert_eq!(e[Error::Options as usize], 1);
    }
}
