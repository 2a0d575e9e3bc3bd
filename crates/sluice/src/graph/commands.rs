//! `show graph`: the nodes of the workers' graph with their next nodes and the nodes that
//! send to them, as VPP's `show vlib graph` lists them. Every worker runs the same graph,
//! so the first worker's is shown.

use super::{GraphShared, NodeKind};
use crate::control::cli::{Arg, Command, Effect, Output};
use crate::control::exec::Control;
use serde_json::{json, Value};
use std::fmt::Write as _;

pub const COMMANDS: &[Command] = &[Command {
    words: &["show", "graph"],
    effect: Effect::Reads,
    syntax: "[<NODE>]",
    help: "the graph's nodes, each with its next nodes (by slot) and the nodes that send to it",
    example: "show graph ip4-lookup",
    args: &[Arg::Optional("NODE")],
    run: |c, a| show_graph(c, a.get("NODE")),
}];

fn kind_word(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Input => "input",
        NodeKind::Internal => "internal",
        NodeKind::Output => "output",
        NodeKind::Drop => "drop",
    }
}

/// The nodes whose next nodes include node `n`.
fn previous(g: &GraphShared, n: usize) -> Vec<&str> {
    (0..g.names.len())
        .filter(|&p| g.nexts[p].contains(&(n as u32)))
        .map(|p| g.names[p].as_str())
        .collect()
}

fn show_graph(c: &Control, node: Option<&str>) -> Result<Output, String> {
    let Some(worker) = c.dp.workers.first() else {
        return Err("no workers: the dataplane runs no graph".into());
    };
    let g = &worker.graph;
    let shown: Vec<usize> = match node {
        None => (0..g.names.len()).collect(),
        Some(name) => vec![g
            .node_index(name)
            .ok_or_else(|| format!("no graph node named '{name}' (show graph lists them)"))?],
    };
    let mut t = format!("{:<24}{:<10}{:<30}{}\n", "Node", "Kind", "Next", "Previous");
    let mut arr = Vec::new();
    for n in shown {
        let next: Vec<&str> = g.nexts[n]
            .iter()
            .map(|&x| g.names[x as usize].as_str())
            .collect();
        let prev = previous(g, n);
        let rows = next.len().max(prev.len()).max(1);
        for r in 0..rows {
            let (name, kind) = match r {
                0 => (g.names[n].as_str(), kind_word(g.kinds[n])),
                _ => ("", ""),
            };
            let nx = next
                .get(r)
                .map(|x| format!("[{r}] {x}"))
                .unwrap_or_default();
            let pv = prev.get(r).copied().unwrap_or("");
            let _ = writeln!(t, "{name:<24}{kind:<10}{nx:<30}{pv}");
        }
        arr.push(json!({
            "node": g.names[n], "kind": kind_word(g.kinds[n]), "next": next, "previous": prev,
        }));
    }
    Ok(Output::Shown(t, Value::Array(arr)))
}
