//! The NAT44 commands, in VPP's words: interfaces' roles, the pool, static mappings, and
//! what the workers hold.

use super::config::{parse_endpoint, parse_protocol, parse_range};
use super::control::Nat44Control;
use super::packet::proto_name;
use super::{Role, StaticMapping};
use crate::control::cli::{Arg, Args, Command, Effect, Output};
use crate::control::exec::Control;
use serde_json::json;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::MutexGuard;
use std::time::Duration;

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["set", "interface", "nat44"],
        effect: Effect::Changes,
        syntax: "in|out <IF> [del]",
        help: "make IF a NAT44 inside or outside interface (del: neither); every session is \
               closed",
        example: "set interface nat44 out d1",
        args: &[
            Arg::Flag("del"),
            Arg::Choice("ROLE", &["in", "out"]),
            Arg::Value("IF"),
        ],
        run: set_interface,
    },
    Command {
        words: &["nat44", "add", "address"],
        effect: Effect::Changes,
        syntax: "<A>[-<B>]",
        help: "add outside addresses to the pool (without any, each outside interface's own \
               address is used); every session is closed",
        example: "nat44 add address 203.0.113.8-203.0.113.15",
        args: &[Arg::Value("RANGE")],
        run: |c, a| set_addresses(c, a, false),
    },
    Command {
        words: &["nat44", "del|delete", "address"],
        effect: Effect::Changes,
        syntax: "<A>[-<B>]",
        help: "remove outside addresses from the pool; every session is closed",
        example: "nat44 del address 203.0.113.8-203.0.113.15",
        args: &[Arg::Value("RANGE")],
        run: |c, a| set_addresses(c, a, true),
    },
    Command {
        words: &["nat44", "add", "static", "mapping"],
        effect: Effect::Changes,
        syntax: "tcp|udp local <A> <P> external <A> <P>",
        help: "a port forward: the external address and port lead to the local ones",
        example: "nat44 add static mapping tcp local 10.0.0.3 8080 external 203.0.113.1 80",
        args: &[Arg::Rest],
        run: |c, a| set_static(c, a, false),
    },
    Command {
        words: &["nat44", "del|delete", "static", "mapping"],
        effect: Effect::Changes,
        syntax: "tcp|udp local <A> <P> external <A> <P>",
        help: "remove a port forward",
        example: "nat44 del static mapping tcp local 10.0.0.3 8080 external 203.0.113.1 80",
        args: &[Arg::Rest],
        run: |c, a| set_static(c, a, true),
    },
    Command {
        words: &["set", "nat44", "timeout"],
        effect: Effect::Changes,
        syntax: "udp|tcp-established|tcp-transitory|icmp <SECONDS>",
        help: "how long an idle session of the kind lives (1 s to 30 days); sessions stay \
               open and expire by the new value",
        example: "set nat44 timeout udp 120",
        args: &[
            Arg::Choice(
                "KIND",
                &["udp", "tcp-established", "tcp-transitory", "icmp"],
            ),
            Arg::Value("SECONDS"),
        ],
        run: set_timeout,
    },
    Command {
        words: &["set", "nat44", "limits"],
        effect: Effect::Changes,
        syntax: "sessions <N> [per-host <M>]",
        help: "the daemon's NAT44 sessions (1024 to 16777216, split over the workers) and \
               those of one inside address on one worker; open sessions stay, and above a lowered \
               limit nothing new opens until the table falls below it",
        example: "set nat44 limits sessions 1048576 per-host 4096",
        args: &[Arg::Rest],
        run: set_limits,
    },
    Command {
        words: &["show", "nat44", "sessions"],
        effect: Effect::Reads,
        syntax: "[inside <A>]",
        help: "the workers' NAT44 sessions (of inside address A): protocol, inside, outside \
               and remote endpoints, state, age and idle seconds, worker (at most 10000 a \
               worker)",
        example: "show nat44 sessions inside 198.18.0.2",
        args: &[Arg::Rest],
        run: show_sessions,
    },
    Command {
        words: &["show", "nat44", "summary"],
        effect: Effect::Reads,
        syntax: "",
        help: "NAT44: interfaces, pool, static mappings, timeouts, per worker the sessions by \
               protocol, created, expired and the memory its table holds, and the ports in use \
               per outside address (refreshed by each worker every 100 ms)",
        example: "show nat44 summary",
        args: &[],
        run: show_summary,
    },
];

fn lock(c: &Control) -> MutexGuard<'_, Nat44Control> {
    c.dp.nat44.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_interface(c: &mut Control, a: &Args) -> Result<Output, String> {
    let itf = c.interface(a.value("IF"))?.clone();
    let role = match a.value("ROLE") {
        "in" => Role::Inside,
        _ => Role::Outside,
    };
    let mut nat = lock(c);
    let now = nat
        .roles()
        .iter()
        .find(|(i, _)| *i == itf.index)
        .map(|(_, r)| *r);
    let change = if a.flag("del") {
        if now != Some(role) {
            return Err(format!(
                "{} is not a NAT44 {} interface",
                itf.name,
                role.name()
            ));
        }
        None
    } else {
        Some(role)
    };
    nat.set_role(itf.index, change)?;
    Output::done()
}

fn set_addresses(c: &mut Control, a: &Args, del: bool) -> Result<Output, String> {
    let addrs = parse_range(a.value("RANGE"))?;
    lock(c).set_addresses(&addrs, del)?;
    Output::done()
}

fn set_static(c: &mut Control, a: &Args, del: bool) -> Result<Output, String> {
    let rest = a.rest();
    let [proto, "local", la, lp, "external", ea, ep] = rest.as_slice() else {
        return Err(format!(
            "expected 'tcp|udp local A P external A P', got '{}'",
            rest.join(" ")
        ));
    };
    let m = StaticMapping {
        proto: parse_protocol(proto)?,
        local: parse_endpoint(&format!("{la}:{lp}"))?,
        external: parse_endpoint(&format!("{ea}:{ep}"))?,
    };
    lock(c).set_static(m, del)?;
    Output::done()
}

fn number(word: &str, what: &str) -> Result<u64, String> {
    word.parse()
        .map_err(|_| format!("{what} '{word}' is not a whole number"))
}

fn set_timeout(c: &mut Control, a: &Args) -> Result<Output, String> {
    let secs = number(a.value("SECONDS"), "SECONDS")?;
    lock(c).set_timeout(a.value("KIND"), secs)?;
    Output::done()
}

fn set_limits(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rest = a.rest();
    let (n, m) = match rest.as_slice() {
        ["sessions", n] => (number(n, "sessions")?, None),
        ["sessions", n, "per-host", m] => (number(n, "sessions")?, Some(number(m, "per-host")?)),
        _ => {
            return Err(format!(
                "expected 'sessions N [per-host M]', got '{}'",
                rest.join(" ")
            ))
        }
    };
    lock(c).set_limits(n, m)?;
    Output::done()
}

fn show_sessions(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rest = a.rest();
    let inside = match rest.as_slice() {
        [] => None,
        ["inside", addr] => Some(u32::from(
            addr.parse::<Ipv4Addr>()
                .map_err(|_| format!("'{addr}' is not an IPv4 address"))?,
        )),
        _ => return Err(format!("expected 'inside A', got '{}'", rest.join(" "))),
    };
    let shared = lock(c).shared().clone();
    let (rows, silent) = shared.sessions(inside, Duration::from_secs(1));
    let mut text = format!(
        "{:<5} {:<21} {:<21} {:<21} {:<11} {:>7} {:>6} {:>6}\n",
        "proto", "inside", "outside", "remote", "state", "age", "idle", "worker"
    );
    for r in &rows {
        let _ = writeln!(
            text,
            "{:<5} {:<21} {:<21} {:<21} {:<11} {:>7} {:>6} {:>6}",
            r.protocol, r.inside, r.outside, r.remote, r.state, r.age_s, r.idle_s, r.worker
        );
    }
    for w in &silent {
        let _ = writeln!(
            text,
            "worker {w}: did not answer within 1 s (busy or stalled)"
        );
    }
    Ok(Output::Shown(
        text,
        json!({ "sessions": rows, "workers_not_answering": silent }),
    ))
}

fn show_summary(c: &mut Control, _: &Args) -> Result<Output, String> {
    let nat = lock(c);
    let cfg = &nat.config;
    let mut text = String::new();
    let mut roles = Vec::new();
    for (i, role) in nat.roles() {
        let name =
            c.dp.interfaces
                .list
                .get(i as usize)
                .map_or(format!("#{i}"), |x| x.name.clone());
        let _ = writeln!(text, "interface {name}: {}", role.name());
        roles.push(json!({ "interface": name, "role": role.name() }));
    }
    let pool: Vec<String> = cfg
        .addresses
        .iter()
        .map(|a| Ipv4Addr::from(*a).to_string())
        .collect();
    let _ = writeln!(
        text,
        "pool: {}",
        if pool.is_empty() {
            "none (the outside interfaces' addresses)".to_string()
        } else {
            pool.join(" ")
        }
    );
    let _ = writeln!(text, "static mappings: {}", cfg.statics.len());
    let t = cfg.timeouts;
    let _ = writeln!(
        text,
        "timeouts: udp {} s, tcp established {} s, tcp transitory {} s, icmp {} s",
        t.udp, t.tcp_established, t.tcp_transitory, t.icmp
    );
    let _ = writeln!(
        text,
        "limits: {} sessions, {} per inside host per worker",
        cfg.max_sessions, cfg.per_host
    );
    let mut workers = Vec::new();
    let mut total = 0;
    for (w, slot) in nat.shared().workers.iter().enumerate() {
        let s = &slot.stats;
        let live: Vec<u64> = s.live.iter().map(|l| l.load(Relaxed)).collect();
        let sessions: u64 = live.iter().sum();
        total += sessions;
        let memory = s.memory.load(Relaxed);
        let _ = writeln!(
            text,
            "worker {w}: {sessions} sessions (tcp {}, udp {}, icmp {}), created {}, expired {}, \
             memory {:.1} MiB",
            live[0],
            live[1],
            live[2],
            s.created.load(Relaxed),
            s.expired.load(Relaxed),
            memory as f64 / (1 << 20) as f64
        );
        workers.push(json!({
            "worker": w, "sessions": sessions, "tcp": live[0], "udp": live[1], "icmp": live[2],
            "created": s.created.load(Relaxed), "expired": s.expired.load(Relaxed),
            "memory_bytes": memory,
        }));
    }
    let _ = writeln!(text, "sessions: {total}");
    let ports: Vec<serde_json::Value> = nat
        .shared()
        .ports_in_use()
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .map(|(a, n)| {
            let _ = writeln!(text, "ports in use on {}: {n}", Ipv4Addr::from(a));
            json!({ "address": Ipv4Addr::from(a).to_string(), "ports": n })
        })
        .collect();
    let ep = |(a, p): (u32, u16)| format!("{}:{p}", Ipv4Addr::from(a));
    let statics: Vec<_> = cfg
        .statics
        .iter()
        .map(|m| {
            json!({ "protocol": proto_name(m.proto), "local": ep(m.local),
                    "external": ep(m.external) })
        })
        .collect();
    Ok(Output::Shown(
        text,
        json!({
            "interfaces": roles, "pool": pool, "static_mappings": cfg.statics.len(),
            "timeouts": { "udp": t.udp, "tcp_established": t.tcp_established,
                          "tcp_transitory": t.tcp_transitory, "icmp": t.icmp },
            "statics": statics, "max_sessions": cfg.max_sessions,
            "max_sessions_per_host": cfg.per_host, "sessions": total, "workers": workers,
            "ports_in_use": ports,
        }),
    ))
}
