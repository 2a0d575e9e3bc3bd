//! Routes of the config: each [[route]], and the [fib] section's route file.

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use crate::fib::parse::IpPrefix;
use crate::router::NextHopSpec;
use serde::Deserialize;
use std::path::PathBuf;
use toml::Spanned;

/// [[route]] in the reference (`docs/config.md`).
pub(crate) const ROUTE: SectionDoc = SectionDoc {
    name: "route",
    array: true,
    file: "router/config/route.rs",
    doc: "A static route, IPv4 or IPv6 (see docs/routing.md). It needs either `via` or \
          `drop = true`.",
    accepted: crate::config::reference::serde_fields::<RouteKeys>,
    aliases: &[],
    keys: &[
        Key::required("prefix", "string", "PREFIX/LENGTH", "\"198.19.0.0/16\""),
        Key {
            name: "table",
            ty: "integer",
            default: "0",
            doc: "the table the route is in: 0 or an [[ip-table]]",
            example: "0",
        },
        Key {
            name: "next-hop-table",
            ty: "integer",
            default: "the route's table",
            doc: "the table whose connected networks hold the next hops (inter-VRF); not on a drop route",
            example: "0",
        },
        Key {
            name: "via",
            ty: "list of strings",
            default: "[] (none)",
            doc: "next-hop addresses of the prefix's family; several: ECMP, a flow hash picks one per flow",
            example: "[\"198.51.100.2\"]",
        },
        Key {
            name: "interface",
            ty: "string",
            default: "found by the next hop's address",
            doc: "the interface the next hops are on",
            example: "\"d1\"",
        },
        Key {
            name: "drop",
            ty: "boolean",
            default: "false",
            doc: "a blackhole: matching packets are dropped and counted",
            example: "false",
        },
    ],
};

/// [fib] in the reference (`docs/config.md`).
pub(crate) const FIB: SectionDoc = SectionDoc {
    name: "fib",
    array: false,
    file: "router/config/route.rs",
    doc: "Routes loaded at start from a file, in one build (see docs/fib.md).",
    accepted: crate::config::reference::serde_fields::<FibConfig>,
    aliases: &[("route_file", "route-file")],
    keys: &[Key {
        name: "route-file",
        ty: "string (path)",
        default: "none",
        doc: "a route file: PREFIX NEXTHOP lines, `ip route show` output or `birdc show route` output (`sluice fib synth` writes one)",
        example: "\"table.txt\"",
    }],
};

/// A static route, checked.
#[derive(Debug)]
pub struct RouteConfig {
    /// The table (id) the route is in.
    pub table: u32,
    pub prefix: IpPrefix,
    /// The next hops, or one `Drop`.
    pub hops: Vec<NextHopSpec>,
}

/// A [[route]] as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RouteKeys {
    prefix: Spanned<String>,
    table: Option<Spanned<u32>>,
    next_hop_table: Option<Spanned<u32>>,
    #[serde(default)]
    via: Vec<Spanned<String>>,
    interface: Option<Spanned<String>>,
    #[serde(default)]
    drop: bool,
}

/// The [fib] section.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FibConfig {
    /// Routes loaded at start, in one build.
    #[serde(alias = "route_file")]
    pub route_file: Option<Spanned<PathBuf>>,
}

impl RouteKeys {
    /// The prefix parses, the next hops are addresses of its family (or it drops), and its
    /// interface is one of `names`, and its tables are 0 or among `tables`.
    pub(crate) fn check(
        self,
        names: &[&str],
        tables: &[u32],
        c: &Checker<'_>,
    ) -> Result<RouteConfig, ConfigError> {
        for (key, t) in [
            ("table", &self.table),
            ("next-hop-table", &self.next_hop_table),
        ] {
            if let Some(t) = t {
                let id = *t.get_ref();
                if id != 0 && !tables.contains(&id) {
                    return Err(c.err(
                        t.span(),
                        key,
                        format!("no table {id} (define it with [[ip-table]])"),
                    ));
                }
            }
        }
        if let (Some(t), true) = (&self.next_hop_table, self.drop) {
            return Err(c.err(
                t.span(),
                "next-hop-table",
                "a drop route has no next hop to find in another table".into(),
            ));
        }
        let prefix = crate::fib::parse::parse_prefix(self.prefix.get_ref())
            .map_err(|e| c.err(self.prefix.span(), "prefix", e))?;
        if self.drop != self.via.is_empty() {
            return Err(c.err(
                self.prefix.span(),
                "via",
                format!(
                    "route {prefix} needs either via (next hops) or drop = true, not {}",
                    if self.drop { "both" } else { "neither" }
                ),
            ));
        }
        let mut vias = Vec::new();
        for v in &self.via {
            let ip: std::net::IpAddr = v.get_ref().parse().map_err(|_| {
                c.err(
                    v.span(),
                    "via",
                    format!("'{}' is not an address", v.get_ref()),
                )
            })?;
            let v4 = matches!(prefix, IpPrefix::V4(_));
            if ip.is_ipv4() != v4 {
                return Err(c.err(
                    v.span(),
                    "via",
                    format!("{ip} is not of the family of {prefix}"),
                ));
            }
            vias.push(ip);
        }
        if let Some(itf) = &self.interface {
            if !names.contains(&itf.get_ref().as_str()) {
                return Err(c.err(
                    itf.span(),
                    "interface",
                    format!("no interface named '{}'", itf.get_ref()),
                ));
            }
        }
        let interface = self.interface.map(Spanned::into_inner);
        let next_hop_table = self.next_hop_table.map(Spanned::into_inner);
        let hops = if self.drop {
            vec![NextHopSpec::Drop]
        } else {
            vias.into_iter()
                .map(|addr| NextHopSpec::Via {
                    addr,
                    interface: interface.clone(),
                    table: next_hop_table,
                })
                .collect()
        };
        Ok(RouteConfig {
            table: self.table.map_or(0, Spanned::into_inner),
            prefix,
            hops,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;

    use super::*;
    use crate::config::{interface_with, Config};

    /// A pcap interface `a` (lines 1-4) and one `[[route]]` (from line 5).
    fn route(lines: &str) -> String {
        format!(
            "{}[[route]]\n{lines}",
            interface_with("pcap", "tx-file = \"o\"\n")
        )
    }

    error_tests! {
        prefix_with_host_bits: route("prefix = \"10.0.0.1/8\"\nvia = [\"192.0.2.2\"]\n")
            => "t.toml:6: key 'prefix': '10.0.0.1/8' has host bits set past /8";
        route_with_neither_via_nor_drop: route("prefix = \"10.0.0.0/8\"\n")
            => "t.toml:6: key 'via': route 10.0.0.0/8 needs either via (next hops) or drop = true, not neither";
        route_with_both_via_and_drop: route("prefix = \"10.0.0.0/8\"\ndrop = true\nvia = [\"192.0.2.2\"]\n")
            => "t.toml:6: key 'via': route 10.0.0.0/8 needs either via (next hops) or drop = true, not both";
        route_via_not_an_address: route("prefix = \"10.0.0.0/8\"\nvia = [\"gateway\"]\n")
            => "t.toml:7: key 'via': 'gateway' is not an address";
        route_via_of_the_other_family: route("prefix = \"10.0.0.0/8\"\nvia = [\"2001:db8::1\"]\n")
            => "t.toml:7: key 'via': 2001:db8::1 is not of the family of 10.0.0.0/8";
        route_through_an_unknown_interface: route("prefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\ninterface = \"zz\"\n")
            => "t.toml:8: key 'interface': no interface named 'zz'";
        route_in_an_unknown_table: route("prefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\ntable = 3\n")
            => "t.toml:8: key 'table': no table 3 (define it with [[ip-table]])";
        route_via_an_unknown_table: route("prefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\nnext-hop-table = 4\n")
            => "t.toml:8: key 'next-hop-table': no table 4 (define it with [[ip-table]])";
        drop_route_with_a_next_hop_table: route("prefix = \"10.0.0.0/8\"\ndrop = true\nnext-hop-table = 0\n")
            => "t.toml:8: key 'next-hop-table': a drop route has no next hop to find in another table";
    }

    #[test]
    fn routing_keys_are_checked() {
        let base = "[[interface]]\nname = \"a\"\ndriver = \"pcap\"\ntx-file = \"o.pcap\"\n";
        let bad = [
            ("address = [\"192.0.2.1\"]\n", "address"),
            ("address = [\"192.0.2.1/33\"]\n", "address"),
            ("[[route]]\nprefix = \"10.0.0.0/8\"\n", "via"),
            (
                "[[route]]\nprefix = \"10.0.0.1/8\"\nvia = [\"192.0.2.2\"]\n",
                "prefix",
            ),
            (
                "[[route]]\nprefix = \"10.0.0.0/8\"\nvia = [\"2001:db8::1\"]\n",
                "via",
            ),
            (
                "[[route]]\nprefix = \"10.0.0.0/8\"\ndrop = true\nvia = [\"192.0.2.2\"]\n",
                "via",
            ),
            (
                "[[route]]\nprefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\ninterface = \"zz\"\n",
                "interface",
            ),
        ];
        for (extra, key) in bad {
            let e = Config::parse(&format!("{base}{extra}"), "r.toml")
                .unwrap_err()
                .0;
            assert!(e.contains(&format!("key '{key}'")), "{extra}: {e}");
        }
        let ok = format!(
            "{base}address = [\"192.0.2.1/24\", \"2001:db8::1/64\"]\n\
             [[route]]\nprefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\", \"192.0.2.3\"]\n\
             [fib]\nroute-file = \"t.txt\"\n"
        );
        let c = Config::parse(&ok, "r.toml").unwrap();
        assert_eq!(c.routes[0].hops.len(), 2);
        assert_eq!(c.interfaces[0].address.len(), 2);
    }

    #[test]
    fn next_hops_are_typed() {
        let src = route(
            "prefix = \"2001:db8::/32\"\nvia = [\"fe80::1\"]\ninterface = \"a\"\n\
             [[route]]\nprefix = \"10.0.0.0/8\"\ndrop = true\n",
        );
        let c = Config::parse(&src, "t.toml").unwrap();
        assert_eq!(c.routes[0].prefix.to_string(), "2001:db8::/32");
        assert_eq!(
            c.routes[0].hops,
            [NextHopSpec::Via {
                addr: "fe80::1".parse().unwrap(),
                interface: Some("a".into()),
                table: None
            }]
        );
        assert_eq!(c.routes[1].hops, [NextHopSpec::Drop]);
    }
}
