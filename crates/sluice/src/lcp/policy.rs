//! The punt policy (`[punt]`): which of the packets the router hands to the host go up the
//! tap, and how many a second. host-punt applies it to every candidate — what ip4-local and
//! ip6-local do not take themselves, and the copies of ARP and neighbour discovery — and
//! drops the others, counted as "outside the punt policy".
//!
//! A rule is `arp`, `nd`, `fragments`, a protocol (`tcp`, `udp`, `icmp`, `icmp6`, `ospf`,
//! `vrrp`, `pim`, `gre`, `esp`, `ah`, `sctp`, or its number 0-255), or a TCP, UDP or SCTP port
//! (`tcp/179`), which matches the source or the destination port: a session Linux opened to a
//! peer's port 179 answers from it. `bgp` is `tcp/179`, `bfd` the BFD ports (udp/3784 single
//! hop, udp/4784 multihop, udp/3785 echo). For IPv6 the protocol is the fixed header's next
//! header: a packet with extension headers matches by the first one's number.
//!
//! What the policy lets up is then put in a class (`punt_class.rs`), each with its own rate.
//!
//! Parsing is safe code over the packet's bytes (the wire views); a packet too short for what
//! a rule reads does not match it.

use super::punt_class::{ip_class, ClassRate, Peers, PuntClass, Source, CLASSES};
use crate::lcp::host_punt::Reason;
use crate::wire::ipv4::Ipv4View;
use crate::wire::ipv6::Ipv6View;

const ICMP: u8 = 1;
const ICMP6: u8 = 58;
const TCP: u8 = 6;
const UDP: u8 = 17;
const IPV6_FRAGMENT: u8 = 44;
const SCTP: u8 = 132;

/// Protocol names a rule may use, and their numbers.
const PROTOCOLS: [(&str, u8); 11] = [
    ("icmp", ICMP),
    ("tcp", TCP),
    ("udp", UDP),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("icmp6", 58),
    ("ospf", 89),
    ("pim", 103),
    ("vrrp", 112),
    ("sctp", SCTP),
];

/// One thing the policy lets up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PuntRule {
    /// Copies of ARP packets.
    Arp,
    /// Copies of IPv6 neighbour discovery.
    Nd,
    /// IPv4 fragments and IPv6 packets with a fragment header (Linux reassembles them).
    Fragments,
    /// An IP protocol (IPv6: the first next header).
    Protocol(u8),
    /// A TCP, UDP or SCTP port, as source or destination.
    Port { protocol: u8, port: u16 },
}

impl PuntRule {
    /// The rules one word of `allow` names (`bfd` names three).
    pub fn parse(text: &str) -> Result<Vec<PuntRule>, String> {
        let protocol = |name: &str| -> Option<u8> {
            PROTOCOLS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, p)| p)
                .or_else(|| name.parse().ok())
        };
        let port = |p: u16| PuntRule::Port {
            protocol: UDP,
            port: p,
        };
        Ok(match text {
            "arp" => vec![PuntRule::Arp],
            "nd" => vec![PuntRule::Nd],
            "fragments" => vec![PuntRule::Fragments],
            "bgp" => vec![PuntRule::Port {
                protocol: TCP,
                port: 179,
            }],
            "bfd" => vec![port(3784), port(4784), port(3785)],
            _ => match text.split_once('/') {
                Some((name, number)) => {
                    let p = protocol(name).filter(|p| [TCP, UDP, SCTP].contains(p));
                    let Some(p) = p else {
                        return Err(format!(
                            "'{text}': a port belongs to tcp, udp or sctp (e.g. tcp/179)"
                        ));
                    };
                    match number.parse::<u16>() {
                        Ok(n) => vec![PuntRule::Port {
                            protocol: p,
                            port: n,
                        }],
                        Err(_) => {
                            return Err(format!("'{text}': the port must be from 0 to 65535"))
                        }
                    }
                }
                None => match protocol(text) {
                    Some(p) => vec![PuntRule::Protocol(p)],
                    None => {
                        return Err(format!(
                            "'{text}' is not a punt rule (arp, nd, fragments, bgp, bfd, a \
                             protocol name or number such as ospf or 89, or PROTOCOL/PORT \
                             such as tcp/179)"
                        ))
                    }
                },
            },
        })
    }

    /// The rule as `parse` reads it.
    pub fn text(&self) -> String {
        let name = |p: u8| {
            PROTOCOLS
                .iter()
                .find(|&&(_, n)| n == p)
                .map_or(p.to_string(), |(n, _)| n.to_string())
        };
        match *self {
            PuntRule::Arp => "arp".into(),
            PuntRule::Nd => "nd".into(),
            PuntRule::Fragments => "fragments".into(),
            PuntRule::Protocol(p) => name(p),
            PuntRule::Port { protocol, port } => format!("{}/{port}", name(protocol)),
        }
    }
}

/// What goes up and how fast.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PuntPolicy {
    /// Each class's bucket, by `PuntClass` index.
    pub classes: [ClassRate; CLASSES.len()],
    /// Whose routing protocol packets are in the protected class.
    pub peers: Peers,
    /// `None`: everything the router hands up; else only what a rule matches.
    pub allow: Option<Vec<PuntRule>>,
}

impl Default for PuntPolicy {
    fn default() -> Self {
        PuntPolicy {
            classes: CLASSES.map(PuntClass::default_rate),
            peers: Peers::default(),
            allow: None,
        }
    }
}

/// The fields of an IP packet the rules and the classes read.
struct Facts {
    protocol: u8,
    fragment: bool,
    ports: Option<(u16, u16)>,
    /// The first byte after the header, for ICMP and ICMPv6.
    icmp_type: Option<u8>,
    source: Source,
}

impl PuntPolicy {
    /// The class of a packet handed up for `reason`, whose L3 header and what follows are
    /// `l3` (`None`: not found), or `None` when the policy does not let it up.
    pub fn judge(&self, reason: Reason, l3: Option<&[u8]>) -> Option<PuntClass> {
        let facts = match reason {
            Reason::ArpCopy => return self.allows_rule(PuntRule::Arp).then_some(PuntClass::Arp),
            Reason::NdCopy => return self.allows_rule(PuntRule::Nd).then_some(PuntClass::Nd),
            Reason::Local4 => l3.and_then(ipv4_facts),
            Reason::Local6 => l3.and_then(ipv6_facts),
        };
        let Some(f) = facts else {
            // Nothing to classify by: up only without a list, in the last class.
            return self.allow.is_none().then_some(PuntClass::Other);
        };
        if let Some(rules) = &self.allow {
            if !rules.iter().any(|r| matches(r, &f)) {
                return None;
            }
        }
        if f.fragment {
            return Some(PuntClass::Other);
        }
        Some(ip_class(
            &self.peers,
            f.protocol,
            f.ports,
            f.icmp_type,
            f.source,
        ))
    }

    /// Whether a packet handed up for `reason` with `l3` goes up at all.
    pub fn allows(&self, reason: Reason, l3: Option<&[u8]>) -> bool {
        self.judge(reason, l3).is_some()
    }

    fn allows_rule(&self, rule: PuntRule) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|rules| rules.contains(&rule))
    }

    pub fn rate(&self, class: PuntClass) -> ClassRate {
        self.classes[class as usize]
    }

    /// The `allow` list as written, or "all".
    pub fn allow_text(&self) -> Vec<String> {
        match &self.allow {
            None => vec!["all".into()],
            Some(rules) => rules.iter().map(PuntRule::text).collect(),
        }
    }
}

fn matches(rule: &PuntRule, f: &Facts) -> bool {
    match *rule {
        PuntRule::Arp | PuntRule::Nd => false,
        PuntRule::Fragments => f.fragment,
        PuntRule::Protocol(p) => !f.fragment && f.protocol == p,
        PuntRule::Port { protocol, port } => {
            !f.fragment
                && f.protocol == protocol
                && f.ports.is_some_and(|(s, d)| s == port || d == port)
        }
    }
}

fn ports(l4: Option<&[u8]>, protocol: u8) -> Option<(u16, u16)> {
    if ![TCP, UDP, SCTP].contains(&protocol) {
        return None;
    }
    match l4? {
        [a, b, c, d, ..] => Some((u16::from_be_bytes([*a, *b]), u16::from_be_bytes([*c, *d]))),
        _ => None,
    }
}

fn icmp_type(l4: Option<&[u8]>, protocol: u8) -> Option<u8> {
    [ICMP, ICMP6]
        .contains(&protocol)
        .then(|| l4.and_then(|b| b.first().copied()))
        .flatten()
}

fn ipv4_facts(b: &[u8]) -> Option<Facts> {
    let v = Ipv4View::of(b)?;
    if v.header_len() < 20 {
        return None;
    }
    let protocol = v.protocol();
    let l4 = b.get(v.header_len()..);
    Some(Facts {
        protocol,
        fragment: v.is_fragment(),
        ports: ports(l4, protocol),
        icmp_type: icmp_type(l4, protocol),
        source: Source::V4(v.source()),
    })
}

fn ipv6_facts(b: &[u8]) -> Option<Facts> {
    let v = Ipv6View::of(b)?;
    let protocol = v.next_header();
    let l4 = b.get(40..);
    Some(Facts {
        protocol,
        fragment: protocol == IPV6_FRAGMENT,
        ports: ports(l4, protocol),
        icmp_type: icmp_type(l4, protocol),
        source: Source::V6(v.source()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(words: &[&str]) -> PuntPolicy {
        let mut allow = Vec::new();
        for w in words {
            allow.extend(PuntRule::parse(w).unwrap());
        }
        PuntPolicy {
            allow: Some(allow),
            ..PuntPolicy::default()
        }
    }

    fn v4(protocol: u8, flags: u16, sport: u16, dport: u16) -> Vec<u8> {
        let mut b = vec![0x45, 0, 0, 28, 0, 0];
        b.extend_from_slice(&flags.to_be_bytes());
        b.extend_from_slice(&[64, protocol, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&dport.to_be_bytes());
        b
    }

    fn v6(next: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut b = vec![0x60, 0, 0, 0, 0, 8, next, 64];
        b.extend_from_slice(&[0; 32]);
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&dport.to_be_bytes());
        b
    }

    #[test]
    fn without_a_list_everything_goes_up() {
        let p = PuntPolicy::default();
        assert!(p.allows(Reason::Local4, None));
        assert!(p.allows(Reason::ArpCopy, None));
        assert_eq!(p.allow_text(), ["all"]);
    }

    #[test]
    fn ports_match_either_side_and_protocols_by_number() {
        let p = policy(&["bgp", "ospf", "nd"]);
        let up = |b: &[u8]| p.allows(Reason::Local4, Some(b));
        assert!(up(&v4(TCP, 0, 40000, 179)), "to the router's BGP listener");
        assert!(
            up(&v4(TCP, 0, 179, 40000)),
            "a peer's answer to Linux's session"
        );
        assert!(!up(&v4(TCP, 0, 40000, 22)), "ssh is not on the list");
        assert!(!up(&v4(UDP, 0, 179, 53)), "udp/179 is not tcp/179");
        assert!(up(&v4(89, 0, 0, 0)), "ospf");
        assert!(
            !up(&v4(TCP, 0x2000, 40000, 179)),
            "a fragment needs `fragments`"
        );
        assert!(!up(&v4(TCP, 0, 40000, 179)[..22]), "ports cut off");
        assert!(!up(&[0x45, 0, 0]), "header cut off");
        assert!(!p.allows(Reason::ArpCopy, None));
        assert!(p.allows(Reason::NdCopy, None));
        let up6 = |b: &[u8]| p.allows(Reason::Local6, Some(b));
        assert!(up6(&v6(TCP, 179, 50000)));
        assert!(!up6(&v6(TCP, 80, 50000)));
        assert!(up6(&v6(89, 0, 0)));
        assert!(!up6(&v6(IPV6_FRAGMENT, 179, 179)));
        let f = policy(&["fragments", "58"]);
        assert!(f.allows(Reason::Local6, Some(&v6(IPV6_FRAGMENT, 0, 0))));
        assert!(f.allows(Reason::Local4, Some(&v4(UDP, 0x0001, 0, 0))));
        assert!(f.allows(Reason::Local6, Some(&v6(58, 0, 0))));
        assert!(!f.allows(Reason::Local4, Some(&v4(UDP, 0, 0, 0))));
    }

    /// The classes the policy gives what it lets up: a peer's BGP is protected, a
    /// stranger's is not, ssh is tcp-udp, fragments and headers cut short are other.
    #[test]
    fn what_goes_up_is_classed() {
        let mut p = PuntPolicy {
            peers: Peers::parse(&["10.0.0.1", "::/0"]).unwrap(),
            ..PuntPolicy::default()
        };
        let class = |p: &PuntPolicy, b: &[u8]| p.judge(Reason::Local4, Some(b));
        assert_eq!(
            class(&p, &v4(TCP, 0, 40000, 179)),
            Some(PuntClass::Protected)
        );
        let mut stranger = v4(TCP, 0, 40000, 179);
        stranger[12] = 192;
        assert_eq!(class(&p, &stranger), Some(PuntClass::Routing));
        assert_eq!(class(&p, &v4(TCP, 0, 40000, 22)), Some(PuntClass::TcpUdp));
        assert_eq!(
            class(&p, &v4(TCP, 0x2000, 40000, 179)),
            Some(PuntClass::Other)
        );
        assert_eq!(class(&p, &v4(ICMP, 0, 0x0800, 0)), Some(PuntClass::Icmp));
        assert_eq!(class(&p, &[0x45, 0]), Some(PuntClass::Other));
        assert_eq!(p.judge(Reason::ArpCopy, None), Some(PuntClass::Arp));
        assert_eq!(p.judge(Reason::NdCopy, None), Some(PuntClass::Nd));
        let six = |b: &[u8]| p.judge(Reason::Local6, Some(b));
        assert_eq!(six(&v6(89, 0, 0)), Some(PuntClass::Protected));
        assert_eq!(six(&v6(ICMP6, 0x8600, 0)), Some(PuntClass::Nd), "an RA");
        assert_eq!(
            six(&v6(ICMP6, 0x8000, 0)),
            Some(PuntClass::Icmp),
            "an echo request"
        );
        p.allow = Some(PuntRule::parse("bgp").unwrap());
        assert_eq!(class(&p, &v4(TCP, 0, 40000, 22)), None);
        assert_eq!(class(&p, &[0x45, 0]), None);
        assert_eq!(p.judge(Reason::ArpCopy, None), None);
        assert_eq!(
            class(&p, &v4(TCP, 0, 179, 40000)),
            Some(PuntClass::Protected)
        );
    }

    #[test]
    fn rules_read_back_as_written_and_bad_ones_say_why() {
        let p = policy(&["arp", "bfd", "tcp/179", "icmp6", "200", "sctp/9"]);
        assert_eq!(
            p.allow_text(),
            ["arp", "udp/3784", "udp/4784", "udp/3785", "tcp/179", "icmp6", "200", "sctp/9"]
        );
        for bad in ["http", "ospf/1", "tcp/70000", "tcp/x", "256", ""] {
            assert!(PuntRule::parse(bad).is_err(), "{bad}");
        }
        assert!(PuntRule::parse("ospf/1")
            .unwrap_err()
            .contains("tcp, udp or sctp"));
    }
}
