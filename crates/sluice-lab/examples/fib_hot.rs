//! A small deterministic harness for counting the instructions of a batched FIB lookup:
//! builds the synthetic full table (`sluice fib synth --seed 1`: 1 M IPv4 or 200 k IPv6
//! routes, 8 next hops), draws the hot set (1 024 addresses inside routes of the table, as
//! `sluice fib bench`'s "hot"), and looks it up `REPS` times in frames of 256 in `lookups`,
//! a function of its own so that callgrind can count it alone:
//!
//! ```text
//! cargo build --release --example fib_hot
//! valgrind --tool=callgrind --toggle-collect='*fib_hot*lookups*' \
//!     target/release/examples/fib_hot 6 100
//! ```
//!
//! Instructions per lookup = the collected Ir / (REPS × 1 024). Args: family (4 or 6),
//! REPS (default 100), routes (default 1000000 for 4, 200000 for 6), set (`hot`, or `hit`
//! for 65 536 addresses looked up once per rep), and the percentage of routes longer than
//! /24 or /48 (default 0; `sluice fib synth --long`).

use sluice::fib::{Fib, FibWriter};
use sluice_lab::fib::destinations::{self, HOT};
use sluice_lab::fib::synth::{synth, Rng, SynthSpec};
use std::time::Instant;

#[inline(never)]
fn lookups(fib: &Fib, v4: &[u32], v6: &[u128], reps: usize, out: &mut [u32]) {
    for _ in 0..reps {
        if v6.is_empty() {
            fib.v4().lookup_batch(v4, out);
        } else {
            fib.v6().lookup_batch(v6, out);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let family: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(6);
    let reps: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let default_routes = if family == 4 { 1_000_000 } else { 200_000 };
    let routes: usize = args
        .get(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default_routes);
    let n = match args.get(4).map(String::as_str) {
        Some("hit") => 1 << 16,
        _ => HOT,
    };
    let spec = SynthSpec {
        v4: if family == 4 { routes } else { 0 },
        v6: if family == 4 { 0 } else { routes },
        seed: 1,
        next_hops: 8,
        default_route: false,
        long_share: args
            .get(5)
            .and_then(|a| a.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 100.0,
    };
    let (r4, r6) = synth(&spec);
    let mut rng = Rng::new(42);
    let (v4, v6) = if family == 4 {
        let p: Vec<_> = r4.iter().map(|r| r.0).collect();
        (destinations::hit(&p, n, &mut rng), Vec::new())
    } else {
        let p: Vec<_> = r6.iter().map(|r| r.0).collect();
        (Vec::new(), destinations::hit(&p, n, &mut rng))
    };
    let w = FibWriter::with_routes(r4, r6).expect("routes");
    let reader = w.reader();
    let fib = reader.load_full();
    let mut out = vec![0u32; n];
    let start = Instant::now();
    lookups(&fib, &v4, &v6, reps, &mut out);
    let secs = start.elapsed().as_secs_f64();
    let sum = out
        .iter()
        .fold(0u64, |s, &x| s.wrapping_mul(31).wrapping_add(x as u64));
    // The rate is wall-clock time, as noisy as the machine; the instruction count is not.
    println!(
        "IPv{family}: {routes} routes, {n} addresses x {reps} reps = {} lookups, checksum \
         {sum:016x}, {:.1} M lookups/s",
        n * reps,
        (n * reps) as f64 / secs / 1e6
    );
}
