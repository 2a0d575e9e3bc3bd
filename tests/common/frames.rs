//! Frames and capture files for the tests that replay a pcap through the dataplane.

use sluice::drivers::pcap::file::Writer;
use std::path::Path;

/// A frame of `len` bytes from 02:..:01 to 02:..:02, IPv4 type, seeded payload (a frame
/// shorter than the Ethernet header keeps what fits of it).
pub fn frame(len: usize, seed: u32) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len as u32)
        .map(|i| (i.wrapping_mul(31) ^ seed) as u8)
        .collect();
    let h = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let n = len.min(14);
    f[..n].copy_from_slice(&h[..n]);
    f
}

/// A capture of one 64-byte frame at `path`: what gives a pcap interface a receive queue.
pub fn one_frame_pcap(path: &Path) {
    let mut w = Writer::create(path).unwrap();
    w.write(0, &[0x02; 64]).unwrap();
    w.flush().unwrap();
}

/// `frames` as a pcap file at `path`, a microsecond apart.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = Writer::create(path).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write(1_700_000_000_000_000_000 + i as u64 * 1000, f)
            .unwrap();
    }
    w.flush().unwrap();
}
