//! The network layer of generator frames: IPv4 or IPv6 headers, and the addresses of flow `k`
//! (the 5-tuple a later answering side reverses).
//!
//! Addresses follow one rule in both families: the network's low 16 bits carry the flow.
//! IPv4 takes /16s (`198.18.x.y`), IPv6 any prefix up to a /112 (`2001:db8:198:18::x:y`
//! with the default /64s from the documentation range).

use sluice::wire::ipv4::checksum;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The address family of the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Ipv4,
    Ipv6,
}

impl Family {
    /// The `--family` word.
    pub fn name(self) -> &'static str {
        match self {
            Family::Ipv4 => "ipv4",
            Family::Ipv6 => "ipv6",
        }
    }

    pub fn ethertype(self) -> u16 {
        match self {
            Family::Ipv4 => 0x0800,
            Family::Ipv6 => 0x86dd,
        }
    }

    /// Bytes of its header (IPv4 without options).
    pub fn header_len(self) -> usize {
        match self {
            Family::Ipv4 => 20,
            Family::Ipv6 => 40,
        }
    }

    /// Offset of the TTL or hop limit in its header: what a router decrements.
    pub fn ttl_at(self) -> usize {
        match self {
            Family::Ipv4 => 8,
            Family::Ipv6 => 7,
        }
    }
}

/// Addresses and ports of one flow, as the sender sends them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuple {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
}

impl Tuple {
    /// The same flow seen from the other end: what an answer is sent with.
    pub fn reversed(self) -> Tuple {
        Tuple {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
        }
    }

    /// The sum of the L4 pseudo-header's words but the length (RFC 768, 793, 8200 8.1).
    pub fn pseudo_sum(&self, proto: u8) -> u64 {
        let words = |a: &IpAddr| match a {
            IpAddr::V4(a) => super::checksum::sum(&a.octets()),
            IpAddr::V6(a) => super::checksum::sum(&a.octets()),
        };
        words(&self.src) + words(&self.dst) + proto as u64
    }
}

/// `net` with its low 16 bits replaced by `low`.
#[inline]
pub fn v4_in(net: [u8; 2], low: u16) -> IpAddr {
    let l = low.to_be_bytes();
    IpAddr::V4(Ipv4Addr::new(net[0], net[1], l[0], l[1]))
}

/// `net` with its low 16 bits replaced by `low`.
#[inline]
pub fn v6_in(net: [u8; 16], low: u16) -> IpAddr {
    let mut a = net;
    a[14..16].copy_from_slice(&low.to_be_bytes());
    IpAddr::V6(Ipv6Addr::from(a))
}

/// Write an IPv4 header (no options, DF, TTL 64, identification `id`) for `total` bytes of
/// IPv4 packet carrying `proto`, with its checksum.
#[inline]
pub fn write_v4(h: &mut [u8], total: usize, id: u16, proto: u8, t: &Tuple) {
    h[0] = 0x45;
    h[1] = 0;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    h[8] = 64;
    h[9] = proto;
    h[10..12].copy_from_slice(&[0, 0]);
    if let (IpAddr::V4(s), IpAddr::V4(d)) = (t.src, t.dst) {
        h[12..16].copy_from_slice(&s.octets());
        h[16..20].copy_from_slice(&d.octets());
    }
    let sum = checksum(&h[..20]);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
}

/// Write an IPv6 header (traffic class and flow label 0, hop limit 64) for `payload` bytes
/// of `next` header.
#[inline]
pub fn write_v6(h: &mut [u8], payload: usize, next: u8, t: &Tuple) {
    h[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
    h[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
    h[6] = next;
    h[7] = 64;
    if let (IpAddr::V6(s), IpAddr::V6(d)) = (t.src, t.dst) {
        h[8..24].copy_from_slice(&s.octets());
        h[24..40].copy_from_slice(&d.octets());
    }
}

/// `--src-net6`, `--dst-net6`: an IPv6 prefix of at most /112 (the low 16 bits carry the
/// flow) with its host bits clear, as `2001:db8:198:18::/64`.
pub fn net6(v: &str) -> Result<[u8; 16], String> {
    let bad = || format!("'{v}' is not an IPv6 prefix of /112 or shorter such as 2001:db8::/64");
    let (addr, len) = v.split_once('/').ok_or_else(bad)?;
    let a: Ipv6Addr = addr.parse().map_err(|_| bad())?;
    let len: u32 = len.parse().map_err(|_| bad())?;
    if len > 112 {
        return Err(bad());
    }
    let bits = u128::from(a);
    if bits << len != 0 {
        return Err(format!("{v}: the bits after /{len} must be 0"));
    }
    Ok(a.octets())
}
