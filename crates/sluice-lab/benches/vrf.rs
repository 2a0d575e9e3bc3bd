//! What routing tables (VRFs) cost the lookup: `cargo bench --bench vrf`.
//!
//! T tables of 10 000 IPv4 routes each (random /16–/24 prefixes, a default route), and
//! frames of 256 destinations inside those routes. The lookup nodes' `TableLookup` looks each
//! frame up in each packet's table: one batched lookup when the frame is all one table (what
//! every frame is without VRFs), one per table present otherwise. Measured against the plain
//! batched lookup of table 0 (what the nodes did before tables existed), one core, median of 5
//! runs of 0.5 s each.

use sluice::fib::rng::Rng;
use sluice::fib::{FibWriter, Prefix4};
use sluice::ip::table_lookup::TableLookup;
use sluice::router::TableSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

const ROUTES: usize = 10_000;
const FRAME: usize = 256;

/// Lookups per second of `f` over `frames` frames of 256, median of `runs`.
fn rate(runs: usize, secs: f64, frames: usize, mut f: impl FnMut(usize)) -> f64 {
    let mut rates: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed() < Duration::from_secs_f64(secs) {
                for k in 0..frames {
                    f(k);
                }
                n += (frames * FRAME) as u64;
            }
            n as f64 / start.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    rates[rates.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (runs, secs) = if full { (5, 0.5) } else { (1, 0.02) };
    let tables = 16;
    let mut rng = Rng::new(7);
    let mut writers: Vec<FibWriter> = Vec::new();
    let mut hits: Vec<Vec<u32>> = Vec::new();
    for t in 0..tables {
        let mut w = FibWriter::new();
        w.add4(Prefix4::new(0, 0).unwrap(), 1).unwrap();
        let mut inside = Vec::new();
        for _ in 0..ROUTES {
            let len = 16 + rng.below(9) as u8;
            let a = rng.next_u32();
            let p = Prefix4::containing(a, len);
            w.add4(p, 2 + t as u32).unwrap();
            inside.push(a);
        }
        w.commit();
        writers.push(w);
        hits.push(inside);
    }
    let set = TableSet {
        fibs: writers.iter().map(|w| Some(w.reader())).collect(),
        by_interface4: (0..tables as u16).collect(),
        by_interface6: Vec::new(),
    };
    // 64 frames of destinations, each packet's table chosen per case.
    let frames = 64;
    let dst: Vec<u32> = (0..frames * FRAME)
        .map(|k| hits[k % tables][rng.below(ROUTES as u64) as usize])
        .collect();
    let mut out = vec![0u32; FRAME];
    let plain = {
        let fib = writers[0].reader();
        rate(runs, secs, frames, |k| {
            let f = fib.load();
            f.v4()
                .lookup_batch(&dst[k * FRAME..(k + 1) * FRAME], &mut out);
            black_box(&out);
        })
    };
    println!(
        "vrf: {tables} tables of {ROUTES} IPv4 routes, frames of {FRAME}, 1 core, median of {runs}"
    );
    println!(
        "{:<44}{:>10} M/s",
        "plain batched lookup, table 0",
        format!("{:.1}", plain / 1e6)
    );
    for mixed in [1usize, 2, 4, 16] {
        let mut tl = TableLookup::<u32>::default();
        let r = rate(runs, secs, frames, |k| {
            // Packet j of the frame comes in on interface j % mixed (table j % mixed).
            for j in 0..FRAME {
                tl.table[j] = set.table_of((j % mixed) as u32, false);
            }
            tl.lookup(&set, &dst[k * FRAME..(k + 1) * FRAME], &mut out, FRAME);
            black_box(&out);
        });
        println!(
            "{:<44}{:>10} M/s  {:.2}x plain",
            format!("TableLookup, {mixed} table(s) in each frame"),
            format!("{:.1}", r / 1e6),
            r / plain
        );
    }
    // Every answer from its own table.
    let mut tl = TableLookup::<u32>::default();
    for j in 0..FRAME {
        tl.table[j] = (j % tables) as u16;
    }
    tl.lookup(&set, &dst[..FRAME], &mut out, FRAME);
    for (j, &a) in out.iter().enumerate() {
        let want = writers[j % tables].routes4().lookup(dst[j]).map(|r| r.1);
        assert_eq!(Some(a), want, "packet {j}");
    }
}
