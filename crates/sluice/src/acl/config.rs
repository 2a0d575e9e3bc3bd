//! `[[acl]]` (a named rule list) and `[[acl-input]]` (a list checking what an interface
//! receives, before routing):
//!
//! ```toml
//! [[acl]]
//! name = "edge"
//! rules = ["deny src 198.18.0.7/32", "permit proto tcp dport 22", "deny proto tcp", "permit"]
//!
//! [[acl-input]]
//! interface = "e0"
//! acl = "edge"
//!
//! [[acl-output]]      # what e1 sends, after the rewrite
//! interface = "e1"
//! acl = "edge"
//!
//! [sessions]          # the tables permit+reflect rules fill (per worker; timeouts in s)
//! per-worker = 65536
//! udp = 120
//! ```
//!
//! A packet no rule matches is denied, as in VPP's ACL plugin (end a list with `permit` to
//! pass the rest). Each rule is checked by `Rule::parse`, errors on its line.

use crate::acl::session::Timeouts;
use crate::acl::Rule;
use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use toml::Spanned;

/// [[acl]] in the reference (`docs/config.md`).
pub(crate) const ACL: SectionDoc = SectionDoc {
    name: "acl",
    array: true,
    file: "acl/config.rs",
    doc: "A named rule list (see docs/acl.md). The first rule that matches decides; a packet \
          no rule matches is denied.",
    accepted: crate::config::reference::serde_fields::<AclKeys>,
    aliases: &[],
    keys: &[
        Key::required("name", "string", "the list's name, unique", "\"edge\""),
        Key::required(
            "rules",
            "list of strings",
            "permit|deny|permit+reflect [ipv4|ipv6] [src PREFIX|any] [dst PREFIX|any] [proto \
             tcp|udp|icmp|icmpv6|N] [sport P[-Q]] [dport P[-Q]] [icmp-type T[-U]] [icmp-code \
             C[-D]] [tcp-flags VALUE MASK]; permit+reflect opens a session that lets the replies \
             in",
            "[\"deny proto icmp\", \"permit\"]",
        ),
    ],
};

/// [[acl-input]] in the reference (`docs/config.md`).
pub(crate) const ACL_INPUT: SectionDoc = SectionDoc {
    name: "acl-input",
    array: true,
    file: "acl/config.rs",
    doc: "Check what a routed interface receives against an ACL, before the route lookup.",
    accepted: crate::config::reference::serde_fields::<AclInputKeys>,
    aliases: &[],
    keys: &ACL_BINDING_KEYS,
};

/// [[acl-output]] in the reference (`docs/config.md`).
pub(crate) const ACL_OUTPUT: SectionDoc = SectionDoc {
    name: "acl-output",
    array: true,
    file: "acl/config.rs",
    doc: "Check what a routed interface sends against an ACL, after the rewrite.",
    accepted: crate::config::reference::serde_fields::<AclInputKeys>,
    aliases: &[],
    keys: &ACL_BINDING_KEYS,
};

const ACL_BINDING_KEYS: [Key; 2] = [
    Key::required("interface", "string", "the interface checked", "\"d0\""),
    Key::required("acl", "string", "an [[acl]]'s name", "\"edge\""),
];

/// [sessions] in the reference (`docs/config.md`).
pub(crate) const SESSIONS: SectionDoc = SectionDoc {
    name: "sessions",
    array: false,
    file: "acl/config.rs",
    doc: "The per-worker session tables that permit+reflect rules fill; timeouts in seconds \
          (1 s to 30 days).",
    accepted: crate::config::reference::serde_fields::<SessionsKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "per-worker",
            ty: "integer",
            default: "65536",
            doc: "sessions each worker's table holds (1024 to 16777216; about 64 bytes each)",
            example: "65536",
        },
        Key {
            name: "per-source",
            ty: "integer",
            default: "0",
            doc: "sessions one source address may open in each worker's table, 0 for no limit (counted by the \
                  sender of a session's first packet and its routing table); a reflect packet \
                  over it is dropped and counted. Costs about 48 bytes per slot per worker",
            example: "1000",
        },
        Key {
            name: "tcp-established",
            ty: "integer",
            default: "7200",
            doc: "a TCP session with a SYN seen both ways and no FIN or RST",
            example: "7200",
        },
        Key {
            name: "tcp-transient",
            ty: "integer",
            default: "120",
            doc: "a TCP session opening or closing (a FIN each way, or a RST)",
            example: "120",
        },
        Key {
            name: "udp",
            ty: "integer",
            default: "120",
            doc: "a UDP session",
            example: "120",
        },
        Key {
            name: "icmp",
            ty: "integer",
            default: "30",
            doc: "an ICMP or ICMPv6 session",
            example: "30",
        },
        Key {
            name: "other",
            ty: "integer",
            default: "60",
            doc: "a session of any other protocol",
            example: "60",
        },
    ],
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AclKeys {
    name: Spanned<String>,
    rules: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AclInputKeys {
    interface: Spanned<String>,
    acl: Spanned<String>,
}

/// A named rule list.
#[derive(Debug, Clone)]
pub struct AclConfig {
    pub name: String,
    pub rules: Vec<Rule>,
    /// Each rule as written.
    pub texts: Vec<String>,
}

/// An interface's input (or output) list, by names.
#[derive(Debug, Clone)]
pub struct AclInput {
    pub interface: String,
    pub acl: String,
}

/// `[sessions]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct SessionsKeys {
    per_worker: Option<Spanned<u64>>,
    per_source: Option<Spanned<u64>>,
    tcp_established: Option<Spanned<u64>>,
    tcp_transient: Option<Spanned<u64>>,
    udp: Option<Spanned<u64>>,
    icmp: Option<Spanned<u64>>,
    other: Option<Spanned<u64>>,
}

/// The session tables permit+reflect rules fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionsConfig {
    pub per_worker: usize,
    /// Sessions a source may hold in each worker's table (0: no limit).
    pub per_source: u32,
    pub timeouts: Timeouts,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            per_worker: DEFAULT_SESSIONS,
            per_source: 0,
            timeouts: Timeouts::default(),
        }
    }
}

/// Sessions per worker unless `[sessions] per-worker` says otherwise.
pub const DEFAULT_SESSIONS: usize = 65_536;
const MAX_SESSIONS: u64 = 1 << 24;
/// The longest timeout: 30 days.
const MAX_TIMEOUT: u64 = 30 * 86_400;

impl SessionsKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<SessionsConfig, ConfigError> {
        let mut out = SessionsConfig::default();
        let per_worker = c.within(&self.per_worker, "per-worker", 1024..=MAX_SESSIONS, |v| {
            format!("{v} sessions: from 1024 to {MAX_SESSIONS} per worker")
        })?;
        if let Some(v) = per_worker {
            out.per_worker = v as usize;
        }
        let most = out.per_worker as u64;
        if let Some(v) = c.within(&self.per_source, "per-source", 0..=most, |v| {
            format!("{v} sessions: at most per-worker ({most}); 0 for no limit")
        })? {
            out.per_source = v as u32;
        }
        let t = &mut out.timeouts;
        for (key, value, field) in [
            (
                "tcp-established",
                &self.tcp_established,
                &mut t.tcp_established,
            ),
            ("tcp-transient", &self.tcp_transient, &mut t.tcp_transient),
            ("udp", &self.udp, &mut t.udp),
            ("icmp", &self.icmp, &mut t.icmp),
            ("other", &self.other, &mut t.other),
        ] {
            if let Some(v) = c.within(value, key, 1..=MAX_TIMEOUT, |v| {
                format!("{v} s: a timeout is from 1 s to {MAX_TIMEOUT} s (30 days)")
            })? {
                *field = v;
            }
        }
        Ok(out)
    }
}

pub(crate) fn check_acls(
    keys: Vec<AclKeys>,
    c: &Checker<'_>,
) -> Result<Vec<AclConfig>, ConfigError> {
    let mut out: Vec<AclConfig> = Vec::new();
    for a in keys {
        let name = a.name.get_ref();
        if name.is_empty() {
            return Err(c.err(a.name.span(), "name", "an ACL needs a name".into()));
        }
        crate::acl::control::check_name(name).map_err(|e| c.err(a.name.span(), "name", e))?;
        if out.iter().any(|x| &x.name == name) {
            return Err(c.err(
                a.name.span(),
                "name",
                format!("ACL '{name}' is defined twice"),
            ));
        }
        let rules = a
            .rules
            .iter()
            .map(|r| Rule::parse(r.get_ref()).map_err(|e| c.err(r.span(), "rules", e)))
            .collect::<Result<Vec<Rule>, ConfigError>>()?;
        out.push(AclConfig {
            name: name.clone(),
            rules,
            texts: a
                .rules
                .iter()
                .map(|r| r.get_ref().trim().to_string())
                .collect(),
        });
    }
    Ok(out)
}

/// `[[acl-input]]` or (`direction` "output") `[[acl-output]]`.
pub(crate) fn check_inputs(
    keys: Vec<AclInputKeys>,
    acls: &[AclConfig],
    interfaces: &[&str],
    (c, direction): (&Checker<'_>, &str),
) -> Result<Vec<AclInput>, ConfigError> {
    let mut out: Vec<AclInput> = Vec::new();
    for k in keys {
        c.known_interface(&k.interface, "interface", interfaces)?;
        let (iface, acl) = (k.interface.get_ref(), k.acl.get_ref());
        if !acls.iter().any(|a| &a.name == acl) {
            let names: Vec<&str> = acls.iter().map(|a| a.name.as_str()).collect();
            return Err(c.err(
                k.acl.span(),
                "acl",
                format!("no ACL named '{acl}' (defined: {})", names.join(", ")),
            ));
        }
        if out.iter().any(|x| &x.interface == iface) {
            return Err(c.err(
                k.interface.span(),
                "interface",
                format!("interface '{iface}' has an {direction} ACL already"),
            ));
        }
        out.push(AclInput {
            interface: iface.clone(),
            acl: acl.clone(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::GOOD;

    const ACL: &str = "[[acl]]\nname = \"edge\"\nrules = [\"deny proto icmp\", \"permit\"]\n";

    #[test]
    fn acl_config_is_read() {
        let text = format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n");
        let c = crate::config::Config::parse(&text, "t.toml").unwrap();
        assert_eq!(c.acls.len(), 1);
        assert_eq!(c.acls[0].rules.len(), 2);
        assert_eq!(c.acl_inputs[0].interface, "p0");
    }

    error_tests! {
        acl_bad_rule: format!("{GOOD}[[acl]]\nname = \"a\"\nrules = [\"permit\", \"allow all\"]\n")
            => "t.toml:20: key 'rules': 'allow' is no action (want permit, deny or permit+reflect)";
        acl_twice: format!("{GOOD}{ACL}{ACL}")
            => "t.toml:22: key 'name': ACL 'edge' is defined twice";
        acl_input_unknown_interface: format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p9\"\nacl = \"edge\"\n")
            => "t.toml:22: key 'interface': no interface named 'p9' (defined: p0, p1)";
        acl_input_unknown_acl: format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p0\"\nacl = \"core\"\n")
            => "t.toml:23: key 'acl': no ACL named 'core' (defined: edge)";
        acl_input_twice: format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n[[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n")
            => "t.toml:25: key 'interface': interface 'p0' has an input ACL already";
        acl_output_twice: format!("{GOOD}{ACL}[[acl-output]]\ninterface = \"p1\"\nacl = \"edge\"\n[[acl-output]]\ninterface = \"p1\"\nacl = \"edge\"\n")
            => "t.toml:25: key 'interface': interface 'p1' has an output ACL already";
        acl_bad_name: format!("{GOOD}[[acl]]\nname = \"a b\"\nrules = [\"permit\"]\n")
            => "t.toml:19: key 'name': 'a b' is not an ACL name (1 to 64 letters, digits, '-', '_' or '.')";
        sessions_too_few: format!("{GOOD}[sessions]\nper-worker = 10\n")
            => "t.toml:19: key 'per-worker': 10 sessions: from 1024 to 16777216 per worker";
        sessions_zero_timeout: format!("{GOOD}[sessions]\nudp = 0\n")
            => "t.toml:19: key 'udp': 0 s: a timeout is from 1 s to 2592000 s (30 days)";
        sessions_per_source_too_many: format!("{GOOD}[sessions]\nper-worker = 2048\nper-source = 4096\n")
            => "t.toml:20: key 'per-source': 4096 sessions: at most per-worker (2048); 0 for no limit";
        sessions_unknown_key: format!("{GOOD}[sessions]\ntcp = 5\n")
            => "t.toml:19: unknown field `tcp`, expected one of `per-worker`, `per-source`, `tcp-established`, `tcp-transient`, `udp`, `icmp`, `other`";
    }

    #[test]
    fn sessions_config_is_read() {
        let c = crate::config::Config::parse(
            &format!(
                "{GOOD}[sessions]\nper-worker = 2000000\nper-source = 500\ntcp-established = 600\nicmp = 5\n"
            ),
            "t.toml",
        )
        .unwrap();
        assert_eq!(c.sessions.per_worker, 2_000_000);
        assert_eq!(c.sessions.timeouts.tcp_established, 600);
        assert_eq!(c.sessions.timeouts.icmp, 5);
        assert_eq!(c.sessions.timeouts.udp, 120);
        assert_eq!(c.sessions.per_source, 500);
        let d = crate::config::Config::parse(GOOD, "t.toml").unwrap();
        assert_eq!(d.sessions, crate::config::SessionsConfig::default());
    }
}
