//! [nat44], [[nat44-interface]] and [[nat44-static]] differences as CLI lines.
//!
//! [nat44] is compared key by key against its defaults when one side has none: the pool
//! (`nat44 del/add address`, consecutive addresses as one range), each
//! timeout (`set nat44 timeout`) and the limits (`set nat44 limits`). The sections run in
//! the file's order: the pool before the interfaces that translate to it and the static
//! mappings, which go before it.

use super::diff::{normal, text};
use super::ops::{both, word, Edit, Ops};
use crate::config::emit::Entry;
use std::net::Ipv4Addr;
use toml::Value;

/// The timeouts: the key and the word of `set nat44 timeout`.
const TIMEOUTS: &[(&str, &str)] = &[
    ("udp-timeout", "udp"),
    ("tcp-established-timeout", "tcp-established"),
    ("tcp-transitory-timeout", "tcp-transitory"),
    ("icmp-timeout", "icmp"),
];

/// The pool as addresses (a normal entry has them one by one).
fn pool(e: &Entry) -> Result<Vec<u32>, String> {
    let Some(Value::Array(a)) = e.get("addresses") else {
        return Ok(Vec::new());
    };
    a.iter()
        .map(|v| {
            let t = text(v);
            t.parse::<Ipv4Addr>()
                .map(u32::from)
                .map_err(|_| format!("key 'addresses': '{t}' is not an IPv4 address"))
        })
        .collect()
}

/// Addresses as `A` and `A-B` words, consecutive ones as one range.
fn ranges(mut addrs: Vec<u32>) -> Vec<String> {
    addrs.sort_unstable();
    addrs.dedup();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for a in addrs {
        match out.last_mut() {
            Some((_, b)) if b.checked_add(1) == Some(a) => *b = a,
            _ => out.push((a, a)),
        }
    }
    out.into_iter()
        .map(|(a, b)| match a == b {
            true => Ipv4Addr::from(a).to_string(),
            false => format!("{}-{}", Ipv4Addr::from(a), Ipv4Addr::from(b)),
        })
        .collect()
}

/// [nat44]: the pool, the timeouts and the limits that differ (a side without the section
/// is its defaults, no pool).
pub fn nat44(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let defaults = normal(&crate::nat44::config::NAT44, &Entry::default());
    let (d, n) = (old.unwrap_or(&defaults), new.unwrap_or(&defaults));
    // A pool that changes is made again whole, in address order: any change to it closes
    // every session anyway, and the pool's order is then the same whatever came before.
    let (was, now) = (pool(d)?, pool(n)?);
    let (gone, come) = match was == now {
        true => (Vec::new(), Vec::new()),
        false => (was, now),
    };
    for r in ranges(gone) {
        o.remove(
            what,
            format!("nat44 del address {r}"),
            format!("nat44 add address {r}"),
        );
    }
    for r in ranges(come) {
        o.add(
            what,
            format!("nat44 add address {r}"),
            format!("nat44 del address {r}"),
        );
    }
    for (key, kind) in TIMEOUTS {
        let (t0, t1) = (word(d, key)?, word(n, key)?);
        if t0 != t1 {
            o.add(
                what,
                format!("set nat44 timeout {kind} {t1}"),
                format!("set nat44 timeout {kind} {t0}"),
            );
        }
    }
    let limits = |e: &Entry| -> Result<String, String> {
        Ok(format!(
            "set nat44 limits sessions {} per-host {}",
            word(e, "max-sessions")?,
            word(e, "max-sessions-per-host")?
        ))
    };
    let (l0, l1) = (limits(d)?, limits(n)?);
    if l0 != l1 {
        o.add(what, l1, l0);
    }
    Ok(())
}

/// [[nat44-interface]]: `set interface nat44 in|out IF` (a new role replaces the old one),
/// `... del`.
pub fn interface(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let what = ch.what;
    let set = |e: &Entry| -> Result<String, String> {
        let role = match word(e, "role")?.as_str() {
            "inside" => "in",
            "outside" => "out",
            r => return Err(format!("{what}: role '{r}': inside or outside")),
        };
        Ok(format!(
            "set interface nat44 {role} {}",
            word(e, "interface")?
        ))
    };
    both(o, ch, set, |e| Ok(set(e)? + " del"))
}

/// [[nat44-static]]: `nat44 add/del static mapping PROTO local A P external A P`.
pub fn mapping(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let what = ch.what;
    let line = |e: &Entry, verb: &str| -> Result<String, String> {
        let ep = |key: &str| -> Result<String, String> {
            let v = word(e, key)?;
            let (a, p) = v
                .rsplit_once(':')
                .ok_or_else(|| format!("{what}: key '{key}': '{v}' is not ADDRESS:PORT"))?;
            Ok(format!("{a} {p}"))
        };
        Ok(format!(
            "nat44 {verb} static mapping {} local {} external {}",
            word(e, "protocol")?,
            ep("local")?,
            ep("external")?
        ))
    };
    both(o, ch, |e| line(e, "add"), |e| line(e, "del"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_addresses_are_one_range() {
        let a = |s: &str| u32::from(s.parse::<Ipv4Addr>().unwrap());
        let r = ranges(vec![
            a("10.0.0.3"),
            a("10.0.0.1"),
            a("10.0.0.2"),
            a("10.0.0.9"),
        ]);
        assert_eq!(r, ["10.0.0.1-10.0.0.3", "10.0.0.9"]);
        assert!(ranges(Vec::new()).is_empty());
    }
}
