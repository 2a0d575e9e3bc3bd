//! A fast hasher for keys that the program, not a peer, chooses (multiply and rotate, as
//! rustc's FxHash): SipHash's resistance to chosen collisions is not needed there, and costs
//! ~20 ns a key. Used for the ACL classifier's rule keys and the FIB writer's pending nodes.

use std::hash::{BuildHasherDefault, Hasher};

/// The hasher's state: one word.
#[derive(Default)]
pub struct FastHasher(u64);

/// For `HashMap::with_hasher` / `HashSet::default`.
pub type FastBuild = BuildHasherDefault<FastHasher>;

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn equal_keys_hash_equal_and_near_keys_apart() {
        let b = FastBuild::default();
        assert_eq!(b.hash_one(7u32), b.hash_one(7u32));
        assert_ne!(b.hash_one(7u32), b.hash_one(8u32));
        // The top bits (what hashbrown's control bytes take) differ for consecutive keys.
        let tops: std::collections::HashSet<u64> =
            (0u32..1000).map(|k| b.hash_one(k) >> 57).collect();
        assert!(tops.len() > 64, "{} distinct top-7-bit values", tops.len());
    }
}
