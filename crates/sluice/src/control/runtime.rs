//! The runtime statistics commands: `show runtime`, `show errors`, `show buffers`,
//! `show threads`, `clear runtime`, `clear errors`, and the baselines the clear commands keep.

use super::cli::{Command, Effect, Output};
use super::exec::Control;
use crate::dataplane::Dataplane;
use crate::drivers::af_xdp::fastpath;
use crate::graph::NodeKind;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Instant;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["show", "runtime"],
        effect: Effect::Reads,
        syntax: "",
        help: "per node calls, vectors, clocks per packet, per worker",
        example: "show runtime",
        args: &[],
        run: |c, _| Ok(show_runtime(c)),
    },
    Command {
        words: &["show", "errors"],
        effect: Effect::Reads,
        syntax: "",
        help: "drop and error counters by node and reason",
        example: "show errors",
        args: &[],
        run: |c, _| Ok(show_errors(c)),
    },
    Command {
        words: &["show", "buffers"],
        effect: Effect::Reads,
        syntax: "",
        help: "buffer pool: total, free, in use by owner",
        example: "show buffers",
        args: &[],
        run: |c, _| Ok(show_buffers(c)),
    },
    Command {
        words: &["show", "threads"],
        effect: Effect::Reads,
        syntax: "",
        help: "main and worker threads with their CPUs and heartbeats (STALLED: no pass of the loop for [watchdog] stall-timeout)",
        example: "show threads",
        args: &[],
        run: |c, _| Ok(show_threads(c)),
    },
    Command {
        words: &["clear", "runtime"],
        effect: Effect::Changes,
        syntax: "",
        help: "restart the runtime statistics",
        example: "clear runtime",
        args: &[],
        run: |c, _| {
            c.runtime = Baseline {
                at: Instant::now(),
                nodes: node_samples(&c.dp),
                loops: c.dp.workers.iter().map(|w| w.graph.loops.get()).collect(),
                xdp: fastpath::reason_totals()[0],
            };
            Output::done()
        },
    },
    Command {
        words: &["clear", "errors"],
        effect: Effect::Changes,
        syntax: "",
        help: "restart the error counters",
        example: "clear errors",
        args: &[],
        run: |c, _| {
            c.errors = error_values(&c.dp);
            c.xdp_errors = fastpath::reason_totals();
            Output::done()
        },
    },
];

/// One node's statistics at a moment.
#[derive(Clone, Copy, Default)]
struct NodeSample {
    calls: u64,
    vectors: u64,
    clocks: u64,
}

/// What `clear runtime` remembered, so later reads report the difference.
pub struct Baseline {
    at: Instant,
    nodes: Vec<Vec<NodeSample>>,
    loops: Vec<u64>,
    /// Frames the XDP fast path forwarded.
    xdp: u64,
}

impl Baseline {
    /// Counting from the dataplane's start.
    pub fn zero(dp: &Dataplane) -> Baseline {
        Baseline {
            at: dp.started,
            nodes: dp
                .workers
                .iter()
                .map(|w| vec![NodeSample::default(); w.graph.names.len()])
                .collect(),
            loops: vec![0; dp.workers.len()],
            xdp: 0,
        }
    }
}

fn node_samples(dp: &Dataplane) -> Vec<Vec<NodeSample>> {
    dp.workers
        .iter()
        .map(|w| {
            w.graph
                .stats
                .iter()
                .map(|s| NodeSample {
                    calls: s.calls.get(),
                    vectors: s.vectors.get(),
                    clocks: s.clocks.get(),
                })
                .collect()
        })
        .collect()
}

fn show_runtime(c: &Control) -> Output {
    let elapsed = c.runtime.at.elapsed().as_secs_f64().max(1e-9);
    let now = node_samples(&c.dp);
    let mut t = String::new();
    let main_cpu =
        c.dp.main_cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "any".into());
    let _ = writeln!(t, "Thread 0 sluice_main (lcore {main_cpu})");
    let _ = writeln!(
        t,
        "Time {elapsed:.1}, control plane only (no graph nodes); clocks are TSC ticks at {:.3} GHz",
        c.dp.tsc_hz / 1e9
    );
    let mut threads = Vec::new();
    for (w, worker) in c.dp.workers.iter().enumerate() {
        let g = &worker.graph;
        let base = &c.runtime.nodes[w];
        let delta: Vec<NodeSample> = now[w]
            .iter()
            .zip(base)
            .map(|(n, b)| NodeSample {
                calls: n.calls - b.calls,
                vectors: n.vectors - b.vectors,
                clocks: n.clocks - b.clocks,
            })
            .collect();
        let loops = g.loops.get() - c.runtime.loops[w];
        let sum_kind = |k: NodeKind| -> u64 {
            delta
                .iter()
                .zip(&g.kinds)
                .filter(|(_, kind)| **kind == k)
                .map(|(d, _)| d.vectors)
                .sum()
        };
        let (vin, vout, vdrop) = (
            sum_kind(NodeKind::Input),
            sum_kind(NodeKind::Output),
            sum_kind(NodeKind::Drop),
        );
        let (icalls, ivectors) = delta
            .iter()
            .zip(&g.kinds)
            .filter(|(_, k)| **k == NodeKind::Internal)
            .fold((0u64, 0u64), |(c, v), (d, _)| (c + d.calls, v + d.vectors));
        let avg = if icalls > 0 {
            ivectors as f64 / icalls as f64
        } else {
            0.0
        };
        let cpu = worker
            .cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "any".into());
        let _ = writeln!(t, "---------------");
        let _ = writeln!(t, "Thread {} {} (lcore {cpu})", w + 1, worker.name);
        let _ = writeln!(
            t,
            "Time {elapsed:.1}, average vectors/node {avg:.2}, loops/sec {:.2}",
            loops as f64 / elapsed
        );
        let _ = writeln!(
            t,
            "  vector rates in {}, out {}, drop {}",
            sci(vin as f64 / elapsed),
            sci(vout as f64 / elapsed),
            sci(vdrop as f64 / elapsed),
        );
        let _ = writeln!(
            t,
            "{:<32}{:>10}{:>15}{:>15}{:>12}{:>14}",
            "Name", "State", "Calls", "Vectors", "Clocks", "Vectors/Call"
        );
        let mut order: Vec<usize> = (0..delta.len()).collect();
        order.sort_by(|&a, &b| g.names[a].cmp(&g.names[b]));
        let mut nodes = Vec::new();
        for i in order {
            let d = delta[i];
            let state = if g.kinds[i] == NodeKind::Input {
                "polling"
            } else {
                "active"
            };
            let clocks = if d.vectors > 0 {
                d.clocks as f64 / d.vectors as f64
            } else if d.calls > 0 {
                d.clocks as f64 / d.calls as f64
            } else {
                0.0
            };
            let vpc = if d.calls > 0 {
                d.vectors as f64 / d.calls as f64
            } else {
                0.0
            };
            nodes.push(json!({
                "name": g.names[i], "kind": g.kinds[i], "state": state,
                "calls": d.calls, "vectors": d.vectors,
                "clocks": d.clocks, "clocks_per_vector": clocks, "vectors_per_call": vpc,
            }));
            if d.calls == 0 {
                continue;
            }
            let _ = writeln!(
                t,
                "{:<32}{:>10}{:>15}{:>15}{:>12}{:>14.2}",
                truncate(&g.names[i], 31),
                state,
                d.calls,
                d.vectors,
                sci2(clocks),
                vpc
            );
        }
        threads.push(json!({
            "thread": w + 1, "name": worker.name, "cpu": worker.cpu,
            "time": elapsed, "loops": loops,
            "vector_rate_in": vin as f64 / elapsed, "vector_rate_out": vout as f64 / elapsed,
            "vector_rate_drop": vdrop as f64 / elapsed,
            "nodes": nodes,
        }));
    }
    let mut v = json!({"tsc_hz": c.dp.tsc_hz, "threads": threads});
    if let Some(fp) = fastpath::active() {
        // Forwarded by sluice's XDP program on the CPUs that receive: packets, no clocks
        // (the kernel does not time a program per packet unless asked to).
        let packets = fp.maps.reason_counts()[0].saturating_sub(c.runtime.xdp);
        let _ = writeln!(t, "---------------");
        let _ = writeln!(
            t,
            "Kernel: sluice's XDP program, on the CPUs that receive (packets only, no clocks)"
        );
        let _ = writeln!(
            t,
            "{:<32}{:>10}{:>15}{:>15}{:>12}{:>14}",
            "xdp-fastpath", "kernel", "-", packets, "-", "-"
        );
        v["xdp_fastpath"] = json!({"packets": packets, "rate": packets as f64 / elapsed});
    }
    Output::Shown(t, v)
}

/// Every error counter now, per worker, node and reason.
pub fn error_values(dp: &Dataplane) -> Vec<Vec<Vec<u64>>> {
    dp.workers
        .iter()
        .map(|w| {
            w.graph
                .errors
                .iter()
                .map(|e| e.iter().map(|c| c.get()).collect())
                .collect()
        })
        .collect()
}

fn show_errors(c: &Control) -> Output {
    let now = error_values(&c.dp);
    let mut t = format!("{:>12}  {:<28}{}\n", "Count", "Node", "Reason");
    let mut arr = Vec::new();
    for (w, worker) in c.dp.workers.iter().enumerate() {
        let g = &worker.graph;
        for (n, reasons) in g.error_names.iter().enumerate() {
            for (e, reason) in reasons.iter().enumerate() {
                let count = now[w][n][e] - c.errors[w][n][e];
                if count == 0 {
                    continue;
                }
                let _ = writeln!(t, "{count:>12}  {:<28}{reason}", g.names[n]);
                arr.push(json!({
                    "thread": w + 1, "node": g.names[n], "reason": reason, "count": count
                }));
            }
        }
    }
    // The XDP fast path's frames that went to the graph, by reason (not drops: the graph
    // then forwarded or dropped them, counted above).
    let xdp = fastpath::reason_totals();
    for (((_, reason), now), base) in fastpath::program::REASONS
        .iter()
        .zip(&xdp)
        .zip(&c.xdp_errors)
        .skip(1)
    {
        let count = now.saturating_sub(*base);
        if count == 0 {
            continue;
        }
        let _ = writeln!(t, "{count:>12}  {:<28}{reason}", "xdp-fastpath");
        arr.push(json!({"thread": 0, "node": "xdp-fastpath", "reason": reason, "count": count}));
    }
    // Then what it lost at an egress (after the reasons): drops, unlike the rows above.
    let n = fastpath::program::REASONS.len();
    let lost = xdp.get(n).copied().unwrap_or(0);
    let lost = lost.saturating_sub(c.xdp_errors.get(n).copied().unwrap_or(0));
    if lost > 0 {
        let reason = fastpath::LOST;
        let _ = writeln!(t, "{lost:>12}  {:<28}{reason}", "xdp-fastpath");
        arr.push(json!({"thread": 0, "node": "xdp-fastpath", "reason": reason, "count": lost}));
    }
    Output::Shown(t, Value::Array(arr))
}

fn show_buffers(c: &Control) -> Output {
    let r = c.dp.pool.report();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "pool: {} buffers of {} bytes ({} data), {:.1} MiB, {}",
        r.total,
        r.buffer_size,
        r.data_size,
        r.region_bytes as f64 / (1 << 20) as f64,
        if r.huge_pages {
            "huge pages"
        } else {
            "normal pages"
        }
    );
    let _ = writeln!(t, "{:<28}{:>12}", "Owner", "Buffers");
    for (k, v) in [
        ("free in pool", r.free_in_pool as i64),
        ("free in worker caches", r.free_in_caches as i64),
        ("in use: frames in flight", r.in_frames as i64),
        ("in use: driver rings", r.in_drivers as i64),
        ("in use: unaccounted", r.unaccounted),
        ("in use (total)", r.in_use as i64),
    ] {
        let _ = writeln!(t, "{k:<28}{v:>12}");
    }
    let _ = writeln!(
        t,
        "shared free list: taken {} times (a batch each), {} of them waiting for another thread",
        r.free_list_locks, r.free_list_contended
    );
    Output::Shown(t, serde_json::to_value(&r).unwrap_or(Value::Null))
}

fn show_threads(c: &Control) -> Output {
    let mut t = format!(
        "{:<4}{:<16}{:<10}{:>8}{:>8}{:>6}  {}\n",
        "ID", "Name", "Type", "LWP", "lcore", "nice", "Heartbeat"
    );
    let nice = |tid: i32| crate::sys::cpu::thread_nice(tid);
    let show_nice = |n: Option<i32>| n.map_or("-".to_string(), |n| n.to_string());
    let main_cpu =
        c.dp.main_cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "any".into());
    let main_tid = c.main_tid;
    let _ = writeln!(
        t,
        "{:<4}{:<16}{:<10}{:>8}{:>8}{:>6}  -",
        0,
        "sluice_main",
        "main",
        main_tid,
        main_cpu,
        show_nice(nice(main_tid))
    );
    let mut arr = vec![
        json!({"id": 0, "name": "sluice_main", "type": "main", "lwp": main_tid, "cpu": c.dp.main_cpu, "nice": nice(main_tid)}),
    ];
    for w in &c.dp.workers {
        let cpu = w.cpu.map(|c| c.to_string()).unwrap_or_else(|| "any".into());
        let tid = w.tid.load(std::sync::atomic::Ordering::Relaxed);
        let health = c.worker_health(w.index);
        let _ = writeln!(
            t,
            "{:<4}{:<16}{:<10}{:>8}{:>8}{:>6}  {}",
            w.index + 1,
            w.name,
            "workers",
            tid,
            cpu,
            show_nice(nice(tid)),
            super::health::heartbeat_text(&health)
        );
        arr.push(json!({
            "id": w.index + 1, "name": w.name, "type": "workers", "lwp": tid, "cpu": w.cpu,
            "nice": nice(tid), "stalled": health.stalled, "since_pass_s": health.since_pass,
            "stalls": health.stalls,
        }));
    }
    Output::Shown(t, Value::Array(arr))
}

/// VPP-style scientific notation: 5.6294e6.
fn sci(x: f64) -> String {
    format!("{x:.4e}")
}

/// Two decimals, as in the Clocks column: 1.45e2.
fn sci2(x: f64) -> String {
    format!("{x:.2e}")
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
