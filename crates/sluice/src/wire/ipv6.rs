//! IPv6 headers (RFC 8200): the checks a router makes before it forwards a packet, the
//! upper-layer checksum over the pseudo-header (RFC 8200 section 8.1), and the address
//! arithmetic neighbour discovery needs (solicited-node groups, multicast MACs, link-local
//! addresses from a MAC).
//!
//! ```text
//!  0       4              12                              32
//! +-------+---------------+-------------------------------+
//! |version| traffic class |           flow label          |
//! |        payload length         |  next header  |  hop limit  |
//! |                  source address (128 bits)                  |
//! |               destination address (128 bits)                |
//! ```
//!
//! Addresses are handled as `u128` in network order (the first byte is the most significant),
//! as the FIB takes them.

use super::MacAddress;

/// The fixed header; extension headers follow it and count in the payload length.
pub const HEADER_LEN: usize = 40;
/// The smallest link MTU IPv6 allows (RFC 8200 section 5); ICMPv6 errors fit in it.
pub const MIN_MTU: usize = 1280;

/// Next-header values this crate looks at.
pub mod next_header {
    pub const HOP_BY_HOP: u8 = 0;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    pub const ICMPV6: u8 = 58;
    pub const NO_NEXT: u8 = 59;
    pub const DESTINATION_OPTIONS: u8 = 60;
}

/// ff02::1, all nodes on the link.
pub const ALL_NODES: u128 = 0xff02 << 112 | 1;
/// ff02::2, all routers on the link.
pub const ALL_ROUTERS: u128 = 0xff02 << 112 | 2;

/// Why a router refuses an IPv6 packet; each is its own drop counter in `ip6-input`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipv6Error {
    /// Fewer than 40 bytes.
    Truncated,
    /// The version field is not 6.
    Version,
    /// The payload length runs past the end of the frame.
    PayloadLength,
}

impl Ipv6Error {
    pub fn reason(self) -> &'static str {
        match self {
            Ipv6Error::Truncated => "ip6 header truncated",
            Ipv6Error::Version => "ip6 version is not 6",
            Ipv6Error::PayloadLength => "ip6 payload length beyond the frame",
        }
    }
}

/// The fields of an IPv6 header at the start of `bytes`, read without checking them: for
/// nodes behind ip6-input, which has checked the packet once. The 40 fixed bytes are present.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6View<'a> {
    /// The fixed header, as an array: reading its fields needs no bounds checks.
    fixed: &'a [u8; HEADER_LEN],
    /// The header and what follows it.
    bytes: &'a [u8],
}

impl<'a> Ipv6View<'a> {
    /// `None` when fewer than 40 bytes are present.
    #[inline(always)]
    pub fn of(bytes: &'a [u8]) -> Option<Ipv6View<'a>> {
        let fixed = bytes.first_chunk::<HEADER_LEN>()?;
        Some(Ipv6View { fixed, bytes })
    }

    pub fn version(&self) -> u8 {
        self.fixed[0] >> 4
    }

    pub fn traffic_class(&self) -> u8 {
        (self.fixed[0] << 4) | (self.fixed[1] >> 4)
    }

    pub fn flow_label(&self) -> u32 {
        u32::from_be_bytes([0, self.fixed[1] & 0x0f, self.fixed[2], self.fixed[3]])
    }

    pub fn payload_len(&self) -> usize {
        u16::from_be_bytes([self.fixed[4], self.fixed[5]]) as usize
    }

    /// Header plus payload: the packet without any link padding.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    pub fn next_header(&self) -> u8 {
        self.fixed[6]
    }

    pub fn hop_limit(&self) -> u8 {
        self.fixed[7]
    }

    pub fn source(&self) -> u128 {
        addr_at(self.fixed, 8)
    }

    pub fn destination(&self) -> u128 {
        addr_at(self.fixed, 24)
    }

    /// The payload present in `bytes` (all of it unless the packet is chained).
    pub fn payload(&self) -> &'a [u8] {
        let end = self.total_len().clamp(HEADER_LEN, self.bytes.len());
        &self.bytes[HEADER_LEN..end]
    }
}

/// A checked view of an IPv6 header at the start of `bytes`: the fields of `Ipv6View`, of a
/// header whose version and payload length verify.
#[derive(Clone, Copy, Debug)]
pub struct Ipv6Header<'a> {
    view: Ipv6View<'a>,
}

impl<'a> std::ops::Deref for Ipv6Header<'a> {
    type Target = Ipv6View<'a>;

    fn deref(&self) -> &Ipv6View<'a> {
        &self.view
    }
}

impl<'a> Ipv6Header<'a> {
    /// Check the version and the payload length against what is present.
    pub fn parse(bytes: &'a [u8]) -> Result<Ipv6Header<'a>, Ipv6Error> {
        Self::parse_in(bytes, bytes.len())
    }

    /// Like `parse`, for a packet of `packet_len` bytes of which `bytes` (holding at least the
    /// header) is the first part: a packet chained over several buffers.
    pub fn parse_in(bytes: &'a [u8], packet_len: usize) -> Result<Ipv6Header<'a>, Ipv6Error> {
        let view = match Ipv6View::of(bytes) {
            Some(v) if packet_len >= HEADER_LEN => v,
            _ => return Err(Ipv6Error::Truncated),
        };
        if view.version() != 6 {
            return Err(Ipv6Error::Version);
        }
        // Payload length 0 would announce a jumbogram (RFC 2675), which no link here carries:
        // it is read as an empty payload. Shorter than the frame is Ethernet padding.
        if view.total_len() > packet_len.max(bytes.len()) {
            return Err(Ipv6Error::PayloadLength);
        }
        Ok(Ipv6Header { view })
    }
}

/// The address at `at` of `bytes`, which the caller has checked holds it.
fn addr_at(bytes: &[u8], at: usize) -> u128 {
    let mut a = [0u8; 16];
    a.copy_from_slice(&bytes[at..at + 16]);
    u128::from_be_bytes(a)
}

/// Write a fixed header (traffic class and flow label 0) into the first 40 bytes of `out`.
/// Returns false if `out` is shorter.
pub fn write_header(
    out: &mut [u8],
    payload_len: u16,
    next_header: u8,
    hop_limit: u8,
    src: u128,
    dst: u128,
) -> bool {
    let Some(h) = out.get_mut(..HEADER_LEN) else {
        return false;
    };
    h[..4].copy_from_slice(&[0x60, 0, 0, 0]);
    h[4..6].copy_from_slice(&payload_len.to_be_bytes());
    h[6] = next_header;
    h[7] = hop_limit;
    h[8..24].copy_from_slice(&src.to_be_bytes());
    h[24..40].copy_from_slice(&dst.to_be_bytes());
    true
}

/// Decrement the hop limit of the (already checked) header in `bytes`; IPv6 has no header
/// checksum to fix. Returns the new hop limit; 0 is left alone (the caller drops the packet).
pub fn decrement_hop_limit(bytes: &mut [u8]) -> u8 {
    match bytes.get_mut(7) {
        Some(h) if *h > 0 => {
            *h -= 1;
            *h
        }
        _ => 0,
    }
}

/// Add `bytes` as big-endian 16-bit words (an odd last byte padded with zero) to `sum`.
fn add_words(mut sum: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = words.remainder() {
        sum += (*last as u64) << 8;
    }
    sum
}

fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The checksum of an upper-layer message (ICMPv6, UDP, TCP) over the pseudo-header of RFC
/// 8200 section 8.1: source, destination, upper-layer length, next header. With the message's
/// checksum field zeroed this is the value to write there; over a message carrying a correct
/// checksum it is 0. (UDP sends a computed 0 as 0xffff; that is the caller's business.)
pub fn upper_layer_checksum(src: u128, dst: u128, next_header: u8, payload: &[u8]) -> u16 {
    let mut sum = add_words(0, &src.to_be_bytes());
    sum = add_words(sum, &dst.to_be_bytes());
    let len = payload.len() as u64;
    sum += (len >> 16) + (len & 0xffff) + next_header as u64;
    fold(add_words(sum, payload))
}

/// ff00::/8.
pub fn is_multicast(addr: u128) -> bool {
    addr >> 120 == 0xff
}

/// fe80::/10, unicast link-local.
pub fn is_link_local(addr: u128) -> bool {
    addr >> 118 == 0xfe80 >> 6
}

/// ::, the unspecified address (the source of duplicate address detection probes).
pub fn is_unspecified(addr: u128) -> bool {
    addr == 0
}

/// The solicited-node multicast group of `addr` (RFC 4291 2.7.1): ff02::1:ff00:0/104 with
/// the low 24 bits of `addr`.
pub fn solicited_node(addr: u128) -> u128 {
    (0xff02u128 << 112) | (0x1_ff00_0000u128) | (addr & 0xff_ffff)
}

/// The Ethernet group address of IPv6 multicast `addr` (RFC 2464 section 7): 33:33 and the
/// low 32 bits.
pub fn multicast_mac(addr: u128) -> MacAddress {
    let low = (addr as u32).to_be_bytes();
    MacAddress([0x33, 0x33, low[0], low[1], low[2], low[3]])
}

/// The link-local address fe80::/64 with the modified EUI-64 interface identifier of `mac`
/// (RFC 4291 appendix A): ff:fe in the middle, the universal/local bit inverted.
pub fn link_local_from_mac(mac: MacAddress) -> u128 {
    let m = mac.0;
    let iid = [m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]];
    (0xfe80u128 << 112) | u64::from_be_bytes(iid) as u128
}

/// Format `addr` the usual way (RFC 5952), for traces.
pub fn display(addr: u128) -> std::net::Ipv6Addr {
    std::net::Ipv6Addr::from(addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: u128 = 0x2001_0db8_0000_0000_0000_0000_0000_0001;
    const DST: u128 = 0x2001_0db8_0001_0000_0000_0000_0000_0002;

    fn packet(hop: u8, payload: usize) -> Vec<u8> {
        let mut p = vec![0xabu8; HEADER_LEN + payload];
        assert!(write_header(
            &mut p,
            payload as u16,
            next_header::UDP,
            hop,
            SRC,
            DST
        ));
        p
    }

    #[test]
    fn good_header_and_each_failure() {
        let p = packet(64, 20);
        let h = Ipv6Header::parse(&p).unwrap();
        assert_eq!(
            (h.payload_len(), h.next_header(), h.hop_limit()),
            (20, 17, 64)
        );
        assert_eq!((h.source(), h.destination()), (SRC, DST));
        assert_eq!(
            (h.traffic_class(), h.flow_label(), h.total_len()),
            (0, 0, 60)
        );
        assert_eq!(h.payload().len(), 20);
        assert_eq!(
            Ipv6Header::parse(&p[..39]).err(),
            Some(Ipv6Error::Truncated)
        );
        let mut v4 = p.clone();
        v4[0] = 0x45;
        assert_eq!(Ipv6Header::parse(&v4).err(), Some(Ipv6Error::Version));
        assert_eq!(
            Ipv6Header::parse(&p[..59]).err(),
            Some(Ipv6Error::PayloadLength)
        );
        // Padding after the packet is fine; a chained packet counts its whole length.
        let mut padded = packet(1, 6);
        padded.resize(60, 0);
        assert_eq!(Ipv6Header::parse(&padded).unwrap().payload().len(), 6);
        assert!(Ipv6Header::parse_in(&p[..50], 60).is_ok());
        assert_eq!(
            Ipv6Header::parse_in(&p[..50], 50).err(),
            Some(Ipv6Error::PayloadLength)
        );
        let mut tc = p.clone();
        tc[..4].copy_from_slice(&[0x6a, 0xb1, 0x23, 0x45]);
        let h = Ipv6Header::parse(&tc).unwrap();
        assert_eq!((h.traffic_class(), h.flow_label()), (0xab, 0x12345));
    }

    #[test]
    fn hop_limit_decrement_stops_at_zero() {
        let mut p = packet(2, 0);
        assert_eq!(decrement_hop_limit(&mut p), 1);
        assert_eq!(decrement_hop_limit(&mut p), 0);
        assert_eq!(decrement_hop_limit(&mut p), 0);
        assert_eq!(decrement_hop_limit(&mut [0u8; 3]), 0);
    }

    #[test]
    fn addresses() {
        let a: u128 = "2001:db8::1234:5678"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .into();
        let sn: u128 = "ff02::1:ff34:5678"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .into();
        assert_eq!(solicited_node(a), sn);
        assert!(is_multicast(sn) && !is_multicast(a));
        assert_eq!(multicast_mac(sn).to_string(), "33:33:ff:34:56:78");
        let mac: MacAddress = "00:1b:21:0a:0b:0c".parse().unwrap();
        let ll: u128 = "fe80::21b:21ff:fe0a:b0c"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .into();
        assert_eq!(link_local_from_mac(mac), ll);
        assert!(is_link_local(ll) && !is_link_local(a));
        assert!(is_link_local(0xfebf << 112) && !is_link_local(0xfec0 << 112));
        assert_eq!(display(ALL_NODES).to_string(), "ff02::1");
        assert!(is_unspecified(0));
    }

    /// The UDP example of a known capture: checksum written by the sender verifies to 0.
    #[test]
    fn checksum_verifies_what_it_wrote() {
        let mut udp = vec![
            0x30, 0x39, 0x00, 0x35, 0x00, 0x0d, 0, 0, b'h', b'e', b'l', b'l', b'o',
        ];
        let c = upper_layer_checksum(SRC, DST, next_header::UDP, &udp);
        udp[6..8].copy_from_slice(&c.to_be_bytes());
        assert_eq!(upper_layer_checksum(SRC, DST, next_header::UDP, &udp), 0);
        // The same sum as the RFC 1071 helper over an explicit pseudo-header.
        udp[6..8].copy_from_slice(&[0, 0]);
        let mut explicit = Vec::new();
        explicit.extend_from_slice(&SRC.to_be_bytes());
        explicit.extend_from_slice(&DST.to_be_bytes());
        explicit.extend_from_slice(&(udp.len() as u32).to_be_bytes());
        explicit.extend_from_slice(&[0, 0, 0, next_header::UDP]);
        explicit.extend_from_slice(&udp);
        assert_eq!(super::super::ipv4::checksum(&explicit), c);
    }

    proptest! {
        /// The unchecked view reads any bytes without panicking and exists exactly when the
        /// fixed header is present; its payload never runs past the bytes.
        #[test]
        fn view_reads_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            let view = Ipv6View::of(&bytes);
            prop_assert_eq!(view.is_some(), bytes.len() >= HEADER_LEN);
            if let Some(v) = view {
                let _ = (v.version(), v.traffic_class(), v.flow_label(), v.next_header(),
                         v.hop_limit(), v.source());
                prop_assert_eq!(v.destination(), addr_at(&bytes, 24));
                prop_assert!(v.payload().len() <= bytes.len() - HEADER_LEN);
            }
        }

        #[test]
        fn checksum_round_trips(
            src in any::<u128>(), dst in any::<u128>(), nh in any::<u8>(),
            mut payload in proptest::collection::vec(any::<u8>(), 2..300),
        ) {
            payload[0] = 0;
            payload[1] = 0;
            let c = upper_layer_checksum(src, dst, nh, &payload);
            payload[..2].copy_from_slice(&c.to_be_bytes());
            prop_assert_eq!(upper_layer_checksum(src, dst, nh, &payload), 0);
        }

        #[test]
        fn header_round_trips(
            src in any::<u128>(), dst in any::<u128>(), nh in any::<u8>(), hop in any::<u8>(),
            len in 0usize..200,
        ) {
            let mut p = vec![0u8; HEADER_LEN + len];
            prop_assert!(write_header(&mut p, len as u16, nh, hop, src, dst));
            let h = Ipv6Header::parse(&p).unwrap();
            prop_assert_eq!((h.source(), h.destination()), (src, dst));
            prop_assert_eq!((h.next_header(), h.hop_limit(), h.payload_len()), (nh, hop, len));
        }

        #[test]
        fn link_local_and_solicited_node_shapes(mac in any::<[u8; 6]>(), a in any::<u128>()) {
            let ll = link_local_from_mac(MacAddress(mac));
            prop_assert!(is_link_local(ll));
            prop_assert_eq!(ll >> 64, 0xfe80u128 << 48);
            let sn = solicited_node(a);
            prop_assert!(is_multicast(sn));
            prop_assert_eq!(sn & 0xff_ffff, a & 0xff_ffff);
            prop_assert_eq!(multicast_mac(sn).0[..3].to_vec(), vec![0x33, 0x33, 0xff]);
        }

        /// Any bytes: a verdict, never a panic.
        #[test]
        fn parse_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..120), extra in 0usize..100,
        ) {
            if let Ok(h) = Ipv6Header::parse_in(&bytes, bytes.len() + extra) {
                let _ = (h.payload(), h.source(), h.destination(), h.flow_label());
            }
            let mut b = bytes.clone();
            decrement_hop_limit(&mut b);
        }
    }
}
