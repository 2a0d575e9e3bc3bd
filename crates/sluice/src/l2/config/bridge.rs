//! [[bridge-domain]] and [[l2fib]]: bridge domains, their members, and static MAC entries.
//!
//! ```toml
//! [[bridge-domain]]
//! id = 10
//! learn = true            # learn source addresses
//! flood = true            # flood broadcast and multicast
//! uu-flood = true         # flood unicast to unknown addresses
//! mac-age = 5             # minutes a learnt address lives unseen, or "30s", "5m"; 0: forever
//! mac-limit = 1048576     # learnt addresses at most
//! group-fwd-mask = 0x4008 # forward 01:80:c2:00:00:03 (802.1X) and :0e (LLDP)
//! members = ["d0", { interface = "d1", shg = 1, mac-limit = 100 }]
//! arp-term = true         # answer ARP requests for these addresses instead of flooding
//! arp-entries = [{ ip = "192.0.2.9", mac = "02:00:00:00:00:09" }]
//!
//! [[l2fib]]
//! mac = "02:00:00:00:00:01"
//! bridge-domain = 10
//! interface = "d0"        # a static entry: never ages, never moves
//!
//! [[bvi]]                 # the domain's routed interface, named bvi10
//! instance = 10
//! bridge-domain = 10
//! mac = "02:fe:00:00:00:0a"   # optional
//! address = ["192.0.2.1/24", "2001:db8::1/64"]
//! ```

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use crate::l2::bridge::{
    check_group_fwd_mask, DomainSettings, DEFAULT_MAC_AGE_S, DEFAULT_MAC_LIMIT, MAX_DOMAINS,
};
use crate::wire::MacAddress;
use serde::Deserialize;
use toml::Spanned;

/// [[bridge-domain]] in the reference (`docs/config.md`).
pub(crate) const BRIDGE_DOMAIN: SectionDoc = SectionDoc {
    name: "bridge-domain",
    array: true,
    file: "l2/config/bridge.rs",
    doc: "A learning bridge over its member interfaces (see docs/l2.md).",
    accepted: crate::config::reference::serde_fields::<BridgeDomainKeys>,
    aliases: &[],
    keys: &[
        Key::required("id", "integer", "the domain's number, unique", "10"),
        Key {
            name: "learn",
            ty: "boolean",
            default: "true",
            doc: "learn source MAC addresses",
            example: "true",
        },
        Key {
            name: "flood",
            ty: "boolean",
            default: "true",
            doc: "flood broadcast and multicast frames",
            example: "true",
        },
        Key {
            name: "uu-flood",
            ty: "boolean",
            default: "true",
            doc: "flood unicast frames to unknown addresses",
            example: "true",
        },
        Key {
            name: "mac-age",
            ty: "integer (minutes) or string",
            default: "5 (300 s, Linux's ageing_time)",
            doc: "how long a learnt address lives unseen: minutes, or a number with s or m (\"30s\", \"5m\"); 0: forever (a MAC flood then fills the table for good)",
            example: "5",
        },
        Key {
            name: "mac-limit",
            ty: "integer",
            default: "1048576",
            doc: "learnt addresses at most; beyond it new sources are counted, not stored",
            example: "1048576",
        },
        Key {
            name: "group-fwd-mask",
            ty: "integer",
            default: "0 (none)",
            doc: "bit N set: forward frames to the reserved group 01:80:c2:00:00:0N, as Linux's group_fwd_mask (others are dropped, counted; :00 is always forwarded, as no spanning tree runs here); bits 0-2 are refused",
            example: "0x4008",
        },
        Key {
            name: "members",
            ty: "list of strings or {interface, shg} tables",
            default: "[] (none)",
            doc: "the ports: an interface name, or { interface = NAME, shg = N, mac-limit = M } to put it in split-horizon group N (no forwarding between ports of one group) and let it hold at most M learnt addresses (default 8192; beyond it new sources and moves to it are counted, not stored); each interface in one domain only",
            example: "[\"d2\", { interface = \"d3\", shg = 1, mac-limit = 100 }]",
        },
        Key {
            name: "arp-term",
            ty: "boolean",
            default: "false",
            doc: "answer ARP requests for the arp-entries instead of flooding them",
            example: "true",
        },
        Key {
            name: "arp-entries",
            ty: "list of {ip, mac} tables",
            default: "[] (none)",
            doc: "IPv4 addresses and unicast MACs the domain answers ARP for (with arp-term)",
            example: "[{ ip = \"192.0.2.9\", mac = \"02:00:00:00:00:09\" }]",
        },
    ],
};

/// [[l2fib]] in the reference (`docs/config.md`).
pub(crate) const L2FIB: SectionDoc = SectionDoc {
    name: "l2fib",
    array: true,
    file: "l2/config/bridge.rs",
    doc: "A static MAC entry of a bridge domain: never ages, never moves.",
    accepted: crate::config::reference::serde_fields::<StaticMacKeys>,
    aliases: &[],
    keys: &[
        Key::required(
            "mac",
            "string",
            "a unicast MAC address",
            "\"02:00:00:00:00:01\"",
        ),
        Key::required(
            "bridge-domain",
            "integer",
            "a defined [[bridge-domain]]'s id",
            "10",
        ),
        Key::required(
            "interface",
            "string",
            "the member the address is behind",
            "\"d2\"",
        ),
    ],
};

/// [[bvi]] in the reference (`docs/config.md`).
pub(crate) const BVI: SectionDoc = SectionDoc {
    name: "bvi",
    array: true,
    file: "l2/config/bridge.rs",
    doc: "A bridge domain's routed interface (bridge-virtual interface) `bviN`, one per \
          domain: it switches in the domain and routes with its addresses.",
    accepted: crate::config::reference::serde_fields::<BviKeys>,
    aliases: &[],
    keys: &[
        Key::required("instance", "integer", "N of the name bviN, unique", "10"),
        Key::required("bridge-domain", "integer", "the domain it joins", "10"),
        Key {
            name: "mac",
            ty: "string",
            default: "02:fe:00:00:HI:LO (from its interface index)",
            doc: "its unicast MAC address",
            example: "\"02:fe:00:00:00:0a\"",
        },
        Key {
            name: "address",
            ty: "list of strings",
            default: "[] (none)",
            doc: "IPv4/IPv6 ADDRESS/LENGTH it routes with",
            example: "[\"192.0.2.1/24\", \"2001:db8::1/64\"]",
        },
    ],
};

/// A checked [[bridge-domain]].
#[derive(Debug)]
pub struct BridgeDomainConfig {
    pub id: u32,
    pub settings: DomainSettings,
    /// (interface name, split-horizon group).
    pub members: Vec<(String, u8)>,
    /// (interface name, learn limit) of the members given a `mac-limit`.
    pub port_limits: Vec<(String, usize)>,
    /// (IPv4 address, MAC) the domain answers ARP requests for.
    pub arp_entries: Vec<(std::net::Ipv4Addr, MacAddress)>,
}

/// A checked [[bvi]].
#[derive(Debug)]
pub struct BviConfig {
    pub instance: u32,
    pub bd: u32,
    pub mac: Option<MacAddress>,
    pub address: Vec<Spanned<String>>,
}

impl BviConfig {
    pub fn name(&self) -> String {
        format!("bvi{}", self.instance)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct BviKeys {
    instance: Spanned<u32>,
    bridge_domain: Spanned<u32>,
    mac: Option<Spanned<String>>,
    #[serde(default)]
    address: Vec<Spanned<String>>,
}

/// Each BVI once, in a defined domain, one per domain, its addresses well formed.
pub(crate) fn check_bvis(
    keys: Vec<BviKeys>,
    domains: &[BridgeDomainConfig],
    c: &Checker<'_>,
) -> Result<Vec<BviConfig>, ConfigError> {
    let mut out: Vec<BviConfig> = Vec::new();
    for k in keys {
        let instance = *k.instance.get_ref();
        if out.iter().any(|b| b.instance == instance) {
            return Err(c.err(
                k.instance.span(),
                "instance",
                format!("bvi{instance} is defined twice"),
            ));
        }
        let bd = *k.bridge_domain.get_ref();
        if !domains.iter().any(|d| d.id == bd) {
            return Err(c.err(
                k.bridge_domain.span(),
                "bridge-domain",
                format!("no [[bridge-domain]] with id {bd}"),
            ));
        }
        if out.iter().any(|b| b.bd == bd) {
            return Err(c.err(
                k.bridge_domain.span(),
                "bridge-domain",
                format!("bridge domain {bd} has a BVI already"),
            ));
        }
        let mac = match &k.mac {
            None => None,
            Some(m) => Some(
                m.get_ref()
                    .parse::<MacAddress>()
                    .ok()
                    .filter(|a| !a.is_multicast())
                    .ok_or_else(|| {
                        c.err(
                            m.span(),
                            "mac",
                            format!("'{}' is not a unicast MAC address", m.get_ref()),
                        )
                    })?,
            ),
        };
        for a in &k.address {
            crate::router::parse_interface_address(a.get_ref())
                .map_err(|e| c.err(a.span(), "address", e))?;
        }
        out.push(BviConfig {
            instance,
            bd,
            mac,
            address: k.address,
        });
    }
    Ok(out)
}

/// A checked [[l2fib]] entry.
#[derive(Debug)]
pub struct StaticMac {
    pub mac: MacAddress,
    pub bd: u32,
    pub interface: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Member {
    Name(String),
    Port(PortKeys),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct PortKeys {
    interface: String,
    shg: Option<u8>,
    mac_limit: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Age {
    Minutes(u32),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct BridgeDomainKeys {
    id: Spanned<u32>,
    learn: Option<bool>,
    flood: Option<bool>,
    uu_flood: Option<bool>,
    mac_age: Option<Spanned<Age>>,
    mac_limit: Option<Spanned<usize>>,
    group_fwd_mask: Option<Spanned<u16>>,
    #[serde(default)]
    members: Vec<Spanned<Member>>,
    arp_term: Option<bool>,
    #[serde(default)]
    arp_entries: Vec<Spanned<ArpEntryKeys>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArpEntryKeys {
    ip: String,
    mac: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct StaticMacKeys {
    mac: Spanned<String>,
    bridge_domain: Spanned<u32>,
    interface: Spanned<String>,
}

/// `mac-age` as the CLI and the config take it: minutes, or a number with `s` or `m`.
pub fn parse_mac_age(text: &str) -> Result<u32, String> {
    let (number, unit) = match text.strip_suffix('s') {
        Some(n) => (n, 1),
        None => (text.strip_suffix('m').unwrap_or(text), 60),
    };
    number
        .parse::<u32>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("'{text}' is not an age (minutes, or a number with s or m)"))
}

/// The domains in order, each id once, each member a defined interface in one domain only.
pub(crate) fn check_domains(
    keys: Vec<BridgeDomainKeys>,
    names: &[&str],
    c: &Checker<'_>,
) -> Result<Vec<BridgeDomainConfig>, ConfigError> {
    let mut out: Vec<BridgeDomainConfig> = Vec::new();
    if keys.len() > MAX_DOMAINS {
        return Err(ConfigError(format!(
            "{}: at most {MAX_DOMAINS} bridge domains",
            c.origin
        )));
    }
    for k in keys {
        let id = *k.id.get_ref();
        if out.iter().any(|d| d.id == id) {
            return Err(c.err(
                k.id.span(),
                "id",
                format!("bridge domain {id} is defined twice"),
            ));
        }
        let mac_age_s = match &k.mac_age {
            None => DEFAULT_MAC_AGE_S,
            Some(a) => match a.get_ref() {
                Age::Minutes(m) => m.saturating_mul(60),
                Age::Text(t) => parse_mac_age(t).map_err(|e| c.err(a.span(), "mac-age", e))?,
            },
        };
        let mac_limit = k
            .mac_limit
            .as_ref()
            .map_or(DEFAULT_MAC_LIMIT, |l| *l.get_ref());
        let group_fwd_mask = match &k.group_fwd_mask {
            None => 0,
            Some(m) => {
                check_group_fwd_mask(*m.get_ref())
                    .map_err(|e| c.err(m.span(), "group-fwd-mask", e))?;
                *m.get_ref()
            }
        };
        let mut members = Vec::new();
        let mut port_limits = Vec::new();
        for m in &k.members {
            let (name, shg) = match m.get_ref() {
                Member::Name(n) => (n.clone(), 0),
                Member::Port(p) => {
                    if let Some(l) = p.mac_limit {
                        port_limits.push((p.interface.clone(), l));
                    }
                    (p.interface.clone(), p.shg.unwrap_or(0))
                }
            };
            if !names.contains(&name.as_str()) {
                return Err(c.err(
                    m.span(),
                    "members",
                    format!(
                        "no interface named '{name}' (defined: {})",
                        names.join(", ")
                    ),
                ));
            }
            let elsewhere = out
                .iter()
                .find(|d| d.members.iter().any(|(n, _)| *n == name));
            if let Some(d) = elsewhere.map(|d| d.id).or_else(|| {
                members
                    .iter()
                    .any(|(n, _): &(String, u8)| *n == name)
                    .then_some(id)
            }) {
                return Err(c.err(
                    m.span(),
                    "members",
                    format!("interface '{name}' is already in bridge domain {d}"),
                ));
            }
            members.push((name, shg));
        }
        let mut arp_entries = Vec::new();
        for e in &k.arp_entries {
            let (ip, mac) = (&e.get_ref().ip, &e.get_ref().mac);
            let parsed = ip.parse().ok().zip(
                mac.parse::<MacAddress>()
                    .ok()
                    .filter(|m: &MacAddress| !m.is_multicast()),
            );
            arp_entries.push(parsed.ok_or_else(|| {
                c.err(
                    e.span(),
                    "arp-entries",
                    format!("'{ip}' '{mac}' is not an IPv4 address and a unicast MAC"),
                )
            })?);
        }
        out.push(BridgeDomainConfig {
            id,
            settings: DomainSettings {
                learn: k.learn.unwrap_or(true),
                flood: k.flood.unwrap_or(true),
                uu_flood: k.uu_flood.unwrap_or(true),
                mac_age_s,
                mac_limit,
                arp_term: k.arp_term.unwrap_or(false),
                group_fwd_mask,
            },
            members,
            port_limits,
            arp_entries,
        });
    }
    Ok(out)
}

/// Each entry a unicast address, in a defined domain, behind one of its members.
pub(crate) fn check_macs(
    keys: Vec<StaticMacKeys>,
    domains: &[BridgeDomainConfig],
    c: &Checker<'_>,
) -> Result<Vec<StaticMac>, ConfigError> {
    let mut out = Vec::new();
    for k in keys {
        let mac: MacAddress = k
            .mac
            .get_ref()
            .parse()
            .ok()
            .filter(|m: &MacAddress| !m.is_multicast())
            .ok_or_else(|| {
                c.err(
                    k.mac.span(),
                    "mac",
                    format!("'{}' is not a unicast MAC address", k.mac.get_ref()),
                )
            })?;
        let bd = *k.bridge_domain.get_ref();
        let domain = domains.iter().find(|d| d.id == bd).ok_or_else(|| {
            c.err(
                k.bridge_domain.span(),
                "bridge-domain",
                format!("no [[bridge-domain]] with id {bd}"),
            )
        })?;
        let interface = k.interface.get_ref().clone();
        if !domain.members.iter().any(|(n, _)| *n == interface) {
            return Err(c.err(
                k.interface.span(),
                "interface",
                format!("interface '{interface}' is not a member of bridge domain {bd}"),
            ));
        }
        out.push(StaticMac { mac, bd, interface });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error_tests;
    use crate::config::Config;

    const TWO: &str = "[[interface]]\nname = \"a\"\ndriver = \"pcap\"\ntx-file = \"a.pcap\"\n\
        [[interface]]\nname = \"b\"\ndriver = \"pcap\"\ntx-file = \"b.pcap\"\n";

    #[test]
    fn a_domain_with_members_and_a_static_entry_parses() {
        let src = format!(
            "{TWO}[[bridge-domain]]\nid = 10\nmac-age = \"30s\"\ngroup-fwd-mask = 0x4008\n\
             members = [\"a\", {{ interface = \"b\", shg = 2, mac-limit = 7 }}]\n\
             arp-term = true\narp-entries = [{{ ip = \"192.0.2.9\", mac = \"02:00:00:00:00:09\" }}]\n\
             [[l2fib]]\nmac = \"02:00:00:00:00:01\"\nbridge-domain = 10\ninterface = \"b\"\n"
        );
        let c = Config::parse(&src, "t.toml").unwrap();
        let d = &c.bridge_domains[0];
        assert_eq!(d.members, vec![("a".to_string(), 0), ("b".to_string(), 2)]);
        assert_eq!(d.settings.mac_age_s, 30);
        assert_eq!(d.settings.group_fwd_mask, 0x4008);
        assert_eq!(d.port_limits, vec![("b".to_string(), 7)]);
        assert!(d.settings.learn && d.settings.uu_flood && d.settings.arp_term);
        assert_eq!(d.arp_entries[0].0, std::net::Ipv4Addr::new(192, 0, 2, 9));
        assert_eq!(c.static_macs[0].interface, "b");
    }

    #[test]
    fn ages_in_minutes_or_with_a_unit() {
        assert_eq!(parse_mac_age("5"), Ok(300));
        assert_eq!(parse_mac_age("5m"), Ok(300));
        assert_eq!(parse_mac_age("45s"), Ok(45));
        assert!(parse_mac_age("5h").is_err());
        assert!(parse_mac_age("-1").is_err());
    }

    error_tests! {
        member_unknown: format!("{TWO}[[bridge-domain]]\nid = 1\nmembers = [\"c\"]\n")
            => "t.toml:11: key 'members': no interface named 'c' (defined: a, b)";
        member_twice: format!("{TWO}[[bridge-domain]]\nid = 1\nmembers = [\"a\"]\n[[bridge-domain]]\nid = 2\nmembers = [\"a\"]\n")
            => "t.toml:14: key 'members': interface 'a' is already in bridge domain 1";
        domain_twice: format!("{TWO}[[bridge-domain]]\nid = 1\n[[bridge-domain]]\nid = 1\n")
            => "t.toml:12: key 'id': bridge domain 1 is defined twice";
        restricted_group: format!("{TWO}[[bridge-domain]]\nid = 1\ngroup-fwd-mask = 1\n")
            => "t.toml:11: key 'group-fwd-mask': group-fwd-mask 0x0001: bits 0-2 (01:80:c2:00:00:00 STP, :01 PAUSE, :02 LACP) are never forwarded";
        bad_age: format!("{TWO}[[bridge-domain]]\nid = 1\nmac-age = \"1h\"\n")
            => "t.toml:11: key 'mac-age': '1h' is not an age (minutes, or a number with s or m)";
        static_in_unknown_domain: format!("{TWO}[[l2fib]]\nmac = \"02:00:00:00:00:01\"\nbridge-domain = 3\ninterface = \"a\"\n")
            => "t.toml:11: key 'bridge-domain': no [[bridge-domain]] with id 3";
        static_multicast: format!("{TWO}[[bridge-domain]]\nid = 1\nmembers = [\"a\"]\n[[l2fib]]\nmac = \"01:00:5e:00:00:01\"\nbridge-domain = 1\ninterface = \"a\"\n")
            => "t.toml:13: key 'mac': '01:00:5e:00:00:01' is not a unicast MAC address";
        static_not_a_member: format!("{TWO}[[bridge-domain]]\nid = 1\nmembers = [\"a\"]\n[[l2fib]]\nmac = \"02:00:00:00:00:01\"\nbridge-domain = 1\ninterface = \"b\"\n")
            => "t.toml:15: key 'interface': interface 'b' is not a member of bridge domain 1";
        bvi_in_unknown_domain: format!("{TWO}[[bvi]]\ninstance = 1\nbridge-domain = 4\n")
            => "t.toml:11: key 'bridge-domain': no [[bridge-domain]] with id 4";
        bridged_and_routed: format!("{TWO}address = [\"192.0.2.1/24\"]\n[[bridge-domain]]\nid = 1\nmembers = [\"b\"]\n")
            => "t.toml:6: key 'address': interface 'b' is in a bridge domain; it cannot also route";
    }
}
