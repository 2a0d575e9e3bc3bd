//! `sluice fib bench`: the FIB's memory, build time, batched lookup rates and route changes
//! per second (with a reader looking up meanwhile), and the previous FIB's (`--fib dir24`:
//! DIR-24-8 and the IPv6 stride trie, left-right) measured in the same process on the same
//! addresses, with the ratio and a check that both give the same answers.

use super::cli::Error;
use super::destinations::{self, DestinationSet};
use super::measure::{self, RouteWriter};
use super::parse::{read_route_file, IpPrefix};
use super::poptrie_writer::{PoptrieWriter, BLOCK_MIN, NO_BLOCKS, NO_SHORTCUT, SHORT_LEVELS};
use super::prefix::{Prefix4, Prefix6};
use super::routes::RouteTable;
use super::synth::Rng;
use super::{FibWriter, StrideFibWriter};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Addresses per measured set (the `hot` set has `destinations::HOT`).
const SET_SIZE: usize = 1 << 20;
/// Turns each FIB takes at a figure, its time split among them.
const SLICES: u32 = 5;
/// Route changes the update figure makes (each a delete and an add), a commit every 64.
const CHANGES: usize = 20_000;

/// A batched lookup of one FIB.
type Look<'a, A> = &'a dyn Fn(&[A], &mut [u32]);

/// Which FIBs `fib bench` measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FibKind {
    /// The dataplane's: compressed tries, one copy.
    Poptrie,
    /// The previous one: DIR-24-8 and the IPv6 stride trie, two copies.
    Dir24,
    /// The dataplane's IPv6 trie built without blocks (every slot's root a node, as before
    /// 2026-11-25), beside the poptrie.
    NoBlocks,
    /// The dataplane's IPv6 trie built with the shortcut (a hash table to the nodes where a
    /// /48 ends; not the dataplane's), beside the poptrie.
    Shortcut,
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Resident memory (and huge-page) growth while `build` runs.
fn measured<T>(build: impl FnOnce() -> T) -> (T, f64, Option<usize>, Option<usize>) {
    let (rss, huge) = (measure::resident_bytes(), measure::huge_page_bytes());
    let t = Instant::now();
    let built = build();
    let secs = t.elapsed().as_secs_f64();
    let grew = |before: Option<usize>, after: Option<usize>| {
        before.zip(after).map(|(b, a)| a.saturating_sub(b))
    };
    (
        built,
        secs,
        grew(rss, measure::resident_bytes()),
        grew(huge, measure::huge_page_bytes()),
    )
}

/// Route changes/s through `w` while another thread looks up frames of `dst` with `frame`
/// (loading the table once per frame, as a worker does); and that thread's lookups/s.
fn updates_while_looking_up<W: RouteWriter>(
    w: &mut W,
    v4: &[(Prefix4, u32)],
    v6: &[(Prefix6, u32)],
    time: Duration,
    dst: &[u32],
    frame: impl Fn(&[u32], &mut [u32]) + Sync,
) -> (measure::UpdateRun, f64) {
    let stop = AtomicBool::new(false);
    let looked = AtomicU64::new(0);
    let mut rng = Rng::new(5);
    let started = Instant::now();
    let updates = std::thread::scope(|s| {
        s.spawn(|| {
            let mut out = [0u32; measure::BATCH];
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                for chunk in dst.chunks(measure::BATCH) {
                    frame(chunk, &mut out[..chunk.len()]);
                    n += chunk.len() as u64;
                }
                if dst.is_empty() {
                    std::thread::yield_now();
                }
            }
            looked.store(n, Relaxed);
        });
        let u = measure::update_rate(w, v4, v6, CHANGES, time, 64, &mut rng);
        stop.store(true, Relaxed);
        u
    });
    let lookups = looked.load(Relaxed) as f64 / started.elapsed().as_secs_f64();
    (updates, lookups)
}

pub(super) fn bench_cmd(
    file: &str,
    seconds: f64,
    json: bool,
    kinds: &[FibKind],
) -> Result<(), Error> {
    if !(0.01..=3600.0).contains(&seconds) {
        return Err(Error::Usage("--seconds must be 0.01 to 3600".into()));
    }
    let with_dir24 = kinds.contains(&FibKind::Dir24);
    let with_no_blocks = kinds.contains(&FibKind::NoBlocks);
    let with_shortcut = kinds.contains(&FibKind::Shortcut);
    let with_poptrie =
        kinds.contains(&FibKind::Poptrie) || with_no_blocks || with_shortcut || kinds.is_empty();
    // The text, unless JSON is asked for; the JSON collects the same figures.
    macro_rules! say {
        ($($t:tt)*) => {
            if !json {
                // A closed pipe (`| head`) ends the printing, not the process.
                let _ = writeln!(std::io::stdout(), $($t)*);
            }
        };
    }
    let t = Instant::now();
    let routes = read_route_file(file.as_ref()).map_err(|e| Error::Failed(e.to_string()))?;
    let read_s = t.elapsed().as_secs_f64();
    // Leaves are indices into the file's routes.
    let mut v4: Vec<(Prefix4, u32)> = Vec::new();
    let mut v6: Vec<(Prefix6, u32)> = Vec::new();
    for (i, r) in routes.iter().enumerate() {
        match r.prefix {
            IpPrefix::V4(p) => v4.push((p, i as u32)),
            IpPrefix::V6(p) => v6.push((p, i as u32)),
        }
    }
    let long4 = v4.iter().filter(|p| p.0.len() > 24).count();
    let long6 = v6.iter().filter(|p| p.0.len() > 48).count();
    say!(
        "routes: {} IPv4 ({long4} longer than /24), {} IPv6 ({long6} longer than /48) (read in \
         {read_s:.3} s)",
        v4.len(),
        v6.len(),
    );
    // The route tables alone, measured: what the control-plane truth really costs.
    let (tables, _, tables_rss, _) = measured(|| {
        // As `FibWriter::with_routes` builds them.
        (
            RouteTable::from_routes(v4.iter().copied()),
            RouteTable::from_routes(v6.iter().copied()),
        )
    });
    let estimate = tables.0.approx_memory_bytes() + tables.1.approx_memory_bytes();
    drop(tables);
    say!(
        "route tables (prefix -> next hop, ordered): {} measured (resident growth while built \
         alone), {:.1} MiB estimated",
        tables_rss.map_or("unknown".into(), |b| format!("{:.1} MiB", mib(b))),
        mib(estimate)
    );
    let bad = |e: super::FibError| Error::Failed(format!("{file}: {e}"));
    let mut doc = Map::new();
    let empty = FibWriter::new().memory();
    doc.insert(
        "empty_fib_bytes".into(),
        (empty.v4.bytes + empty.v6.bytes).into(),
    );
    let (pop, pop_s, pop_rss, pop_huge) = measured(|| {
        with_poptrie.then(|| FibWriter::with_routes(v4.iter().copied(), v6.iter().copied()))
    });
    let mut pop = pop.transpose().map_err(bad)?;
    if let Some(w) = &pop {
        let m = w.memory();
        // Each family's build alone, for the per-family figure.
        let t = Instant::now();
        drop(PoptrieWriter::build(w.routes4()));
        let build4 = t.elapsed().as_secs_f64();
        let t = Instant::now();
        drop(PoptrieWriter::build(w.routes6()));
        let build6 = t.elapsed().as_secs_f64();
        say!(
            "poptrie (the dataplane's FIB), one copy, built in {pop_s:.3} s: IPv4 {:.1} MiB \
             ({} nodes, {} leaves; {:.1} MiB of it written, the rest room for updates), IPv6 \
             {:.1} MiB ({} nodes, {} leaves; {:.1} MiB written); route tables ~{:.1} MiB; an \
             empty FIB {:.1} KiB",
            mib(m.v4.bytes),
            m.v4.nodes,
            m.v4.leaves,
            mib(m.v4.bytes_used),
            mib(m.v6.bytes),
            m.v6.nodes,
            m.v6.leaves,
            mib(m.v6.bytes_used),
            mib(m.routes),
            (empty.v4.bytes + empty.v6.bytes) as f64 / 1024.0
        );
        if let Some(grew) = pop_rss {
            say!(
                "  resident memory grew by {:.1} MiB while it was built (VmRSS, route tables \
                 included), {} in transparent huge pages",
                mib(grew),
                pop_huge.map_or("unknown".into(), |h| format!("{:.1} MiB", mib(h)))
            );
        }
        let tables = (
            w.routes4().approx_memory_bytes(),
            w.routes6().approx_memory_bytes(),
        );
        for (family, t, routes, long, build, table) in [
            (
                "v4",
                m.v4,
                v4.len(),
                ("longer_than_24", long4),
                build4,
                tables.0,
            ),
            (
                "v6",
                m.v6,
                v6.len(),
                ("longer_than_48", long6),
                build6,
                tables.1,
            ),
        ] {
            doc.insert(
                family.into(),
                json!({
                    "routes": routes, long.0: long.1, "memory_bytes": t.bytes,
                    "memory_written_bytes": t.bytes_used, "copies": 1, "nodes": t.nodes,
                    "leaves": t.leaves, "build_s": build, "route_table_bytes": table,
                }),
            );
        }
        doc.insert("fib".into(), "poptrie".into());
        doc.insert("route_table_bytes".into(), m.routes.into());
        doc.insert("route_table_resident_bytes".into(), json!(tables_rss));
        doc.insert("build_s".into(), pop_s.into());
        doc.insert("resident_growth_bytes".into(), json!(pop_rss));
    }
    // The IPv6 trie as it was before blocks (every slot's root a node), measured beside it.
    let flat6 = pop
        .as_ref()
        .filter(|_| with_no_blocks)
        .map(|w| PoptrieWriter::build_shortcut(w.routes6(), NO_BLOCKS, NO_SHORTCUT));
    // The IPv6 trie with the shortcut, measured beside it.
    let short6 = pop
        .as_ref()
        .filter(|_| with_shortcut)
        .map(|w| PoptrieWriter::build_shortcut(w.routes6(), BLOCK_MIN, SHORT_LEVELS));
    if let Some(f) = &short6 {
        let m = f.memory();
        say!(
            "  IPv6 with the shortcut (to the nodes of bits 42-48): {:.1} MiB ({} nodes, {} \
             leaves; {:.1} MiB written)",
            mib(m.bytes),
            m.nodes,
            m.leaves,
            mib(m.bytes_used)
        );
        doc["v6"]["memory_bytes_with_shortcut"] = m.bytes.into();
    }
    if let Some(f) = &flat6 {
        let m = f.memory();
        say!(
            "  IPv6 without blocks (each slot's root a node, as before 2026-11-25): {:.1} MiB \
             ({} nodes, {} leaves; {:.1} MiB written)",
            mib(m.bytes),
            m.nodes,
            m.leaves,
            mib(m.bytes_used)
        );
        doc["v6"]["memory_bytes_without_blocks"] = m.bytes.into();
    }
    let (old, old_s, old_rss, _) = measured(|| {
        with_dir24.then(|| StrideFibWriter::with_routes(v4.iter().copied(), v6.iter().copied()))
    });
    let mut old = old.transpose().map_err(bad)?;
    let mut dir24 = Map::new();
    if let Some(w) = &mut old {
        let m = w.memory();
        say!(
            "dir24 (the previous FIB), built in {old_s:.3} s: IPv4 DIR-24-8 {:.1} MiB, IPv6 \
             stride trie {:.1} MiB, each held twice (left-right); writer depths {:.1} + {:.1} \
             MiB; resident memory grew by {}",
            mib(m.v4_table),
            mib(m.v6_table),
            mib(m.v4_builder),
            mib(m.v6_builder),
            old_rss.map_or("unknown".into(), |g| format!("{:.1} MiB", mib(g)))
        );
        dir24.insert("build_s".into(), old_s.into());
        dir24.insert("resident_growth_bytes".into(), json!(old_rss));
        for (family, table, writer) in [
            ("v4", m.v4_table, m.v4_builder),
            ("v6", m.v6_table, m.v6_builder),
        ] {
            dir24.insert(
                family.into(),
                json!({"memory_bytes": 2 * table, "copies": 2, "writer_bytes": writer}),
            );
        }
    }
    say!(
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
    let new = pop.as_ref().map(|w| w.reader().load_full());
    let prev = old.as_ref().map(|w| w.reader().load_full());
    let prefixes4: Vec<Prefix4> = v4.iter().map(|r| r.0).collect();
    let prefixes6: Vec<Prefix6> = v6.iter().map(|r| r.0).collect();
    let sets4 = destinations::sets(&prefixes4, SET_SIZE, &mut rng);
    let sets6 = destinations::sets(&prefixes6, SET_SIZE, &mut rng);
    // Where the hit set's lookups spend their levels, and the tries' nodes per level.
    if let Some(f) = &new {
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
                "{family} hit set, nodes read per lookup (then a leaf): {}; nodes per level (with \
                 one node child): {}",
                by_nodes.join(", "),
                levels.join(", ")
            );
            if doc.contains_key(family) {
                doc[family]["hit_lookups_by_nodes"] = json!(p.lookups_by_nodes);
                doc[family]["nodes_by_level"] = json!(p.nodes_by_level);
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
        let (mut rates, mut other_rates, mut differ) =
            (Map::new(), vec![Map::new(); others.len()], 0);
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
    let flat6 = flat6
        .as_ref()
        .map(|t| |d: &[u128], o: &mut [u32]| t.trie().lookup_batch(d, o));
    let short6 = short6
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
    let (r4, o4, d4) = family(
        "IPv4",
        &sets4,
        time,
        json,
        new4.as_ref().map(|f| f as Look<u32>),
        &others4,
    );
    let (r6, o6, d6) = family(
        "IPv6",
        &sets6,
        time,
        json,
        new6.as_ref().map(|f| f as Look<u128>),
        &others6,
    );
    let mut o4 = o4.into_iter();
    let mut o6 = o6.into_iter();
    let (o4, o6, short6_rates, flat6_rates) = (
        o4.next().filter(|_| old.is_some()).unwrap_or_default(),
        if old.is_some() {
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
    drop((new, prev));
    // The names beside the sets': "hitting" is an address inside a route of the
    // table (hit), "random" an address drawn from the whole space (uniform).
    let alias = |mut rates: Map<String, Value>| {
        for (name, set) in [("hitting", "hit"), ("random", "uniform")] {
            if let Some(r) = rates.get(set).cloned() {
                rates.insert(name.into(), r);
            }
        }
        rates
    };
    let (r4, r6, o4, o6) = (alias(r4), alias(r6), alias(o4), alias(o6));
    if pop.is_some() {
        doc["v4"]["lookups_per_s"] = r4.into();
        doc["v6"]["lookups_per_s"] = r6.into();
        if flat6.is_some() {
            doc["v6"]["lookups_per_s_without_blocks"] = alias(flat6_rates).into();
        }
        if short6.is_some() {
            doc["v6"]["lookups_per_s_with_shortcut"] = alias(short6_rates).into();
        }
    }
    if old.is_some() {
        dir24["v4"]["lookups_per_s"] = o4.into();
        dir24["v6"]["lookups_per_s"] = o6.into();
        dir24.insert("answers_differing".into(), (d4 + d6).into());
    }
    // Route changes with a reader looking up the IPv4 hit set meanwhile.
    let hit4: &[u32] = sets4.first().map_or(&[], |s| &s.addrs[..]);
    if let Some(w) = &mut pop {
        let reader = w.reader();
        let (u, l) = updates_while_looking_up(w, &v4, &v6, time, hit4, |d, o| {
            reader.load().v4().lookup_batch(d, o)
        });
        let m = w.memory();
        say!(
            "updates  {:>8.0} route changes/s ({} changes in {:.2} s: random routes of the table \
             deleted and re-added, a commit every 64, whole-trie rebuilds included: {} + {} \
             (IPv4 + IPv6)) while another thread looks up {:.1} M/s",
            u.per_s,
            u.changes,
            u.seconds,
            m.v4.full_rebuilds,
            m.v6.full_rebuilds,
            l / 1e6,
        );
        doc.insert("updates_per_s".into(), u.per_s.into());
        doc.insert("update_changes".into(), u.changes.into());
        doc.insert("update_seconds".into(), u.seconds.into());
        doc.insert("lookups_per_s_during_updates".into(), l.into());
        doc.insert(
            "full_rebuilds".into(),
            (m.v4.full_rebuilds + m.v6.full_rebuilds).into(),
        );
    }
    if pop.is_some() && with_no_blocks {
        // The same changes through a FIB whose tries make no block.
        let mut w = FibWriter::with_routes_variant(
            v4.iter().copied(),
            v6.iter().copied(),
            NO_BLOCKS,
            NO_SHORTCUT,
        )
        .map_err(bad)?;
        let reader = w.reader();
        let (u, l) = updates_while_looking_up(&mut w, &v4, &v6, time, hit4, |d, o| {
            reader.load().v4().lookup_batch(d, o)
        });
        say!(
            "  no blocks {:>8.0} route changes/s, the same sequence of changes ({} in {:.2} s), \
             while another thread looks up {:.1} M/s",
            u.per_s,
            u.changes,
            u.seconds,
            l / 1e6
        );
        doc.insert("updates_per_s_without_blocks".into(), u.per_s.into());
    }
    if pop.is_some() && with_shortcut {
        // The same changes through a FIB whose IPv6 trie has the shortcut.
        let mut w = FibWriter::with_routes_variant(
            v4.iter().copied(),
            v6.iter().copied(),
            BLOCK_MIN,
            SHORT_LEVELS,
        )
        .map_err(bad)?;
        let reader = w.reader();
        let (u, l) = updates_while_looking_up(&mut w, &v4, &v6, time, hit4, |d, o| {
            reader.load().v4().lookup_batch(d, o)
        });
        say!(
            "  shortcut {:>8.0} route changes/s, the same sequence of changes ({} in {:.2} s), \
             while another thread looks up {:.1} M/s",
            u.per_s,
            u.changes,
            u.seconds,
            l / 1e6
        );
        doc.insert("updates_per_s_with_shortcut".into(), u.per_s.into());
    }
    if let Some(w) = &mut old {
        let reader = w.reader();
        let (u, l) = updates_while_looking_up(w, &v4, &v6, time, hit4, |d, o| {
            reader.load().v4().lookup_batch(d, o)
        });
        say!(
            "  dir24  {:>8.0} route changes/s, the same sequence of changes ({} in {:.2} s), \
             while another thread looks up {:.1} M/s",
            u.per_s,
            u.changes,
            u.seconds,
            l / 1e6
        );
        dir24.insert("updates_per_s".into(), u.per_s.into());
        dir24.insert("lookups_per_s_during_updates".into(), l.into());
    }
    if old.is_some() {
        doc.insert("dir24".into(), dir24.into());
    }
    if json {
        let _ = writeln!(std::io::stdout(), "{}", Value::Object(doc));
    }
    Ok(())
}
