//! Receive-side scaling in software: the Toeplitz hash that NICs compute over a packet's
//! addresses (and ports) to choose its queue, for devices that have fewer queues than
//! workers (veth, a memif with one ring, pcap) and to keep a flow on one worker.
//!
//! The hash of an input of n bits is the XOR, over every set input bit i (first byte's top
//! bit first), of the 32 key bits starting at bit i of the key. A 40-byte key covers inputs
//! up to 36 bytes: an IPv6 4-tuple. Instead of walking bits, the key is expanded once into a
//! table per input byte position (256 entries: the XOR for every value of that byte), so a
//! hash is one load and one XOR per input byte — 12 for an IPv4 4-tuple.
//!
//! Inputs are laid out as NICs do: source address, destination address, source port,
//! destination port, all in network byte order.

mod flow;
pub use flow::{flow_fields, flow_input, FlowFields};

use std::net::{Ipv4Addr, Ipv6Addr};

/// The key most NICs and drivers start with (Microsoft's RSS documentation).
pub const STANDARD_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// A key whose 16-bit halves repeat (0x6d5a): swapping source and destination (addresses
/// and ports alike) leaves the hash unchanged, so both directions of a flow meet on one
/// worker (Woo and Park's symmetric RSS).
pub const SYMMETRIC_KEY: [u8; 40] = {
    let mut k = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        k[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    k
};

/// The longest input a 40-byte key hashes: an IPv6 4-tuple.
pub const MAX_INPUT: usize = 36;

/// A Toeplitz hash with its key expanded for byte-at-a-time hashing.
pub struct Toeplitz {
    /// `tables[i][v]`: the hash contribution of byte value `v` at input position `i`.
    tables: Box<[[u32; 256]; MAX_INPUT]>,
    /// The key repeats every 16 bits (the symmetric key): see `fold16`.
    period16: bool,
}

impl Toeplitz {
    pub fn new(key: &[u8; 40]) -> Toeplitz {
        let mut tables = Box::new([[0u32; 256]; MAX_INPUT]);
        for (pos, table) in tables.iter_mut().enumerate() {
            // The 32-bit key window of each of this byte's 8 bits, top bit first.
            let windows: [u32; 8] = std::array::from_fn(|b| window(key, pos * 8 + b));
            for (v, entry) in table.iter_mut().enumerate() {
                *entry = (0..8)
                    .filter(|b| v & (0x80 >> b) != 0)
                    .fold(0, |h, b| h ^ windows[b]);
            }
        }
        let period16 = key.iter().enumerate().all(|(i, &b)| b == key[i % 2]);
        Toeplitz { tables, period16 }
    }

    /// Whether this key repeats every 16 bits, so that `fold16` hashes with it.
    pub fn is_period16(&self) -> bool {
        self.period16
    }

    /// The hash of an input given as its 16-bit fold (`fold16`), for a key that repeats every
    /// 16 bits. A byte's contribution depends on its position only through the key window
    /// there, which such a key repeats every two bytes; and a table is linear in its byte
    /// (XOR of bytes, XOR of contributions). So every even-positioned byte can be XORed into
    /// one and every odd-positioned byte into another, and two table reads hash the whole
    /// input, however long: an IPv6 4-tuple costs what an IPv4 2-tuple does.
    #[inline]
    pub fn hash_folded(&self, fold: u16) -> u32 {
        debug_assert!(self.period16);
        let [even, odd] = fold.to_be_bytes();
        self.tables[0][even as usize] ^ self.tables[1][odd as usize]
    }

    /// The hash of `input` (at most `MAX_INPUT` bytes; any more are not hashed).
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        if self.period16 {
            return self.hash_folded(fold16(input));
        }
        self.hash_at(0, input)
    }

    /// The part of a hash that `bytes` at input position `at` contribute: a hash over fields
    /// apart is the XOR of their parts. The lengths of flow fields (4, 8 and 32 bytes) are
    /// hashed by unrolled code with one bounds check.
    #[inline]
    pub fn hash_at(&self, at: usize, bytes: &[u8]) -> u32 {
        match bytes.len() {
            0 => 0,
            4 => self.hash_fixed::<4>(at, bytes),
            8 => self.hash_fixed::<8>(at, bytes),
            32 => self.hash_fixed::<32>(at, bytes),
            _ => {
                let tables = self.tables.get(at..).unwrap_or(&[]);
                bytes
                    .iter()
                    .zip(tables.iter())
                    .fold(0, |h, (&byte, table)| h ^ table[byte as usize])
            }
        }
    }

    #[inline(always)]
    fn hash_fixed<const N: usize>(&self, at: usize, bytes: &[u8]) -> u32 {
        let (Some(tables), Ok(bytes)) = (self.tables.get(at..at + N), <&[u8; N]>::try_from(bytes))
        else {
            return 0;
        };
        let mut h = 0;
        for i in 0..N {
            h ^= tables[i][bytes[i] as usize];
        }
        h
    }

    /// IPv4 source and destination: the 2-tuple hash.
    #[inline]
    pub fn v4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> u32 {
        let mut input = [0u8; 8];
        input[..4].copy_from_slice(&src.octets());
        input[4..].copy_from_slice(&dst.octets());
        self.hash(&input)
    }

    /// IPv4 addresses and TCP/UDP ports: the 4-tuple hash.
    #[inline]
    pub fn v4_ports(&self, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16) -> u32 {
        let mut input = [0u8; 12];
        input[..4].copy_from_slice(&src.octets());
        input[4..8].copy_from_slice(&dst.octets());
        input[8..10].copy_from_slice(&sport.to_be_bytes());
        input[10..].copy_from_slice(&dport.to_be_bytes());
        self.hash(&input)
    }

    /// IPv6 source and destination: the 2-tuple hash.
    #[inline]
    pub fn v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> u32 {
        let mut input = [0u8; 32];
        input[..16].copy_from_slice(&src.octets());
        input[16..].copy_from_slice(&dst.octets());
        self.hash(&input)
    }

    /// IPv6 addresses and TCP/UDP ports: the 4-tuple hash.
    #[inline]
    pub fn v6_ports(&self, src: Ipv6Addr, dst: Ipv6Addr, sport: u16, dport: u16) -> u32 {
        let mut input = [0u8; 36];
        input[..16].copy_from_slice(&src.octets());
        input[16..32].copy_from_slice(&dst.octets());
        input[32..34].copy_from_slice(&sport.to_be_bytes());
        input[34..].copy_from_slice(&dport.to_be_bytes());
        self.hash(&input)
    }
}

/// The XOR of `bytes` taken as big-endian 16-bit words (an odd last byte as the high half
/// of a word): what `hash_folded` hashes. Fields that start at even input positions fold
/// apart and XOR together.
#[inline]
pub fn fold16(bytes: &[u8]) -> u16 {
    // The lengths of flow fields first, with fixed-size loads.
    let fold32 = |x: u32| (x >> 16) as u16 ^ x as u16;
    let fold64 = |x: u64| fold32((x >> 32) as u32 ^ x as u32);
    match bytes.len() {
        0 => return 0,
        4 => return fold32(u32::from_be_bytes(bytes.try_into().unwrap_or_default())),
        8 => return fold64(u64::from_be_bytes(bytes.try_into().unwrap_or_default())),
        _ => {}
    }
    let mut wide = 0u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        wide ^= u64::from_be_bytes(w.try_into().unwrap_or_default());
    }
    let mut x = (wide >> 32) as u32 ^ wide as u32;
    let mut rest = words.remainder().chunks_exact(4);
    for w in &mut rest {
        x ^= u32::from_be_bytes(w.try_into().unwrap_or_default());
    }
    let mut fold = (x >> 16) as u16 ^ x as u16;
    for w in rest.remainder().chunks(2) {
        fold ^= u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)]);
    }
    fold
}

/// The 32 key bits starting at bit `bit` (the key's first byte's top bit is bit 0); bits past
/// the key's end are zero.
fn window(key: &[u8; 40], bit: usize) -> u32 {
    (0..32).fold(0u32, |w, k| {
        let at = bit + k;
        let set = key
            .get(at / 8)
            .is_some_and(|byte| byte & (0x80 >> (at % 8)) != 0);
        (w << 1) | set as u32
    })
}

/// The hash the plain definition gives, bit by bit: the reference the tables are held to.
#[cfg(test)]
fn bitwise(key: &[u8; 40], input: &[u8]) -> u32 {
    let mut h = 0;
    for (i, &byte) in input.iter().enumerate() {
        for b in 0..8 {
            if byte & (0x80 >> b) != 0 {
                h ^= window(key, i * 8 + b);
            }
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v4(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }
    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// Microsoft's RSS verification suite for IPv4: (destination, destination port, source,
    /// source port, the 2-tuple hash, the 4-tuple hash) with the standard key.
    const IPV4_VECTORS: [(&str, u16, &str, u16, u32, u32); 5] = [
        (
            "161.142.100.80",
            1766,
            "66.9.149.187",
            2794,
            0x323e_8fc2,
            0x51cc_c178,
        ),
        (
            "65.69.140.83",
            4739,
            "199.92.111.2",
            14230,
            0xd718_262a,
            0xc626_b0ea,
        ),
        (
            "12.22.207.184",
            38024,
            "24.19.198.95",
            12898,
            0xd2d0_a5de,
            0x5c2b_394a,
        ),
        (
            "209.142.163.6",
            2217,
            "38.27.205.30",
            48228,
            0x8298_9176,
            0xafc7_327f,
        ),
        (
            "202.188.127.2",
            1303,
            "153.39.163.191",
            44251,
            0x5d18_09c5,
            0x10e8_28a2,
        ),
    ];

    /// The same for IPv6.
    const IPV6_VECTORS: [(&str, u16, &str, u16, u32, u32); 3] = [
        (
            "3ffe:2501:200:3::1",
            1766,
            "3ffe:2501:200:1fff::7",
            2794,
            0x2cc1_8cd5,
            0x4020_7d3d,
        ),
        (
            "ff02::1",
            4739,
            "3ffe:501:8::260:97ff:fe40:efab",
            14230,
            0x0f0c_461c,
            0xdde5_1bbf,
        ),
        (
            "fe80::200:f8ff:fe21:67cf",
            38024,
            "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
            44251,
            0x4b61_e985,
            0x02d1_feef,
        ),
    ];

    #[test]
    fn microsoft_ipv4_vectors() {
        let t = Toeplitz::new(&STANDARD_KEY);
        for (dst, dport, src, sport, two, four) in IPV4_VECTORS {
            assert_eq!(t.v4(v4(src), v4(dst)), two, "{src} -> {dst}");
            assert_eq!(
                t.v4_ports(v4(src), v4(dst), sport, dport),
                four,
                "{src} -> {dst}"
            );
        }
    }

    #[test]
    fn microsoft_ipv6_vectors() {
        let t = Toeplitz::new(&STANDARD_KEY);
        for (dst, dport, src, sport, two, four) in IPV6_VECTORS {
            assert_eq!(t.v6(v6(src), v6(dst)), two, "{src} -> {dst}");
            assert_eq!(
                t.v6_ports(v6(src), v6(dst), sport, dport),
                four,
                "{src} -> {dst}"
            );
        }
    }

    #[test]
    fn only_keys_that_repeat_every_16_bits_fold() {
        assert!(Toeplitz::new(&SYMMETRIC_KEY).is_period16());
        assert!(!Toeplitz::new(&STANDARD_KEY).is_period16());
        let mut almost = SYMMETRIC_KEY;
        almost[39] ^= 1;
        assert!(!Toeplitz::new(&almost).is_period16());
    }

    #[test]
    fn the_standard_key_is_not_symmetric() {
        let t = Toeplitz::new(&STANDARD_KEY);
        let (a, b) = (v4("66.9.149.187"), v4("161.142.100.80"));
        assert_ne!(t.v4_ports(a, b, 2794, 1766), t.v4_ports(b, a, 1766, 2794));
    }

    proptest! {
        /// The tables give what the definition gives, for any key and input.
        #[test]
        fn tables_equal_the_bitwise_definition(
            key in any::<[u8; 32]>(), tail in any::<[u8; 8]>(),
            input in proptest::collection::vec(any::<u8>(), 0..=MAX_INPUT),
        ) {
            let mut k = [0u8; 40];
            k[..32].copy_from_slice(&key);
            k[32..].copy_from_slice(&tail);
            prop_assert_eq!(Toeplitz::new(&k).hash_at(0, &input), bitwise(&k, &input));
        }

        /// A key that repeats every 16 bits hashes any input from its fold; in pieces that
        /// start at even positions too.
        #[test]
        fn the_fold_hashes_as_the_tables_do(
            half in any::<[u8; 2]>(),
            input in proptest::collection::vec(any::<u8>(), 0..=MAX_INPUT),
            cut in 0usize..=MAX_INPUT / 2,
        ) {
            let key: [u8; 40] = std::array::from_fn(|i| half[i % 2]);
            let t = Toeplitz::new(&key);
            prop_assert!(t.is_period16());
            let tables = t.hash_at(0, &input);
            prop_assert_eq!(t.hash_folded(fold16(&input)), tables);
            prop_assert_eq!(t.hash(&input), tables);
            prop_assert_eq!(tables, bitwise(&key, &input));
            let cut = (cut * 2).min(input.len());
            let (a, b) = input.split_at(cut);
            prop_assert_eq!(t.hash_folded(fold16(a) ^ fold16(b)), tables);
        }

        /// With the symmetric key both directions of a flow hash alike.
        #[test]
        fn the_symmetric_key_gives_both_directions_one_hash(
            a in any::<[u8; 4]>(), b in any::<[u8; 4]>(), p in any::<u16>(), q in any::<u16>(),
            a6 in any::<[u8; 16]>(), b6 in any::<[u8; 16]>(),
        ) {
            let t = Toeplitz::new(&SYMMETRIC_KEY);
            let (a, b) = (Ipv4Addr::from(a), Ipv4Addr::from(b));
            prop_assert_eq!(t.v4(a, b), t.v4(b, a));
            prop_assert_eq!(t.v4_ports(a, b, p, q), t.v4_ports(b, a, q, p));
            let (a6, b6) = (Ipv6Addr::from(a6), Ipv6Addr::from(b6));
            prop_assert_eq!(t.v6_ports(a6, b6, p, q), t.v6_ports(b6, a6, q, p));
        }
    }
}
