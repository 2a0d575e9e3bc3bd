//! The test header every generator frame carries after its L4 header, and the receiver's
//! checks of it.
//!
//! ```text
//! full (L4 payload of 16 bytes or more):  | magic 51ce | sequence 6 | tx time ns (8)   | fill
//! short (12 to 15 bytes: IPv6/UDP 78..81, | magic 51cd | sequence 6 | tx time ns, low 32 bits
//!        IPv4/TCP 70..73, IPv6/TCP 90..93 with FCS)
//! ```
//! A short header's latency is the receive time less the send time modulo 2^32 ns (4.29 s,
//! far beyond any latency the receiver waits for).

use super::{tags_len, Family, Profile, ETH_LEN, FILL_AT, TEST_AT, TS_AT};
use sluice::wire::ipv4::checksum;

pub(super) const MAGIC: u16 = 0x51ce;
pub(super) const MAGIC_SHORT: u16 = 0x51cd;
pub const STAMP_LEN: usize = 16;
pub const SHORT_STAMP_LEN: usize = 12;
const SEQ_MASK: u64 = (1 << 48) - 1;

/// Write the test header of frame `seq` at the start of `p` (the L4 payload); returns its
/// length.
#[inline]
pub(super) fn write_stamp(p: &mut [u8], seq: u64, tx_ns: u64) -> usize {
    let short = p.len() < STAMP_LEN;
    let magic = if short { MAGIC_SHORT } else { MAGIC };
    p[0..2].copy_from_slice(&magic.to_be_bytes());
    p[2..8].copy_from_slice(&(seq & SEQ_MASK).to_be_bytes()[2..]);
    if short {
        p[8..12].copy_from_slice(&(tx_ns as u32).to_be_bytes());
        SHORT_STAMP_LEN
    } else {
        p[8..16].copy_from_slice(&tx_ns.to_be_bytes());
        STAMP_LEN
    }
}

/// The test header of a received frame, if it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub seq: u64,
    /// The send time (ns since the epoch), or its low 32 bits in a short header.
    pub tx_ns: u64,
    pub short: bool,
}

impl Stamp {
    /// Time from sending to `rx_ns`.
    pub fn latency(&self, rx_ns: u64) -> u64 {
        if self.short {
            (rx_ns as u32).wrapping_sub(self.tx_ns as u32) as u64
        } else {
            rx_ns.saturating_sub(self.tx_ns)
        }
    }
}

fn read_stamp(p: &[u8]) -> Option<Stamp> {
    let magic = u16::from_be_bytes([*p.first()?, *p.get(1)?]);
    let short = match magic {
        MAGIC if p.len() >= STAMP_LEN => false,
        MAGIC_SHORT if p.len() >= SHORT_STAMP_LEN => true,
        _ => return None,
    };
    let mut s = [0u8; 8];
    s[2..].copy_from_slice(&p[2..8]);
    let mut t = [0u8; 8];
    if short {
        t[4..].copy_from_slice(&p[8..12]);
    } else {
        t.copy_from_slice(&p[8..16]);
    }
    Some(Stamp {
        seq: u64::from_be_bytes(s),
        tx_ns: u64::from_be_bytes(t),
        short,
    })
}

/// Read the test header; `None` for frames that are not ours.
pub fn stamp(frame: &[u8]) -> Option<Stamp> {
    let v = tags_len(frame);
    let et = frame.get(12 + v..14 + v)?;
    let ip = ETH_LEN + v;
    if et == [0x08, 0x00] && frame.get(ip + 9) == Some(&17) {
        // IPv4/UDP, every frame a full header at one place: the hot path of IPv4 runs.
        if frame.len() < FILL_AT + v {
            return None;
        }
        return read_stamp(&frame[TEST_AT + v..TS_AT + v + 8]);
    }
    let (l4_at, l4_len, proto) = match et {
        [0x08, 0x00] => {
            let h = frame.get(ip..ip + 20)?;
            let total = u16::from_be_bytes([h[2], h[3]]) as usize;
            (h[0] == 0x45).then_some(())?;
            (ip + 20, total.checked_sub(20)?, h[9])
        }
        [0x86, 0xdd] => {
            let h = frame.get(ip..ip + 40)?;
            (h[0] >> 4 == 6).then_some(())?;
            (ip + 40, u16::from_be_bytes([h[4], h[5]]) as usize, h[6])
        }
        _ => return None,
    };
    let hl = match proto {
        17 => 8,
        6 => (frame.get(l4_at + 12)? >> 4) as usize * 4,
        _ => return None,
    };
    let at = l4_at + hl;
    let len = l4_len.checked_sub(hl)?.min(STAMP_LEN);
    read_stamp(frame.get(at..at + len)?)
}

/// Offsets a router changes: MAC addresses, TTL or hop limit, the IPv4 header checksum.
const MACS_END: usize = 12;
const CSUM_AT: usize = 10;

/// Whether `frame` is exactly the frame the profile sends for its stamp — or, for a routed
/// profile, that frame as a router forwards it (any MACs, TTL or hop limit decremented, an
/// IPv4 checksum right). `scratch` avoids an allocation per frame.
pub fn verify(profile: &Profile, frame: &[u8], st: Stamp, scratch: &mut Vec<u8>) -> bool {
    profile.build(st.seq, st.tx_ns, scratch);
    same_as_sent(profile, frame, scratch)
}

/// Whether `frame` is `scratch` as sent (for a routed profile: as a router forwards it; for
/// a translated one, as a NAT44 router does).
pub(super) fn same_as_sent(profile: &Profile, frame: &[u8], scratch: &[u8]) -> bool {
    if !profile.routed {
        return scratch == frame;
    }
    if profile.translated && profile.family == Family::Ipv4 {
        return translated_as_sent(profile, frame, scratch);
    }
    let ip = ETH_LEN + 4 * profile.vlans.len();
    let ttl = ip + profile.family.ttl_at();
    let same_but_ttl = frame.len() == scratch.len()
        && frame[MACS_END..ttl] == scratch[MACS_END..ttl]
        && frame[ttl] < scratch[ttl]
        && frame[ttl] > 0;
    match profile.family {
        Family::Ipv4 => {
            let csum = ip + CSUM_AT..ip + CSUM_AT + 2;
            same_but_ttl
                && frame[ttl + 1..csum.start] == scratch[ttl + 1..csum.start]
                && frame[csum.end..] == scratch[csum.end..]
                && checksum(&frame[ip..ip + 20]) == 0
        }
        // No header checksum; the L4 checksum does not cover the hop limit.
        Family::Ipv6 => same_but_ttl && frame[ttl + 1..] == scratch[ttl + 1..],
    }
}

/// Whether `frame` is `scratch` as a NAT44 router forwards it: any MACs, the TTL
/// decremented, any source address and port, the IP and L4 checksums right for them (an
/// IPv4/UDP frame sent without a checksum still without one), every other byte as sent.
fn translated_as_sent(profile: &Profile, frame: &[u8], scratch: &[u8]) -> bool {
    let ip = ETH_LEN + 4 * profile.vlans.len();
    let ttl = ip + profile.family.ttl_at();
    // The generator's IPv4 headers have no options.
    let l4 = ip + 20;
    let l4_sum = l4 + super::l4::checksum_at(profile.l4);
    let src = ip + 12..ip + 16;
    let same = |r: std::ops::Range<usize>| frame.get(r.clone()) == scratch.get(r);
    let end = scratch.len();
    if frame.len() != end || l4_sum + 2 > end {
        return false;
    }
    let unchanged = same(MACS_END..ttl)
        && frame[ttl] < scratch[ttl]
        && frame[ttl] > 0
        && same(ttl + 1..ip + CSUM_AT)
        && same(src.end..l4)
        && same(l4 + 2..l4_sum)
        && same(l4_sum + 2..end);
    let ip_len = u16::from_be_bytes([frame[ip + 2], frame[ip + 3]]) as usize;
    let Some(segment) = frame.get(l4..ip + ip_len) else {
        return false;
    };
    let l4_ok = if scratch[l4_sum..l4_sum + 2] == [0, 0] && profile.l4 == super::L4::Udp {
        frame[l4_sum..l4_sum + 2] == [0, 0]
    } else {
        let pseudo = super::checksum::sum(&frame[src.start..l4])
            + frame[ip + 9] as u64
            + segment.len() as u64;
        super::checksum::finish(pseudo + super::checksum::sum(segment)) == 0
    };
    unchanged && l4_ok && checksum(&frame[ip..l4]) == 0
}

/// The receiver compares the bytes of one frame in this many by default: rebuilding and
/// comparing every frame costs the generator a good part of its receive rate, and a path that
/// corrupts frames corrupts more than one in sixteen.
pub const VERIFY_SAMPLE: u64 = 16;
// The receiver samples by mask.
const _: () = assert!(VERIFY_SAMPLE.is_power_of_two());

/// The check every frame gets: its length is the one its sequence number was sent with; and,
/// when `full`, every byte is what was sent (`verify`).
pub fn check(
    profile: &Profile,
    frame: &[u8],
    st: Stamp,
    full: bool,
    scratch: &mut Vec<u8>,
) -> bool {
    if full {
        verify(profile, frame, st, scratch)
    } else {
        frame.len() == profile.frame_len(st.seq)
    }
}
