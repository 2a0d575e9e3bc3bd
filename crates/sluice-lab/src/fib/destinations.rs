//! Destination address sets for measuring lookups, each with a line saying what it measures.
//! They are drawn from the route list alone, never from the lookup structure, so the same
//! sets serve any FIB layout.
//!
//! - `hit`: a route of the table chosen uniformly (the default route left out), then an address
//!   inside it. Every route is equally likely, so the lookups spread over the whole table and
//!   every one matches a route longer than /0: the working set is the table itself.
//! - `hot`: the first `HOT` addresses of `hit`, over and over: a working set of a few thousand
//!   lookup paths, which stays in the caches. What a lookup costs without memory misses.
//! - `announced`: uniform over the address space the table announces (the union of its
//!   prefixes, default route left out), so a /8 draws 65 536 times as often as a /24.
//! - `uniform`: uniform over the whole address space (2^32 or 2^128), announced or not. For IPv6
//!   nearly every address lies outside 2000::/3 and matches nothing.

use super::synth::Rng;
use sluice::fib::prefix::{Addr, Prefix};

/// Addresses in the `hot` set.
pub const HOT: usize = 1024;

/// One set of destinations and what a lookup rate over it measures.
pub struct DestinationSet<A> {
    /// Short name for a table column: `hit`, `hot`, `announced`, `uniform`.
    pub name: &'static str,
    /// One phrase: how the addresses were drawn and what that makes the lookups touch.
    pub what: String,
    pub addrs: Vec<A>,
}

/// A uniformly random address inside `p`.
pub fn inside<A: Addr>(p: Prefix<A>, rng: &mut Rng) -> A {
    let host = rng.next_u128().checked_shr(p.len() as u32).unwrap_or(0);
    A::from_left_u128(p.addr().to_left_u128() | host)
}

/// `n` addresses, each inside a route of `routes` chosen uniformly; the default route is
/// left out, so every address matches a route longer than /0. Empty when only a default
/// route (or nothing) is there.
pub fn hit<A: Addr>(routes: &[Prefix<A>], n: usize, rng: &mut Rng) -> Vec<A> {
    let specific: Vec<Prefix<A>> = routes.iter().copied().filter(|p| !p.is_empty()).collect();
    if specific.is_empty() {
        return Vec::new();
    }
    (0..n)
        .map(|_| inside(specific[rng.below(specific.len() as u64) as usize], rng))
        .collect()
}

/// The prefixes of `routes` that no other route covers (the default route left out), in
/// address order: the announced space as disjoint blocks.
pub fn outermost<A: Addr>(routes: &[Prefix<A>]) -> Vec<Prefix<A>> {
    let mut sorted: Vec<Prefix<A>> = routes.iter().copied().filter(|p| !p.is_empty()).collect();
    // By address, then shorter first: a covering prefix comes before everything inside it.
    sorted.sort_unstable_by_key(|p| (p.addr(), p.len()));
    let mut out: Vec<Prefix<A>> = Vec::new();
    for p in sorted {
        if !out.last().is_some_and(|q| q.contains(p.addr())) {
            out.push(p);
        }
    }
    out
}

/// Number of addresses in `p`, as a float (2^128 does not fit any integer type).
fn size<A: Addr>(p: Prefix<A>) -> f64 {
    2f64.powi((A::BITS - p.len()) as i32)
}

/// How many addresses `routes` announce (the default route left out).
pub fn announced_size<A: Addr>(routes: &[Prefix<A>]) -> f64 {
    outermost(routes).into_iter().map(size).sum()
}

/// `n` addresses uniform over the announced space: a block is chosen in proportion to its
/// size, then an address inside it. Empty when nothing but a default route is announced.
pub fn announced<A: Addr>(routes: &[Prefix<A>], n: usize, rng: &mut Rng) -> Vec<A> {
    let blocks = outermost(routes);
    let mut total = 0.0;
    let ends: Vec<f64> = blocks
        .iter()
        .map(|&p| {
            total += size(p);
            total
        })
        .collect();
    if blocks.is_empty() {
        return Vec::new();
    }
    (0..n)
        .map(|_| {
            // 53 random bits, a uniform float in [0, total).
            let x = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
            let i = ends.partition_point(|&e| e <= x).min(blocks.len() - 1);
            inside(blocks[i], rng)
        })
        .collect()
}

/// `n` addresses uniform over the whole address space of the family.
pub fn uniform<A: Addr>(n: usize, rng: &mut Rng) -> Vec<A> {
    (0..n).map(|_| A::from_left_u128(rng.next_u128())).collect()
}

/// An address count as text: "2.57 G addresses, 60 % of 2^32", "2^113.3 of the 2^128
/// addresses".
fn count_text(count: f64, bits: u8) -> String {
    if bits <= 32 {
        let share = count / 2f64.powi(bits as i32) * 100.0;
        format!("{:.2} G addresses, {share:.0} % of 2^32", count / 1e9)
    } else {
        format!("2^{:.1} of the 2^{bits} addresses", count.log2())
    }
}

/// The four sets for a table of `routes`, `n` addresses each (`hot`: `HOT`).
pub fn sets<A: Addr>(routes: &[Prefix<A>], n: usize, rng: &mut Rng) -> Vec<DestinationSet<A>> {
    let hit = hit(routes, n, rng);
    let hot = hit[..HOT.min(hit.len())].to_vec();
    let space = if A::BITS == 32 { "2^32" } else { "2^128" };
    vec![
        DestinationSet {
            name: "hit",
            what: "a route of the table drawn uniformly, an address inside it: \
                   spread over the whole table"
                .into(),
            addrs: hit,
        },
        DestinationSet {
            name: "hot",
            what: format!(
                "{} addresses of the hit set, again and again: a working set that stays \
                 in cache",
                hot.len()
            ),
            addrs: hot,
        },
        DestinationSet {
            name: "announced",
            what: format!(
                "uniform over the announced space ({}): big prefixes draw most",
                count_text(announced_size(routes), A::BITS)
            ),
            addrs: announced(routes, n, rng),
        },
        DestinationSet {
            name: "uniform",
            what: if A::BITS == 32 {
                format!("uniform over all {space} addresses, announced or not")
            } else {
                format!("uniform over all {space} addresses: nearly all outside 2000::/3")
            },
            addrs: uniform(n, rng),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::synth::{synth, SynthSpec};
    use sluice::fib::prefix::{Prefix4, Prefix6};
    use sluice::fib::{FibWriter, NO_ROUTE};
    use std::collections::HashSet;

    fn p4(s: &str) -> Prefix4 {
        match sluice::fib::parse::parse_prefix(s) {
            Ok(sluice::fib::parse::IpPrefix::V4(p)) => p,
            other => panic!("{s}: {other:?}"),
        }
    }

    /// A synthetic table with a default route and long routes, and a FIB whose next hop is
    /// each route's index, so that a lookup names the prefix it matched.
    fn table() -> (Vec<Prefix4>, Vec<Prefix6>, FibWriter) {
        let (v4, v6) = synth(&SynthSpec {
            v4: 4_000,
            v6: 2_000,
            seed: 5,
            next_hops: 1,
            default_route: true,
            long_share: 0.05,
        });
        let v4: Vec<Prefix4> = v4.into_iter().map(|r| r.0).collect();
        let v6: Vec<Prefix6> = v6.into_iter().map(|r| r.0).collect();
        let w = FibWriter::with_routes(
            v4.iter().enumerate().map(|(i, &p)| (p, i as u32)),
            v6.iter().enumerate().map(|(i, &p)| (p, i as u32)),
        )
        .unwrap();
        (v4, v6, w)
    }

    #[test]
    fn fib_hit_set_matches_a_specific_route_and_spreads_over_the_table() {
        let (v4, v6, w) = table();
        assert!(
            v4[0].is_empty() && v6[0].is_empty(),
            "the default route is there"
        );
        let fib = w.reader().load_full();
        let mut rng = Rng::new(1);
        let d4 = hit(&v4, 40_000, &mut rng);
        let d6 = hit(&v6, 20_000, &mut rng);
        let (mut r4, mut r6) = (vec![0; d4.len()], vec![0; d6.len()]);
        fib.v4().lookup_batch(&d4, &mut r4);
        fib.v6().lookup_batch(&d6, &mut r6);
        for (&a, &r) in d4.iter().zip(&r4) {
            assert!(
                r != NO_ROUTE && r != 0,
                "{a:#x} matched {r}, not a specific route"
            );
            assert!(v4[r as usize].contains(a));
        }
        for (&a, &r) in d6.iter().zip(&r6) {
            assert!(
                r != NO_ROUTE && r != 0,
                "{a:#x} matched {r}, not a specific route"
            );
            assert!(v6[r as usize].contains(a));
        }
        // Every route equally likely: nearly all of them are reached, the long ones included.
        let seen4: HashSet<u32> = r4.iter().copied().collect();
        let seen6: HashSet<u32> = r6.iter().copied().collect();
        assert!(
            seen4.len() > v4.len() * 95 / 100,
            "{} of {}",
            seen4.len(),
            v4.len()
        );
        assert!(
            seen6.len() > v6.len() * 95 / 100,
            "{} of {}",
            seen6.len(),
            v6.len()
        );
        assert!(seen4.iter().any(|&r| v4[r as usize].len() > 24));
        assert!(seen6.iter().any(|&r| v6[r as usize].len() > 64));
        // The hot set is the start of the hit set.
        let mut rng = Rng::new(1);
        let s = sets(&v4, 5_000, &mut rng);
        assert_eq!(s[1].name, "hot");
        assert_eq!(s[1].addrs.len(), HOT);
        assert_eq!(s[1].addrs[..], s[0].addrs[..HOT]);
    }

    #[test]
    fn fib_random_v6_sets_are_spread() {
        let (_, v6, w) = table();
        let fib = w.reader().load_full();
        let mut rng = Rng::new(2);
        let slash16 = |d: &[u128]| d.iter().map(|a| a >> 112).collect::<HashSet<_>>().len();
        let slash32 = |d: &[u128]| d.iter().map(|a| a >> 96).collect::<HashSet<_>>().len();
        // Uniform over 2^128: 100 000 draws over 65 536 /16s reach about 51 000.
        let u = uniform::<u128>(100_000, &mut rng);
        assert!(slash16(&u) > 45_000, "{}", slash16(&u));
        // Over the announced space: the synthetic table's blocks cover 81 /16s (2001::/16 and
        // five /12s); the draws reach most of them and over a thousand /32s (the few short
        // prefixes, /24 to /29, draw most), and every one is inside a route that is not the
        // default.
        let a = announced(&v6, 100_000, &mut rng);
        assert!(slash16(&a) > 60, "{}", slash16(&a));
        assert!(slash32(&a) > 1_000, "{}", slash32(&a));
        let mut r = vec![0; a.len()];
        fib.v6().lookup_batch(&a, &mut r);
        assert!(r.iter().all(|&r| r != NO_ROUTE && r != 0));
        // The old "random" set, uniform in 2000::/3, spans 8 192 /16s at most.
        assert!(slash16(&a) < 8_192 && slash16(&u) > 8_192);
    }

    #[test]
    fn fib_announced_space_is_uniform_over_the_union() {
        let routes = [
            p4("0.0.0.0/0"),
            p4("10.0.0.0/8"),
            p4("10.1.0.0/16"),
            p4("10.1.2.128/25"),
            p4("192.0.2.0/24"),
            p4("198.51.100.0/24"),
        ];
        assert_eq!(
            outermost(&routes),
            [p4("10.0.0.0/8"), p4("192.0.2.0/24"), p4("198.51.100.0/24")]
        );
        assert_eq!(announced_size(&routes), (1u64 << 24) as f64 + 512.0);
        let mut rng = Rng::new(3);
        let a = announced(&routes, 100_000, &mut rng);
        let in10 = a.iter().filter(|&&x| routes[1].contains(x)).count();
        let in_24s = a
            .iter()
            .filter(|&&x| routes[4].contains(x) || routes[5].contains(x))
            .count();
        assert_eq!(
            in10 + in_24s,
            a.len(),
            "nothing outside the announced space"
        );
        // A /24 weighs 1/65 536 of a /8: about 3 of 100 000 draws.
        assert!(in_24s < 30, "{in_24s}");
        // Only a default route: nothing is announced, nothing to hit.
        assert!(announced(&routes[..1], 10, &mut rng).is_empty());
        assert!(hit(&routes[..1], 10, &mut rng).is_empty());
    }
}
