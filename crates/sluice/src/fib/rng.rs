//! A deterministic random generator for the FIB's tests and the tester's synthetic tables.

use super::prefix::{Prefix4, Prefix6};

/// SplitMix64: small, fast and good enough to shape tables and pick test addresses.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    pub fn next_u128(&mut self) -> u128 {
        ((self.next_u64() as u128) << 64) | self.next_u64() as u128
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((self.next_u64() as u128 * n as u128) >> 64) as u64
        }
    }

    /// A prefix within the low `spread_bits` of `base`, mostly /8 to /32 (a short one, which
    /// repaints up to 2^24 cells, rarely, as in real tables).
    pub fn prefix4_near(&mut self, base: u32, spread_bits: u32) -> Prefix4 {
        let a = base ^ (self.next_u32() >> (32 - spread_bits));
        let len = if self.below(50) == 0 {
            self.below(8)
        } else {
            8 + self.below(25)
        };
        Prefix4::containing(a, len as u8)
    }

    /// A prefix within the low `spread_bits` of `base`, of every length, the long ones that
    /// need deep nodes often enough.
    pub fn prefix6_near(&mut self, base: u128, spread_bits: u32) -> Prefix6 {
        let a = base ^ (self.next_u128() >> (128 - spread_bits));
        Prefix6::containing(
            a,
            (128 - self.below(129) as u32 * self.below(2) as u32) as u8,
        )
    }
}
