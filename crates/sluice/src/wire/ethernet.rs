//! Ethernet II frames, with 802.1Q / 802.1ad VLAN tags (IEEE 802.3 clause 3, IEEE 802.1Q).
//!
//! ```text
//!  0                   6                  12      14
//! +-------------------+-------------------+-------+---------
//! | destination MAC   | source MAC        | type  | payload
//! +-------------------+-------------------+-------+---------
//! ```
//! A VLAN tag puts 0x8100 (or 0x88a8 for a service tag) in the type field, followed by a
//! 2-byte tag control (PCP, DEI, 12-bit VLAN id) and the real type.

use super::{MacAddress, WireError};
use std::fmt;

/// Field byte ranges.
mod field {
    use std::ops::Range;
    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const HEADER_LEN: usize = 14;
    pub const VLAN_TAG_LEN: usize = 4;
}

pub use field::HEADER_LEN;

/// Smallest frame on the wire without the FCS; anything shorter is a runt.
pub const MIN_FRAME_LEN: usize = 60;
/// Most VLAN tags we look through (a QinQ pair).
pub const MAX_VLAN_TAGS: usize = 2;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EtherType(pub u16);

impl EtherType {
    pub const IPV4: EtherType = EtherType(0x0800);
    pub const ARP: EtherType = EtherType(0x0806);
    pub const VLAN: EtherType = EtherType(0x8100);
    pub const QINQ: EtherType = EtherType(0x88a8);
    pub const IPV6: EtherType = EtherType(0x86dd);

    pub fn is_vlan(self) -> bool {
        self == Self::VLAN || self == Self::QINQ
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::IPV4 => write!(f, "IP4"),
            Self::IPV6 => write!(f, "IP6"),
            Self::ARP => write!(f, "ARP"),
            Self::VLAN => write!(f, "VLAN"),
            Self::QINQ => write!(f, "QINQ"),
            EtherType(t) => write!(f, "0x{t:04x}"),
        }
    }
}

/// A read-only view of an Ethernet frame.
#[derive(Clone, Copy)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wrap `buffer` after checking that it holds a whole Ethernet header.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, WireError> {
        if buffer.as_ref().len() < field::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Frame { buffer })
    }

    pub fn destination(&self) -> MacAddress {
        MacAddress::from_slice(&self.buffer.as_ref()[field::DESTINATION]).unwrap_or_default()
    }

    pub fn source(&self) -> MacAddress {
        MacAddress::from_slice(&self.buffer.as_ref()[field::SOURCE]).unwrap_or_default()
    }

    /// The outer type field (a VLAN type when the frame is tagged).
    pub fn ethertype(&self) -> EtherType {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType(u16::from_be_bytes([b[0], b[1]]))
    }
}

/// What ethernet-input needs from a frame: addresses, the VLAN ids, the inner type and where
/// the layer-3 header starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub destination: MacAddress,
    pub source: MacAddress,
    /// VLAN ids, outermost first; 0 where absent.
    pub vlans: [u16; MAX_VLAN_TAGS],
    pub vlan_count: u8,
    pub ethertype: EtherType,
    pub l3_offset: u16,
}

/// Why a frame's headers could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than the 14-byte Ethernet header.
    TruncatedHeader,
    /// A VLAN tag is cut short.
    TruncatedVlan,
    /// More VLAN tags than we look through.
    TooManyVlans,
}

impl Repr {
    /// Parse the Ethernet header and any VLAN tags. Never panics, whatever the bytes.
    pub fn parse(bytes: &[u8]) -> Result<Repr, ParseError> {
        let frame = Frame::new_checked(bytes).map_err(|_| ParseError::TruncatedHeader)?;
        let mut ethertype = frame.ethertype();
        let mut offset = field::HEADER_LEN;
        let mut vlans = [0u16; MAX_VLAN_TAGS];
        let mut vlan_count = 0usize;
        while ethertype.is_vlan() {
            if vlan_count == MAX_VLAN_TAGS {
                return Err(ParseError::TooManyVlans);
            }
            let tag = bytes
                .get(offset..offset + field::VLAN_TAG_LEN)
                .ok_or(ParseError::TruncatedVlan)?;
            vlans[vlan_count] = u16::from_be_bytes([tag[0], tag[1]]) & 0x0fff;
            ethertype = EtherType(u16::from_be_bytes([tag[2], tag[3]]));
            vlan_count += 1;
            offset += field::VLAN_TAG_LEN;
        }
        Ok(Repr {
            destination: frame.destination(),
            source: frame.source(),
            vlans,
            vlan_count: vlan_count as u8,
            ethertype,
            l3_offset: offset as u16,
        })
    }

    /// Write a plain (untagged) header into the first 14 bytes of `out`.
    pub fn emit_untagged(&self, out: &mut [u8]) -> Result<(), WireError> {
        let h = out
            .get_mut(..field::HEADER_LEN)
            .ok_or(WireError::Truncated)?;
        h[field::DESTINATION].copy_from_slice(&self.destination.0);
        h[field::SOURCE].copy_from_slice(&self.source.0);
        h[field::ETHERTYPE].copy_from_slice(&self.ethertype.0.to_be_bytes());
        Ok(())
    }
}

impl fmt::Display for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} -> {}",
            self.ethertype, self.source, self.destination
        )?;
        for v in &self.vlans[..self.vlan_count as usize] {
            write!(f, " vlan {v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An untagged IPv4 frame header from 02:00:00:00:00:01 to ff:ff:ff:ff:ff:ff.
    const PLAIN: [u8; 14] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
    ];
    /// The same frame with an 802.1Q tag, VLAN 100, priority 5.
    const TAGGED: [u8; 18] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x81, 0x00, 0xa0,
        0x64, 0x08, 0x00,
    ];

    #[test]
    fn parse_plain() {
        let r = Repr::parse(&PLAIN).unwrap();
        assert_eq!(r.destination, MacAddress::BROADCAST);
        assert_eq!(r.source.to_string(), "02:00:00:00:00:01");
        assert_eq!(r.ethertype, EtherType::IPV4);
        assert_eq!(r.vlan_count, 0);
        assert_eq!(r.l3_offset, 14);
    }

    #[test]
    fn parse_tagged() {
        let r = Repr::parse(&TAGGED).unwrap();
        assert_eq!(r.vlan_count, 1);
        assert_eq!(r.vlans[0], 100);
        assert_eq!(r.ethertype, EtherType::IPV4);
        assert_eq!(r.l3_offset, 18);
    }

    #[test]
    fn short_frames_are_errors() {
        assert_eq!(Repr::parse(&PLAIN[..13]), Err(ParseError::TruncatedHeader));
        assert_eq!(Repr::parse(&[]), Err(ParseError::TruncatedHeader));
        assert_eq!(Repr::parse(&TAGGED[..16]), Err(ParseError::TruncatedVlan));
    }

    #[test]
    fn three_tags_are_too_many() {
        let mut f = TAGGED[..12].to_vec();
        for vlan in 1..=3u8 {
            f.extend_from_slice(&[0x81, 0x00, 0x00, vlan]);
        }
        f.extend_from_slice(&[0x08, 0x00, 0, 0, 0, 0]);
        assert_eq!(Repr::parse(&f), Err(ParseError::TooManyVlans));
    }

    #[test]
    fn emit_then_parse() {
        let r = Repr::parse(&PLAIN).unwrap();
        let mut out = [0u8; 14];
        r.emit_untagged(&mut out).unwrap();
        assert_eq!(out, PLAIN);
        assert!(r.emit_untagged(&mut [0u8; 10]).is_err());
    }

    proptest::proptest! {
        /// Parsing arbitrary bytes never panics, and an accepted frame's layer-3 offset lies
        /// inside the frame.
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            if let Ok(r) = Repr::parse(&bytes) {
                proptest::prop_assert!(r.l3_offset as usize <= bytes.len());
            }
        }
    }
}
