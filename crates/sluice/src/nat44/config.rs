//! `[nat44]` (the pool, limits and timeouts), `[[nat44-interface]]` (an interface's role)
//! and `[[nat44-static]]` (a port forward):
//!
//! ```toml
//! [nat44]
//! addresses = ["203.0.113.1", "203.0.113.8-203.0.113.15"]   # none: the outside address
//! max-sessions = 1048576
//!
//! [[nat44-interface]]
//! interface = "d0"
//! role = "inside"
//!
//! [[nat44-static]]
//! protocol = "tcp"
//! local = "10.0.0.3:8080"
//! external = "203.0.113.1:80"
//! ```

use super::{StaticMapping, Timeouts};
use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use std::net::Ipv4Addr;
use toml::Spanned;

pub(crate) const NAT44: SectionDoc = SectionDoc {
    name: "nat44",
    array: false,
    file: "nat44/config.rs",
    doc: "NAT44 (endpoint-dependent, as VPP's nat44-ed and Linux's masquerade; see \
          docs/nat44.md): the outside addresses, the session limits and the timeouts in \
          seconds (1 s to 30 days). Translation happens between the interfaces of \
          [[nat44-interface]].",
    accepted: crate::config::reference::serde_fields::<NatKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "addresses",
            ty: "list of strings",
            default: "none (each outside interface's own address)",
            doc: "the pool: addresses and ranges A-B (at most 1024 addresses); one inside \
                  address always maps to the same pool address",
            example: "[\"203.0.113.1\", \"203.0.113.8-203.0.113.15\"]",
        },
        Key {
            name: "max-sessions",
            ty: "integer",
            default: "1048576",
            doc: "sessions of the whole daemon (1024 to 16777216), split evenly over the \
                  workers; a new flow past it is a counted drop",
            example: "1048576",
        },
        Key {
            name: "max-sessions-per-host",
            ty: "integer",
            default: "4096",
            doc: "sessions one inside address may hold on each worker",
            example: "4096",
        },
        Key {
            name: "udp-timeout",
            ty: "integer",
            default: "300",
            doc: "an idle UDP session",
            example: "300",
        },
        Key {
            name: "tcp-established-timeout",
            ty: "integer",
            default: "7440",
            doc: "an idle TCP session that has seen both directions and no FIN or RST",
            example: "7440",
        },
        Key {
            name: "tcp-transitory-timeout",
            ty: "integer",
            default: "240",
            doc: "an idle TCP session opening (SYN) or closing (FIN or RST seen)",
            example: "240",
        },
        Key {
            name: "icmp-timeout",
            ty: "integer",
            default: "60",
            doc: "an idle ICMP echo session",
            example: "60",
        },
    ],
};

pub(crate) const NAT44_INTERFACE: SectionDoc = SectionDoc {
    name: "nat44-interface",
    array: true,
    file: "nat44/config.rs",
    doc: "An interface's role in NAT44: packets from inside routed out of an outside \
          interface are translated; replies arriving on it are translated back.",
    accepted: crate::config::reference::serde_fields::<NatInterfaceKeys>,
    aliases: &[],
    keys: &[
        Key::required("interface", "string", "a routed interface", "\"d0\""),
        Key::required("role", "string", "inside | outside", "\"inside\""),
    ],
};

pub(crate) const NAT44_STATIC: SectionDoc = SectionDoc {
    name: "nat44-static",
    array: true,
    file: "nat44/config.rs",
    doc: "A static mapping (port forward): what arrives for the external address and port \
          goes to the inside host's, and that host's flows from its port leave from the \
          external one.",
    accepted: crate::config::reference::serde_fields::<NatStaticKeys>,
    aliases: &[],
    keys: &[
        Key::required("protocol", "string", "tcp | udp", "\"tcp\""),
        Key::required(
            "local",
            "string",
            "the inside host, ADDRESS:PORT",
            "\"10.0.0.3:8080\"",
        ),
        Key::required(
            "external",
            "string",
            "the outside address and port, ADDRESS:PORT",
            "\"203.0.113.1:80\"",
        ),
    ],
};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct NatKeys {
    addresses: Option<Vec<Spanned<String>>>,
    max_sessions: Option<Spanned<u64>>,
    max_sessions_per_host: Option<Spanned<u64>>,
    udp_timeout: Option<Spanned<u64>>,
    tcp_established_timeout: Option<Spanned<u64>>,
    tcp_transitory_timeout: Option<Spanned<u64>>,
    icmp_timeout: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NatInterfaceKeys {
    interface: Spanned<String>,
    role: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NatStaticKeys {
    protocol: Spanned<String>,
    local: Spanned<String>,
    external: Spanned<String>,
}

/// The NAT as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nat44Config {
    pub addresses: Vec<u32>,
    pub max_sessions: usize,
    pub per_host: u32,
    pub timeouts: Timeouts,
    /// (interface name, inside?).
    pub interfaces: Vec<(String, bool)>,
    pub statics: Vec<StaticMapping>,
}

impl Default for Nat44Config {
    fn default() -> Nat44Config {
        Nat44Config {
            addresses: Vec::new(),
            max_sessions: DEFAULT_SESSIONS,
            per_host: 4096,
            timeouts: Timeouts::default(),
            interfaces: Vec::new(),
            statics: Vec::new(),
        }
    }
}

pub const DEFAULT_SESSIONS: usize = 1 << 20;
pub const MIN_SESSIONS: u64 = 1024;
pub const MAX_SESSIONS: u64 = 1 << 24;
const MAX_POOL: usize = 1024;
pub const MAX_TIMEOUT: u64 = 30 * 86_400;

/// `A` or `A-B` (inclusive), as addresses.
pub fn parse_range(s: &str) -> Result<Vec<u32>, String> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let parse = |x: &str| {
        x.trim()
            .parse::<Ipv4Addr>()
            .map(u32::from)
            .map_err(|_| format!("'{x}' is not an IPv4 address"))
    };
    let (a, b) = (parse(a)?, parse(b)?);
    if b < a || (b - a) as usize >= MAX_POOL {
        return Err(format!(
            "'{s}': a range runs upwards and holds at most {MAX_POOL} addresses"
        ));
    }
    Ok((a..=b).collect())
}

/// `ADDRESS:PORT`.
pub fn parse_endpoint(s: &str) -> Result<(u32, u16), String> {
    let addr: std::net::SocketAddrV4 = s
        .parse()
        .map_err(|_| format!("'{s}' is not ADDRESS:PORT (an IPv4 address and a port)"))?;
    if addr.port() == 0 {
        return Err(format!("'{s}': port 0"));
    }
    Ok((u32::from(*addr.ip()), addr.port()))
}

pub fn parse_protocol(s: &str) -> Result<u8, String> {
    match s {
        "tcp" => Ok(super::packet::TCP),
        "udp" => Ok(super::packet::UDP),
        _ => Err(format!("protocol '{s}': tcp or udp")),
    }
}

type Sections = (NatKeys, Vec<NatInterfaceKeys>, Vec<NatStaticKeys>);

/// The three sections checked together; `None` when none is written.
pub(crate) fn check(
    (nat, interfaces, statics): Sections,
    names: &[&str],
    c: &Checker<'_>,
) -> Result<Option<Nat44Config>, ConfigError> {
    let written = nat.addresses.is_some()
        || nat.max_sessions.is_some()
        || nat.max_sessions_per_host.is_some()
        || nat.udp_timeout.is_some()
        || nat.tcp_established_timeout.is_some()
        || nat.tcp_transitory_timeout.is_some()
        || nat.icmp_timeout.is_some()
        || !interfaces.is_empty()
        || !statics.is_empty();
    let mut out = Nat44Config::default();
    for a in nat.addresses.iter().flatten() {
        let mut more = parse_range(a.get_ref()).map_err(|e| c.err(a.span(), "addresses", e))?;
        if out.addresses.len() + more.len() > MAX_POOL {
            return Err(c.err(
                a.span(),
                "addresses",
                format!("more than {MAX_POOL} addresses"),
            ));
        }
        out.addresses.append(&mut more);
    }
    if let Some(v) = c.within(
        &nat.max_sessions,
        "max-sessions",
        MIN_SESSIONS..=MAX_SESSIONS,
        |v| format!("{v}: from {MIN_SESSIONS} to {MAX_SESSIONS}"),
    )? {
        out.max_sessions = v as usize;
    }
    let most = out.max_sessions as u64;
    if let Some(v) = c.within(
        &nat.max_sessions_per_host,
        "max-sessions-per-host",
        1..=most,
        |v| format!("{v}: from 1 to max-sessions ({most})"),
    )? {
        out.per_host = v as u32;
    }
    let t = &mut out.timeouts;
    for (key, value, field) in [
        ("udp-timeout", &nat.udp_timeout, &mut t.udp),
        (
            "tcp-established-timeout",
            &nat.tcp_established_timeout,
            &mut t.tcp_established,
        ),
        (
            "tcp-transitory-timeout",
            &nat.tcp_transitory_timeout,
            &mut t.tcp_transitory,
        ),
        ("icmp-timeout", &nat.icmp_timeout, &mut t.icmp),
    ] {
        if let Some(s) = c.within(value, key, 1..=MAX_TIMEOUT, |s| {
            format!("{s} s: from 1 to {MAX_TIMEOUT}")
        })? {
            *field = s as u32;
        }
    }
    for i in interfaces {
        c.known_interface(&i.interface, "interface", names)?;
        let inside = match i.role.get_ref().as_str() {
            "inside" => true,
            "outside" => false,
            other => {
                let msg = format!("'{other}': inside or outside");
                return Err(c.err(i.role.span(), "role", msg));
            }
        };
        let name = i.interface.into_inner();
        if out.interfaces.iter().any(|(n, _)| *n == name) {
            return Err(ConfigError(format!(
                "{}: [[nat44-interface]] '{name}' is given twice",
                c.origin
            )));
        }
        out.interfaces.push((name, inside));
    }
    for s in statics {
        let proto = parse_protocol(s.protocol.get_ref())
            .map_err(|e| c.err(s.protocol.span(), "protocol", e))?;
        let local =
            parse_endpoint(s.local.get_ref()).map_err(|e| c.err(s.local.span(), "local", e))?;
        let external = parse_endpoint(s.external.get_ref())
            .map_err(|e| c.err(s.external.span(), "external", e))?;
        let m = StaticMapping {
            proto,
            local,
            external,
        };
        if out
            .statics
            .iter()
            .any(|o| o.proto == proto && (o.external == external || o.local == local))
        {
            return Err(c.err(
                s.external.span(),
                "external",
                "another static mapping has this external or local endpoint".into(),
            ));
        }
        out.statics.push(m);
    }
    Ok(written.then_some(out))
}

#[cfg(test)]
mod tests {
    use crate::config::{interface_with, parse_error, Config};

    fn two() -> String {
        let mut s = interface_with("null", "");
        s.push_str("[[interface]]\nname = \"b\"\ndriver = \"null\"\n");
        s
    }

    #[test]
    fn a_full_nat_section_is_read() {
        let src = format!(
            "{}[nat44]\naddresses = [\"203.0.113.1\", \"203.0.113.8-203.0.113.9\"]\n\
             udp-timeout = 30\n[[nat44-interface]]\ninterface = \"a\"\nrole = \"inside\"\n\
             [[nat44-interface]]\ninterface = \"b\"\nrole = \"outside\"\n\
             [[nat44-static]]\nprotocol = \"tcp\"\nlocal = \"10.0.0.3:8080\"\n\
             external = \"203.0.113.1:80\"\n",
            two()
        );
        let cfg = Config::parse(&src, "t.toml").unwrap();
        let nat = cfg.nat44.unwrap();
        assert_eq!(nat.addresses.len(), 3);
        assert_eq!(nat.timeouts.udp, 30);
        assert_eq!(nat.interfaces, [("a".into(), true), ("b".into(), false)]);
        assert_eq!(nat.statics[0].external, (0xcb00_7101, 80));
        assert!(Config::parse(&two(), "t.toml").unwrap().nat44.is_none());
    }

    #[test]
    fn bad_nat_lines_name_line_and_key() {
        for (extra, key, words) in [
            ("[nat44]\naddresses = [\"1.2.3\"]\n", "addresses", "not an IPv4"),
            ("[nat44]\naddresses = [\"1.0.0.9-1.0.0.1\"]\n", "addresses", "upwards"),
            ("[nat44]\nmax-sessions = 5\n", "max-sessions", "from 1024"),
            ("[nat44]\nicmp-timeout = 0\n", "icmp-timeout", "from 1"),
            ("[[nat44-interface]]\ninterface = \"a\"\nrole = \"middle\"\n", "role", "inside or outside"),
            ("[[nat44-interface]]\ninterface = \"z\"\nrole = \"inside\"\n", "interface", "no interface"),
            (
                "[[nat44-static]]\nprotocol = \"gre\"\nlocal = \"10.0.0.1:1\"\nexternal = \"1.1.1.1:1\"\n",
                "protocol",
                "tcp or udp",
            ),
            (
                "[[nat44-static]]\nprotocol = \"udp\"\nlocal = \"10.0.0.1\"\nexternal = \"1.1.1.1:1\"\n",
                "local",
                "ADDRESS:PORT",
            ),
        ] {
            let e = parse_error(&format!("{}{extra}", two()));
            assert!(e.contains(&format!("key '{key}'")) && e.contains(words), "{extra}: {e}");
            assert!(e.starts_with("t.toml:"), "{e}");
        }
    }
}
