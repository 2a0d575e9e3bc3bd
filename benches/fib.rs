//! FIB lookup rates without I/O: batched lookups (256 per call) per core, IPv4 at 1 route and
//! 1 M routes, IPv6 at 1 route and 200 k routes, random and table-hitting destinations, and the
//! memory of each table. Median of 5 runs.  Run: cargo bench --bench fib

use sluice::fib::measure::{self, BATCH};
use sluice::fib::synth::{synth, Rng, SynthSpec};
use sluice::fib::{FibWriter, Prefix4, Prefix6};
use std::time::{Duration, Instant};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` does not, and then a tiny table
    // and a few milliseconds per figure only check that the benchmark works.
    let full = std::env::args().any(|a| a == "--bench");
    let (v4_big, v6_big, time, repeats, n) = if full {
        (1_000_000, 200_000, Duration::from_millis(500), 5, 1 << 20)
    } else {
        (5_000, 1_000, Duration::from_millis(5), 1, 1 << 12)
    };
    println!(
        "fib lookups, 1 core, batches of {BATCH}, median of {repeats} run(s) of {:?} each",
        time
    );
    println!(
        "{:<34}{:>10}{:>12}{:>14}{:>14}",
        "table", "build s", "MiB/inst", "random M/s", "hitting M/s"
    );
    let one4 = vec![(Prefix4::containing(0x0a00_0000, 8), 1)];
    let one6 = vec![(Prefix6::containing(0x2001_0db8u128 << 96, 32), 1)];
    let (big4, big6) = synth(&SynthSpec {
        v4: v4_big,
        v6: v6_big,
        seed: 1,
        next_hops: 16,
        default_route: false,
        long_share: 0.0,
    });
    let mut rng = Rng::new(3);
    // The same table plus 5 % routes longer than /24 inside its /24s, as an internal table
    // with host routes has: those /24s need a second-level node.
    let mut long4 = big4.clone();
    let extra = big4.len() / 20;
    for i in 0..extra {
        let (p, _) = big4[i * 20 % big4.len()];
        let a = p.addr() | (rng.next_u32() & (p.addr() ^ p.last()));
        long4.push((Prefix4::containing(a, 25 + rng.below(8) as u8), 3));
    }
    for (name, routes) in [
        ("IPv4 1 route".to_string(), one4),
        (format!("IPv4 {} routes (synthetic BGP)", big4.len()), big4),
        (
            format!("IPv4 same + {} longer than /24", long4.len() / 21),
            long4,
        ),
    ] {
        let t = Instant::now();
        let mut w = FibWriter::with_routes(routes.iter().copied(), []).unwrap();
        let build = t.elapsed().as_secs_f64();
        let mem = w.memory();
        let prefixes: Vec<Prefix4> = routes.iter().map(|r| r.0).collect();
        let random = measure::random_v4(n, &mut rng);
        let hitting = measure::hitting_v4(&prefixes, n, &mut rng);
        let fib = w.reader().load_full();
        let r: Vec<f64> = (0..repeats)
            .map(|_| measure::rate_v4(&fib, &random, time))
            .collect();
        let h: Vec<f64> = (0..repeats)
            .map(|_| measure::rate_v4(&fib, &hitting, time))
            .collect();
        println!(
            "{name:<34}{build:>10.3}{:>12.1}{:>14.1}{:>14.1}",
            mem.v4_table as f64 / 1048576.0,
            median(r) / 1e6,
            median(h) / 1e6
        );
    }
    for (name, routes) in [
        ("IPv6 1 route".to_string(), one6),
        (format!("IPv6 {} routes (synthetic BGP)", big6.len()), big6),
    ] {
        let t = Instant::now();
        let mut w = FibWriter::with_routes([], routes.iter().copied()).unwrap();
        let build = t.elapsed().as_secs_f64();
        let mem = w.memory();
        let prefixes: Vec<Prefix6> = routes.iter().map(|r| r.0).collect();
        let random = measure::random_v6(n, &mut rng);
        let hitting = measure::hitting_v6(&prefixes, n, &mut rng);
        let fib = w.reader().load_full();
        let r: Vec<f64> = (0..repeats)
            .map(|_| measure::rate_v6(&fib, &random, time))
            .collect();
        let h: Vec<f64> = (0..repeats)
            .map(|_| measure::rate_v6(&fib, &hitting, time))
            .collect();
        println!(
            "{name:<34}{build:>10.3}{:>12.1}{:>14.1}{:>14.1}",
            mem.v6_table as f64 / 1048576.0,
            median(r) / 1e6,
            median(h) / 1e6
        );
    }

    publication(full);
}

/// What the left-right publication costs: a reader's pin per frame, a commit, route changes.
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
        std::hint::black_box(fib.generation());
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
    let updates = measure::update_rate(&mut w, &v4, &v6, n, 64, &mut rng);
    println!(
        "publication: reader pin+unpin {pin_ns:.1} ns per frame; one-route change + commit \
         {commit_us:.1} us (no reader holding the old table); {:.0} route changes/s \
         (delete + re-add, commit every 64)",
        updates
    );
}
