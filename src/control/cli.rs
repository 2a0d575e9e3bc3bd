//! CLI commands: parsing text into a `Command` (words may be shortened to any unique prefix,
//! as in VPP: `sh int`, `sh run`), kept apart from the functions that carry them out.

/// A parsed command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    ShowInterface {
        name: Option<String>,
    },
    ShowHardware {
        name: Option<String>,
    },
    ShowRuntime,
    ShowErrors,
    ShowBuffers,
    ShowThreads,
    ShowTrace,
    ShowVersion,
    SetInterfaceState {
        name: String,
        up: bool,
    },
    SetXconnect {
        rx: String,
        tx: String,
    },
    ClearRuntime,
    ClearInterfaces,
    ClearErrors,
    ClearTrace,
    TraceAdd {
        node: String,
        count: u32,
    },
    /// `show ip fib [ADDR|PREFIX|summary]`, `show ip6 fib ...`.
    ShowIpFib {
        v6: bool,
        query: Option<String>,
    },
    ShowIpNeighbors,
    SetInterfaceAddress {
        name: String,
        address: String,
        del: bool,
    },
    /// `ip route add PREFIX via ADDR [IF] [via ADDR [IF]]...` or `... drop`.
    IpRouteAdd {
        prefix: String,
        hops: Vec<RouteHop>,
    },
    IpRouteDel {
        prefix: String,
    },
    SetIpNeighbor {
        name: String,
        ip: String,
        mac: Option<String>,
    },
}

/// One next hop of `ip route add`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteHop {
    Via {
        addr: String,
        interface: Option<String>,
    },
    Drop,
}

/// A command line: the command and whether its output is wanted as JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub command: Command,
    pub json: bool,
}

/// Every command's words, with `<ARG>` for a value, and a help line.
const TABLE: &[(&str, &str)] = &[
    ("help", "list commands"),
    ("show interface [<IF>]", "interface state and counters"),
    (
        "show hardware [<IF>]",
        "driver facts: host device, modes, queues, rings",
    ),
    (
        "show runtime",
        "per node calls, vectors, clocks per packet, per worker",
    ),
    ("show errors", "drop and error counters by node and reason"),
    ("show buffers", "buffer pool: total, free, in use by owner"),
    ("show threads", "main and worker threads with their CPUs"),
    ("show trace", "packets traced by 'trace add'"),
    ("show version", "sluice version"),
    ("set interface state <IF> up|down", "admin state"),
    (
        "set interface l2 xconnect <RX> <TX>",
        "send everything received on RX out of TX",
    ),
    ("clear runtime", "restart the runtime statistics"),
    ("clear interfaces", "restart the interface counters"),
    ("clear errors", "restart the error counters"),
    ("clear trace", "drop trace records and budgets"),
    (
        "trace add <NODE> <N>",
        "trace the next N packets of input node NODE",
    ),
    (
        "show ip fib [<ADDR>|<PREFIX>|summary]",
        "IPv4 routes (first 1000), the route an address takes, or counts, memory, load time",
    ),
    ("show ip6 fib [<ADDR>|<PREFIX>|summary]", "IPv6 routes"),
    ("show ip neighbors", "ARP and ND entries"),
    (
        "set interface ip address [del] <IF> <ADDR/LEN>",
        "add (or delete) an IPv4/IPv6 address: the interface routes",
    ),
    (
        "ip route add <PREFIX> via <ADDR> [<IF>] [via ...]",
        "static route; several via: ECMP; 'drop' instead of via: blackhole",
    ),
    ("ip route del <PREFIX>", "delete a static route"),
    (
        "set ip neighbor [del] <IF> <ADDR> [<MAC>]",
        "static ARP/ND entry (never replaced by learning)",
    ),
];

/// The help text.
pub fn help() -> String {
    let mut s =
        String::from("commands (words may be shortened: 'sh int'; show commands take --json):\n");
    for (words, what) in TABLE {
        s.push_str(&format!("  {words:<40} {what}\n"));
    }
    s
}

/// Match `word` against a keyword, allowing a prefix.
fn is(word: &str, keyword: &str) -> bool {
    !word.is_empty() && keyword.starts_with(word)
}

/// Parse a command line. Errors are one line with a hint.
pub fn parse(line: &str) -> Result<Request, String> {
    let mut words: Vec<&str> = line.split_whitespace().collect();
    let json = words.contains(&"--json");
    words.retain(|w| *w != "--json");
    if let Some(bad) = words.iter().find(|w| w.starts_with("--")) {
        return Err(format!(
            "unknown option '{bad}' (only --json is known; try: help)"
        ));
    }
    let command = parse_words(&words)?;
    Ok(Request { command, json })
}

fn unknown(words: &[&str]) -> String {
    format!("unknown command '{}' (try: help)", words.join(" "))
}

fn parse_words(w: &[&str]) -> Result<Command, String> {
    let first = *w.first().ok_or("empty command (try: help)")?;
    if is(first, "help") || first == "?" {
        return Ok(Command::Help);
    }
    if is(first, "show") {
        let what = *w.get(1).ok_or("show what? (try: help)")?;
        let extra = |n: usize| -> Result<(), String> {
            if w.len() > n {
                Err(format!(
                    "unexpected '{}' after '{}' (try: help)",
                    w[n],
                    w[..n].join(" ")
                ))
            } else {
                Ok(())
            }
        };
        let cmd = if is(what, "interface") || what == "int" {
            extra(3)?;
            Command::ShowInterface {
                name: w.get(2).map(|s| s.to_string()),
            }
        } else if is(what, "hardware-interfaces") && what.len() >= 2 {
            extra(3)?;
            Command::ShowHardware {
                name: w.get(2).map(|s| s.to_string()),
            }
        } else if is(what, "runtime") {
            extra(2)?;
            Command::ShowRuntime
        } else if is(what, "errors") {
            extra(2)?;
            Command::ShowErrors
        } else if is(what, "buffers") {
            extra(2)?;
            Command::ShowBuffers
        } else if is(what, "threads") && what.len() >= 2 {
            extra(2)?;
            Command::ShowThreads
        } else if is(what, "trace") && what.len() >= 2 {
            extra(2)?;
            Command::ShowTrace
        } else if is(what, "version") {
            extra(2)?;
            Command::ShowVersion
        } else if what == "ip" || what == "ip6" {
            let sub = *w.get(2).ok_or("show ip what? (fib, neighbors)")?;
            if is(sub, "fib") {
                extra(4)?;
                Command::ShowIpFib {
                    v6: what == "ip6",
                    query: w.get(3).map(|s| s.to_string()),
                }
            } else if is(sub, "neighbors") || is(sub, "neighbours") || sub == "arp" {
                extra(3)?;
                Command::ShowIpNeighbors
            } else {
                return Err(unknown(w));
            }
        } else {
            return Err(unknown(w));
        };
        return Ok(cmd);
    }
    if is(first, "set") {
        if w.len() >= 2 && is(w[1], "interface") {
            if w.len() >= 3 && is(w[2], "state") {
                let [_, _, _, name, state] = w else {
                    return Err("usage: set interface state <IF> up|down".into());
                };
                let up = match *state {
                    "up" => true,
                    "down" => false,
                    other => return Err(format!("state must be up or down, not '{other}'")),
                };
                return Ok(Command::SetInterfaceState {
                    name: name.to_string(),
                    up,
                });
            }
            if w.len() >= 4 && w[2] == "ip" && is(w[3], "address") {
                const USAGE: &str = "usage: set interface ip address [del] <IF> <ADDR/LEN>";
                let mut rest: Vec<&str> = w[4..].to_vec();
                let del = rest.contains(&"del");
                rest.retain(|x| *x != "del");
                let [name, address] = rest[..] else {
                    return Err(USAGE.into());
                };
                return Ok(Command::SetInterfaceAddress {
                    name: name.to_string(),
                    address: address.to_string(),
                    del,
                });
            }
            if w.len() >= 4 && w[2] == "l2" && is(w[3], "xconnect") {
                let [_, _, _, _, rx, tx] = w else {
                    return Err("usage: set interface l2 xconnect <RX> <TX>".into());
                };
                return Ok(Command::SetXconnect {
                    rx: rx.to_string(),
                    tx: tx.to_string(),
                });
            }
        }
        if w.len() >= 3 && w[1] == "ip" && (is(w[2], "neighbor") || is(w[2], "neighbour")) {
            const USAGE: &str = "usage: set ip neighbor [del] <IF> <ADDR> [<MAC>]";
            let mut rest: Vec<&str> = w[3..].to_vec();
            let del = rest.first() == Some(&"del");
            if del {
                rest.remove(0);
            }
            return match (del, &rest[..]) {
                (false, [name, ip, mac]) => Ok(Command::SetIpNeighbor {
                    name: name.to_string(),
                    ip: ip.to_string(),
                    mac: Some(mac.to_string()),
                }),
                (true, [name, ip]) => Ok(Command::SetIpNeighbor {
                    name: name.to_string(),
                    ip: ip.to_string(),
                    mac: None,
                }),
                _ => Err(USAGE.into()),
            };
        }
        return Err(unknown(w));
    }
    if first == "ip" || first == "ip6" {
        if w.len() >= 2 && is(w[1], "route") {
            return parse_route(&w[2..]);
        }
        return Err(unknown(w));
    }
    if is(first, "clear") {
        let what = *w
            .get(1)
            .ok_or("clear what? (runtime, interfaces, errors, trace)")?;
        if w.len() > 2 {
            return Err(unknown(w));
        }
        return if is(what, "runtime") {
            Ok(Command::ClearRuntime)
        } else if is(what, "interfaces") {
            Ok(Command::ClearInterfaces)
        } else if is(what, "errors") {
            Ok(Command::ClearErrors)
        } else if is(what, "trace") && what.len() >= 2 {
            Ok(Command::ClearTrace)
        } else {
            Err(unknown(w))
        };
    }
    if is(first, "trace") && first.len() >= 2 {
        if w.len() >= 2 && is(w[1], "add") {
            let [_, _, node, count] = w else {
                return Err("usage: trace add <NODE> <N>".into());
            };
            let count: u32 = count
                .parse()
                .ok()
                .filter(|&n| n > 0 && n <= 100_000)
                .ok_or_else(|| format!("trace count must be 1..100000, not '{count}'"))?;
            return Ok(Command::TraceAdd {
                node: node.to_string(),
                count,
            });
        }
        return Err(unknown(w));
    }
    Err(unknown(w))
}

const ROUTE_USAGE: &str =
    "usage: ip route add <PREFIX> via <ADDR> [<IF>] [via <ADDR> [<IF>]]... | ip route add <PREFIX> drop | ip route del <PREFIX>";

fn parse_route(w: &[&str]) -> Result<Command, String> {
    let (Some(&op), Some(&prefix)) = (w.first(), w.get(1)) else {
        return Err(ROUTE_USAGE.into());
    };
    if is(op, "del") || op == "delete" {
        if w.len() != 2 {
            return Err(ROUTE_USAGE.into());
        }
        return Ok(Command::IpRouteDel {
            prefix: prefix.to_string(),
        });
    }
    if !is(op, "add") {
        return Err(ROUTE_USAGE.into());
    }
    let mut hops = Vec::new();
    let mut rest = &w[2..];
    while let Some(&word) = rest.first() {
        if word == "via" {
            let addr = rest.get(1).ok_or(ROUTE_USAGE)?;
            let interface = rest.get(2).filter(|x| **x != "via").map(|s| s.to_string());
            rest = &rest[2 + interface.is_some() as usize..];
            hops.push(RouteHop::Via {
                addr: addr.to_string(),
                interface,
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
    Ok(Command::IpRouteAdd {
        prefix: prefix.to_string(),
        hops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(s: &str) -> Command {
        parse(s).unwrap().command
    }

    #[test]
    fn full_and_short_words() {
        assert_eq!(cmd("show interface"), Command::ShowInterface { name: None });
        assert_eq!(
            cmd("sh int d0"),
            Command::ShowInterface {
                name: Some("d0".into())
            }
        );
        assert_eq!(cmd("sh run"), Command::ShowRuntime);
        assert_eq!(
            cmd("sh hard d1"),
            Command::ShowHardware {
                name: Some("d1".into())
            }
        );
        assert_eq!(
            cmd("show hardware-interfaces"),
            Command::ShowHardware { name: None }
        );
        assert_eq!(cmd("show err"), Command::ShowErrors);
        assert_eq!(cmd("clear run"), Command::ClearRuntime);
        assert_eq!(
            cmd("set int l2 xconnect d0 d1"),
            Command::SetXconnect {
                rx: "d0".into(),
                tx: "d1".into()
            }
        );
        assert_eq!(
            cmd("set interface state d0 down"),
            Command::SetInterfaceState {
                name: "d0".into(),
                up: false
            }
        );
        assert_eq!(
            cmd("trace add af-packet-input 10"),
            Command::TraceAdd {
                node: "af-packet-input".into(),
                count: 10
            }
        );
    }

    #[test]
    fn routing_commands() {
        assert_eq!(
            cmd("sh ip fib 10.0.0.1"),
            Command::ShowIpFib {
                v6: false,
                query: Some("10.0.0.1".into())
            }
        );
        assert_eq!(
            cmd("show ip6 fib"),
            Command::ShowIpFib {
                v6: true,
                query: None
            }
        );
        assert_eq!(cmd("sh ip neigh"), Command::ShowIpNeighbors);
        assert_eq!(
            cmd("set int ip addr del d0 192.0.2.1/24"),
            Command::SetInterfaceAddress {
                name: "d0".into(),
                address: "192.0.2.1/24".into(),
                del: true
            }
        );
        assert_eq!(
            cmd("ip route add 10.0.0.0/8 via 192.0.2.2 d0 via 192.0.2.3"),
            Command::IpRouteAdd {
                prefix: "10.0.0.0/8".into(),
                hops: vec![
                    RouteHop::Via {
                        addr: "192.0.2.2".into(),
                        interface: Some("d0".into())
                    },
                    RouteHop::Via {
                        addr: "192.0.2.3".into(),
                        interface: None
                    }
                ]
            }
        );
        assert_eq!(
            cmd("ip route add 10.0.0.0/8 drop"),
            Command::IpRouteAdd {
                prefix: "10.0.0.0/8".into(),
                hops: vec![RouteHop::Drop]
            }
        );
        assert_eq!(
            cmd("ip route del 10.0.0.0/8"),
            Command::IpRouteDel {
                prefix: "10.0.0.0/8".into()
            }
        );
        assert_eq!(
            cmd("set ip neighbor d0 192.0.2.2 02:00:00:00:00:01"),
            Command::SetIpNeighbor {
                name: "d0".into(),
                ip: "192.0.2.2".into(),
                mac: Some("02:00:00:00:00:01".into())
            }
        );
        for bad in [
            "ip route add 10.0.0.0/8",
            "ip route add 10.0.0.0/8 via",
            "ip route add 10.0.0.0/8 through x",
            "ip route del",
            "set int ip addr d0",
            "set ip neighbor d0 1.2.3.4",
            "show ip fib a b",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_flag() {
        let r = parse("show buffers --json").unwrap();
        assert!(r.json);
        assert_eq!(r.command, Command::ShowBuffers);
    }

    #[test]
    fn bad_lines_are_one_line_errors() {
        for bad in [
            "",
            "shw int",
            "show",
            "show frobs",
            "show runtime extra",
            "set interface state d0 sideways",
            "set interface state d0",
            "set interface l2 xconnect d0",
            "trace add x zero",
            "trace add x 0",
            "clear",
            "show int --verbose",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
            assert!(!e.is_empty());
        }
        assert!(parse("shw int").unwrap_err().contains("try: help"));
    }
}
