//! The text of one ACL rule, as `acl add NAME RULE, RULE, ...` and the configuration's
//! `rules = [...]` will take it:
//!
//! ```text
//! permit|deny|permit+reflect [ipv4|ipv6] [src PREFIX|any] [dst PREFIX|any]
//!     [proto tcp|udp|icmp|icmpv6|NUMBER]
//!     [sport P[-Q]] [dport P[-Q]]            (tcp, udp)
//!     [icmp-type T[-U]] [icmp-code C[-D]]    (icmp, icmpv6)
//!     [tcp-flags VALUE MASK]                 (tcp)
//! ```
//!
//! The family comes from the prefixes, or `ipv6`, or `proto icmpv6`; IPv4 otherwise. Every
//! mistake is an error naming the word.

use super::rule::{Action, Rule, TCP};
use crate::fib::parse::{parse_prefix, IpPrefix};

const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMP6: u8 = 58;

fn range(word: &str, what: &str) -> Result<(u16, u16), String> {
    let num = |s: &str| {
        s.parse::<u16>()
            .map_err(|_| format!("bad {what} '{word}' (want N or N-M, 0 to 65535)"))
    };
    let (a, b) = match word.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(word)?, num(word)?),
    };
    if a > b {
        return Err(format!("{what} range '{word}' is empty (first above last)"));
    }
    Ok((a, b))
}

fn byte(word: &str, what: &str) -> Result<u8, String> {
    let v = match word.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => word.parse().ok(),
    };
    v.ok_or_else(|| format!("bad {what} '{word}' (want 0 to 255, or 0x00 to 0xff)"))
}

/// One prefix or `any`: (family if known, left-aligned address, length).
fn prefix(word: &str) -> Result<(Option<bool>, u128, u8), String> {
    if word == "any" {
        return Ok((None, 0, 0));
    }
    Ok(match parse_prefix(word)? {
        IpPrefix::V4(p) => (Some(false), (p.addr() as u128) << 96, p.len()),
        IpPrefix::V6(p) => (Some(true), p.addr(), p.len()),
    })
}

impl Rule {
    /// Parses one rule (see the module's comment).
    pub fn parse(text: &str) -> Result<Rule, String> {
        let mut words = text.split_whitespace();
        let action = match words.next() {
            Some("permit") => Action::Permit,
            Some("deny") => Action::Deny,
            Some("permit+reflect") => Action::PermitReflect,
            Some(w) => {
                return Err(format!(
                    "'{w}' is no action (want permit, deny or permit+reflect)"
                ))
            }
            None => return Err("empty rule (want permit, deny or permit+reflect ...)".into()),
        };
        let mut family: Option<bool> = None;
        let mut agree = |f: Option<bool>, what: &str| -> Result<(), String> {
            match (family, f) {
                (Some(a), Some(b)) if a != b => {
                    Err(format!("{what} is of the other address family"))
                }
                (None, Some(b)) => {
                    family = Some(b);
                    Ok(())
                }
                _ => Ok(()),
            }
        };
        let mut r = Rule::any(false, action);
        let (mut sport, mut dport, mut itype, mut icode, mut flags) =
            (None, None, None, None, None);
        let mut seen: Vec<&str> = Vec::new();
        while let Some(key) = words.next() {
            if seen.contains(&key) {
                return Err(format!("'{key}' given twice"));
            }
            seen.push(key);
            if key == "ipv4" || key == "ipv6" {
                agree(Some(key == "ipv6"), key)?;
                continue;
            }
            let value = words
                .next()
                .ok_or_else(|| format!("'{key}' wants a value"))?;
            match key {
                "src" | "dst" => {
                    let (f, a, l) = prefix(value)?;
                    agree(f, &format!("{key} {value}"))?;
                    if key == "src" {
                        (r.src, r.src_len) = (a, l);
                    } else {
                        (r.dst, r.dst_len) = (a, l);
                    }
                }
                "proto" => {
                    let p = match value {
                        "tcp" => TCP,
                        "udp" => UDP,
                        "icmp" => ICMP,
                        "icmpv6" => {
                            agree(Some(true), "proto icmpv6")?;
                            ICMP6
                        }
                        n => byte(n, "protocol")?,
                    };
                    r.proto = Some(p);
                }
                "sport" => sport = Some(range(value, "source port")?),
                "dport" => dport = Some(range(value, "destination port")?),
                "icmp-type" => itype = Some(range(value, "ICMP type")?),
                "icmp-code" => icode = Some(range(value, "ICMP code")?),
                "tcp-flags" => {
                    let mask = words
                        .next()
                        .ok_or_else(|| "'tcp-flags' wants VALUE MASK".to_string())?;
                    let (v, m) = (byte(value, "TCP flags")?, byte(mask, "TCP flags mask")?);
                    if v & !m != 0 {
                        return Err(format!(
                            "tcp-flags {value} has bits outside the mask {mask}"
                        ));
                    }
                    flags = Some((v, m));
                }
                k => return Err(format!("unknown word '{k}' in rule")),
            }
        }
        let proto = r.proto;
        let ports = matches!(proto, Some(TCP) | Some(UDP));
        let icmp = matches!(proto, Some(ICMP) | Some(ICMP6));
        if (sport.is_some() || dport.is_some()) && !ports {
            return Err("sport/dport want proto tcp or udp".into());
        }
        if (itype.is_some() || icode.is_some()) && !icmp {
            return Err("icmp-type/icmp-code want proto icmp or icmpv6".into());
        }
        if flags.is_some() && proto != Some(TCP) {
            return Err("tcp-flags wants proto tcp".into());
        }
        r.ipv6 = family.unwrap_or(false);
        if r.ipv6 && proto == Some(ICMP) {
            return Err("proto icmp in an IPv6 rule (want icmpv6)".into());
        }
        r.sport = sport.or(itype).unwrap_or((0, u16::MAX));
        r.dport = dport.or(icode).unwrap_or((0, u16::MAX));
        r.tcp_flags = flags.unwrap_or((0, 0));
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_rule_text() {
        let r = Rule::parse("deny src 198.18.0.7/32").unwrap();
        assert_eq!(r.action, Action::Deny);
        assert!(!r.ipv6);
        assert_eq!((r.src, r.src_len), (0xc612_0007u128 << 96, 32));
        assert_eq!(r.proto, None);
        let r = Rule::parse(
            "permit+reflect src 10.0.0.0/8 dst any proto tcp dport 80-443 tcp-flags 0x02 0x12",
        )
        .unwrap();
        assert_eq!(r.action, Action::PermitReflect);
        assert_eq!(
            (r.proto, r.sport, r.dport, r.tcp_flags),
            (Some(6), (0, 65535), (80, 443), (2, 0x12))
        );
        let r = Rule::parse("permit proto icmpv6 icmp-type 128 icmp-code 0").unwrap();
        assert!(r.ipv6);
        assert_eq!((r.proto, r.sport, r.dport), (Some(58), (128, 128), (0, 0)));
        let r = Rule::parse("permit ipv6").unwrap();
        assert!(r.ipv6 && r.proto.is_none());
        let r = Rule::parse("deny dst 2001:db8::/32 proto 47").unwrap();
        assert!(r.ipv6);
        assert_eq!(r.proto, Some(47));
    }

    #[test]
    fn acl_rule_text_errors() {
        for (text, want) in [
            ("", "empty rule"),
            ("allow", "'allow' is no action"),
            ("permit src 10.0.0.1/8", "host bits set"),
            (
                "permit src 10.0.0.0/8 dst 2001:db8::/32",
                "other address family",
            ),
            ("permit ipv6 src 10.0.0.0/8", "other address family"),
            ("permit dport 80", "want proto tcp or udp"),
            ("permit proto udp icmp-type 8", "want proto icmp"),
            ("permit proto udp tcp-flags 2 2", "wants proto tcp"),
            ("permit proto tcp tcp-flags 3 2", "outside the mask"),
            ("permit proto tcp tcp-flags 2", "wants VALUE MASK"),
            ("permit proto tcp dport 90-80", "is empty"),
            ("permit proto tcp dport 70000", "bad destination port"),
            ("permit proto 300", "bad protocol"),
            ("permit src", "'src' wants a value"),
            ("permit src any src any", "given twice"),
            ("permit frob 1", "unknown word 'frob'"),
            ("permit ipv6 proto icmp", "want icmpv6"),
            ("permit src 10.0.0.0/8 proto icmpv6", "other address family"),
        ] {
            let e = Rule::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    proptest::proptest! {
        /// Any text is a rule or an error, never a panic; words of the grammar mixed at
        /// random reach the checks after the first word.
        #[test]
        fn acl_rule_text_never_panics(
            words in proptest::collection::vec(proptest::sample::select(vec![
                "permit", "deny", "permit+reflect", "ipv4", "ipv6", "src", "dst", "any",
                "10.0.0.0/8", "2001:db8::/32", "1.2.3.4/33", "proto", "tcp", "udp", "icmp",
                "icmpv6", "300", "sport", "dport", "1-2", "5-1", "icmp-type", "icmp-code",
                "tcp-flags", "0x12", "0xzz", "-", "",
            ]), 0..12),
            junk in "\\PC{0,40}",
        ) {
            let _ = Rule::parse(&words.join(" "));
            let _ = Rule::parse(&junk);
        }
    }
}
