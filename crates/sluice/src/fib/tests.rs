//! The fast tables against a dumb reference (a hash map per prefix length, probed from the
//! longest length present), over random and realistic tables, with inserts and deletes between
//! lookups.

use super::prefix::{Addr, Prefix};
use super::rng::Rng;
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

/// Commits, then checks what a reader sees.
fn check4(w: &mut FibWriter, r: &Reference<u32>, dst: &[u32]) {
    let mut out = vec![0; dst.len()];
    w.commit();
    let fib = w.reader().load_full();
    fib.v4().lookup_batch(dst, &mut out);
    for (&a, &got) in dst.iter().zip(&out) {
        let want = r.lookup(a);
        assert_eq!(got, want, "{}", std::net::Ipv4Addr::from(a));
        assert_eq!(fib.v4().lookup(a), want, "{}", std::net::Ipv4Addr::from(a));
    }
}

fn check6(w: &mut FibWriter, r: &Reference<u128>, dst: &[u128]) {
    let mut out = vec![0; dst.len()];
    w.commit();
    let fib = w.reader().load_full();
    fib.v6().lookup_batch(dst, &mut out);
    for (&a, &got) in dst.iter().zip(&out) {
        let want = r.lookup(a);
        assert_eq!(got, want, "{}", std::net::Ipv6Addr::from(a));
        assert_eq!(fib.v6().lookup(a), want, "{}", std::net::Ipv6Addr::from(a));
    }
}

/// Each test of a `FibWriter` runs with blocks where a full table's build makes them and with
/// every subtree a block (`block_min` 0).
const BLOCK_MINS: [u32; 2] = [super::poptrie_writer::BLOCK_MIN, 0];

fn empty_writer(block_min: u32) -> FibWriter {
    FibWriter::with_routes_blocks([], [], block_min).unwrap()
}

#[test]
fn fib_v4_random_overlapping_updates_match_reference() {
    for block_min in BLOCK_MINS {
        v4_random_overlapping_updates_match_reference(block_min);
    }
}

fn v4_random_overlapping_updates_match_reference(block_min: u32) {
    let mut rng = Rng::new(4);
    let mut w = empty_writer(block_min);
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
                let p = rng.prefix4_near(base, 20);
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
    w.commit();
    assert_eq!(w.memory().v4.nodes, 0);
    assert!(w.routes4().is_empty());
    let all: Vec<u32> = (0..50_000).map(|_| base ^ (rng.next_u32() >> 12)).collect();
    let mut out = vec![0; all.len()];
    w.reader().load().v4().lookup_batch(&all, &mut out);
    assert!(out.iter().all(|&nh| nh == NO_ROUTE));
}

#[test]
fn fib_v6_random_overlapping_updates_match_reference() {
    for block_min in BLOCK_MINS {
        v6_random_overlapping_updates_match_reference(block_min);
    }
}

fn v6_random_overlapping_updates_match_reference(block_min: u32) {
    let mut rng = Rng::new(6);
    let mut w = empty_writer(block_min);
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
                let p = rng.prefix6_near(base, spread);
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
    w.commit();
    assert_eq!(w.memory().v6.nodes, 0);
    assert_eq!(w.reader().load().v6().lookup(base), NO_ROUTE);
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
    assert_eq!(reader.generation(), 1);
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

/// A writer thread toggles routes and commits thousands of times while reader threads look
/// up a fixed set of addresses; every answer a reader gets must be the answer of a route set
/// the writer committed while the reader's frame ran: from the generation it read before
/// loading the table to the one being committed when it finished (a frame that overlaps a
/// commit may see some of its changes). Never a half-built subtree, never an answer of no
/// generation. Each route's next hop is its index among the candidates, so a result names a
/// prefix.
#[test]
fn fib_concurrent_readers_see_only_committed_tables() {
    for block_min in BLOCK_MINS {
        concurrent_readers_see_only_committed_tables(block_min);
    }
}

fn concurrent_readers_see_only_committed_tables(block_min: u32) {
    use std::collections::HashSet as Set;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let mut rng = Rng::new(99);
    let mut c4: Vec<Prefix4> = Vec::new();
    while c4.len() < 64 {
        let p = Prefix4::containing(
            0x0a00_0000 ^ (rng.next_u32() >> 14),
            8 + rng.below(25) as u8,
        );
        if !c4.contains(&p) {
            c4.push(p);
        }
    }
    let mut c6: Vec<Prefix6> = Vec::new();
    while c6.len() < 64 {
        let a = 0x2001_0db8u128 << 96 ^ (rng.next_u128() >> 20);
        let p = Prefix6::containing(a, 16 + rng.below(113) as u8);
        if !c6.contains(&p) {
            c6.push(p);
        }
    }
    let probes4: Vec<u32> = c4
        .iter()
        .flat_map(|p| {
            [
                p.addr(),
                p.last(),
                p.addr() | (rng.next_u32() & (p.addr() ^ p.last())),
            ]
        })
        .collect();
    let probes6: Vec<u128> = c6
        .iter()
        .flat_map(|p| {
            [
                p.addr(),
                p.last(),
                p.addr() | (rng.next_u128() & (p.addr() ^ p.last())),
            ]
        })
        .collect();
    fn expect<A: Addr>(cands: &[Prefix<A>], on: u64, a: A) -> u32 {
        (0..cands.len())
            .filter(|&i| on >> i & 1 == 1 && cands[i].contains(a))
            .max_by_key(|&i| cands[i].len())
            .map_or(NO_ROUTE, |i| i as u32)
    }

    let mut w = empty_writer(block_min);
    // states[g] = the (IPv4, IPv6) route sets of generation g, pushed before it is committed.
    let states: Arc<Mutex<Vec<(u64, u64)>>> = Arc::new(Mutex::new(vec![(0, 0)]));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (reader, states, done) = (w.reader(), states.clone(), done.clone());
            let (c4, c6, p4, p6) = (c4.clone(), c6.clone(), probes4.clone(), probes6.clone());
            std::thread::spawn(move || {
                let (mut o4, mut o6) = (vec![0; p4.len()], vec![0; p6.len()]);
                let mut seen = Set::new();
                let mut last = 0;
                while !done.load(Ordering::Relaxed) {
                    let g0 = reader.generation();
                    let fib = reader.load();
                    fib.v4().lookup_batch(&p4, &mut o4);
                    fib.v6().lookup_batch(&p6, &mut o6);
                    drop(fib);
                    let g1 = reader.generation();
                    assert!(g0 >= last, "generation went back from {last} to {g0}");
                    last = g0;
                    seen.insert(g0);
                    let states = states.lock().unwrap();
                    // The generations this frame may have seen (the next one is pushed
                    // before it is committed).
                    let gens = &states[g0 as usize..states.len().min(g1 as usize + 2)];
                    for (&a, &got) in p4.iter().zip(&o4) {
                        assert!(
                            gens.iter().any(|s| got == expect(&c4, s.0, a)),
                            "gens {g0}..={g1}+1 {a:#x} got {got}"
                        );
                    }
                    for (&a, &got) in p6.iter().zip(&o6) {
                        assert!(
                            gens.iter().any(|s| got == expect(&c6, s.1, a)),
                            "gens {g0}..={g1}+1 {a:#x} got {got}"
                        );
                    }
                }
                seen.len()
            })
        })
        .collect();

    // The writer on its own thread, as the control plane will be.
    let writer = {
        let states = states.clone();
        let (c4, c6, p4, p6) = (c4.clone(), c6.clone(), probes4.clone(), probes6.clone());
        std::thread::spawn(move || {
            let (mut on4, mut on6) = (0u64, 0u64);
            for step in 0..3000u64 {
                // One to three changes per commit, IPv4 and IPv6 mixed.
                for _ in 0..1 + rng.below(3) {
                    let i = rng.below(64) as usize;
                    if rng.below(2) == 0 {
                        if on4 >> i & 1 == 1 {
                            assert_eq!(w.del4(c4[i]), Some(i as u32));
                        } else {
                            assert_eq!(w.add4(c4[i], i as u32), Ok(None));
                        }
                        on4 ^= 1 << i;
                    } else {
                        if on6 >> i & 1 == 1 {
                            assert_eq!(w.del6(c6[i]), Some(i as u32));
                        } else {
                            assert_eq!(w.add6(c6[i], i as u32), Ok(None));
                        }
                        on6 ^= 1 << i;
                    }
                }
                states.lock().unwrap().push((on4, on6));
                assert_eq!(w.commit(), step + 1);
                // The writer's own check, between commits: the table is its route set's.
                let fib = w.reader().load();
                let (mut o4, mut o6) = (vec![0; p4.len()], vec![0; p6.len()]);
                fib.v4().lookup_batch(&p4, &mut o4);
                fib.v6().lookup_batch(&p6, &mut o6);
                for (&a, &got) in p4.iter().zip(&o4) {
                    assert_eq!(got, expect(&c4, on4, a), "step {step} {a:#x}");
                }
                for (&a, &got) in p6.iter().zip(&o6) {
                    assert_eq!(got, expect(&c6, on6, a), "step {step} {a:#x}");
                }
            }
        })
    };
    let writer_result = writer.join();
    done.store(true, Ordering::Relaxed);
    assert!(writer_result.is_ok(), "writer failed");
    for r in readers {
        let generations_seen = r.join().expect("reader saw an inconsistent table");
        assert!(
            generations_seen > 1,
            "reader saw only {generations_seen} generation"
        );
    }
}

/// A worker that holds a table across a commit that replaces it keeps reading the old table,
/// whole and valid, until it lets go (its quiescent point); only then does the writer free it.
#[test]
fn fib_a_replaced_table_lives_until_its_last_reader_lets_go() {
    for block_min in BLOCK_MINS {
        a_replaced_table_lives_until_its_last_reader_lets_go(block_min);
    }
}

fn a_replaced_table_lives_until_its_last_reader_lets_go(block_min: u32) {
    let mut w = empty_writer(block_min);
    let p = |i: u32| Prefix4::containing(0x0a00_0000 | i << 8, 24);
    w.add4(p(0), 1).unwrap();
    w.commit();
    let held = w.reader().load_full();
    // Past 1 024 routes the trie is rebuilt with its full top level: a new table.
    for i in 1..1100 {
        w.add4(p(i), 2).unwrap();
    }
    w.commit();
    assert_eq!(w.reclaim(), 1, "the old table is still held");
    assert!(w.memory().retired > 0);
    assert_eq!(w.reader().load().v4().lookup(0x0a00_0501), 2);
    // The holder still sees the table of its own generation: one route, not 1 100.
    let mut out = [0u32; 3];
    held.v4()
        .lookup_batch(&[0x0a00_0001, 0x0a00_0501, 0x0a04_4b01], &mut out);
    assert_eq!(out, [1, NO_ROUTE, NO_ROUTE]);
    drop(held);
    assert_eq!(w.reclaim(), 0);
    assert_eq!(w.memory().retired, 0);
}

#[test]
fn fib_deferred_batches_build_once_and_match_reference() {
    for block_min in BLOCK_MINS {
        let mut rng = Rng::new(19);
        let mut w = empty_writer(block_min);
        let (mut r4, mut r6) = (Reference::new(), Reference::new());
        let dst4: Vec<u32> = (0..5_000).map(|_| rng.next_u32()).collect();
        let dst6: Vec<u128> = (0..2_000)
            .map(|_| (0x2001_0db8u128 << 96) ^ (rng.next_u128() >> 40))
            .collect();
        for round in 0..6 {
            // Deferred rounds and change-by-change rounds alternate; within a deferred
            // round, adds, replaces and deletes of the same prefixes.
            if round % 2 == 0 {
                w.set_deferred(true);
            }
            let mut added4 = Vec::new();
            for i in 0..400u32 {
                let p = rng.prefix4_near(0x0a00_0000, 24);
                w.add4(p, i + round).unwrap();
                r4.insert(p, i + round);
                added4.push(p);
                let q = rng.prefix6_near(0x2001_0db8u128 << 96, 40);
                w.add6(q, i).unwrap();
                r6.insert(q, i);
            }
            for p in added4.iter().step_by(3) {
                w.del4(*p);
                r4.remove(*p);
            }
            check4(&mut w, &r4, &dst4);
            check6(&mut w, &r6, &dst6);
        }
    }
}
