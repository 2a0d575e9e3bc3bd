//! Generator frames: Ethernet / IPv4 or IPv6 / UDP or TCP, a test header (`stamp`), then a
//! fill pattern. Everything in a frame follows from the generator's settings and the sequence
//! number, so a receiver can rebuild the exact bytes it should have got and catch any
//! corruption.
//!
//! ```text
//! 0        14          34        42        44           50               58
//! | ether  | IPv4 (20) | UDP (8) | magic 2 | sequence 6 | tx time ns (8) | fill ...
//! | ether  | IPv6 (40) | UDP (8) or TCP (20) | test header (16, or 12 if short) | fill ...
//! ```
//! Sizes are stated as benchmarkers state them, with the 4-byte FCS: `--size 64` puts 60
//! bytes on the socket (the NIC or veth adds no FCS we can see). The smallest frame of each
//! kind (`Profile::min_size`): IPv4/UDP 64, IPv6/UDP 78, IPv4/TCP 70, IPv6/TCP 90.
//!
//! The L4 checksum is filled in for IPv6 (where UDP's is mandatory) and for TCP; IPv4/UDP
//! frames carry none, as they always have.

pub mod answer;
pub(super) mod checksum;
pub mod ip;
pub mod l4;
mod sizes;
mod stamp;

pub use ip::{Family, Tuple};
pub use l4::{Segment, L4};
pub use sizes::{
    is_named_mix, parse_sizes, sizes_for, weighted_cycle, SIMPLE_IMIX, TREX_IMIX, VAR2_FLOWS,
};
pub use stamp::{check, stamp, verify, Stamp, SHORT_STAMP_LEN, STAMP_LEN, VERIFY_SAMPLE};

use sluice::wire::ethernet::HEADER_LEN as ETH_LEN;
use sluice::wire::MacAddress;

pub const FCS_LEN: usize = 4;
/// Smallest size with FCS: 60 bytes of frame, the Ethernet minimum.
pub const MIN_SIZE: usize = 64;
/// Largest size with FCS: a 9000-byte MTU frame with header and FCS.
pub const MAX_SIZE: usize = 9018;

// Where an IPv4/UDP frame's test header is.
const TEST_AT: usize = ETH_LEN + 20 + l4::UDP_LEN;
const TS_AT: usize = TEST_AT + 8;
const FILL_AT: usize = TEST_AT + 16;

/// Sequence numbers of warm-up frames carry this bit; receivers do not count them.
pub const WARMUP_SEQ: u64 = 1 << 47;
/// Sequence numbers of the frames that close TCP flows after a run (FIN) carry this bit;
/// receivers do not count them.
pub const CLOSE_SEQ: u64 = 1 << 46;
/// A frame's place in the run, without the warm-up and closing bits: TCP segments follow it,
/// so the warm-up sends the same segments as the run (a DUT sees them again as
/// retransmissions).
const INDEX_MASK: u64 = CLOSE_SEQ - 1;

/// The most flows whose (source address, source port) pairs all differ: flow k's pair is
/// (k mod 65 536, k mod 64 512), which repeats first at their least common multiple
/// (65 536 × 63), so a million flows are a million sessions.
pub const MAX_FLOWS: u32 = 65_536 * 63;

/// What the generator sends; sender and receiver build the same frames from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Sizes with FCS, used in turn by sequence number.
    pub sizes: Vec<usize>,
    /// Number of flows; flow k has source src_net.(k/256 % 256).(k%256) and source port
    /// 1024 + k % 64512, a pair no other flow below `MAX_FLOWS` has.
    pub flows: u32,
    /// T-Rex's var2: source and destination addresses both step through a /16
    /// (src_net.0.1 + k and dst_net.0.1 + k), ports fixed.
    pub var2: bool,
    /// First two bytes of the source and destination /16s. T-Rex uses 16.0 and 48.0; we
    /// default to RFC 2544's benchmarking range, 198.18 and 198.19, which no real network
    /// routes.
    pub src_net: [u8; 2],
    pub dst_net: [u8; 2],
    /// IPv4 or IPv6.
    pub family: Family,
    /// UDP or TCP.
    pub l4: L4,
    /// The IPv6 source and destination prefixes (low 16 bits zero: the flow goes there);
    /// by default 2001:db8:198:18::/64 and 2001:db8:198:19::/64, documentation space.
    pub src_net6: [u8; 16],
    pub dst_net6: [u8; 16],
    /// The DUT routes (rewrites MACs, decrements TTL, updates the checksum): the receiver
    /// checks everything else.
    pub routed: bool,
    /// The DUT translates the IPv4 source address and port (NAT44): the receiver accepts
    /// any, with the IP and L4 checksums right for them.
    pub translated: bool,
    pub src_mac: MacAddress,
    pub dst_mac: MacAddress,
    /// MAC pairs the frames step through (1: the two above only): frame `seq` adds
    /// `2 * (seq % macs)` to the low 24 bits of both, so a bridge learns `macs` sources and
    /// forwards to `macs` destinations. Stepping by two keeps the sources and destinations
    /// apart when the two MACs differ by an odd number, as the defaults do (`macs_overlap`).
    pub macs: u32,
    /// VLAN tags after the MAC addresses, outermost first: (TPID, VLAN id). They add 4 bytes
    /// each to the stated size: the IP/L4/test headers of the smallest frame stay whole.
    pub vlans: Vec<(u16, u16)>,
    /// The innermost tag's VLAN id steps through this many ids from the one in `vlans` by
    /// flow (flow `f` takes id + f % spread): N tenants behind N sub-interfaces. 1: one id.
    pub vlan_spread: u16,
}

/// The default IPv6 source prefix, 2001:db8:198:18::/64.
pub const SRC_NET6: [u8; 16] = [
    0x20, 1, 0x0d, 0xb8, 1, 0x98, 0, 0x18, 0, 0, 0, 0, 0, 0, 0, 0,
];
/// The default IPv6 destination prefix, 2001:db8:198:19::/64.
pub const DST_NET6: [u8; 16] = [
    0x20, 1, 0x0d, 0xb8, 1, 0x98, 0, 0x19, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// Bytes of VLAN tags at the front of a received frame (after the MACs), at most two.
fn tags_len(frame: &[u8]) -> usize {
    let mut at = 12;
    while at < 20
        && frame
            .get(at..at + 2)
            .is_some_and(|t| t == [0x81, 0] || t == [0x88, 0xa8])
    {
        at += 4;
    }
    at - 12
}

/// `mac` with `n` added to its low 24 bits (wrapping there: the vendor part stays).
pub fn mac_plus(mac: MacAddress, n: u32) -> MacAddress {
    let m = mac.0;
    let low = u32::from_be_bytes([0, m[3], m[4], m[5]]).wrapping_add(n) & 0xff_ffff;
    let b = low.to_be_bytes();
    MacAddress([m[0], m[1], m[2], b[1], b[2], b[3]])
}

/// The smallest size (with FCS) of a frame of `family` and `l4` with a short test header.
pub fn min_size(family: Family, l4: L4) -> usize {
    (ETH_LEN + family.header_len() + l4.header_len() + SHORT_STAMP_LEN + FCS_LEN).max(MIN_SIZE)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Profile {
    /// The MAC pair of frame `seq` (warm-up frames, numbered from bit 47, included).
    pub fn macs_of(&self, seq: u64) -> (MacAddress, MacAddress) {
        if self.macs <= 1 {
            return (self.src_mac, self.dst_mac);
        }
        let k = ((seq & ((1 << 47) - 1)) % self.macs as u64) as u32;
        (mac_plus(self.src_mac, 2 * k), mac_plus(self.dst_mac, 2 * k))
    }

    /// Whether some source MAC of the `macs` pairs is also a destination: a bridge would see
    /// it move between its ports and drop the frames sent to it.
    pub fn macs_overlap(&self) -> bool {
        let low = |m: MacAddress| u32::from_be_bytes([0, m.0[3], m.0[4], m.0[5]]);
        let diff = low(self.dst_mac).wrapping_sub(low(self.src_mac)) & 0xff_ffff;
        let same_vendor = self.src_mac.0[..3] == self.dst_mac.0[..3];
        let half = diff / 2;
        self.macs > 1
            && same_vendor
            && diff % 2 == 0
            && (half < self.macs || (1 << 23) - half < self.macs)
    }

    /// What sizes and flows follow: the sequence number, or for TCP its place in the run, so
    /// that warm-up and closing frames are segments of the run's flows.
    #[inline]
    fn key(&self, seq: u64) -> u64 {
        match self.l4 {
            L4::Udp => seq,
            L4::Tcp => seq & INDEX_MASK,
        }
    }

    pub fn size_of(&self, seq: u64) -> usize {
        self.sizes[(self.key(seq) % self.sizes.len() as u64) as usize]
    }

    /// Bytes on the socket for sequence number `seq`.
    pub fn frame_len(&self, seq: u64) -> usize {
        self.size_of(seq) - FCS_LEN + 4 * self.vlans.len()
    }

    /// Ethernet, IP and L4 headers, without VLAN tags.
    pub fn headers_len(&self) -> usize {
        ETH_LEN + self.family.header_len() + self.l4.header_len()
    }

    /// The smallest size (with FCS) whose frames carry the headers and a short test header:
    /// 64 for IPv4/UDP, 78 for IPv6/UDP, 70 for IPv4/TCP, 90 for IPv6/TCP.
    pub fn min_size(&self) -> usize {
        min_size(self.family, self.l4)
    }

    /// The flow frame `seq` belongs to.
    #[inline]
    pub fn flow_of(&self, seq: u64) -> u32 {
        (self.key(seq) % self.flows.max(1) as u64) as u32
    }

    /// Addresses and ports of `flow`.
    #[inline]
    pub fn tuple(&self, flow: u32) -> Tuple {
        let (src, dst, sport) = if self.var2 {
            let k = (flow + 1) as u16;
            (k, k, 1025)
        } else {
            (flow as u16, 1, 1024 + (flow % 64512) as u16)
        };
        let (src, dst) = match self.family {
            Family::Ipv4 => (ip::v4_in(self.src_net, src), ip::v4_in(self.dst_net, dst)),
            Family::Ipv6 => (ip::v6_in(self.src_net6, src), ip::v6_in(self.dst_net6, dst)),
        };
        Tuple {
            src,
            dst,
            sport,
            dport: 1024,
        }
    }

    /// The TCP fields of frame `seq` (see `l4`): its flow's SYN, an ACK, or a FIN+ACK when
    /// `seq` carries `CLOSE_SEQ`.
    pub fn segment(&self, seq: u64) -> Segment {
        let idx = seq & INDEX_MASK;
        let f = self.flows.max(1) as u64;
        let flow = (idx % f) as u32;
        let n = idx / f;
        Segment::of(flow, n, self.sent_before(flow, n), seq & CLOSE_SEQ != 0)
    }

    /// Payload bytes of `flow`'s first `n` segments. Segment j of the flow is frame
    /// `flow + j * flows`, whose size repeats with j every `sizes / gcd(flows, sizes)`.
    fn sent_before(&self, flow: u32, n: u64) -> u64 {
        let (l, f) = (self.sizes.len() as u64, self.flows.max(1) as u64);
        let headers = (self.headers_len() + FCS_LEN) as u64;
        let payload = |j: u64| self.sizes[((flow as u64 + j * f) % l) as usize] as u64 - headers;
        if l == 1 {
            return n * payload(0);
        }
        let period = l / gcd(f % l, l);
        let per_period: u64 = (0..period).map(payload).sum();
        (n / period) * per_period + (0..n % period).map(payload).sum::<u64>()
    }

    /// Write frame `seq` into `out` (resized to the frame length).
    pub fn build(&self, seq: u64, tx_ns: u64, out: &mut Vec<u8>) {
        let len = self.size_of(seq) - FCS_LEN;
        out.resize(len, 0);
        let flow = self.flow_of(seq);
        let f = &mut out[..];
        let (src_mac, dst_mac) = self.macs_of(seq);
        f[0..6].copy_from_slice(&dst_mac.0);
        f[6..12].copy_from_slice(&src_mac.0);
        f[12..14].copy_from_slice(&self.family.ethertype().to_be_bytes());
        let t = self.tuple(flow);
        let l4_at = ETH_LEN + self.family.header_len();
        let proto = self.l4.proto();
        match self.family {
            Family::Ipv4 => {
                ip::write_v4(&mut f[ETH_LEN..l4_at], len - ETH_LEN, seq as u16, proto, &t)
            }
            Family::Ipv6 => ip::write_v6(&mut f[ETH_LEN..l4_at], len - l4_at, proto, &t),
        }
        let pay_at = l4_at + self.l4.header_len();
        match self.l4 {
            L4::Udp => l4::write_udp(&mut f[l4_at..pay_at], &t, len - l4_at),
            L4::Tcp => l4::write_tcp(&mut f[l4_at..pay_at], &t, self.segment(seq)),
        }
        let fill_at = pay_at + stamp::write_stamp(&mut f[pay_at..], seq, tx_ns);
        let k = seq as u8;
        for (i, b) in f[fill_at..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_add(k);
        }
        if (self.family, self.l4) != (Family::Ipv4, L4::Udp) {
            // UDP without checksum is allowed over IPv4 only (RFC 8200 8.1).
            let sum = t.pseudo_sum(proto)
                + (len - l4_at) as u64
                + checksum::sum(&f[l4_at..fill_at])
                + checksum::fill_sum(len - fill_at, k);
            let mut c = checksum::finish(sum);
            if c == 0 && self.l4 == L4::Udp {
                c = 0xffff;
            }
            let at = l4_at + l4::checksum_at(self.l4);
            f[at..at + 2].copy_from_slice(&c.to_be_bytes());
        }
        if !self.vlans.is_empty() {
            let t = 4 * self.vlans.len();
            out.resize(len + t, 0);
            out.copy_within(12..len, 12 + t);
            let inner = self.vlans.len() - 1;
            for (i, &(tpid, vid)) in self.vlans.iter().enumerate() {
                let vid = if i == inner {
                    vid + (flow % self.vlan_spread.max(1) as u32) as u16
                } else {
                    vid
                };
                out[12 + 4 * i..14 + 4 * i].copy_from_slice(&tpid.to_be_bytes());
                out[14 + 4 * i..16 + 4 * i].copy_from_slice(&vid.to_be_bytes());
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
