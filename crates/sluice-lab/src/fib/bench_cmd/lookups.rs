//! The lookup phase: each FIB's batched lookup rate on the destination sets, the FIBs taking
//! turns, with a check that they give the same answers; and where the poptrie's lookups of
//! the hit set spend their levels.

use super::build::Fibs;
use super::{mib, Look, Report, Routes, SET_SIZE, SLICES};
use crate::fib::destinations::{self, DestinationSet};
use crate::fib::measure;
use crate::fib::synth::Rng;
use serde_json::{json, Map, Value};
use sluice::fib::prefix::{Prefix4, Prefix6};
use sluice::fib::Fib;
use std::io::Write;
use std::time::Duration;

/// Measures and says every FIB's lookup rates, `seconds` a figure, into `r`; the IPv4 hit
/// set's addresses, for the update phase's reader.
pub(super) fn lookups(routes: &Routes, fibs: &Fibs, seconds: f64, r: &mut Report) -> Vec<u32> {
    let (v4, v6) = (&routes.v4, &routes.v6);
    say!(
        r,
        "lookups: 1 core, batches of {}, {SET_SIZE} addresses per set (hot: {}), {seconds} s \
         per figure; matched: the share that finds a route (a default route counts); \
         last-level cache {}",
        measure::BATCH,
        destinations::HOT,
        measure::last_level_cache_bytes()
            .map_or("unknown".to_string(), |b| format!("{:.0} MiB", mib(b)))
    );
    let time = Duration::from_secs_f64(seconds);
    let mut rng = Rng::new(42);
    let new = fibs.pop.as_ref().map(|w| w.reader().load_full());
    let prev = fibs.old.as_ref().map(|w| w.reader().load_full());
    let prefixes4: Vec<Prefix4> = v4.iter().map(|r| r.0).collect();
    let prefixes6: Vec<Prefix6> = v6.iter().map(|r| r.0).collect();
    let sets4 = destinations::sets(&prefixes4, SET_SIZE, &mut rng);
    let sets6 = destinations::sets(&prefixes6, SET_SIZE, &mut rng);
    if let Some(f) = &new {
        profiles(f, &sets4, &sets6, r);
    }
    let new4 = new
        .as_ref()
        .map(|f| |d: &[u32], o: &mut [u32]| f.v4().lookup_batch(d, o));
    let old4 = prev
        .as_ref()
        .map(|f| |d: &[u32], o: &mut [u32]| f.v4().lookup_batch(d, o));
    let new6 = new
        .as_ref()
        .map(|f| |d: &[u128], o: &mut [u32]| f.v6().lookup_batch(d, o));
    let old6 = prev
        .as_ref()
        .map(|f| |d: &[u128], o: &mut [u32]| f.v6().lookup_batch(d, o));
    let flat6 = fibs
        .flat6
        .as_ref()
        .map(|t| |d: &[u128], o: &mut [u32]| t.trie().lookup_batch(d, o));
    let short6 = fibs
        .short6
        .as_ref()
        .map(|t| |d: &[u128], o: &mut [u32]| t.trie().lookup_batch(d, o));
    let mut others4: Vec<(&str, Look<u32>)> = Vec::new();
    if let Some(f) = &old4 {
        others4.push(("DIR-24-8", f));
    }
    let mut others6: Vec<(&str, Look<u128>)> = Vec::new();
    if let Some(f) = &old6 {
        others6.push(("stride trie", f));
    }
    if let Some(f) = &short6 {
        others6.push(("shortcut", f));
    }
    if let Some(f) = &flat6 {
        others6.push(("no blocks", f));
    }
    let json = r.json;
    let new4 = new4.as_ref().map(|f| f as Look<u32>);
    let (r4, o4, d4) = family("IPv4", &sets4, time, json, new4, &others4);
    let new6 = new6.as_ref().map(|f| f as Look<u128>);
    let (r6, o6, d6) = family("IPv6", &sets6, time, json, new6, &others6);
    let mut o4 = o4.into_iter();
    let mut o6 = o6.into_iter();
    let (o4, o6, short6_rates, flat6_rates) = (
        o4.next().filter(|_| fibs.old.is_some()).unwrap_or_default(),
        if fibs.old.is_some() {
            o6.next().unwrap_or_default()
        } else {
            Map::new()
        },
        if short6.is_some() {
            o6.next().unwrap_or_default()
        } else {
            Map::new()
        },
        o6.next_back()
            .filter(|_| flat6.is_some())
            .unwrap_or_default(),
    );
    let (r4, r6, o4, o6) = (alias(r4), alias(r6), alias(o4), alias(o6));
    if fibs.pop.is_some() {
        r.doc["v4"]["lookups_per_s"] = r4.into();
        r.doc["v6"]["lookups_per_s"] = r6.into();
        if flat6.is_some() {
            r.doc["v6"]["lookups_per_s_without_blocks"] = alias(flat6_rates).into();
        }
        if short6.is_some() {
            r.doc["v6"]["lookups_per_s_with_shortcut"] = alias(short6_rates).into();
        }
    }
    if fibs.old.is_some() {
        r.dir24["v4"]["lookups_per_s"] = o4.into();
        r.dir24["v6"]["lookups_per_s"] = o6.into();
        r.dir24.insert("answers_differing".into(), (d4 + d6).into());
    }
    sets4.into_iter().next().map_or(Vec::new(), |s| s.addrs)
}

/// The names beside the sets': "hitting" is an address inside a route of the table
/// (hit), "random" an address drawn from the whole space (uniform).
fn alias(mut rates: Map<String, Value>) -> Map<String, Value> {
    for (name, set) in [("hitting", "hit"), ("random", "uniform")] {
        if let Some(r) = rates.get(set).cloned() {
            rates.insert(name.into(), r);
        }
    }
    rates
}

/// Where the hit set's lookups spend their levels, and the tries' nodes per level.
fn profiles(
    f: &Fib,
    sets4: &[DestinationSet<u32>],
    sets6: &[DestinationSet<u128>],
    r: &mut Report,
) {
    for (family, p) in [
        ("v4", sets4.first().map(|s| f.v4().profile(&s.addrs))),
        ("v6", sets6.first().map(|s| f.v6().profile(&s.addrs))),
    ] {
        let Some(p) = p else { continue };
        let total = p.lookups_by_nodes.iter().sum::<usize>().max(1);
        let by_nodes: Vec<String> = p
            .lookups_by_nodes
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| format!("{k}: {:.1} %", 100.0 * n as f64 / total as f64))
            .collect();
        let levels: Vec<String> = p
            .nodes_by_level
            .iter()
            .zip(&p.one_child_by_level)
            .map(|(n, one)| format!("{n} ({one})"))
            .collect();
        say!(
            r,
            "{family} hit set, nodes read per lookup (then a leaf): {}; nodes per level (with \
             one node child): {}",
            by_nodes.join(", "),
            levels.join(", ")
        );
        if r.doc.contains_key(family) {
            r.doc[family]["hit_lookups_by_nodes"] = json!(p.lookups_by_nodes);
            r.doc[family]["nodes_by_level"] = json!(p.nodes_by_level);
        }
    }
}

/// One family's figures: each set's rate by the new FIB and by each of `others` (the
/// previous FIB, the trie without blocks), the ratio, differing answers.
fn family<A: Copy>(
    name: &str,
    sets: &[DestinationSet<A>],
    time: Duration,
    json: bool,
    new: Option<Look<A>>,
    others: &[(&str, Look<A>)],
) -> (Map<String, Value>, Vec<Map<String, Value>>, usize) {
    let (mut rates, mut other_rates, mut differ) = (Map::new(), vec![Map::new(); others.len()], 0);
    let line = |who: &str, rate: f64, rest: &str| {
        if !json {
            let _ = writeln!(
                std::io::stdout(),
                "{who:<14} {:>7.1} M/s {:>6.1} ns  {rest}",
                rate / 1e6,
                1e9 / rate.max(1.0)
            );
        }
    };
    for set in sets {
        let main = new.or(others.first().map(|o| o.1));
        let matched = main.map_or(0.0, |f| measure::matched_batches(&set.addrs, f));
        // The FIBs take turns, `SLICES` each, so that a machine whose speed drifts
        // (shared, noisy) drifts under all of them alike.
        let all: Vec<Look<A>> = new.into_iter().chain(others.iter().map(|o| o.1)).collect();
        let mut sums = vec![0.0; all.len()];
        for _ in 0..SLICES {
            for (f, sum) in all.iter().zip(&mut sums) {
                *sum += measure::rate_batches(&set.addrs, time / SLICES, f);
            }
        }
        let mut means = sums.iter().map(|s| s / SLICES as f64);
        let mut rate = 0.0;
        if new.is_some() {
            rate = means.next().unwrap_or(0.0);
            rates.insert(set.name.into(), rate.into());
            let what = format!("{:.1} % matched  {}", matched * 100.0, set.what);
            line(&format!("{name} {}", set.name), rate, &what);
        }
        for ((&(old_name, f), old_rates), r) in others.iter().zip(&mut other_rates).zip(means) {
            old_rates.insert(set.name.into(), r.into());
            if let Some(g) = new {
                // The same answers for every address of the set, or the figures are void.
                let (mut a, mut b) = ([0u32; measure::BATCH], [0u32; measure::BATCH]);
                let mut d = 0;
                for chunk in set.addrs.chunks(measure::BATCH) {
                    g(chunk, &mut a[..chunk.len()]);
                    f(chunk, &mut b[..chunk.len()]);
                    d += a[..chunk.len()]
                        .iter()
                        .zip(&b[..chunk.len()])
                        .filter(|(x, y)| x != y)
                        .count();
                }
                differ += d;
                let rest = format!("poptrie at {:.2}x this, {d} answers differ", rate / r);
                line(&format!("  {old_name}"), r, &rest);
            } else {
                let what = format!("{:.1} % matched  {}", matched * 100.0, set.what);
                line(&format!("{name} {} {old_name}", set.name), r, &what);
            }
        }
    }
    (rates, other_rates, differ)
}
