//! The routing commands: addresses, routes, neighbours, and what the FIB shows.

use crate::control::cli::{Arg, Args, Command, Effect, Output};
use crate::control::exec::Control;
use crate::dataplane::Dataplane;
use crate::fib::parse::parse_prefix;
use crate::router::{parse_interface_address, NeighborLearn, NextHopSpec, RouteView, Router};
use crate::wire::MacAddress;
use serde_json::json;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

const FIB_SYNTAX: &str = "[table <ID>] [<ADDR>|<PREFIX>|summary]";

pub const COMMANDS: &[Command] = &[
    Command {
        words: &["show", "ip", "fib"],
        effect: Effect::Reads,
        syntax: FIB_SYNTAX,
        help: "IPv4 routes (first 1000), the route an address takes, or counts, memory, load time",
        example: "show ip fib 198.19.1.1",
        args: &[Arg::Rest],
        run: |c, a| show_fib(&c.dp, false, &a.rest()),
    },
    Command {
        words: &["show", "ip6", "fib"],
        effect: Effect::Reads,
        syntax: FIB_SYNTAX,
        help: "IPv6 routes",
        example: "show ip6 fib summary",
        args: &[Arg::Rest],
        run: |c, a| show_fib(&c.dp, true, &a.rest()),
    },
    Command {
        words: &["show", "ip|ip6", "table|tables"],
        effect: Effect::Reads,
        syntax: "",
        help: "routing tables (VRFs): routes, interfaces, memory",
        example: "show ip table",
        args: &[],
        run: |c, _| Ok(show_tables(&c.dp)),
    },
    Command {
        words: &["ip|ip6", "table", "add"],
        effect: Effect::Changes,
        syntax: "<ID>",
        help: "make routing table ID (a VRF, both families; no error if it exists)",
        example: "ip table add 10",
        args: &[Arg::Value("ID")],
        run: |c, a| commit(&c.dp, |r| r.add_table(table_id(a.value("ID"))?)),
    },
    Command {
        words: &["ip|ip6", "table", "del|delete"],
        effect: Effect::Changes,
        syntax: "<ID>",
        help: "remove routing table ID and its routes (not while an interface is in it)",
        example: "ip table del 10",
        args: &[Arg::Value("ID")],
        run: |c, a| commit(&c.dp, |r| r.del_table(table_id(a.value("ID"))?)),
    },
    Command {
        words: &["set", "interface", "ip", "table"],
        effect: Effect::Changes,
        syntax: "<IF> <ID>",
        help: "route the interface's IPv4 in table ID (it must have no IPv4 address)",
        example: "set interface ip table d2 10",
        args: &[Arg::Value("IF"), Arg::Value("ID")],
        run: |c, a| set_table(c, a, false),
    },
    Command {
        words: &["set", "interface", "ip6", "table"],
        effect: Effect::Changes,
        syntax: "<IF> <ID>",
        help: "route the interface's IPv6 in table ID (it must have no IPv6 address)",
        example: "set interface ip6 table d2 10",
        args: &[Arg::Value("IF"), Arg::Value("ID")],
        run: |c, a| set_table(c, a, true),
    },
    Command {
        words: &["show", "ip|ip6", "neighbors|neighbours|arp"],
        effect: Effect::Reads,
        syntax: "",
        help: "ARP and ND entries",
        example: "show ip neighbors",
        args: &[],
        run: |c, _| Ok(show_neighbors(&c.dp)),
    },
    Command {
        words: &["set", "interface", "ip", "address"],
        effect: Effect::Changes,
        syntax: "[del] <IF> <ADDR/LEN>",
        help: "add (or delete) an IPv4/IPv6 address: the interface routes",
        example: "set interface ip address d0 192.0.2.1/24",
        args: &[Arg::Flag("del"), Arg::Value("IF"), Arg::Value("ADDR")],
        run: set_address,
    },
    Command {
        words: &["ip|ip6", "route", "add"],
        effect: Effect::Changes,
        syntax: "<PREFIX> [table <ID>] via <ADDR> [<IF>] [next-hop-table <ID>] [via ...]",
        help: "static route; several via: ECMP; 'drop' instead of via: blackhole; next-hop-table: the next hop is in another table",
        example: "ip route add 198.19.0.0/16 via 198.51.100.2 d1 via 198.51.100.3 d1",
        args: &[Arg::Rest],
        run: route_add,
    },
    Command {
        words: &["ip|ip6", "route", "del|delete"],
        effect: Effect::Changes,
        syntax: "<PREFIX> [table <ID>]",
        help: "delete a static route",
        example: "ip route del 198.19.0.0/16",
        args: &[Arg::Rest],
        run: route_del,
    },
    Command {
        words: &["set", "ip", "neighbor|neighbour"],
        effect: Effect::Changes,
        syntax: "[del] <IF> <ADDR> [<MAC>]",
        help: "static ARP/ND entry (never replaced by learning)",
        example: "set ip neighbor d1 198.51.100.2 02:00:00:00:00:02",
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
    let (addr, len) = parse_interface_address(a.value("ADDR"))?;
    let add = !a.flag("del");
    let mut itf = 0;
    let done = commit(dp, |r| {
        itf = index(r, dp, a.value("IF"))?;
        if add {
            r.add_address(itf, addr, len)
        } else {
            r.del_address(itf, addr, len)
        }
    })?;
    // The interface's lcp tap follows, so that Linux keeps accepting what is punted to it.
    // Linux refusing it (IPv6 off in the tap's namespace) leaves sluice's change standing.
    if let Some(lcp) = &dp.lcp {
        if let Err(e) = lcp.mirror_address(itf, addr, len, add) {
            return Ok(Output::Text(format!(
                "done in sluice; not mirrored to Linux: {e}\n"
            )));
        }
    }
    Ok(done)
}

const ROUTE_USAGE: &str =
    "usage: ip route add <PREFIX> [table <ID>] via <ADDR> [<IF>] [next-hop-table <ID>] [via ...]... | ip route add <PREFIX> [table <ID>] drop | ip route del <PREFIX> [table <ID>]";

/// A table id as typed.
fn table_id(w: &str) -> Result<u32, String> {
    w.parse()
        .map_err(|_| format!("'{w}' is not a table id (0 to 4294967295)"))
}

/// One next hop of `ip route add`, as typed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RouteHop<'a> {
    Via {
        addr: &'a str,
        interface: Option<&'a str>,
        table: Option<u32>,
    },
    Drop,
}

/// Takes `table ID` off the front of `rest`, if it is there.
fn take_table(rest: &mut &[&str], word: &str) -> Result<Option<u32>, String> {
    if rest.first() != Some(&word) {
        return Ok(None);
    }
    let id = rest
        .get(1)
        .ok_or_else(|| format!("'{word}' needs a table id ({ROUTE_USAGE})"))?;
    let id = table_id(id)?;
    *rest = &rest[2..];
    Ok(Some(id))
}

/// `PREFIX [table ID] via ADDR [IF] [next-hop-table ID] [via ...]...` or
/// `PREFIX [table ID] drop`: the prefix, the table (0 when not given) and the hops.
fn parse_route_add<'a>(w: &[&'a str]) -> Result<(&'a str, u32, Vec<RouteHop<'a>>), String> {
    let Some((&prefix, mut rest)) = w.split_first() else {
        return Err(ROUTE_USAGE.into());
    };
    let table = take_table(&mut rest, "table")?.unwrap_or(0);
    let mut hops = Vec::new();
    while let Some(&word) = rest.first() {
        if word == "via" {
            let addr = *rest.get(1).ok_or(ROUTE_USAGE)?;
            let interface = rest
                .get(2)
                .filter(|x| !["via", "next-hop-table"].contains(*x))
                .copied();
            rest = &rest[2 + interface.is_some() as usize..];
            let table = take_table(&mut rest, "next-hop-table")?;
            hops.push(RouteHop::Via {
                addr,
                interface,
                table,
            });
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
    Ok((prefix, table, hops))
}

fn route_add(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rest = a.rest();
    let (prefix, table, hops) = parse_route_add(&rest)?;
    commit(&c.dp, |r| {
        let prefix = parse_prefix(prefix)?;
        let hops = hops
            .iter()
            .map(|h| match *h {
                RouteHop::Drop => Ok(NextHopSpec::Drop),
                RouteHop::Via {
                    addr,
                    interface,
                    table,
                } => Ok(NextHopSpec::Via {
                    addr: addr
                        .parse()
                        .map_err(|_| format!("'{addr}' is not an address"))?,
                    interface: interface.map(str::to_string),
                    table,
                }),
            })
            .collect::<Result<Vec<_>, String>>()?;
        r.add_route(table, prefix, &hops)
    })?;
    route_event(c, "added", prefix, table);
    Output::done()
}

/// The `route` event of a change made here (source `cli`, or `config` from `apply`).
fn route_event(c: &Control, event: &str, prefix: &str, table: u32) {
    if let Ok(p) = parse_prefix(prefix) {
        crate::events::route(&c.dp.events, event, p, table, c.source);
    }
}

fn route_del(c: &mut Control, a: &Args) -> Result<Output, String> {
    let rest = a.rest();
    let Some((&prefix, mut more)) = rest.split_first() else {
        return Err(ROUTE_USAGE.into());
    };
    let table = take_table(&mut more, "table")?.unwrap_or(0);
    if !more.is_empty() {
        return Err(ROUTE_USAGE.into());
    }
    commit(&c.dp, |r| r.del_route(table, parse_prefix(prefix)?))?;
    route_event(c, "removed", prefix, table);
    Output::done()
}

/// `set interface ip table IF ID` / `set interface ip6 table IF ID`.
fn set_table(c: &mut Control, a: &Args, v6: bool) -> Result<Output, String> {
    let dp = &c.dp;
    commit(dp, |r| {
        let itf = index(r, dp, a.value("IF"))?;
        r.set_interface_table(itf, v6, table_id(a.value("ID"))?)
    })
}

/// `show ip table`.
fn show_tables(dp: &Dataplane) -> Output {
    let tables = lock(dp).table_views();
    let mut t = format!(
        "{:<10} {:>10} {:>10} {:>10}  {}\n",
        "Table", "IPv4", "IPv6", "Memory", "Interfaces (ip4 / ip6)"
    );
    for v in &tables {
        let _ = writeln!(
            t,
            "{:<10} {:>10} {:>10} {:>10}  {} / {}",
            v.id,
            v.v4_routes,
            v.v6_routes,
            size(v.memory_bytes),
            v.ip4_interfaces.join(","),
            v.ip6_interfaces.join(",")
        );
    }
    Output::Shown(t, json!({ "tables": tables }))
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
                r.set_static_neighbor(NeighborLearn::request(itf, ip, mac))
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

/// `show ip fib` / `show ip6 fib`: `[table ID] [QUERY]`.
fn show_fib(dp: &Dataplane, v6: bool, words: &[&str]) -> Result<Output, String> {
    let mut rest = words;
    let table = take_table(&mut rest, "table")?.unwrap_or(0);
    let query = match rest {
        [] => None,
        [q] => Some(*q),
        _ => {
            return Err(format!(
                "usage: show ip fib {FIB_SYNTAX} (unexpected '{}')",
                rest[1..].join(" ")
            ))
        }
    };
    let mut r = lock(dp);
    match query {
        Some("summary") => {
            let s = r.summary(table)?;
            let mut t = String::new();
            if s.tables > 1 {
                let _ = writeln!(
                    t,
                    "table {} of {} (all tables: {})",
                    s.table,
                    s.tables,
                    size(s.all_tables_bytes)
                );
            }
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
            let found = r.route_for(table, q)?;
            let mut t = String::new();
            match &found {
                Some(v) => route_line(&mut t, v),
                None => t.push_str("no route\n"),
            }
            Ok(Output::Shown(t, json!({ "route": found })))
        }
        None => {
            let (routes, total) = r.routes(table, v6, SHOW_LIMIT)?;
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
    let (list, table) = {
        let r = lock(dp);
        (r.neighbors(), r.neighbor_table())
    };
    let refused = dp.learns_refused.load(Ordering::Relaxed);
    let mut t = format!(
        "{:<16}{:<40}{:<20}{:<12}{:>9}  {}\n",
        "Interface", "Address", "MAC", "State", "Age(s)", "Flags"
    );
    for n in &list {
        let _ = writeln!(
            t,
            "{:<16}{:<40}{:<20}{:<12}{:>9.1}  {}",
            n.interface,
            n.ip.to_string(),
            if n.mac.is_empty() { "-" } else { &n.mac },
            n.state.name(),
            n.age,
            if n.static_entry { "static" } else { "dynamic" }
        );
    }
    let _ = writeln!(
        t,
        "{} of {} entries; evicted {}, aged out or failed {}, unsolicited answers ignored {}, \
         refused (full) {}",
        table.entries,
        table.max_entries,
        table.evicted,
        table.expired,
        table.unsolicited,
        table.full
    );
    if refused > 0 {
        let _ = writeln!(
            t,
            "learns refused (off-link, unsolicited or table full): {refused}"
        );
    }
    Output::Shown(
        t,
        json!({ "neighbors": list, "table": table, "learns_refused": refused }),
    )
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
                0,
                vec![
                    RouteHop::Via {
                        addr: "192.0.2.2",
                        interface: Some("d0"),
                        table: None
                    },
                    RouteHop::Via {
                        addr: "192.0.2.3",
                        interface: None,
                        table: None
                    },
                ]
            ))
        );
        assert_eq!(
            parse_route_add(&["10.0.0.0/8", "drop"]),
            Ok(("10.0.0.0/8", 0, vec![RouteHop::Drop]))
        );
        // A route of table 7 whose first next hop is in table 2 (inter-VRF).
        let w = "10.0.0.0/8 table 7 via 192.0.2.2 next-hop-table 2 via 192.0.2.3 d1";
        let w: Vec<&str> = w.split(' ').collect();
        assert_eq!(
            parse_route_add(&w),
            Ok((
                "10.0.0.0/8",
                7,
                vec![
                    RouteHop::Via {
                        addr: "192.0.2.2",
                        interface: None,
                        table: Some(2)
                    },
                    RouteHop::Via {
                        addr: "192.0.2.3",
                        interface: Some("d1"),
                        table: None
                    },
                ]
            ))
        );
        assert_eq!(
            parse_route_add(&["10.0.0.0/8", "table", "x", "drop"]),
            Err("'x' is not a table id (0 to 4294967295)".into())
        );
        assert!(parse_route_add(&["10.0.0.0/8", "table"]).is_err());
        assert!(parse_route_add(&["10.0.0.0/8", "via", "1.2.3.4", "next-hop-table"]).is_err());
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
