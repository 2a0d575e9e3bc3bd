//! Lab results: one record per run, and the table (in the form of the seed's results tables)
//! and JSON made from them.

use super::calibrate::Calibration;
use super::RunOptions;
use crate::bench::linerate::{fmt_bps, fmt_pps};
use crate::stats::Summary;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// One run of one DUT.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunResult {
    pub dut: String,
    pub frame_size: Value,
    /// A number of flows, or "var2".
    pub flows: Value,
    pub tx_packets: u64,
    pub rx_packets: u64,
    pub lost: u64,
    pub tx_pps: f64,
    pub rx_pps: f64,
    pub l2_bps: f64,
    pub rate_reached: bool,
    /// Frames lost in the tester's own receive ring (not the DUT's doing).
    pub rx_ring_drops: u64,
    /// Frames the kernel dropped at the veths for want of room at the receiving end.
    pub queue_drops: super::netns::QueueDrops,
    pub duration_s: f64,
    pub latency_ns: Value,
    /// Frames a full queue turned back for the generator to send again: back-pressure.
    pub tx_queue_full: u64,
    /// Clocks per packet of each sluice node that handled packets, from `show runtime`.
    pub node_clocks: Vec<(String, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dut_interfaces: Option<Value>,
    /// A router's route table: `small` or the synthetic table's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// Seconds the router took to load the synthetic table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_load_s: Option<f64>,
    /// With `--control bird`: seconds from BIRD's announcement (and withdrawal) until BIRD
    /// counted the routes exported and until sluice's FIB held them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence: Option<Value>,
    /// Where the DUT's CPU spent the run (--profile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::profile::Profile>,
    /// MAC pairs the frames stepped through (--macs).
    pub macs: u32,
    /// A sluice bridge's learnt and static MAC entries at the end of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2fib_entries: Option<u64>,
    /// With `--reply`: the answers, the generator's `reverse` object (sent by t1, received
    /// by t0, lost, round-trip latency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<Value>,
    /// No generator (`--io dpdk-null`): the DUT's own ports were source and sink, so the DUT
    /// set the rate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dut_only: bool,
    /// With `--stateful`: the DUT's state table after the run (sluice's `show sessions
    /// summary`, the kernel's conntrack entries by state).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Value>,
}

impl RunResult {
    pub fn from_gen(
        dut: &str,
        gen: &Value,
        runtime: Option<Value>,
        interfaces: Option<Value>,
    ) -> RunResult {
        let u = |k: &str| gen[k].as_u64().unwrap_or(0);
        let f = |k: &str| gen[k].as_f64().unwrap_or(0.0);
        let nodes: Vec<(String, f64, u64)> = runtime
            .as_ref()
            .and_then(|r| r["threads"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .flat_map(|t| t["nodes"].as_array().cloned().unwrap_or_default())
            .map(|n| {
                (
                    n["name"].as_str().unwrap_or("?").to_string(),
                    n["clocks_per_vector"].as_f64().unwrap_or(0.0),
                    n["vectors"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        // Nodes that saw a handful of packets (a stray IPv6 frame from the warm-up) would
        // show thousands of clocks per packet and say nothing of the run: keep those that
        // handled at least 1 % of the busiest node's packets.
        let busiest = nodes.iter().map(|n| n.2).max().unwrap_or(0);
        let node_clocks = nodes
            .into_iter()
            .filter(|n| n.2 > 0 && n.2 * 100 >= busiest)
            .map(|(name, clocks, _)| (name, clocks))
            .collect();
        RunResult {
            dut: dut.to_string(),
            frame_size: gen["frame_size"].clone(),
            flows: gen["flows"].clone(),
            tx_packets: u("tx_packets"),
            rx_packets: u("rx_packets"),
            lost: u("lost"),
            tx_pps: f("tx_pps"),
            rx_pps: f("rx_pps"),
            l2_bps: f("l2_bps"),
            rate_reached: gen["rate_reached"].as_bool().unwrap_or(true),
            rx_ring_drops: u("rx_ring_drops"),
            queue_drops: Default::default(),
            duration_s: f("duration_s"),
            latency_ns: gen["latency_ns"].clone(),
            tx_queue_full: u("tx_queue_full"),
            node_clocks,
            dut_interfaces: interfaces,
            table: None,
            table_load_s: None,
            convergence: None,
            profile: None,
            macs: gen["macs"].as_u64().unwrap_or(1) as u32,
            l2fib_entries: None,
            reverse: Some(gen["reverse"].clone()).filter(|r| r.is_object()),
            sessions: None,
            dut_only: false,
        }
    }
}

impl RunResult {
    /// A latency percentile of the run ("median", "p99"), in ns; None when the generator
    /// measured none (the XDP engine reads no frame; or nothing arrived).
    pub fn latency(&self, which: &str) -> Option<u64> {
        if self.latency_ns["samples"].as_u64().unwrap_or(0) == 0 {
            return None;
        }
        self.latency_ns[which].as_u64()
    }
}

/// A latency for the table: `850ns`, `12.3µs`, `4.56ms`.
pub fn fmt_latency(ns: Option<u64>) -> String {
    match ns {
        None => "-".into(),
        Some(n) if n < 1_000 => format!("{n}ns"),
        Some(n) if n < 1_000_000 => format!("{:.1}µs", n as f64 / 1e3),
        Some(n) => format!("{:.2}ms", n as f64 / 1e6),
    }
}

fn latency_us(r: &RunResult, which: &str) -> Value {
    r.latency(which)
        .map_or(Value::Null, |n| json!(n as f64 / 1e3))
}

/// What set a run's rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The DUT lost frames, or held the generator back below its own maximum.
    Dut,
    /// Nothing lost at the DUT: the generator sent what it could (or its receiver lost
    /// frames).
    Generator,
    /// The asked rate was carried without loss: neither was at its limit.
    Neither,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::Dut => "DUT",
            Limit::Generator => "generator",
            Limit::Neither => "neither",
        }
    }
}

/// Share of the frames sent that a DUT may lose (or the tester's ring) and still count as
/// lossless: a few frames in flight at the end are not a limit.
pub const LOSS_SHARE: f64 = 0.001;
/// Frames a full queue turned back (the sender retries each), per frame sent, above which
/// the DUT held the generator back.
pub const PUSHBACK_SHARE: f64 = 0.01;

/// What set `r`'s rate: the DUT if it lost frames or pushed back on the generator; else the
/// generator (or neither when it carried the asked rate). The generator's own maximum says
/// how much headroom it had, not who the limit was: a lossless DUT that never pushed back
/// took all the generator sent, whatever share of its maximum that was (its receiver shares
/// its CPU in a run).
pub fn limit(r: &RunResult, rate_asked: bool) -> Limit {
    if r.dut_only {
        return Limit::Dut;
    }
    let sent = r.tx_packets.max(1) as f64;
    // Frames the DUT had no room for at the tester's receiving port (a memif client that
    // posted no buffers) were lost by the tester's receiver, as its own ring's are.
    let tester_lost = r.rx_ring_drops + peer_full(r) + r.queue_drops.to_tester;
    let dut_lost = r.lost.saturating_sub(tester_lost) as f64;
    if dut_lost / sent > LOSS_SHARE {
        return Limit::Dut;
    }
    if tester_lost as f64 / sent > LOSS_SHARE {
        return Limit::Generator;
    }
    if rate_asked && r.rate_reached {
        return Limit::Neither;
    }
    // A full memif ring or veth queue turned frames back: the DUT did not take them as fast
    // as the generator offered them.
    if r.tx_queue_full as f64 / sent > PUSHBACK_SHARE {
        Limit::Dut
    } else {
        Limit::Generator
    }
}

/// Frames the DUT's ports could not hand to the tester for want of room at its end.
fn peer_full(r: &RunResult) -> u64 {
    r.dut_interfaces
        .as_ref()
        .and_then(Value::as_array)
        .map_or(0, |ports| {
            ports
                .iter()
                .filter_map(|p| p["tx_peer_full"].as_u64())
                .sum()
        })
}

/// The seed's "Type" column: `size=64`, or `flows=N,size=64` for many flows.
pub fn type_label(o: &RunOptions) -> String {
    let base = if o.flows == "single" || o.flows == "1" {
        format!("size={}", o.size)
    } else if o.flows == "var2" {
        format!("vm=var2,size={}", o.size)
    } else {
        format!("flows={},size={}", o.flows, o.size)
    };
    let base = match o.macs {
        1 => base,
        n => format!("{base},macs={n}"),
    };
    let base = match o.vlans.as_slice() {
        [] => base,
        [v] => format!("{base},vlan={v}"),
        [outer, inner, ..] => format!("{base},qinq={outer}.{inner}"),
    };
    let base = match o.vrfs {
        None => base,
        Some(n) => format!("{base},vrfs={n}"),
    };
    match o.acl {
        None => base,
        Some(a) if a.stateful => format!("{base},acl={}+state", a.rules),
        Some(a) => format!("{base},acl={}", a.rules),
    }
}

/// One line per run, for progress.
pub fn run_line(r: &RunResult) -> String {
    let answers = r.reverse.as_ref().map_or(String::new(), |v| {
        format!(
            "; answers sent {} received {} lost {}, round trip median {}",
            v["tx_packets"],
            v["rx_packets"],
            v["lost"],
            fmt_latency(v["latency_ns"]["median"].as_u64())
        )
    });
    format!(
        "sent {} received {} lost {}: {} ({}){}{answers}",
        r.tx_packets,
        r.rx_packets,
        r.lost,
        fmt_pps(r.rx_pps),
        fmt_bps(r.l2_bps),
        if r.rate_reached {
            ""
        } else {
            " [generator missed the asked rate]"
        }
    )
}

/// A row of the table: a DUT, and for a router the route table it ran with.
type RowKey = (String, Option<String>);

fn key(r: &RunResult) -> RowKey {
    (r.dut.clone(), r.table.clone())
}

fn rows_in_order(results: &[RunResult]) -> Vec<RowKey> {
    let mut v: Vec<RowKey> = Vec::new();
    for r in results {
        if !v.contains(&key(r)) {
            v.push(key(r));
        }
    }
    v
}

fn runs_of<'a>(results: &'a [RunResult], k: &RowKey) -> Vec<&'a RunResult> {
    results.iter().filter(|r| key(r) == *k).collect()
}

/// Median of the runs' table load times, when they loaded one.
fn load_median(runs: &[&RunResult]) -> Option<Summary> {
    Summary::of(
        &runs
            .iter()
            .filter_map(|r| r.table_load_s)
            .collect::<Vec<_>>(),
    )
}

/// The run with the median rx rate (the lower middle for an even count).
pub(crate) fn median_run<'a>(runs: &[&'a RunResult]) -> &'a RunResult {
    let mut v = runs.to_vec();
    v.sort_by(|a, b| a.rx_pps.total_cmp(&b.rx_pps));
    v[(v.len() - 1) / 2]
}

/// The results table: one row per DUT with the median over its runs; `cal` is what the
/// generator sends alone (or why that is not known).
pub fn table(o: &RunOptions, results: &[RunResult], cal: &Result<Calibration, String>) -> String {
    let mut s = String::new();
    let gen_max = cal.as_ref().ok().map(|c| c.tx_pps);
    // The Table column only when routers ran.
    let tables = results.iter().any(|r| r.table.is_some());
    let table_col = |t: &str| {
        if tables {
            format!("{t:<10}")
        } else {
            String::new()
        }
    };
    // The seed's 14 columns for the DUT, wider when a name needs it (sluice-af_packet).
    let w = results
        .iter()
        .map(|r| r.dut.len() + 1)
        .max()
        .unwrap_or(0)
        .max(14);
    // The Type column fits its label (var2 with an ACL or VLAN tags runs past 22).
    let t = (type_label(o).len() + 1).max(22);
    let _ = writeln!(
        s,
        "{:<w$}{}{:<t$}{:<16}{:>12}{:>12}{:>10}{:>13}{:>13}{:>10}{:>10}{:>13}{:>13}{:>6}  {:<11}min-max (runs)",
        "DUT",
        table_col("Table"),
        "Type",
        "Uni/BiDir",
        "Sent",
        "Received",
        "Lost",
        "Packets/Sec",
        "L2 Bits/Sec",
        "p50",
        "p99",
        "Offered",
        "Gen max",
        "%",
        "Limit",
    );
    for k in rows_in_order(results) {
        let (dut, table) = &k;
        let runs = runs_of(results, &k);
        let m = median_run(&runs);
        let sum = Summary::of(&runs.iter().map(|r| r.rx_pps).collect::<Vec<_>>());
        let spread = sum
            .map(|x| format!("{}-{} ({})", fmt_pps(x.min), fmt_pps(x.max), x.n))
            .unwrap_or_default();
        let share = gen_max
            .filter(|&g| g > 0.0)
            .map_or("-".into(), |g| format!("{:.0}", m.tx_pps / g * 100.0));
        let _ = writeln!(
            s,
            "{:<w$}{}{:<t$}{:<16}{:>12}{:>12}{:>10}{:>13}{:>13}{:>10}{:>10}{:>13}{:>13}{:>6}  {:<11}{}",
            dut,
            table_col(table.as_deref().unwrap_or("-")),
            type_label(o),
            if o.bi || o.io == crate::gen::port::Io::DpdkNull {
                "Bidirectional"
            } else {
                "Unidirectional"
            },
            m.tx_packets,
            m.rx_packets,
            m.lost,
            fmt_pps(m.rx_pps),
            fmt_bps(m.l2_bps),
            fmt_latency(m.latency("median")),
            fmt_latency(m.latency("p99")),
            fmt_pps(m.tx_pps),
            gen_max.map_or("-".into(), fmt_pps),
            share,
            limit(m, o.rate.is_some()).name(),
            spread
        );
    }
    let loads: Vec<String> = rows_in_order(results)
        .iter()
        .filter_map(|k| {
            let l = load_median(&runs_of(results, k))?;
            Some(format!(
                "  {:<14}{:<10}{:>8.2} s (min-max {:.2}-{:.2}, {} runs)",
                k.0,
                k.1.as_deref().unwrap_or("-"),
                l.median,
                l.min,
                l.max,
                l.n
            ))
        })
        .collect();
    if !loads.is_empty() {
        let _ = writeln!(s, "\ntable load time (median):");
        for l in loads {
            let _ = writeln!(s, "{l}");
        }
    }
    for k in rows_in_order(results) {
        let runs = runs_of(results, &k);
        let m = median_run(&runs);
        if m.node_clocks.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "\n{}{} clocks/packet per node (median run, show runtime):",
            k.0,
            k.1.as_ref()
                .map(|t| format!(" (table {t})"))
                .unwrap_or_default()
        );
        for (n, c) in &m.node_clocks {
            let _ = writeln!(s, "  {n:<24}{c:>10.1}");
        }
    }
    for k in rows_in_order(results) {
        let m = median_run(&runs_of(results, &k));
        if let Some(p) = &m.profile {
            s.push_str(&super::profile::report_lines(&k.0, p));
        }
    }
    if results.iter().any(|r| r.rx_ring_drops > 0) {
        s.push_str(
            "\nsome losses happened in the tester's receive ring, not in the DUT (see the runs)\n",
        );
    }
    if results.iter().any(|r| r.queue_drops.to_dut > 0) {
        s.push_str(
            "\nsome frames were dropped by the kernel at the DUT's full port queues (queue_drops)\n",
        );
    }
    s.push_str(&footnotes(o, results, cal));
    s
}

/// What the latency, Gen max and Limit columns mean, for the values the table shows.
fn footnotes(o: &RunOptions, results: &[RunResult], cal: &Result<Calibration, String>) -> String {
    let mut s = String::from("\n");
    let medians: Vec<&RunResult> = rows_in_order(results)
        .iter()
        .map(|k| median_run(&runs_of(results, k)))
        .collect();
    let _ = writeln!(
        s,
        "p50, p99: latency of the median run, from a frame's build to its receipt{}",
        if o.engine.counts_only() {
            "; '-': the XDP and testpmd engines count arrivals on the receiving port's counter \
             and read no frame, so they measure no latency"
        } else if medians.iter().any(|r| r.latency("median").is_none()) {
            "; '-': no frame arrived"
        } else {
            ""
        }
    );
    match cal {
        Ok(c) => {
            let _ = writeln!(
                s,
                "Gen max: what the generator sends alone ({}, {:.0} s into {}); % is the \
                 offered rate's share of it (in a run the generator's receiver shares its CPU){}",
                c.io,
                c.duration_s,
                c.sink,
                if c.turned_back > PUSHBACK_SHARE {
                    format!(
                        "; a lower bound: that sink pushed back ({:.1} frames turned back per \
                         frame sent), so it is the path's limit with no DUT",
                        c.turned_back
                    )
                } else {
                    String::new()
                }
            );
        }
        Err(why) => {
            let _ = writeln!(s, "Gen max: the generator's own maximum is {why}");
        }
    }
    let limits: Vec<Limit> = medians.iter().map(|r| limit(r, o.rate.is_some())).collect();
    let pct = |x: f64| x * 100.0;
    for (l, what) in [
        (
            Limit::Dut,
            format!(
                "DUT: it lost over {}% of the frames (beyond the tester's ring and what the \
                 tester's port had no room for), or pushed back \
                 (a full queue turned back over {}% as many frames as were sent)",
                pct(LOSS_SHARE),
                pct(PUSHBACK_SHARE),
            ),
        ),
        (
            Limit::Generator,
            "generator: the DUT lost nothing and never pushed back, so it took all the \
             generator could offer (or the tester's receiving side lost frames: its ring, or \
             a memif receiver that posted no buffers): the \
             DUT's limit is higher than its row says"
                .to_string(),
        ),
        (
            Limit::Neither,
            "neither: the asked rate was carried without loss".to_string(),
        ),
    ] {
        if limits.contains(&l) {
            let _ = writeln!(s, "Limit {what}");
        }
    }
    s
}

/// JSON: one object per DUT (an object for one DUT, an array for several), each with the
/// median run's figures and every run.
pub fn json(o: &RunOptions, results: &[RunResult], cal: &Result<Calibration, String>) -> Value {
    let gen_max = cal.as_ref().ok().map(|c| c.tx_pps);
    let calibration = match cal {
        Ok(c) => json!(c),
        Err(why) => json!({ "not_measured": why }),
    };
    let per_dut: Vec<Value> = rows_in_order(results)
        .into_iter()
        .map(|k| {
            let runs = runs_of(results, &k);
            let (dut, table) = k;
            let m = median_run(&runs);
            let sum = Summary::of(&runs.iter().map(|r| r.rx_pps).collect::<Vec<_>>());
            json!({
                "dut": dut, "type": type_label(o), "frame_size": m.frame_size, "flows": m.flows,
                "io": super::calibrate::io_label(o),
                "tx_packets": m.tx_packets, "rx_packets": m.rx_packets, "lost": m.lost,
                "rx_ring_drops": m.rx_ring_drops, "queue_drops": m.queue_drops,
                "rx_pps": m.rx_pps, "l2_bps": m.l2_bps, "rx_pps_summary": sum,
                "latency_p50_us": latency_us(m, "median"), "latency_p99_us": latency_us(m, "p99"),
                "offered_pps": m.tx_pps, "generator_max_pps": gen_max,
                "limit": limit(m, o.rate.is_some()).name(),
                "calibration": calibration,
                "node_clocks": m.node_clocks, "dut_interfaces": m.dut_interfaces,
                "table": table, "table_load_s": load_median(&runs).map(|l| l.median),
                "macs": m.macs, "l2fib_entries": m.l2fib_entries,
                "family": o.family.name(), "l4": o.l4.name(), "reply": o.reply,
                "reverse": m.reverse, "sessions": m.sessions,
                "acl_rules": o.acl.map(|a| a.rules),
                "stateful": o.acl.map(|a| a.stateful),
                "vrfs": o.vrfs,
                "runs": runs,
            })
        })
        .collect();
    if per_dut.len() == 1 {
        per_dut.into_iter().next().unwrap_or(Value::Null)
    } else {
        Value::Array(per_dut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(dut: &str, rx_pps: f64) -> RunResult {
        RunResult::from_gen(
            dut,
            &json!({"frame_size": 64, "flows": 1, "tx_packets": 1000, "rx_packets": 990,
                    "lost": 10, "tx_pps": 2e5, "rx_pps": rx_pps, "l2_bps": rx_pps * 512.0,
                    "rate_reached": true, "duration_s": 5.0}),
            Some(
                json!({"threads": [{"nodes": [{"name": "ethernet-input", "vectors": 5, "clocks_per_vector": 40.5},
                                                {"name": "idle", "vectors": 0, "clocks_per_vector": 0.0}]}]}),
            ),
            None,
        )
    }

    fn opts() -> RunOptions {
        super::super::tests::parse_run("").unwrap()
    }

    fn no_cal() -> Result<Calibration, String> {
        Err("not measured (--no-calibrate)".into())
    }

    fn cal(tx_pps: f64) -> Result<Calibration, String> {
        Ok(Calibration {
            io: "af_packet".into(),
            frame_size: "64".into(),
            flows: "single".into(),
            direction: "uni",
            tx_pps,
            duration_s: 1.0,
            turned_back: 0.0,
            sink: "nowhere",
        })
    }

    /// A run that sent 100 000 frames at `tx_pps`, of which the DUT lost `lost` and the
    /// tester's ring `ring`, with `turned` frames turned back by a full queue.
    fn run(dut: &str, tx_pps: f64, lost: u64, ring: u64, turned: u64, reached: bool) -> RunResult {
        let rx = 100_000 - lost - ring;
        RunResult::from_gen(
            dut,
            &json!({"frame_size": 64, "flows": 1, "tx_packets": 100_000, "rx_packets": rx,
                    "lost": lost + ring, "rx_ring_drops": ring, "tx_queue_full": turned,
                    "tx_pps": tx_pps, "rx_pps": tx_pps * rx as f64 / 1e5,
                    "l2_bps": tx_pps * 512.0, "rate_reached": reached, "duration_s": 1.0,
                    "latency_ns": {"min": 900, "median": 12_345, "p99": 2_500_000,
                                   "max": 3_000_000, "samples": rx}}),
            None,
            None,
        )
    }

    #[test]
    fn node_clocks_leave_out_nodes_that_saw_a_handful() {
        let r = RunResult::from_gen(
            "sluice-router",
            &json!({"tx_packets": 1000, "rx_packets": 1000}),
            Some(json!({"threads": [{"nodes": [
                {"name": "ip4-input", "vectors": 100_000, "clocks_per_vector": 60.0},
                {"name": "ip4-lookup", "vectors": 1_000, "clocks_per_vector": 70.0},
                {"name": "ip6-input", "vectors": 3, "clocks_per_vector": 3000.0},
                {"name": "idle", "vectors": 0, "clocks_per_vector": 0.0}]}]})),
            None,
        );
        let names: Vec<&str> = r.node_clocks.iter().map(|n| n.0.as_str()).collect();
        assert_eq!(names, ["ip4-input", "ip4-lookup"]);
    }

    #[test]
    fn limit_tells_generator_from_dut() {
        // Lossless, never pushed back: the DUT took all the generator offered.
        let free = run("a", 6e5, 0, 0, 0, true);
        assert_eq!(limit(&free, false), Limit::Generator);
        // A few frames in flight at the end are not loss.
        assert_eq!(
            limit(&run("a", 6e5, 50, 0, 0, true), false),
            Limit::Generator
        );
        // Lossy: the DUT, with or without an asked rate.
        let lossy = run("b", 6e5, 5_000, 0, 0, true);
        assert_eq!(limit(&lossy, false), Limit::Dut);
        assert_eq!(limit(&lossy, true), Limit::Dut);
        // Lossless but a full queue turned frames back: the DUT held the generator back.
        let pushed = run("c", 3e5, 0, 0, 400_000, false);
        assert_eq!(limit(&pushed, false), Limit::Dut);
        assert_eq!(limit(&pushed, true), Limit::Dut);
        // Losses in the tester's own ring only: the generator's side.
        assert_eq!(
            limit(&run("d", 6e5, 0, 5_000, 0, true), false),
            Limit::Generator
        );
        // Lost at the DUT's egress because the tester's memif receiver posted no buffers:
        // the tester's side, like its own ring.
        let mut behind = run("f", 6e5, 5_000, 0, 0, true);
        behind.dut_interfaces = Some(json!([{"name": "d0", "tx_peer_full": 0},
                                            {"name": "d1", "tx_peer_full": 4_990}]));
        assert_eq!(limit(&behind, false), Limit::Generator);
        // ...unless the DUT lost more than that.
        behind.dut_interfaces = Some(json!([{"name": "d1", "tx_peer_full": 2_000}]));
        assert_eq!(limit(&behind, false), Limit::Dut);
        // Dropped by the kernel at the tester's full veth queue: the tester's side; at the
        // DUT's: the DUT.
        let mut queued = run("g", 6e5, 5_000, 0, 0, true);
        queued.queue_drops.to_tester = 4_990;
        assert_eq!(limit(&queued, false), Limit::Generator);
        queued.queue_drops = crate::lab::netns::QueueDrops {
            to_dut: 4_990,
            to_tester: 0,
        };
        assert_eq!(limit(&queued, false), Limit::Dut);
        // An asked rate carried without loss: neither; missed without push-back: generator.
        assert_eq!(limit(&free, true), Limit::Neither);
        assert_eq!(
            limit(&run("e", 6e5, 0, 0, 0, false), true),
            Limit::Generator
        );
    }

    #[test]
    fn table_shows_latency_headroom_and_limit() {
        let rs = vec![
            run("sluice", 6e5, 0, 0, 0, true),
            run("linux-bridge", 3e5, 0, 0, 400_000, true),
            run("testpmd", 6e5, 20_000, 0, 0, true),
        ];
        let t = table(&opts(), &rs, &cal(7.5e5));
        let head = t.lines().next().unwrap();
        for col in ["p50", "p99", "Offered", "Gen max", "%", "Limit"] {
            assert!(head.contains(col), "no {col}: {t}");
        }
        let row = |dut: &str| row_of(&t, dut);
        // p50, p99, offered, gen max, %, limit follow the L2 rate.
        let at = |r: &[String], k: usize| {
            r[r.iter().position(|c| c.ends_with("bps")).unwrap() + k].clone()
        };
        let sluice = row("sluice");
        assert_eq!(
            (1..=6).map(|k| at(&sluice, k)).collect::<Vec<_>>(),
            [
                "12.3µs",
                "2.50ms",
                "600.00Kpps",
                "750.00Kpps",
                "80",
                "generator"
            ],
            "{t}"
        );
        assert_eq!(at(&row("linux-bridge"), 6), "DUT", "{t}");
        assert_eq!(at(&row("testpmd"), 6), "DUT", "{t}");
        assert!(
            t.contains("Limit generator:") && t.contains("Limit DUT:"),
            "{t}"
        );
        assert!(!t.contains("Limit neither"), "{t}");
        assert!(
            t.contains("Gen max: what the generator sends alone (af_packet"),
            "{t}"
        );
        // Without a calibration, and with a run that measured no latency.
        let mut blind = run("sluice", 6e5, 0, 0, 0, true);
        blind.latency_ns = json!({"min": 0, "median": 0, "p99": 0, "max": 0, "samples": 0});
        let t = table(&opts(), &[blind], &no_cal());
        let r = row_of(&t, "sluice");
        let i = r.iter().position(|c| c.ends_with("bps")).unwrap();
        assert_eq!(
            &r[i + 1..=i + 6],
            ["-", "-", "600.00Kpps", "-", "-", "generator"],
            "{t}"
        );
        assert!(
            t.contains("'-': no frame arrived") && t.contains("--no-calibrate"),
            "{t}"
        );
        let xdp = super::super::tests::parse_run("--engine xdp").unwrap();
        let t = table(&xdp, &[run("sluice", 6e5, 0, 0, 0, true)], &no_cal());
        assert!(
            t.contains("the XDP and testpmd engines") && t.contains("no latency"),
            "{t}"
        );
    }

    fn row_of(t: &str, dut: &str) -> Vec<String> {
        t.lines()
            .find(|l| l.starts_with(&format!("{dut} ")))
            .unwrap_or_else(|| panic!("{t}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    #[test]
    fn json_has_latency_headroom_and_calibration() {
        let v = json(&opts(), &[run("sluice", 6e5, 0, 0, 0, true)], &cal(7.5e5));
        assert_eq!(v["latency_p50_us"], 12.345, "{v}");
        assert_eq!(v["latency_p99_us"], 2500.0, "{v}");
        assert_eq!(v["offered_pps"], 6e5, "{v}");
        assert_eq!(v["generator_max_pps"], 7.5e5, "{v}");
        assert_eq!(v["limit"], "generator", "{v}");
        assert_eq!(v["calibration"]["tx_pps"], 7.5e5, "{v}");
        assert_eq!(v["calibration"]["io"], "af_packet", "{v}");
        let mut lossy = run("sluice", 6e5, 9_000, 0, 0, true);
        lossy.latency_ns = Value::Null;
        let v = json(&opts(), &[lossy], &no_cal());
        assert!(
            v["latency_p50_us"].is_null() && v["generator_max_pps"].is_null(),
            "{v}"
        );
        assert_eq!(v["limit"], "DUT", "{v}");
        assert_eq!(
            v["calibration"]["not_measured"], "not measured (--no-calibrate)",
            "{v}"
        );
    }

    #[test]
    fn latency_reads_at_any_scale() {
        assert_eq!(fmt_latency(None), "-");
        assert_eq!(fmt_latency(Some(850)), "850ns");
        assert_eq!(fmt_latency(Some(12_345)), "12.3µs");
        assert_eq!(fmt_latency(Some(4_560_000)), "4.56ms");
    }

    #[test]
    fn table_shows_medians_per_dut() {
        let rs = vec![
            result("sluice", 1.0e6),
            result("linux-bridge", 0.5e6),
            result("sluice", 1.2e6),
            result("sluice", 0.9e6),
        ];
        let t = table(&opts(), &rs, &no_cal());
        let line = t.lines().find(|l| l.starts_with("sluice")).unwrap();
        assert!(line.contains("1.00Mpps") && line.contains("(3)"), "{t}");
        assert!(line.contains("size=64") && line.contains("Unidirectional"));
        assert!(t.contains("ethernet-input") && !t.contains("idle"), "{t}");
    }

    #[test]
    fn router_rows_per_table_with_load_times() {
        let mut rs = Vec::new();
        for (table, rx, load) in [
            ("small", 1.0e6, None),
            ("1M+200k", 0.8e6, Some(4.0)),
            ("1M+200k", 0.7e6, Some(6.0)),
        ] {
            let mut r = result("sluice-router", rx);
            r.table = Some(table.into());
            r.table_load_s = load;
            rs.push(r);
        }
        rs.push(result("sluice", 1.1e6));
        let t = table(&opts(), &rs, &no_cal());
        assert!(t.lines().next().unwrap().contains("Table"), "{t}");
        let row = |tab: &str| {
            t.lines()
                .find(|l| l.starts_with("sluice-router") && l.contains(tab))
                .unwrap_or_else(|| panic!("{t}"))
                .to_string()
        };
        assert!(row("small").contains("1.00Mpps"), "{t}");
        assert!(row("1M+200k").contains("(2)"), "{t}");
        let xc = t.lines().find(|l| l.starts_with("sluice ")).unwrap();
        assert!(xc.contains(" - "), "{t}");
        assert!(t.contains("table load time") && t.contains("5.00 s"), "{t}");
        let v = json(&opts(), &rs, &no_cal());
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1]["table"], "1M+200k");
        assert_eq!(rows[1]["table_load_s"], 5.0);
        assert!(rows[0]["table_load_s"].is_null());
    }

    #[test]
    fn json_has_the_promised_keys() {
        let v = json(&opts(), &[result("sluice", 1e6)], &no_cal());
        for k in [
            "dut",
            "frame_size",
            "flows",
            "tx_packets",
            "rx_packets",
            "rx_pps",
            "runs",
        ] {
            assert!(v.get(k).is_some(), "missing {k}: {v}");
        }
        let v = json(
            &opts(),
            &[result("sluice", 1e6), result("linux-bridge", 1e6)],
            &no_cal(),
        );
        assert_eq!(v.as_array().unwrap().len(), 2);
    }
}
