//! ACL classification rate by rule count: `cargo bench --bench acl`.
//!
//! Two rule sets per count: the lab's (N deny rules for single sources none of the traffic
//! has, then `permit any`: what `lab run --acl-rules N` will load) and a mixed one (prefixes of
//! random lengths /8–/32 for source and destination, some with a protocol and port ranges:
//! many shapes, the hard case for tuple-space search). 64 k flow keys of var2-like traffic
//! (random sources and destinations in 16.0.0.0/8 and 48.0.0.0/8, UDP), classified one frame
//! of 256 at a time; one core.
//!
//! Then the session table (`permit+reflect`): lookups of 65 536 live UDP sessions in the three
//! passes the ACL node makes (keys and buckets, slots, verdicts), and TCP SYNs of new flows
//! opened into a table already full of transient sessions (each must make room).

use sluice::acl::session::{Sessions, Timeouts};
use sluice::acl::{Action, Classifier, FlowKey, Rule};
use sluice::fib::rng::Rng;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn v4(a: u32) -> u128 {
    (a as u128) << 96
}

fn lab_rules(n: usize) -> Vec<Rule> {
    let mut r: Vec<Rule> = (0..n as u32)
        .map(|i| Rule {
            src: v4(0xc612_0000 + i),
            src_len: 32,
            ..Rule::any(false, Action::Deny)
        })
        .collect();
    r.push(Rule::any(false, Action::Permit));
    r
}

fn mixed_rules(n: usize, rng: &mut Rng) -> Vec<Rule> {
    let mut r: Vec<Rule> = (0..n)
        .map(|_| {
            let (sl, dl) = (8 + rng.below(25) as u8, 8 + rng.below(25) as u8);
            let proto = match rng.below(3) {
                0 => None,
                1 => Some(6),
                _ => Some(17),
            };
            let p = rng.below(60000) as u16;
            Rule {
                action: Action::Deny,
                ipv6: false,
                // Outside the traffic's /8s, so that every key walks every shape.
                src: v4(0x6400_0000 | rng.next_u32() >> 8),
                src_len: sl,
                dst: v4(0x6500_0000 | rng.next_u32() >> 8),
                dst_len: dl,
                proto,
                sport: (0, u16::MAX),
                dport: (p, p + 100),
                tcp_flags: (0, 0),
            }
            .normalized()
        })
        .collect();
    r.push(Rule::any(false, Action::Permit));
    r
}

fn rate(c: &Classifier, keys: &[FlowKey], time: Duration) -> f64 {
    let mut out = [None; 256];
    let start = Instant::now();
    let mut done = 0u64;
    while start.elapsed() < time {
        for chunk in keys.chunks(256) {
            c.classify_batch(black_box(chunk), &mut out[..chunk.len()]);
            black_box(&out);
            done += chunk.len() as u64;
        }
    }
    done as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let time = Duration::from_millis(if full { 500 } else { 20 });
    let mut rng = Rng::new(11);
    let keys: Vec<FlowKey> = (0..65536)
        .map(|_| FlowKey {
            src: v4(0x1000_0000 | rng.next_u32() >> 8),
            dst: v4(0x3000_0000 | rng.next_u32() >> 8),
            proto: 17,
            sport: 1024 + rng.below(1000) as u16,
            dport: 1024 + rng.below(1000) as u16,
            ..FlowKey::default()
        })
        .collect();
    println!("acl classification, 1 core, frames of 256, 65536 var2-like UDP keys, M keys/s");
    println!(
        "{:>7}  {:>14} {:>7}  {:>14} {:>7}",
        "rules", "lab set", "shapes", "mixed set", "shapes"
    );
    for n in [0usize, 10, 100, 1_000, 10_000] {
        let lab = Classifier::new(&lab_rules(n));
        let mixed = Classifier::new(&mixed_rules(n, &mut rng));
        println!(
            "{n:>7}  {:>14.1} {:>7}  {:>14.1} {:>7}",
            rate(&lab, &keys, time) / 1e6,
            lab.groups(),
            rate(&mixed, &keys, time) / 1e6,
            mixed.groups()
        );
    }
    sessions(&keys, time);
}

/// Session lookups (all hits) and opens under pressure, M packets/s.
fn sessions(keys: &[FlowKey], time: Duration) {
    let s = Sessions::new(1, keys.len(), Timeouts::default());
    s.enable();
    for k in keys {
        black_box(s.open(0, k, 0));
    }
    let start = Instant::now();
    let mut done = 0u64;
    let mut preps = Vec::with_capacity(256);
    while start.elapsed() < time {
        for chunk in keys.chunks(256) {
            preps.clear();
            preps.extend(chunk.iter().filter_map(|k| s.prepare(0, k, 0)));
            for p in &preps {
                s.prefetch_slots(0, p);
            }
            for (p, k) in preps.iter().zip(chunk) {
                black_box(s.lookup_prepared(0, p, k.tcp_flags, 1));
            }
            done += chunk.len() as u64;
        }
    }
    let lookups = done as f64 / start.elapsed().as_secs_f64();
    // A table full of SYNs that were never answered, then SYNs of new flows.
    let t = Sessions::new(1, keys.len(), Timeouts::default());
    t.enable();
    let syn = |k: &FlowKey, port: u16| FlowKey {
        proto: 6,
        tcp_flags: 0x02,
        sport: port,
        ..*k
    };
    for k in keys.iter().cycle().take(4 * keys.len()) {
        black_box(t.open(0, &syn(k, 1), 0));
    }
    let start = Instant::now();
    let (mut done, mut port) = (0u64, 2u16);
    while start.elapsed() < time {
        for (i, k) in keys.iter().enumerate() {
            black_box(t.open(0, &syn(k, port), 1 + i as u64 / 1024));
        }
        done += keys.len() as u64;
        port = port.wrapping_add(1);
    }
    let opens = done as f64 / start.elapsed().as_secs_f64();
    println!(
        "sessions, 1 core, {} live: lookups (3 passes, frames of 256) {:.1} M/s; \
         SYNs of new flows into a full table {:.1} M/s",
        keys.len(),
        lookups / 1e6,
        opens / 1e6
    );
}
