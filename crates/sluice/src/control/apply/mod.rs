//! `diff FILE` and `apply FILE`: a changed config file applied to the running daemon as one
//! transaction, without a restart.
//!
//! FILE is checked whole as `sluice run` checks it (a bad file is an error naming its line
//! and key; nothing is applied). `diff` compares the running state's entries (what
//! `sluice ctl save` writes) with FILE's, section by section (`diff.rs`), and turns each
//! difference into CLI lines with their undo lines (`ops.rs`, `bridge.rs`). A difference in
//! a section that cannot change live is refused as a whole, before anything runs. `apply`
//! runs the lines in order under the control plane's lock (it is a command: the socket
//! holds the lock while it runs); on the first error it runs the undo lines of the ones
//! done, in reverse order, and answers the error with what it rolled back. Every line run
//! is logged on the daemon's stderr with the entry it changes. Entries that do not differ
//! are not touched: no worker restarts, no table is rebuilt for them.
//!
//! The daemon reads FILE itself (an absolute path, as `save` writes one): a request line is
//! at most 4096 bytes, a config file is larger, and the daemon (root) reads where it reads
//! its start-up file. SIGHUP runs `apply` of the start-up file (`daemon.rs`).

pub mod bridge;
pub mod diff;
pub mod nat;
pub mod ops;
pub mod soft;
pub mod workers;

use super::cli::{Arg, Args, Command, Effect, Output};
use super::exec::Control;
use super::save::State;
use crate::config::section::SECTIONS;
use diff::Change;
use ops::Op;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["diff"],
        // Changes nothing, but reads a file as the daemon's user: not for the read-only socket.
        effect: Effect::Changes,
        syntax: "<FILE>",
        help: "what apply FILE would change: the entries that differ between the running \
               state and config file FILE (a path the daemon reads; sluice ctl makes a \
               relative one absolute, the socket refuses one), and the CLI lines that would \
               apply them, in order",
        example: "diff /etc/sluice/sluice.toml",
        args: &[Arg::Value("FILE")],
        run: diff_cmd,
    },
    Command {
        words: &["apply"],
        effect: Effect::Changes,
        syntax: "<FILE> [dry-run]",
        help: "make the running state what config file FILE says (a path the daemon reads; \
               sluice ctl makes a relative one absolute), changing only the entries that \
               differ, as one transaction: \
               FILE is checked whole first, and an error rolls back what was done (dry-run: \
               as diff)",
        example: "apply /etc/sluice/sluice.toml",
        args: &[Arg::Flag("dry-run"), Arg::Value("FILE")],
        run: apply_cmd,
    },
];

/// What FILE changes: the entries, and the lines in the order they run.
pub struct Plan {
    pub changes: Vec<Change>,
    pub ops: Vec<Op>,
}

/// FILE read by the daemon: an absolute path.
fn read(file: &str) -> Result<String, String> {
    if !Path::new(file).is_absolute() {
        return Err(format!(
            "'{file}' is not an absolute path: the daemon reads the file, and its working \
             directory is not yours"
        ));
    }
    std::fs::read_to_string(file).map_err(|e| format!("cannot read {file}: {e}"))
}

/// The plan that makes the running state what `text` says, or every reason it cannot be
/// applied live (then nothing is run).
pub fn plan(c: &Control, text: &str, origin: &str) -> Result<Plan, String> {
    let cfg = crate::config::Config::parse(text, origin).map_err(|e| e.to_string())?;
    let st = State::gather(c);
    let changes = diff::changes(&st, &cfg.written)?;
    let rank = |name: &str| SECTIONS.iter().position(|s| s.doc().name == name);
    let cx = ops::Context {
        workers: c.dp.workers.len(),
    };
    let mut refused = Vec::new();
    let mut parts: Vec<(usize, ops::Ops)> = Vec::new();
    for ch in &changes {
        let r = rank(ch.section).unwrap_or(0);
        if !SECTIONS[r].live() {
            refused.push(format!(
                "[{}] differs: it is read at start only; restart the daemon with the file",
                ch.section
            ));
            continue;
        }
        match ops::ops(ch, &cx) {
            Ok(o) => parts.push((r, o)),
            Err(e) => refused.push(e),
        }
    }
    if !refused.is_empty() {
        refused.dedup();
        return Err(format!(
            "{origin}: not applied, nothing changed: {}",
            refused.join("; ")
        ));
    }
    // Removals in the reverse order of the sections, then additions in their order (a
    // stable sort keeps each section's own order); address lines at the stage of the
    // tables, after their own.
    let tables = rank("ip-table").unwrap_or(0);
    let stage = |r: usize, op: &Op| if op.address { (tables, 1) } else { (r, 0) };
    let mut remove: Vec<((usize, u8), Op)> = Vec::new();
    let mut add: Vec<((usize, u8), Op)> = Vec::new();
    for (r, o) in parts {
        remove.extend(o.remove.into_iter().map(|op| (stage(r, &op), op)));
        add.extend(o.add.into_iter().map(|op| (stage(r, &op), op)));
    }
    remove.sort_by_key(|(r, _)| std::cmp::Reverse(*r));
    add.sort_by_key(|(r, _)| *r);
    let ops = remove.into_iter().chain(add).map(|(_, op)| op).collect();
    Ok(Plan { changes, ops })
}

fn entry_json(e: Option<&crate::config::emit::Entry>) -> Value {
    match e {
        None => Value::Null,
        Some(e) => {
            let t: toml::Table = e.keys.iter().cloned().collect();
            serde_json::to_value(t).unwrap_or(Value::Null)
        }
    }
}

/// The plan as text and JSON.
fn shown(p: &Plan, applied: Option<&str>) -> Output {
    let mut t = String::new();
    for ch in &p.changes {
        let _ = writeln!(t, "{} {}", ch.name(), ch.kind());
    }
    if p.changes.is_empty() {
        t.push_str("no change\n");
    } else {
        let _ = writeln!(t, "{}:", applied.unwrap_or("lines"));
        for op in &p.ops {
            let _ = writeln!(t, "  {}", op.line);
        }
    }
    let changes: Vec<Value> = p
        .changes
        .iter()
        .map(|c| {
            json!({ "section": c.section, "entry": c.name(), "kind": c.kind(),
                    "running": entry_json(c.old.as_ref()), "file": entry_json(c.new.as_ref()) })
        })
        .collect();
    let ops: Vec<Value> = p
        .ops
        .iter()
        .map(|o| json!({ "entry": o.what, "line": o.line, "undo": o.undo }))
        .collect();
    Output::Shown(
        t,
        json!({ "changes": changes, "operations": ops, "applied": applied.is_some() }),
    )
}

fn diff_cmd(c: &mut Control, a: &Args) -> Result<Output, String> {
    let file = a.value("FILE");
    let p = plan(c, &read(file)?, file)?;
    Ok(shown(&p, None))
}

fn apply_cmd(c: &mut Control, a: &Args) -> Result<Output, String> {
    let file = a.value("FILE");
    if a.flag("dry-run") {
        return diff_cmd(c, a);
    }
    let p = apply(c, &read(file)?, file)?;
    Ok(shown(&p, Some("applied")))
}

/// Apply `text` (from `origin`): the plan run line by line, rolled back on the first error.
pub fn apply(c: &mut Control, text: &str, origin: &str) -> Result<Plan, String> {
    let p = plan(c, text, origin).inspect_err(|e| eprintln!("sluice: apply {e}"))?;
    // What the lines change comes from the file: their events say source "config".
    c.source = "config";
    let done = run_plan(c, &p, origin);
    c.source = "cli";
    done.map(|()| p)
}

fn run_plan(c: &mut Control, p: &Plan, origin: &str) -> Result<(), String> {
    let n = p.ops.len();
    for (i, op) in p.ops.iter().enumerate() {
        if let Err(e) = c.handle_line(&op.line) {
            let undone = undo(c, origin, &p.ops[..i]);
            let msg = format!(
                "{origin}: not applied: line {} of {n} (`{}`, {}) failed: {e}; {undone}",
                i + 1,
                op.line,
                op.what
            );
            eprintln!("sluice: apply {msg}");
            return Err(msg);
        }
        eprintln!("sluice: apply {origin}: {}: {}", op.what, op.line);
    }
    eprintln!(
        "sluice: apply {origin}: done, {} entries changed by {n} lines",
        p.changes.len()
    );
    Ok(())
}

/// Run the undo lines of `done` in reverse order; says what was rolled back.
fn undo(c: &mut Control, origin: &str, done: &[Op]) -> String {
    let mut failed = Vec::new();
    for op in done.iter().rev() {
        match c.handle_line(&op.undo) {
            Ok(_) => eprintln!("sluice: apply {origin}: undone: {}", op.undo),
            Err(e) => {
                eprintln!("sluice: apply {origin}: undo `{}` failed: {e}", op.undo);
                failed.push(format!("`{}`: {e}", op.undo));
            }
        }
    }
    if failed.is_empty() {
        format!(
            "the {} lines done before it were undone, the running state is as it was",
            done.len()
        )
    } else {
        format!(
            "undoing the {} lines done before it, {} failed: {}",
            done.len(),
            failed.len(),
            failed.join("; ")
        )
    }
}
