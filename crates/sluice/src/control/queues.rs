//! `show queues`: per receive queue and per worker, the load over the last second, with the
//! queues and workers far above their mean flagged (`sluice ctl monitor` repeats it);
//! `set interface handoff` and `show interface handoff`: spreading an interface's packets
//! over workers by flow hash.

use super::cli::{Arg, Args, Command, Effect, Output};
use super::exec::Control;
use crate::dataplane::queues::{Usage, IMBALANCE_FACTOR};
use crate::handoff::{HashKey, Spread};
use serde_json::{json, Value};
use std::fmt::Write as _;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["show", "queues"],
        effect: Effect::Reads,
        syntax: "",
        help: "per receive queue: packets, bytes, drops, rates over the last second, share of \
               its interface, the worker polling it and how busy that worker is; queues and \
               workers above 1.5x their mean are marked '!'",
        example: "show queues",
        args: &[],
        run: |c, _| Ok(show_queues(c)),
    },
    Command {
        words: &["show", "interface", "handoff"],
        effect: Effect::Reads,
        syntax: "",
        help: "the interfaces whose packets are handed to workers by flow hash: workers, key",
        example: "show interface handoff",
        args: &[],
        run: |c, _| Ok(show_handoff(c)),
    },
    Command {
        words: &["set", "interface", "handoff"],
        effect: Effect::Changes,
        syntax: "<IF> workers <LIST> [key symmetric|standard] | <IF> off",
        help: "hand the packets IF receives to the workers of LIST (0,2 or 0-3) by the RSS \
               hash of their flow, the symmetric key unless told (both directions of a flow \
               on one worker); off: each worker keeps what it receives",
        example: "set interface handoff d0 workers 0-1",
        args: &[Arg::Value("IF"), Arg::Rest],
        run: set_handoff,
    },
];

/// A worker list: `0,2,3`, `0-3` or a mix (`0-1,3`).
pub fn parse_workers(s: &str) -> Result<Vec<usize>, String> {
    let num = |v: &str| {
        v.parse::<usize>()
            .map_err(|_| format!("worker '{v}' is not a number (a list: 0,2 or 0-3)"))
    };
    let mut out = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("workers {part}: the range goes down"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    Ok(out)
}

fn set_handoff(c: &mut Control, a: &Args) -> Result<Output, String> {
    let itf = c.interface(a.value("IF"))?.clone();
    let index = itf.index as usize;
    if index >= c.dp.hardware {
        return Err(format!(
            "{}: a sub-interface's packets are handed off with its parent's",
            itf.name
        ));
    }
    let rest = a.rest();
    let spread = match rest[..] {
        ["off"] => None,
        ["workers", list] => Some((list, HashKey::Symmetric)),
        ["workers", list, "key", key] => Some((list, HashKey::parse(key)?)),
        _ => return Err("expected: workers <LIST> [key symmetric|standard], or off".into()),
    };
    let spread = match spread {
        Some((list, key)) => Some(Spread::new(
            &parse_workers(list)?,
            key,
            c.dp.handoff.workers(),
        )?),
        None => None,
    };
    c.dp.handoff.set(index, spread)?;
    Output::done()
}

fn show_handoff(c: &Control) -> Output {
    let mut t = format!("{:<16}{:<12}{}\n", "Interface", "Key", "Workers");
    let mut arr = Vec::new();
    for (i, s) in c.dp.handoff.spreads().iter().enumerate() {
        let (Some(s), Some(itf)) = (s, c.dp.interfaces.list.get(i)) else {
            continue;
        };
        let list: Vec<String> = s.workers.iter().map(usize::to_string).collect();
        let _ = writeln!(t, "{:<16}{:<12}{}", itf.name, s.key.name(), list.join(","));
        arr.push(json!({"interface": itf.name, "key": s.key.name(), "workers": s.workers}));
    }
    Output::Shown(t, Value::Array(arr))
}

fn show_queues(c: &Control) -> Output {
    let usage = c.dp.queue_monitor.usage();
    let json = serde_json::to_value(&usage).unwrap_or_default();
    Output::Shown(render(&usage), json)
}

/// A rate with an SI suffix, as `show queues` and the monitor print it.
fn si(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2}G", v / 1e9),
        v if v >= 1e6 => format!("{:.2}M", v / 1e6),
        v if v >= 1e3 => format!("{:.2}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

fn pct(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

/// The table of `show queues`.
pub fn render(u: &Usage) -> String {
    let mut t = format!("Rates over the last {:.2} s\n", u.interval_s);
    let _ = writeln!(
        t,
        "{:<16}{:>6}{:>7}{:>16}{:>18}{:>10}{:>10}{:>10}{:>9}{:>8}{:>7}",
        "Interface",
        "Queue",
        "Worker",
        "Packets",
        "Bytes",
        "Drops",
        "pps",
        "bps",
        "drops/s",
        "Share",
        "Busy"
    );
    for q in &u.queues {
        let n = &q.totals;
        let _ = writeln!(
            t,
            "{:<16}{:>6}{:>7}{:>16}{:>18}{:>10}{:>10}{:>10}{:>9}{:>8}{:>7}{}",
            n.interface,
            n.queue,
            n.worker,
            n.packets,
            n.bytes,
            n.drops,
            si(q.pps),
            si(q.bps),
            si(q.drops_per_s),
            pct(q.share),
            pct(q.worker_busy),
            if q.imbalanced { "  !" } else { "" }
        );
    }
    let _ = writeln!(
        t,
        "{:<8}{:>8}{:>8}{:>10}",
        "Worker", "Busy", "Queues", "pps"
    );
    for w in &u.workers {
        let _ = writeln!(
            t,
            "{:<8}{:>8}{:>8}{:>10}{}",
            w.worker,
            pct(w.busy),
            w.queues,
            si(w.pps),
            if w.imbalanced { "  !" } else { "" }
        );
    }
    if u.queues.iter().any(|q| q.imbalanced) || u.workers.iter().any(|w| w.imbalanced) {
        let _ = writeln!(
            t,
            "! = above {IMBALANCE_FACTOR}x the mean rate of its interface's queues (a worker: of \
             all workers)"
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::queues::{QueueTotals, QueueUsage, WorkerUsage};

    #[test]
    fn worker_lists() {
        assert_eq!(parse_workers("0-3").unwrap(), [0, 1, 2, 3]);
        assert_eq!(parse_workers("2,0").unwrap(), [2, 0]);
        assert_eq!(parse_workers("0-1,3").unwrap(), [0, 1, 3]);
        assert!(parse_workers("1-0").unwrap_err().contains("goes down"));
        assert!(parse_workers("a").unwrap_err().contains("not a number"));
        assert!(parse_workers("").unwrap_err().contains("not a number"));
    }

    #[test]
    fn the_table_marks_what_is_imbalanced_and_explains_the_mark() {
        let q = |queue, pps, imbalanced| QueueUsage {
            totals: QueueTotals {
                interface: "d0".into(),
                queue,
                worker: queue,
                packets: 10,
                bytes: 640,
                drops: 0,
            },
            pps,
            bps: pps * 512.0,
            drops_per_s: 0.0,
            share: 0.5,
            worker_busy: 0.25,
            imbalanced,
        };
        let w = |worker| WorkerUsage {
            worker,
            busy: 0.25,
            queues: 1,
            pps: 1.0,
            imbalanced: false,
        };
        let mut u = Usage {
            interval_s: 1.0,
            queues: vec![q(0, 2.5e6, true), q(1, 1500.0, false)],
            workers: vec![w(0), w(1)],
        };
        let t = render(&u);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[2].contains("2.50M") && lines[2].ends_with("  !"),
            "{t}"
        );
        assert!(
            lines[3].contains("1.50k") && !lines[3].ends_with('!'),
            "{t}"
        );
        assert!(
            lines[3].contains("25.0%") && lines[3].contains("50.0%"),
            "{t}"
        );
        assert!(t.contains("! = above 1.5x"), "{t}");
        u.queues[0].imbalanced = false;
        assert!(!render(&u).contains('!'));
    }
}
