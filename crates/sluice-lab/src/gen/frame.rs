//! Generator frames: Ethernet / IPv4 / UDP with a 16-byte test header, then a fill pattern.
//! Everything in a frame follows from the generator's settings and the sequence number, so a
//! receiver can rebuild the exact bytes it should have got and catch any corruption.
//!
//! ```text
//! 0        14          34        42        44           50               58
//! | ether  | IPv4 (20) | UDP (8) | magic 2 | sequence 6 | tx time ns (8) | fill ...
//! ```
//! Sizes are stated as benchmarkers state them, with the 4-byte FCS: `--size 64` puts 60
//! bytes on the socket (the NIC or veth adds no FCS we can see).

use sluice::wire::ethernet::HEADER_LEN as ETH_LEN;
use sluice::wire::ipv4::{checksum, MIN_HEADER_LEN as IP_LEN};
use sluice::wire::MacAddress;

pub const FCS_LEN: usize = 4;
/// Smallest size with FCS: 60 bytes of frame, the Ethernet minimum.
pub const MIN_SIZE: usize = 64;
/// Largest size with FCS: a 9000-byte MTU frame with header and FCS.
pub const MAX_SIZE: usize = 9018;

const UDP_LEN: usize = 8;
const TEST_AT: usize = ETH_LEN + IP_LEN + UDP_LEN;
const MAGIC: u16 = 0x51ce;
const TS_AT: usize = TEST_AT + 8;
const FILL_AT: usize = TEST_AT + 16;
const SEQ_MASK: u64 = (1 << 48) - 1;

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
    /// The DUT routes (rewrites MACs, decrements TTL, updates the checksum): the receiver
    /// checks everything else.
    pub routed: bool,
    pub src_mac: MacAddress,
    pub dst_mac: MacAddress,
    /// MAC pairs the frames step through (1: the two above only): frame `seq` adds
    /// `2 * (seq % macs)` to the low 24 bits of both, so a bridge learns `macs` sources and
    /// forwards to `macs` destinations. Stepping by two keeps the sources and destinations
    /// apart when the two MACs differ by an odd number, as the defaults do (`macs_overlap`).
    pub macs: u32,
    /// VLAN tags after the MAC addresses, outermost first: (TPID, VLAN id). They add 4 bytes
    /// each to the stated size: the IPv4/UDP/test headers of a 64-byte frame stay whole.
    pub vlans: Vec<(u16, u16)>,
    /// The innermost tag's VLAN id steps through this many ids from the one in `vlans` by
    /// flow (flow `f` takes id + f % spread): N tenants behind N sub-interfaces. 1: one id.
    pub vlan_spread: u16,
}

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

    pub fn size_of(&self, seq: u64) -> usize {
        self.sizes[(seq % self.sizes.len() as u64) as usize]
    }

    /// Bytes on the socket for sequence number `seq`.
    pub fn frame_len(&self, seq: u64) -> usize {
        self.size_of(seq) - FCS_LEN + 4 * self.vlans.len()
    }

    /// Write frame `seq` into `out` (resized to the frame length).
    pub fn build(&self, seq: u64, tx_ns: u64, out: &mut Vec<u8>) {
        let len = self.size_of(seq) - FCS_LEN;
        out.resize(len, 0);
        let flow = (seq % self.flows.max(1) as u64) as u32;
        let f = &mut out[..];
        let (src_mac, dst_mac) = self.macs_of(seq);
        f[0..6].copy_from_slice(&dst_mac.0);
        f[6..12].copy_from_slice(&src_mac.0);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        // IPv4: version 4, IHL 5, total length, DF, TTL 64, UDP.
        let ip = &mut f[ETH_LEN..ETH_LEN + IP_LEN];
        ip[0] = 0x45;
        ip[1] = 0;
        ip[2..4].copy_from_slice(&((len - ETH_LEN) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
        ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[10..12].copy_from_slice(&[0, 0]);
        let (sn, dn) = (self.src_net, self.dst_net);
        if self.var2 {
            let k = flow + 1;
            ip[12..16].copy_from_slice(&[sn[0], sn[1], (k >> 8) as u8, k as u8]);
            ip[16..20].copy_from_slice(&[dn[0], dn[1], (k >> 8) as u8, k as u8]);
        } else {
            ip[12..16].copy_from_slice(&[sn[0], sn[1], (flow >> 8) as u8, flow as u8]);
            ip[16..20].copy_from_slice(&[dn[0], dn[1], 0, 1]);
        }
        let sum = checksum(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        // UDP without checksum (allowed over IPv4).
        let udp = &mut f[ETH_LEN + IP_LEN..TEST_AT];
        let sport = if self.var2 {
            1025
        } else {
            1024 + (flow % 64512) as u16
        };
        udp[0..2].copy_from_slice(&sport.to_be_bytes());
        udp[2..4].copy_from_slice(&1024u16.to_be_bytes());
        udp[4..6].copy_from_slice(&((len - ETH_LEN - IP_LEN) as u16).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
        f[TEST_AT..TEST_AT + 2].copy_from_slice(&MAGIC.to_be_bytes());
        f[TEST_AT + 2..TS_AT].copy_from_slice(&(seq & SEQ_MASK).to_be_bytes()[2..]);
        f[TS_AT..FILL_AT].copy_from_slice(&tx_ns.to_be_bytes());
        let k = seq as u8;
        for (i, b) in f[FILL_AT..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_add(k);
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

/// The test header of a received frame, if it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub seq: u64,
    pub tx_ns: u64,
}

/// Read the test header; `None` for frames that are not ours.
pub fn stamp(frame: &[u8]) -> Option<Stamp> {
    let v = tags_len(frame);
    if frame.len() < FILL_AT + v
        || frame[12 + v..14 + v] != [0x08, 0x00]
        || frame[ETH_LEN + v + 9] != 17
    {
        return None;
    }
    if frame[TEST_AT + v..TEST_AT + v + 2] != MAGIC.to_be_bytes() {
        return None;
    }
    let mut s = [0u8; 8];
    s[2..].copy_from_slice(&frame[TEST_AT + v + 2..TS_AT + v]);
    let mut t = [0u8; 8];
    t.copy_from_slice(&frame[TS_AT + v..FILL_AT + v]);
    Some(Stamp {
        seq: u64::from_be_bytes(s),
        tx_ns: u64::from_be_bytes(t),
    })
}

/// Offsets a router changes: MAC addresses, TTL, header checksum.
const MACS: std::ops::Range<usize> = 0..12;
const TTL_AT: usize = ETH_LEN + 8;
const CSUM: std::ops::Range<usize> = ETH_LEN + 10..ETH_LEN + 12;

/// Whether `frame` is exactly the frame the profile sends for its stamp — or, for a routed
/// profile, that frame as a router forwards it (any MACs, TTL decremented, checksum right).
/// `scratch` avoids an allocation per frame.
pub fn verify(profile: &Profile, frame: &[u8], st: Stamp, scratch: &mut Vec<u8>) -> bool {
    profile.build(st.seq, st.tx_ns, scratch);
    if !profile.routed {
        return scratch.as_slice() == frame;
    }
    let v = 4 * profile.vlans.len();
    let (ttl, csum) = (TTL_AT + v, CSUM.start + v..CSUM.end + v);
    frame.len() == scratch.len()
        && frame[MACS.end..ttl] == scratch[MACS.end..ttl]
        && frame[ttl + 1..csum.start] == scratch[ttl + 1..csum.start]
        && frame[csum.end..] == scratch[csum.end..]
        && frame[ttl] < scratch[ttl]
        && frame[ttl] > 0
        && checksum(&frame[ETH_LEN + v..ETH_LEN + v + IP_LEN]) == 0
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

/// Flows in T-Rex's var2 profile: one per address of the /16, less the network address.
pub const VAR2_FLOWS: u32 = 65535;

/// T-Rex bench's IMIX: 60, 590 and 1514 bytes before FCS (64, 594, 1518 with it), 28:20:4.
pub const TREX_IMIX: [(usize, usize); 3] = [(64, 28), (594, 20), (1518, 4)];
/// The "simple IMIX": 64, 594 and 1518 bytes with FCS, 7:4:1.
pub const SIMPLE_IMIX: [(usize, usize); 3] = [(64, 7), (594, 4), (1518, 1)];

/// One cycle of a weighted mix with the sizes spread evenly through it (smooth weighted
/// round robin), so that any short window has nearly the stated ratio.
pub fn weighted_cycle(mix: &[(usize, usize)]) -> Vec<usize> {
    let total: i64 = mix.iter().map(|m| m.1 as i64).sum();
    let mut current = vec![0i64; mix.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, m) in current.iter_mut().zip(mix) {
            *c += m.1 as i64;
        }
        let best = (0..mix.len())
            .max_by_key(|&i| (current[i], -(i as i64)))
            .unwrap_or(0);
        current[best] -= total;
        out.push(mix[best].0);
    }
    out
}

/// Parse `--size`: a size, a comma list used in turn, `mixed` (64,128,256,512,1024,1514),
/// `imix` (T-Rex bench's) or `simple-imix`.
pub fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    match s {
        "imix" => return Ok(weighted_cycle(&TREX_IMIX)),
        "simple-imix" => return Ok(weighted_cycle(&SIMPLE_IMIX)),
        _ => {}
    }
    let list = if s == "mixed" {
        "64,128,256,512,1024,1514"
    } else {
        s
    };
    list.split(',')
        .map(|w| {
            let n: usize = w
                .trim()
                .parse()
                .map_err(|_| format!("--size: '{w}' is not a number"))?;
            if !(MIN_SIZE..=MAX_SIZE).contains(&n) {
                return Err(format!(
                    "--size: {n} is outside {MIN_SIZE}..={MAX_SIZE} (sizes include the 4-byte FCS)"
                ));
            }
            Ok(n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        Profile {
            sizes: vec![64, 1514, 9000],
            flows: 4,
            var2: false,
            src_net: [198, 18],
            dst_net: [198, 19],
            routed: false,
            src_mac: "02:00:00:00:00:01".parse().unwrap(),
            dst_mac: "02:00:00:00:00:02".parse().unwrap(),
            macs: 1,
            vlans: Vec::new(),
            vlan_spread: 1,
        }
    }

    #[test]
    fn vlan_tags_add_to_the_size_and_stamps_read_through_them() {
        let mut p = profile();
        p.vlans = vec![(0x88a8, 10), (0x8100, 20)];
        let mut f = Vec::new();
        p.build(3, 77, &mut f);
        assert_eq!(f.len(), p.frame_len(3));
        assert_eq!(f.len(), 60 + 8);
        assert_eq!(&f[12..22], &[0x88, 0xa8, 0, 10, 0x81, 0, 0, 20, 8, 0]);
        assert_eq!(stamp(&f), Some(Stamp { seq: 3, tx_ns: 77 }));
        let mut scratch = Vec::new();
        assert!(verify(&p, &f, Stamp { seq: 3, tx_ns: 77 }, &mut scratch));
    }

    /// With a spread, flow f's inner tag is the id + f % spread; the outer one stays.
    #[test]
    fn vlan_spread_gives_each_flow_its_tenant() {
        let mut p = profile();
        p.vlans = vec![(0x88a8, 10), (0x8100, 100)];
        p.vlan_spread = 3;
        let mut f = Vec::new();
        for seq in 0..8u64 {
            p.build(seq, 0, &mut f);
            let flow = seq % p.flows as u64;
            let vid = u16::from_be_bytes([f[18], f[19]]);
            assert_eq!(vid, 100 + (flow % 3) as u16, "seq {seq}");
            assert_eq!(&f[12..16], &[0x88, 0xa8, 0, 10]);
            assert!(verify(&p, &f, stamp(&f).unwrap(), &mut Vec::new()));
        }
    }

    #[test]
    fn macs_step_through_the_low_bytes() {
        let mut p = profile();
        p.macs = 1000;
        let mut f = Vec::new();
        p.build(1001, 0, &mut f);
        assert_eq!(&f[..12], &[2, 0, 0, 0, 0, 4, 2, 0, 0, 0, 0, 3]);
        p.build(999, 0, &mut f);
        assert_eq!(&f[..12], &[2, 0, 0, 0, 0x07, 0xd0, 2, 0, 0, 0, 0x07, 0xcf]);
        assert!(!p.macs_overlap(), "odd difference: apart");
        p.dst_mac = MacAddress([2, 0, 0, 0, 0, 9]);
        assert!(p.macs_overlap(), "01 + 2k meets 09 + 2j");
        p.dst_mac = MacAddress([2, 0, 0, 0x10, 0, 1]);
        assert!(!p.macs_overlap(), "far apart");
        assert_eq!(
            mac_plus(MacAddress([2, 0, 0, 0xff, 0xff, 0xff]), 2).0,
            [2, 0, 0, 0, 0, 1]
        );
    }

    #[test]
    fn sizes_exclude_fcs_and_checksum_verifies() {
        let p = profile();
        let mut f = Vec::new();
        for (seq, want) in [(0u64, 60usize), (1, 1510), (2, 8996)] {
            p.build(seq, 123, &mut f);
            assert_eq!(f.len(), want);
            // A correct header sums to zero with its checksum.
            assert_eq!(checksum(&f[14..34]), 0);
            assert_eq!(u16::from_be_bytes([f[16], f[17]]) as usize, want - 14);
        }
    }

    #[test]
    fn flows_vary_source() {
        let p = profile();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.build(0, 0, &mut a);
        p.build(1, 0, &mut b);
        assert_ne!(a[26..30], b[26..30]);
        p.build(4, 0, &mut b);
        assert_eq!(a[26..30], b[26..30], "flow repeats after 4");
    }

    /// The (source address, source port) of flow `k` among `flows`.
    fn source_of(flows: u32, k: u32) -> ([u8; 4], [u8; 2]) {
        let p = Profile { flows, ..profile() };
        let mut f = Vec::new();
        p.build(k as u64, 0, &mut f);
        (f[26..30].try_into().unwrap(), f[34..36].try_into().unwrap())
    }

    /// Flows whose address or port alone would repeat (65 536 apart: the same address;
    /// 64 512 apart: the same port) still differ by the other, up to `MAX_FLOWS`, where the
    /// pair of flow 0 comes back.
    #[test]
    fn a_million_flows_are_a_million_tuples() {
        let n = MAX_FLOWS;
        for k in [0, 1, 999, 64_511, 300_000] {
            for step in [65_536, 64_512, 65_536 * 7, 64_512 * 11] {
                let (a, b) = (source_of(n, k), source_of(n, k + step));
                assert_ne!(a, b, "flows {k} and {}", k + step);
            }
        }
        let mut seen = std::collections::HashSet::new();
        for k in (0..1_000_000).step_by(97) {
            assert!(seen.insert(source_of(n, k)), "flow {k}");
        }
        let mut f = Vec::new();
        let p = Profile {
            flows: n + 1,
            ..profile()
        };
        p.build(n as u64, 0, &mut f);
        let wrapped: ([u8; 4], [u8; 2]) =
            (f[26..30].try_into().unwrap(), f[34..36].try_into().unwrap());
        assert_eq!(wrapped, source_of(n, 0), "the pairs repeat at MAX_FLOWS");
    }

    #[test]
    fn verify_accepts_good_and_rejects_flipped_byte() {
        let p = profile();
        let mut f = Vec::new();
        let mut scratch = Vec::new();
        p.build(77, 999, &mut f);
        let st = stamp(&f).unwrap();
        assert_eq!(
            st,
            Stamp {
                seq: 77,
                tx_ns: 999
            }
        );
        assert!(verify(&p, &f, st, &mut scratch));
        for at in [0, 20, 40, 60, f.len() - 1] {
            let mut bad = f.clone();
            bad[at] ^= 0x10;
            let ok = stamp(&bad)
                .map(|s| verify(&p, &bad, s, &mut scratch))
                .unwrap_or(false);
            assert!(!ok, "flip at {at} not caught");
        }
        assert!(stamp(&f[..40]).is_none());
    }

    #[test]
    fn a_sampled_check_catches_wrong_lengths_and_a_full_one_every_byte() {
        let mut p = profile();
        p.sizes = vec![64, 128];
        let (mut f, mut scratch) = (Vec::new(), Vec::new());
        p.build(3, 5, &mut f);
        let st = stamp(&f).unwrap();
        assert!(check(&p, &f, st, false, &mut scratch));
        assert!(check(&p, &f, st, true, &mut scratch));
        // Frame 3 is 128 bytes with FCS: cut short, both checks see it.
        assert!(!check(&p, &f[..f.len() - 4], st, false, &mut scratch));
        assert!(!check(&p, &f[..f.len() - 4], st, true, &mut scratch));
        // A flipped payload byte: only the full check compares bytes.
        let last = f.len() - 1;
        f[last] ^= 1;
        assert!(check(&p, &f, st, false, &mut scratch));
        assert!(!check(&p, &f, st, true, &mut scratch));
    }

    #[test]
    fn var2_varies_source_and_destination() {
        let mut p = profile();
        p.var2 = true;
        p.flows = VAR2_FLOWS;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.build(0, 0, &mut a);
        p.build(300, 0, &mut b);
        assert_eq!(a[26..34], [198, 18, 0, 1, 198, 19, 0, 1]);
        assert_eq!(b[26..34], [198, 18, 1, 45, 198, 19, 1, 45]);
        p.build(VAR2_FLOWS as u64, 0, &mut b);
        assert_eq!(a[26..34], b[26..34], "wraps after the /16");
    }

    #[test]
    fn imix_cycles_have_the_stated_ratio_spread_out() {
        let c = weighted_cycle(&TREX_IMIX);
        assert_eq!(c.len(), 52);
        assert_eq!(c.iter().filter(|&&s| s == 64).count(), 28);
        assert_eq!(c.iter().filter(|&&s| s == 594).count(), 20);
        assert_eq!(c.iter().filter(|&&s| s == 1518).count(), 4);
        // Spread: no run of more than two equal sizes.
        assert!(
            c.windows(3).all(|w| !(w[0] == w[1] && w[1] == w[2])),
            "{c:?}"
        );
        let s = parse_sizes("simple-imix").unwrap();
        assert_eq!(s.len(), 12);
        assert_eq!(s.iter().filter(|&&x| x == 1518).count(), 1);
    }

    #[test]
    fn routed_verification_accepts_a_routers_rewrite_only() {
        let mut p = profile();
        p.routed = true;
        let mut f = Vec::new();
        let mut scratch = Vec::new();
        p.build(5, 1, &mut f);
        let st = stamp(&f).unwrap();
        // As a router forwards it: new MACs, TTL 63, checksum updated.
        let mut routed = f.clone();
        routed[0..12].copy_from_slice(&[9; 12]);
        routed[22] = 63;
        routed[24..26].copy_from_slice(&[0, 0]);
        let sum = checksum(&routed[14..34]);
        routed[24..26].copy_from_slice(&sum.to_be_bytes());
        assert!(verify(&p, &routed, st, &mut scratch));
        // Unchanged TTL, a stale checksum, or a changed payload are not a router's doing.
        assert!(!verify(&p, &f, st, &mut scratch));
        let mut stale = routed.clone();
        stale[22] = 62;
        assert!(!verify(&p, &stale, st, &mut scratch));
        let mut payload = routed.clone();
        payload[50] ^= 1;
        assert!(!verify(&p, &payload, st, &mut scratch));
    }

    #[test]
    fn size_parsing() {
        assert_eq!(parse_sizes("64").unwrap(), vec![64]);
        assert_eq!(parse_sizes("64,1514").unwrap(), vec![64, 1514]);
        assert_eq!(parse_sizes("mixed").unwrap().len(), 6);
        assert!(parse_sizes("63").is_err());
        assert!(parse_sizes("9019").is_err());
        assert!(parse_sizes("64,x").is_err());
    }
}
