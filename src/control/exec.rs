//! Carrying out CLI commands against the running dataplane, and formatting what they show.

use super::cli::{self, Command, Request};
use crate::dataplane::Dataplane;
use crate::graph::NodeKind;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Instant;

/// One node's statistics at a moment.
#[derive(Clone, Copy, Default)]
struct NodeSample {
    calls: u64,
    vectors: u64,
    clocks: u64,
}

/// What `clear runtime` / `clear errors` remembered, so later reads report the difference.
struct Baseline {
    at: Instant,
    nodes: Vec<Vec<NodeSample>>,
    loops: Vec<u64>,
}

/// The control plane's state: the dataplane and the baselines of the clear commands.
pub struct Control {
    pub dp: Dataplane,
    runtime: Baseline,
    errors: Vec<Vec<Vec<u64>>>,
}

/// A reply: text for people, or JSON.
pub enum Reply {
    Text(String),
    Json(Value),
}

impl Control {
    pub fn new(dp: Dataplane) -> Control {
        let mut c = Control {
            runtime: Baseline {
                at: dp.started,
                nodes: Vec::new(),
                loops: Vec::new(),
            },
            errors: Vec::new(),
            dp,
        };
        c.runtime.nodes =
            c.dp.workers
                .iter()
                .map(|w| vec![NodeSample::default(); w.graph.names.len()])
                .collect();
        c.runtime.loops = vec![0; c.dp.workers.len()];
        c.errors = c.error_values();
        for v in c.errors.iter_mut().flatten().flatten() {
            *v = 0;
        }
        c
    }

    /// Parse and carry out one command line.
    pub fn handle_line(&mut self, line: &str) -> Result<Reply, String> {
        let req = cli::parse(line)?;
        self.execute(&req)
    }

    pub fn execute(&mut self, req: &Request) -> Result<Reply, String> {
        let json = req.json;
        let reply = |text: String, value: Value| {
            if json {
                Reply::Json(value)
            } else {
                Reply::Text(text)
            }
        };
        Ok(match &req.command {
            Command::Help => Reply::Text(cli::help()),
            Command::ShowVersion => reply(
                format!("sluice {}\n", env!("CARGO_PKG_VERSION")),
                json!({"version": env!("CARGO_PKG_VERSION")}),
            ),
            Command::ShowInterface { name } => {
                let (t, v) = self.show_interface(name.as_deref())?;
                reply(t, v)
            }
            Command::ShowHardware { name } => {
                let (t, v) = self.show_hardware(name.as_deref())?;
                reply(t, v)
            }
            Command::ShowRuntime => {
                let (t, v) = self.show_runtime();
                reply(t, v)
            }
            Command::ShowErrors => {
                let (t, v) = self.show_errors();
                reply(t, v)
            }
            Command::ShowBuffers => {
                let (t, v) = self.show_buffers();
                reply(t, v)
            }
            Command::ShowThreads => {
                let (t, v) = self.show_threads();
                reply(t, v)
            }
            Command::ShowTrace => {
                let (t, v) = self.show_trace();
                reply(t, v)
            }
            Command::SetInterfaceState { name, up } => {
                let itf = self.interface(name)?;
                itf.set_up(*up);
                Reply::Text(String::new())
            }
            Command::SetXconnect { rx, tx } => {
                let rx = self.interface(rx)?.index;
                let tx = self.interface(tx)?.index;
                self.dp.set_xconnect(rx, Some(tx));
                Reply::Text(String::new())
            }
            Command::ClearRuntime => {
                self.runtime = Baseline {
                    at: Instant::now(),
                    nodes: self.node_samples(),
                    loops: self
                        .dp
                        .workers
                        .iter()
                        .map(|w| w.graph.loops.get())
                        .collect(),
                };
                Reply::Text(String::new())
            }
            Command::ClearInterfaces => {
                for i in &self.dp.interfaces.list {
                    i.clear();
                }
                Reply::Text(String::new())
            }
            Command::ClearErrors => {
                self.errors = self.error_values();
                Reply::Text(String::new())
            }
            Command::ClearTrace => {
                for w in &self.dp.workers {
                    w.graph.trace.clear();
                }
                Reply::Text(String::new())
            }
            Command::ShowIpFib { v6, query } => {
                let (t, v) = super::routing::show_fib(&self.dp, *v6, query.as_deref())?;
                reply(t, v)
            }
            Command::ShowIpNeighbors => {
                let (t, v) = super::routing::show_neighbors(&self.dp);
                reply(t, v)
            }
            Command::SetInterfaceAddress { .. }
            | Command::IpRouteAdd { .. }
            | Command::IpRouteDel { .. }
            | Command::SetIpNeighbor { .. } => {
                super::routing::change(&self.dp, &req.command)?;
                Reply::Text(String::new())
            }
            Command::TraceAdd { node, count } => {
                let mut found = false;
                for w in &self.dp.workers {
                    if let Some(i) = w.graph.node_index(node) {
                        if w.graph.kinds[i] != NodeKind::Input {
                            return Err(format!(
                                "'{node}' is not an input node (trace starts at input nodes such as af-packet-input)"
                            ));
                        }
                        w.graph.trace.add(i, *count);
                        found = true;
                    }
                }
                if !found {
                    return Err(format!("no node named '{node}' (see: show runtime)"));
                }
                Reply::Text(String::new())
            }
        })
    }

    fn interface(
        &self,
        name: &str,
    ) -> Result<&std::sync::Arc<crate::interface::Interface>, String> {
        self.dp.interfaces.by_name(name).ok_or_else(|| {
            format!(
                "no interface named '{name}' (known: {})",
                self.dp.interfaces.names().join(", ")
            )
        })
    }

    fn show_interface(&self, name: Option<&str>) -> Result<(String, Value), String> {
        let list: Vec<_> = match name {
            Some(n) => vec![self.interface(n)?.clone()],
            None => self.dp.interfaces.list.clone(),
        };
        let mut t = format!(
            "{:<16}{:>5}{:>11}{:>8}   {:<20}{:>16}\n",
            "Name", "Idx", "State", "MTU", "Counter", "Count"
        );
        let mut arr = Vec::new();
        for i in &list {
            let c = i.totals();
            let state = i.state();
            let link_counters = i.link_counters();
            let rows = [
                ("rx packets", c.rx_packets),
                ("rx bytes", c.rx_bytes),
                ("tx packets", c.tx_packets),
                ("tx bytes", c.tx_bytes),
                ("drops", c.drops),
                ("tx-error", c.tx_errors),
                ("rx-miss", c.rx_miss),
            ];
            let mut first = true;
            for (label, v) in rows
                .iter()
                .chain(link_counters.iter())
                .filter(|(_, v)| *v > 0)
            {
                if first {
                    let _ = writeln!(
                        t,
                        "{:<16}{:>5}{:>11}{:>8}   {:<20}{:>16}",
                        i.name, i.index, state, i.mtu, label, v
                    );
                    first = false;
                } else {
                    let _ = writeln!(t, "{:<40}   {:<20}{:>16}", "", label, v);
                }
            }
            if first {
                let _ = writeln!(t, "{:<16}{:>5}{:>11}{:>8}", i.name, i.index, state, i.mtu);
            }
            let _ = writeln!(
                t,
                "{:<43}driver {}, rx queues {}, tx queues {}",
                "", i.driver, i.rx_queues, i.tx_queues
            );
            if let Some(l) = i.host_link() {
                let _ = writeln!(
                    t,
                    "    {:<14} {} (admin {}, {} changes)",
                    format!("link {}", l.name()),
                    i.link_state(),
                    if i.is_up() { "up" } else { "down" },
                    l.changes()
                );
            }
            let addresses = self
                .dp
                .router
                .lock()
                .map(|r| r.addresses(i.index))
                .unwrap_or_default();
            let _ = writeln!(t, "    {:<14} {}", "mac", i.mac);
            if !addresses.is_empty() {
                let _ = writeln!(t, "    {:<14} {}", "addresses", addresses.join(" "));
            }
            let mut details = serde_json::Map::new();
            for (k, v) in &i.all_details() {
                details.insert(k.clone(), Value::String(v.clone()));
            }
            let mut v = json!({
                "name": i.name, "index": i.index, "driver": i.driver, "state": state,
                "mtu": i.mtu, "rx_queues": i.rx_queues, "tx_queues": i.tx_queues,
                "admin": if i.is_up() { "up" } else { "down" },
                "link": i.link_state(),
                "rx_packets": c.rx_packets, "rx_bytes": c.rx_bytes,
                "tx_packets": c.tx_packets, "tx_bytes": c.tx_bytes,
                "drops": c.drops, "tx_errors": c.tx_errors, "rx_miss": c.rx_miss,
                "details": details,
            });
            // Link counters as numbers: link_changes, tx_dropped_link_down, ...
            for (k, n) in &link_counters {
                v[k.replace('-', "_")] = json!(n);
            }
            arr.push(v);
        }
        Ok((t, Value::Array(arr)))
    }

    /// `show hardware`: what each driver says of its device (VPP's show hardware-interfaces).
    fn show_hardware(&self, name: Option<&str>) -> Result<(String, Value), String> {
        let list: Vec<_> = match name {
            Some(n) => vec![self.interface(n)?.clone()],
            None => self.dp.interfaces.list.clone(),
        };
        let mut t = String::new();
        let mut arr = Vec::new();
        for i in &list {
            let state = i.state();
            let _ = writeln!(
                t,
                "{:<16}{:>5}  {:<5} driver {}, rx queues {}, tx queues {}",
                i.name, i.index, state, i.driver, i.rx_queues, i.tx_queues
            );
            let addresses = self
                .dp
                .router
                .lock()
                .map(|r| r.addresses(i.index))
                .unwrap_or_default();
            let _ = writeln!(t, "    {:<14} {}", "mac", i.mac);
            if !addresses.is_empty() {
                let _ = writeln!(t, "    {:<14} {}", "addresses", addresses.join(" "));
            }
            let mut details = serde_json::Map::new();
            for (k, v) in &i.all_details() {
                let _ = writeln!(t, "    {k:<14} {v}");
                details.insert(k.clone(), Value::String(v.clone()));
            }
            arr.push(json!({
                "name": i.name, "index": i.index, "driver": i.driver, "state": state,
                "rx_queues": i.rx_queues, "tx_queues": i.tx_queues, "details": details,
                "link": i.link_state(),
                "mac": i.mac.to_string(), "addresses": addresses,
            }));
        }
        Ok((t, Value::Array(arr)))
    }

    fn node_samples(&self) -> Vec<Vec<NodeSample>> {
        self.dp
            .workers
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

    fn show_runtime(&self) -> (String, Value) {
        let elapsed = self.runtime.at.elapsed().as_secs_f64().max(1e-9);
        let now = self.node_samples();
        let mut t = String::new();
        let main_cpu = self
            .dp
            .main_cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "any".into());
        let _ = writeln!(t, "Thread 0 sluice_main (lcore {main_cpu})");
        let _ = writeln!(
            t,
            "Time {elapsed:.1}, control plane only (no graph nodes); clocks are TSC ticks at {:.3} GHz",
            self.dp.tsc_hz / 1e9
        );
        let mut threads = Vec::new();
        for (w, worker) in self.dp.workers.iter().enumerate() {
            let g = &worker.graph;
            let base = &self.runtime.nodes[w];
            let delta: Vec<NodeSample> = now[w]
                .iter()
                .zip(base)
                .map(|(n, b)| NodeSample {
                    calls: n.calls - b.calls,
                    vectors: n.vectors - b.vectors,
                    clocks: n.clocks - b.clocks,
                })
                .collect();
            let loops = g.loops.get() - self.runtime.loops[w];
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
        let v = json!({"tsc_hz": self.dp.tsc_hz, "threads": threads});
        (t, v)
    }

    fn error_values(&self) -> Vec<Vec<Vec<u64>>> {
        self.dp
            .workers
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

    fn show_errors(&self) -> (String, Value) {
        let now = self.error_values();
        let mut t = format!("{:>12}  {:<28}{}\n", "Count", "Node", "Reason");
        let mut arr = Vec::new();
        for (w, worker) in self.dp.workers.iter().enumerate() {
            let g = &worker.graph;
            for (n, reasons) in g.error_names.iter().enumerate() {
                for (e, reason) in reasons.iter().enumerate() {
                    let count = now[w][n][e] - self.errors[w][n][e];
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
        (t, Value::Array(arr))
    }

    fn show_buffers(&self) -> (String, Value) {
        let r = self.dp.pool.report();
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
        (t, serde_json::to_value(&r).unwrap_or(Value::Null))
    }

    fn show_threads(&self) -> (String, Value) {
        let mut t = format!(
            "{:<4}{:<16}{:<10}{:>8}{:>8}\n",
            "ID", "Name", "Type", "LWP", "lcore"
        );
        let main_cpu = self
            .dp
            .main_cpu
            .map(|c| c.to_string())
            .unwrap_or_else(|| "any".into());
        let main_tid = crate::drivers::cpu::current_thread_id();
        let _ = writeln!(
            t,
            "{:<4}{:<16}{:<10}{:>8}{:>8}",
            0, "sluice_main", "main", main_tid, main_cpu
        );
        let mut arr = vec![
            json!({"id": 0, "name": "sluice_main", "type": "main", "lwp": main_tid, "cpu": self.dp.main_cpu}),
        ];
        for w in &self.dp.workers {
            let cpu = w.cpu.map(|c| c.to_string()).unwrap_or_else(|| "any".into());
            let tid = w.tid.load(std::sync::atomic::Ordering::Relaxed);
            let _ = writeln!(
                t,
                "{:<4}{:<16}{:<10}{:>8}{:>8}",
                w.index + 1,
                w.name,
                "workers",
                tid,
                cpu
            );
            arr.push(json!({"id": w.index + 1, "name": w.name, "type": "workers", "lwp": tid, "cpu": w.cpu}));
        }
        (t, Value::Array(arr))
    }

    fn show_trace(&self) -> (String, Value) {
        let mut t = String::new();
        let mut arr = Vec::new();
        for w in &self.dp.workers {
            let records = w.graph.trace.records();
            if records.is_empty() {
                continue;
            }
            let _ = writeln!(
                t,
                "------------------- Start of thread {} {} -------------------",
                w.index + 1,
                w.name
            );
            for r in &records {
                let _ = writeln!(t, "Packet {}\n", r.packet + 1);
                for l in &r.lines {
                    let _ = writeln!(t, "  {l}");
                }
                t.push('\n');
            }
            arr.push(json!({"thread": w.index + 1, "packets": records}));
        }
        if t.is_empty() {
            t = "No packets in trace buffer (trace add NODE N first)\n".into();
        }
        (t, Value::Array(arr))
    }
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
