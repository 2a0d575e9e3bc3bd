//! `sluice lab bench`: a matrix of loadtests × DUTs × repeats, DUTs alternated run by run so
//! that drift on the machine hits all of them alike. Prints the seed's results table per DUT
//! with a ratio against a baseline DUT, and writes results.json, results.csv and chart.svg.
//! `BenchArgs` declares its options for clap, from the option groups of `args`.

use super::dut::DutKind;
use super::report::{self, fmt_latency, RunResult};
use super::{args, netns, one_run, RunOptions};
use crate::bench::linerate::{fmt_bps, fmt_pps, percent_of_line};
use crate::gen::port::Io;
use crate::stats::Summary;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A T-Rex bench loadtest of seed 000.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loadtest {
    pub name: String,
    pub size: String,
    pub flows: String,
    pub bi: bool,
}

impl Loadtest {
    pub fn parse(s: &str) -> Result<Loadtest, String> {
        let (base, bi) = match s.strip_suffix("-bi") {
            Some(b) => (b, true),
            None => (s.strip_suffix("-uni").unwrap_or(s), false),
        };
        let (flows, size) = match base.strip_prefix("var2-") {
            Some(rest) => ("var2", rest),
            None => ("single", base),
        };
        let size = match size {
            "imix" => "imix".to_string(),
            other => {
                let n = other
                    .strip_suffix('b')
                    .and_then(|n| n.parse::<usize>().ok())
                    .ok_or_else(|| format!("unknown loadtest '{s}' (e.g. 64b, var2-64b, var2-imix, var2-1514b, 64b-bi)"))?;
                crate::gen::frame::parse_sizes(&n.to_string())?;
                n.to_string()
            }
        };
        Ok(Loadtest {
            name: s.to_string(),
            size,
            flows: flows.to_string(),
            bi,
        })
    }

    /// The seed's Type column: `vm=var2,size=64` or `size=64`.
    pub fn type_label(&self) -> String {
        if self.flows == "var2" {
            format!("vm=var2,size={}", self.size)
        } else {
            format!("size={}", self.size)
        }
    }

    pub fn direction(&self) -> &'static str {
        if self.bi {
            "Bidirectional"
        } else {
            "Unidirectional"
        }
    }
}

#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub duts: Vec<DutKind>,
    pub loadtests: Vec<Loadtest>,
    pub repeat: usize,
    pub duration: String,
    pub rate: Option<String>,
    pub baseline: Option<DutKind>,
    pub link_bps: f64,
    pub out: PathBuf,
    pub gen_cpu: usize,
    pub dut_cpu: usize,
    pub engine: crate::gen::Engine,
    pub napi_on_dut: bool,
    pub io: Io,
    /// Flame graphs of every run into `out` (flame-DUT-N.svg).
    pub profile: bool,
    pub family: crate::gen::frame::Family,
    pub l4: crate::gen::frame::L4,
}

/// `sluice lab bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// DUTs (those that cannot run here are reported and skipped)
    #[arg(long = "dut", value_name = "LIST", value_delimiter = ',', default_value = "sluice,linux-bridge,linux-router,testpmd", value_parser = args::dut_arg)]
    duts: Vec<DutKind>,
    /// Of 64b, var2-64b, var2-imix, var2-1514b, each optionally -bi (64b: the smallest frame
    /// of --family and --l4, 78 B for IPv6/UDP)
    #[arg(long = "loadtest", value_name = "LIST", value_delimiter = ',', default_value = "64b,var2-64b,var2-imix,var2-1514b", value_parser = args::loadtest_arg)]
    loadtests: Vec<Loadtest>,
    /// Runs per cell
    #[arg(long, value_name = "N", default_value = "5", value_parser = args::repeat_arg)]
    repeat: usize,
    /// Seconds per run
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = args::seconds_arg)]
    duration: String,
    #[command(flatten)]
    load: args::LoadArgs,
    /// The ratio column's reference (default: the first DUT)
    #[arg(long, value_name = "DUT", value_parser = args::dut_arg)]
    baseline: Option<DutKind>,
    /// Link speed for the Line Rate column: 1G, 10G, 25G, 40G, 100G
    #[arg(long, value_name = "SPEED", default_value = "10G", value_parser = crate::bench::linerate::parse_link_speed)]
    link: f64,
    /// Where results.json, results.csv and chart.svg go
    #[arg(long, value_name = "DIR", default_value = "lab-bench")]
    out: PathBuf,
    /// Sample the DUT's CPU with perf during each run: a flame graph per DUT and run
    /// (flame-DUT-N.svg and .folded) in --out, each DUT's top functions in the table
    #[arg(long)]
    profile: bool,
    #[command(flatten)]
    frames: args::FrameArgs,
    #[command(flatten)]
    cpus: args::CpuArgs,
    #[command(flatten)]
    ports: args::PortArgs,
}

impl BenchArgs {
    /// The settings, after the checks across options.
    pub fn options(self) -> Result<BenchOptions, String> {
        let o = BenchOptions {
            duts: self.duts,
            loadtests: self
                .loadtests
                .into_iter()
                .map(|l| self.frames.loadtest(l))
                .collect(),
            family: self.frames.family,
            l4: self.frames.l4,
            repeat: self.repeat,
            duration: self.duration,
            rate: self.load.rate,
            baseline: self.baseline,
            link_bps: self.link,
            out: self.out,
            gen_cpu: self.cpus.gen_cpu,
            dut_cpu: self.cpus.dut_cpu,
            engine: self.ports.engine,
            napi_on_dut: self.cpus.napi_on_dut,
            io: self.ports.io,
            profile: self.profile,
        };
        check(&o)?;
        Ok(o)
    }
}

impl super::Placement for BenchOptions {
    fn engine(&self) -> crate::gen::Engine {
        self.engine
    }
    fn io(&self) -> Io {
        self.io
    }
    fn cpus(&self) -> (usize, usize) {
        (self.gen_cpu, self.dut_cpu)
    }
}

/// The checks across options.
fn check(o: &BenchOptions) -> Result<(), String> {
    if o.engine == crate::gen::Engine::Xdp
        && (o.rate.is_some()
            || o.loadtests
                .iter()
                .any(|l| !["single", "var2"].contains(&l.flows.as_str())))
    {
        return Err(
            "--engine xdp runs single-flow or var2 loadtests at full speed (no --rate)".into(),
        );
    }
    super::check_io(o.io, o.engine, &o.duts)?;
    super::check_profile(o.profile)?;
    for l in &o.loadtests {
        super::check_testpmd_engine(o, &l.flows, &l.size, o.rate.is_some(), l.bi)?;
    }
    if o.duts.is_empty() || o.loadtests.is_empty() {
        return Err("need at least one DUT and one loadtest".into());
    }
    if let Some(b) = o.baseline {
        if !o.duts.contains(&b) {
            return Err(format!("--baseline {} is not among the DUTs", b.name()));
        }
    }
    Ok(())
}

/// One run in the matrix.
#[derive(Clone, Debug)]
pub struct Trial {
    pub loadtest: String,
    pub run: usize,
    pub result: RunResult,
}

/// Progress: a bar with an ETA on a terminal, plain lines otherwise.
struct Progress {
    total: usize,
    done: usize,
    start: Instant,
    tty: bool,
}

impl Progress {
    fn step(&mut self, what: &str, line: &str) {
        self.done += 1;
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = elapsed / self.done as f64 * (self.total - self.done) as f64;
        if self.tty {
            let width = 30;
            let filled = width * self.done / self.total.max(1);
            eprint!(
                "\r\x1b[K[{}{}] {}/{} ETA {:.0}s  {what}",
                "#".repeat(filled),
                ".".repeat(width - filled),
                self.done,
                self.total,
                eta
            );
            if self.done == self.total {
                eprintln!();
            }
        } else {
            eprintln!(
                "[{}/{}] {what}: {line} (ETA {:.0}s)",
                self.done, self.total, eta
            );
        }
    }
}

pub fn main(o: &BenchOptions) -> Result<(), String> {
    let mut runnable = Vec::new();
    let mut unavailable = Vec::new();
    for &d in &o.duts {
        match d.unavailable() {
            Some(why) => {
                eprintln!("DUT {} cannot run: {why}", d.name());
                unavailable.push((d, why));
            }
            None => runnable.push(d),
        }
    }
    if runnable.is_empty() {
        return Err("no DUT can run here".into());
    }
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    eprintln!(
        "generator on CPU {}, DUT on CPU {} (receive work {}); {} loadtests x {} DUTs x {} runs of {} s",
        o.gen_cpu,
        o.dut_cpu,
        if o.napi_on_dut { "there too, in pinned NAPI threads" } else { "in the sender's context" },
        o.loadtests.len(),
        runnable.len(),
        o.repeat,
        o.duration
    );
    let brought_up = netns::up()?;
    let trials = run_matrix(o, &runnable, &stop);
    if brought_up {
        netns::down()?;
    }
    let trials = trials?;
    let baseline = o.baseline.unwrap_or(runnable[0]);
    print!("{}", table(o, &runnable, baseline, &trials));
    for (d, why) in &unavailable {
        println!("{}: could not run ({why})", d.name());
    }
    write_outputs(o, &runnable, &unavailable, &trials)?;
    println!(
        "wrote {0}/results.json, {0}/results.csv, {0}/chart.svg",
        o.out.display()
    );
    Ok(())
}

fn run_matrix(
    o: &BenchOptions,
    duts: &[DutKind],
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Vec<Trial>, String> {
    let mut progress = Progress {
        total: o.loadtests.len() * o.repeat * duts.len(),
        done: 0,
        start: Instant::now(),
        tty: std::io::stderr().is_terminal(),
    };
    let mut trials = Vec::new();
    for lt in &o.loadtests {
        let run_opts = RunOptions {
            rate: o.rate.clone(),
            gen_cpu: o.gen_cpu,
            dut_cpu: o.dut_cpu,
            napi_on_dut: o.napi_on_dut,
            profile: o.profile.then(|| o.out.clone()),
            ..RunOptions::loadtest(
                lt,
                duts.to_vec(),
                o.duration.clone(),
                o.engine,
                o.io,
                (o.family, o.l4),
            )
        };
        super::options::check_frames(&run_opts)?;
        for r in 0..o.repeat {
            let mut order = duts.to_vec();
            if r % 2 == 1 {
                order.reverse();
            }
            for d in order {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err("interrupted".into());
                }
                let result = one_run(&run_opts, d, None)?;
                progress.step(
                    &format!("{} {} run {}/{}", lt.name, d.name(), r + 1, o.repeat),
                    &super::report::run_line(&result),
                );
                trials.push(Trial {
                    loadtest: lt.name.clone(),
                    run: r + 1,
                    result,
                });
            }
        }
    }
    Ok(trials)
}

fn cell<'a>(trials: &'a [Trial], dut: DutKind, lt: &str) -> Vec<&'a RunResult> {
    trials
        .iter()
        .filter(|t| t.result.dut == dut.name() && t.loadtest == lt)
        .map(|t| &t.result)
        .collect()
}

fn summary(runs: &[&RunResult]) -> Option<Summary> {
    Summary::of(&runs.iter().map(|r| r.rx_pps).collect::<Vec<_>>())
}

/// Mean frame size with FCS of a run, from its L2 rate.
fn mean_size(r: &RunResult) -> f64 {
    if r.rx_pps > 0.0 {
        r.l2_bps / r.rx_pps / 8.0
    } else {
        0.0
    }
}

/// The seed's table per DUT, medians of the runs, with the ratio to the baseline DUT.
pub fn table(o: &BenchOptions, duts: &[DutKind], baseline: DutKind, trials: &[Trial]) -> String {
    let link = fmt_bps(o.link_bps).replace(".00", "");
    let mut s = String::new();
    // The ratio column fits its heading, however long the baseline's name.
    let vs = format!("vs {}", baseline.name());
    let w = (vs.len() + 2).max(12);
    // Whether some row's DUT took all the generator offered (its limit is then unknown).
    let mut generator_bound = false;
    for &d in duts {
        let _ = writeln!(
            s,
            "\n{} (median of {} runs; line rate of {link})",
            d.name(),
            o.repeat
        );
        let _ = writeln!(
            s,
            "{:<22}{:<16}{:>13}{:>13}{:>11}{:>9}{:>10}{:>10}  {:<11}{:>22}{:>w$}",
            "Type",
            "Uni/BiDir",
            "Packets/Sec",
            "L2 Bits/Sec",
            "Line Rate",
            "Loss",
            "p50",
            "p99",
            "Limit",
            "min-max",
            vs,
        );
        for lt in &o.loadtests {
            let runs = cell(trials, d, &lt.name);
            let Some(sum) = summary(&runs) else { continue };
            // Median loss ratio: a DUT that loses frames at the generator's rate is at its limit.
            let loss = Summary::of(
                &runs
                    .iter()
                    .map(|r| r.lost as f64 / r.tx_packets.max(1) as f64)
                    .collect::<Vec<_>>(),
            );
            let size = runs.first().map(|r| mean_size(r)).unwrap_or(0.0);
            let base = summary(&cell(trials, baseline, &lt.name)).map(|b| b.median);
            let ratio = match base {
                Some(b) if b > 0.0 => format!("{:.2}x", sum.median / b),
                _ => "-".into(),
            };
            // Latency and limit of the median run, as `lab run` shows them.
            let m = report::median_run(&runs);
            let latency = |which| fmt_latency(m.latency(which));
            let limit = report::limit(m, o.rate.is_some());
            generator_bound |= limit == report::Limit::Generator;
            let limit = limit.name();
            let _ = writeln!(
                s,
                "{:<22}{:<16}{:>13}{:>13}{:>10.1}%{:>8.3}%{:>10}{:>10}  {:<11}{:>22}{:>w$}",
                lt.type_label(),
                lt.direction(),
                fmt_pps(sum.median),
                fmt_bps(sum.median * size * 8.0),
                percent_of_line(sum.median, size, o.link_bps),
                loss.map(|l| l.median * 100.0).unwrap_or(0.0),
                latency("median"),
                latency("p99"),
                limit,
                format!("{}-{}", fmt_pps(sum.min), fmt_pps(sum.max)),
                ratio
            );
            if let Some(p) = &m.profile {
                s.push_str(&super::profile::report_lines(
                    &format!("{} {}", d.name(), lt.name),
                    p,
                ));
            }
        }
    }
    if generator_bound {
        s.push_str(
            "\nLimit generator: the DUT lost nothing and never pushed back, so it forwarded all \
             the generator could send: its own limit is higher than its row says.\n",
        );
    }
    s
}

fn write_outputs(
    o: &BenchOptions,
    duts: &[DutKind],
    unavailable: &[(DutKind, String)],
    trials: &[Trial],
) -> Result<(), String> {
    let write = |name: &str, text: String| {
        let p = o.out.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    write(
        "results.json",
        serde_json::to_string_pretty(&results_json(o, duts, unavailable, trials))
            .unwrap_or_default(),
    )?;
    write("results.csv", results_csv(trials))?;
    let groups: Vec<super::chart::Group> = o
        .loadtests
        .iter()
        .map(|lt| super::chart::Group {
            label: lt.name.clone(),
            bars: duts
                .iter()
                .filter_map(|&d| {
                    summary(&cell(trials, d, &lt.name)).map(|s| {
                        (
                            d.name().to_string(),
                            s.median / 1e6,
                            s.min / 1e6,
                            s.max / 1e6,
                        )
                    })
                })
                .collect(),
        })
        .collect();
    write(
        "chart.svg",
        super::chart::svg("Mpps received (median, min-max whiskers)", &groups),
    )?;
    Ok(())
}

pub fn results_json(
    o: &BenchOptions,
    duts: &[DutKind],
    unavailable: &[(DutKind, String)],
    trials: &[Trial],
) -> Value {
    let cells: Vec<Value> = o
        .loadtests
        .iter()
        .flat_map(|lt| duts.iter().map(move |&d| (lt, d)))
        .map(|(lt, d)| {
            let runs = cell(trials, d, &lt.name);
            let mut c = json!({"dut": d.name(), "loadtest": lt.name, "type": lt.type_label(),
                   "direction": lt.direction(), "rx_pps": summary(&runs)});
            if !runs.is_empty() {
                let m = report::median_run(&runs);
                let us = |which| m.latency(which).map(|n| n as f64 / 1e3);
                c["latency_p50_us"] = json!(us("median"));
                c["latency_p99_us"] = json!(us("p99"));
                c["limit"] = json!(report::limit(m, o.rate.is_some()).name());
            }
            c
        })
        .collect();
    let all: Vec<Value> = trials
        .iter()
        .map(|t| {
            let mut v = serde_json::to_value(&t.result).unwrap_or(Value::Null);
            if let Some(m) = v.as_object_mut() {
                m.insert("loadtest".into(), json!(t.loadtest));
                m.insert("run".into(), json!(t.run));
            }
            v
        })
        .collect();
    json!({
        "config": {"duts": duts.iter().map(|d| d.name()).collect::<Vec<_>>(),
                   "engine": o.engine.name(),
                   "io": o.io.name(),
                   "napi": if o.napi_on_dut { "dut" } else { "sender" },
                   "loadtests": o.loadtests.iter().map(|l| &l.name).collect::<Vec<_>>(),
                   "repeat": o.repeat, "duration_s": o.duration, "rate": o.rate,
                   "gen_cpu": o.gen_cpu, "dut_cpu": o.dut_cpu, "link_bps": o.link_bps},
        "unavailable": unavailable.iter().map(|(d, w)| json!({"dut": d.name(), "why": w})).collect::<Vec<_>>(),
        "cells": cells,
        "trials": all,
    })
}

pub fn results_csv(trials: &[Trial]) -> String {
    let mut s = String::from("dut,loadtest,run,tx_packets,rx_packets,lost,rx_pps,l2_bps\n");
    for t in trials {
        let r = &t.result;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{:.1},{:.1}",
            r.dut, t.loadtest, t.run, r.tx_packets, r.rx_packets, r.lost, r.rx_pps, r.l2_bps
        );
    }
    s
}

/// Read a results.json back (for `sluice bench compare` and tests).
pub fn load(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<BenchOptions, String> {
        args::parse_words::<BenchArgs>(s)?.options()
    }

    #[test]
    fn loadtest_names() {
        let l = Loadtest::parse("var2-imix").unwrap();
        assert_eq!(
            (l.size.as_str(), l.flows.as_str(), l.bi),
            ("imix", "var2", false)
        );
        assert_eq!(l.type_label(), "vm=var2,size=imix");
        let l = Loadtest::parse("64b-bi").unwrap();
        assert_eq!(
            (l.size.as_str(), l.flows.as_str(), l.bi),
            ("64", "single", true)
        );
        assert_eq!(l.type_label(), "size=64");
        assert_eq!(Loadtest::parse("var2-1514b").unwrap().size, "1514");
        for bad in ["64", "var2-", "var3-64b", "12b", "imix-b"] {
            assert!(Loadtest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ratio_column_fits_a_long_baseline_name() {
        let o = parse("--dut sluice-router,linux-router").unwrap();
        let trial = |dut: &str, pps: f64| Trial {
            loadtest: "64b".into(),
            run: 1,
            result: RunResult::from_gen(
                dut,
                &json!({"tx_packets": 10, "rx_packets": 10, "rx_pps": pps, "l2_bps": pps * 512.0}),
                None,
                None,
            ),
        };
        let trials = [trial("sluice-router", 1e5), trial("linux-router", 2e5)];
        let t = table(&o, &o.duts, DutKind::SluiceRouter, &trials);
        assert!(t.contains("min-max  vs sluice-router"), "{t}");
        let row = t
            .lines()
            .find(|l| l.ends_with("2.00x"))
            .unwrap_or_else(|| panic!("{t}"));
        let head = t.lines().find(|l| l.contains("vs sluice-router")).unwrap();
        assert_eq!(row.len(), head.len(), "{t}");
    }

    #[test]
    fn cells_show_the_median_runs_latency_and_limit() {
        let o = parse("--dut sluice,linux-bridge").unwrap();
        let trial = |dut: &str, run: usize, pps: f64, lost: u64, p50: u64| Trial {
            loadtest: "64b".into(),
            run,
            result: RunResult::from_gen(
                dut,
                &json!({"tx_packets": 1000, "rx_packets": 1000 - lost, "lost": lost, "rx_pps": pps,
                        "l2_bps": pps * 512.0,
                        "latency_ns": {"samples": 9, "median": p50, "p99": 3 * p50}}),
                None,
                None,
            ),
        };
        let trials = [
            trial("sluice", 1, 1e5, 500, 4_000_000),
            trial("sluice", 2, 2e5, 500, 5_000_000),
            trial("sluice", 3, 3e5, 500, 6_000_000),
            trial("linux-bridge", 1, 6e5, 0, 30_000),
        ];
        let t = table(
            &o,
            &[DutKind::Sluice, DutKind::LinuxBridge],
            DutKind::LinuxBridge,
            &trials,
        );
        let head = t.lines().find(|l| l.starts_with("Type")).unwrap();
        assert!(
            head.contains("p50") && head.contains("p99") && head.contains("Limit"),
            "{t}"
        );
        // sluice's median run (2e5) lost half: 5 ms, 15 ms, the DUT's limit.
        let sluice = t
            .lines()
            .find(|l| l.contains("200.00Kpps"))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(
            sluice.contains("5.00ms") && sluice.contains("15.00ms"),
            "{sluice}"
        );
        assert!(sluice.contains("DUT"), "{sluice}");
        let bridge = t
            .lines()
            .find(|l| l.contains("600.00Kpps"))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(
            bridge.contains("30.0µs") && bridge.contains("generator"),
            "{bridge}"
        );
        let v = results_json(&o, &[DutKind::Sluice], &[], &trials);
        assert_eq!(v["cells"][0]["latency_p50_us"], 5000.0, "{v}");
        assert_eq!(v["cells"][0]["limit"], "DUT", "{v}");
    }

    #[test]
    fn options() {
        let o = parse("").unwrap();
        assert_eq!(o.duts.len(), 4);
        assert_eq!(o.loadtests[3].size, "1514");
        assert_eq!((o.repeat, o.duration.as_str(), o.link_bps), (5, "5", 10e9));
        let o = parse(
            "--dut sluice,linux-bridge --loadtest 64b --repeat 2 --link 25G --baseline linux-bridge",
        )
        .unwrap();
        assert_eq!(o.duts.len(), 2);
        assert_eq!(o.link_bps, 25e9);
        assert_eq!(o.baseline, Some(DutKind::LinuxBridge));
        for bad in [
            "--link 3G",
            "--repeat 0",
            "--baseline testpmd --dut sluice",
            "--loadtest 64",
            "--family ipv5",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let o = parse("--dut sluice-router --family ipv6 --loadtest 64b,var2-imix").unwrap();
        let sizes: Vec<&str> = o.loadtests.iter().map(|l| l.size.as_str()).collect();
        assert_eq!(sizes, ["78", "imix"]);
    }
}
