//! Punt classes: each packet the policy lets up is put in one class, and each class has its
//! own token bucket in every worker's host-punt, so that a flood of one kind (ARP, SYNs to
//! the router's addresses) empties its own bucket and no other. Routing protocols from the
//! configured peers (`[punt] peers`) have a class of their own, `protected`: a SYN flood to
//! tcp/179 from anyone else lands in `routing`, not there.
//!
//! | class | what |
//! |---|---|
//! | protected | a routing protocol packet whose source is one of `peers` |
//! | routing | a routing protocol packet from any other source |
//! | arp | copies of ARP |
//! | nd | copies of NS/NA; ICMPv6 router solicitation/advertisement, redirect (133-137) |
//! | icmp | other ICMP and ICMPv6 |
//! | tcp-udp | other TCP and UDP |
//! | other | the rest: other protocols, fragments (no ports to classify them by) |
//!
//! Routing protocols: BGP (tcp/179, either port), BFD (udp/3784, 4784, 3785), LDP (tcp/646,
//! udp/646), RIP (udp/520), RIPng (udp/521), OSPF (89), PIM (103), VRRP (112). A source in
//! `peers` is trusted as far as addresses are: a host on the link that spoofs a peer's
//! address reaches the protected class (as with any ACL by address).

use std::net::IpAddr;

/// Peers and prefixes `[punt] peers` takes at most.
pub const MAX_PEERS: usize = 1024;

/// A class of punted packets; its index is its bucket's and its counter's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PuntClass {
    Protected,
    Routing,
    Arp,
    Nd,
    Icmp,
    TcpUdp,
    Other,
}

/// Every class, in index order.
pub const CLASSES: [PuntClass; 7] = [
    PuntClass::Protected,
    PuntClass::Routing,
    PuntClass::Arp,
    PuntClass::Nd,
    PuntClass::Icmp,
    PuntClass::TcpUdp,
    PuntClass::Other,
];

impl PuntClass {
    /// Its key in `[punt]` and its name in counters.
    pub fn name(self) -> &'static str {
        match self {
            PuntClass::Protected => "protected",
            PuntClass::Routing => "routing",
            PuntClass::Arp => "arp",
            PuntClass::Nd => "nd",
            PuntClass::Icmp => "icmp",
            PuntClass::TcpUdp => "tcp-udp",
            PuntClass::Other => "other",
        }
    }

    /// Packets a second and burst, per worker, when the config gives neither.
    pub fn default_rate(self) -> ClassRate {
        let (rate, burst) = match self {
            // The single bucket's rate before classes: a full BGP table still arrives at it.
            PuntClass::Protected => (10_000, 1_000),
            PuntClass::Routing => (5_000, 500),
            PuntClass::TcpUdp => (2_000, 200),
            PuntClass::Arp | PuntClass::Nd | PuntClass::Icmp | PuntClass::Other => (1_000, 100),
        };
        ClassRate { rate, burst }
    }
}

/// One class's bucket: packets a second each worker lets up, and how many at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassRate {
    pub rate: u64,
    pub burst: u64,
}

/// The addresses and prefixes of `[punt] peers`: exact addresses sorted for a binary search
/// (a flood to tcp/179 asks for every packet), prefixes scanned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peers {
    v4: Vec<u32>,
    v6: Vec<u128>,
    v4_prefixes: Vec<(u32, u8)>,
    v6_prefixes: Vec<(u128, u8)>,
    /// As written, for `show lcp`.
    text: Vec<String>,
}

/// A packet's source address, as the wire views give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    V4(u32),
    V6(u128),
}

impl Peers {
    /// Read `ADDRESS` or `ADDRESS/LEN` words; at most `MAX_PEERS`.
    pub fn parse(words: &[&str]) -> Result<Peers, String> {
        if words.len() > MAX_PEERS {
            return Err(format!(
                "{} peers: at most {MAX_PEERS} addresses or prefixes",
                words.len()
            ));
        }
        let mut p = Peers::default();
        for w in words {
            let (addr, len) = match w.split_once('/') {
                Some((a, l)) => (a, Some(l)),
                None => (*w, None),
            };
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| format!("'{w}' is not an IPv4 or IPv6 address or prefix"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let len = match len {
                None => max,
                Some(l) => l
                    .parse::<u8>()
                    .ok()
                    .filter(|l| *l <= max)
                    .ok_or_else(|| format!("'{w}': the prefix length must be 0 to {max}"))?,
            };
            match addr {
                IpAddr::V4(a) if len == 32 => p.v4.push(a.into()),
                IpAddr::V4(a) => p.v4_prefixes.push((u32::from(a) & mask32(len), len)),
                IpAddr::V6(a) if len == 128 => p.v6.push(a.into()),
                IpAddr::V6(a) => p.v6_prefixes.push((u128::from(a) & mask128(len), len)),
            }
            p.text.push(w.to_string());
        }
        p.v4.sort_unstable();
        p.v6.sort_unstable();
        Ok(p)
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The peers as written.
    pub fn text(&self) -> &[String] {
        &self.text
    }

    pub fn contains(&self, source: Source) -> bool {
        match source {
            Source::V4(a) => {
                self.v4.binary_search(&a).is_ok()
                    || self.v4_prefixes.iter().any(|&(p, l)| a & mask32(l) == p)
            }
            Source::V6(a) => {
                self.v6.binary_search(&a).is_ok()
                    || self.v6_prefixes.iter().any(|&(p, l)| a & mask128(l) == p)
            }
        }
    }
}

fn mask32(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - len as u32).unwrap_or(0)
}

fn mask128(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - len as u32).unwrap_or(0)
}

const TCP: u8 = 6;
const UDP: u8 = 17;

/// Whether a packet of `protocol` between `ports` (source, destination) is a routing
/// protocol's (see the module's list).
pub fn is_routing(protocol: u8, ports: Option<(u16, u16)>) -> bool {
    let either = |list: &[u16]| ports.is_some_and(|(s, d)| list.contains(&s) || list.contains(&d));
    match protocol {
        89 | 103 | 112 => true,
        TCP => either(&[179, 646]),
        UDP => either(&[3784, 4784, 3785, 646, 520, 521]),
        _ => false,
    }
}

/// The class of an IP packet (not a fragment) of `protocol`, with `ports` for TCP and UDP
/// and `icmp_type` for ICMP and ICMPv6, from `source`.
pub fn ip_class(
    peers: &Peers,
    protocol: u8,
    ports: Option<(u16, u16)>,
    icmp_type: Option<u8>,
    source: Source,
) -> PuntClass {
    if is_routing(protocol, ports) {
        return if peers.contains(source) {
            PuntClass::Protected
        } else {
            PuntClass::Routing
        };
    }
    match protocol {
        1 => PuntClass::Icmp,
        58 if icmp_type.is_some_and(|t| (133..=137).contains(&t)) => PuntClass::Nd,
        58 => PuntClass::Icmp,
        TCP | UDP => PuntClass::TcpUdp,
        _ => PuntClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Source {
        Source::V4(s.parse::<std::net::Ipv4Addr>().unwrap().into())
    }

    fn v6(s: &str) -> Source {
        Source::V6(s.parse::<std::net::Ipv6Addr>().unwrap().into())
    }

    #[test]
    fn peers_are_addresses_and_prefixes() {
        let p = Peers::parse(&["192.0.2.2", "10.1.0.0/16", "2001:db8::2", "fe80::/10"]).unwrap();
        assert!(p.contains(v4("192.0.2.2")));
        assert!(!p.contains(v4("192.0.2.3")));
        assert!(p.contains(v4("10.1.200.7")));
        assert!(!p.contains(v4("10.2.0.1")));
        assert!(p.contains(v6("2001:db8::2")));
        assert!(p.contains(v6("fe80::1234")));
        assert!(!p.contains(v6("2001:db8::3")));
        assert_eq!(p.text().len(), 4);
        let all = Peers::parse(&["0.0.0.0/0"]).unwrap();
        assert!(all.contains(v4("203.0.113.9")));
        assert!(!all.contains(v6("::1")));
        for bad in ["192.0.2.256", "10.0.0.0/33", "::/129", "x", "10.0.0.0/"] {
            assert!(Peers::parse(&[bad]).is_err(), "{bad}");
        }
        let many: Vec<String> = (0..=MAX_PEERS)
            .map(|k| format!("10.0.{}.{}", k >> 8, k & 255))
            .collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(Peers::parse(&refs).unwrap_err().contains("at most 1024"));
    }

    #[test]
    fn a_peers_bgp_is_protected_and_a_strangers_is_not() {
        let p = Peers::parse(&["192.0.2.2"]).unwrap();
        let class = |proto, ports, src| ip_class(&p, proto, Some(ports), None, src);
        let peer = v4("192.0.2.2");
        let stranger = v4("192.0.2.99");
        assert_eq!(class(TCP, (40000, 179), peer), PuntClass::Protected);
        assert_eq!(class(TCP, (179, 40000), peer), PuntClass::Protected);
        assert_eq!(class(TCP, (40000, 179), stranger), PuntClass::Routing);
        assert_eq!(class(UDP, (49152, 3784), peer), PuntClass::Protected);
        assert_eq!(class(TCP, (40000, 22), peer), PuntClass::TcpUdp);
        assert_eq!(class(UDP, (40000, 53), stranger), PuntClass::TcpUdp);
        assert_eq!(ip_class(&p, 89, None, None, stranger), PuntClass::Routing);
        assert_eq!(ip_class(&p, 89, None, None, peer), PuntClass::Protected);
        assert_eq!(ip_class(&p, 1, None, Some(8), peer), PuntClass::Icmp);
        assert_eq!(
            ip_class(&p, 58, None, Some(134), v6("fe80::1")),
            PuntClass::Nd
        );
        assert_eq!(
            ip_class(&p, 58, None, Some(128), v6("fe80::1")),
            PuntClass::Icmp
        );
        assert_eq!(ip_class(&p, 58, None, None, v6("fe80::1")), PuntClass::Icmp);
        assert_eq!(ip_class(&p, 47, None, None, peer), PuntClass::Other);
        let none = Peers::default();
        assert_eq!(
            ip_class(&none, TCP, Some((40000, 179)), None, peer),
            PuntClass::Routing,
            "without peers no packet is protected"
        );
    }

    #[test]
    fn names_and_defaults() {
        let names: Vec<&str> = CLASSES.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "protected",
                "routing",
                "arp",
                "nd",
                "icmp",
                "tcp-udp",
                "other"
            ]
        );
        for (k, c) in CLASSES.iter().enumerate() {
            assert_eq!(*c as usize, k);
            assert!(c.default_rate().burst >= 1 && c.default_rate().rate >= c.default_rate().burst);
        }
    }
}
