//! The fast tables against a dumb reference (a hash map per prefix length, probed from the
//! longest length present), over random and realistic tables, with inserts and deletes between
//! lookups.

use super::prefix::{Addr, Prefix};
use super::synth::{synth, Rng, SynthSpec};
use super::*;
use std::collections::HashMap;

/// Longest match by probing one hash map per length, longest first.
struct Reference<A: Addr> {
    by_len: Vec<HashMap<A, u32>>,
}

impl<A: Addr> Reference<A> {
    fn new() -> Reference<A> {
        Reference {
            by_len: (0..=A::BITS).map(|_| HashMap::new()).collect(),
        }
    }
    fn insert(&mut self, p: Prefix<A>, nh: u32) {
        self.by_len[p.len() as usize].insert(p.addr(), nh);
    }
    fn remove(&mut self, p: Prefix<A>) {
        self.by_len[p.len() as usize].remove(&p.addr());
    }
    fn lookup(&self, a: A) -> u32 {
        for len in (0..=A::BITS).rev() {
            let m = &self.by_len[len as usize];
            if m.is_empty() {
                continue;
            }
            if let Some(&nh) = m.get(&Prefix::containing(a, len).addr()) {
                return nh;
            }
        }
        NO_ROUTE
    }
}

fn check4(w: &mut FibWriter, r: &Reference<u32>, dst: &[u32]) {
    let mut out = vec![0; dst.len()];
    w.pending().v4().lookup_batch(dst, &mut out);
    for (&a, &got) in dst.iter().zip(&out) {
        let want = r.lookup(a);
        assert_eq!(got, want, "{}", std::net::Ipv4Addr::from(a));
    }
}

fn check6(w: &mut FibWriter, r: &Reference<u128>, dst: &[u128]) {
    let mut out = vec![0; dst.len()];
    w.pending().v6().lookup_batch(dst, &mut out);
    for (&a, &got) in dst.iter().zip(&out) {
        assert_eq!(got, r.lookup(a), "{}", std::net::Ipv6Addr::from(a));
    }
}

/// A random prefix near `base`, so that prefixes of every length overlap a lot.
fn near4(rng: &mut Rng, base: u32, spread_bits: u32) -> Prefix4 {
    let a = base ^ (rng.next_u32() >> (32 - spread_bits));
    // Short prefixes repaint up to 2^24 cells: rare, as in real tables.
    let len = if rng.below(50) == 0 {
        rng.below(8)
    } else {
        8 + rng.below(25)
    };
    Prefix4::containing(a, len as u8)
}

fn near6(rng: &mut Rng, base: u128, spread_bits: u32) -> Prefix6 {
    let a = base ^ (rng.next_u128() >> (128 - spread_bits));
    // Every length, with the long ones that need deep nodes often enough.
    Prefix6::containing(a, (128 - rng.below(129) as u32 * rng.below(2) as u32) as u8)
}

#[test]
fn fib_v4_random_overlapping_updates_match_reference() {
    let mut rng = Rng::new(4);
    let mut w = FibWriter::new();
    let mut r = Reference::new();
    let mut live: Vec<Prefix4> = Vec::new();
    let base = 0x0a00_0000;
    for round in 0..40 {
        for _ in 0..200 {
            if rng.below(3) == 0 && !live.is_empty() {
                let p = live.swap_remove(rng.below(live.len() as u64) as usize);
                assert!(w.del4(p).is_some());
                r.remove(p);
            } else {
                let p = near4(&mut rng, base, 20);
                let nh = rng.below(1000) as u32;
                if w.add4(p, nh).unwrap().is_none() {
                    live.push(p);
                }
                r.insert(p, nh);
            }
        }
        let dst: Vec<u32> = (0..10_000)
            .map(|i| {
                if i % 10 == 0 {
                    rng.next_u32()
                } else {
                    base ^ (rng.next_u32() >> 12)
                }
            })
            .collect();
        check4(&mut w, &r, &dst);
        if round % 8 == 0 {
            // What readers see after a commit is the same table.
            w.commit();
            let fib = w.reader().load();
            for &a in &dst[..1000] {
                assert_eq!(fib.v4().lookup(a), r.lookup(a));
            }
        }
    }
    // Deleting everything leaves no node behind and no route.
    for p in live.drain(..) {
        w.del4(p);
    }
    assert_eq!(w.live_nodes().0, 0);
    assert!(w.routes4().is_empty());
    let all: Vec<u32> = (0..50_000).map(|_| base ^ (rng.next_u32() >> 12)).collect();
    let mut out = vec![0; all.len()];
    w.pending().v4().lookup_batch(&all, &mut out);
    assert!(out.iter().all(|&nh| nh == NO_ROUTE));
}

#[test]
fn fib_v6_random_overlapping_updates_match_reference() {
    let mut rng = Rng::new(6);
    let mut w = FibWriter::new();
    let mut r = Reference::new();
    let mut live: Vec<Prefix6> = Vec::new();
    let base: u128 = 0x2001_0db8_0000_0000_0000_0000_0000_0000;
    for _ in 0..30 {
        for _ in 0..200 {
            if rng.below(3) == 0 && !live.is_empty() {
                let p = live.swap_remove(rng.below(live.len() as u64) as usize);
                assert!(w.del6(p).is_some());
                r.remove(p);
            } else {
                let spread = [8, 40, 100, 128][rng.below(4) as usize];
                let p = near6(&mut rng, base, spread);
                let nh = rng.below(1000) as u32;
                if w.add6(p, nh).unwrap().is_none() {
                    live.push(p);
                }
                r.insert(p, nh);
            }
        }
        let dst: Vec<u128> = (0..5_000)
            .map(|i| {
                let spread = [8, 40, 100, 128][i % 4];
                base ^ (rng.next_u128() >> (128 - spread))
            })
            .collect();
        check6(&mut w, &r, &dst);
        // Probe the routes' own first and last addresses, where off-by-one errors live.
        let edges: Vec<u128> = live.iter().flat_map(|p| [p.addr(), p.last()]).collect();
        check6(&mut w, &r, &edges);
    }
    for p in live.drain(..) {
        w.del6(p);
    }
    assert_eq!(w.live_nodes().1, 0);
    assert_eq!(w.pending().v6().lookup(base), NO_ROUTE);
}

#[test]
fn fib_realistic_tables_with_churn_match_reference() {
    let spec = SynthSpec {
        v4: 150_000,
        v6: 30_000,
        seed: 11,
        next_hops: 16,
        default_route: false,
    };
    let (v4, v6) = synth(&spec);
    let mut w = FibWriter::with_routes(v4.iter().copied(), v6.iter().copied()).unwrap();
    let mut r4 = Reference::new();
    let mut r6 = Reference::new();
    v4.iter().for_each(|&(p, nh)| r4.insert(p, nh));
    v6.iter().for_each(|&(p, nh)| r6.insert(p, nh));
    let mut rng = Rng::new(12);
    for round in 0..3 {
        // Random addresses, and addresses inside the routes (hits, at every depth).
        let mut d4: Vec<u32> = (0..200_000).map(|_| rng.next_u32()).collect();
        d4.extend((0..200_000).map(|_| {
            let p = v4[rng.below(v4.len() as u64) as usize].0;
            p.addr() | (rng.next_u32() & (p.addr() ^ p.last()))
        }));
        check4(&mut w, &r4, &d4);
        let mut d6: Vec<u128> = (0..50_000).map(|_| rng.next_u128()).collect();
        d6.extend((0..100_000).map(|_| {
            let p = v6[rng.below(v6.len() as u64) as usize].0;
            p.addr() | (rng.next_u128() & (p.addr() ^ p.last()))
        }));
        check6(&mut w, &r6, &d6);
        // Churn: delete some routes (exposing covering ones), re-add some with new next hops,
        // and add some longer than /24 (second-level nodes) and /0.
        for _ in 0..2_000 {
            let (p, _) = v4[rng.below(v4.len() as u64) as usize];
            if w.del4(p).is_some() {
                r4.remove(p);
            }
            let (p, _) = v4[rng.below(v4.len() as u64) as usize];
            let nh = rng.below(16) as u32 + 100 * round;
            w.add4(p, nh).unwrap();
            r4.insert(p, nh);
            let long = Prefix4::containing(
                d4[rng.below(d4.len() as u64) as usize],
                25 + rng.below(8) as u8,
            );
            w.add4(long, 77).unwrap();
            r4.insert(long, 77);
            let (p, _) = v6[rng.below(v6.len() as u64) as usize];
            if w.del6(p).is_some() {
                r6.remove(p);
            }
        }
        if round == 1 {
            w.add4(Prefix4::containing(0, 0), 5).unwrap();
            r4.insert(Prefix4::containing(0, 0), 5);
            w.add6(Prefix6::containing(0, 0), 6).unwrap();
            r6.insert(Prefix6::containing(0, 0), 6);
        }
        w.commit();
    }
}

#[test]
fn fib_rejects_reserved_next_hops_and_reports_replacements() {
    let mut w = FibWriter::new();
    let p = Prefix4::containing(0x0a00_0000, 8);
    assert_eq!(
        w.add4(p, NO_ROUTE),
        Err(FibError::NextHopTooLarge(NO_ROUTE))
    );
    assert_eq!(
        w.add4(p, u32::MAX),
        Err(FibError::NextHopTooLarge(u32::MAX))
    );
    assert!(FibWriter::with_routes([(p, CHILD | 1)], []).is_err());
    assert_eq!(w.add4(p, MAX_NEXT_HOP), Ok(None));
    assert_eq!(w.add4(p, 3), Ok(Some(MAX_NEXT_HOP)));
    assert_eq!(w.del4(p), Some(3));
    assert_eq!(w.del4(p), None);
    // Nothing is visible to readers before commit.
    w.add4(p, 4).unwrap();
    let reader = w.reader();
    assert_eq!(reader.load().v4().lookup(0x0a01_0101), NO_ROUTE);
    assert_eq!(w.commit(), 1);
    assert_eq!(reader.load().v4().lookup(0x0a01_0101), 4);
    assert_eq!(reader.load().generation(), 1);
    // A commit with no change publishes nothing new.
    assert_eq!(w.commit(), 1);
}

#[test]
fn fib_batch_lengths_may_differ() {
    let w = FibWriter::with_routes([(Prefix4::containing(0x0a00_0000, 8), 1)], []).unwrap();
    let fib = w.reader().load();
    let mut out = [9u32; 2];
    fib.v4()
        .lookup_batch(&[0x0a00_0001, 0x0b00_0000, 0x0a00_0002], &mut out);
    assert_eq!(out, [1, NO_ROUTE]);
    let mut out = [9u32; 4];
    fib.v6().lookup_batch(&[1], &mut out);
    assert_eq!(out, [NO_ROUTE, 9, 9, 9]);
}
