//! ICMPv6 (RFC 4443) as a router speaks it: echo replies, error messages with the rules on
//! when not to send them, and neighbour discovery (RFC 4861) solicitations and advertisements
//! with their validity checks.
//!
//! Every function here takes or builds a whole IPv6 packet (fixed header first, no Ethernet),
//! never panics whatever the bytes, and leaves the ICMPv6 checksum correct in what it writes.
//!
//! ```text
//! +--------+--------+-----------------+
//! |  type  |  code  |    checksum     |
//! +--------+--------+-----------------+
//! |   rest of header (4 bytes)        |   errors: unused / MTU / pointer; echo: id, seq;
//! +-----------------------------------+   NS/NA: reserved / R S O flags
//! |   body                            |   errors: as much of the offending packet as fits
//! ```

use super::ipv6::{self, next_header, Ipv6Header, HEADER_LEN as IP6_HEADER_LEN, MIN_MTU};
use super::MacAddress;

/// Message types.
pub mod kind {
    pub const DEST_UNREACHABLE: u8 = 1;
    pub const PACKET_TOO_BIG: u8 = 2;
    pub const TIME_EXCEEDED: u8 = 3;
    pub const PARAMETER_PROBLEM: u8 = 4;
    pub const ECHO_REQUEST: u8 = 128;
    pub const ECHO_REPLY: u8 = 129;
    pub const ROUTER_SOLICIT: u8 = 133;
    pub const ROUTER_ADVERT: u8 = 134;
    pub const NEIGHBOR_SOLICIT: u8 = 135;
    pub const NEIGHBOR_ADVERT: u8 = 136;
    pub const REDIRECT: u8 = 137;
}

/// Type, code, checksum and the 4-byte rest of header.
pub const HEADER_LEN: usize = 8;
/// Hop limit of the messages we originate (errors, echo replies).
pub const HOP_LIMIT: u8 = 64;
/// Neighbour discovery is sent and accepted only with hop limit 255: proof it was not routed.
pub const ND_HOP_LIMIT: u8 = 255;
/// An NS or NA: ICMPv6 header and target address.
pub const ND_MIN_LEN: usize = 24;
/// An NS or NA we build: IPv6 header, the message and one link-layer address option.
pub const ND_PACKET_LEN: usize = IP6_HEADER_LEN + ND_MIN_LEN + 8;
/// Extension headers `upper_layer` walks through before it gives up.
const MAX_EXTENSION_HEADERS: usize = 8;

/// ND option types (RFC 4861 4.6).
const OPT_SOURCE_LL: u8 = 1;
const OPT_TARGET_LL: u8 = 2;

/// Where the upper-layer header of a checked IPv6 packet starts: its protocol and offset,
/// past hop-by-hop, routing, destination options and fragment headers. A fragment that does
/// not start at offset 0 holds no upper-layer header: it is returned as `FRAGMENT`. `None`
/// when an extension header runs past the bytes present, or there are too many of them.
pub fn upper_layer(ip_packet: &[u8]) -> Option<(u8, usize)> {
    upper_layer_named(ip_packet).map(|(proto, at, _)| (proto, at))
}

/// Like `upper_layer`, with the offset of the Next Header field that names the upper layer
/// (6 in the fixed header, or the first byte of the last extension header): where a
/// parameter problem about an unrecognised next header points (RFC 8200 4, RFC 4443 3.4).
pub fn upper_layer_named(ip_packet: &[u8]) -> Option<(u8, usize, usize)> {
    let h = Ipv6Header::parse_in(ip_packet, usize::MAX).ok()?;
    let end = h.total_len().min(ip_packet.len());
    let mut proto = h.next_header();
    let mut at = IP6_HEADER_LEN;
    let mut field = 6;
    for _ in 0..MAX_EXTENSION_HEADERS {
        match proto {
            next_header::HOP_BY_HOP | next_header::ROUTING | next_header::DESTINATION_OPTIONS => {
                let ext = ip_packet.get(at..at + 2).filter(|_| at + 2 <= end)?;
                proto = ext[0];
                field = at;
                at += (ext[1] as usize + 1) * 8;
            }
            next_header::FRAGMENT => {
                let frag = ip_packet.get(at..at + 8).filter(|_| at + 8 <= end)?;
                if u16::from_be_bytes([frag[2], frag[3]]) & 0xfff8 != 0 {
                    return Some((next_header::FRAGMENT, at, field));
                }
                proto = frag[0];
                field = at;
                at += 8;
            }
            _ => return (at <= end).then_some((proto, at, field)),
        }
    }
    None
}

/// Why an echo request gets no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EchoError {
    /// Not a well-formed IPv6 packet.
    NotIpv6,
    /// Not an ICMPv6 echo request right after the fixed header.
    NotEchoRequest,
    /// The message is not all in the bytes given.
    Truncated,
    /// The ICMPv6 checksum does not verify.
    Checksum,
    /// The source is multicast or unspecified: nobody to reply to.
    BadSource,
}

impl EchoError {
    pub fn reason(self) -> &'static str {
        match self {
            EchoError::NotIpv6 => "icmp6 echo: not an IPv6 packet",
            EchoError::NotEchoRequest => "icmp6 echo: not an echo request",
            EchoError::Truncated => "icmp6 echo: message truncated",
            EchoError::Checksum => "icmp6 checksum bad",
            EchoError::BadSource => "icmp6 echo: source multicast or unspecified",
        }
    }
}

/// Turn the echo request in `ip_packet` into its reply in place (RFC 4443 4.2): from
/// `reply_src` back to the request's source, hop limit 64, type 129, the identifier, sequence
/// number and data kept, checksum recomputed. Returns the reply's length (the request's, any
/// link padding excluded). Extension headers before the request are not echoed: the reply's
/// message follows its fixed header.
pub fn echo_request_to_reply(ip_packet: &mut [u8], reply_src: u128) -> Result<usize, EchoError> {
    let (src, dst, total) = {
        let h = Ipv6Header::parse(ip_packet).map_err(|_| EchoError::NotIpv6)?;
        (h.source(), h.destination(), h.total_len())
    };
    let at = match upper_layer(ip_packet) {
        Some((next_header::ICMPV6, at)) if total >= at + HEADER_LEN => at,
        Some(_) => return Err(EchoError::NotEchoRequest),
        None => return Err(EchoError::Truncated),
    };
    // parse() checked total <= len.
    if ip_packet[at] != kind::ECHO_REQUEST {
        return Err(EchoError::NotEchoRequest);
    }
    if ipv6::upper_layer_checksum(src, dst, next_header::ICMPV6, &ip_packet[at..total]) != 0 {
        return Err(EchoError::Checksum);
    }
    if ipv6::is_multicast(src) || ipv6::is_unspecified(src) {
        return Err(EchoError::BadSource);
    }
    ip_packet.copy_within(at..total, IP6_HEADER_LEN);
    let total = total - (at - IP6_HEADER_LEN);
    let packet = &mut ip_packet[..total];
    ipv6::write_header(
        packet,
        (total - IP6_HEADER_LEN) as u16,
        next_header::ICMPV6,
        HOP_LIMIT,
        reply_src,
        src,
    );
    let msg = &mut packet[IP6_HEADER_LEN..];
    msg[0] = kind::ECHO_REPLY;
    msg[1] = 0;
    set_checksum(reply_src, src, msg);
    Ok(total)
}

/// Zero the checksum field of ICMPv6 message `msg` and write the right one.
fn set_checksum(src: u128, dst: u128, msg: &mut [u8]) {
    msg[2..4].copy_from_slice(&[0, 0]);
    let c = ipv6::upper_layer_checksum(src, dst, next_header::ICMPV6, msg);
    msg[2..4].copy_from_slice(&c.to_be_bytes());
}

/// Why RFC 4443 2.4(e) forbids an error about a packet; each is a counter in icmp6-error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forbidden {
    /// The packet is not a readable IPv6 packet.
    NotIpv6,
    /// (e.1, e.2) It is itself an ICMPv6 error, or a redirect.
    ErrorMessage,
    /// (e.3) It went to a multicast group (allowed for Packet Too Big and for Parameter
    /// Problem code 2 only).
    MulticastDestination,
    /// (e.6) Its source does not name one node: unspecified or multicast.
    BadSource,
}

impl Forbidden {
    pub fn reason(self) -> &'static str {
        match self {
            Forbidden::NotIpv6 => "icmp6 error about a non-IPv6 packet",
            Forbidden::ErrorMessage => "icmp6 error about an icmp6 error or redirect",
            Forbidden::MulticastDestination => "icmp6 error about a multicast packet",
            Forbidden::BadSource => "icmp6 error to a multicast or unspecified source",
        }
    }
}

/// Whether RFC 4443 2.4(e) forbids sending an error of `kind`/`code` about `original` (an
/// IPv6 packet). (e.4), a packet sent to a link-layer multicast address, is for the caller,
/// which sees the Ethernet header; (e.5), a packet to an anycast address, is not tracked.
pub fn error_forbidden(original: &[u8], kind: u8, code: u8) -> Option<Forbidden> {
    let Ok(h) = Ipv6Header::parse_in(original, usize::MAX) else {
        return Some(Forbidden::NotIpv6);
    };
    if ipv6::is_multicast(h.source()) || ipv6::is_unspecified(h.source()) {
        return Some(Forbidden::BadSource);
    }
    let multicast_allowed =
        kind == kind::PACKET_TOO_BIG || (kind == kind::PARAMETER_PROBLEM && code == 2);
    if ipv6::is_multicast(h.destination()) && !multicast_allowed {
        return Some(Forbidden::MulticastDestination);
    }
    if let Some((next_header::ICMPV6, at)) = upper_layer(original) {
        // An ICMPv6 message whose type we cannot see is let through: better one error too
        // many than none about a truncated packet.
        if let Some(&t) = original.get(at) {
            if t < 128 || t == kind::REDIRECT {
                return Some(Forbidden::ErrorMessage);
            }
        }
    }
    None
}

/// Build, in `out`, the whole IPv6 packet of an ICMPv6 error of `kind`/`code` about
/// `original` (an IPv6 packet, possibly only the first part of a longer one): from
/// `router_addr` to the original source, hop limit 64, `rest_of_header` (the MTU of Packet
/// Too Big, the pointer of Parameter Problem, else 0), then as much of the original as keeps
/// the error within 1280 bytes (RFC 4443 2.4(c)) and within `out`. Returns the length; `None`
/// when the original is not IPv6, its source cannot be replied to, or `out` is too short
/// for the headers. Whether the error may be sent at all is `error_forbidden`'s question.
pub fn build_error(
    out: &mut [u8],
    original: &[u8],
    kind: u8,
    code: u8,
    rest_of_header: u32,
    router_addr: u128,
) -> Option<usize> {
    let h = Ipv6Header::parse_in(original, usize::MAX).ok()?;
    let dst = h.source();
    if ipv6::is_multicast(dst) || ipv6::is_unspecified(dst) {
        return None;
    }
    let headers = IP6_HEADER_LEN + HEADER_LEN;
    let limit = out.len().min(MIN_MTU);
    if limit < headers {
        return None;
    }
    let quote = h.total_len().min(original.len()).min(limit - headers);
    let total = headers + quote;
    let packet = &mut out[..total];
    ipv6::write_header(
        packet,
        (total - IP6_HEADER_LEN) as u16,
        next_header::ICMPV6,
        HOP_LIMIT,
        router_addr,
        dst,
    );
    let msg = &mut packet[IP6_HEADER_LEN..];
    msg[0] = kind;
    msg[1] = code;
    msg[4..8].copy_from_slice(&rest_of_header.to_be_bytes());
    msg[HEADER_LEN..].copy_from_slice(&original[..quote]);
    set_checksum(router_addr, dst, msg);
    Some(total)
}

/// The flags of a neighbour advertisement (RFC 4861 4.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NaFlags {
    /// The sender is a router.
    pub router: bool,
    /// The answer to a solicitation.
    pub solicited: bool,
    /// Replace a cached link-layer address.
    pub override_: bool,
}

impl NaFlags {
    fn from_byte(b: u8) -> NaFlags {
        NaFlags {
            router: b & 0x80 != 0,
            solicited: b & 0x40 != 0,
            override_: b & 0x20 != 0,
        }
    }

    fn to_byte(self) -> u8 {
        (self.router as u8) << 7 | (self.solicited as u8) << 6 | (self.override_ as u8) << 5
    }
}

/// A valid neighbour solicitation or advertisement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdMessage {
    Solicit {
        target: u128,
        source_link_addr: Option<MacAddress>,
    },
    Advert {
        target: u128,
        flags: NaFlags,
        target_link_addr: Option<MacAddress>,
    },
}

/// Why a packet is not a valid NS or NA (RFC 4861 7.1.1, 7.1.2); each is a counter in ip6-nd,
/// which counts them first, `NdError as usize` being the counter's index.
#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdError {
    /// Not IPv6, or not ICMPv6 right after the fixed header.
    NotIcmp6,
    /// ICMPv6, but neither a solicitation nor an advertisement.
    NotNeighbor,
    /// Hop limit other than 255: the message was routed.
    HopLimit,
    /// Code other than 0.
    Code,
    /// The message is not all in the bytes given, or shorter than 24 bytes.
    Length,
    /// The ICMPv6 checksum does not verify.
    Checksum,
    /// The target is a multicast address.
    TargetMulticast,
    /// An option of length 0, or one that runs past the message.
    BadOption,
    /// A solicitation from the unspecified address (duplicate address detection) that is not
    /// to a solicited-node group, or carries a source link-layer address.
    UnspecifiedSource,
    /// An advertisement to a multicast group with the solicited flag set.
    SolicitedMulticast,
}

impl NdError {
    /// The reason of each error, in declaration order (`NdError as usize`).
    pub const REASONS: [&'static str; 10] = [
        "nd: not icmp6",
        "nd: not a neighbour solicitation or advertisement",
        "nd: hop limit is not 255",
        "nd: code is not 0",
        "nd: message too short",
        "nd: icmp6 checksum bad",
        "nd: target is multicast",
        "nd: option length invalid",
        "nd: solicitation from :: malformed",
        "nd: solicited advertisement to multicast",
    ];

    pub fn reason(self) -> &'static str {
        Self::REASONS[self as usize]
    }
}
const _: () = assert!(NdError::SolicitedMulticast as usize + 1 == NdError::REASONS.len());

/// Read and validate a neighbour solicitation or advertisement (RFC 4861 7.1.1 and 7.1.2).
/// Unknown options are skipped, as the RFC asks; a link-layer address option is read as an
/// Ethernet MAC.
pub fn parse_nd(ip_packet: &[u8]) -> Result<NdMessage, NdError> {
    let h = Ipv6Header::parse(ip_packet).map_err(|_| NdError::NotIcmp6)?;
    if h.next_header() != next_header::ICMPV6 {
        return Err(NdError::NotIcmp6);
    }
    let msg = h.payload();
    let Some(&t) = msg.first() else {
        return Err(NdError::Length);
    };
    if t != kind::NEIGHBOR_SOLICIT && t != kind::NEIGHBOR_ADVERT {
        return Err(NdError::NotNeighbor);
    }
    if h.hop_limit() != ND_HOP_LIMIT {
        return Err(NdError::HopLimit);
    }
    if msg.len() < ND_MIN_LEN {
        return Err(NdError::Length);
    }
    if msg[1] != 0 {
        return Err(NdError::Code);
    }
    if ipv6::upper_layer_checksum(h.source(), h.destination(), next_header::ICMPV6, msg) != 0 {
        return Err(NdError::Checksum);
    }
    let mut t16 = [0u8; 16];
    t16.copy_from_slice(&msg[8..24]);
    let target = u128::from_be_bytes(t16);
    if ipv6::is_multicast(target) {
        return Err(NdError::TargetMulticast);
    }
    let (mut source_ll, mut target_ll) = (None, None);
    let mut options = &msg[ND_MIN_LEN..];
    while !options.is_empty() {
        let len = options.get(1).map_or(0, |&l| l as usize * 8);
        if len == 0 || len > options.len() {
            return Err(NdError::BadOption);
        }
        let mac = MacAddress::from_slice(&options[2..len]);
        match options[0] {
            OPT_SOURCE_LL => source_ll = mac,
            OPT_TARGET_LL => target_ll = mac,
            _ => {}
        }
        options = &options[len..];
    }
    if t == kind::NEIGHBOR_SOLICIT {
        if ipv6::is_unspecified(h.source())
            && (h.destination() != ipv6::solicited_node(target) || source_ll.is_some())
        {
            return Err(NdError::UnspecifiedSource);
        }
        Ok(NdMessage::Solicit {
            target,
            source_link_addr: source_ll,
        })
    } else {
        let flags = NaFlags::from_byte(msg[4]);
        if flags.solicited && ipv6::is_multicast(h.destination()) {
            return Err(NdError::SolicitedMulticast);
        }
        Ok(NdMessage::Advert {
            target,
            flags,
            target_link_addr: target_ll,
        })
    }
}

/// Write an NS or NA packet: IPv6 header with hop limit 255, the message, one link-layer
/// address option, the checksum. Returns the length, or 0 when `out` is too short.
#[allow(clippy::too_many_arguments)]
fn build_nd(
    out: &mut [u8],
    src: u128,
    dst: u128,
    t: u8,
    flags: u8,
    target: u128,
    option: u8,
    mac: MacAddress,
) -> usize {
    let Some(packet) = out.get_mut(..ND_PACKET_LEN) else {
        return 0;
    };
    let payload = (ND_PACKET_LEN - IP6_HEADER_LEN) as u16;
    ipv6::write_header(packet, payload, next_header::ICMPV6, ND_HOP_LIMIT, src, dst);
    let msg = &mut packet[IP6_HEADER_LEN..];
    msg[..8].copy_from_slice(&[t, 0, 0, 0, flags, 0, 0, 0]);
    msg[8..24].copy_from_slice(&target.to_be_bytes());
    msg[24] = option;
    msg[25] = 1;
    msg[26..32].copy_from_slice(&mac.0);
    set_checksum(src, dst, msg);
    ND_PACKET_LEN
}

/// A neighbour solicitation for `target` from `src_ip`/`src_mac` to the target's
/// solicited-node group (address resolution, RFC 4861 7.2.2), with our source link-layer
/// address. Not for duplicate address detection (which sends from :: without the option).
/// Returns the packet length, or 0 when `out` is shorter than `ND_PACKET_LEN`.
pub fn build_solicit(out: &mut [u8], src_ip: u128, src_mac: MacAddress, target: u128) -> usize {
    build_solicit_to(out, src_ip, src_mac, target, ipv6::solicited_node(target))
}

/// As `build_solicit`, to `dst`: the target itself for a unicast probe (RFC 4861 7.3.3).
pub fn build_solicit_to(
    out: &mut [u8],
    src_ip: u128,
    src_mac: MacAddress,
    target: u128,
    dst: u128,
) -> usize {
    build_nd(
        out,
        src_ip,
        dst,
        kind::NEIGHBOR_SOLICIT,
        0,
        target,
        OPT_SOURCE_LL,
        src_mac,
    )
}

/// A neighbour advertisement of `target` at `our_mac` (RFC 4861 7.2.4), from `src_ip` to
/// `dst_ip` (the solicitor, or all-nodes when it solicited from ::, then with `solicited`
/// false). Router and override flags are set: we are a router and `target` is our own
/// address. Returns the packet length, or 0 when `out` is shorter than `ND_PACKET_LEN`.
pub fn build_advert(
    out: &mut [u8],
    src_ip: u128,
    dst_ip: u128,
    our_mac: MacAddress,
    target: u128,
    solicited: bool,
) -> usize {
    let flags = NaFlags {
        router: true,
        solicited,
        override_: true,
    };
    build_nd(
        out,
        src_ip,
        dst_ip,
        kind::NEIGHBOR_ADVERT,
        flags.to_byte(),
        target,
        OPT_TARGET_LL,
        our_mac,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HOST: u128 = 0x2001_0db8_0000_0000_0000_0000_0000_0010;
    const ROUTER: u128 = 0x2001_0db8_0000_0000_0000_0000_0000_0001;
    const FAR: u128 = 0x2001_0db8_00ff_0000_0000_0000_0000_0002;
    const MAC: MacAddress = MacAddress([2, 0, 0, 0, 0, 1]);

    /// An IPv6 packet with an ICMPv6 message of `t` and `data` bytes of body.
    fn icmp(src: u128, dst: u128, hop: u8, t: u8, data: usize) -> Vec<u8> {
        let mut p = vec![0u8; IP6_HEADER_LEN + HEADER_LEN + data];
        let plen = (p.len() - IP6_HEADER_LEN) as u16;
        ipv6::write_header(&mut p, plen, next_header::ICMPV6, hop, src, dst);
        let msg = &mut p[IP6_HEADER_LEN..];
        msg[0] = t;
        msg[4..8].copy_from_slice(&[0x12, 0x34, 0, 7]);
        for (i, b) in msg[HEADER_LEN..].iter_mut().enumerate() {
            *b = i as u8;
        }
        set_checksum(src, dst, msg);
        p
    }

    fn udp(src: u128, dst: u128, len: usize) -> Vec<u8> {
        let mut p = vec![0x5au8; len];
        ipv6::write_header(&mut p, (len - 40) as u16, next_header::UDP, 64, src, dst);
        p
    }

    fn verifies(p: &[u8]) -> bool {
        let h = Ipv6Header::parse(p).unwrap();
        ipv6::upper_layer_checksum(h.source(), h.destination(), 58, h.payload()) == 0
    }

    #[test]
    fn echo_request_becomes_a_reply() {
        let mut p = icmp(HOST, ROUTER, 60, kind::ECHO_REQUEST, 56);
        let body = p[48..].to_vec();
        p.extend_from_slice(&[0; 10]); // link padding is not part of the reply
        assert_eq!(echo_request_to_reply(&mut p, ROUTER), Ok(104));
        let h = Ipv6Header::parse(&p[..104]).unwrap();
        assert_eq!(
            (h.source(), h.destination(), h.hop_limit()),
            (ROUTER, HOST, 64)
        );
        assert_eq!((p[40], p[41]), (kind::ECHO_REPLY, 0));
        assert_eq!(&p[44..48], &[0x12, 0x34, 0, 7]);
        assert_eq!(&p[48..104], &body[..]);
        assert!(verifies(&p[..104]));
        // Behind a hop-by-hop header: the reply carries the message alone.
        let mut ext = p[..40].to_vec();
        let req = icmp(HOST, ROUTER, 60, kind::ECHO_REQUEST, 56);
        ext[6] = next_header::HOP_BY_HOP;
        ext[4..6].copy_from_slice(&(64u16 + 8).to_be_bytes());
        ext[8..24].copy_from_slice(&req[8..24]);
        ext[24..40].copy_from_slice(&req[24..40]);
        ext.extend_from_slice(&[next_header::ICMPV6, 0, 1, 4, 0, 0, 0, 0]);
        ext.extend_from_slice(&req[40..]);
        assert_eq!(upper_layer_named(&ext), Some((next_header::ICMPV6, 48, 40)));
        assert_eq!(echo_request_to_reply(&mut ext, ROUTER), Ok(104));
        assert_eq!(&ext[48..104], &body[..]);
        assert!(verifies(&ext[..104]));
        // Replying twice: it is no longer a request.
        assert_eq!(
            echo_request_to_reply(&mut p, ROUTER),
            Err(EchoError::NotEchoRequest)
        );
    }

    #[test]
    fn echo_failures() {
        let mut bad = icmp(HOST, ROUTER, 60, kind::ECHO_REQUEST, 8);
        bad[50] ^= 1;
        assert_eq!(
            echo_request_to_reply(&mut bad, ROUTER),
            Err(EchoError::Checksum)
        );
        let mut mc = icmp(ipv6::ALL_NODES, ROUTER, 60, kind::ECHO_REQUEST, 8);
        assert_eq!(
            echo_request_to_reply(&mut mc, ROUTER),
            Err(EchoError::BadSource)
        );
        let mut u = udp(HOST, ROUTER, 60);
        assert_eq!(
            echo_request_to_reply(&mut u, ROUTER),
            Err(EchoError::NotEchoRequest)
        );
        assert_eq!(
            echo_request_to_reply(&mut [0x60; 20], ROUTER),
            Err(EchoError::NotIpv6)
        );
    }

    #[test]
    fn errors_are_forbidden_by_rfc4443() {
        let data = udp(HOST, FAR, 100);
        assert_eq!(error_forbidden(&data, kind::TIME_EXCEEDED, 0), None);
        let err = icmp(HOST, FAR, 64, kind::DEST_UNREACHABLE, 40);
        assert_eq!(
            error_forbidden(&err, kind::TIME_EXCEEDED, 0),
            Some(Forbidden::ErrorMessage)
        );
        let redirect = icmp(HOST, FAR, 64, kind::REDIRECT, 40);
        assert_eq!(
            error_forbidden(&redirect, kind::TIME_EXCEEDED, 0),
            Some(Forbidden::ErrorMessage)
        );
        let echo = icmp(HOST, FAR, 64, kind::ECHO_REQUEST, 40);
        assert_eq!(error_forbidden(&echo, kind::TIME_EXCEEDED, 0), None);
        let group = udp(HOST, 0xff0e << 112 | 5, 100);
        assert_eq!(
            error_forbidden(&group, kind::TIME_EXCEEDED, 0),
            Some(Forbidden::MulticastDestination)
        );
        assert_eq!(error_forbidden(&group, kind::PACKET_TOO_BIG, 0), None);
        assert_eq!(error_forbidden(&group, kind::PARAMETER_PROBLEM, 2), None);
        assert_eq!(
            error_forbidden(&group, kind::PARAMETER_PROBLEM, 1),
            Some(Forbidden::MulticastDestination)
        );
        let dad = udp(0, FAR, 100);
        assert_eq!(
            error_forbidden(&dad, kind::PACKET_TOO_BIG, 0),
            Some(Forbidden::BadSource)
        );
        assert_eq!(
            error_forbidden(&[1, 2, 3], kind::TIME_EXCEEDED, 0),
            Some(Forbidden::NotIpv6)
        );
    }

    #[test]
    fn error_behind_extension_headers_is_still_an_error() {
        // Hop-by-hop (8 bytes), then a destination-unreachable message.
        let inner = icmp(HOST, FAR, 64, kind::DEST_UNREACHABLE, 8);
        let mut p = inner[..40].to_vec();
        p[6] = next_header::HOP_BY_HOP;
        p[4..6].copy_from_slice(&((inner.len() - 40 + 8) as u16).to_be_bytes());
        p.extend_from_slice(&[next_header::ICMPV6, 0, 1, 4, 0, 0, 0, 0]);
        p.extend_from_slice(&inner[40..]);
        assert_eq!(upper_layer(&p), Some((next_header::ICMPV6, 48)));
        assert_eq!(
            error_forbidden(&p, kind::TIME_EXCEEDED, 0),
            Some(Forbidden::ErrorMessage)
        );
        // A later fragment has no upper-layer header to look at.
        let mut f = p.clone();
        f[40..48].copy_from_slice(&[next_header::ICMPV6, 0, 0, 0x10, 0, 0, 0, 1]);
        f[6] = next_header::FRAGMENT;
        assert_eq!(upper_layer(&f), Some((next_header::FRAGMENT, 40)));
        assert_eq!(error_forbidden(&f, kind::TIME_EXCEEDED, 0), None);
    }

    #[test]
    fn error_quotes_what_fits_in_1280() {
        let big = udp(HOST, FAR, 1500);
        let mut out = [0u8; 2048];
        let n = build_error(&mut out, &big, kind::PACKET_TOO_BIG, 0, 1400, ROUTER).unwrap();
        assert_eq!(n, 1280);
        let h = Ipv6Header::parse(&out[..n]).unwrap();
        assert_eq!(
            (h.source(), h.destination(), h.hop_limit()),
            (ROUTER, HOST, 64)
        );
        assert_eq!(h.payload_len(), 1240);
        assert_eq!((out[40], out[41]), (kind::PACKET_TOO_BIG, 0));
        assert_eq!(&out[44..48], &1400u32.to_be_bytes());
        assert_eq!(&out[48..n], &big[..1232]);
        assert!(verifies(&out[..n]));
        // A small packet is quoted whole, without its link padding.
        let mut small = udp(HOST, FAR, 50);
        small.extend_from_slice(&[0xee; 14]);
        let n = build_error(&mut out, &small, kind::TIME_EXCEEDED, 0, 0, ROUTER).unwrap();
        assert_eq!(n, 48 + 50);
        assert!(verifies(&out[..n]));
        // An output smaller than 1280 bounds the quote too; too small for the headers fails.
        let n = build_error(&mut out[..100], &big, kind::TIME_EXCEEDED, 0, 0, ROUTER).unwrap();
        assert_eq!(n, 100);
        assert!(verifies(&out[..n]));
        assert_eq!(build_error(&mut out[..47], &big, 3, 0, 0, ROUTER), None);
        assert_eq!(
            build_error(&mut out, &udp(0, FAR, 60), 3, 0, 0, ROUTER),
            None
        );
    }

    #[test]
    fn solicit_round_trips_and_goes_to_the_solicited_node_group() {
        let mut out = [0u8; 100];
        let n = build_solicit(&mut out, ROUTER, MAC, HOST);
        assert_eq!(n, ND_PACKET_LEN);
        let h = Ipv6Header::parse(&out[..n]).unwrap();
        assert_eq!(h.destination(), ipv6::solicited_node(HOST));
        assert_eq!(h.hop_limit(), 255);
        assert!(verifies(&out[..n]));
        assert_eq!(
            parse_nd(&out[..n]),
            Ok(NdMessage::Solicit {
                target: HOST,
                source_link_addr: Some(MAC)
            })
        );
        assert_eq!(build_solicit(&mut out[..71], ROUTER, MAC, HOST), 0);
    }

    #[test]
    fn advert_round_trips() {
        let mut out = [0u8; 72];
        let n = build_advert(&mut out, ROUTER, HOST, MAC, ROUTER, true);
        assert_eq!(
            parse_nd(&out[..n]),
            Ok(NdMessage::Advert {
                target: ROUTER,
                flags: NaFlags {
                    router: true,
                    solicited: true,
                    override_: true
                },
                target_link_addr: Some(MAC)
            })
        );
    }

    /// Re-checksum an ND packet after an edit.
    fn fix(p: &mut [u8]) {
        let h = Ipv6Header::parse(p).unwrap();
        let (s, d) = (h.source(), h.destination());
        set_checksum(s, d, &mut p[40..]);
    }

    #[test]
    fn each_nd_validity_check() {
        let mut ns = [0u8; 72];
        build_solicit(&mut ns, HOST, MAC, ROUTER);
        let mut na = [0u8; 72];
        build_advert(&mut na, ROUTER, HOST, MAC, ROUTER, true);
        let edit = |base: &[u8], f: &dyn Fn(&mut Vec<u8>)| {
            let mut p = base.to_vec();
            f(&mut p);
            fix(&mut p);
            parse_nd(&p)
        };
        assert_eq!(edit(&ns, &|p| p[7] = 254), Err(NdError::HopLimit));
        assert_eq!(edit(&ns, &|p| p[41] = 1), Err(NdError::Code));
        assert_eq!(edit(&ns, &|p| p[48] = 0xff), Err(NdError::TargetMulticast));
        assert_eq!(edit(&ns, &|p| p[65] = 0), Err(NdError::BadOption));
        assert_eq!(edit(&ns, &|p| p[65] = 2), Err(NdError::BadOption));
        assert_eq!(
            edit(&ns, &|p| {
                p.truncate(60);
                p[4..6].copy_from_slice(&20u16.to_be_bytes());
            }),
            Err(NdError::Length)
        );
        // DAD: from ::, to the solicited-node group, without the option.
        let dad = |p: &mut Vec<u8>| {
            p[8..24].copy_from_slice(&[0; 16]);
            p.truncate(64);
            p[4..6].copy_from_slice(&24u16.to_be_bytes());
        };
        assert!(matches!(
            edit(&ns, &dad),
            Ok(NdMessage::Solicit {
                source_link_addr: None,
                ..
            })
        ));
        assert_eq!(
            edit(&ns, &|p| p[8..24].copy_from_slice(&[0; 16])),
            Err(NdError::UnspecifiedSource)
        );
        assert_eq!(
            edit(&ns, &|p| {
                dad(p);
                p[24..40].copy_from_slice(&ipv6::ALL_NODES.to_be_bytes());
            }),
            Err(NdError::UnspecifiedSource)
        );
        assert_eq!(
            edit(&na, &|p| p[24..40]
                .copy_from_slice(&ipv6::ALL_NODES.to_be_bytes())),
            Err(NdError::SolicitedMulticast)
        );
        // Unknown options are skipped; the last link-layer option counts.
        let with_unknown = edit(&na, &|p| {
            p.extend_from_slice(&[14, 1, 0, 0, 0, 0, 0, 0]);
            p[4..6].copy_from_slice(&40u16.to_be_bytes());
        });
        assert!(with_unknown.is_ok(), "{with_unknown:?}");
        let mut bad = ns;
        bad[70] ^= 1;
        assert_eq!(parse_nd(&bad), Err(NdError::Checksum));
        let echo = icmp(HOST, ROUTER, 255, kind::ECHO_REQUEST, 20);
        assert_eq!(parse_nd(&echo), Err(NdError::NotNeighbor));
        assert_eq!(parse_nd(&udp(HOST, ROUTER, 80)), Err(NdError::NotIcmp6));
    }

    proptest! {
        #[test]
        fn nd_round_trips(
            src in any::<u128>(), dst in any::<u128>(), target in any::<u128>(),
            mac in any::<[u8; 6]>(), solicited in any::<bool>(),
        ) {
            let target = target & !(0xffu128 << 120); // not multicast
            let mut out = [0u8; 72];
            build_solicit(&mut out, src.max(1), MacAddress(mac), target);
            prop_assert_eq!(parse_nd(&out), Ok(NdMessage::Solicit {
                target, source_link_addr: Some(MacAddress(mac)),
            }));
            let dst = dst & !(0xffu128 << 120);
            build_advert(&mut out, src, dst, MacAddress(mac), target, solicited);
            prop_assert_eq!(parse_nd(&out), Ok(NdMessage::Advert {
                target,
                flags: NaFlags { router: true, solicited, override_: true },
                target_link_addr: Some(MacAddress(mac)),
            }));
        }

        #[test]
        fn built_errors_verify(
            len in 40usize..3000, kind in 1u8..5, code in any::<u8>(), rest in any::<u32>(),
            out_len in 0usize..1600,
        ) {
            let original = udp(HOST, FAR, len);
            let mut out = vec![0u8; out_len];
            if let Some(n) = build_error(&mut out, &original, kind, code, rest, ROUTER) {
                prop_assert!(n <= 1280 && n <= out_len && n >= 48);
                prop_assert!(verifies(&out[..n]));
                prop_assert_eq!(&out[48..n], &original[..n - 48]);
            } else {
                prop_assert!(out_len < 48);
            }
        }

        /// Any bytes, or a valid ND packet with bytes flipped: a verdict, never a panic.
        #[test]
        fn nothing_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            flips in proptest::collection::vec((0usize..72, any::<u8>()), 0..4),
            kind in any::<u8>(), code in any::<u8>(),
        ) {
            let _ = parse_nd(&bytes);
            let _ = upper_layer(&bytes);
            let _ = error_forbidden(&bytes, kind, code);
            let mut out = [0u8; 300];
            let _ = build_error(&mut out, &bytes, kind, code, 0, ROUTER);
            let _ = echo_request_to_reply(&mut bytes.clone(), ROUTER);
            let mut ns = [0u8; 72];
            build_solicit(&mut ns, HOST, MAC, ROUTER);
            for (at, x) in flips {
                ns[at] ^= x;
            }
            let _ = parse_nd(&ns);
            let mut v = ns.to_vec();
            v[40] = kind::ECHO_REQUEST;
            let _ = echo_request_to_reply(&mut v, ROUTER);
        }
    }
}
