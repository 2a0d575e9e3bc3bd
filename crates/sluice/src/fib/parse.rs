//! Route files, in three formats, detected from the first line that says something:
//!
//! - plain: `PREFIX NEXTHOP` per line, the next hop an address or an adjacency index; `#`
//!   starts a comment.
//! - `ip route show` / `ip -6 route show`: `[TYPE] PREFIX|ADDR|default [via [inet6] ADDR]
//!   [dev IF] ...`; multipath routes take their first `nexthop` line. Without `via` the next hop
//!   is the interface (connected route), else the nexthop object (`nhid N`); dropping types
//!   (`blackhole`, `unreachable`, `prohibit`, `throw`) are their own next hop. A bare
//!   `default` is IPv6 once the file has shown an IPv6 route or gateway, IPv4 before.
//! - `birdc show route` (BIRD 1 and 2): `PREFIX via ADDR on IF [...] * (100)` or
//!   `PREFIX unicast [...] * (100)` followed by indented `via ADDR on IF` lines. Of several
//!   routes for one prefix the best (`*`) wins; attribute lines of `show route all` are skipped.
//!
//! Parsing never panics: a bad line gives `FILE:LINE: reason`.

use super::prefix::{Prefix4, Prefix6};
use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

/// A prefix of either family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpPrefix {
    V4(Prefix4),
    V6(Prefix6),
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpPrefix::V4(p) => p.fmt(f),
            IpPrefix::V6(p) => p.fmt(f),
        }
    }
}

/// One route as read from a file: the next hop is kept as text (an address, an interface, a
/// route type or an index); the caller maps it to an adjacency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub prefix: IpPrefix,
    /// Shared by every route with the same next hop: a full table has a handful, and a
    /// string per route would leave a million small holes in the daemon's heap once freed.
    pub next_hop: Arc<str>,
}

/// The next hops of one file, each stored once.
#[derive(Default)]
struct Names(HashMap<Box<str>, Arc<str>>);

impl Names {
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(a) = self.0.get(name) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(name);
        self.0.insert(name.into(), a.clone());
        a
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Plain,
    IpRoute,
    Bird,
}

/// `FILE:LINE: reason` (line 0 when the file could not be read at all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteFileError {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for RouteFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.reason)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.reason)
        }
    }
}

impl std::error::Error for RouteFileError {}

/// Parses `PREFIX`: `ADDR/LEN` of either family, host bits clear.
pub fn parse_prefix(s: &str) -> Result<IpPrefix, String> {
    let Some((a, l)) = s.split_once('/') else {
        return Err(format!("'{s}' is not a prefix (want ADDRESS/LENGTH)"));
    };
    let addr: IpAddr = a
        .parse()
        .map_err(|_| format!("bad address '{a}' in prefix '{s}'"))?;
    let len: u8 = l
        .parse()
        .map_err(|_| format!("bad prefix length '{l}' in '{s}'"))?;
    make_prefix(addr, len, s)
}

fn make_prefix(addr: IpAddr, len: u8, text: &str) -> Result<IpPrefix, String> {
    let p = match addr {
        IpAddr::V4(a) if len <= 32 => Prefix4::new(u32::from(a), len).map(IpPrefix::V4),
        IpAddr::V6(a) if len <= 128 => Prefix6::new(u128::from(a), len).map(IpPrefix::V6),
        _ => return Err(format!("prefix length {len} too long in '{text}'")),
    };
    p.ok_or_else(|| format!("'{text}' has host bits set past /{len}"))
}

/// Guesses the format from the first line that is not blank or a comment.
pub fn detect(text: &str) -> Format {
    let Some(first) = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
    else {
        return Format::Plain;
    };
    let words: Vec<&str> = first.split_whitespace().collect();
    if first.starts_with("BIRD ")
        || first.starts_with("Table ")
        || first.contains('[')
        || words.windows(2).any(|w| w[0] == "on" || w[1] == "unicast")
    {
        Format::Bird
    } else if words
        .iter()
        .any(|w| ["via", "dev", "default", "proto", "metric"].contains(w))
        || words.first().is_some_and(|w| ROUTE_TYPES.contains(w))
    {
        Format::IpRoute
    } else {
        Format::Plain
    }
}

/// Route types of `ip route` and BIRD that can start a line.
const ROUTE_TYPES: &[&str] = &[
    "unicast",
    "blackhole",
    "unreachable",
    "prohibit",
    "throw",
    "local",
    "broadcast",
    "anycast",
    "multicast",
    "nat",
];

/// Reads and parses a route file.
pub fn read_route_file(path: &Path) -> Result<Vec<Route>, RouteFileError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| RouteFileError {
        file: name.clone(),
        line: 0,
        reason: e.to_string(),
    })?;
    parse_routes(&text, &name)
}

/// Parses a route file's text; `file` names it in errors.
pub fn parse_routes(text: &str, file: &str) -> Result<Vec<Route>, RouteFileError> {
    let r = match detect(text) {
        Format::Plain => parse_plain(text),
        Format::IpRoute => parse_ip_route(text),
        Format::Bird => parse_bird(text),
    };
    r.map_err(|(line, reason)| RouteFileError {
        file: file.to_string(),
        line,
        reason,
    })
}

type LineResult<T> = Result<T, (usize, String)>;

fn parse_plain(text: &str) -> LineResult<Vec<Route>> {
    let mut out = Vec::new();
    let mut names = Names::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let words: Vec<&str> = content.split_whitespace().collect();
        let [prefix, next_hop] = words[..] else {
            return Err((
                n,
                format!(
                    "want 'PREFIX NEXTHOP', got {} field{}",
                    words.len(),
                    if words.len() == 1 { "" } else { "s" }
                ),
            ));
        };
        let prefix = parse_prefix(prefix).map_err(|e| (n, e))?;
        if next_hop.parse::<IpAddr>().is_err() && next_hop.parse::<u32>().is_err() {
            return Err((
                n,
                format!("bad next hop '{next_hop}' (want an address or an adjacency index)"),
            ));
        }
        out.push(Route {
            prefix,
            next_hop: names.get(next_hop),
        });
    }
    Ok(out)
}

/// The `via`, `dev` and family seen in the words of an `ip route` line or `nexthop` line.
fn ip_route_next_hop(words: &[&str], n: usize) -> LineResult<(Option<String>, Option<bool>)> {
    let mut via: Option<String> = None;
    let mut dev: Option<String> = None;
    let mut nhid: Option<String> = None;
    let mut v6 = None;
    let mut i = 0;
    while i < words.len() {
        match words[i] {
            "via" => {
                let mut j = i + 1;
                if matches!(words.get(j), Some(&("inet" | "inet6"))) {
                    j += 1;
                }
                let Some(a) = words.get(j) else {
                    return Err((n, "'via' without an address".into()));
                };
                let addr: IpAddr = a
                    .parse()
                    .map_err(|_| (n, format!("bad gateway address '{a}'")))?;
                v6 = Some(addr.is_ipv6());
                via = Some(addr.to_string());
                i = j + 1;
            }
            // A route through a nexthop object (`nhid 12`) with no via/dev of its own.
            "nhid" => {
                let Some(id) = words.get(i + 1) else {
                    return Err((n, "'nhid' without an id".into()));
                };
                nhid = Some(format!("nhid {id}"));
                i += 2;
            }
            "dev" => {
                let Some(d) = words.get(i + 1) else {
                    return Err((n, "'dev' without an interface".into()));
                };
                dev = Some(d.to_string());
                i += 2;
            }
            _ => i += 1,
        }
    }
    Ok((via.or(dev).or(nhid), v6))
}

fn parse_ip_route(text: &str) -> LineResult<Vec<Route>> {
    let mut out: Vec<Route> = Vec::new();
    let mut names = Names::default();
    // A multipath route waiting for its first `nexthop` line: (line, prefix or "default").
    let mut pending: Option<(usize, String)> = None;
    let mut seen_v6 = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() || words[0].starts_with('#') {
            continue;
        }
        if words[0] == "nexthop" {
            let (hop, v6) = ip_route_next_hop(&words[1..], n)?;
            if let (Some((pn, dst)), Some(hop)) = (pending.take(), hop) {
                let v6 = v6.unwrap_or(seen_v6);
                out.push(Route {
                    prefix: ip_route_prefix(&dst, v6).map_err(|e| (pn, e))?,
                    next_hop: names.get(&hop),
                });
            }
            continue;
        }
        if let Some((pn, _)) = pending.take() {
            return Err((
                pn,
                "no next hop (want via ADDR, dev IF or nexthop lines)".into(),
            ));
        }
        let (kind, rest) = match words[0] {
            w if ROUTE_TYPES.contains(&w) => (Some(w), &words[1..]),
            _ => (None, &words[..]),
        };
        let Some(&dst) = rest.first() else {
            return Err((n, "route type without a destination".into()));
        };
        let (hop, v6) = ip_route_next_hop(&rest[1..], n)?;
        // A dropping type wins over `dev` (`unreachable default dev lo ...`); other types
        // (`local`, `broadcast`, ...) are reached through their device.
        let hop = match kind {
            Some(k @ ("blackhole" | "unreachable" | "prohibit" | "throw")) => Some(k.to_string()),
            Some(k) if k != "unicast" => hop.or(Some(k.to_string())),
            _ => hop,
        };
        let v6 = v6.unwrap_or(dst.contains(':') || seen_v6);
        seen_v6 |= v6;
        match hop {
            Some(next_hop) => out.push(Route {
                prefix: ip_route_prefix(dst, v6).map_err(|e| (n, e))?,
                next_hop: names.get(&next_hop),
            }),
            None => pending = Some((n, dst.to_string())),
        }
    }
    if let Some((pn, _)) = pending {
        return Err((
            pn,
            "no next hop (want via ADDR, dev IF or nexthop lines)".into(),
        ));
    }
    Ok(out)
}

/// `default`, `ADDR/LEN` or a host `ADDR`.
fn ip_route_prefix(dst: &str, v6: bool) -> Result<IpPrefix, String> {
    if dst == "default" {
        return Ok(if v6 {
            IpPrefix::V6(Prefix6::containing(0, 0))
        } else {
            IpPrefix::V4(Prefix4::containing(0, 0))
        });
    }
    if dst.contains('/') {
        return parse_prefix(dst);
    }
    match dst.parse::<IpAddr>() {
        Ok(a @ IpAddr::V4(_)) => make_prefix(a, 32, dst),
        Ok(a @ IpAddr::V6(_)) => make_prefix(a, 128, dst),
        Err(_) => Err(format!("bad destination '{dst}'")),
    }
}

/// One of BIRD's routes for a prefix.
struct Candidate {
    best: bool,
    next_hop: Option<String>,
}

fn parse_bird(text: &str) -> LineResult<Vec<Route>> {
    let mut out = Vec::new();
    // The prefix being read, the line it started on, its candidate routes.
    let mut current: Option<(IpPrefix, usize, Vec<Candidate>)> = None;
    let mut names = Names::default();
    let flush = |cur: Option<(IpPrefix, usize, Vec<Candidate>)>,
                 out: &mut Vec<Route>,
                 names: &mut Names| {
        let Some((prefix, n, cands)) = cur else {
            return Ok(());
        };
        let chosen = cands
            .iter()
            .filter(|c| c.best)
            .chain(cands.iter())
            .find_map(|c| c.next_hop.clone());
        match chosen {
            Some(next_hop) => {
                out.push(Route {
                    prefix,
                    next_hop: names.get(&next_hop),
                });
                Ok(())
            }
            None => Err((n, format!("no next hop for {prefix} (want 'via ADDR')"))),
        }
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&first) = words.first() else {
            continue;
        };
        if first.starts_with('#')
            || line.starts_with("BIRD ")
            || line.starts_with("Table ")
            || line.starts_with("Access restricted")
        {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let rest = if indented {
            &words[..]
        } else {
            flush(current.take(), &mut out, &mut names)?;
            let prefix = parse_prefix(first).map_err(|e| (n, e))?;
            current = Some((prefix, n, Vec::new()));
            &words[1..]
        };
        let Some((_, _, cands)) = current.as_mut() else {
            // Indented text before any prefix: a header we do not know; harmless.
            continue;
        };
        let best = rest.contains(&"*");
        let via = rest
            .iter()
            .position(|&w| w == "via")
            .map(|p| match rest.get(p + 1) {
                Some(a) => a
                    .parse::<IpAddr>()
                    .map(|a| a.to_string())
                    .map_err(|_| (n, format!("bad gateway address '{a}'"))),
                None => Err((n, "'via' without an address".into())),
            })
            .transpose()?;
        match rest.first().copied() {
            // BIRD 2: a route line; its next hops follow on indented lines.
            Some(t) if ROUTE_TYPES.contains(&t) => cands.push(Candidate {
                best,
                next_hop: via.or_else(|| (t != "unicast").then(|| t.to_string())),
            }),
            // BIRD 1 (`via ... on IF [...]`), or BIRD 2's next-hop line for the last route.
            Some("via") => match cands.last_mut() {
                Some(c) if !rest.iter().any(|w| w.starts_with('[')) => {
                    if c.next_hop.is_none() {
                        c.next_hop = via;
                    }
                }
                _ => cands.push(Candidate {
                    best,
                    next_hop: via,
                }),
            },
            Some("dev") => {
                if let (Some(c), Some(d)) = (cands.last_mut(), rest.get(1)) {
                    if c.next_hop.is_none() {
                        c.next_hop = Some(d.to_string());
                    }
                }
            }
            Some(w) if !indented => return Err((n, format!("unexpected '{w}' after the prefix"))),
            // Attribute lines of `show route all` and anything else indented.
            _ => {}
        }
    }
    flush(current.take(), &mut out, &mut names)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(text: &str) -> Vec<(String, String)> {
        parse_routes(text, "t")
            .unwrap()
            .into_iter()
            .map(|r| (r.prefix.to_string(), r.next_hop.to_string()))
            .collect()
    }

    fn err(text: &str) -> String {
        parse_routes(text, "r.txt").unwrap_err().to_string()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn fib_parse_plain() {
        let t = "# full view\n10.0.0.0/8 192.0.2.1\n\n2001:db8::/32 fe80::1  # v6\n0.0.0.0/0 7\n";
        assert_eq!(detect(t), Format::Plain);
        assert_eq!(
            routes(t),
            pairs(&[
                ("10.0.0.0/8", "192.0.2.1"),
                ("2001:db8::/32", "fe80::1"),
                ("0.0.0.0/0", "7")
            ])
        );
        assert!(routes("").is_empty());
    }

    #[test]
    fn fib_parse_plain_errors() {
        assert_eq!(
            err("10.0.0.0/8 1\n10.0.0.0/8\n"),
            "r.txt:2: want 'PREFIX NEXTHOP', got 1 field"
        );
        assert_eq!(
            err("10.0.0.0/8 1 2 3\n"),
            "r.txt:1: want 'PREFIX NEXTHOP', got 4 fields"
        );
        assert_eq!(
            err("10.0.0.1/8 1\n"),
            "r.txt:1: '10.0.0.1/8' has host bits set past /8"
        );
        assert_eq!(
            err("10.0.0.0/33 1\n"),
            "r.txt:1: prefix length 33 too long in '10.0.0.0/33'"
        );
        assert_eq!(
            err("10.0.0.0/x 1\n"),
            "r.txt:1: bad prefix length 'x' in '10.0.0.0/x'"
        );
        assert_eq!(
            err("10.0.300.0/24 1\n"),
            "r.txt:1: bad address '10.0.300.0' in prefix '10.0.300.0/24'"
        );
        assert_eq!(
            err("10.0.0.0 1\n"),
            "r.txt:1: '10.0.0.0' is not a prefix (want ADDRESS/LENGTH)"
        );
        assert_eq!(
            err("10.0.0.0/8 gw\n"),
            "r.txt:1: bad next hop 'gw' (want an address or an adjacency index)"
        );
        assert_eq!(
            err("2001:db8::/129 1\n"),
            "r.txt:1: prefix length 129 too long in '2001:db8::/129'"
        );
        let missing = read_route_file(Path::new("/nonexistent/routes")).unwrap_err();
        assert_eq!(missing.line, 0);
        assert!(missing.to_string().starts_with("/nonexistent/routes: "));
    }

    #[test]
    fn fib_parse_ip_route() {
        let v4 = "default via 192.168.1.1 dev wlan0 proto dhcp src 192.168.1.20 metric 600 \n\
                  10.8.0.0/16 dev tun0 proto kernel scope link src 10.8.0.2\n\
                  172.16.5.4 via 10.8.0.1 dev tun0\n\
                  blackhole 198.51.100.0/24 proto static\n\
                  unicast 203.0.113.0/24 via 10.8.0.9 dev tun0\n\
                  unreachable 192.0.2.0/24 dev lo proto kernel metric 4294967295 error -101\n\
                  198.18.0.0/15 nhid 12 proto bgp metric 20\n\
                  local 10.8.0.2 dev tun0 table local proto kernel scope host src 10.8.0.2\n";
        assert_eq!(detect(v4), Format::IpRoute);
        assert_eq!(
            routes(v4),
            pairs(&[
                ("0.0.0.0/0", "192.168.1.1"),
                ("10.8.0.0/16", "tun0"),
                ("172.16.5.4/32", "10.8.0.1"),
                ("198.51.100.0/24", "blackhole"),
                ("203.0.113.0/24", "10.8.0.9"),
                ("192.0.2.0/24", "unreachable"),
                ("198.18.0.0/15", "nhid 12"),
                ("10.8.0.2/32", "tun0"),
            ])
        );
        let v6 = "::1 dev lo proto kernel metric 256 pref medium\n\
                  2001:db8:1::/64 dev eth0 proto kernel metric 256 expires 86391sec pref medium\n\
                  default proto static metric 1024 pref medium\n\
                  \tnexthop via fe80::1 dev eth0 weight 1\n\
                  \tnexthop via fe80::2 dev eth1 weight 1\n\
                  default dev wg0 metric 2000\n";
        assert_eq!(
            routes(v6),
            pairs(&[
                ("::1/128", "lo"),
                ("2001:db8:1::/64", "eth0"),
                ("::/0", "fe80::1"),
                ("::/0", "wg0"),
            ])
        );
        // RFC 5549: an IPv4 route through an IPv6 gateway.
        assert_eq!(
            routes("192.0.2.0/24 via inet6 fe80::1 dev eth0\n"),
            pairs(&[("192.0.2.0/24", "fe80::1")])
        );
    }

    #[test]
    fn fib_parse_ip_route_errors() {
        assert_eq!(
            err("default via 10.0.0.1 dev eth0\n10.1.0.0/16 via 10.0.0.x dev eth0\n"),
            "r.txt:2: bad gateway address '10.0.0.x'"
        );
        assert_eq!(
            err("10.1.0.0/16 dev eth0\n10.2.0.0/16 via\n"),
            "r.txt:2: 'via' without an address"
        );
        assert_eq!(
            err("10.1.0.0/16 dev eth0\n10.2.0.0/16 proto static metric 5\n"),
            "r.txt:2: no next hop (want via ADDR, dev IF or nexthop lines)"
        );
        assert_eq!(
            err("10.1.0.0/16 dev eth0\nbogus via 10.0.0.1\n"),
            "r.txt:2: bad destination 'bogus'"
        );
        assert_eq!(
            err("10.1.0.0/16 dev eth0\n10.1.0.0/99 dev eth0\n"),
            "r.txt:2: prefix length 99 too long in '10.1.0.0/99'"
        );
        assert_eq!(
            err("10.1.0.0/16 dev eth0\nblackhole\n"),
            "r.txt:2: route type without a destination"
        );
        assert_eq!(
            err("10.1.0.0/16 dev\n"),
            "r.txt:1: 'dev' without an interface"
        );
    }

    #[test]
    fn fib_parse_bird() {
        let bird2 = "BIRD 2.0.12 ready.\n\
                     Table master4:\n\
                     0.0.0.0/0            unicast [bgp1 2024-05-01] * (100) [AS64500i]\n\
                     \tvia 192.0.2.1 on eth0\n\
                     10.0.0.0/8           unicast [bgp2 2024-05-01] (100) [AS64501i]\n\
                     \tvia 192.0.2.2 on eth1\n\
                     \x20                    unicast [bgp1 2024-05-01] * (100) [AS64500i]\n\
                     \tvia 192.0.2.1 on eth0\n\
                     \tType: BGP univ\n\
                     \tBGP.origin: IGP\n\
                     192.168.0.0/16       blackhole [static1 2024-05-01] * (200)\n\
                     172.16.0.0/12        unicast [direct1 2024-05-01] * (240)\n\
                     \tdev eth2\n\
                     2001:db8::/32        unicast [bgp1 2024-05-01] * (100) [AS64500i]\n\
                     \tvia fe80::1 on eth0\n";
        assert_eq!(detect(bird2), Format::Bird);
        assert_eq!(
            routes(bird2),
            pairs(&[
                ("0.0.0.0/0", "192.0.2.1"),
                ("10.0.0.0/8", "192.0.2.1"),
                ("192.168.0.0/16", "blackhole"),
                ("172.16.0.0/12", "eth2"),
                ("2001:db8::/32", "fe80::1"),
            ])
        );
        let bird1 = "10.0.0.0/8         via 192.0.2.1 on eth0 [bgp1 2021-01-01] * (100) [AS65000i]\n\
                     \x20                  via 192.0.2.2 on eth1 [bgp2 2021-01-01] (100) [AS65001i]\n\
                     10.1.0.0/16        via 192.0.2.2 on eth1 [bgp2 2021-01-01] (100) [AS65001i]\n\
                     \x20                  via 192.0.2.3 on eth1 [bgp3 2021-01-01] * (100) [AS65002i]\n";
        assert_eq!(detect(bird1), Format::Bird);
        assert_eq!(
            routes(bird1),
            pairs(&[("10.0.0.0/8", "192.0.2.1"), ("10.1.0.0/16", "192.0.2.3")])
        );
    }

    #[test]
    fn fib_parse_bird_errors() {
        assert_eq!(
            err("Table master4:\n10.0.0.0/8  unicast [s 1] * (200)\n10.0.0/8  unicast [s 1] * (200)\n\tvia 192.0.2.1 on eth0\n"),
            "r.txt:2: no next hop for 10.0.0.0/8 (want 'via ADDR')"
        );
        assert_eq!(
            err("Table master4:\n10.0.0/8  unicast [s 1] * (200)\n"),
            "r.txt:2: bad address '10.0.0' in prefix '10.0.0/8'"
        );
        assert_eq!(
            err("BIRD 2.0 ready.\n10.0.0.0/8  unicast [s 1] * (200)\n\tvia 192.0.2.x on eth0\n"),
            "r.txt:3: bad gateway address '192.0.2.x'"
        );
        assert_eq!(
            err("BIRD 2.0 ready.\n10.0.0.0/8  frobnicate [s 1] * (200)\n"),
            "r.txt:2: unexpected 'frobnicate' after the prefix"
        );
    }

    proptest::proptest! {
        /// Lines made of the words the three formats use, in any order and indentation:
        /// the parser answers with routes or an error, never a panic.
        #[test]
        fn fib_parse_never_panics(lines in proptest::collection::vec(
            (proptest::bool::ANY, proptest::collection::vec(0usize..WORDS.len(), 0..8)),
            0..12,
        )) {
            let text: String = lines
                .iter()
                .map(|(indent, words)| {
                    let line: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                    format!("{}{}\n", if *indent { "\t" } else { "" }, line.join(" "))
                })
                .collect();
            if let Ok(routes) = parse_routes(&text, "p") {
                proptest::prop_assert!(routes.iter().all(|r| !r.next_hop.is_empty()));
            }
        }
    }

    const WORDS: &[&str] = &[
        "10.0.0.0/8",
        "10.0.0.1/8",
        "2001:db8::/32",
        "::/0",
        "1.2.3.4",
        "fe80::1",
        "default",
        "via",
        "dev",
        "eth0",
        "on",
        "unicast",
        "blackhole",
        "nexthop",
        "inet6",
        "[bgp1",
        "x]",
        "*",
        "(100)",
        "BIRD",
        "Table",
        "proto",
        "metric",
        "#",
        "/",
        "",
        "7",
        "10.0.0.0/99",
    ];
}
