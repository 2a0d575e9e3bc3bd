//! IP prefixes for both families, generic over the address as an unsigned integer (`u32` for
//! IPv4, `u128` for IPv6, both in host order so that bit 0 of the prefix is the integer's most
//! significant bit).

use std::fmt;
use std::hash::Hash;
use std::net::{Ipv4Addr, Ipv6Addr};

/// An address family's address as an integer.
pub trait Addr: Copy + Ord + Eq + Hash + fmt::Debug + Send + Sync + 'static {
    /// Address width in bits (32 or 128).
    const BITS: u8;
    /// The address left-aligned in a `u128`, so that one trie builder serves both families.
    fn to_left_u128(self) -> u128;
    fn from_left_u128(v: u128) -> Self;
    /// Formats the address the usual way (dotted quad, RFC 5952 for IPv6).
    fn fmt_addr(self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// The address as the route table stores it, in the same order: a `u128` is 16-byte
    /// aligned, which would make a route table entry 32 bytes instead of 24.
    type Packed: Copy + Ord + fmt::Debug + Send + Sync + 'static;
    fn pack(self) -> Self::Packed;
    fn unpack(p: Self::Packed) -> Self;
}

impl Addr for u32 {
    const BITS: u8 = 32;
    fn to_left_u128(self) -> u128 {
        (self as u128) << 96
    }
    fn from_left_u128(v: u128) -> u32 {
        (v >> 96) as u32
    }
    fn fmt_addr(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Ipv4Addr::from(self), f)
    }
    type Packed = u32;
    fn pack(self) -> u32 {
        self
    }
    fn unpack(p: u32) -> u32 {
        p
    }
}

impl Addr for u128 {
    const BITS: u8 = 128;
    fn to_left_u128(self) -> u128 {
        self
    }
    fn from_left_u128(v: u128) -> u128 {
        v
    }
    fn fmt_addr(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Ipv6Addr::from(self), f)
    }
    type Packed = Packed6;
    fn pack(self) -> Packed6 {
        Packed6 {
            hi: (self >> 64) as u64,
            lo: self as u64,
        }
    }
    fn unpack(p: Packed6) -> u128 {
        (p.hi as u128) << 64 | p.lo as u128
    }
}

/// An IPv6 address in two 8-byte-aligned halves, the high one first so that the derived
/// order is the numbers' (two integer comparisons, where an array of words compares as a
/// slice).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Packed6 {
    hi: u64,
    lo: u64,
}

/// The mask that keeps the first `len` bits of a left-aligned address (`len` ≤ 128).
pub(crate) fn left_mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len.min(128) as u32)
    }
}

/// A network: an address whose bits past `len` are zero, and the prefix length.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Prefix<A: Addr> {
    addr: A,
    len: u8,
}

pub type Prefix4 = Prefix<u32>;
pub type Prefix6 = Prefix<u128>;

impl<A: Addr> Prefix<A> {
    /// The prefix `addr/len`; `None` if `len` is too long or `addr` has bits set past `len`.
    pub fn new(addr: A, len: u8) -> Option<Prefix<A>> {
        if len > A::BITS || addr.to_left_u128() & !left_mask(len) != 0 {
            return None;
        }
        Some(Prefix { addr, len })
    }

    /// The prefix of length `len` that contains `addr` (host bits cleared); `len` is clamped to
    /// the address width.
    pub fn containing(addr: A, len: u8) -> Prefix<A> {
        let len = len.min(A::BITS);
        Prefix {
            addr: A::from_left_u128(addr.to_left_u128() & left_mask(len)),
            len,
        }
    }

    pub fn addr(&self) -> A {
        self.addr
    }

    pub fn len(&self) -> u8 {
        self.len
    }

    /// True for the default route (`/0`), the only prefix whose length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last address inside the prefix.
    pub fn last(&self) -> A {
        A::from_left_u128(self.addr.to_left_u128() | !left_mask(self.len) & left_mask(A::BITS))
    }

    pub fn contains(&self, addr: A) -> bool {
        addr.to_left_u128() & left_mask(self.len) == self.addr.to_left_u128()
    }
}

impl<A: Addr> fmt::Display for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.addr.fmt_addr(f)?;
        write!(f, "/{}", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fib_prefix_rejects_host_bits_and_long_lengths() {
        assert!(Prefix4::new(0x0a00_0000, 8).is_some());
        assert!(Prefix4::new(0x0a00_0001, 8).is_none());
        assert!(Prefix4::new(0, 33).is_none());
        assert!(Prefix6::new(1, 128).is_some());
        assert!(Prefix6::new(1, 127).is_none());
        assert!(Prefix6::new(0, 129).is_none());
    }

    #[test]
    fn fib_prefix_last_contains_display() {
        let p = Prefix4::containing(0x0a01_02ff, 23);
        assert_eq!(p.to_string(), "10.1.2.0/23");
        assert_eq!(p.last(), 0x0a01_03ff);
        assert!(p.contains(0x0a01_0300));
        assert!(!p.contains(0x0a01_0400));
        let d = Prefix4::containing(0x0102_0304, 0);
        assert_eq!(d.last(), u32::MAX);
        assert!(d.contains(0xffff_ffff));
        let p6 = Prefix6::containing(0x2001_0db8_0000_0000_0000_0000_0000_0001, 32);
        assert_eq!(p6.to_string(), "2001:db8::/32");
        assert_eq!(p6.last(), 0x2001_0db8_ffff_ffff_ffff_ffff_ffff_ffff);
        assert_eq!(Prefix6::containing(7, 128).last(), 7);
    }
}
