//! The routing commands: addresses, routes, neighbours, and what the FIB shows.

use super::cli::{Command, RouteHop};
use crate::dataplane::Dataplane;
use crate::fib::parse::parse_prefix;
use crate::router::{parse_interface_address, NeighborLearn, NextHopSpec, RouteView, Router};
use crate::wire::MacAddress;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

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

/// Carry out a routing change and publish it.
pub fn change(dp: &Dataplane, cmd: &Command) -> Result<(), String> {
    match cmd {
        Command::SetInterfaceAddress { name, address, del } => {
            let mut r = lock(dp);
            (|| {
                let itf = index(&r, dp, name)?;
                let (addr, len) = parse_interface_address(address)?;
                if *del {
                    r.del_address(itf, addr, len)
                } else {
                    r.add_address(itf, addr, len)
                }?;
                r.commit();
                Ok(())
            })()
        }
        Command::IpRouteAdd { prefix, hops } => {
            let mut r = lock(dp);
            (|| {
                let prefix = parse_prefix(prefix)?;
                let hops = hops
                    .iter()
                    .map(|h| match h {
                        RouteHop::Drop => Ok(NextHopSpec::Drop),
                        RouteHop::Via { addr, interface } => Ok(NextHopSpec::Via {
                            addr: addr
                                .parse()
                                .map_err(|_| format!("'{addr}' is not an address"))?,
                            interface: interface.clone(),
                        }),
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                r.add_route(prefix, &hops)?;
                r.commit();
                Ok(())
            })()
        }
        Command::IpRouteDel { prefix } => {
            let mut r = lock(dp);
            (|| {
                r.del_route(parse_prefix(prefix)?)?;
                r.commit();
                Ok(())
            })()
        }
        Command::SetIpNeighbor { name, ip, mac } => {
            let mut r = lock(dp);
            (|| {
                let itf = index(&r, dp, name)?;
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
                        })?;
                    }
                    None => r.del_neighbor(itf, ip)?,
                }
                r.commit();
                Ok(())
            })()
        }
        _ => Err("not a routing command".into()),
    }
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
pub fn show_fib(dp: &Dataplane, v6: bool, query: Option<&str>) -> Result<(String, Value), String> {
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
                "memory: {:.1} MiB (IPv4 table {:.1} MiB x2, IPv6 table {:.1} MiB x2, builders {:.1} MiB, route tables {:.1} MiB)",
                mib(m.total()),
                mib(m.v4_table),
                mib(m.v6_table),
                mib(m.v4_builder + m.v6_builder),
                mib(m.routes)
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
            Ok((t, v))
        }
        Some(q) => {
            let found = r.route_for(q)?;
            let mut t = String::new();
            match &found {
                Some(v) => route_line(&mut t, v),
                None => t.push_str("no route\n"),
            }
            Ok((t, json!({ "route": found })))
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
            Ok((t, json!({ "total": total, "routes": routes })))
        }
    }
}

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// `show ip neighbors`.
pub fn show_neighbors(dp: &Dataplane) -> (String, Value) {
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
    (t, json!({ "neighbors": list, "learns_refused": refused }))
}
