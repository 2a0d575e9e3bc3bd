//! The routing commands: addresses, routes, neighbours, and what the FIB shows.

use super::cli::{Arg, Args, Command, Output};
use super::exec::Control;
use crate::dataplane::Dataplane;
use crate::fib::parse::parse_prefix;
use crate::router::{parse_interface_address, NeighborLearn, NextHopSpec, RouteView, Router};
use crate::wire::MacAddress;
use serde_json::json;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

const FIB_SYNTAX: &str = "[<ADDR>|<PREFIX>|summary]";

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["show", "ip", "fib"],
        syntax: FIB_SYNTAX,
        help: "IPv4 routes (first 1000), the route an address takes, or counts, memory, load time",
        args: &[Arg::Optional("QUERY")],
        run: |c, a| show_fib(&c.dp, false, a.get("QUERY")),
    },
    Command {
        words: &["show", "ip6", "fib"],
        syntax: FIB_SYNTAX,
        help: "IPv6 routes",
        args: &[Arg::Optional("QUERY")],
        run: |c, a| show_fib(&c.dp, true, a.get("QUERY")),
    },
    Command {
        words: &["show", "ip|ip6", "neighbors|neighbours|arp"],
        syntax: "",
        help: "ARP and ND entries",
        args: &[],
        run: |c, _| Ok(show_neighbors(&c.dp)),
    },
    Command {
        words: &["set", "interface", "ip", "address"],
        syntax: "[del] <IF> <ADDR/LEN>",
        help: "add (or delete) an IPv4/IPv6 address: the interface routes",
        args: &[Arg::Flag("del"), Arg::Value("IF"), Arg::Value("ADDR")],
        run: set_address,
    },
    Command {
        words: &["ip|ip6", "route", "add"],
        syntax: "<PREFIX> via <ADDR> [<IF>] [via ...]",
        help: "static route; several via: ECMP; 'drop' instead of via: blackhole",
        args: &[Arg::Rest],
        run: route_add,
    },
    Command {
        words: &["ip|ip6", "route", "del|delete"],
        syntax: "<PREFIX>",
        help: "delete a static route",
        args: &[Arg::Rest],
        run: route_del,
    },
    Command {
        words: &["set", "ip", "neighbor|neighbour"],
        syntax: "[del] <IF> <ADDR> [<MAC>]",
        help: "static ARP/ND entry (never replaced by learning)",
        args: &[Arg::Rest],
        run: set_neighbor,
    },
];

/// Routes listed at most by a plain `show ip fib` (a full table is a million lines).
const SHOW_LIMIT: usize = 1000;

fn lock(dp: &Dataplane) -> MutexGuard<'_, Router> {
    dp.router.lock().unwrap_or_else(|p| p.into_inner())
}

fn index(r: &Router, dp: &Dataplane, name: &str) -> Result<u32, String> {
    r.interface_index(name).map_err(|_| {
        format!(
            "no interface named '{name}' (known: {})",
            dp.interfaces.names().join(", ")
        )
    })
}

/// Lock the router, make a change and publish it.
fn commit(
    dp: &Dataplane,
    change: impl FnOnce(&mut Router) -> Result<(), String>,
) -> Result<Output, String> {
    let mut r = lock(dp);
    change(&mut r)?;
    r.commit();
    Output::done()
}

fn set_address(c: &mut Control, a: &Args) -> Result<Output, String> {
    let dp = &c.dp;
    commit(dp, |r| {
        let itf = index(r, dp, a.value("IF"))?;
        let (addr, len) = parse_interface_address(a.value("ADDR"))?;
        if a.flag("del") {
            r.del_address(itf, addr, len)
        } else {
            r.add_address(itf, addr, len)
        }
    })
}

const ROUTE_USAGE: &str =
    "usage: ip route add <PREFIX> via <ADDR> [<IF>] [via <ADDR> [<IF>]]... | ip route add <PREFIX> drop | ip route del <PREFIX>";

/// One next hop of `ip route add`, as typed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RouteHop<'a> {
    Via {
        addr: &'a str,
        interface: Option<&'a str>,
    },
    Drop,
}

/// `PREFIX via ADDR [IF] [via ADDR [IF]]...` or `PREFIX drop`.
fn parse_route_add<'a>(w: &[&'a str]) -> Result<(&'a str, Vec<RouteHop<'a>>), String> {
    let Some((&prefix, mut rest)) = w.split_first() else {
        return Err(ROUTE_USAGE.into());
    };
    let mut hops = Vec::new();
    while let Some(&word) = rest.first() {
        if word == "via" {
            let addr = *rest.get(1).ok_or(ROUTE_USAGE)?;
            let interface = rest.get(2).filter(|x| **x != "via").copied();
            rest = &rest[2 + interface.is_some() as usize..];
            hops.push(RouteHop::Via { addr, interface });
        } else if ["drop", "blackhole"].contains(&word) {
            hops.push(RouteHop::Drop);
            rest = &rest[1..];
        } else {
            return Err(format!("unexpected '{word}' in route ({ROUTE_USAGE})"));
        }
    }
    if hops.is_empty() {
        return Err(ROUTE_USAGE.into());
    }
    Ok((prefix, hops))
}

fn route_add(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rest = a.rest();
    let (prefix, hops) = parse_route_add(&rest)?;
    commit(&c.dp, |r| {
        let prefix = parse_prefix(prefix)?;
        let hops = hops
            .iter()
            .map(|h| match *h {
                RouteHop::Drop => Ok(NextHopSpec::Drop),
                RouteHop::Via { addr, interface } => Ok(NextHopSpec::Via {
                    addr: addr
                        .parse()
                        .map_err(|_| format!("'{addr}' is not an address"))?,
                    interface: interface.map(str::to_string),
                }),
            })
            .collect::<Result<Vec<_>, String>>()?;
        r.add_route(prefix, &hops)
    })
}

fn route_del(c: &mut Control, a: &Args) -> Result<Output, String> {
    let [prefix] = a.rest()[..] else {
        return Err(ROUTE_USAGE.into());
    };
    commit(&c.dp, |r| r.del_route(parse_prefix(prefix)?))
}

/// `[del] IF ADDR [MAC]`: a MAC to set, none to delete. Returns (interface, address, mac).
fn parse_neighbor<'a>(w: &[&'a str]) -> Result<(&'a str, &'a str, Option<&'a str>), String> {
    match w {
        [name, ip, mac] if *name != "del" => Ok((name, ip, Some(mac))),
        ["del", name, ip] => Ok((name, ip, None)),
        _ => Err("usage: set ip neighbor [del] <IF> <ADDR> [<MAC>]".into()),
    }
}

fn set_neighbor(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rest = a.rest();
    let (name, ip, mac) = parse_neighbor(&rest)?;
    let dp = &c.dp;
    commit(dp, |r| {
        let itf = index(r, dp, name)?;
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| format!("'{ip}' is not an address"))?;
        match mac {
            Some(mac) => {
                let mac: MacAddress = mac
                    .parse()
                    .map_err(|_| format!("'{mac}' is not a MAC address"))?;
                r.set_static_neighbor(NeighborLearn {
                    interface: itf,
                    ip,
                    mac,
                })
                .map(|_| ())
            }
            None => r.del_neighbor(itf, ip),
        }
    })
}

fn route_line(t: &mut String, v: &RouteView) {
    let source = serde_json::to_value(v.source).unwrap_or_default();
    let _ = writeln!(
        t,
        "{:<44} {:<10} {}",
        v.prefix,
        source.as_str().unwrap_or(""),
        v.paths.join(", ")
    );
}

/// `show ip fib` / `show ip6 fib`.
fn show_fib(dp: &Dataplane, v6: bool, query: Option<&str>) -> Result<Output, String> {
    let mut r = lock(dp);
    match query {
        Some("summary") => {
            let s = r.summary();
            let mut t = String::new();
            let _ = writeln!(
                t,
                "IPv4 routes: {}   IPv6 routes: {}",
                s.v4_routes, s.v6_routes
            );
            for (src, n) in &s.by_source {
                let name = serde_json::to_value(src).unwrap_or_default();
                let _ = writeln!(t, "  {:<12}{n}", name.as_str().unwrap_or(""));
            }
            let _ = writeln!(
                t,
                "adjacencies: {}   neighbours: {}",
                s.adjacencies, s.neighbors
            );
            let m = s.memory;
            let _ = writeln!(
                t,
                "memory: {} (IPv4 trie {}: {} nodes, {} leaves; IPv6 trie {}: {} nodes, {} leaves; route tables {}; replaced tables still read {})",
                size(m.total()),
                size(m.v4.bytes),
                m.v4.nodes,
                m.v4.leaves,
                size(m.v6.bytes),
                m.v6.nodes,
                m.v6.leaves,
                size(m.routes),
                size(m.retired)
            );
            if let Some(f) = &s.route_file {
                let _ = writeln!(
                    t,
                    "route file: {f}: {} routes loaded in {:.3} s",
                    s.route_file_routes, s.load_seconds
                );
            }
            let mut v = serde_json::to_value(&s).unwrap_or_default();
            v["memory_total"] = json!(m.total());
            Ok(Output::Shown(t, v))
        }
        Some(q) => {
            let found = r.route_for(q)?;
            let mut t = String::new();
            match &found {
                Some(v) => route_line(&mut t, v),
                None => t.push_str("no route\n"),
            }
            Ok(Output::Shown(t, json!({ "route": found })))
        }
        None => {
            let (routes, total) = r.routes(v6, SHOW_LIMIT);
            let mut t = String::new();
            let _ = writeln!(t, "{:<44} {:<10} Paths", "Prefix", "Source");
            for v in &routes {
                route_line(&mut t, v);
            }
            if total > routes.len() {
                let _ = writeln!(
                    t,
                    "... {} more routes (show ip fib <ADDR> for one, summary for counts)",
                    total - routes.len()
                );
            }
            Ok(Output::Shown(
                t,
                json!({ "total": total, "routes": routes }),
            ))
        }
    }
}

/// Bytes as KiB below 1 MiB (an empty FIB is a few KiB), else MiB.
fn size(b: usize) -> String {
    if b < 1 << 20 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
    }
}

/// `show ip neighbors`.
fn show_neighbors(dp: &Dataplane) -> Output {
    let list = lock(dp).neighbors();
    let refused = dp.learns_refused.load(Ordering::Relaxed);
    let mut t = format!(
        "{:<16}{:<40}{:<20}{}\n",
        "Interface", "Address", "MAC", "Flags"
    );
    for n in &list {
        let _ = writeln!(
            t,
            "{:<16}{:<40}{:<20}{}",
            n.interface,
            n.ip.to_string(),
            n.mac,
            if n.static_entry { "static" } else { "dynamic" }
        );
    }
    if refused > 0 {
        let _ = writeln!(t, "learns refused (off-link or table full): {refused}");
    }
    Output::Shown(t, json!({ "neighbors": list, "learns_refused": refused }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_grammar() {
        assert_eq!(
            parse_route_add(&["10.0.0.0/8", "via", "192.0.2.2", "d0", "via", "192.0.2.3"]),
            Ok((
                "10.0.0.0/8",
                vec![
                    RouteHop::Via {
                        addr: "192.0.2.2",
                        interface: Some("d0")
                    },
                    RouteHop::Via {
                        addr: "192.0.2.3",
                        interface: None
                    },
                ]
            ))
        );
        assert_eq!(
            parse_route_add(&["10.0.0.0/8", "drop"]),
            Ok(("10.0.0.0/8", vec![RouteHop::Drop]))
        );
        for bad in [&["10.0.0.0/8"][..], &["10.0.0.0/8", "via"], &[]] {
            assert_eq!(
                parse_route_add(bad),
                Err(ROUTE_USAGE.to_string()),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_route_add(&["10.0.0.0/8", "through", "x"]),
            Err(format!("unexpected 'through' in route ({ROUTE_USAGE})"))
        );
    }

    #[test]
    fn neighbor_grammar() {
        let mac = "02:00:00:00:00:01";
        assert_eq!(
            parse_neighbor(&["d0", "192.0.2.2", mac]),
            Ok(("d0", "192.0.2.2", Some(mac)))
        );
        assert_eq!(
            parse_neighbor(&["del", "d0", "192.0.2.2"]),
            Ok(("d0", "192.0.2.2", None))
        );
        for bad in [&["d0", "1.2.3.4"][..], &["del", "d0", "1.2.3.4", mac]] {
            assert!(parse_neighbor(bad).is_err(), "{bad:?}");
        }
    }
}
