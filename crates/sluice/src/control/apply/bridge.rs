//! A [[bridge-domain]] difference as CLI lines: its settings (`create bridge-domain`, which
//! makes or changes a domain), its ports one by one (`set interface l2 bridge`, undone by
//! `set interface l3`) and its ARP entries. Ports that stay are not touched: a domain that
//! gains or loses one member changes only that member.

use super::diff::{same, text};
use super::ops::{word, Edit, Ops};
use crate::config::emit::Entry;
use toml::Value;

/// One port: its interface and the words after `set interface l2 bridge IF BD`.
fn members(e: &Entry) -> Vec<(String, String)> {
    let Some(Value::Array(a)) = e.get("members") else {
        return Vec::new();
    };
    a.iter()
        .map(|m| match m {
            Value::Table(t) => {
                let name = t.get("interface").map(text).unwrap_or_default();
                let mut opts = String::new();
                for (k, word) in [("shg", "shg"), ("mac-limit", "mac-limit")] {
                    if let Some(v) = t.get(k) {
                        opts.push_str(&format!(" {word} {}", text(v)));
                    }
                }
                (name, opts)
            }
            other => (text(other), String::new()),
        })
        .collect()
}

/// The ARP entries as (ip, mac).
fn arp(e: &Entry) -> Vec<(String, String)> {
    let Some(Value::Array(a)) = e.get("arp-entries") else {
        return Vec::new();
    };
    a.iter()
        .filter_map(Value::as_table)
        .map(|t| {
            let get = |k: &str| t.get(k).map(text).unwrap_or_default();
            (get("ip"), get("mac"))
        })
        .collect()
}

/// `create bridge-domain ID` with every setting the entry has.
fn create(e: &Entry) -> Result<String, String> {
    let mut l = format!("create bridge-domain {}", word(e, "id")?);
    for key in ["learn", "flood", "uu-flood", "arp-term"] {
        if let Some(Value::Boolean(b)) = e.get(key) {
            l.push_str(&format!(" {key} {}", if *b { "on" } else { "off" }));
        }
    }
    for key in ["mac-age", "mac-limit", "group-fwd-mask"] {
        if let Some(v) = e.get(key) {
            l.push_str(&format!(" {key} {}", text(v)));
        }
    }
    Ok(l)
}

/// The settings of an entry: everything but its ports and ARP entries.
fn settings(e: &Entry) -> Entry {
    let mut s = e.clone();
    s.remove("members");
    s.remove("arp-entries");
    s
}

pub fn bridge_domain(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let id = word(new.or(old).ok_or("no entry")?, "id")?;
    let (was, now) = (old.map(members), new.map(members));
    let (was, now) = (was.unwrap_or_default(), now.unwrap_or_default());
    let (arp_was, arp_now) = (old.map(arp), new.map(arp));
    let (arp_was, arp_now) = (arp_was.unwrap_or_default(), arp_now.unwrap_or_default());
    let port =
        |(name, opts): &(String, String)| format!("set interface l2 bridge {name} {id}{opts}");
    let arp_line = |(ip, mac): &(String, String), del: bool| {
        let d = if del { " del" } else { "" };
        format!("set bridge-domain arp entry {id} {ip} {mac}{d}")
    };
    // Away: ports that leave (or change their options), ARP entries that go, the domain.
    for m in was.iter().filter(|m| !now.contains(m)) {
        if now.iter().any(|n| n.0 == m.0) {
            continue; // same port, other options: set again below
        }
        o.remove(what, format!("set interface l3 {}", m.0), port(m));
    }
    for a in arp_was.iter().filter(|a| !arp_now.contains(a)) {
        o.remove(what, arp_line(a, true), arp_line(a, false));
    }
    match (old, new) {
        (Some(d), None) => o.remove(what, format!("create bridge-domain {id} del"), create(d)?),
        (None, Some(n)) => o.add(what, create(n)?, format!("create bridge-domain {id} del")),
        (Some(d), Some(n)) if !same(&settings(d), &settings(n)) => {
            o.add(what, create(n)?, create(d)?)
        }
        _ => {}
    }
    // Come: ports that join (or change their options), ARP entries.
    for m in now.iter().filter(|m| !was.contains(m)) {
        let undo = match was.iter().find(|w| w.0 == m.0) {
            Some(w) => port(w),
            None => format!("set interface l3 {}", m.0),
        };
        o.add(what, port(m), undo);
    }
    for a in arp_now.iter().filter(|a| !arp_was.contains(a)) {
        o.add(what, arp_line(a, false), arp_line(a, true));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit<'a>(old: Option<&'a Entry>, new: Option<&'a Entry>) -> Edit<'a> {
        Edit {
            what: "bd",
            old,
            new,
        }
    }

    #[test]
    fn one_member_changes_only_that_member() {
        let old = Entry::parse("id = 10\nlearn = true\nflood = true\nmembers = [\"a\", \"b\"]");
        // The same settings in another order: not set again.
        let new = Entry::parse("flood = true\nid = 10\nlearn = true\nmembers = [\"a\", { interface = \"c\", shg = 2 }]");
        let mut o = Ops::default();
        bridge_domain(&mut o, edit(Some(&old), Some(&new))).unwrap();
        let lines: Vec<(&str, &str)> = o
            .remove
            .iter()
            .chain(&o.add)
            .map(|op| (op.line.as_str(), op.undo.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                ("set interface l3 b", "set interface l2 bridge b 10"),
                ("set interface l2 bridge c 10 shg 2", "set interface l3 c"),
            ]
        );
    }

    #[test]
    fn a_new_domain_is_made_before_its_ports_and_a_gone_one_after() {
        let e = Entry::parse(
            "id = 20\nlearn = false\nmac-age = \"90s\"\nmembers = [\"a\"]\n\
             arp-entries = [{ ip = \"10.0.0.9\", mac = \"02:00:00:00:00:09\" }]",
        );
        let mut o = Ops::default();
        bridge_domain(&mut o, edit(None, Some(&e))).unwrap();
        let lines: Vec<&str> = o.add.iter().map(|op| op.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "create bridge-domain 20 learn off mac-age 90s",
                "set interface l2 bridge a 20",
                "set bridge-domain arp entry 20 10.0.0.9 02:00:00:00:00:09",
            ]
        );
        let mut o = Ops::default();
        bridge_domain(&mut o, edit(Some(&e), None)).unwrap();
        let lines: Vec<&str> = o.remove.iter().map(|op| op.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "set interface l3 a",
                "set bridge-domain arp entry 20 10.0.0.9 02:00:00:00:00:09 del",
                "create bridge-domain 20 del",
            ]
        );
        assert_eq!(
            o.remove[2].undo,
            "create bridge-domain 20 learn off mac-age 90s"
        );
    }
}
