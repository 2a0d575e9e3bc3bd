//! `[punt]`: what of the traffic for the router's addresses goes up the lcp taps, and how
//! fast (`src/lcp/policy.rs`).
//!
//! ```toml
//! [punt]
//! rate = 10000                    # packets a second each worker lets up
//! burst = 1000
//! allow = ["bgp", "bfd", "ospf", "icmp", "icmp6", "arp", "nd"]   # default: everything
//! ```

use super::reference::{Key, Section};
use super::{Checker, ConfigError};
use crate::lcp::policy::{PuntPolicy, PuntRule, DEFAULT_BURST, DEFAULT_RATE};
use serde::Deserialize;
use toml::Spanned;

/// [punt] in the reference (`docs/config.md`).
pub(super) const SECTION: Section = Section {
    name: "punt",
    array: false,
    file: "punt.rs",
    doc: "The punt policy of the lcp taps: which packets for the router that sluice does not \
          answer itself go up to Linux, and how many a second. host-punt drops the others, \
          counted as `outside the punt policy` in `show errors`; `show lcp` prints the \
          policy.",
    accepted: super::reference::serde_fields::<PuntKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "rate",
            ty: "integer",
            default: "10000",
            doc: "packets a second each worker lets up, 1 to 1000000; more are dropped and \
                  counted (`punt rate limit exceeded`)",
            example: "10000",
        },
        Key {
            name: "burst",
            ty: "integer",
            default: "1000",
            doc: "packets a worker may let up at once after a quiet spell, 1 to 1000000",
            example: "1000",
        },
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
#[serde(deny_unknown_fields)]
pub(super) struct PuntKeys {
    rate: Option<Spanned<u64>>,
    burst: Option<Spanned<u64>>,
    allow: Option<Vec<Spanned<String>>>,
}

impl PuntKeys {
    pub(super) fn check(self, c: &Checker<'_>) -> Result<PuntPolicy, ConfigError> {
        let bounded = |v: &Option<Spanned<u64>>, key: &str, default: u64| match v {
            None => Ok(default),
            Some(s) if (1..=1_000_000).contains(s.get_ref()) => Ok(*s.get_ref()),
            Some(s) => Err(c.err(
                s.span(),
                key,
                format!("{} is not from 1 to 1000000", s.get_ref()),
            )),
        };
        let rate = bounded(&self.rate, "rate", DEFAULT_RATE)?;
        let burst = bounded(&self.burst, "burst", DEFAULT_BURST)?;
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
        Ok(PuntPolicy { rate, burst, allow })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::lcp::policy::PuntPolicy;

    fn punt(src: &str) -> PuntPolicy {
        Config::parse(src, "t.toml").unwrap().punt
    }

    #[test]
    fn without_the_section_everything_goes_up_at_the_default_rate() {
        assert_eq!(punt(""), PuntPolicy::default());
        let p = punt("[punt]\nrate = 50\nburst = 5\nallow = [\"bgp\", \"tcp/179\", \"nd\"]\n");
        assert_eq!((p.rate, p.burst), (50, 5));
        assert_eq!(p.allow_text(), ["tcp/179", "nd"], "named twice, kept once");
        assert_eq!(punt("[punt]\nallow = []\n").allow, Some(vec![]));
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
            => "t.toml:2: unknown field `allow-all`, expected one of `rate`, `burst`, `allow`";
    }
}
