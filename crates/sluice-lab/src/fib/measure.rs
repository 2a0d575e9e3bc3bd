//! Lookup-rate measurement shared by `sluice fib bench` and `cargo bench --bench fib`: batched
//! lookups of 256 destinations (a frame) at a time over a pre-made address list (see
//! `destinations`), one core; which share of a list matches a route; the machine facts that
//! say what a figure means (last-level cache size, resident memory).

use super::legacy::StrideFibWriter;
use super::synth::Rng;
use sluice::fib::prefix::{Prefix4, Prefix6};
use sluice::fib::{Fib, FibError, FibWriter, NO_ROUTE};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Destinations per batch, as in one frame of the dataplane.
pub const BATCH: usize = 256;

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

/// Lookups/s of any batched lookup over `dst`, as `rate_v4` measures the FIB's.
pub fn rate_batches<T>(dst: &[T], time: Duration, batch: impl FnMut(&[T], &mut [u32])) -> f64 {
    rate(dst, time, batch)
}

pub fn rate_v4(fib: &Fib, dst: &[u32], time: Duration) -> f64 {
    rate(dst, time, |d, o| fib.v4().lookup_batch(d, o))
}

pub fn rate_v6(fib: &Fib, dst: &[u128], time: Duration) -> f64 {
    rate(dst, time, |d, o| fib.v6().lookup_batch(d, o))
}

/// The share of `dst` (0 to 1) for which `batch` finds a route.
pub fn matched_batches<T>(dst: &[T], mut batch: impl FnMut(&[T], &mut [u32])) -> f64 {
    let mut out = [0u32; BATCH];
    let mut found = 0usize;
    for chunk in dst.chunks(BATCH) {
        batch(chunk, &mut out[..chunk.len()]);
        found += out[..chunk.len()]
            .iter()
            .filter(|&&r| r != NO_ROUTE)
            .count();
    }
    found as f64 / dst.len().max(1) as f64
}

pub fn matched_v4(fib: &Fib, dst: &[u32]) -> f64 {
    matched_batches(dst, |d, o| fib.v4().lookup_batch(d, o))
}

pub fn matched_v6(fib: &Fib, dst: &[u128]) -> f64 {
    matched_batches(dst, |d, o| fib.v6().lookup_batch(d, o))
}

/// The median of `runs` measurements by `one` (one at least).
pub fn median_rate(runs: usize, mut one: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..runs.max(1)).map(|_| one()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The last-level cache of CPU 0 in bytes, from sysfs (None where it does not say).
pub fn last_level_cache_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|e| {
        let path = e.ok()?.path();
        let level: u32 = std::fs::read_to_string(path.join("level"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let size = std::fs::read_to_string(path.join("size")).ok()?;
        let size = size.trim();
        let bytes: usize = match size.strip_suffix('K') {
            Some(k) => k.parse::<usize>().ok()? << 10,
            None => match size.strip_suffix('M') {
                Some(m) => m.parse::<usize>().ok()? << 20,
                None => size.parse().ok()?,
            },
        };
        Some((level, bytes))
    })
    .max()
    .map(|(_, bytes)| bytes)
}

/// This process's resident memory in bytes (VmRSS), where /proc says it.
pub fn resident_bytes() -> Option<usize> {
    proc_kib("/proc/self/status", "VmRSS:")
}

/// How much of this process's memory is in transparent huge pages (AnonHugePages): a table
/// that did not get them pays a TLB miss on nearly every random lookup.
pub fn huge_page_bytes() -> Option<usize> {
    proc_kib("/proc/self/smaps_rollup", "AnonHugePages:")
}

/// The `NAME: N kB` value of a /proc file, in bytes.
fn proc_kib(file: &str, name: &str) -> Option<usize> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// A FIB the update benchmark can change: today's and the previous one.
pub trait RouteWriter {
    fn add4(&mut self, p: Prefix4, nh: u32) -> Result<Option<u32>, FibError>;
    fn del4(&mut self, p: Prefix4) -> Option<u32>;
    fn add6(&mut self, p: Prefix6, nh: u32) -> Result<Option<u32>, FibError>;
    fn del6(&mut self, p: Prefix6) -> Option<u32>;
    fn commit(&mut self) -> u64;
}

macro_rules! route_writer {
    ($t:ty) => {
        impl RouteWriter for $t {
            fn add4(&mut self, p: Prefix4, nh: u32) -> Result<Option<u32>, FibError> {
                <$t>::add4(self, p, nh)
            }
            fn del4(&mut self, p: Prefix4) -> Option<u32> {
                <$t>::del4(self, p)
            }
            fn add6(&mut self, p: Prefix6, nh: u32) -> Result<Option<u32>, FibError> {
                <$t>::add6(self, p, nh)
            }
            fn del6(&mut self, p: Prefix6) -> Option<u32> {
                <$t>::del6(self, p)
            }
            fn commit(&mut self) -> u64 {
                <$t>::commit(self)
            }
        }
    };
}
route_writer!(FibWriter);
route_writer!(StrideFibWriter);

/// What `update_rate` measured.
#[derive(Debug, Clone, Copy)]
pub struct UpdateRun {
    /// Route changes per second, commits and whole rebuilds included.
    pub per_s: f64,
    pub changes: usize,
    pub seconds: f64,
}

/// Route changes per second, commits included: at least `n` times and for at least `time`,
/// delete a random route of `v4` or `v6` and add it back with another next hop, committing
/// every `per_commit` times. Both families' routes must already be in `w`. A run long enough
/// to fill the trie's room includes the whole rebuilds that reclaim it, as a writer that
/// keeps changing routes pays them.
pub fn update_rate(
    w: &mut impl RouteWriter,
    v4: &[(Prefix4, u32)],
    v6: &[(Prefix6, u32)],
    n: usize,
    time: Duration,
    per_commit: usize,
    rng: &mut Rng,
) -> UpdateRun {
    let start = Instant::now();
    let mut changes = 0usize;
    let mut i = 0usize;
    loop {
        if i >= n && i.is_multiple_of(256) && start.elapsed() >= time {
            break;
        }
        if !v4.is_empty() && (v6.is_empty() || i.is_multiple_of(2)) {
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
        if i.is_multiple_of(per_commit.max(1)) {
            w.commit();
        }
        i += 1;
    }
    w.commit();
    let seconds = start.elapsed().as_secs_f64();
    UpdateRun {
        per_s: changes as f64 / seconds,
        changes,
        seconds,
    }
}
