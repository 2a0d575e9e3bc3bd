//! Lab results: one record per run, and the table (in the form of the seed's results tables)
//! and JSON made from them.

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
    pub duration_s: f64,
    pub latency_ns: Value,
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
        let node_clocks = runtime
            .as_ref()
            .and_then(|r| r["threads"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .flat_map(|t| t["nodes"].as_array().cloned().unwrap_or_default())
            .filter(|n| n["vectors"].as_u64().unwrap_or(0) > 0)
            .map(|n| {
                (
                    n["name"].as_str().unwrap_or("?").to_string(),
                    n["clocks_per_vector"].as_f64().unwrap_or(0.0),
                )
            })
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
            duration_s: f("duration_s"),
            latency_ns: gen["latency_ns"].clone(),
            node_clocks,
            dut_interfaces: interfaces,
            table: None,
            table_load_s: None,
        }
    }
}

/// The seed's "Type" column: `size=64`, or `flows=N,size=64` for many flows.
pub fn type_label(o: &RunOptions) -> String {
    if o.flows == "single" || o.flows == "1" {
        format!("size={}", o.size)
    } else if o.flows == "var2" {
        format!("vm=var2,size={}", o.size)
    } else {
        format!("flows={},size={}", o.flows, o.size)
    }
}

/// One line per run, for progress.
pub fn run_line(r: &RunResult) -> String {
    format!(
        "sent {} received {} lost {}: {} ({}){}",
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
fn median_run<'a>(runs: &[&'a RunResult]) -> &'a RunResult {
    let mut v = runs.to_vec();
    v.sort_by(|a, b| a.rx_pps.total_cmp(&b.rx_pps));
    v[(v.len() - 1) / 2]
}

/// The results table: one row per DUT with the median over its runs.
pub fn table(o: &RunOptions, results: &[RunResult]) -> String {
    let mut s = String::new();
    // The Table column only when routers ran.
    let tables = results.iter().any(|r| r.table.is_some());
    let table_col = |t: &str| {
        if tables {
            format!("{t:<10}")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        s,
        "{:<14}{}{:<22}{:<16}{:>12}{:>12}{:>10}{:>13}{:>13}  min-max (runs)",
        "DUT",
        table_col("Table"),
        "Type",
        "Uni/BiDir",
        "Sent",
        "Received",
        "Lost",
        "Packets/Sec",
        "L2 Bits/Sec",
    );
    for k in rows_in_order(results) {
        let (dut, table) = &k;
        let runs = runs_of(results, &k);
        let m = median_run(&runs);
        let sum = Summary::of(&runs.iter().map(|r| r.rx_pps).collect::<Vec<_>>());
        let spread = sum
            .map(|x| format!("{}-{} ({})", fmt_pps(x.min), fmt_pps(x.max), x.n))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{:<14}{}{:<22}{:<16}{:>12}{:>12}{:>10}{:>13}{:>13}  {}",
            dut,
            table_col(table.as_deref().unwrap_or("-")),
            type_label(o),
            if o.bi {
                "Bidirectional"
            } else {
                "Unidirectional"
            },
            m.tx_packets,
            m.rx_packets,
            m.lost,
            fmt_pps(m.rx_pps),
            fmt_bps(m.l2_bps),
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
    if o.rate.is_none() && results.iter().all(|r| r.lost == 0) {
        s.push_str(
            "\nno run lost a frame: these rates are what the generator could send, and each DUT \
             forwards at least that much; its own limit was not reached\n",
        );
    }
    if results.iter().any(|r| r.rx_ring_drops > 0) {
        s.push_str(
            "\nsome losses happened in the tester's receive ring, not in the DUT (see the runs)\n",
        );
    }
    if results.iter().any(|r| !r.rate_reached) {
        s.push_str(
            "\nsome runs did not reach the asked rate: they measure the generator, not the DUT\n",
        );
    }
    s
}

/// JSON: one object per DUT (an object for one DUT, an array for several), each with the
/// median run's figures and every run.
pub fn json(o: &RunOptions, results: &[RunResult]) -> Value {
    let per_dut: Vec<Value> = rows_in_order(results)
        .into_iter()
        .map(|k| {
            let runs = runs_of(results, &k);
            let (dut, table) = k;
            let m = median_run(&runs);
            let sum = Summary::of(&runs.iter().map(|r| r.rx_pps).collect::<Vec<_>>());
            json!({
                "dut": dut, "type": type_label(o), "frame_size": m.frame_size, "flows": m.flows,
                "io": if o.xdp { "xdp-live-frames" } else { o.io.name() },
                "tx_packets": m.tx_packets, "rx_packets": m.rx_packets, "lost": m.lost,
                "rx_ring_drops": m.rx_ring_drops,
                "rx_pps": m.rx_pps, "l2_bps": m.l2_bps, "rx_pps_summary": sum,
                "node_clocks": m.node_clocks, "dut_interfaces": m.dut_interfaces,
                "table": table, "table_load_s": load_median(&runs).map(|l| l.median),
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

    #[test]
    fn table_shows_medians_per_dut() {
        let rs = vec![
            result("sluice", 1.0e6),
            result("linux-bridge", 0.5e6),
            result("sluice", 1.2e6),
            result("sluice", 0.9e6),
        ];
        let t = table(&opts(), &rs);
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
        let t = table(&opts(), &rs);
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
        let v = json(&opts(), &rs);
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1]["table"], "1M+200k");
        assert_eq!(rows[1]["table_load_s"], 5.0);
        assert!(rows[0]["table_load_s"].is_null());
    }

    #[test]
    fn json_has_the_promised_keys() {
        let v = json(&opts(), &[result("sluice", 1e6)]);
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
        );
        assert_eq!(v.as_array().unwrap().len(), 2);
    }
}
