//! `show queues`: per receive queue and per worker, the load over the last second, with the
//! queues and workers far above their mean flagged (`sluice ctl monitor` repeats it).

use super::cli::{Command, Output};
use super::exec::Control;
use crate::dataplane::queues::{Usage, IMBALANCE_FACTOR};
use std::fmt::Write as _;

pub const COMMANDS: &[Command] = &[Command {
    words: &["show", "queues"],
    syntax: "",
    help: "per receive queue: packets, bytes, drops, rates over the last second, share of its \
           interface, the worker polling it and how busy that worker is; queues and workers \
           above 1.5x their mean are marked '!'",
    example: "show queues",
    args: &[],
    run: |c, _| Ok(show_queues(c)),
}];

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
        let _ = writeln!(
            t,
            "{:<16}{:>6}{:>7}{:>16}{:>18}{:>10}{:>10}{:>10}{:>9}{:>8}{:>7}{}",
            q.interface,
            q.queue,
            q.worker,
            q.packets,
            q.bytes,
            q.drops,
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
    use crate::dataplane::queues::{QueueUsage, WorkerUsage};

    #[test]
    fn the_table_marks_what_is_imbalanced_and_explains_the_mark() {
        let q = |queue, pps, imbalanced| QueueUsage {
            interface: "d0".into(),
            queue,
            worker: queue,
            packets: 10,
            bytes: 640,
            drops: 0,
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
