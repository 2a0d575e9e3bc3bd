//! Synthetic full tables, deterministic by seed, shaped like the public BGP tables.
//!
//! IPv4 prefix lengths follow the shape of the default-free zone in 2024 as reported by
//! Geoff Huston's BGP table reports (bgp.potaroo.net, AS65000/AS131072 views): /24 a little
//! over 60 %, then /22, /23, /21, /20, /19, /18, /16, /17, and a thin tail up to /8, nothing
//! longer than /24. The per-length weights below are rounded approximations of those reports,
//! not an exact copy of any one day. IPv6 (same source, ~220 k routes): about half /48, then
//! /32, /44, /40, /29, /36, /46, /47, and a few /56 and /64.
//!
//! That is the default shape, the public table alone. `SynthSpec::long_share` adds what a
//! provider's own routers also carry: a share of routes longer than /24 (IPv4) or /48 (IPv6),
//! its IGP loopbacks and links and its customers' small blocks. There is no public census of
//! those; their lengths (`V4_LONG_LENGTHS`, `V6_LONG_LENGTHS`) are a plausible guess, weighted
//! to /32 and /30 (/128, /64 and /56 for IPv6). They sit inside the table's own space, a few to
//! a /24 or /48, as an operator numbers such routes from a few blocks: about `LONG_PER_BLOCK` per
//! /24 or /48, and IPv6 routes longer than /64 in the first 2^16 addresses of their /64.
//!
//! Prefixes are unique, the default route appears only when asked for, and next hops are
//! drawn from a small set (`next_hops`). IPv6 more-specifics (longer than /32) are placed
//! inside a pool of /32 allocations, near their start, as ISPs number customers from the start
//! of their space: a uniformly random placement would need one trie node per /48 and give a
//! table far sparser than the real one.

use super::destinations::inside;
use sluice::fib::prefix::{Addr, Prefix, Prefix4, Prefix6};
use std::collections::HashSet;

pub use sluice::fib::rng::Rng;

/// (prefix length, routes per million) for IPv4.
const V4_LENGTHS: &[(u8, u32)] = &[
    (8, 16),
    (9, 12),
    (10, 35),
    (11, 95),
    (12, 300),
    (13, 600),
    (14, 1_100),
    (15, 2_000),
    (16, 13_500),
    (17, 8_500),
    (18, 14_500),
    (19, 25_000),
    (20, 42_000),
    (21, 46_000),
    (22, 120_000),
    (23, 105_000),
    (24, 621_342),
];

/// (prefix length, routes per million) for IPv6.
const V6_LENGTHS: &[(u8, u32)] = &[
    (24, 1_000),
    (25, 300),
    (26, 700),
    (27, 1_000),
    (28, 2_000),
    (29, 35_000),
    (30, 3_000),
    (31, 2_000),
    (32, 110_000),
    (33, 10_000),
    (34, 8_000),
    (35, 7_000),
    (36, 30_000),
    (38, 12_000),
    (39, 8_000),
    (40, 60_000),
    (41, 5_000),
    (42, 15_000),
    (43, 5_000),
    (44, 80_000),
    (45, 15_000),
    (46, 25_000),
    (47, 20_000),
    (48, 542_000),
    (56, 2_000),
    (64, 1_000),
];

/// (prefix length, routes per thousand) of the routes longer than /24 in the long variant.
const V4_LONG_LENGTHS: &[(u8, u32)] = &[
    (25, 60),
    (26, 60),
    (27, 70),
    (28, 100),
    (29, 150),
    (30, 200),
    (31, 80),
    (32, 280),
];

/// (prefix length, routes per thousand) of the routes longer than /48 in the long variant.
const V6_LONG_LENGTHS: &[(u8, u32)] = &[
    (52, 50),
    (56, 250),
    (60, 50),
    (64, 350),
    (126, 30),
    (127, 70),
    (128, 200),
];

/// Long routes per /24 (IPv4) or /48 (IPv6) that holds any, on average.
const LONG_PER_BLOCK: usize = 4;

fn pick_len(rng: &mut Rng, table: &[(u8, u32)]) -> u8 {
    let total: u64 = table.iter().map(|&(_, w)| w as u64).sum();
    let mut x = rng.below(total);
    for &(len, w) in table {
        if x < w as u64 {
            return len;
        }
        x -= w as u64;
    }
    table.last().map_or(24, |&(l, _)| l)
}

/// Routable IPv4 unicast: not 0/8, 10/8, 127/8, nor class D/E.
fn v4_routable(a: u32) -> bool {
    let first = a >> 24;
    !(first == 0 || first == 10 || first == 127 || first >= 224)
}

/// How many draws a prefix gets before the generator tries a /24 (there are only so many /8s).
const TRIES: usize = 32;

/// `n` unique IPv4 prefixes (fewer only if the routable space runs out).
pub fn v4_prefixes(n: usize, rng: &mut Rng) -> Vec<Prefix4> {
    distinct(HashSet::with_capacity(n), n, rng, |rng, seen| {
        let want = pick_len(rng, V4_LENGTHS);
        [want, 24].iter().find_map(|&len| {
            (0..TRIES).find_map(|_| {
                let p = Prefix4::containing(rng.next_u32(), len);
                (v4_routable(p.addr()) && !seen.contains(&p)).then_some(p)
            })
        })
    })
}

/// RIR blocks that hold nearly all of the IPv6 table.
const V6_BLOCKS: &[(u128, u8)] = &[
    (0x2001_0000 << 96, 16),
    (0x2400_0000 << 96, 12),
    (0x2600_0000 << 96, 12),
    (0x2800_0000 << 96, 12),
    (0x2a00_0000 << 96, 12),
    (0x2c00_0000 << 96, 12),
];

/// `n` unique IPv6 prefixes.
pub fn v6_prefixes(n: usize, rng: &mut Rng) -> Vec<Prefix6> {
    // One /32 allocation per four routes, like the real table's ratio of /48s to /32s holders.
    let allocations: Vec<u128> = (0..(n / 4).max(1))
        .map(|_| {
            let (base, len) = V6_BLOCKS[rng.below(V6_BLOCKS.len() as u64) as usize];
            let host = rng.next_u128() >> len;
            Prefix6::containing(base | host, 32).addr()
        })
        .collect();
    distinct(HashSet::with_capacity(n), n, rng, |rng, seen| {
        let want = pick_len(rng, V6_LENGTHS);
        [want, 48].iter().find_map(|&len| {
            (0..TRIES).find_map(|_| {
                let p = if len <= 32 {
                    let (base, blen) = V6_BLOCKS[rng.below(V6_BLOCKS.len() as u64) as usize];
                    Prefix6::containing(base | rng.next_u128() >> blen, len)
                } else {
                    // Inside an allocation, in one of its first four /40s.
                    let alloc = allocations[rng.below(allocations.len() as u64) as usize];
                    let first40 = (rng.below(4) as u128) << 88;
                    let rest = rng.next_u128() >> 40;
                    Prefix6::containing(alloc | first40 | rest, len)
                };
                (!seen.contains(&p)).then_some(p)
            })
        })
    })
}

/// `n` unique IPv4 prefixes /25–/32 inside the routes of `table` (which has none longer than
/// /24), about `LONG_PER_BLOCK` to a /24.
pub fn v4_long_prefixes(table: &[Prefix4], n: usize, rng: &mut Rng) -> Vec<Prefix4> {
    if n == 0 {
        return Vec::new();
    }
    let blocks: Vec<u32> = (0..(n / LONG_PER_BLOCK).max(1))
        .map(|_| {
            let a = match table.len() {
                0 => rng.next_u32(),
                len => inside(table[rng.below(len as u64) as usize], rng),
            };
            Prefix4::containing(a, 24).addr()
        })
        .collect();
    long_prefixes(table, n, rng, |rng| {
        let block = blocks[rng.below(blocks.len() as u64) as usize];
        Prefix4::containing(
            block | (rng.next_u32() & 0xff),
            pick_len(rng, V4_LONG_LENGTHS),
        )
    })
}

/// `n` unique IPv6 prefixes /49–/128 inside the /48 and shorter routes of `table`, about `LONG_PER_BLOCK` to a
/// /48; those longer than /64 in the first 2^16 addresses of their /64. None is in `table`.
pub fn v6_long_prefixes(table: &[Prefix6], n: usize, rng: &mut Rng) -> Vec<Prefix6> {
    if n == 0 {
        return Vec::new();
    }
    // A /48 inside a route of /48 or shorter, so that the long routes have a covering one.
    let hosts: Vec<Prefix6> = table.iter().copied().filter(|p| p.len() <= 48).collect();
    let blocks: Vec<u128> = (0..(n / LONG_PER_BLOCK).max(1))
        .map(|_| {
            let a = match hosts.len() {
                0 => 0x2001_0db8u128 << 96 | rng.next_u128() >> 32,
                len => inside(hosts[rng.below(len as u64) as usize], rng),
            };
            Prefix6::containing(a, 48).addr()
        })
        .collect();
    long_prefixes(table, n, rng, |rng| {
        let block = blocks[rng.below(blocks.len() as u64) as usize];
        let subnet = (rng.below(1 << 16) as u128) << 64;
        let host = rng.below(1 << 16) as u128;
        Prefix6::containing(block | subnet | host, pick_len(rng, V6_LONG_LENGTHS))
    })
}

/// Up to `n` distinct prefixes from `draw` that are not in `table` (fewer only if it keeps
/// repeating itself).
fn long_prefixes<A: Addr>(
    table: &[Prefix<A>],
    n: usize,
    rng: &mut Rng,
    mut draw: impl FnMut(&mut Rng) -> Prefix<A>,
) -> Vec<Prefix<A>> {
    distinct(table.iter().copied().collect(), n, rng, |rng, seen| {
        (0..TRIES).map(|_| draw(rng)).find(|p| !seen.contains(p))
    })
}

/// Up to `n` prefixes, each the one `next` picks given those `seen` so far (which it must not
/// pick again); fewer when `next` finds none.
fn distinct<A: Addr>(
    mut seen: HashSet<Prefix<A>>,
    n: usize,
    rng: &mut Rng,
    mut next: impl FnMut(&mut Rng, &HashSet<Prefix<A>>) -> Option<Prefix<A>>,
) -> Vec<Prefix<A>> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match next(rng, &seen) {
            Some(p) => {
                seen.insert(p);
                out.push(p);
            }
            None => break,
        }
    }
    out
}

/// What `synth` makes.
#[derive(Clone, Debug)]
pub struct SynthSpec {
    pub v4: usize,
    pub v6: usize,
    pub seed: u64,
    /// Next hops are 0..next_hops.
    pub next_hops: u32,
    /// Add 0.0.0.0/0 and ::/0 (with next hop 0).
    pub default_route: bool,
    /// Share (0 to 0.5) of each family's routes that are longer than /24 or /48, placed inside
    /// the others; 0 (the default of `sluice fib synth`) gives the public table's shape alone.
    pub long_share: f64,
}

/// The most `long_share` can be: the long routes live inside the others.
pub const MAX_LONG_SHARE: f64 = 0.5;

/// Routes of both families with next-hop indices.
pub type Routes = (Vec<(Prefix4, u32)>, Vec<(Prefix6, u32)>);

/// A synthetic table: routes with next hop indices.
pub fn synth(spec: &SynthSpec) -> Routes {
    let mut rng = Rng::new(spec.seed);
    let hops = spec.next_hops.max(1) as u64;
    // With no long routes the draws are exactly those of the plain table, so a seed's table
    // stays what it was.
    let long = |n: usize| (n as f64 * spec.long_share.clamp(0.0, MAX_LONG_SHARE)).round() as usize;
    let mut p4 = v4_prefixes(spec.v4 - long(spec.v4), &mut rng);
    let extra4 = v4_long_prefixes(&p4, long(spec.v4), &mut rng);
    p4.extend(extra4);
    let mut v4: Vec<(Prefix4, u32)> = p4
        .into_iter()
        .map(|p| (p, rng.below(hops) as u32))
        .collect();
    let mut p6 = v6_prefixes(spec.v6 - long(spec.v6), &mut rng);
    let extra6 = v6_long_prefixes(&p6, long(spec.v6), &mut rng);
    p6.extend(extra6);
    let mut v6: Vec<(Prefix6, u32)> = p6
        .into_iter()
        .map(|p| (p, rng.below(hops) as u32))
        .collect();
    if spec.default_route {
        v4.insert(0, (Prefix4::containing(0, 0), 0));
        v6.insert(0, (Prefix6::containing(0, 0), 0));
    }
    (v4, v6)
}

/// Whether two prefixes share an address (one contains the other).
pub fn overlaps<A: Addr>(a: Prefix<A>, b: Prefix<A>) -> bool {
    a.contains(b.addr()) || b.contains(a.addr())
}

/// `synth`, less every prefix that overlaps one of `avoid4`/`avoid6`, topped up from further
/// seeds so that the table keeps its size: a lab's test routes stay the only match for its
/// traffic, and a connected subnet is never replaced by a synthetic route.
pub fn synth_avoiding(spec: &SynthSpec, avoid4: &[Prefix4], avoid6: &[Prefix6]) -> Routes {
    let ok4 = |p: &Prefix4| !avoid4.iter().any(|a| overlaps(*a, *p));
    let ok6 = |p: &Prefix6| !avoid6.iter().any(|a| overlaps(*a, *p));
    let (mut v4, mut v6) = synth(spec);
    v4.retain(|r| ok4(&r.0));
    v6.retain(|r| ok6(&r.0));
    let mut seen4: HashSet<Prefix4> = v4.iter().map(|r| r.0).collect();
    let mut seen6: HashSet<Prefix6> = v6.iter().map(|r| r.0).collect();
    // Few rounds: each adds what was removed, and little of it is removed again.
    for round in 1..=16u64 {
        if v4.len() >= spec.v4 && v6.len() >= spec.v6 {
            break;
        }
        let (e4, e6) = synth(&SynthSpec {
            v4: spec.v4 - v4.len().min(spec.v4),
            v6: spec.v6 - v6.len().min(spec.v6),
            seed: spec.seed.wrapping_add(round << 32),
            default_route: false,
            ..spec.clone()
        });
        v4.extend(e4.into_iter().filter(|r| ok4(&r.0) && seen4.insert(r.0)));
        v6.extend(e6.into_iter().filter(|r| ok6(&r.0) && seen6.insert(r.0)));
    }
    (v4, v6)
}

/// The text next hop of index `i` in a synthetic table (documentation ranges, RFC 5737/3849).
pub fn v4_next_hop_text(i: u32) -> String {
    format!("198.51.100.{}", i % 254 + 1)
}

pub fn v6_next_hop_text(i: u32) -> String {
    format!("2001:db8::{:x}", i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fib_synth_is_deterministic_unique_and_shaped() {
        let spec = SynthSpec {
            v4: 20_000,
            v6: 5_000,
            seed: 7,
            next_hops: 8,
            default_route: false,
            long_share: 0.0,
        };
        let (a4, a6) = synth(&spec);
        let (b4, b6) = synth(&spec);
        assert_eq!(a4, b4);
        assert_eq!(a6, b6);
        assert_eq!(a4.len(), 20_000);
        assert_eq!(a6.len(), 5_000);
        let u4: HashSet<_> = a4.iter().map(|r| r.0).collect();
        let u6: HashSet<_> = a6.iter().map(|r| r.0).collect();
        assert_eq!(u4.len(), a4.len());
        assert_eq!(u6.len(), a6.len());
        let share = |n: usize| n as f64 / 20_000.0;
        let c24 = a4.iter().filter(|r| r.0.len() == 24).count();
        assert!((0.55..0.70).contains(&share(c24)), "{c24}");
        assert!(a4
            .iter()
            .all(|r| r.0.len() >= 8 && r.0.len() <= 24 && r.1 < 8));
        assert!(a4.iter().all(|r| v4_routable(r.0.addr())));
        let c48 = a6.iter().filter(|r| r.0.len() == 48).count();
        assert!(c48 * 2 > a6.len(), "{c48}");
        assert!(a6.iter().all(|r| r.0.addr() >> 125 == 1), "all in 2000::/3");
        let other = synth(&SynthSpec { seed: 8, ..spec });
        assert_ne!(other.0, a4);
    }

    #[test]
    fn fib_synth_avoiding_keeps_size_and_misses_the_ranges() {
        let spec = SynthSpec {
            v4: 50_000,
            v6: 10_000,
            seed: 3,
            next_hops: 2,
            default_route: false,
            long_share: 0.0,
        };
        // Wide ranges, so that plain synth surely hits them.
        let avoid4 = [
            Prefix4::containing(0xc600_0000, 7),
            Prefix4::containing(0x0b00_0000, 8),
        ];
        let avoid6 = [
            Prefix6::containing(0x2001_0db8 << 96, 32),
            Prefix6::containing(0x2400 << 112, 12),
        ];
        let (p4, p6) = synth(&spec);
        assert!(p4.iter().any(|r| avoid4.iter().any(|a| overlaps(*a, r.0))));
        assert!(p6.iter().any(|r| avoid6.iter().any(|a| overlaps(*a, r.0))));
        let (v4, v6) = synth_avoiding(&spec, &avoid4, &avoid6);
        assert_eq!((v4.len(), v6.len()), (50_000, 10_000));
        assert!(v4.iter().all(|r| avoid4.iter().all(|a| !overlaps(*a, r.0))));
        assert!(v6.iter().all(|r| avoid6.iter().all(|a| !overlaps(*a, r.0))));
        assert_eq!(
            v4.iter().map(|r| r.0).collect::<HashSet<_>>().len(),
            v4.len()
        );
        assert_eq!(
            v6.iter().map(|r| r.0).collect::<HashSet<_>>().len(),
            v6.len()
        );
        assert!(v4.iter().all(|r| r.1 < 2));
        assert_eq!(
            synth_avoiding(&spec, &avoid4, &avoid6).0,
            v4,
            "deterministic"
        );
        // A /0 overlaps everything; a prefix inside a range too.
        assert!(overlaps(Prefix4::containing(0, 0), avoid4[0]));
        assert!(overlaps(Prefix4::containing(0xc612_0000, 16), avoid4[0]));
        assert!(!overlaps(Prefix4::containing(0xc800_0000, 8), avoid4[0]));
    }

    #[test]
    fn fib_synth_default_route_only_when_asked() {
        let spec = SynthSpec {
            v4: 100,
            v6: 100,
            seed: 1,
            next_hops: 4,
            default_route: true,
            long_share: 0.0,
        };
        let (v4, v6) = synth(&spec);
        assert_eq!(v4.iter().filter(|r| r.0.is_empty()).count(), 1);
        assert_eq!(v6.iter().filter(|r| r.0.is_empty()).count(), 1);
        let (v4, _) = synth(&SynthSpec {
            default_route: false,
            ..spec
        });
        assert!(v4.iter().all(|r| !r.0.is_empty()));
    }

    #[test]
    fn fib_synth_long_variant_has_the_requested_share_inside_the_table() {
        let spec = SynthSpec {
            v4: 40_000,
            v6: 10_000,
            seed: 9,
            next_hops: 4,
            default_route: false,
            long_share: 0.04,
        };
        let (v4, v6) = synth(&spec);
        assert_eq!((v4.len(), v6.len()), (40_000, 10_000));
        assert_eq!(synth(&spec), (v4.clone(), v6.clone()), "deterministic");
        let u4: HashSet<_> = v4.iter().map(|r| r.0).collect();
        let u6: HashSet<_> = v6.iter().map(|r| r.0).collect();
        assert_eq!((u4.len(), u6.len()), (v4.len(), v6.len()), "unique");
        // IPv4: exactly 4 % are /25-/32, every length of that range is there, and each lies
        // inside a /24 or shorter route of the table (so DIR-24-8 needs second-level groups).
        let long4: Vec<Prefix4> = v4.iter().map(|r| r.0).filter(|p| p.len() > 24).collect();
        assert_eq!(long4.len(), 1_600);
        for len in 25..=32 {
            assert!(long4.iter().any(|p| p.len() == len), "no /{len}");
        }
        let mut t4 = sluice::fib::RouteTable::new();
        v4.iter().filter(|r| r.0.len() <= 24).for_each(|r| {
            t4.insert(r.0, r.1);
        });
        assert!(long4.iter().all(|&p| t4.covering(p).is_some()));
        let blocks: HashSet<u32> = long4.iter().map(|p| p.addr() >> 8).collect();
        assert!(
            (200..=600).contains(&blocks.len()),
            "about four to a /24: {} /24s",
            blocks.len()
        );
        // IPv6: 4 % drawn /49-/128 (the plain shape adds a few /56 and /64 of its own).
        let long6 = v6.iter().filter(|r| r.0.len() > 48).count();
        assert!((400..=400 + 100).contains(&long6), "{long6}");
        // Those drawn by `v6_long_prefixes` are new, of every length, each inside a /48 or
        // shorter route of the table.
        let mut rng = Rng::new(4);
        let base = v6_prefixes(5_000, &mut rng);
        let extra = v6_long_prefixes(&base, 400, &mut rng);
        assert_eq!(extra.len(), 400);
        for len in [52, 56, 64, 126, 127, 128] {
            assert!(extra.iter().any(|p| p.len() == len), "no /{len}");
        }
        let mut t6 = sluice::fib::RouteTable::new();
        base.iter().filter(|p| p.len() <= 48).for_each(|&p| {
            t6.insert(p, 0);
        });
        let base: HashSet<Prefix6> = base.into_iter().collect();
        assert!(extra
            .iter()
            .all(|&p| p.len() > 48 && t6.covering(p).is_some() && !base.contains(&p)));
        // No long routes at share 0: the public table's shape alone.
        let (p4, _) = synth(&SynthSpec {
            long_share: 0.0,
            ..spec
        });
        assert!(p4.iter().all(|r| r.0.len() <= 24));
    }
}
