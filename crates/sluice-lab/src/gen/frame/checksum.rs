//! The Internet checksum of the TCP and UDP segments the generator builds (RFC 1071), with
//! the fill pattern summed in closed form: a 1518-byte frame costs about as much as a 64-byte
//! one, so that checksums do not slow the sender.

/// One's-complement sum of `bytes` as big-endian 16-bit words (an odd last byte is the high
/// half of a word), not folded.
pub fn sum(bytes: &[u8]) -> u64 {
    let mut s = 0u64;
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        s += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = words.remainder() {
        s += (*last as u64) << 8;
    }
    s
}

/// The sum of `n` bytes of fill, byte `i` being `(i + k) mod 256`, starting at an even
/// offset of the summed data.
pub fn fill_sum(n: usize, k: u8) -> u64 {
    // 256 bytes repeat the pattern: the bytes at even positions are the 128 values of k's
    // parity, those at odd positions the 128 others.
    let (evens, odds) = (16_256u64, 16_384u64);
    let (high, low) = if k.is_multiple_of(2) {
        (evens, odds)
    } else {
        (odds, evens)
    };
    let blocks = (n / 256) as u64;
    let mut s = blocks * (256 * high + low);
    let rest = n % 256;
    let mut i = 0;
    while i + 1 < rest {
        let a = (i as u8).wrapping_add(k) as u64;
        s += (a << 8) | (a.wrapping_add(1) & 0xff);
        i += 2;
    }
    if i < rest {
        s += ((i as u8).wrapping_add(k) as u64) << 8;
    }
    s
}

/// Fold a sum to 16 bits and complement it: the checksum field's value.
pub fn finish(mut s: u64) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fill_sum_is_the_sum_of_the_fill() {
        for n in [0, 1, 2, 3, 12, 255, 256, 257, 511, 1460, 8940] {
            for k in [0u8, 1, 2, 77, 254, 255] {
                let fill: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_add(k)).collect();
                assert_eq!(
                    finish(fill_sum(n, k)),
                    finish(sum(&fill)),
                    "{n} bytes from {k}"
                );
            }
        }
    }
}
