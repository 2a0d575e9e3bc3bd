//! Routing's config sections: [[ip-table]] and [[route]] (keys and checks in
//! `config/table.rs` and `config/route.rs`), written back from the running tables and
//! routes by `sluice ctl save`; `start` builds the router from them when the dataplane starts.

use crate::config::emit::Entry;
use crate::config::section::Saved;
use crate::config::Config;
use crate::control::save::{int, State};
use crate::router::{Router, SavedHop, SavedRoute};
use crate::wire::MacAddress;

/// [[ip-table]].
pub static IP_TABLE: Saved = Saved(&crate::router::config::table::SECTION, tables);

/// [[route]].
pub static ROUTE: Saved = Saved(&crate::router::config::route::ROUTE, routes);

/// [[ip-table]]: the tables besides 0 and the interfaces routing in them. A [[ip-table]]
/// binds both families, so an interface in different tables for IPv4 and IPv6 cannot be
/// saved.
fn tables(st: &State) -> Result<Vec<Entry>, String> {
    let views =
        st.c.dp
            .router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .table_views();
    let live = |names: &[String]| -> Vec<String> {
        names
            .iter()
            .filter(|n| st.names.iter().flatten().any(|l| l == *n))
            .cloned()
            .collect()
    };
    let mut out = Vec::new();
    for v in &views {
        let (four, six) = (live(&v.ip4_interfaces), live(&v.ip6_interfaces));
        if let Some(odd) = four
            .iter()
            .find(|n| !six.contains(n))
            .or_else(|| six.iter().find(|n| !four.contains(n)))
        {
            let (f4, f6) = views.iter().fold((0, 0), |acc, t| {
                (
                    if t.ip4_interfaces.contains(odd) {
                        t.id
                    } else {
                        acc.0
                    },
                    if t.ip6_interfaces.contains(odd) {
                        t.id
                    } else {
                        acc.1
                    },
                )
            });
            return Err(format!(
                "{odd} routes IPv4 in table {f4} and IPv6 in table {f6}; a config file puts \
                 both in one table ([[ip-table]]): set interface ip table / ip6 table alike \
                 before saving"
            ));
        }
        if v.id == 0 {
            continue;
        }
        let mut e = Entry::default();
        e.set("id", int(v.id));
        if !four.is_empty() {
            e.set("interfaces", four);
        }
        out.push(e);
    }
    Ok(out)
}

/// [[route]]: the static routes of the config and the CLI, next hops as resolved (a route
/// file's routes stay in [fib] route-file).
fn routes(st: &State) -> Result<Vec<Entry>, String> {
    let saved =
        st.c.dp
            .router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .saved_routes();
    saved.iter().map(route).collect()
}

/// One [[route]].
pub fn route(r: &SavedRoute) -> Result<Entry, String> {
    let mut e = Entry::default();
    e.set("prefix", r.prefix.to_string());
    if r.table != 0 {
        e.set("table", int(r.table));
    }
    let what = |why: &str| {
        let t = if r.table == 0 {
            String::new()
        } else {
            format!(" (table {})", r.table)
        };
        format!("route {}{t}: {why}", r.prefix)
    };
    if let Some(SavedHop::Other(kind)) = r.hops.iter().find(|h| matches!(h, SavedHop::Other(_))) {
        return Err(what(&format!("a path of kind {kind} cannot be written")));
    }
    let vias: Vec<(&str, std::net::IpAddr, u32, bool)> = r
        .hops
        .iter()
        .filter_map(|h| match h {
            SavedHop::Via {
                interface,
                addr,
                table,
                by_address,
            } => Some((interface.as_str(), *addr, *table, *by_address)),
            _ => None,
        })
        .collect();
    if vias.is_empty() {
        e.set("drop", true);
        return Ok(e);
    }
    if vias.len() != r.hops.len() {
        return Err(what(
            "it mixes drop with next hops, which a [[route]] cannot say",
        ));
    }
    let nh_table = vias[0].2;
    if vias.iter().any(|v| v.2 != nh_table) {
        return Err(what(
            "its next hops are in different tables; a [[route]] has one next-hop-table",
        ));
    }
    let one_interface = vias.iter().all(|v| v.0 == vias[0].0);
    if !one_interface && !vias.iter().all(|v| v.3) {
        return Err(what(
            "its next hops are on different interfaces, not all found by address; a \
             [[route]] names one interface for all of them",
        ));
    }
    let addrs: Vec<String> = vias.iter().map(|v| v.1.to_string()).collect();
    e.set("via", addrs);
    if one_interface {
        e.set("interface", vias[0].0);
    }
    if nh_table != r.table {
        e.set("next-hop-table", int(nh_table));
    }
    Ok(e)
}

/// The start step of routing: the router from the config, for interfaces `itfs` (name, MAC,
/// MTU by index): tables, interface addresses, static routes, the route file.
pub fn start(cfg: &Config, itfs: &[(String, MacAddress, u32)]) -> Result<Router, String> {
    let mut router = Router::new(itfs);
    router.set_neighbor_times(cfg.neighbors);
    // Tables and their interfaces first: an address's routes go into its interface's table.
    for t in &cfg.tables {
        router.add_table(t.id)?;
        for name in &t.interfaces {
            let itf = router.interface_index(name)?;
            for v6 in [false, true] {
                router
                    .set_interface_table(itf, v6, t.id)
                    .map_err(|e| format!("ip-table {}: {e}", t.id))?;
            }
        }
    }
    let addresses = cfg
        .interfaces
        .iter()
        .map(|i| (i.name.get_ref().clone(), &i.address))
        .chain(cfg.subinterfaces.iter().map(|s| (s.name(), &s.address)))
        .chain(cfg.bvis.iter().map(|b| (b.name(), &b.address)));
    for (i, (name, address)) in addresses.enumerate() {
        for a in address {
            let (addr, len) = crate::router::parse_interface_address(a.get_ref())?;
            router
                .add_address(i as u32, addr, len)
                .map_err(|e| format!("interface {name}: address {}: {e}", a.get_ref()))?;
        }
    }
    for r in &cfg.routes {
        router
            .add_route(r.table, r.prefix, &r.hops)
            .map_err(|e| format!("route {}: {e}", r.prefix))?;
    }
    if let Some(file) = &cfg.fib.route_file {
        let path = file.get_ref();
        let routes = crate::fib::parse::read_route_file(path).map_err(|e| e.to_string())?;
        router.load_routes(&path.display().to_string(), &routes)?;
    }
    router.commit();
    Ok(router)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::emit;
    use crate::fib::parse::parse_prefix;

    fn via(itf: &str, addr: &str, table: u32, by_address: bool) -> SavedHop {
        SavedHop::Via {
            interface: itf.into(),
            addr: addr.parse().unwrap(),
            table,
            by_address,
        }
    }

    fn written(r: &SavedRoute) -> Result<String, String> {
        let e = route(r)?;
        Ok(e.keys
            .iter()
            .map(|(k, v)| format!("{k} = {}", emit::value(v)))
            .collect::<Vec<_>>()
            .join("; "))
    }

    #[test]
    fn routes_as_written() {
        let r = |table, hops| SavedRoute {
            table,
            prefix: parse_prefix("10.0.0.0/8").unwrap(),
            hops,
        };
        assert_eq!(
            written(&r(0, vec![SavedHop::Drop])).unwrap(),
            "prefix = \"10.0.0.0/8\"; drop = true"
        );
        assert_eq!(
            written(&r(
                0,
                vec![
                    via("d0", "192.0.2.2", 0, false),
                    via("d0", "192.0.2.3", 0, false)
                ]
            ))
            .unwrap(),
            "prefix = \"10.0.0.0/8\"; via = [\"192.0.2.2\", \"192.0.2.3\"]; interface = \"d0\""
        );
        // ECMP over two interfaces: found by address, so no interface is written.
        assert_eq!(
            written(&r(
                7,
                vec![
                    via("d0", "192.0.2.2", 0, true),
                    via("d1", "198.51.100.2", 0, true)
                ]
            ))
            .unwrap(),
            "prefix = \"10.0.0.0/8\"; table = 7; via = [\"192.0.2.2\", \"198.51.100.2\"]; \
             next-hop-table = 0"
        );
        for (hops, why) in [
            (
                vec![
                    via("d0", "192.0.2.2", 0, true),
                    via("d1", "198.51.100.2", 0, false),
                ],
                "different interfaces",
            ),
            (
                vec![via("d0", "192.0.2.2", 0, true), SavedHop::Drop],
                "mixes drop",
            ),
            (
                vec![
                    via("d0", "192.0.2.2", 0, true),
                    via("d1", "198.51.100.2", 3, true),
                ],
                "different tables",
            ),
            (vec![SavedHop::Other("glean")], "glean"),
        ] {
            let e = written(&r(0, hops)).unwrap_err();
            assert!(
                e.starts_with("route 10.0.0.0/8: ") && e.contains(why),
                "{e}"
            );
        }
    }
}
