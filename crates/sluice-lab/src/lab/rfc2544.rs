//! `sluice bench`: RFC 2544 throughput (NDR and PDR by bisection) or a fixed-rate test, of one
//! DUT in the lab, repeated; every trial is kept in the JSON. `BenchCommand` declares the
//! command line for clap, `sluice bench compare` included.

use super::bench::Loadtest;
use super::dut::{self, DutKind, RunningDut};
use super::{args, generate, netns, RunOptions};
use crate::bench::linerate::fmt_pps;
use crate::bench::search::{search, Latency, SearchConfig, SearchResult, Trial, TrialRunner};
use crate::gen::port::Io;
use crate::stats::Summary;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde_json::json;

/// `sluice bench`: an RFC 2544 search, with `compare` ministat's comparison of results, or
/// with `graph` the dataplane's scaling over workers on null interfaces.
#[derive(clap::Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchCommand {
    #[command(subcommand)]
    pub compare: Option<CompareCommand>,
    #[command(flatten)]
    pub search: SearchArgs,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum CompareCommand {
    /// Ministat-style comparison of benchmark results: a distribution plot, a summary line
    /// per data set, and Student's t verdict of each set against the first
    Compare(crate::bench::compare::CompareArgs),
    /// The dataplane with no I/O: two null interfaces cross-connected, 64 B, with 1, 2, ...
    /// workers pinned to CPUs of their own; frames per second and the scaling
    Graph(crate::bench::graph::GraphArgs),
}

/// The options of the RFC 2544 search.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// sluice, sluice-router, linux-bridge, linux-router or testpmd
    #[arg(long, value_name = "D", default_value = "sluice", value_parser = args::dut_arg)]
    dut: DutKind,
    /// 64b, var2-64b, var2-imix, var2-1514b, optionally -bi (64b: the smallest frame of
    /// --family and --l4, 78 B for IPv6/UDP)
    #[arg(long, value_name = "L", default_value = "64b", value_parser = args::loadtest_arg)]
    loadtest: Loadtest,
    /// search: RFC 2544 NDR and PDR by bisection; fixed: send at --max-rate (or as fast as
    /// possible) and report what arrived
    #[arg(long = "mode", value_name = "M", default_value = "search", value_parser = PossibleValuesParser::new(["search", "fixed"]).map(|m| m == "fixed"), action = clap::ArgAction::Set)]
    fixed: bool,
    /// Trial duration in seconds
    #[arg(long = "trial", value_name = "SECS", default_value = "2", value_parser = number_in(0.1, 600.0))]
    trial_s: f64,
    /// Lowest rate searched
    #[arg(long, value_name = "PPS", default_value = "10000", value_parser = number_in(1.0, 1e9))]
    min_rate: f64,
    /// Highest rate searched (the generator's own limit is found and reported: trials it
    /// cannot offer do not decide the search)
    #[arg(long, value_name = "PPS", default_value = "2000000", value_parser = number_in(1.0, 1e9))]
    max_rate: f64,
    /// Stop when the bracket is this narrow
    #[arg(long, value_name = "PPS", default_value = "10000", value_parser = number_in(1.0, 1e9))]
    resolution: f64,
    /// Loss allowed for PDR, in percent (0.5 as FD.io CSIT)
    #[arg(long, value_name = "PCT", default_value = "0.5", value_parser = number_in(0.0, 100.0))]
    pdr_loss: f64,
    /// Searches; the summary gives median, min, max
    #[arg(long, value_name = "N", default_value = "5", value_parser = args::repeat_arg)]
    repeat: usize,
    /// Every trial of every search as JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    frames: args::FrameArgs,
    #[command(flatten)]
    ports: args::PortArgs,
}

/// A number in `lo..=hi`.
fn number_in(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |v| {
        v.parse::<f64>()
            .ok()
            .filter(|x| (lo..=hi).contains(x))
            .ok_or_else(|| format!("not a number in {lo}..={hi}"))
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub dut: DutKind,
    pub loadtest: Loadtest,
    pub fixed: bool,
    pub trial_s: f64,
    pub search: SearchConfig,
    pub repeat: usize,
    pub json: bool,
    pub engine: crate::gen::Engine,
    pub io: Io,
    pub family: crate::gen::frame::Family,
    pub l4: crate::gen::frame::L4,
}

impl SearchArgs {
    /// The settings, after the checks across options.
    pub fn options(self) -> Result<Options, String> {
        let o = Options {
            dut: self.dut,
            loadtest: self.frames.loadtest(self.loadtest),
            fixed: self.fixed,
            trial_s: self.trial_s,
            search: SearchConfig {
                min_rate: self.min_rate,
                max_rate: self.max_rate,
                resolution: self.resolution,
                pdr_loss_ratio: self.pdr_loss / 100.0,
            },
            repeat: self.repeat,
            json: self.json,
            engine: self.ports.engine,
            io: self.ports.io,
            family: self.frames.family,
            l4: self.frames.l4,
        };
        check(&o)?;
        Ok(o)
    }
}

/// The checks across options.
fn check(o: &Options) -> Result<(), String> {
    if o.engine == crate::gen::Engine::Testpmd {
        return Err(
            "--engine testpmd sends at full speed only: it cannot search rates (use sluice lab run)"
                .into(),
        );
    }
    if o.engine == crate::gen::Engine::Xdp
        && !["single", "var2"].contains(&o.loadtest.flows.as_str())
    {
        return Err("--engine xdp searches single-flow or var2 loadtests".into());
    }
    super::check_io(o.io, o.engine, &[o.dut])?;
    if o.search.max_rate <= o.search.min_rate {
        return Err("--max-rate must be above --min-rate".into());
    }
    Ok(())
}

/// Trials through a running DUT in the lab.
struct LabTrials<'a> {
    dut: &'a RunningDut,
    base: RunOptions,
}

impl TrialRunner for LabTrials<'_> {
    fn trial(&mut self, rate_pps: f64) -> Result<Trial, String> {
        let mut o = self.base.clone();
        o.rate = Some(format!("{rate_pps:.0}"));
        let g = generate(&o, &self.dut.gen_args())?;
        let lat = &g["latency_ns"];
        Ok(Trial {
            rate_asked: rate_pps,
            tx_packets: g["tx_packets"].as_u64().unwrap_or(0),
            rx_packets: g["rx_packets"].as_u64().unwrap_or(0),
            rate_reached: g["rate_reached"].as_bool().unwrap_or(false),
            latency_ns: lat.get("median").map(|_| Latency {
                min: lat["min"].as_u64().unwrap_or(0),
                median: lat["median"].as_u64().unwrap_or(0),
                p99: lat["p99"].as_u64().unwrap_or(0),
                max: lat["max"].as_u64().unwrap_or(0),
            }),
        })
    }
}

pub fn main(command: BenchCommand) -> i32 {
    match command.compare {
        Some(CompareCommand::Compare(a)) => return crate::bench::compare::main(a),
        Some(CompareCommand::Graph(a)) => {
            return match crate::bench::graph::main(a) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("sluice bench graph: {e}");
                    1
                }
            }
        }
        None => {}
    }
    let o = match command.search.options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sluice bench: {e} (see sluice bench --help)");
            return 2;
        }
    };
    let result = netns::LabLock::take().and_then(|_lock| run(&o));
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sluice bench: {e}");
            1
        }
    }
}

fn run(o: &Options) -> Result<(), String> {
    if let Some(why) = o.dut.unavailable() {
        return Err(format!("DUT {} cannot run: {why}", o.dut.name()));
    }
    let brought_up = netns::up()?;
    let outcome = run_searches(o);
    if brought_up {
        netns::down()?;
    }
    let searches = outcome?;
    let ndr: Vec<f64> = searches.iter().filter_map(|s| s.ndr).collect();
    let pdr: Vec<f64> = searches.iter().filter_map(|s| s.pdr).collect();
    let limited = searches.iter().any(|s| s.generator_limited);
    if o.json {
        let v = json!({
            "dut": o.dut.name(), "loadtest": o.loadtest.name, "mode": if o.fixed { "fixed" } else { "search" },
            "trial_s": o.trial_s, "min_rate": o.search.min_rate, "max_rate": o.search.max_rate,
            "resolution": o.search.resolution, "pdr_loss_ratio": o.search.pdr_loss_ratio,
            "ndr": Summary::of(&ndr), "pdr": Summary::of(&pdr), "generator_limited": limited,
            "searches": searches,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    let line = |name: &str, v: &[f64]| match Summary::of(v) {
        Some(s) => format!(
            "{name}: median {} (min {}, max {}, {} of {} searches)",
            fmt_pps(s.median),
            fmt_pps(s.min),
            fmt_pps(s.max),
            s.n,
            searches.len()
        ),
        None => format!("{name}: none (loss even at the lowest rate)"),
    };
    println!(
        "{} {} {}",
        o.dut.name(),
        o.loadtest.type_label(),
        o.loadtest.direction()
    );
    if o.fixed {
        let rx: Vec<f64> = searches
            .iter()
            .flat_map(|s| s.trials.iter())
            .map(|t| t.rx_packets as f64 / o.trial_s)
            .collect();
        println!("{}", line("received", &rx));
    } else {
        println!("{}", line("NDR (no loss)", &ndr));
        println!(
            "{}",
            line(
                &format!("PDR (loss <= {}%)", o.search.pdr_loss_ratio * 100.0),
                &pdr
            )
        );
    }
    if limited {
        println!(
            "the generator could not offer every rate asked: results at or near its limit measure \
             the generator, not the DUT"
        );
    }
    Ok(())
}

fn run_searches(o: &Options) -> Result<Vec<SearchResult>, String> {
    let base = RunOptions::loadtest(
        &o.loadtest,
        vec![o.dut],
        format!("{}", o.trial_s),
        o.engine,
        o.io,
        (o.family, o.l4),
    );
    super::options::check_frames(&base)?;
    let _mtu = netns::PortMtu::set(super::run_mtu(o.dut, o.io, &base.size))?;
    netns::dut_napi(
        base.napi_on_dut,
        base.engine == crate::gen::Engine::Xdp,
        base.dut_cpu,
    )?;
    let running = dut::start(
        o.dut,
        base.dut_cpu,
        o.io,
        None,
        &[],
        (None, None, false, base.family),
        None,
    )?;
    if o.dut.routes() {
        super::warm_up(&base, &running)?;
    }
    let mut runner = LabTrials {
        dut: &running,
        base: base.clone(),
    };
    let mut out = Vec::new();
    for r in 0..o.repeat {
        let res = if o.fixed {
            let mut fixed = base.clone();
            fixed.rate = None;
            let g = generate(&fixed, &running.gen_args())?;
            let t = Trial {
                rate_asked: g["tx_pps"].as_f64().unwrap_or(0.0),
                tx_packets: g["tx_packets"].as_u64().unwrap_or(0),
                rx_packets: g["rx_packets"].as_u64().unwrap_or(0),
                rate_reached: true,
                latency_ns: None,
            };
            SearchResult {
                ndr: None,
                pdr: None,
                generator_limited: false,
                trials: vec![t],
            }
        } else {
            search(&mut runner, &o.search)?
        };
        eprintln!(
            "search {}/{}: {} trials, NDR {}, PDR {}",
            r + 1,
            o.repeat,
            res.trials.len(),
            res.ndr.map(fmt_pps).unwrap_or_else(|| "-".into()),
            res.pdr.map(fmt_pps).unwrap_or_else(|| "-".into())
        );
        out.push(res);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::frame::{Family, L4};

    fn parse(s: &str) -> Result<Options, String> {
        args::parse_words::<SearchArgs>(s)?.options()
    }

    #[test]
    fn options() {
        let o = parse(
            "--dut linux-router --loadtest var2-64b --trial 1 --resolution 5000 --pdr-loss 1 --repeat 3",
        )
        .unwrap();
        assert_eq!(o.dut, DutKind::LinuxRouter);
        assert_eq!(o.search.pdr_loss_ratio, 0.01);
        assert_eq!(o.repeat, 3);
        for bad in [
            "--mode guess",
            "--trial 0",
            "--min-rate 5 --max-rate 4",
            "--repeat 0",
            "--dut x",
            "--family ipv5",
            "--l4 sctp",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // The 64 B class is each kind's smallest frame; larger sizes stay.
        let o = parse("--dut linux-router --family ipv6 --loadtest var2-64b").unwrap();
        assert_eq!((o.family, o.loadtest.size.as_str()), (Family::Ipv6, "78"));
        let o = parse("--family ipv6 --l4 tcp --loadtest 64b").unwrap();
        assert_eq!((o.l4, o.loadtest.size.as_str()), (L4::Tcp, "90"));
        let o = parse("--family ipv6 --loadtest var2-1514b").unwrap();
        assert_eq!(o.loadtest.size, "1514");
        assert_eq!(parse("--loadtest 64b").unwrap().loadtest.size, "64");
    }
}
