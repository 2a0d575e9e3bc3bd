//! The packet trace commands: `trace add`, `show trace`, `clear trace`, and `pcap trace`
//! (capture to a pcap file, `dataplane::pcap_trace`).

use super::cli::{Arg, Args, Command, Effect, Output};
use super::exec::Control;
use crate::dataplane::pcap_trace::{self, TraceSpec};
use crate::graph::NodeKind;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["show", "trace"],
        effect: Effect::Reads,
        syntax: "",
        help: "packets traced by 'trace add'",
        example: "show trace",
        args: &[],
        run: |c, _| Ok(show_trace(c)),
    },
    Command {
        words: &["clear", "trace"],
        effect: Effect::Changes,
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
        effect: Effect::Changes,
        syntax: "<NODE> <N>",
        help: "trace the next N packets of input node NODE",
        example: "trace add af-packet-input 10",
        args: &[Arg::Value("NODE"), Arg::Count("N", "trace count", 100_000)],
        run: trace_add,
    },
    Command {
        words: &["pcap", "trace"],
        effect: Effect::Changes,
        syntax: "[rx] [tx] [drop] [max <N>] [intfc <IF>|any] [snaplen <N>] [file <NAME>] | \
                 status | off",
        help: "capture what the dataplane receives, sends and/or drops (on IF, or any \
               interface) into a pcap file: up to N packets (default 100, at most 1 000 000) \
               of at most snaplen bytes each (default the whole packet), kept in memory; \
               the file is made at the start, mode 0600, never over an existing file or \
               through a link (NAME without '/' goes in the private directory \
               /run/sluice/traces; default trace-<unix time>.pcap there); 'off' stops and \
               writes it; 'status' tells how far it is",
        example: "pcap trace rx tx max 1000 intfc d0 file d0.pcap",
        args: &[Arg::Rest],
        run: pcap_trace_cmd,
    },
];

fn pcap_trace_cmd(c: &mut Control, a: &Args) -> Result<Output, String> {
    let words = a.rest();
    let t = c.dp.pcap_trace.clone();
    match words[..] {
        ["off"] => {
            let (path, n) = t.stop()?;
            let p = path.display().to_string();
            return Ok(Output::Shown(
                format!("wrote {n} packets to {p}\n"),
                json!({"file": p, "packets": n}),
            ));
        }
        ["status"] => {
            let Some(s) = t.status() else {
                return Ok(Output::Shown(
                    "no capture running\n".into(),
                    json!({"running": false}),
                ));
            };
            let what: Vec<&str> = [
                (pcap_trace::RX, "rx"),
                (pcap_trace::TX, "tx"),
                (pcap_trace::DROP, "drop"),
            ]
            .iter()
            .filter(|(bit, _)| s.spec.what & bit != 0)
            .map(|&(_, name)| name)
            .collect();
            let itf = if s.spec.interface == pcap_trace::ANY {
                "any".to_string()
            } else {
                c.dp.interfaces
                    .list
                    .get(s.spec.interface as usize)
                    .map_or("?".to_string(), |i| i.name.clone())
            };
            let file = s.spec.file.display().to_string();
            let text = format!(
                "capturing {} on {itf}: {} of {} packets{}, {} bytes in memory; \
                 'pcap trace off' writes {file}\n",
                what.join(" "),
                s.captured,
                s.spec.max,
                if s.taking { "" } else { " (full)" },
                s.memory,
            );
            return Ok(Output::Shown(
                text,
                json!({"running": true, "what": what, "interface": itf, "captured": s.captured,
                       "max": s.spec.max, "full": !s.taking, "file": file,
                       "memory": s.memory}),
            ));
        }
        _ => {}
    }
    let mut spec = TraceSpec {
        what: 0,
        max: 100,
        interface: pcap_trace::ANY,
        snaplen: usize::MAX,
        file: PathBuf::new(),
    };
    let mut it = words.iter();
    let number = |what: &str, v: Option<&&str>| -> Result<u64, String> {
        let v = v.ok_or(format!("{what} needs a value"))?;
        v.parse::<u64>()
            .map_err(|_| format!("{what} '{v}' is not a number"))
    };
    while let Some(&w) = it.next() {
        match w {
            "rx" => spec.what |= pcap_trace::RX,
            "tx" => spec.what |= pcap_trace::TX,
            "drop" => spec.what |= pcap_trace::DROP,
            "max" => spec.max = number("max", it.next())?,
            "snaplen" => match number("snaplen", it.next())? {
                0 => return Err("snaplen 0: at least 1 byte".into()),
                n => spec.snaplen = n as usize,
            },
            "intfc" => {
                let name = it.next().ok_or("intfc needs an interface or 'any'")?;
                spec.interface = match *name {
                    "any" => pcap_trace::ANY,
                    n => c.interface(n)?.index,
                };
            }
            "file" => {
                let name = it.next().ok_or("file needs a name")?;
                spec.file = if name.contains('/') {
                    PathBuf::from(name)
                } else if matches!(*name, "." | "..") {
                    return Err(format!("file '{name}': a file name, please"));
                } else {
                    private(name)?
                };
            }
            other => {
                return Err(format!(
                    "unknown word '{other}' (pcap trace [rx] [tx] [drop] [max N] [intfc IF|any] \
                     [snaplen N] [file NAME] | status | off)"
                ))
            }
        }
    }
    if spec.file.as_os_str().is_empty() {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        spec.file = private(&format!("trace-{secs}.pcap"))?;
    }
    let file = spec.file.display().to_string();
    t.start(spec)?;
    Ok(Output::Shown(
        format!("capturing into {file}\n"),
        json!({"file": file}),
    ))
}

/// `name` in the daemon's private directory for captures (made on first use).
fn private(name: &str) -> Result<PathBuf, String> {
    let dir = pcap_trace::private_dir(std::path::Path::new(pcap_trace::TRACE_DIR))?;
    Ok(dir.join(name))
}

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
