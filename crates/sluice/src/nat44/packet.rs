//! Reading a translatable IPv4 packet's tuple and writing a new one over it in place, the
//! checksums updated incrementally (RFC 1624) so that a translation costs the same whatever
//! the packet's length. Safe code: every offset is checked against the bytes given, and a
//! packet that does not hold what its headers claim is an `Unfit` with a reason.
//!
//! The "ports" of an ICMP echo are its identifier, in both fields (RFC 5508's query id), so
//! that a request and its reply have reversed tuples like TCP and UDP.

use crate::wire::ipv4::{checksum, update_checksum};
use crate::wire::tcp;

pub const ICMP: u8 = 1;
pub const TCP: u8 = 6;
pub const UDP: u8 = 17;

const ECHO_REPLY: u8 = 0;
const ECHO_REQUEST: u8 = 8;
/// The ICMP errors that quote a packet and are translated with it (RFC 5508 section 7).
const ERRORS: [u8; 3] = [3, 11, 12];

/// A flow as one packet shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Tuple {
    pub proto: u8,
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
}

impl Tuple {
    /// The tuple of the packets going the other way.
    pub fn reversed(self) -> Tuple {
        Tuple {
            proto: self.proto,
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
        }
    }
}

impl std::fmt::Display for Tuple {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = |x: u32| std::net::Ipv4Addr::from(x);
        write!(
            f,
            "{} {}:{} -> {}:{}",
            proto_name(self.proto),
            a(self.src),
            self.sport,
            a(self.dst),
            self.dport
        )
    }
}

pub fn proto_name(p: u8) -> &'static str {
    match p {
        TCP => "tcp",
        UDP => "udp",
        ICMP => "icmp",
        _ => "other",
    }
}

/// Why a packet cannot be translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unfit {
    /// The IPv4 header is short or its lengths lie.
    BadHeader,
    /// The transport header is cut short.
    Truncated,
    /// A fragment after the first: it has no ports.
    Fragment,
    /// Not TCP, UDP, ICMP echo or an ICMP error quoting one.
    Protocol,
    /// An ICMP error whose quoted packet cannot be read, or that does not fit the segment.
    BadError,
}

/// What a packet is to the NAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// TCP, UDP or an ICMP echo: its tuple, where its transport header starts, and the TCP
    /// flags (0 for the others).
    Flow { tuple: Tuple, l4: usize, flags: u8 },
    /// An ICMP error (at `l4`) quoting a packet whose tuple, as it was sent, is `inner`
    /// (its header at `at`).
    Error { inner: Tuple, l4: usize, at: usize },
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The header length of the IPv4 header at the start of `ip`, checked.
fn header_len(ip: &[u8]) -> Result<usize, Unfit> {
    let first = *ip.first().ok_or(Unfit::BadHeader)?;
    let ihl = (first & 0x0f) as usize * 4;
    if first >> 4 != 4 || ihl < 20 || ip.len() < ihl {
        return Err(Unfit::BadHeader);
    }
    Ok(ihl)
}

/// The tuple of a TCP/UDP/echo header at `l4` of `ip` (protocol `proto`).
fn ports(ip: &[u8], l4: usize, proto: u8) -> Result<(u16, u16, u8), Unfit> {
    match proto {
        TCP | UDP => {
            let sport = be16(ip, l4).ok_or(Unfit::Truncated)?;
            let dport = be16(ip, l4 + 2).ok_or(Unfit::Truncated)?;
            let flags = if proto == TCP {
                *ip.get(l4 + tcp::FLAGS_OFFSET).ok_or(Unfit::Truncated)?
            } else {
                0
            };
            Ok((sport, dport, flags))
        }
        ICMP => {
            let kind = *ip.get(l4).ok_or(Unfit::Truncated)?;
            if kind != ECHO_REQUEST && kind != ECHO_REPLY {
                return Err(Unfit::Protocol);
            }
            let id = be16(ip, l4 + 4).ok_or(Unfit::Truncated)?;
            Ok((id, id, 0))
        }
        _ => Err(Unfit::Protocol),
    }
}

/// What the IPv4 packet at the start of `ip` (the segment's bytes from the IP header on) is.
pub fn classify(ip: &[u8]) -> Result<Kind, Unfit> {
    let ihl = header_len(ip)?;
    let frag = be16(ip, 6).ok_or(Unfit::BadHeader)?;
    if frag & 0x1fff != 0 {
        return Err(Unfit::Fragment);
    }
    let proto = ip[9];
    let src = be32(ip, 12).ok_or(Unfit::BadHeader)?;
    let dst = be32(ip, 16).ok_or(Unfit::BadHeader)?;
    if proto == ICMP && ip.get(ihl).is_some_and(|t| ERRORS.contains(t)) {
        return quoted(ip, ihl);
    }
    let (sport, dport, flags) = ports(ip, ihl, proto)?;
    let tuple = Tuple {
        proto,
        src,
        dst,
        sport,
        dport,
    };
    Ok(Kind::Flow {
        tuple,
        l4: ihl,
        flags,
    })
}

/// The packet an ICMP error at `l4` quotes: its header and first 8 bytes at least, and the
/// whole error inside `ip` (its checksum is computed again over all of it).
fn quoted(ip: &[u8], l4: usize) -> Result<Kind, Unfit> {
    let total = be16(ip, 2).ok_or(Unfit::BadHeader)? as usize;
    if total > ip.len() || total < l4 + 8 {
        return Err(Unfit::BadError);
    }
    let at = l4 + 8;
    let inner = &ip[at..total];
    let ihl = header_len(inner).map_err(|_| Unfit::BadError)?;
    let proto = inner[9];
    let (sport, dport, _) = match proto {
        // The quote's ICMP is a query (an error about an error is never sent).
        ICMP | TCP | UDP => ports(inner, ihl, proto).map_err(|_| Unfit::BadError)?,
        _ => return Err(Unfit::Protocol),
    };
    let inner_tuple = Tuple {
        proto,
        src: be32(inner, 12).ok_or(Unfit::BadError)?,
        dst: be32(inner, 16).ok_or(Unfit::BadError)?,
        sport,
        dport,
    };
    Ok(Kind::Error {
        inner: inner_tuple,
        l4,
        at,
    })
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// A checksum field at `at` after the 32-bit value `old` became `new`.
fn fix32(b: &mut [u8], at: usize, old: u32, new: u32) {
    let Some(c) = be16(b, at) else { return };
    let c = update_checksum(c, (old >> 16) as u16, (new >> 16) as u16);
    let c = update_checksum(c, old as u16, new as u16);
    put16(b, at, c);
}

/// A checksum field at `at` after the 16-bit value `old` became `new`.
fn fix16(b: &mut [u8], at: usize, old: u16, new: u16) {
    if let Some(c) = be16(b, at) {
        put16(b, at, update_checksum(c, old, new));
    }
}

/// Where the transport checksum of `proto` lies in its header, when it is in `len` bytes;
/// a UDP checksum of 0 (none sent) stays 0.
fn l4_checksum_at(b: &[u8], l4: usize, proto: u8) -> Option<usize> {
    let at = l4
        + match proto {
            TCP => 16,
            UDP => 6,
            _ => 2,
        };
    let c = be16(b, at)?;
    (proto != UDP || c != 0).then_some(at)
}

/// Write `to` over the packet whose tuple is `from` (transport header at `l4`): addresses,
/// ports (or the echo identifier), the IP header checksum and the transport checksum (whose
/// pseudo-header holds the addresses, except ICMP's).
pub fn rewrite(ip: &mut [u8], l4: usize, from: &Tuple, to: &Tuple) {
    let sum = l4_checksum_at(ip, l4, from.proto);
    if from.src != to.src {
        ip[12..16].copy_from_slice(&to.src.to_be_bytes());
        fix32(ip, 10, from.src, to.src);
        if let (Some(at), true) = (sum, from.proto != ICMP) {
            fix32(ip, at, from.src, to.src);
        }
    }
    if from.dst != to.dst {
        ip[16..20].copy_from_slice(&to.dst.to_be_bytes());
        fix32(ip, 10, from.dst, to.dst);
        if let (Some(at), true) = (sum, from.proto != ICMP) {
            fix32(ip, at, from.dst, to.dst);
        }
    }
    if from.proto == ICMP {
        // The identifier is one field: both "ports" carry it.
        if from.sport != to.sport {
            put16(ip, l4 + 4, to.sport);
            if let Some(at) = sum {
                fix16(ip, at, from.sport, to.sport);
            }
        }
        return;
    }
    for (off, old, new) in [(0, from.sport, to.sport), (2, from.dport, to.dport)] {
        if old != new {
            put16(ip, l4 + off, new);
            if let Some(at) = sum {
                fix16(ip, at, old, new);
            }
        }
    }
}

/// Translate an ICMP error (at `l4`, quoting from `at` a packet whose tuple was `inner`):
/// the quote becomes `new_inner` (its header checksum computed again, its transport
/// checksum updated when quoted), the outer destination `outer_dst`, the outer source
/// `outer_src`, and the ICMP checksum is computed again over the whole message.
pub fn rewrite_error(
    ip: &mut [u8],
    (l4, at): (usize, usize),
    (inner, new_inner): (&Tuple, &Tuple),
    (outer_src, outer_dst): (u32, u32),
) {
    let total = be16(ip, 2).map_or(ip.len(), |t| (t as usize).min(ip.len()));
    {
        let quote = &mut ip[at..total];
        let ihl = header_len(quote).unwrap_or(20).min(quote.len());
        rewrite(quote, ihl, inner, new_inner);
        // The quoted header's checksum, computed whole (the incremental update of `rewrite`
        // assumed it was right; a router's quote may not be).
        if quote.len() >= ihl && ihl >= 20 {
            put16(quote, 10, 0);
            let c = checksum(&quote[..ihl]);
            put16(quote, 10, c);
        }
    }
    let (old_src, old_dst) = (be32(ip, 12).unwrap_or(0), be32(ip, 16).unwrap_or(0));
    if old_src != outer_src {
        ip[12..16].copy_from_slice(&outer_src.to_be_bytes());
        fix32(ip, 10, old_src, outer_src);
    }
    if old_dst != outer_dst {
        ip[16..20].copy_from_slice(&outer_dst.to_be_bytes());
        fix32(ip, 10, old_dst, outer_dst);
    }
    if total >= l4 + 4 {
        put16(ip, l4 + 2, 0);
        let c = checksum(&ip[l4..total]);
        put16(ip, l4 + 2, c);
    }
}

#[cfg(test)]
#[path = "packet_tests.rs"]
mod tests;
