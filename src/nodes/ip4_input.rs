//! ip4-input: the checks a router makes on every IPv4 packet before it looks at the
//! destination (RFC 1812 section 5.2.2): version, header length, total length against the
//! frame, header checksum, a TTL that has not run out. Each failure is its own counter;
//! packets with options are counted and go on (they are not dropped).

use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::wire::ethernet::Repr as EthernetRepr;
use crate::wire::ipv4::{Ipv4Error, Ipv4Header};

pub const IP4_INPUT: &str = "ip4-input";
pub const IP4_LOOKUP: &str = "ip4-lookup";

#[repr(usize)]
pub enum Next {
    Lookup,
    Drop,
}

#[repr(usize)]
#[derive(Clone, Copy)]
pub enum Error {
    NotIpv4,
    Truncated,
    Version,
    HeaderLength,
    TotalLength,
    Checksum,
    TtlZero,
    Options,
}

pub const ERRORS: [&str; 8] = [
    "not an IPv4 frame",
    "ip4 header truncated",
    "ip4 version is not 4",
    "ip4 header length (IHL) invalid",
    "ip4 total length invalid",
    "ip4 header checksum bad",
    "ip4 ttl is 0",
    "ip4 options present (forwarded)",
];

fn error_of(e: Ipv4Error) -> Error {
    match e {
        Ipv4Error::Truncated => Error::Truncated,
        Ipv4Error::Version => Error::Version,
        Ipv4Error::HeaderLength => Error::HeaderLength,
        Ipv4Error::TotalLength => Error::TotalLength,
        Ipv4Error::Checksum => Error::Checksum,
    }
}

pub struct Ip4Input;

impl Ip4Input {
    pub fn decl() -> NodeDecl {
        NodeDecl {
            name: IP4_INPUT.to_string(),
            kind: NodeKind::Internal,
            next: vec![IP4_LOOKUP.to_string(), super::ERROR_DROP.to_string()],
            errors: ERRORS.to_vec(),
            node: Box::new(Ip4Input),
        }
    }

    /// The verdict for one packet: where it goes, and which counter (if any) it bumps.
    fn check(data: &[u8], packet_len: usize) -> (Next, Option<Error>) {
        let Ok(eth) = EthernetRepr::parse(data) else {
            return (Next::Drop, Some(Error::NotIpv4));
        };
        if eth.ethertype != crate::wire::EtherType::IPV4 {
            return (Next::Drop, Some(Error::NotIpv4));
        }
        let l3 = eth.l3_offset as usize;
        let Some(bytes) = data.get(l3..) else {
            return (Next::Drop, Some(Error::Truncated));
        };
        match Ipv4Header::parse_in(bytes, packet_len.saturating_sub(l3)) {
            Err(e) => (Next::Drop, Some(error_of(e))),
            Ok(h) if h.ttl() == 0 => (Next::Drop, Some(Error::TtlZero)),
            Ok(h) if h.has_options() => (Next::Lookup, Some(Error::Options)),
            Ok(_) => (Next::Lookup, None),
        }
    }
}

impl Node for Ip4Input {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let tracing = cx.tracing();
        for &bi in frame {
            let (next, counted) = Self::check(cx.bufs.data(bi), cx.bufs.packet_len(bi));
            if let Some(e) = counted {
                cx.count_error(e as usize, 1);
            }
            if tracing {
                match counted {
                    Some(e) => cx.trace(bi, ERRORS[e as usize]),
                    None => cx.trace(bi, "ip4 ok"),
                }
            }
            cx.enqueue(next as usize, bi);
        }
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::Harness;
    use crate::wire::ipv4::checksum;

    /// Ethernet + IPv4 (+ `options` bytes of options) + UDP-ish payload, `len` bytes in all.
    fn packet(len: usize, ttl: u8, options: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        let ihl = (20 + options) / 4;
        let ip = &mut f[14..14 + 20 + options];
        ip[0] = 0x40 | ihl as u8;
        ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        ip[8] = ttl;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
        ip[16..20].copy_from_slice(&[198, 19, 0, 1]);
        let c = checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f
    }

    fn run(frames: &[Vec<u8>]) -> (usize, usize, Vec<u64>) {
        let h = Harness::new(1);
        let out = h.run_node(Ip4Input::decl(), frames, 0);
        (
            out.to_next(Next::Lookup as usize),
            out.to_next(Next::Drop as usize),
            out.errors,
        )
    }

    #[test]
    fn good_packets_go_to_lookup_jumbo_included() {
        let (ok, drop, errors) = run(&[packet(60, 64, 0), packet(1514, 1, 0), packet(9014, 2, 0)]);
        assert_eq!((ok, drop), (3, 0));
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
        let frames = vec![bad_sum, v6, ihl, long, arp, cut, packet(60, 0, 0)];
        let (ok, drop, e) = run(&frames);
        assert_eq!((ok, drop), (0, 7));
        assert_eq!(e[Error::Checksum as usize], 1);
        assert_eq!(e[Error::Version as usize], 1);
        // IHL 3 fails the length check; so does a checksum over a wrong IHL, counted there.
        assert_eq!(e[Error::HeaderLength as usize], 1);
        assert_eq!(e[Error::TotalLength as usize], 1);
        assert_eq!(e[Error::NotIpv4 as usize], 1);
        assert_eq!(e[Error::Truncated as usize], 1);
        assert_eq!(e[Error::TtlZero as usize], 1);
    }

    #[test]
    fn options_are_counted_and_forwarded() {
        let (ok, drop, e) = run(&[packet(80, 64, 8)]);
        assert_eq!((ok, drop), (1, 0));
        assert_eq!(e[Error::Options as usize], 1);
    }
}
