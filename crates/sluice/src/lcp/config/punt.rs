//! `[punt]`: what of the traffic for the router's addresses goes up the lcp taps, and how
//! fast, class by class (`src/lcp/policy.rs`, `src/lcp/punt_class.rs`).
//!
//! ```toml
//! [punt]
//! peers = ["192.0.2.2", "2001:db8::2"]           # their routing protocols: class protected
//! protected = { rate = 10000, burst = 1000 }     # packets a second each worker lets up
//! tcp-udp = { rate = 500 }
//! allow = ["bgp", "bfd", "ospf", "icmp", "icmp6", "arp", "nd"]   # default: everything
//! ```

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use crate::lcp::policy::{PuntPolicy, PuntRule};
use crate::lcp::punt_class::{ClassRate, Peers, PuntClass, CLASSES};
use serde::Deserialize;
use toml::Spanned;

/// The key of one class: its rate and burst.
const fn class_key(name: &'static str, default: &'static str, what: &'static str) -> Key {
    Key {
        name,
        ty: "table { rate, burst }",
        default,
        doc: what,
        example: "{ rate = 1000, burst = 100 }",
    }
}

/// [punt] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "punt",
    array: false,
    file: "lcp/config/punt.rs",
    doc: "The punt policy of the lcp taps: which packets for the router that sluice does not \
          answer itself go up to Linux, and how many a second. Each packet let up is put in a \
          class with its own token bucket in every worker (rate: packets a second, burst: how \
          many at once after a quiet spell, each 1 to 1000000), so a flood of one class \
          cannot starve another; a class's drops are counted as `punt rate limit exceeded: \
          CLASS (dropped)`. Routing protocols are BGP (tcp/179), BFD (udp/3784, 4784, \
          3785), LDP (646), RIP (udp/520), RIPng (udp/521), OSPF, PIM and VRRP. host-punt \
          drops what the policy does not allow, counted as `outside the punt policy`; `show \
          lcp` prints the policy.",
    accepted: crate::config::reference::serde_fields::<PuntKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "rate",
            ty: "integer",
            default: "each class's own",
            doc: "packets a second each worker lets up in every class that does not give its \
                  own rate, 1 to 1000000",
            example: "10000",
        },
        Key {
            name: "burst",
            ty: "integer",
            default: "each class's own",
            doc: "the burst of every class that does not give its own, 1 to 1000000",
            example: "1000",
        },
        Key {
            name: "peers",
            ty: "list of strings",
            default: "none (no packet is protected)",
            doc: "addresses (or prefixes, ADDRESS/LEN) of the routing peers, at most 1024: a \
                  routing protocol packet from one of them is in the class `protected`; from \
                  any other source (a SYN to tcp/179 from an unknown host) in `routing`. \
                  Trust is by source address: a host on the link that spoofs a peer's \
                  address reaches the protected class",
            example: "[\"192.0.2.2\", \"2001:db8::2\"]",
        },
        class_key(
            "protected",
            "{ rate = 10000, burst = 1000 }",
            "routing protocol packets from `peers`",
        ),
        class_key(
            "routing",
            "{ rate = 5000, burst = 500 }",
            "routing protocol packets from other sources",
        ),
        class_key("arp", "{ rate = 1000, burst = 100 }", "the copies of ARP"),
        class_key(
            "nd",
            "{ rate = 1000, burst = 100 }",
            "the copies of neighbour solicitations and advertisements; ICMPv6 router \
             solicitations and advertisements and redirects",
        ),
        class_key(
            "icmp",
            "{ rate = 1000, burst = 100 }",
            "other ICMP and ICMPv6 (echo replies to Linux's pings, MLD, errors)",
        ),
        class_key(
            "tcp-udp",
            "{ rate = 2000, burst = 200 }",
            "other TCP and UDP to the router (ssh, SNMP, a SYN flood to another port)",
        ),
        class_key(
            "other",
            "{ rate = 1000, burst = 100 }",
            "the rest: other protocols (GRE, IGMP...), fragments, packets too short to classify",
        ),
        Key {
            name: "allow",
            ty: "list of strings",
            default: "none (everything goes up)",
            doc: "what goes up: arp and nd (the copies of ARP and neighbour discovery), \
                  fragments, a protocol (icmp, tcp, udp, gre, esp, ah, icmp6, ospf, pim, vrrp, \
                  sctp, or a number 0-255; IPv6: the first next header), PROTOCOL/PORT for tcp, \
                  udp and sctp (the source or the destination port: tcp/179 takes a session \
                  either side opened), bgp (tcp/179), bfd (udp/3784, 4784, 3785); an empty \
                  list lets nothing up",
            example: "[\"bgp\", \"ospf\", \"icmp\", \"arp\", \"nd\"]",
        },
    ],
};

/// The [punt] section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct PuntKeys {
    rate: Option<Spanned<u64>>,
    burst: Option<Spanned<u64>>,
    peers: Option<Vec<Spanned<String>>>,
    protected: Option<ClassKeys>,
    routing: Option<ClassKeys>,
    arp: Option<ClassKeys>,
    nd: Option<ClassKeys>,
    icmp: Option<ClassKeys>,
    tcp_udp: Option<ClassKeys>,
    other: Option<ClassKeys>,
    allow: Option<Vec<Spanned<String>>>,
}

/// One class's `{ rate, burst }`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClassKeys {
    rate: Option<Spanned<u64>>,
    burst: Option<Spanned<u64>>,
}

impl PuntKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<PuntPolicy, ConfigError> {
        let bounded = |v: &Option<Spanned<u64>>, key: &str| {
            c.within(v, key, 1..=1_000_000, |n| {
                format!("{n} is not from 1 to 1000000")
            })
        };
        let rate = bounded(&self.rate, "rate")?;
        let burst = bounded(&self.burst, "burst")?;
        let written = [
            &self.protected,
            &self.routing,
            &self.arp,
            &self.nd,
            &self.icmp,
            &self.tcp_udp,
            &self.other,
        ];
        let mut classes = CLASSES.map(PuntClass::default_rate);
        for (k, class) in CLASSES.iter().enumerate() {
            let own = written[k].as_ref();
            let key = |what: &str| format!("{}.{what}", class.name());
            let own_rate = match own {
                Some(o) => bounded(&o.rate, &key("rate"))?,
                None => None,
            };
            let own_burst = match own {
                Some(o) => bounded(&o.burst, &key("burst"))?,
                None => None,
            };
            classes[k] = ClassRate {
                rate: own_rate.or(rate).unwrap_or(classes[k].rate),
                burst: own_burst.or(burst).unwrap_or(classes[k].burst),
            };
        }
        let peers = match &self.peers {
            None => Peers::default(),
            Some(words) => {
                for w in words {
                    Peers::parse(&[w.get_ref()]).map_err(|e| c.err(w.span(), "peers", e))?;
                }
                let all: Vec<&str> = words.iter().map(|w| w.get_ref().as_str()).collect();
                let at = words.first().map(|w| w.span()).unwrap_or_default();
                Peers::parse(&all).map_err(|e| c.err(at, "peers", e))?
            }
        };
        let allow = match self.allow {
            None => None,
            Some(words) => {
                let mut rules = Vec::new();
                for w in words {
                    let parsed =
                        PuntRule::parse(w.get_ref()).map_err(|e| c.err(w.span(), "allow", e))?;
                    for r in parsed {
                        if !rules.contains(&r) {
                            rules.push(r);
                        }
                    }
                }
                Some(rules)
            }
        };
        Ok(PuntPolicy {
            classes,
            peers,
            allow,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::Config;
    use crate::lcp::policy::PuntPolicy;
    use crate::lcp::punt_class::{ClassRate, PuntClass, CLASSES};

    fn punt(src: &str) -> PuntPolicy {
        Config::parse(src, "t.toml").unwrap().punt
    }

    #[test]
    fn without_the_section_everything_goes_up_at_the_default_rate() {
        assert_eq!(punt(""), PuntPolicy::default());
        let p = punt("[punt]\nrate = 50\nburst = 5\nallow = [\"bgp\", \"tcp/179\", \"nd\"]\n");
        for class in CLASSES {
            assert_eq!(p.rate(class), ClassRate { rate: 50, burst: 5 }, "{class:?}");
        }
        assert_eq!(p.allow_text(), ["tcp/179", "nd"], "named twice, kept once");
        assert_eq!(punt("[punt]\nallow = []\n").allow, Some(vec![]));
    }

    /// A class's own rate or burst wins over `rate` and `burst`, which win over the
    /// class's default.
    #[test]
    fn each_class_has_its_rate() {
        let p = punt(
            "[punt]\nburst = 7\npeers = [\"192.0.2.2\", \"2001:db8::/64\"]\n\
             tcp-udp = { rate = 300 }\n[punt.protected]\nrate = 20000\nburst = 2000\n",
        );
        let rate = |c: PuntClass| p.rate(c);
        assert_eq!(
            rate(PuntClass::Protected),
            ClassRate {
                rate: 20000,
                burst: 2000
            }
        );
        assert_eq!(
            rate(PuntClass::TcpUdp),
            ClassRate {
                rate: 300,
                burst: 7
            }
        );
        assert_eq!(
            rate(PuntClass::Arp),
            ClassRate {
                rate: 1000,
                burst: 7
            }
        );
        assert_eq!(p.peers.text(), ["192.0.2.2", "2001:db8::/64"]);
        assert_eq!(
            punt("").rate(PuntClass::Routing),
            ClassRate {
                rate: 5000,
                burst: 500
            }
        );
    }

    error_tests! {
        rate_zero: "[punt]\nrate = 0\n"
            => "t.toml:2: key 'rate': 0 is not from 1 to 1000000";
        burst_too_big: "[punt]\nburst = 2000000\n"
            => "t.toml:2: key 'burst': 2000000 is not from 1 to 1000000";
        unknown_rule: "[punt]\nallow = [\"bgp\", \"http\"]\n"
            => "t.toml:2: key 'allow': 'http' is not a punt rule (arp, nd, fragments, bgp, bfd, a protocol name or number such as ospf or 89, or PROTOCOL/PORT such as tcp/179)";
        port_of_ospf: "[punt]\nallow = [\"ospf/1\"]\n"
            => "t.toml:2: key 'allow': 'ospf/1': a port belongs to tcp, udp or sctp (e.g. tcp/179)";
        unknown_key: "[punt]\nallow-all = true\n"
            => "t.toml:2: unknown field `allow-all`, expected one of `rate`, `burst`, `peers`, `protected`, `routing`, `arp`, `nd`, `icmp`, `tcp-udp`, `other`, `allow`";
        class_rate_zero: "[punt]\nrouting = { rate = 0 }\n"
            => "t.toml:2: key 'routing.rate': 0 is not from 1 to 1000000";
        class_unknown_key: "[punt]\narp = { pps = 5 }\n"
            => "t.toml:2: unknown field `pps`, expected `rate` or `burst`";
        bad_peer: "[punt]\npeers = [\"192.0.2.2\", \"bgp.example\"]\n"
            => "t.toml:2: key 'peers': 'bgp.example' is not an IPv4 or IPv6 address or prefix";
        bad_peer_prefix: "[punt]\npeers = [\"10.0.0.0/40\"]\n"
            => "t.toml:2: key 'peers': '10.0.0.0/40': the prefix length must be 0 to 32";
    }
}
