//! The transport layer of generator frames: UDP, or TCP segments with the flags and sequence
//! numbers a stateful device expects from an opening flow.
//!
//! TCP, per flow (frames `flow`, `flow + flows`, `flow + 2 flows`... of the run):
//! - segment 0 is the SYN (sequence number the flow's ISN, no ACK), carrying the test
//!   payload as a SYN may (RFC 9293 3.10.7.2; TCP Fast Open's do);
//! - every later segment is an ACK of the answering side's SYN (`peer_isn + 1`), its sequence
//!   number the ISN + 1 + every payload byte sent before it in the flow;
//! - closing frames (`CLOSE_SEQ` set, sent after the run) are FIN+ACK at the next sequence
//!   number.
//!
//! Both ISNs follow from the flow number, so an answering side can build its SYN+ACK and ACKs
//! (`Segment::answer`) without keeping state.

use super::ip::Tuple;

pub const UDP_LEN: usize = 8;
/// TCP header without options.
pub const TCP_LEN: usize = 20;
pub const PROTO_UDP: u8 = 17;
pub const PROTO_TCP: u8 = 6;

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const ACK: u8 = 0x10;

/// The window every segment advertises.
pub const WINDOW: u16 = 0xffff;

/// The transport protocol of the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4 {
    Udp,
    Tcp,
}

impl L4 {
    /// The `--l4` word.
    pub fn name(self) -> &'static str {
        match self {
            L4::Udp => "udp",
            L4::Tcp => "tcp",
        }
    }

    pub fn proto(self) -> u8 {
        match self {
            L4::Udp => PROTO_UDP,
            L4::Tcp => PROTO_TCP,
        }
    }

    pub fn header_len(self) -> usize {
        match self {
            L4::Udp => UDP_LEN,
            L4::Tcp => TCP_LEN,
        }
    }
}

/// The TCP fields of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
}

/// The initial sequence number of `flow`'s sender (`answer` false) or answering side.
pub fn isn(flow: u32, answer: bool) -> u32 {
    // A multiplicative hash spreads the flows over the sequence space; the answering side's
    // differs by a constant, so neither is a function of the other's window.
    let h = flow.wrapping_add(1).wrapping_mul(0x9e37_79b1);
    if answer {
        h ^ 0x5a5a_a5a5
    } else {
        h
    }
}

impl Segment {
    /// The sender's segment `n` of `flow`, after `sent` payload bytes of the flow, carrying
    /// FIN when `close`.
    pub fn of(flow: u32, n: u64, sent: u64, close: bool) -> Segment {
        let own = isn(flow, false);
        let ack = isn(flow, true).wrapping_add(1);
        match (n, close) {
            (0, false) => Segment {
                seq: own,
                ack: 0,
                flags: SYN,
            },
            (_, c) => Segment {
                seq: own.wrapping_add(1).wrapping_add(sent as u32),
                ack,
                flags: if c { FIN | ACK } else { ACK },
            },
        }
    }

    /// The answering side's reply to this segment when it carried `len` payload bytes: a
    /// SYN+ACK to a SYN, an ACK of everything up to it otherwise.
    pub fn answer(&self, flow: u32, len: usize) -> Segment {
        let syn = self.flags & SYN != 0;
        let fin = self.flags & FIN != 0;
        let upto = self
            .seq
            .wrapping_add(len as u32)
            .wrapping_add(syn as u32 + fin as u32);
        Segment {
            seq: if syn {
                isn(flow, true)
            } else {
                isn(flow, true).wrapping_add(1)
            },
            ack: upto,
            flags: if syn { SYN | ACK } else { ACK },
        }
    }
}

/// Write a UDP header for `len` bytes of UDP (header included), checksum 0.
#[inline]
pub fn write_udp(h: &mut [u8], t: &Tuple, len: usize) {
    h[0..2].copy_from_slice(&t.sport.to_be_bytes());
    h[2..4].copy_from_slice(&t.dport.to_be_bytes());
    h[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    h[6..8].copy_from_slice(&[0, 0]);
}

/// Write a TCP header without options, checksum 0.
#[inline]
pub fn write_tcp(h: &mut [u8], t: &Tuple, s: Segment) {
    h[0..2].copy_from_slice(&t.sport.to_be_bytes());
    h[2..4].copy_from_slice(&t.dport.to_be_bytes());
    h[4..8].copy_from_slice(&s.seq.to_be_bytes());
    h[8..12].copy_from_slice(&s.ack.to_be_bytes());
    h[12] = (TCP_LEN as u8 / 4) << 4;
    h[13] = s.flags;
    h[14..16].copy_from_slice(&WINDOW.to_be_bytes());
    h[16..20].copy_from_slice(&[0, 0, 0, 0]);
}

/// Where the L4 checksum sits in its header.
pub fn checksum_at(l4: L4) -> usize {
    match l4 {
        L4::Udp => 6,
        L4::Tcp => 16,
    }
}
