//! A small deterministic harness for profiling route changes: builds the synthetic full table
//! (`sluice fib synth --seed 1`, 1 M IPv4 + 200 k IPv6 routes, `--long` percentage as the
//! first argument, default 3), then deletes and re-adds random routes of it with a commit
//! every 64 (as `sluice fib bench`'s "updates", without the reader thread) and prints the
//! rate:
//!
//! ```text
//! cargo build --release --example fib_updates
//! perf record -e cpu-clock -g target/release/examples/fib_updates 3 2000000
//! ```
//!
//! Args: percentage of routes longer than /24 or /48, changes (default 1 000 000).

use sluice::fib::FibWriter;
use sluice_lab::fib::measure;
use sluice_lab::fib::synth::{synth, Rng, SynthSpec};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let long: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let n: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let spec = SynthSpec {
        v4: 1_000_000,
        v6: 200_000,
        seed: 1,
        next_hops: 8,
        default_route: false,
        long_share: long / 100.0,
    };
    let (r4, r6) = synth(&spec);
    let mut w = FibWriter::with_routes(r4.clone(), r6.clone()).expect("routes");
    let mut rng = Rng::new(5);
    let rate = measure::update_rate(&mut w, &r4, &r6, n / 2, Duration::ZERO, 64, &mut rng).per_s;
    let m = w.memory();
    println!(
        "{n} route changes: {:.0}/s; whole-trie rebuilds {} + {}",
        rate, m.v4.full_rebuilds, m.v6.full_rebuilds
    );
    for (family, t) in [("IPv4", m.v4), ("IPv6", m.v6)] {
        println!(
            "{family}: live {} nodes {} leaves, dead {} nodes {} leaves, {} bytes of {}",
            t.nodes, t.leaves, t.dead_nodes, t.dead_leaves, t.bytes_used, t.bytes
        );
    }
}
