//! ip6-input: the checks a router makes on every IPv6 packet before it looks at the
//! destination: version, payload length against the frame, a source that names one node
//! (RFC 4291 2.7: never multicast), and no loopback address on the wire (2.5.3). Each failure
//! is its own counter. IPv6 has no header checksum, so this is cheaper than ip4-input. The
//! hop limit is not checked here: a packet for the router is received whatever it is, and
//! ip6-rewrite answers an expired one with time exceeded (RFC 8200 3, RFC 4443 3.3).

use crate::graph::names::error_counters;
pub use crate::ip::input::Next;
use crate::ip::input::{InputChecks, IpInput};
use crate::ip::V6;
use crate::wire::ipv6::{self, Ipv6Error, Ipv6Header};

pub const NAME: &str = "ip6-input";

error_counters! {
    pub enum Error {
        NotIpv6 = "not an IPv6 frame",
        Truncated = "ip6 header truncated",
        Version = "ip6 version is not 6",
        PayloadLength = "ip6 payload length beyond the frame",
        MulticastSource = "ip6 source is multicast",
        Loopback = "ip6 loopback source or destination from the wire",
    }
    impl From<Ipv6Error> {
        Truncated,
        Version,
        PayloadLength,
    }
}

/// The input node of IPv6 (`nodes::ip::input`, with the checks below).
pub type Ip6Input = IpInput<V6>;

impl InputChecks for V6 {
    type Counter = Error;

    /// The verdict for one packet: where it goes, and which counter (if any) it bumps.
    /// `ip` is the packet from its L3 header on (`None` when it is not IPv6), `ip_len` the
    /// bytes from there to the end of the whole packet.
    fn check(ip: Option<&[u8]>, ip_len: usize) -> (Next, Option<Error>) {
        let Some(bytes) = ip else {
            return (Next::Drop, Some(Error::NotIpv6));
        };
        match Ipv6Header::parse_in(bytes, ip_len) {
            Err(e) => (Next::Drop, Some(Error::from(e))),
            Ok(h) if ipv6::is_multicast(h.source()) => (Next::Drop, Some(Error::MulticastSource)),
            Ok(h) if h.source() == 1 || h.destination() == 1 => (Next::Drop, Some(Error::Loopback)),
            Ok(_) => (Next::Lookup, None),
        }
    }
}

/// Frames and views for the tests of the IPv6 routing nodes.
#[cfg(test)]
#[allow(dead_code)] // shared by the ip6 node tests; not each uses every piece
pub(crate) mod test_support {
    pub use crate::ip::test_view::{
        if_mac, tagged, ADJ_COMPLETE, ADJ_GLEAN, ADJ_INCOMPLETE, ADJ_SMALL_MTU, GLEANED_MAC,
        HOST_MAC, NEIGHBOR_MAC,
    };
    use crate::router::adjacency::{ethernet_rewrite, AdjKind, Adjacency, SharedL3View};
    use crate::wire::icmp6;
    use crate::wire::ipv6::{self, next_header};
    use crate::wire::MacAddress;
    use arc_swap::ArcSwap;
    use std::net::{IpAddr, Ipv6Addr};
    use std::sync::Arc;

    /// A host on if0's network, the usual sender.
    pub const HOST: u128 = 0x2001_0db8_0000_0000_0000_0000_0000_00aa;
    /// Somewhere far away, routed through the neighbour.
    pub const FAR: u128 = 0x2001_0db8_ffff_0000_0000_0000_0000_0001;
    /// On if1's network: the complete neighbour, the one only in the neighbour table, and a
    /// gleaned host.
    pub const NEIGHBOR: u128 = 0x2001_0db8_0001_0000_0000_0000_0000_0002;
    pub const NEIGHBOR_TABLE_ONLY: u128 = 0x2001_0db8_0001_0000_0000_0000_0000_0003;
    pub const GLEANED: u128 = 0x2001_0db8_0001_0000_0000_0000_0000_0009;

    /// Interface k has address 2001:db8:k::1/64.
    pub fn if_addr(k: u8) -> u128 {
        0x2001_0db8_0000_0000_0000_0000_0000_0001 | (k as u128) << 80
    }

    /// Multipath over ADJ_COMPLETE and ADJ_INCOMPLETE.
    pub const ADJ_MULTIPATH: u32 = 6;

    /// `test_view::view` in IPv6, the small MTU 1280, and `ADJ_MULTIPATH`.
    pub fn view() -> SharedL3View {
        let v6 = |ip: u128| IpAddr::V6(Ipv6Addr::from(ip));
        let mut v = crate::ip::test_view::view(&crate::ip::test_view::Addresses {
            address: |k, itf| itf.v6 = vec![(if_addr(k), 64)],
            neighbor: v6(NEIGHBOR),
            incomplete: v6(NEIGHBOR_TABLE_ONLY),
            gleaned: v6(GLEANED),
            small_mtu: 1280,
            ethertype: 0x86dd,
        });
        v.members = vec![ADJ_COMPLETE, ADJ_INCOMPLETE];
        v.adjs.push(Adjacency {
            kind: AdjKind::Multipath,
            first: 0,
            count: 2,
            ..Adjacency::simple(AdjKind::Multipath)
        });
        Arc::new(ArcSwap::from_pointee(v))
    }

    /// An Ethernet frame to the router (if0) carrying IPv6 `ip` (a whole packet).
    pub fn eth(dst_mac: MacAddress, ip: &[u8]) -> Vec<u8> {
        let mut f = ethernet_rewrite(dst_mac, HOST_MAC, 0x86dd).to_vec();
        f.extend_from_slice(ip);
        f
    }

    /// An IPv6 packet (no Ethernet) from `src` to `dst` with `payload` after the header.
    pub fn ip(src: u128, dst: u128, nh: u8, hop: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        ipv6::write_header(&mut p, payload.len() as u16, nh, hop, src, dst);
        p.extend_from_slice(payload);
        p
    }

    /// A UDP datagram in an Ethernet frame to if0, `len` bytes of IPv6.
    pub fn udp(src: u128, dst: u128, hop: u8, len: usize) -> Vec<u8> {
        let payload: Vec<u8> = (0..len - 40).map(|i| i as u8).collect();
        eth(if_mac(0), &ip(src, dst, next_header::UDP, hop, &payload))
    }

    /// An ICMPv6 echo request in an Ethernet frame to if0 with a correct checksum.
    pub fn echo_request(src: u128, dst: u128, data: usize) -> Vec<u8> {
        let mut msg = vec![icmp6::kind::ECHO_REQUEST, 0, 0, 0, 0x12, 0x34, 0, 1];
        msg.extend((0..data).map(|i| i as u8));
        let c = ipv6::upper_layer_checksum(src, dst, next_header::ICMPV6, &msg);
        msg[2..4].copy_from_slice(&c.to_be_bytes());
        eth(if_mac(0), &ip(src, dst, next_header::ICMPV6, 64, &msg))
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::nodes::testing::Harness;

    fn run(frames: &[Vec<u8>]) -> (usize, usize, Vec<u64>) {
        let h = Harness::new(1);
        let out = h.run_node(
            Ip6Input::decl(crate::graph::features::shared(Default::default())),
            frames,
            0,
        );
        (
            out.to_next(Ip6Input::slot(Next::Lookup)),
            out.to_next(Ip6Input::slot(Next::Drop)),
            out.errors,
        )
    }

    #[test]
    fn good_packets_go_to_lookup_tagged_and_jumbo_included() {
        let frames = [
            udp(HOST, FAR, 64, 60),
            udp(HOST, FAR, 1, 1500),
            udp(HOST, FAR, 255, 9000),
            tagged(&udp(HOST, FAR, 64, 100)),
            echo_request(HOST, if_addr(0), 8),
            udp(HOST, FAR, 0, 60),
        ];
        let (ok, drop, errors) = run(&frames);
        assert_eq!((ok, drop), (6, 0));
        assert!(errors.iter().all(|&e| e == 0), "{errors:?}");
    }

    #[test]
    fn each_bad_header_is_dropped_by_its_own_counter() {
        let mut v4 = udp(HOST, FAR, 64, 60);
        v4[14] = 0x45;
        let mut long = udp(HOST, FAR, 64, 60);
        long[18..20].copy_from_slice(&100u16.to_be_bytes());
        let mut arp = udp(HOST, FAR, 64, 60);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let cut = udp(HOST, FAR, 64, 60)[..50].to_vec();
        let frames = vec![
            v4,
            long,
            arp,
            cut,
            udp(1, FAR, 64, 60),
            udp(0xff02 << 112 | 1, FAR, 64, 60),
            udp(HOST, 1, 64, 60),
            vec![0; 6],
        ];
        let (ok, drop, e) = run(&frames);
        assert_eq!((ok, drop), (0, 8));
        crate::nodes::testing::assert_counted(
            &e,
            &[
                (Error::Version, 1),
                (Error::PayloadLength, 1),
                (Error::NotIpv6, 2),
                (Error::Truncated, 1),
                (Error::Loopback, 2),
                (Error::MulticastSource, 1),
            ],
        );
    }

    #[test]
    fn link_padding_is_accepted() {
        // A 20-byte UDP datagram in a minimum frame: 60 bytes of IPv6 in 74, fine; 58 in 60.
        let mut f = udp(HOST, FAR, 64, 46);
        f.resize(64, 0);
        assert_eq!(
            V6::check(Some(&f[14..]), f.len() - 14),
            (Next::Lookup, None)
        );
    }
}
