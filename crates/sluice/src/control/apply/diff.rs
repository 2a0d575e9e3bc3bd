//! What differs between the running state and a config file, entry by entry.
//!
//! The running state's entries are the ones `sluice ctl save` writes (each section's
//! `Section::save`); the file's are its tables as written, aliases read as their keys. Both
//! sides get the same normal form before they are compared: a key left out takes its
//! documented default when that default is a plain TOML value (`true`, `0`, `"up"`, `[]`),
//! and a single string where the reference says "list" is a list of one. A key the file
//! leaves out whose default is not a value (a route's interface: "found by the next hop's
//! address") is not compared; one whose default is none is absent. A single table (`[nat44]`)
//! that says only its defaults is as good as none. Entries are matched by their section's identity (an
//! interface's name, a route's prefix and table, a bridge domain's id, ...); a section
//! without one is compared as a set of whole entries.

use crate::config::emit::Entry;
use crate::config::reference::SectionDoc;
use crate::config::section::SECTIONS;
use crate::control::save::State;
use toml::Value;

/// One entry that differs: `old` is the running state's, `new` the file's (both: changed).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub section: &'static str,
    pub old: Option<Entry>,
    pub new: Option<Entry>,
}

impl Change {
    /// `route 10.0.0.0/8 table 7` (the section and the identity of its entry).
    pub fn name(&self) -> String {
        let e = self.new.as_ref().or(self.old.as_ref());
        let id: Vec<String> = identity(self.section)
            .unwrap_or(&[])
            .iter()
            .filter_map(|k| e.and_then(|e| e.get(k)).map(|v| format!("{k}={}", text(v))))
            .collect();
        if id.is_empty() {
            self.section.to_string()
        } else {
            format!("{} {}", self.section, id.join(" "))
        }
    }

    /// `added`, `removed` or `changed`.
    pub fn kind(&self) -> &'static str {
        match (&self.old, &self.new) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        }
    }
}

/// The keys that name an entry of `section` (none: compared as whole entries).
pub fn identity(section: &str) -> Option<&'static [&'static str]> {
    Some(match section {
        "interface" => &["name"],
        "subinterface" => &["parent", "id"],
        // One table: its entry, when both sides have one, is the same entry.
        "nat44" => &[],
        "xconnect" => &["rx"],
        "rx-placement" => &["interface", "queue"],
        "handoff" | "acl-input" | "acl-output" | "lcp" | "nat44-interface" => &["interface"],
        "bridge-domain" | "ip-table" => &["id"],
        "l2fib" => &["mac", "bridge-domain"],
        "bvi" => &["instance"],
        "route" => &["prefix", "table"],
        "acl" => &["name"],
        _ => return None,
    })
}

/// Every entry that differs, in the order of `SECTIONS`, each section's in the order of the
/// running state then the file. `file` is the file's tables as written.
pub fn changes(st: &State, file: &toml::Table) -> Result<Vec<Change>, String> {
    let mut out = Vec::new();
    for &sec in SECTIONS {
        let doc = sec.doc();
        // A single table that says only its defaults is the same as none ([nat44] is saved
        // only when it says more).
        let empty = normal(doc, &Entry::default());
        let kept = |e: &Entry| doc.array || !same(e, &empty);
        let old: Vec<Entry> = sec.save(st)?.iter().map(|e| normal(doc, e)).collect();
        let new: Vec<Entry> = file_entries(doc, file)
            .iter()
            .map(|e| normal(doc, e))
            .collect();
        let (old, new): (Vec<Entry>, Vec<Entry>) = (
            old.into_iter().filter(kept).collect(),
            new.into_iter().filter(kept).collect(),
        );
        let open: Vec<&str> = doc
            .keys
            .iter()
            .filter(|k| open(k))
            .map(|k| k.name)
            .collect();
        out.extend(section_changes(doc.name, &old, &new, &open));
    }
    Ok(out)
}

/// Whether a key the file leaves out is not compared: its default is neither a plain value
/// nor none (a key whose default is none is absent when left out).
fn open(k: &crate::config::reference::Key) -> bool {
    k.default != "required" && !k.default.starts_with("none") && plain_default(k.default).is_none()
}

/// A section's entries in a file's tables.
pub fn file_entries(doc: &SectionDoc, file: &toml::Table) -> Vec<Entry> {
    match file.get(doc.name) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_table)
            .map(|t| Entry::from_table(doc, t))
            .collect(),
        Some(Value::Table(t)) => vec![Entry::from_table(doc, t)],
        _ => Vec::new(),
    }
}

/// The entries of one section that differ between `old` (running) and `new` (file).
/// `open`: the keys not compared when the file leaves them out.
pub fn section_changes(
    section: &'static str,
    old: &[Entry],
    new: &[Entry],
    open: &[&str],
) -> Vec<Change> {
    let alike = |o: &Entry, n: &Entry| {
        let mut o = o.clone();
        o.keys
            .retain(|(k, _)| n.get(k).is_some() || !open.contains(&k.as_str()));
        same(&o, n)
    };
    let change = |o: Option<&Entry>, n: Option<&Entry>| Change {
        section,
        old: o.cloned(),
        new: n.cloned(),
    };
    let mut out = Vec::new();
    match identity(section) {
        Some(keys) => {
            let id = |e: &Entry| -> Vec<Option<Value>> {
                keys.iter().map(|k| e.get(k).cloned()).collect()
            };
            for o in old {
                match new.iter().find(|n| id(n) == id(o)) {
                    None => out.push(change(Some(o), None)),
                    Some(n) if !alike(o, n) => out.push(change(Some(o), Some(n))),
                    Some(_) => {}
                }
            }
            for n in new {
                if !old.iter().any(|o| id(o) == id(n)) {
                    out.push(change(None, Some(n)));
                }
            }
        }
        None => {
            for o in old.iter().filter(|o| !new.iter().any(|n| alike(o, n))) {
                out.push(change(Some(o), None));
            }
            for n in new.iter().filter(|n| !old.iter().any(|o| alike(o, n))) {
                out.push(change(None, Some(n)));
            }
        }
    }
    out
}

/// The same keys with the same values, in any order.
pub fn same(a: &Entry, b: &Entry) -> bool {
    a.keys.len() == b.keys.len() && a.keys.iter().all(|(k, v)| b.get(k) == Some(v))
}

/// The lists whose order means nothing, as (section, key): sorted before comparing (an
/// ACL's rules keep theirs).
const UNORDERED: &[(&str, &str)] = &[
    ("interface", "address"),
    ("subinterface", "address"),
    ("bvi", "address"),
    ("bridge-domain", "members"),
    ("bridge-domain", "arp-entries"),
    ("ip-table", "interfaces"),
    ("route", "via"),
    ("nat44", "addresses"),
];

/// `e` with documented plain defaults filled in, single strings of list keys as lists, and
/// the lists whose order means nothing sorted.
pub fn normal(doc: &SectionDoc, e: &Entry) -> Entry {
    let mut out = e.clone();
    if doc.name == "nat44" {
        if let Some(Value::Array(a)) = out.get("addresses") {
            let one_by_one: Vec<Value> = a.iter().flat_map(expand).collect();
            out.set("addresses", one_by_one);
        }
    }
    for (k, v) in &mut out.keys {
        if let (Value::Array(a), true) = (v, UNORDERED.contains(&(doc.name, k.as_str()))) {
            a.sort_by_cached_key(crate::config::emit::value);
        }
    }
    for key in doc.keys {
        match out.get(key.name) {
            None => {
                if let Some(v) = plain_default(key.default) {
                    out.set(key.name, v);
                }
            }
            Some(Value::String(s)) if key.ty.starts_with("list") => {
                let one = Value::Array(vec![Value::String(s.clone())]);
                out.set(key.name, one);
            }
            Some(_) => {}
        }
    }
    out
}

/// A NAT pool's `A-B` as its addresses one by one (as `save` writes them); anything else,
/// or a range over 65536 addresses, as it is.
fn expand(v: &Value) -> Vec<Value> {
    let range = v
        .as_str()
        .and_then(|s| s.split_once('-'))
        .and_then(|(a, b)| {
            let a: u32 = a.trim().parse::<std::net::Ipv4Addr>().ok()?.into();
            let b: u32 = b.trim().parse::<std::net::Ipv4Addr>().ok()?.into();
            (a <= b && b - a < 65536).then_some(a..=b)
        });
    match range {
        Some(r) => r
            .map(|n| Value::String(std::net::Ipv4Addr::from(n).to_string()))
            .collect(),
        None => vec![v.clone()],
    }
}

/// A documented default that is a TOML value as written (`true`, `0`, `"up"`), maybe with
/// one note in brackets after it (`5 (300 s)`, `[] (none)`).
fn plain_default(text: &str) -> Option<Value> {
    let value = match text.split_once(" (") {
        Some((v, note)) if note.ends_with(')') && !note.contains('(') => v,
        Some(_) => return None,
        None => text,
    };
    format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("v").cloned())
}

/// A value as a word of a CLI line: strings bare, the rest as TOML writes them.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => crate::config::emit::value(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str) -> &'static SectionDoc {
        SECTIONS
            .iter()
            .map(|s| s.doc())
            .find(|d| d.name == name)
            .unwrap()
    }

    #[test]
    fn routes_match_by_prefix_and_table() {
        let d = doc("route");
        let n = |s: &str| normal(d, &Entry::parse(s));
        let old = [
            n("prefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]"),
            n("prefix = \"10.0.0.0/8\"\ntable = 7\ndrop = true"),
            n("prefix = \"10.9.0.0/16\"\ndrop = true"),
            n("prefix = \"10.7.0.0/16\"\nvia = [\"192.0.2.2\", \"192.0.2.3\"]\ninterface = \"d0\""),
        ];
        let new = [
            // The same route with its table spelt out and one via as a string.
            n("prefix = \"10.0.0.0/8\"\ntable = 0\nvia = \"192.0.2.2\""),
            n("prefix = \"10.0.0.0/8\"\ntable = 7\nvia = [\"192.0.2.9\"]"),
            n("prefix = \"10.8.0.0/16\"\ndrop = true"),
            // Its interface left out (found by the address: not compared), its next hops
            // in another order.
            n("prefix = \"10.7.0.0/16\"\nvia = [\"192.0.2.3\", \"192.0.2.2\"]"),
        ];
        let c = section_changes("route", &old, &new, &["interface"]);
        let kinds: Vec<(String, &str)> = c.iter().map(|c| (c.name(), c.kind())).collect();
        assert_eq!(
            kinds,
            [
                ("route prefix=10.0.0.0/8 table=7".to_string(), "changed"),
                ("route prefix=10.9.0.0/16 table=0".to_string(), "removed"),
                ("route prefix=10.8.0.0/16 table=0".to_string(), "added"),
            ]
        );
    }

    #[test]
    fn sections_without_identity_compare_whole_entries() {
        let a = Entry::parse("protocol = \"tcp\"\nlocal = \"10.0.0.1\"");
        let b = Entry::parse("local = \"10.0.0.1\"\nprotocol = \"tcp\"");
        let c = Entry::parse("protocol = \"udp\"\nlocal = \"10.0.0.1\"");
        assert!(section_changes("nat44-static", std::slice::from_ref(&a), &[b], &[]).is_empty());
        let d = section_changes("nat44-static", &[a], &[c], &[]);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].kind(), d[1].kind()), ("removed", "added"));
    }

    #[test]
    fn a_nat_pool_range_is_its_addresses() {
        let d = doc("nat44");
        let a = normal(
            d,
            &Entry::parse("addresses = [\"198.51.100.9\", \"198.51.100.7-198.51.100.8\"]"),
        );
        let b = normal(
            d,
            &Entry::parse("addresses = [\"198.51.100.7\", \"198.51.100.8\", \"198.51.100.9\"]"),
        );
        assert!(same(&a, &b), "{a:?} {b:?}");
        assert!(section_changes("nat44", &[a], &[b], &[]).is_empty());
    }

    #[test]
    fn plain_defaults_only() {
        assert_eq!(plain_default("true"), Some(Value::Boolean(true)));
        assert_eq!(plain_default("[] (none)"), Some(Value::Array(vec![])));
        assert_eq!(plain_default("\"up\""), Some(Value::String("up".into())));
        assert_eq!(
            plain_default("5 (300 s, Linux's ageing_time)"),
            Some(Value::Integer(5))
        );
        assert_eq!(plain_default("512 (af_packet), 2048 (af_xdp)"), None);
        assert_eq!(plain_default("found by the next hop's address"), None);
        assert_eq!(plain_default("required"), None);
    }
}
