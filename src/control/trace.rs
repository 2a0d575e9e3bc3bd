//! The packet trace commands: `trace add`, `show trace`, `clear trace`.

use super::cli::{Arg, Args, Command, Output};
use super::exec::Control;
use crate::graph::NodeKind;
use serde_json::{json, Value};
use std::fmt::Write as _;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["show", "trace"],
        syntax: "",
        help: "packets traced by 'trace add'",
        example: "show trace",
        args: &[],
        run: |c, _| Ok(show_trace(c)),
    },
    Command {
        words: &["clear", "trace"],
        syntax: "",
        help: "drop trace records and budgets",
        example: "clear trace",
        args: &[],
        run: |c, _| {
            for w in &c.dp.workers {
                w.graph.trace.clear();
            }
            Output::done()
        },
    },
    Command {
        words: &["trace", "add"],
        syntax: "<NODE> <N>",
        help: "trace the next N packets of input node NODE",
        example: "trace add af-packet-input 10",
        args: &[Arg::Value("NODE"), Arg::Count("N", "trace count", 100_000)],
        run: trace_add,
    },
];

fn trace_add(c: &mut Control, a: &Args) -> Result<Output, String> {
    let (node, count) = (a.value("NODE"), a.count("N"));
    let mut found = false;
    for w in &c.dp.workers {
        if let Some(i) = w.graph.node_index(node) {
            if w.graph.kinds[i] != NodeKind::Input {
                return Err(format!(
                    "'{node}' is not an input node (trace starts at input nodes such as af-packet-input)"
                ));
            }
            w.graph.trace.add(i, count);
            found = true;
        }
    }
    if !found {
        return Err(format!("no node named '{node}' (see: show runtime)"));
    }
    Output::done()
}

fn show_trace(c: &Control) -> Output {
    let mut t = String::new();
    let mut arr = Vec::new();
    for w in &c.dp.workers {
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
    Output::Shown(t, Value::Array(arr))
}
