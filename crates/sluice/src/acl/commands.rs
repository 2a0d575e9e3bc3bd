//! The ACL commands: named rule lists, the interfaces they check, per-rule hits.

use crate::acl::control::{parse_rules, AclControl};
use crate::acl::session::SessionTable;
use crate::control::cli::{Arg, Args, Command, Effect, Output};
use crate::control::exec::Control;
use serde_json::json;
use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::MutexGuard;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["acl", "add"],
        effect: Effect::Changes,
        syntax: "<NAME> <RULE> [, <RULE> ...]",
        help: "append rules to ACL NAME, making it if new; a rule is permit|deny|permit+reflect \
               [ipv4|ipv6] [src PREFIX|any] [dst PREFIX|any] [proto tcp|udp|icmp|icmpv6|N] \
               [sport P[-Q]] [dport P[-Q]] [icmp-type T[-U]] [icmp-code C[-D]] [tcp-flags \
               VALUE MASK]; the first match decides, no match denies (hit counters of a \
               changed list start again)",
        example: "acl add edge deny src 198.18.0.7/32, permit proto tcp dport 22",
        args: &[Arg::Value("NAME"), Arg::Rest],
        run: acl_add,
    },
    Command {
        words: &["acl", "set"],
        effect: Effect::Changes,
        syntax: "<NAME> <RULE> [, <RULE> ...]",
        help: "replace the rules of ACL NAME, making it if new (rules as for acl add); the \
               interfaces it checks switch to the new rules at once",
        example: "acl set edge deny src 198.18.0.7/32, permit",
        args: &[Arg::Value("NAME"), Arg::Rest],
        run: acl_set,
    },
    Command {
        words: &["acl", "del|delete"],
        effect: Effect::Changes,
        syntax: "<NAME>",
        help: "delete ACL NAME (refused while an interface uses it)",
        example: "acl del edge",
        args: &[Arg::Value("NAME")],
        run: acl_del,
    },
    Command {
        words: &["set", "acl-plugin", "interface"],
        effect: Effect::Changes,
        syntax: "<IF> input|output acl <NAME> [del]",
        help: "check what IF receives (input, before routing) or sends (output, after the \
               rewrite) against ACL NAME, both families (del: stop checking)",
        example: "set acl-plugin interface d0 input acl edge",
        args: &[
            Arg::Flag("del"),
            Arg::Value("IF"),
            Arg::Choice("DIRECTION", &["input", "output"]),
            Arg::Rest,
        ],
        run: set_interface_acl,
    },
    Command {
        words: &["show", "sessions"],
        effect: Effect::Reads,
        syntax: "[summary]",
        help: "the sessions permit+reflect rules opened: per worker, entries of capacity, \
               opened, expired, evicted, refused by reason (not a SYN, table full, source \
               limit); without summary also the first 100 sessions",
        example: "show sessions summary",
        args: &[Arg::Rest],
        run: show_sessions,
    },
    Command {
        words: &["show", "acl"],
        effect: Effect::Reads,
        syntax: "[<NAME>]",
        help: "ACLs: each rule with its hits, packets no rule matched, the interfaces checked",
        example: "show acl edge",
        args: &[Arg::Optional("NAME")],
        run: show_acl,
    },
];

fn lock(c: &Control) -> MutexGuard<'_, AclControl> {
    c.dp.acls.lock().unwrap_or_else(|p| p.into_inner())
}

fn acl_add(c: &mut Control, a: &Args) -> Result<Output, String> {
    let text = a.rest().join(" ");
    if text.trim().is_empty() {
        return Err("acl add NAME RULE [, RULE ...]: no rule given".into());
    }
    let rules = parse_rules(&text)?;
    lock(c).add(a.value("NAME"), rules)?;
    Output::done()
}

fn acl_set(c: &mut Control, a: &Args) -> Result<Output, String> {
    let text = a.rest().join(" ");
    if text.trim().is_empty() {
        return Err("acl set NAME RULE [, RULE ...]: no rule given".into());
    }
    let rules = parse_rules(&text)?;
    lock(c).replace(a.value("NAME"), rules)?;
    Output::done()
}

fn acl_del(c: &mut Control, a: &Args) -> Result<Output, String> {
    let names: Vec<(u32, String)> =
        c.dp.interfaces
            .live()
            .map(|i| (i.index, i.name.clone()))
            .collect();
    let name_of = |i: u32| {
        names
            .iter()
            .find(|(x, _)| *x == i)
            .map_or_else(|| format!("interface {i}"), |(_, n)| n.clone())
    };
    lock(c).delete(a.value("NAME"), name_of)?;
    Output::done()
}

fn set_interface_acl(c: &mut Control, a: &Args) -> Result<Output, String> {
    let itf = c.interface(a.value("IF"))?.clone();
    let dir = a.value("DIRECTION");
    let output = dir == "output";
    let rest = a.rest();
    let name = match rest.as_slice() {
        ["acl", name] => *name,
        _ => {
            return Err(format!(
                "expected 'acl NAME' after {dir}, got '{}'",
                rest.join(" ")
            ))
        }
    };
    let mut acls = lock(c);
    let current = if output {
        acls.output_of(itf.index)
    } else {
        acls.input_of(itf.index)
    };
    let change = if a.flag("del") {
        match current {
            Some(n) if n == name => None,
            Some(n) => {
                return Err(format!(
                    "{} {dir} is checked by ACL {n}, not {name}",
                    itf.name
                ))
            }
            None => return Err(format!("{} {dir} has no ACL", itf.name)),
        }
    } else {
        Some(name)
    };
    if output {
        acls.set_output(itf.index, change)?;
    } else {
        acls.set_input(itf.index, change)?;
    }
    Output::done()
}

fn show_acl(c: &mut Control, a: &Args) -> Result<Output, String> {
    let reports = lock(c).report(a.get("NAME"))?;
    let name_of = |i: u32| {
        c.dp.interfaces
            .live()
            .find(|x| x.index == i)
            .map_or_else(|| format!("interface {i}"), |x| x.name.clone())
    };
    let mut text = String::new();
    let mut lists = Vec::new();
    for r in &reports {
        let input: Vec<String> = r.input.iter().map(|&i| name_of(i)).collect();
        let output: Vec<String> = r.output.iter().map(|&i| name_of(i)).collect();
        let or_none = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let _ = writeln!(
            text,
            "acl {}: {} rules, {} classifier groups; input of: {}; output of: {}",
            r.name,
            r.rules.len(),
            r.groups,
            or_none(&input),
            or_none(&output)
        );
        for (i, (rule, hits)) in r.rules.iter().enumerate() {
            let _ = writeln!(text, "  {i:>5}  {hits:>14}  {rule}");
        }
        let _ = writeln!(
            text,
            "  {:>5}  {:>14}  (no rule matched: denied)",
            "", r.no_match
        );
        lists.push(json!({
            "name": r.name,
            "rules": r.rules.iter().map(|(t, h)| json!({"rule": t, "hits": h})).collect::<Vec<_>>(),
            "no_match": r.no_match,
            "input": input,
            "output": output,
            "groups": r.groups,
        }));
    }
    if reports.is_empty() {
        text.push_str("no ACLs\n");
    }
    Ok(Output::Shown(text, json!({ "acls": lists })))
}

/// Sessions `show sessions` lists at most.
const SESSIONS_SHOWN: usize = 100;

fn show_sessions(c: &mut Control, a: &Args) -> Result<Output, String> {
    let summary = match a.rest().as_slice() {
        [] => false,
        ["summary"] => true,
        other => {
            return Err(format!(
                "show sessions [summary]: not '{}'",
                other.join(" ")
            ))
        }
    };
    let sessions = lock(c).filters().sessions.clone();
    let now = crate::acl::session::now_ms();
    let t = &sessions.timeouts;
    let tables = sessions.tables();
    let mut text = String::new();
    if tables.is_empty() {
        let _ = writeln!(
            text,
            "no session tables: no permit+reflect rule has been applied (each worker's \
             will hold {} sessions, {:.1} MiB)",
            sessions.per_worker(),
            SessionTable::memory_for(sessions.per_worker()) as f64 / (1 << 20) as f64
        );
    }
    let mut workers = Vec::new();
    let mut listed = Vec::new();
    for (w, table) in tables.iter().enumerate() {
        let limit = if summary {
            0
        } else {
            SESSIONS_SHOWN.saturating_sub(listed.len())
        };
        let (live, some) = table.live(now, t, limit);
        let s = &table.stats;
        let n = |c: &std::sync::atomic::AtomicU64| c.load(Relaxed);
        let (entries, created, expired, evicted, hits) = (
            n(&s.entries),
            n(&s.created),
            n(&s.expired),
            n(&s.evicted),
            n(&s.hits),
        );
        let (not_syn, full, source) = (n(&s.not_syn), n(&s.table_full), n(&s.source_limit));
        let _ = writeln!(
            text,
            "worker {w}: {entries} of {} entries ({live} live, {:.1} MiB), {created} opened, \
             {expired} expired, {evicted} evicted; refused: {not_syn} not a SYN, {full} table \
             full, {source} source limit; {hits} packets passed by a session",
            table.capacity(),
            table.memory_bytes() as f64 / (1 << 20) as f64
        );
        workers.push(json!({
            "worker": w, "entries": entries, "sessions": live, "capacity": table.capacity(),
            "memory_bytes": table.memory_bytes(), "opened": created, "expired": expired,
            "evicted": evicted, "table_full": full, "hits": hits,
            "refused": { "not_syn": not_syn, "table_full": full, "source_limit": source },
        }));
        listed.extend(some.into_iter().map(|v| (w, v)));
    }
    let per_source = match sessions.per_source() {
        0 => "no limit".to_string(),
        n => n.to_string(),
    };
    let _ = writeln!(
        text,
        "timeouts (s): tcp established {}, tcp transient {}, udp {}, icmp {}, other {}; \
         sessions per source and worker: {per_source}",
        t.tcp_established, t.tcp_transient, t.udp, t.icmp, t.other
    );
    let mut shown = Vec::new();
    for (w, v) in &listed {
        let addr = |a: u128| {
            if v.key.ipv6 {
                std::net::Ipv6Addr::from(a).to_string()
            } else {
                std::net::Ipv4Addr::from((a >> 96) as u32).to_string()
            }
        };
        let (a, b) = (
            format!("{}:{}", addr(v.key.a), v.key.pa),
            format!("{}:{}", addr(v.key.b), v.key.pb),
        );
        let (from, to) = if v.from_a { (a, b) } else { (b, a) };
        let _ = writeln!(
            text,
            "  w{w} proto {:<3} {from} -> {to}  {}  idle {:.1} s, expires in {:.1} s",
            v.key.proto,
            v.state(),
            v.idle_ms as f64 / 1000.0,
            v.expires_in_ms as f64 / 1000.0
        );
        shown.push(json!({
            "worker": w, "proto": v.key.proto, "from": from, "to": to, "state": v.state(),
            "transient": v.transient,
            "table_index": v.key.table,
            "idle_ms": v.idle_ms, "expires_in_ms": v.expires_in_ms,
        }));
    }
    Ok(Output::Shown(
        text,
        json!({
            "workers": workers,
            "per_worker": sessions.per_worker(),
            "per_source": sessions.per_source(),
            "sessions": shown,
            "timeouts": {
                "tcp_established": t.tcp_established, "tcp_transient": t.tcp_transient,
                "udp": t.udp, "icmp": t.icmp, "other": t.other,
            },
        }),
    ))
}
