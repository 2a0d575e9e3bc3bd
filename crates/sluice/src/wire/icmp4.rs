//! ICMPv4 (RFC 792) as a router uses it: answering echo requests in place, and building the
//! error messages of RFC 1812 section 4.3 (time exceeded, destination unreachable) with the
//! checks of 4.3.2.7 on when an error must not be sent.
//!
//! ```text
//!  0       8      16                              32
//! +-------+-------+-------------------------------+
//! | type  | code  |           checksum            |
//! |            rest of header (by type)           |
//! | data: echo payload, or the quoted datagram    |
//! ```
//!
//! All functions take the IPv4 packet starting at its IP header, never panic, and leave the
//! packet unchanged when they refuse it.

use super::ipv4::{checksum, update_checksum, Ipv4Error, Ipv4Header, MIN_HEADER_LEN};

pub const ECHO_REPLY: u8 = 0;
pub const DEST_UNREACHABLE: u8 = 3;
pub const SOURCE_QUENCH: u8 = 4;
pub const REDIRECT: u8 = 5;
pub const ECHO_REQUEST: u8 = 8;
pub const TIME_EXCEEDED: u8 = 11;
pub const PARAMETER_PROBLEM: u8 = 12;

/// Destination unreachable codes.
pub const CODE_NET_UNREACHABLE: u8 = 0;
pub const CODE_HOST_UNREACHABLE: u8 = 1;
pub const CODE_PROTOCOL_UNREACHABLE: u8 = 2;
pub const CODE_PORT_UNREACHABLE: u8 = 3;
pub const CODE_FRAGMENTATION_NEEDED: u8 = 4;
/// Time exceeded code: TTL ran out in transit.
pub const CODE_TTL_EXCEEDED: u8 = 0;

/// IP protocol number of ICMP.
pub const PROTOCOL: u8 = 1;
/// Type, code, checksum and the 4-byte rest of header.
pub const HEADER_LEN: usize = 8;
/// RFC 1812 4.3.2.3: an error quotes as much of the original as fits without the whole
/// error datagram exceeding 576 bytes.
pub const MAX_ERROR_LEN: usize = 576;
/// TTL of the packets the router originates.
pub const DEFAULT_TTL: u8 = 64;
/// RFC 1812 4.3.2.5: errors other than source quench go out with precedence 6
/// (internetwork control).
const ERROR_TOS: u8 = 0xc0;

/// Why an echo request was not answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Icmp4Error {
    /// The IP header itself does not check out.
    Ip(Ipv4Error),
    /// The IP protocol is not ICMP.
    NotIcmp,
    /// A fragment: its ICMP checksum cannot be verified without reassembly.
    Fragment,
    /// Fewer than the 8 bytes of an ICMP header.
    Truncated,
    /// The ICMP checksum does not verify.
    Checksum,
    /// Some other ICMP type.
    NotEchoRequest,
}

/// Types that are error messages, which never cause another error (RFC 1812 4.3.2.7).
pub fn is_error_type(kind: u8) -> bool {
    matches!(
        kind,
        DEST_UNREACHABLE | SOURCE_QUENCH | REDIRECT | TIME_EXCEEDED | PARAMETER_PROBLEM
    )
}

/// More fragments set, or a non-zero offset.
fn is_fragment(ip: &[u8]) -> bool {
    ip[6] & 0x20 != 0 || non_first_fragment(ip)
}

fn non_first_fragment(ip: &[u8]) -> bool {
    u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0
}

fn addr(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Turn the IPv4 echo request in `ip_packet` into its reply, in place: addresses swapped with
/// the source set to `reply_src`, TTL 64, type 0, both checksums fixed. The request is
/// checked first (IP header, not a fragment, ICMP checksum); trailing bytes past the IP total
/// length (Ethernet padding) are ignored and left as they are.
pub fn echo_request_to_reply(ip_packet: &mut [u8], reply_src: u32) -> Result<(), Icmp4Error> {
    let (hl, total) = {
        let h = Ipv4Header::parse(ip_packet).map_err(Icmp4Error::Ip)?;
        if h.protocol() != PROTOCOL {
            return Err(Icmp4Error::NotIcmp);
        }
        (h.header_len(), h.total_len())
    };
    if is_fragment(ip_packet) {
        return Err(Icmp4Error::Fragment);
    }
    // parse() guarantees hl <= total <= len.
    let icmp = &ip_packet[hl..total];
    if icmp.len() < HEADER_LEN {
        return Err(Icmp4Error::Truncated);
    }
    if checksum(icmp) != 0 {
        return Err(Icmp4Error::Checksum);
    }
    if icmp[0] != ECHO_REQUEST {
        return Err(Icmp4Error::NotEchoRequest);
    }

    // ICMP: only the type changes, so the checksum is updated incrementally (RFC 1624) and
    // the payload, which may be long, is not read again.
    let icmp = &mut ip_packet[hl..total];
    let old = u16::from_be_bytes([icmp[0], icmp[1]]);
    icmp[0] = ECHO_REPLY;
    let new = u16::from_be_bytes([icmp[0], icmp[1]]);
    let check = u16::from_be_bytes([icmp[2], icmp[3]]);
    icmp[2..4].copy_from_slice(&update_checksum(check, old, new).to_be_bytes());

    // IP: new addresses and TTL; the header is short, so recompute its checksum whole.
    let ip = &mut ip_packet[..hl];
    let requester = addr(&ip[12..16]);
    ip[8] = DEFAULT_TTL;
    ip[12..16].copy_from_slice(&reply_src.to_be_bytes());
    ip[16..20].copy_from_slice(&requester.to_be_bytes());
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// An address that does not name a single host (RFC 1812 4.3.2.7): 0.0.0.0, loopback,
/// multicast (224/4), class E (240/4, which includes 255.255.255.255).
fn not_a_host(a: u32) -> bool {
    a == 0 || a >> 24 == 127 || a >> 28 >= 0xe
}

/// Whether RFC 1812 4.3.2.7 forbids an ICMP error about `original_ip_packet` (starting at its
/// IP header): an ICMP error message, a non-first fragment, an IP broadcast or multicast
/// destination, or a source that is not a single host. A link-layer broadcast or multicast
/// is not visible here; the caller checks it. Something that is not an IPv4 header at all is
/// forbidden too: there is no one to send the error to.
pub fn error_forbidden(original_ip_packet: &[u8]) -> bool {
    let ip = original_ip_packet;
    if ip.len() < MIN_HEADER_LEN || ip[0] >> 4 != 4 {
        return true;
    }
    let hl = (ip[0] & 0x0f) as usize * 4;
    if hl < MIN_HEADER_LEN {
        return true;
    }
    if non_first_fragment(ip) {
        return true;
    }
    let dst = addr(&ip[16..20]);
    if dst == u32::MAX || dst >> 28 == 0xe {
        return true;
    }
    if not_a_host(addr(&ip[12..16])) {
        return true;
    }
    if ip[9] == PROTOCOL {
        // Unknown whether it is an error when the type byte is missing: stay silent.
        return ip.get(hl).is_none_or(|&t| is_error_type(t));
    }
    false
}

/// Write into `out` a whole IPv4 packet carrying the ICMP error `kind`/`code` about
/// `original_ip_packet`: from `router_addr` to the original's source, TTL 64, with
/// `rest_of_header` as the second word (the next-hop MTU for fragmentation needed) and as
/// much of the original as fits in 576 bytes (and in `out`). Returns the packet's length, or
/// `None` when the original has no readable IPv4 header or `out` cannot hold that header.
/// Whether the error may be sent at all is `error_forbidden`'s question.
pub fn build_error(
    out: &mut [u8],
    original_ip_packet: &[u8],
    kind: u8,
    code: u8,
    rest_of_header: u32,
    router_addr: u32,
) -> Option<usize> {
    let orig = original_ip_packet;
    if orig.len() < MIN_HEADER_LEN || orig[0] >> 4 != 4 {
        return None;
    }
    let orig_hl = (orig[0] & 0x0f) as usize * 4;
    if orig_hl < MIN_HEADER_LEN || orig_hl > orig.len() {
        return None;
    }
    // The datagram is what its total length says (not the Ethernet padding after it); a
    // total length that cannot be right is ignored and the bytes present are quoted.
    let orig_total = u16::from_be_bytes([orig[2], orig[3]]) as usize;
    let orig_len = if (orig_hl..=orig.len()).contains(&orig_total) {
        orig_total
    } else {
        orig.len()
    };
    let room = out.len().min(MAX_ERROR_LEN);
    let fixed = MIN_HEADER_LEN + HEADER_LEN;
    if room < fixed + orig_hl {
        return None;
    }
    let quote = orig_len.min(room - fixed);
    let total = fixed + quote;
    let out = &mut out[..total];

    let (ip, icmp) = out.split_at_mut(MIN_HEADER_LEN);
    ip.fill(0);
    ip[0] = 0x45; // version 4, no options
    ip[1] = ERROR_TOS;
    ip[8] = DEFAULT_TTL;
    ip[9] = PROTOCOL;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[12..16].copy_from_slice(&router_addr.to_be_bytes());
    ip[16..20].copy_from_slice(&orig[12..16]);
    let c = checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());

    icmp[0] = kind;
    icmp[1] = code;
    icmp[2..4].copy_from_slice(&[0, 0]);
    icmp[4..8].copy_from_slice(&rest_of_header.to_be_bytes());
    icmp[HEADER_LEN..].copy_from_slice(&orig[..quote]);
    let c = checksum(icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HOST: u32 = 0xc612_0001; // 198.18.0.1
    const ROUTER: u32 = 0xc613_00fe; // 198.19.0.254

    /// An IPv4 packet from `src` to `dst` of protocol `proto` with `payload`.
    fn ip_packet(src: u32, dst: u32, proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 17, proto, 0, 0];
        p.extend_from_slice(&src.to_be_bytes());
        p.extend_from_slice(&dst.to_be_bytes());
        let total = (20 + payload.len()) as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        let c = checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(payload);
        p
    }

    fn echo_request(id: u16, seq: u16, data: &[u8]) -> Vec<u8> {
        let mut m = vec![ECHO_REQUEST, 0, 0, 0];
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&seq.to_be_bytes());
        m.extend_from_slice(data);
        let c = checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        m
    }

    #[test]
    fn echo_request_becomes_reply() {
        let req = echo_request(0x4242, 7, b"abcdefghijklmnopq");
        let mut p = ip_packet(HOST, ROUTER, PROTOCOL, &req);
        echo_request_to_reply(&mut p, ROUTER).unwrap();
        let h = Ipv4Header::parse(&p).unwrap();
        assert_eq!((h.source(), h.destination(), h.ttl()), (ROUTER, HOST, 64));
        let icmp = &p[20..];
        assert_eq!(checksum(icmp), 0);
        assert_eq!(icmp[0], ECHO_REPLY);
        // Identifier, sequence number and data come back unchanged.
        assert_eq!(&icmp[4..], &req[4..]);
    }

    #[test]
    fn padding_after_the_packet_is_left_alone() {
        let mut p = ip_packet(HOST, ROUTER, PROTOCOL, &echo_request(1, 1, &[]));
        p.extend_from_slice(&[0xee; 18]);
        echo_request_to_reply(&mut p, ROUTER).unwrap();
        assert_eq!(checksum(&p[20..28]), 0);
        assert_eq!(&p[28..], &[0xee; 18]);
    }

    #[test]
    fn refused_requests_are_untouched() {
        let mut bad_sum = ip_packet(HOST, ROUTER, PROTOCOL, &echo_request(1, 2, b"xy"));
        bad_sum[29] ^= 1;
        let mut reply = ip_packet(HOST, ROUTER, PROTOCOL, &echo_request(1, 2, b"xy"));
        reply[20] = ECHO_REPLY;
        reply[22..24].copy_from_slice(&[0, 0]);
        let c = checksum(&reply[20..]);
        reply[22..24].copy_from_slice(&c.to_be_bytes());
        let udp = ip_packet(HOST, ROUTER, 17, &[0; 8]);
        let short = ip_packet(HOST, ROUTER, PROTOCOL, &[8, 0, 0]);
        let mut frag = ip_packet(HOST, ROUTER, PROTOCOL, &echo_request(1, 2, b"xy"));
        frag[6] = 0x20; // more fragments
        frag[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&frag[..20]);
        frag[10..12].copy_from_slice(&c.to_be_bytes());
        let mut bad_ip = ip_packet(HOST, ROUTER, PROTOCOL, &echo_request(1, 2, b"xy"));
        bad_ip[10] ^= 1;
        for (p, e) in [
            (bad_sum, Icmp4Error::Checksum),
            (reply, Icmp4Error::NotEchoRequest),
            (udp, Icmp4Error::NotIcmp),
            (short, Icmp4Error::Truncated),
            (frag, Icmp4Error::Fragment),
            (bad_ip, Icmp4Error::Ip(Ipv4Error::Checksum)),
        ] {
            let mut q = p.clone();
            assert_eq!(echo_request_to_reply(&mut q, ROUTER), Err(e));
            assert_eq!(q, p);
        }
    }

    #[test]
    fn forbidden_cases_of_rfc_1812() {
        let udp = |src, dst| ip_packet(src, dst, 17, &[0; 8]);
        assert!(!error_forbidden(&udp(HOST, ROUTER)));
        assert!(error_forbidden(&udp(HOST, 0xffff_ffff)));
        assert!(error_forbidden(&udp(HOST, 0xe000_0001)));
        assert!(error_forbidden(&udp(HOST, 0xefff_fffa)));
        for src in [0, 0x7f00_0001, 0xe000_0005, 0xf000_0001, 0xffff_ffff] {
            assert!(error_forbidden(&udp(src, ROUTER)), "{src:#x}");
        }
        let mut frag = udp(HOST, ROUTER);
        frag[7] = 1; // offset 8 bytes
        assert!(error_forbidden(&frag));
        let mut first = udp(HOST, ROUTER);
        first[6] |= 0x20; // first fragment: allowed
        assert!(!error_forbidden(&first));
        let icmp_err = ip_packet(
            HOST,
            ROUTER,
            PROTOCOL,
            &[TIME_EXCEEDED, 0, 0, 0, 0, 0, 0, 0],
        );
        assert!(error_forbidden(&icmp_err));
        let echo = ip_packet(HOST, ROUTER, PROTOCOL, &echo_request(1, 1, &[]));
        assert!(!error_forbidden(&echo));
        assert!(error_forbidden(&ip_packet(HOST, ROUTER, PROTOCOL, &[])));
        assert!(error_forbidden(&[0x45; 19]));
        assert!(error_forbidden(
            &udp(HOST, ROUTER)[..]
                .iter()
                .enumerate()
                .map(|(i, &b)| if i == 0 { 0x65 } else { b })
                .collect::<Vec<u8>>()
        ));
    }

    #[test]
    fn time_exceeded_quotes_the_whole_small_packet() {
        let orig = ip_packet(HOST, 0x0808_0808, 17, &[0x5a; 30]);
        let mut padded = orig.clone();
        padded.extend_from_slice(&[0; 10]);
        let mut out = [0u8; 1500];
        let n = build_error(&mut out, &padded, TIME_EXCEEDED, 0, 0, ROUTER).unwrap();
        assert_eq!(n, 20 + 8 + orig.len());
        let h = Ipv4Header::parse(&out[..n]).unwrap();
        assert_eq!((h.source(), h.destination()), (ROUTER, HOST));
        assert_eq!((h.ttl(), h.protocol(), h.total_len()), (64, PROTOCOL, n));
        assert_eq!(checksum(&out[20..n]), 0);
        assert_eq!(&out[20..22], &[TIME_EXCEEDED, 0]);
        assert_eq!(&out[28..n], &orig[..]);
    }

    #[test]
    fn fragmentation_needed_carries_the_mtu_and_stops_at_576() {
        let orig = ip_packet(HOST, 0x0808_0808, 6, &[0x77; 1480]);
        let mut out = [0u8; 2048];
        let n = build_error(&mut out, &orig, DEST_UNREACHABLE, 4, 1400, ROUTER).unwrap();
        assert_eq!(n, MAX_ERROR_LEN);
        assert_eq!(&out[24..28], &[0, 0, 0x05, 0x78]);
        assert_eq!(&out[28..n], &orig[..n - 28]);
        assert_eq!(checksum(&out[..20]), 0);
        assert_eq!(checksum(&out[20..n]), 0);
        // A small output buffer quotes less, but at least the original header.
        let mut small = [0u8; 48];
        assert_eq!(build_error(&mut small, &orig, 3, 4, 0, ROUTER), Some(48));
        assert_eq!(build_error(&mut small[..47], &orig, 3, 4, 0, ROUTER), None);
        assert_eq!(build_error(&mut out, &orig[..19], 3, 4, 0, ROUTER), None);
    }

    proptest! {
        /// Any bytes, any output size: no panic, and what is built verifies.
        #[test]
        fn build_error_never_panics_and_verifies(
            orig in proptest::collection::vec(any::<u8>(), 0..700),
            out_len in 0usize..700,
            kind in any::<u8>(), code in any::<u8>(), rest in any::<u32>(), src in any::<u32>(),
        ) {
            let mut out = vec![0u8; out_len];
            let _ = error_forbidden(&orig);
            if let Some(n) = build_error(&mut out, &orig, kind, code, rest, src) {
                prop_assert!(n <= MAX_ERROR_LEN && n <= out_len);
                let h = Ipv4Header::parse(&out[..n]).unwrap();
                prop_assert_eq!(h.total_len(), n);
                prop_assert_eq!(checksum(&out[20..n]), 0);
                prop_assert_eq!(&out[28..n], &orig[..n - 28]);
            }
        }

        /// Any bytes: a reply or an error, never a panic, and a reply verifies.
        #[test]
        fn echo_never_panics(mut p in proptest::collection::vec(any::<u8>(), 0..200)) {
            if echo_request_to_reply(&mut p, ROUTER).is_ok() {
                let h = Ipv4Header::parse(&p).unwrap();
                prop_assert_eq!(checksum(&p[h.header_len()..h.total_len()]), 0);
            }
        }

        /// Well-formed requests of any content are answered with valid checksums.
        #[test]
        fn any_echo_request_is_answered(
            id in any::<u16>(), seq in any::<u16>(),
            data in proptest::collection::vec(any::<u8>(), 0..300),
            src in any::<u32>(), dst in any::<u32>(), reply_src in any::<u32>(),
        ) {
            let mut p = ip_packet(src, dst, PROTOCOL, &echo_request(id, seq, &data));
            echo_request_to_reply(&mut p, reply_src).unwrap();
            let h = Ipv4Header::parse(&p).unwrap();
            prop_assert_eq!((h.source(), h.destination()), (reply_src, src));
            prop_assert_eq!(checksum(&p[20..]), 0);
            prop_assert_eq!(&p[28..], &data[..]);
        }
    }
}
