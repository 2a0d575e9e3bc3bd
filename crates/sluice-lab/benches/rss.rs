//! What the software RSS hash costs: `cargo bench --bench rss`.
//!
//! The Toeplitz hash of 1 024 different IPv4 4-tuples (12 bytes), IPv4 2-tuples and IPv6
//! 4-tuples (36 bytes) again and again, and of as many UDP frames (parsed as the handoff
//! node does), with the standard key and the symmetric one (hashed from a 16-bit fold);
//! clocks per hash by the TSC, median of 5 runs of 0.3 s. Issue 18's goal for the hash is 15
//! clocks or fewer.

use sluice::rss::{Toeplitz, STANDARD_KEY, SYMMETRIC_KEY};
use sluice::sys::tsc;
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

const TUPLES: usize = 1024;

/// Clocks per call of `f` over the tuple indices, median of 5 runs.
fn clocks(mut f: impl FnMut(usize) -> u32) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let (start, t0) = (Instant::now(), tsc::now());
            let mut n = 0u64;
            let mut acc = 0u32;
            while start.elapsed() < Duration::from_millis(300) {
                for k in 0..TUPLES {
                    acc ^= f(k);
                }
                n += TUPLES as u64;
            }
            black_box(acc);
            (tsc::now() - t0) as f64 / n as f64
        })
        .collect();
    runs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    runs[2]
}

/// An untagged Ethernet frame carrying `ip` (`ethertype` 0x0800 or 0x86dd).
fn frame(ethertype: u16, ip: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

fn udp4(a: Ipv4Addr, b: Ipv4Addr, p: u16, q: u16) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&a.octets());
    ip.extend_from_slice(&b.octets());
    ip.extend_from_slice(&p.to_be_bytes());
    ip.extend_from_slice(&q.to_be_bytes());
    ip.extend_from_slice(&[0, 8, 0, 0]);
    frame(0x0800, &ip)
}

fn udp6(a: Ipv6Addr, b: Ipv6Addr, p: u16, q: u16) -> Vec<u8> {
    let mut ip = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
    ip.extend_from_slice(&a.octets());
    ip.extend_from_slice(&b.octets());
    ip.extend_from_slice(&p.to_be_bytes());
    ip.extend_from_slice(&q.to_be_bytes());
    ip.extend_from_slice(&[0, 8, 0, 0]);
    frame(0x86dd, &ip)
}

fn main() {
    let v4: Vec<(Ipv4Addr, Ipv4Addr, u16, u16)> = (0..TUPLES as u32)
        .map(|k| {
            let a = Ipv4Addr::from(0xc612_0000 + k * 7919);
            let b = Ipv4Addr::from(0xc613_0000 + k * 104_729);
            (a, b, 1024 + k as u16, 80)
        })
        .collect();
    let v6: Vec<(Ipv6Addr, Ipv6Addr)> = v4
        .iter()
        .map(|&(a, b, _, _)| (a.to_ipv6_mapped(), b.to_ipv6_mapped()))
        .collect();
    let frames4: Vec<Vec<u8>> = v4.iter().map(|&(a, b, p, q)| udp4(a, b, p, q)).collect();
    let frames6: Vec<Vec<u8>> = v6
        .iter()
        .zip(&v4)
        .map(|(&(a, b), &(_, _, p, q))| udp6(a, b, p, q))
        .collect();
    println!("toeplitz, 1 core, median of 5 runs, clocks per hash:");
    for (name, key) in [("standard", &STANDARD_KEY), ("symmetric", &SYMMETRIC_KEY)] {
        let t = Toeplitz::new(key);
        let four = clocks(|k| {
            let (a, b, p, q) = black_box(v4[k]);
            t.v4_ports(a, b, p, q)
        });
        let two = clocks(|k| {
            let (a, b, _, _) = black_box(v4[k]);
            t.v4(a, b)
        });
        let six = clocks(|k| {
            let (a, b) = black_box(v6[k]);
            t.v6_ports(a, b, 1024, 80)
        });
        let f4 = clocks(|k| t.frame(black_box(&frames4[k])));
        let f6 = clocks(|k| t.frame(black_box(&frames6[k])));
        println!("  {name} key");
        println!("    IPv4 4-tuple (12 bytes)            {four:6.1}");
        println!("    IPv4 2-tuple (8 bytes)             {two:6.1}");
        println!("    IPv6 4-tuple (36 bytes)            {six:6.1}");
        println!("    IPv4 UDP frame (parse and hash)    {f4:6.1}");
        println!("    IPv6 UDP frame (parse and hash)    {f6:6.1}");
    }
}
