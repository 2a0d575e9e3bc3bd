//! Lookup-rate measurement shared by `sluice fib bench` and `cargo bench --bench fib`: batched
//! lookups of 256 destinations (a frame) at a time over a pre-made address list, one core.

use super::prefix::{Prefix4, Prefix6};
use super::synth::Rng;
use super::{Fib, FibWriter};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Destinations per batch, as in one frame of the dataplane.
pub const BATCH: usize = 256;

/// Uniformly random IPv4 destinations.
pub fn random_v4(n: usize, rng: &mut Rng) -> Vec<u32> {
    (0..n).map(|_| rng.next_u32()).collect()
}

/// Destinations inside randomly chosen routes (every lookup hits), at random offsets.
pub fn hitting_v4(routes: &[Prefix4], n: usize, rng: &mut Rng) -> Vec<u32> {
    if routes.is_empty() {
        return random_v4(n, rng);
    }
    (0..n)
        .map(|_| {
            let p = routes[rng.below(routes.len() as u64) as usize];
            p.addr() | (rng.next_u32() & (p.addr() ^ p.last()))
        })
        .collect()
}

/// Random IPv6 destinations in 2000::/3 (outside it a table has almost nothing to find).
pub fn random_v6(n: usize, rng: &mut Rng) -> Vec<u128> {
    (0..n)
        .map(|_| (1u128 << 125) | (rng.next_u128() >> 3))
        .collect()
}

pub fn hitting_v6(routes: &[Prefix6], n: usize, rng: &mut Rng) -> Vec<u128> {
    if routes.is_empty() {
        return random_v6(n, rng);
    }
    (0..n)
        .map(|_| {
            let p = routes[rng.below(routes.len() as u64) as usize];
            p.addr() | (rng.next_u128() & (p.addr() ^ p.last()))
        })
        .collect()
}

/// Runs `batch` over successive 256-address slices of `dst`, round and round, for about
/// `time`; returns lookups/s.
fn rate<T>(dst: &[T], time: Duration, mut batch: impl FnMut(&[T], &mut [u32])) -> f64 {
    if dst.is_empty() {
        return 0.0;
    }
    let mut out = [0u32; BATCH];
    let start = Instant::now();
    let (mut done, mut pos) = (0u64, 0usize);
    loop {
        // Read the clock once per 64 batches (16 k lookups, tens of microseconds).
        for _ in 0..64 {
            let end = (pos + BATCH).min(dst.len());
            batch(black_box(&dst[pos..end]), &mut out[..end - pos]);
            black_box(&out);
            done += (end - pos) as u64;
            pos = if end == dst.len() { 0 } else { end };
        }
        let elapsed = start.elapsed();
        if elapsed >= time {
            return done as f64 / elapsed.as_secs_f64();
        }
    }
}

pub fn rate_v4(fib: &Fib, dst: &[u32], time: Duration) -> f64 {
    rate(dst, time, |d, o| fib.v4().lookup_batch(d, o))
}

pub fn rate_v6(fib: &Fib, dst: &[u128], time: Duration) -> f64 {
    rate(dst, time, |d, o| fib.v6().lookup_batch(d, o))
}

/// Route changes per second through `FibWriter`, commits included: `n` times, delete a random
/// route of `routes` and add it back with another next hop, committing every `per_commit`
/// changes. Both families' routes must already be in `w`.
pub fn update_rate(
    w: &mut FibWriter,
    v4: &[(Prefix4, u32)],
    v6: &[(Prefix6, u32)],
    n: usize,
    per_commit: usize,
    rng: &mut Rng,
) -> f64 {
    let start = Instant::now();
    let mut changes = 0usize;
    for i in 0..n {
        if !v4.is_empty() && (v6.is_empty() || i % 2 == 0) {
            let (p, nh) = v4[rng.below(v4.len() as u64) as usize];
            w.del4(p);
            let _ = w.add4(p, nh ^ 1);
            changes += 2;
        } else if !v6.is_empty() {
            let (p, nh) = v6[rng.below(v6.len() as u64) as usize];
            w.del6(p);
            let _ = w.add6(p, nh ^ 1);
            changes += 2;
        }
        if i % per_commit.max(1) == 0 {
            w.commit();
        }
    }
    w.commit();
    changes as f64 / start.elapsed().as_secs_f64()
}
