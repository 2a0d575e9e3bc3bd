//! `sluice bench`: RFC 2544 throughput (NDR and PDR by bisection) or a fixed-rate test, of one
//! DUT in the lab, repeated; every trial is kept in the JSON.

use super::bench::Loadtest;
use super::dut::{self, DutKind, RunningDut};
use super::{generate, netns, RunOptions};
use crate::bench::linerate::fmt_pps;
use crate::bench::search::{search, Latency, SearchConfig, SearchResult, Trial, TrialRunner};
use crate::gen::port::Io;
use crate::stats::Summary;
use serde_json::json;

const USAGE: &str = "\
usage: sluice bench [options]            (and: sluice bench compare A B, ministat style)
  --dut D            sluice, sluice-router, linux-bridge, linux-router or testpmd (default sluice)
  --loadtest L       64b, var2-64b, var2-imix, var2-1514b, optionally -bi (default 64b)
  --mode M           search: RFC 2544 NDR and PDR by bisection (default)
                     fixed: send at --max-rate (or as fast as possible) and report what arrived
  --trial SECS       trial duration (default 2)
  --min-rate PPS     lowest rate searched (default 10000)
  --max-rate PPS     highest rate searched (default 2000000; the generator's own limit is
                     found and reported: trials it cannot offer do not decide the search)
  --resolution PPS   stop when the bracket is this narrow (default 10000)
  --pdr-loss PCT     loss allowed for PDR, in percent (default 0.5, as FD.io CSIT)
  --repeat N         searches (default 5); the summary gives median, min, max
  --engine E         generator: af_packet (default, ~1.2 Mpps) or xdp (kernel XDP live
                     frames, paced up to ~1.5 Mpps here; single flow or var2)
  --json             every trial of every search as JSON";

#[derive(Clone, Debug)]
pub struct Options {
    pub dut: DutKind,
    pub loadtest: Loadtest,
    pub fixed: bool,
    pub trial_s: f64,
    pub search: SearchConfig,
    pub repeat: usize,
    pub json: bool,
    pub xdp: bool,
    pub io: Io,
}

pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        dut: DutKind::Sluice,
        loadtest: Loadtest::parse("64b")?,
        fixed: false,
        trial_s: 2.0,
        search: SearchConfig {
            min_rate: 10_000.0,
            max_rate: 2_000_000.0,
            resolution: 10_000.0,
            pdr_loss_ratio: 0.005,
        },
        repeat: 5,
        json: false,
        xdp: false,
        io: Io::AfPacket,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        let mut number = |lo: f64, hi: f64| -> Result<f64, String> {
            let v = value()?;
            v.parse::<f64>()
                .ok()
                .filter(|x| (lo..=hi).contains(x))
                .ok_or_else(|| format!("{a}: '{v}' is not a number in {lo}..={hi}"))
        };
        match a.as_str() {
            "--dut" => o.dut = DutKind::parse(&value()?)?,
            "--loadtest" => o.loadtest = Loadtest::parse(&value()?)?,
            "--mode" => {
                o.fixed = match value()?.as_str() {
                    "search" => false,
                    "fixed" => true,
                    other => return Err(format!("--mode: '{other}' is not search or fixed")),
                }
            }
            "--trial" => o.trial_s = number(0.1, 600.0)?,
            "--min-rate" => o.search.min_rate = number(1.0, 1e9)?,
            "--max-rate" => o.search.max_rate = number(1.0, 1e9)?,
            "--resolution" => o.search.resolution = number(1.0, 1e9)?,
            "--pdr-loss" => o.search.pdr_loss_ratio = number(0.0, 100.0)? / 100.0,
            "--repeat" => o.repeat = number(1.0, 100.0)? as usize,
            "--json" => o.json = true,
            "--engine" => o.xdp = crate::gen::parse_engine(&value()?)?,
            "--io" => o.io = Io::parse(&value()?)?,
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    if o.xdp && !["single", "var2"].contains(&o.loadtest.flows.as_str()) {
        return Err("--engine xdp searches single-flow or var2 loadtests".into());
    }
    super::check_io(o.io, o.xdp, &[o.dut])?;
    if o.search.max_rate <= o.search.min_rate {
        return Err("--max-rate must be above --min-rate".into());
    }
    Ok(o)
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

pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return 0;
    }
    let o = match parse(args) {
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
    let base = RunOptions {
        duts: vec![o.dut],
        size: o.loadtest.size.clone(),
        flows: o.loadtest.flows.clone(),
        duration: Some(format!("{}", o.trial_s)),
        count: None,
        rate: None,
        repeat: 1,
        gen_cpu: 0,
        dut_cpu: 1,
        json: true,
        bi: o.loadtest.bi,
        xdp: o.xdp,
        napi_on_dut: true,
        io: o.io,
        tables: vec![super::table::TableSpec::Small],
    };
    let _mtu = netns::PortMtu::set(super::run_mtu(o.dut, o.io))?;
    netns::dut_napi(base.napi_on_dut, base.xdp, base.dut_cpu)?;
    let running = dut::start(o.dut, base.dut_cpu, o.io, None)?;
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

    #[test]
    fn options() {
        let a: Vec<String> = "--dut linux-router --loadtest var2-64b --trial 1 --resolution 5000 --pdr-loss 1 --repeat 3"
            .split(' ')
            .map(String::from)
            .collect();
        let o = parse(&a).unwrap();
        assert_eq!(o.dut, DutKind::LinuxRouter);
        assert_eq!(o.search.pdr_loss_ratio, 0.01);
        assert_eq!(o.repeat, 3);
        for bad in [
            "--mode guess",
            "--trial 0",
            "--min-rate 5 --max-rate 4",
            "--repeat 0",
            "--dut x",
        ] {
            let a: Vec<String> = bad.split(' ').map(String::from).collect();
            assert!(parse(&a).is_err(), "{bad}");
        }
    }
}
