//! The answering far side's frames (`sluice gen --reply`): the answer to a generator frame,
//! built from the frame as it arrived, and what the sending side expects back.
//!
//! An answer goes back the way the frame came: MACs swapped (a router's rewritten ones
//! included, so it goes back to the router that forwarded the frame), the same VLAN tags, the
//! addresses and ports swapped (the reversed 5-tuple, from the address the frame was sent
//! to), a fresh TTL or hop limit of 64, and the frame's test header, so the sending side
//! counts the answers by the original's sequence number and measures the round trip from the
//! original's send time.
//!
//! - UDP: a datagram of the same size, its payload the frame's (test header and fill); the
//!   checksum is the frame's (swapping addresses and ports keeps the sum).
//! - TCP: the segment `Segment::answer` gives (a SYN+ACK to a SYN, an ACK to the rest),
//!   carrying the frame's test header (12 or 16 bytes) as its payload. Every answer of a
//!   flow starts at the answering side's ISN + 1 (a SYN+ACK at its ISN), as a retransmission
//!   of the same bytes would: the sending side's segments keep acknowledging ISN + 1, so a
//!   stateful device finds both sides' numbers in its windows however long the run.

use super::ip::{self, Tuple};
use super::l4::{self, Segment, L4};
use super::stamp::{same_as_sent, STAMP_LEN};
use super::{checksum, tags_len, Family, Profile, Stamp, ETH_LEN, FCS_LEN};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where a received frame's headers are.
struct Parsed {
    family: Family,
    ip_at: usize,
    l4_at: usize,
    l4: L4,
    /// Bytes of L4 header and payload, as the IP header says.
    l4_len: usize,
}

fn parse(frame: &[u8]) -> Option<Parsed> {
    let v = tags_len(frame);
    let ip_at = ETH_LEN + v;
    let (family, l4_at, l4_len, proto) = match frame.get(12 + v..14 + v)? {
        [0x08, 0x00] => {
            let h = frame.get(ip_at..ip_at + 20)?;
            (h[0] == 0x45).then_some(())?;
            let total = u16::from_be_bytes([h[2], h[3]]) as usize;
            (Family::Ipv4, ip_at + 20, total.checked_sub(20)?, h[9])
        }
        [0x86, 0xdd] => {
            let h = frame.get(ip_at..ip_at + 40)?;
            let len = u16::from_be_bytes([h[4], h[5]]) as usize;
            (Family::Ipv6, ip_at + 40, len, h[6])
        }
        _ => return None,
    };
    let l4 = match proto {
        l4::PROTO_UDP => L4::Udp,
        l4::PROTO_TCP => L4::Tcp,
        _ => return None,
    };
    (frame.len() >= l4_at + l4_len && l4_len >= l4.header_len()).then_some(Parsed {
        family,
        ip_at,
        l4_at,
        l4,
        l4_len,
    })
}

/// The frame's 5-tuple as it was sent.
fn tuple(frame: &[u8], p: &Parsed) -> Tuple {
    let (src, dst) = match p.family {
        Family::Ipv4 => {
            let a = |at: usize| {
                let b: [u8; 4] = frame[at..at + 4].try_into().expect("4 bytes");
                IpAddr::V4(Ipv4Addr::from(b))
            };
            (a(p.ip_at + 12), a(p.ip_at + 16))
        }
        Family::Ipv6 => {
            let a = |at: usize| {
                let b: [u8; 16] = frame[at..at + 16].try_into().expect("16 bytes");
                IpAddr::V6(Ipv6Addr::from(b))
            };
            (a(p.ip_at + 8), a(p.ip_at + 24))
        }
    };
    let port = |at: usize| u16::from_be_bytes([frame[at], frame[at + 1]]);
    Tuple {
        src,
        dst,
        sport: port(p.l4_at),
        dport: port(p.l4_at + 2),
    }
}

/// Write into `out` the answer to `frame`, a generator frame of `profile` as received, its
/// test header `st`. `false` (and `out` unspecified) for a frame that is not one of ours.
pub fn answer(profile: &Profile, frame: &[u8], st: Stamp, out: &mut Vec<u8>) -> bool {
    let Some(p) = parse(frame) else {
        return false;
    };
    let t = tuple(frame, &p).reversed();
    let pay_at = p.l4_at + p.l4.header_len();
    let len = match p.l4 {
        L4::Udp => p.l4_at + p.l4_len,
        L4::Tcp => pay_at + if st.short { 12 } else { STAMP_LEN },
    };
    if frame.len() < len {
        return false;
    }
    out.clear();
    out.extend_from_slice(&frame[6..12]);
    out.extend_from_slice(&frame[0..6]);
    out.extend_from_slice(&frame[12..len]);
    let h = &mut out[p.ip_at..p.l4_at];
    match p.family {
        Family::Ipv4 => {
            let id = u16::from_be_bytes([frame[p.ip_at + 4], frame[p.ip_at + 5]]);
            ip::write_v4(h, len - p.ip_at, id, p.l4.proto(), &t)
        }
        Family::Ipv6 => ip::write_v6(h, len - p.l4_at, p.l4.proto(), &t),
    }
    match p.l4 {
        L4::Udp => {
            // Swapped ports, same sum: the frame's checksum stays right (or 0, none).
            out.copy_within(p.l4_at + 2..p.l4_at + 4, p.l4_at);
            out[p.l4_at + 2..p.l4_at + 4].copy_from_slice(&frame[p.l4_at..p.l4_at + 2]);
        }
        L4::Tcp => {
            let h = &frame[p.l4_at..];
            let word = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
            let got = Segment {
                seq: word(4),
                ack: word(8),
                flags: h[13],
            };
            let hl = ((h[12] >> 4) as usize * 4).max(l4::TCP_LEN);
            let payload = p.l4_len.saturating_sub(hl);
            let seg = got.answer(profile.flow_of(st.seq), payload);
            // The test header follows the frame's TCP header, options or none.
            let stamp_len = len - pay_at;
            let from = p.l4_at + hl;
            let Some(stamp) = frame.get(from..from + stamp_len) else {
                return false;
            };
            out[pay_at..len].copy_from_slice(stamp);
            l4::write_tcp(&mut out[p.l4_at..pay_at], &t, seg);
            let sum = t.pseudo_sum(l4::PROTO_TCP)
                + (len - p.l4_at) as u64
                + checksum::sum(&out[p.l4_at..len]);
            let c = checksum::finish(sum);
            let at = p.l4_at + l4::checksum_at(L4::Tcp);
            out[at..at + 2].copy_from_slice(&c.to_be_bytes());
        }
    }
    true
}

/// The length of the answer to frame `seq` of `profile`.
pub fn answer_len(profile: &Profile, seq: u64) -> usize {
    match profile.l4 {
        L4::Udp => profile.frame_len(seq),
        L4::Tcp => {
            let payload = profile.size_of(seq) - FCS_LEN - profile.headers_len();
            let stamp = if payload < STAMP_LEN { 12 } else { STAMP_LEN };
            profile.headers_len() + 4 * profile.vlans.len() + stamp
        }
    }
}

/// Whether `frame` is exactly the answer to frame `st.seq` of `profile` (for a routed
/// profile: that answer as a router forwards it). `sent` and `scratch` avoid allocations.
pub fn verify_answer(
    profile: &Profile,
    frame: &[u8],
    st: Stamp,
    sent: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> bool {
    profile.build(st.seq, st.tx_ns, sent);
    answer(profile, sent, st, scratch) && same_as_sent(profile, frame, scratch)
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
