//! `sluice fib synth|lookup|bench`: offline tools over route files, using the same FIB code
//! as the dataplane. `FibCommand` declares their options for clap.

use super::measure;
use super::synth::{self, SynthSpec};
use sluice::fib::parse::{parse_prefix, read_route_file, IpPrefix, Route};
use sluice::fib::{FibWriter, NO_ROUTE};
use std::io::{BufRead, BufWriter, Write};
use std::net::IpAddr;
use std::path::PathBuf;

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
        /// The FIBs to measure, side by side on the same addresses: poptrie (the dataplane's),
        /// dir24 (the previous one: DIR-24-8 and the IPv6 stride trie, two copies each),
        /// no-blocks (the IPv6 trie with every slot's root a node and no shortcut, as before
        /// 2026-11-25) and shortcut (the IPv6 trie with a hash table to the nodes where a
        /// /48 ends, not the dataplane's)
        #[arg(
            long,
            value_name = "LIST",
            value_delimiter = ',',
            default_value = "poptrie,dir24"
        )]
        fib: Vec<super::bench_cmd::FibKind>,
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
            fib,
        } => super::bench_cmd::bench_cmd(&routes, seconds, json, &fib),
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

pub(super) enum Error {
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
    writer: FibWriter,
}

fn load(path: &str) -> Result<Loaded, Error> {
    let routes = read_route_file(path.as_ref()).map_err(|e| Error::Failed(e.to_string()))?;
    let (mut v4, mut v6) = (vec![], vec![]);
    for (i, r) in routes.iter().enumerate() {
        match r.prefix {
            IpPrefix::V4(p) => v4.push((p, i as u32)),
            IpPrefix::V6(p) => v6.push((p, i as u32)),
        }
    }
    let writer =
        FibWriter::with_routes(v4, v6).map_err(|e| Error::Failed(format!("{path}: {e}")))?;
    Ok(Loaded { routes, writer })
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
