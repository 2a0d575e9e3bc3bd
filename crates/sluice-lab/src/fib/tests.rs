//! The dataplane's FIB against synthetic full tables: a reference longest match
//! (`RouteTable::lookup`) under churn, and the previous FIB (DIR-24-8, the IPv6 stride trie).

use super::legacy::StrideFibWriter;
use super::synth::{self, synth, Rng, SynthSpec};
use sluice::fib::poptrie_writer::{PoptrieWriter, BLOCK_MIN, SHORT_LEVELS};
use sluice::fib::prefix::{Addr, Prefix4, Prefix6};
use sluice::fib::{Fib, FibWriter, RouteTable, NO_ROUTE};

/// Every address in `dst` looks up in the committed tables as in the reference `r`.
fn check<A: Addr>(
    w: &mut FibWriter,
    r: &RouteTable<A>,
    dst: &[A],
    lookup: impl Fn(&Fib, &[A], &mut [u32]),
) {
    w.commit();
    let fib = w.reader().load();
    let mut out = vec![0; 256];
    for chunk in dst.chunks(256) {
        lookup(&fib, chunk, &mut out[..chunk.len()]);
        for (a, &got) in chunk.iter().zip(&out) {
            let want = r.lookup(*a).map_or(NO_ROUTE, |(_, nh)| nh);
            assert_eq!(got, want, "{a:?}");
        }
    }
}

fn table4(routes: &[Prefix4]) -> RouteTable<u32> {
    let mut t = RouteTable::new();
    for (i, p) in routes.iter().enumerate() {
        t.insert(*p, i as u32 % 5000);
    }
    t
}

fn table6(routes: &[Prefix6]) -> RouteTable<u128> {
    let mut t = RouteTable::new();
    for (i, p) in routes.iter().enumerate() {
        t.insert(*p, i as u32 % 5000);
    }
    t
}

#[test]
fn fib_realistic_tables_with_churn_match_reference() {
    for block_min in [BLOCK_MIN, 0] {
        realistic_tables_with_churn_match_reference(block_min);
    }
}

fn realistic_tables_with_churn_match_reference(block_min: u32) {
    let spec = SynthSpec {
        v4: 150_000,
        v6: 30_000,
        seed: 11,
        next_hops: 16,
        default_route: false,
        long_share: 0.03,
    };
    let (v4, v6) = synth(&spec);
    // As the product's tests do: with `block_min` 0 every slot with a subtree is a block and
    // the IPv6 shortcut sits one level below the top.
    let levels = if block_min == 0 { 1 } else { SHORT_LEVELS };
    let mut w =
        FibWriter::with_routes_variant(v4.iter().copied(), v6.iter().copied(), block_min, levels)
            .unwrap();
    let mut r4 = RouteTable::new();
    let mut r6 = RouteTable::new();
    v4.iter().for_each(|&(p, nh)| _ = r4.insert(p, nh));
    v6.iter().for_each(|&(p, nh)| _ = r6.insert(p, nh));
    let mut rng = Rng::new(12);
    for round in 0..3 {
        // Random addresses, and addresses inside the routes (hits, at every depth).
        let mut d4: Vec<u32> = (0..200_000).map(|_| rng.next_u32()).collect();
        d4.extend((0..200_000).map(|_| {
            let p = v4[rng.below(v4.len() as u64) as usize].0;
            p.addr() | (rng.next_u32() & (p.addr() ^ p.last()))
        }));
        check(&mut w, &r4, &d4, |f, d, o| f.v4().lookup_batch(d, o));
        let mut d6: Vec<u128> = (0..50_000).map(|_| rng.next_u128()).collect();
        d6.extend((0..100_000).map(|_| {
            let p = v6[rng.below(v6.len() as u64) as usize].0;
            p.addr() | (rng.next_u128() & (p.addr() ^ p.last()))
        }));
        check(&mut w, &r6, &d6, |f, d, o| f.v6().lookup_batch(d, o));
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
fn a_full_table_against_dir_24_8() {
    let mut rng = Rng::new(7);
    let mut routes = synth::v4_prefixes(200_000, &mut rng);
    let long = synth::v4_long_prefixes(&routes, 6_000, &mut rng);
    routes.extend(long);
    let t = table4(&routes);
    let pw = PoptrieWriter::<u32>::build(&t);
    let p = pw.trie();
    let w = StrideFibWriter::with_routes(t.iter(), std::iter::empty()).unwrap();
    let fib = w.reader().load_full();
    let addrs: Vec<u32> = (0..1_000_000).map(|_| rng.next_u32()).collect();
    let (mut a, mut b) = (vec![0; 256], vec![0; 256]);
    for chunk in addrs.chunks(256) {
        p.lookup_batch(chunk, &mut a);
        fib.v4().lookup_batch(chunk, &mut b);
        assert_eq!(a[..chunk.len()], b[..chunk.len()]);
    }
    assert!(p.memory_bytes() < fib.v4().memory_bytes() / 4);
}

#[test]
fn an_ipv6_table_against_the_stride_trie() {
    let mut rng = Rng::new(9);
    let mut routes = synth::v6_prefixes(50_000, &mut rng);
    let long = synth::v6_long_prefixes(&routes, 2_000, &mut rng);
    routes.extend(long);
    let t = table6(&routes);
    let pw = PoptrieWriter::<u128>::build(&t);
    let p = pw.trie();
    let w = StrideFibWriter::with_routes(std::iter::empty(), t.iter()).unwrap();
    let fib = w.reader().load_full();
    // Addresses inside the routes, and some anywhere.
    let mut addrs: Vec<u128> = routes.iter().map(|q| q.addr() | 0x1234).collect();
    addrs.extend((0..20_000).map(|_| (rng.next_u32() as u128) << 96 | rng.next_u32() as u128));
    let (mut a, mut b) = (vec![0; 256], vec![0; 256]);
    for chunk in addrs.chunks(256) {
        p.lookup_batch(chunk, &mut a);
        fib.v6().lookup_batch(chunk, &mut b);
        assert_eq!(a[..chunk.len()], b[..chunk.len()]);
    }
    assert!(p.memory_bytes() < fib.v6().memory_bytes() / 4);
}
