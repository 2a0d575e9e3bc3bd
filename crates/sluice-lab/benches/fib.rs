//! FIB lookup rates without I/O: batched lookups (256 per call) on one core, for a 1-route
//! table, a synthetic full table shaped like the public BGP table, and the same with 3 % of
//! routes longer than /24 (/48), as a provider's IGP and customer routes add; IPv4 at 1 M
//! routes, IPv6 at 200 k. Four destination sets each (see `sluice_lab::fib::destinations`), the
//! memory of each table, then what publication costs. Median of 3 runs.
//! Run: cargo bench --bench fib

use sluice::fib::{FibWriter, Prefix4, Prefix6};
use sluice_lab::fib::destinations::{self, DestinationSet};
use sluice_lab::fib::measure::{self, BATCH};
use sluice_lab::fib::synth::{synth, Rng, SynthSpec};
use std::time::{Duration, Instant};

/// Share of routes longer than /24 (IPv4) or /48 (IPv6) in the long variant.
const LONG_SHARE: f64 = 0.03;

struct Run {
    time: Duration,
    repeats: usize,
    /// Addresses per destination set.
    n: usize,
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` does not, and then a tiny table
    // and a few milliseconds per figure only check that the benchmark works.
    let full = std::env::args().any(|a| a == "--bench");
    let (v4_big, v6_big, run) = if full {
        let run = Run {
            time: Duration::from_millis(500),
            repeats: 3,
            n: 1 << 20,
        };
        (1_000_000, 200_000, run)
    } else {
        let run = Run {
            time: Duration::from_millis(5),
            repeats: 1,
            n: 1 << 12,
        };
        (5_000, 1_000, run)
    };
    println!(
        "fib lookups, 1 core, batches of {BATCH}, {} addresses per set, median of {} run(s) of \
         {:?} each; last-level cache {}",
        run.n,
        run.repeats,
        run.time,
        measure::last_level_cache_bytes()
            .map_or("unknown".to_string(), |b| format!("{} MiB", b >> 20))
    );
    let spec = |long_share| SynthSpec {
        v4: v4_big,
        v6: v6_big,
        seed: 1,
        next_hops: 16,
        default_route: false,
        long_share,
    };
    let (bgp4, bgp6) = synth(&spec(0.0));
    let (long4, long6) = synth(&spec(LONG_SHARE));
    let count = |n: usize| n.to_string();
    let mut rng = Rng::new(3);
    let mut legend4: Vec<(&'static str, String)> = Vec::new();
    let mut legend6: Vec<(&'static str, String)> = Vec::new();

    header("IPv4 table", "nodes");
    for (name, routes) in [
        (
            "1 route, a /24".to_string(),
            vec![(Prefix4::containing(0xc633_6400, 24), 1)],
        ),
        (format!("{} routes, BGP shape", count(bgp4.len())), bgp4),
        (
            format!(
                "{} routes, {} longer than /24",
                count(long4.len()),
                long4.iter().filter(|r| r.0.len() > 24).count()
            ),
            long4,
        ),
    ] {
        let huge = measure::huge_page_bytes();
        let t = Instant::now();
        let w = FibWriter::with_routes(routes.iter().copied(), []).unwrap();
        let build = t.elapsed().as_secs_f64();
        let huge = huge
            .zip(measure::huge_page_bytes())
            .map(|(before, after)| after.saturating_sub(before));
        let prefixes: Vec<Prefix4> = routes.iter().map(|r| r.0).collect();
        let sets = destinations::sets(&prefixes, run.n, &mut rng);
        let fib = w.reader().load_full();
        let rates = rates(&sets, &run, |d| measure::rate_v4(&fib, d, run.time));
        let m = w.memory().v4;
        let (bytes, nodes) = (m.bytes, m.nodes);
        row(&name, build, bytes, huge, nodes, &rates);
        legend4 = sets.iter().map(|s| (s.name, s.what.clone())).collect();
    }
    header("IPv6 table", "nodes");
    for (name, routes) in [
        (
            "1 route, a /48".to_string(),
            vec![(Prefix6::containing(0x2001_0db8_0001u128 << 80, 48), 1)],
        ),
        (format!("{} routes, BGP shape", count(bgp6.len())), bgp6),
        (
            format!(
                "{} routes, {} longer than /48",
                count(long6.len()),
                long6.iter().filter(|r| r.0.len() > 48).count()
            ),
            long6,
        ),
    ] {
        let huge = measure::huge_page_bytes();
        let t = Instant::now();
        let w = FibWriter::with_routes([], routes.iter().copied()).unwrap();
        let build = t.elapsed().as_secs_f64();
        let huge = huge
            .zip(measure::huge_page_bytes())
            .map(|(before, after)| after.saturating_sub(before));
        let prefixes: Vec<Prefix6> = routes.iter().map(|r| r.0).collect();
        let sets = destinations::sets(&prefixes, run.n, &mut rng);
        let fib = w.reader().load_full();
        let rates = rates(&sets, &run, |d| measure::rate_v6(&fib, d, run.time));
        let m = w.memory().v6;
        let (bytes, nodes) = (m.bytes, m.nodes);
        row(&name, build, bytes, huge, nodes, &rates);
        legend6 = sets.iter().map(|s| (s.name, s.what.clone())).collect();
    }
    for (family, legend) in [("IPv4", legend4), ("IPv6", legend6)] {
        println!("{family} columns, M lookups/s (phrases of the last table):");
        for (name, what) in legend {
            println!("  {name:<10} {what}");
        }
    }
    println!(
        "  1-route tables: hit, hot and announced stay in one /24 or /48, so every lookup \
         reads the same few cells; uniform still spreads over the whole first level"
    );
    println!(
        "  MiB: the trie (one copy, room for updates included); THP MiB: how much of the \
         build's memory got transparent huge pages; nodes: trie nodes (24 bytes each)"
    );

    publication(full);
}

fn header(table: &str, nodes: &str) {
    println!(
        "{table:<38}{:>8}{:>10}{:>9}{nodes:>9}{:>9}{:>9}{:>11}{:>9}",
        "build s", "MiB", "THP MiB", "hit", "hot", "announced", "uniform"
    );
}

fn row(name: &str, build: f64, bytes: usize, huge: Option<usize>, nodes: usize, rates: &[f64]) {
    let huge = huge.map_or("?".to_string(), |h| (h >> 20).to_string());
    print!(
        "{name:<38}{build:>8.2}{:>10.1}{huge:>9}{nodes:>9}",
        bytes as f64 / 1048576.0
    );
    for (i, r) in rates.iter().enumerate() {
        let width = if i == 2 { 11 } else { 9 };
        print!("{:>width$.1}", r / 1e6);
    }
    println!();
}

/// The median rate over each set, in the order of `sets`.
fn rates<A>(sets: &[DestinationSet<A>], run: &Run, rate: impl Fn(&[A]) -> f64) -> Vec<f64> {
    sets.iter()
        .map(|s| measure::median_rate(run.repeats, || rate(&s.addrs)))
        .collect()
}

/// What publication costs: a reader's pin per frame, a commit, route changes.
fn publication(full: bool) {
    let (v4, v6) = synth(&SynthSpec {
        v4: if full { 1_000_000 } else { 5_000 },
        v6: if full { 200_000 } else { 1_000 },
        seed: 1,
        next_hops: 16,
        default_route: false,
        long_share: 0.0,
    });
    let mut w = FibWriter::with_routes(v4.iter().copied(), v6.iter().copied()).unwrap();
    let reader = w.reader();
    let pins = if full { 10_000_000 } else { 10_000 };
    let t = Instant::now();
    for _ in 0..pins {
        let fib = reader.load();
        std::hint::black_box(fib.v4().lookup(0));
    }
    let pin_ns = t.elapsed().as_nanos() as f64 / pins as f64;
    let commits = if full { 2_000 } else { 20 };
    let mut rng = Rng::new(5);
    let t = Instant::now();
    for i in 0..commits {
        let (p, nh) = v4[rng.below(v4.len() as u64) as usize];
        w.add4(p, nh ^ (1 + (i & 1))).unwrap();
        w.commit();
    }
    let commit_us = t.elapsed().as_secs_f64() * 1e6 / commits as f64;
    let n = if full { 100_000 } else { 100 };
    let updates = measure::update_rate(&mut w, &v4, &v6, n, Duration::ZERO, 64, &mut rng).per_s;
    println!(
        "publication: reader pin+unpin {pin_ns:.1} ns per frame; one-route change + commit \
         {commit_us:.1} us (no reader holding the old table); {:.0} route changes/s \
         (delete + re-add, commit every 64)",
        updates
    );
}
