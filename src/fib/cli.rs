//! `sluice fib synth|lookup|bench`: offline tools over route files, using the same FIB code
//! as the dataplane. `FibCommand` declares their options for clap.

use super::destinations;
use super::measure;
use super::parse::{parse_prefix, read_route_file, IpPrefix, Route};
use super::poptrie::{Poptrie4, Poptrie6};
use super::prefix::{Prefix4, Prefix6};
use super::synth::{self, Rng, SynthSpec};
use super::{FibWriter, NO_ROUTE};
use std::io::{BufRead, BufWriter, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `sluice fib`: route tables offline. Route files are PREFIX NEXTHOP lines, or the text of
/// `ip route show` / `ip -6 route show`, or of `birdc show route`.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum FibCommand {
    /// Write a synthetic full table shaped like the public BGP tables (deterministic by seed)
    /// as PREFIX NEXTHOP lines, to stdout unless --out
    Synth(SynthArgs),
    /// Read one address per line on stdin, print ADDRESS PREFIX NEXTHOP or ADDRESS none
    Lookup {
        #[arg(long, value_name = "FILE")]
        routes: String,
    },
    /// Build time, memory and batched lookups/s (one core, 256 per batch), IPv4 and IPv6,
    /// over four destination sets, each printed with what it measures: hit (a random route,
    /// a random address in it), hot (1024 of those, repeated), announced (uniform over the
    /// announced space), uniform (over the whole address space); then route changes/s
    Bench {
        #[arg(long, value_name = "FILE")]
        routes: String,
        /// Seconds per figure, 0.01 to 3600
        #[arg(long, value_name = "S", default_value = "1")]
        seconds: f64,
        /// One JSON document instead of the text: per family the routes, the memory of the
        /// lookup structure (all copies), the build time and the lookup rate of each set of
        /// destinations; the route changes per second
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args, Debug, Clone)]
pub struct SynthArgs {
    /// IPv4 routes
    #[arg(long, value_name = "N", default_value = "0")]
    v4: usize,
    /// IPv6 routes
    #[arg(long, value_name = "M", default_value = "0")]
    v6: usize,
    #[arg(long, value_name = "S", default_value = "1")]
    seed: u64,
    /// Next hops, 1 to 254 [default: 8]
    #[arg(long, value_name = "K")]
    next_hops: Option<u32>,
    /// Add 0.0.0.0/0 and ::/0
    #[arg(long)]
    default: bool,
    /// Make P percent of each family's routes longer than /24 (IPv4: /25-/32) or /48 (IPv6:
    /// /49-/128), inside the others, as IGP and customer routes add to a provider's table
    /// (0: the public table alone)
    #[arg(long, value_name = "P", default_value = "0")]
    long: f64,
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The next hops of each family instead of documentation addresses (repeatable)
    #[arg(long, value_name = "ADDR")]
    via: Vec<String>,
    /// Leave out every prefix that overlaps PREFIX, drawing others so the table keeps its
    /// size (repeatable)
    #[arg(long, value_name = "PREFIX")]
    exclude: Vec<String>,
}

pub fn main(command: FibCommand) -> i32 {
    let r = match command {
        FibCommand::Synth(a) => synth_cmd(&a),
        FibCommand::Lookup { routes } => lookup_cmd(&routes),
        FibCommand::Bench {
            routes,
            seconds,
            json,
        } => bench_cmd(&routes, seconds, json),
    };
    match r {
        Ok(()) => 0,
        Err(Error::Usage(e)) => {
            eprintln!("sluice fib: {e} (try: sluice fib --help)");
            2
        }
        Err(Error::Failed(e)) => {
            eprintln!("sluice fib: {e}");
            1
        }
    }
}

enum Error {
    /// Bad command line: exit code 2.
    Usage(String),
    /// Good command line, failed run (unreadable file, bad route file, bad input): exit code 1.
    Failed(String),
}

fn io_failed(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::Failed(format!("{what}: {e}"))
}

/// The most routes `synth` makes per family: beyond that the IPv4 space runs thin and the
/// output would be many gigabytes.
const SYNTH_MAX: usize = 10_000_000;

fn synth_cmd(a: &SynthArgs) -> Result<(), Error> {
    let long_percent = a.long;
    if !(0.0..=synth::MAX_LONG_SHARE * 100.0).contains(&long_percent) {
        return Err(Error::Usage(format!(
            "--long must be 0 to {} (percent)",
            synth::MAX_LONG_SHARE * 100.0
        )));
    }
    let spec = SynthSpec {
        v4: a.v4,
        v6: a.v6,
        seed: a.seed,
        next_hops: a.next_hops.unwrap_or(8),
        default_route: a.default,
        long_share: long_percent / 100.0,
    };
    if spec.v4 > SYNTH_MAX || spec.v6 > SYNTH_MAX {
        return Err(Error::Usage(format!(
            "at most {SYNTH_MAX} routes per family"
        )));
    }
    if spec.next_hops == 0 || spec.next_hops > 254 {
        return Err(Error::Usage("--next-hops must be 1 to 254".into()));
    }
    let mut via4: Vec<String> = Vec::new();
    let mut via6: Vec<String> = Vec::new();
    for v in &a.via {
        match v.parse::<IpAddr>() {
            Ok(IpAddr::V4(x)) => via4.push(x.to_string()),
            Ok(IpAddr::V6(x)) => via6.push(x.to_string()),
            Err(_) => return Err(Error::Usage(format!("--via: '{v}' is not an address"))),
        }
    }
    if !a.via.is_empty() {
        if (spec.v4 > 0 && via4.is_empty()) || (spec.v6 > 0 && via6.is_empty()) {
            return Err(Error::Usage(
                "--via needs an address of each family the table has".into(),
            ));
        }
        if a.next_hops.is_some() {
            return Err(Error::Usage("give --via or --next-hops, not both".into()));
        }
    }
    let (mut avoid4, mut avoid6) = (Vec::new(), Vec::new());
    for x in &a.exclude {
        match parse_prefix(x).map_err(|e| Error::Usage(format!("--exclude: {e}")))? {
            IpPrefix::V4(p) => avoid4.push(p),
            IpPrefix::V6(p) => avoid6.push(p),
        }
    }
    // With --via, next hop indices pick among the given addresses.
    let spec = SynthSpec {
        next_hops: if via4.is_empty() && via6.is_empty() {
            spec.next_hops
        } else {
            (via4.len() * via6.len().max(1)) as u32
        },
        ..spec
    };
    let hop4 = |i: u32| match via4.len() {
        0 => synth::v4_next_hop_text(i),
        n => via4[i as usize % n].clone(),
    };
    let hop6 = |i: u32| match via6.len() {
        0 => synth::v6_next_hop_text(i),
        n => via6[i as usize % n].clone(),
    };
    let (v4, v6) = if avoid4.is_empty() && avoid6.is_empty() {
        synth::synth(&spec)
    } else {
        synth::synth_avoiding(&spec, &avoid4, &avoid6)
    };
    let out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(std::fs::File::create(p).map_err(io_failed(&p.display().to_string()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut w = BufWriter::new(out);
    let write = |w: &mut BufWriter<Box<dyn Write>>| -> std::io::Result<()> {
        writeln!(
            w,
            "# sluice fib synth --v4 {} --v6 {} --seed {}{}{}{}",
            spec.v4,
            spec.v6,
            spec.seed,
            if long_percent > 0.0 {
                format!(" --long {long_percent}")
            } else {
                String::new()
            },
            if a.via.is_empty() {
                format!(" --next-hops {}", spec.next_hops)
            } else {
                a.via.iter().map(|v| format!(" --via {v}")).collect()
            },
            if spec.default_route { " --default" } else { "" }
        )?;
        for x in &a.exclude {
            writeln!(w, "# --exclude {x}")?;
        }
        for (p, nh) in &v4 {
            writeln!(w, "{p} {}", hop4(*nh))?;
        }
        for (p, nh) in &v6 {
            writeln!(w, "{p} {}", hop6(*nh))?;
        }
        w.flush()
    };
    write(&mut w).map_err(io_failed("write"))
}

/// A route file loaded into a FIB whose leaves are indices into `routes`.
struct Loaded {
    routes: Vec<Route>,
    v4: Vec<Prefix4>,
    v6: Vec<Prefix6>,
    writer: FibWriter,
    read_time: Duration,
    build_time: Duration,
    /// How much the process's resident memory grew while the FIB was built.
    resident_growth: Option<usize>,
    /// How much of that growth is in transparent huge pages.
    huge_growth: Option<usize>,
}

fn load(path: &str) -> Result<Loaded, Error> {
    let t0 = Instant::now();
    let routes = read_route_file(path.as_ref()).map_err(|e| Error::Failed(e.to_string()))?;
    let read_time = t0.elapsed();
    let (mut v4, mut v4_leaf, mut v6, mut v6_leaf) = (vec![], vec![], vec![], vec![]);
    for (i, r) in routes.iter().enumerate() {
        match r.prefix {
            IpPrefix::V4(p) => {
                v4.push(p);
                v4_leaf.push((p, i as u32));
            }
            IpPrefix::V6(p) => {
                v6.push(p);
                v6_leaf.push((p, i as u32));
            }
        }
    }
    let rss_before = measure::resident_bytes();
    let huge_before = measure::huge_page_bytes();
    let t1 = Instant::now();
    let writer = FibWriter::with_routes(v4_leaf, v6_leaf)
        .map_err(|e| Error::Failed(format!("{path}: {e}")))?;
    let build_time = t1.elapsed();
    let resident_growth = rss_before
        .zip(measure::resident_bytes())
        .map(|(before, after)| after.saturating_sub(before));
    let huge_growth = huge_before
        .zip(measure::huge_page_bytes())
        .map(|(before, after)| after.saturating_sub(before));
    Ok(Loaded {
        routes,
        v4,
        v6,
        writer,
        read_time,
        build_time,
        resident_growth,
        huge_growth,
    })
}

fn lookup_cmd(file: &str) -> Result<(), Error> {
    let loaded = load(file)?;
    let reader = loaded.writer.reader();
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut bad = 0usize;
    let mut lines = stdin.lines().enumerate();
    // A frame's worth at a time, through the batched lookups.
    let mut batch: Vec<IpAddr> = Vec::with_capacity(measure::BATCH);
    loop {
        batch.clear();
        for (i, line) in lines.by_ref() {
            let line = line.map_err(io_failed("stdin"))?;
            let text = line.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            match text.parse::<IpAddr>() {
                Ok(addr) => batch.push(addr),
                Err(_) => {
                    eprintln!("stdin:{}: bad address '{text}'", i + 1);
                    bad += 1;
                }
            }
            if batch.len() == measure::BATCH {
                break;
            }
        }
        if batch.is_empty() {
            break;
        }
        let d4: Vec<u32> = batch
            .iter()
            .filter_map(|a| match a {
                IpAddr::V4(a) => Some(u32::from(*a)),
                IpAddr::V6(_) => None,
            })
            .collect();
        let d6: Vec<u128> = batch
            .iter()
            .filter_map(|a| match a {
                IpAddr::V6(a) => Some(u128::from(*a)),
                IpAddr::V4(_) => None,
            })
            .collect();
        let (mut r4, mut r6) = (vec![0; d4.len()], vec![0; d6.len()]);
        let fib = reader.load();
        fib.v4().lookup_batch(&d4, &mut r4);
        fib.v6().lookup_batch(&d6, &mut r6);
        drop(fib);
        let (mut i4, mut i6) = (r4.iter(), r6.iter());
        for addr in &batch {
            let leaf = match addr {
                IpAddr::V4(_) => i4.next(),
                IpAddr::V6(_) => i6.next(),
            };
            let route = leaf
                .filter(|&&l| l != NO_ROUTE)
                .and_then(|&l| loaded.routes.get(l as usize));
            match route {
                Some(r) => writeln!(out, "{addr} {} {}", r.prefix, r.next_hop),
                None => writeln!(out, "{addr} none"),
            }
            .map_err(io_failed("stdout"))?;
        }
    }
    out.flush().map_err(io_failed("stdout"))?;
    if bad > 0 {
        return Err(Error::Failed(format!("{bad} bad address line(s) on stdin")));
    }
    Ok(())
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Addresses per measured set (the `hot` set has `destinations::HOT`).
const SET_SIZE: usize = 1 << 20;

fn bench_cmd(file: &str, seconds: f64, json: bool) -> Result<(), Error> {
    if !(0.01..=3600.0).contains(&seconds) {
        return Err(Error::Usage("--seconds must be 0.01 to 3600".into()));
    }
    // The text, unless JSON is asked for; the JSON collects the same figures.
    macro_rules! say {
        ($($t:tt)*) => {
            if !json {
                println!($($t)*);
            }
        };
    }
    let mut doc = serde_json::Map::new();
    let mut loaded = load(file)?;
    let mem = loaded.writer.memory();
    let (n4, n6) = loaded.writer.live_nodes();
    let long4 = loaded.v4.iter().filter(|p| p.len() > 24).count();
    let long6 = loaded.v6.iter().filter(|p| p.len() > 48).count();
    say!(
        "routes: {} IPv4 ({long4} longer than /24), {} IPv6 ({long6} longer than /48) \
         (read in {:.3} s, FIB built in {:.3} s)",
        loaded.v4.len(),
        loaded.v6.len(),
        loaded.read_time.as_secs_f64(),
        loaded.build_time.as_secs_f64()
    );
    say!(
        "memory: IPv4 lookup table {:.1} MiB ({n4} second-level groups of 256 cells, for \
         routes longer than /24), IPv6 lookup table {:.1} MiB ({n6} nodes of 256 cells), each \
         held twice (left-right); writer depths {:.1} + {:.1} MiB; route tables ~{:.1} MiB; \
         total {:.1} MiB",
        mib(mem.v4_table),
        mib(mem.v6_table),
        mib(mem.v4_builder),
        mib(mem.v6_builder),
        mib(mem.routes),
        mib(mem.total())
    );
    if let Some(grew) = loaded.resident_growth {
        say!(
            "resident memory grew by {:.1} MiB while the FIB was built (VmRSS; a check on the \
             total above), {} in transparent huge pages",
            mib(grew),
            loaded
                .huge_growth
                .map_or("unknown".into(), |h| format!("{:.1} MiB", mib(h)))
        );
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
    doc.insert(
        "v4".into(),
        serde_json::json!({
            "routes": loaded.v4.len(), "longer_than_24": long4,
            "memory_bytes": 2 * mem.v4_table, "copies": 2, "writer_bytes": mem.v4_builder,
        }),
    );
    doc.insert(
        "v6".into(),
        serde_json::json!({
            "routes": loaded.v6.len(), "longer_than_48": long6,
            "memory_bytes": 2 * mem.v6_table, "copies": 2, "writer_bytes": mem.v6_builder,
        }),
    );
    doc.insert("route_table_bytes".into(), mem.routes.into());
    doc.insert("build_s".into(), loaded.build_time.as_secs_f64().into());
    doc.insert("total_bytes".into(), mem.total().into());
    doc.insert(
        "resident_growth_bytes".into(),
        serde_json::json!(loaded.resident_growth),
    );
    let time = Duration::from_secs_f64(seconds);
    let mut rng = Rng::new(42);
    let fib = loaded.writer.reader().load_full();
    let print = |family: &str, set: &str, what: &str, matched: f64, rate: f64| {
        if json {
            return;
        }
        println!(
            "{family} {set:<10} {:>7.1} M/s {:>6.1} ns {:>6.1} % matched  {what}",
            rate / 1e6,
            1e9 / rate.max(1.0),
            matched * 100.0
        );
    };
    let t = std::time::Instant::now();
    let pop = Poptrie4::build(loaded.writer.routes4());
    let pop_build = t.elapsed();
    let (nodes, leaves) = pop.counts();
    say!(
        "IPv4 poptrie (not yet the dataplane's): {:.1} MiB ({nodes} nodes, {leaves} leaves), \
         built in {:.3} s; DIR-24-8 {:.1} MiB per copy",
        mib(pop.memory_bytes()),
        pop_build.as_secs_f64(),
        mib(fib.v4().memory_bytes())
    );
    let (mut rates4, mut rates6, mut pop_rates) = (
        serde_json::Map::new(),
        serde_json::Map::new(),
        serde_json::Map::new(),
    );
    let mut pop_differ = 0;
    for set in destinations::sets(&loaded.v4, SET_SIZE, &mut rng) {
        let matched = measure::matched_v4(&fib, &set.addrs);
        let rate = measure::rate_v4(&fib, &set.addrs, time);
        print("IPv4", set.name, &set.what, matched, rate);
        rates4.insert(set.name.into(), rate.into());
        let pop_rate = measure::rate_batches(&set.addrs, time, |d, o| pop.lookup_batch(d, o));
        // The same answers as DIR-24-8 for every address of the set, or the figure is void.
        let differ = set
            .addrs
            .iter()
            .filter(|&&a| pop.lookup(a) != fib.v4().lookup(a))
            .count();
        pop_rates.insert(set.name.into(), pop_rate.into());
        pop_differ += differ;
        say!(
            "  poptrie  {:>7.1} M/s {:>6.1} ns  {:.2}x DIR-24-8, {differ} answers differ",
            pop_rate / 1e6,
            1e9 / pop_rate.max(1.0),
            pop_rate / rate.max(1.0)
        );
    }
    let t = std::time::Instant::now();
    let pop6 = Poptrie6::build(loaded.writer.routes6());
    let pop6_build = t.elapsed();
    let (nodes6, leaves6) = pop6.counts();
    say!(
        "IPv6 poptrie (not yet the dataplane's): {:.1} MiB ({nodes6} nodes, {leaves6} leaves), \
         built in {:.3} s; the stride trie {:.1} MiB per copy",
        mib(pop6.memory_bytes()),
        pop6_build.as_secs_f64(),
        mib(fib.v6().memory_bytes())
    );
    let (mut pop6_rates, mut pop6_differ) = (serde_json::Map::new(), 0);
    for set in destinations::sets(&loaded.v6, SET_SIZE, &mut rng) {
        let matched = measure::matched_v6(&fib, &set.addrs);
        let rate = measure::rate_v6(&fib, &set.addrs, time);
        print("IPv6", set.name, &set.what, matched, rate);
        rates6.insert(set.name.into(), rate.into());
        let pop_rate = measure::rate_batches(&set.addrs, time, |d, o| pop6.lookup_batch(d, o));
        let differ = set
            .addrs
            .iter()
            .filter(|&&a| pop6.lookup(a) != fib.v6().lookup(a))
            .count();
        say!(
            "  poptrie  {:>7.1} M/s {:>6.1} ns  {:.2}x the stride trie, {differ} answers differ",
            pop_rate / 1e6,
            1e9 / pop_rate.max(1.0),
            pop_rate / rate.max(1.0)
        );
        pop6_rates.insert(set.name.into(), pop_rate.into());
        pop6_differ += differ;
    }
    doc.insert(
        "v6_poptrie".into(),
        serde_json::json!({
            "memory_bytes": pop6.memory_bytes(), "build_s": pop6_build.as_secs_f64(),
            "lookups_per_s": pop6_rates, "answers_differing_from_trie": pop6_differ,
        }),
    );
    doc["v4"]["lookups_per_s"] = rates4.into();
    doc["v6"]["lookups_per_s"] = rates6.into();
    drop(fib);
    let v4: Vec<(Prefix4, u32)> = loaded
        .v4
        .iter()
        .map(|&p| (p, loaded.writer.routes4().get(p).unwrap_or(0)))
        .collect();
    let v6: Vec<(Prefix6, u32)> = loaded
        .v6
        .iter()
        .map(|&p| (p, loaded.writer.routes6().get(p).unwrap_or(0)))
        .collect();
    let updates = measure::update_rate(&mut loaded.writer, &v4, &v6, 20_000, 64, &mut rng);
    doc.insert("updates_per_s".into(), updates.into());
    let mut poptrie = serde_json::json!({
        "memory_bytes": pop.memory_bytes(), "build_s": pop_build.as_secs_f64(),
        "lookups_per_s": pop_rates, "answers_differing_from_dir24": pop_differ,
    });
    say!(
        "updates {:>8.0} route changes/s (random routes of the table deleted and re-added, a \
         commit every 64)",
        updates
    );
    if !v4.is_empty() {
        // The same changes on the poptrie: each one rebuilds the top-level slots it covers.
        let mut pop = pop;
        let mut routes = loaded.writer.routes4().clone();
        let (mut changes, mut full) = (0u32, 0u32);
        let t = std::time::Instant::now();
        for _ in 0..10_000 {
            let (p, nh) = v4[rng.below(v4.len() as u64) as usize];
            routes.remove(p);
            full += pop.update(&routes, p) as u32;
            routes.insert(p, nh ^ 1);
            full += pop.update(&routes, p) as u32;
            changes += 2;
        }
        say!(
            "  poptrie {:>8.0} IPv4 route changes/s ({full} of {changes} rebuilt everything: \
             prefixes shorter than /8, or dead subtrees reclaimed)",
            changes as f64 / t.elapsed().as_secs_f64()
        );
        poptrie["updates_per_s"] = (changes as f64 / t.elapsed().as_secs_f64()).into();
        poptrie["full_rebuilds"] = full.into();
    }
    doc.insert("v4_poptrie".into(), poptrie);
    if json {
        println!("{}", serde_json::Value::Object(doc));
    }
    Ok(())
}
