//! ARP for IPv4 over Ethernet (RFC 826): the 28-byte packet after the Ethernet header.
//!
//! ```text
//!  0       2       4   5   6       8            14       18           24       28
//! +-------+-------+---+---+-------+------------+--------+------------+--------+
//! | htype | ptype |hln|pln|  op   | sender MAC | snd IP | target MAC | tgt IP |
//! +-------+-------+---+---+-------+------------+--------+------------+--------+
//! ```

use super::{MacAddress, WireError};

pub const ARP_LEN: usize = 28;
pub const OP_REQUEST: u16 = 1;
pub const OP_REPLY: u16 = 2;
const HTYPE_ETHERNET: u16 = 1;
const PTYPE_IPV4: u16 = 0x0800;

/// Why bytes are not an Ethernet/IPv4 ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpError {
    Truncated,
    NotEthernet,
    NotIpv4,
    BadLengths,
    BadOperation,
}

impl ArpError {
    pub fn reason(self) -> &'static str {
        match self {
            ArpError::Truncated => "arp packet truncated",
            ArpError::NotEthernet => "arp hardware type is not Ethernet",
            ArpError::NotIpv4 => "arp protocol type is not IPv4",
            ArpError::BadLengths => "arp address lengths are not 6 and 4",
            ArpError::BadOperation => "arp operation is not request or reply",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpPacket {
    pub op: u16,
    pub sender_mac: MacAddress,
    pub sender_ip: u32,
    pub target_mac: MacAddress,
    pub target_ip: u32,
}

fn mac_at(b: &[u8], at: usize) -> MacAddress {
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[at..at + 6]);
    MacAddress(m)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl ArpPacket {
    /// Read an ARP packet (the bytes after the Ethernet header). Never panics.
    pub fn parse(bytes: &[u8]) -> Result<ArpPacket, ArpError> {
        let b = bytes.get(..ARP_LEN).ok_or(ArpError::Truncated)?;
        if u16::from_be_bytes([b[0], b[1]]) != HTYPE_ETHERNET {
            return Err(ArpError::NotEthernet);
        }
        if u16::from_be_bytes([b[2], b[3]]) != PTYPE_IPV4 {
            return Err(ArpError::NotIpv4);
        }
        if b[4] != 6 || b[5] != 4 {
            return Err(ArpError::BadLengths);
        }
        let op = u16::from_be_bytes([b[6], b[7]]);
        if op != OP_REQUEST && op != OP_REPLY {
            return Err(ArpError::BadOperation);
        }
        Ok(ArpPacket {
            op,
            sender_mac: mac_at(b, 8),
            sender_ip: u32_at(b, 14),
            target_mac: mac_at(b, 18),
            target_ip: u32_at(b, 24),
        })
    }

    /// Write the packet into the first 28 bytes of `out`.
    pub fn emit(&self, out: &mut [u8]) -> Result<(), WireError> {
        let b = out.get_mut(..ARP_LEN).ok_or(WireError::Truncated)?;
        b[0..2].copy_from_slice(&HTYPE_ETHERNET.to_be_bytes());
        b[2..4].copy_from_slice(&PTYPE_IPV4.to_be_bytes());
        b[4] = 6;
        b[5] = 4;
        b[6..8].copy_from_slice(&self.op.to_be_bytes());
        b[8..14].copy_from_slice(&self.sender_mac.0);
        b[14..18].copy_from_slice(&self.sender_ip.to_be_bytes());
        b[18..24].copy_from_slice(&self.target_mac.0);
        b[24..28].copy_from_slice(&self.target_ip.to_be_bytes());
        Ok(())
    }
}

/// Turn `frame`, an Ethernet frame carrying the ARP request `req` at `arp_at`, into the
/// reply in place: `mac` says it has `req.target_ip`, and the frame goes back to the
/// requester (its Ethernet source becomes the destination). Fails only on a short frame.
pub fn reply_in_place(
    frame: &mut [u8],
    arp_at: usize,
    req: &ArpPacket,
    mac: MacAddress,
) -> Result<(), WireError> {
    let reply = ArpPacket {
        op: OP_REPLY,
        sender_mac: mac,
        sender_ip: req.target_ip,
        target_mac: req.sender_mac,
        target_ip: req.sender_ip,
    };
    reply.emit(frame.get_mut(arp_at..).ok_or(WireError::Truncated)?)?;
    let eth = frame.get_mut(..12).ok_or(WireError::Truncated)?;
    eth[0..6].copy_from_slice(&req.sender_mac.0);
    eth[6..12].copy_from_slice(&mac.0);
    Ok(())
}

/// A whole broadcast ARP request frame asking who has `target_ip`, padded to the 60-byte
/// Ethernet minimum.
pub fn request_frame(our_mac: MacAddress, our_ip: u32, target_ip: u32) -> [u8; 60] {
    let mut f = [0u8; 60];
    f[0..6].copy_from_slice(&MacAddress::BROADCAST.0);
    f[6..12].copy_from_slice(&our_mac.0);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    let p = ArpPacket {
        op: OP_REQUEST,
        sender_mac: our_mac,
        sender_ip: our_ip,
        target_mac: MacAddress([0; 6]),
        target_ip,
    };
    // 46 bytes follow the header: the packet fits.
    let _ = p.emit(&mut f[14..]);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn request_frame_parses_back() {
        let me = MacAddress([2, 0, 0, 0, 0, 1]);
        let f = request_frame(me, 0xc000_0201, 0xc000_0202);
        assert_eq!(&f[..6], &[0xff; 6]);
        let p = ArpPacket::parse(&f[14..]).unwrap();
        assert_eq!(p.op, OP_REQUEST);
        assert_eq!(p.sender_mac, me);
        assert_eq!((p.sender_ip, p.target_ip), (0xc000_0201, 0xc000_0202));
    }

    #[test]
    fn a_request_becomes_its_reply_in_place() {
        let peer = MacAddress([2, 0, 0, 0, 0, 1]);
        let us = MacAddress([2, 0, 0, 0, 0, 9]);
        let mut f = request_frame(peer, 0xc000_0202, 0xc000_0201);
        let req = ArpPacket::parse(&f[14..]).unwrap();
        reply_in_place(&mut f, 14, &req, us).unwrap();
        assert_eq!((&f[0..6], &f[6..12]), (&peer.0[..], &us.0[..]));
        let p = ArpPacket::parse(&f[14..]).unwrap();
        assert_eq!(p.op, OP_REPLY);
        assert_eq!((p.sender_mac, p.sender_ip), (us, 0xc000_0201));
        assert_eq!((p.target_mac, p.target_ip), (peer, 0xc000_0202));
        assert!(reply_in_place(&mut f[..40], 14, &req, us).is_err());
    }

    #[test]
    fn each_malformation_has_its_error() {
        let me = MacAddress([2, 0, 0, 0, 0, 1]);
        let f = request_frame(me, 1, 2);
        let good = &f[14..14 + ARP_LEN];
        assert_eq!(ArpPacket::parse(&good[..27]), Err(ArpError::Truncated));
        let bad = |at: usize, v: u8| {
            let mut b = good.to_vec();
            b[at] = v;
            ArpPacket::parse(&b)
        };
        assert_eq!(bad(1, 6), Err(ArpError::NotEthernet));
        assert_eq!(bad(2, 0x86), Err(ArpError::NotIpv4));
        assert_eq!(bad(4, 8), Err(ArpError::BadLengths));
        assert_eq!(bad(7, 3), Err(ArpError::BadOperation));
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = ArpPacket::parse(&bytes);
        }

        #[test]
        fn emit_then_parse_is_identity(op in 1u16..=2, sm in any::<[u8; 6]>(), si in any::<u32>(),
                                       tm in any::<[u8; 6]>(), ti in any::<u32>()) {
            let p = ArpPacket { op, sender_mac: MacAddress(sm), sender_ip: si,
                                target_mac: MacAddress(tm), target_ip: ti };
            let mut b = [0u8; ARP_LEN];
            p.emit(&mut b).unwrap();
            prop_assert_eq!(ArpPacket::parse(&b), Ok(p));
        }
    }
}
