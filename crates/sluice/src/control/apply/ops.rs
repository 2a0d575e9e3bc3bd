//! A difference as CLI lines: each changed entry becomes operations, each with the line
//! that undoes it.
//!
//! Operations are lines of the command table, so `apply` runs them exactly as `sluice ctl`
//! would, `diff` prints them, and the log says them. A change has two parts: what goes
//! away (`remove`) and what comes or changes (`add`). The plan runs every section's
//! removals first, in the reverse order of `SECTIONS` (bindings before the ACL they use,
//! routes before the addresses they resolve over, ports before their bridge domain), then
//! every section's additions in the order of `SECTIONS` (addresses before routes, bridge
//! domains before their ports and MACs, ACLs before their bindings).
//!
//! An interface's address lines run at the stage of the tables instead of their own section:
//! after the interfaces are bound to their tables (a table is set on an interface without
//! addresses) and before the routes that resolve over them; removed in the reverse order.
//!
//! A section that cannot change live is refused with the reason: the ones the CLI cannot
//! change (`AsStarted`), a hardware interface added or removed or its driver keys changed,
//! a sub-interface's tags or a BVI's MAC (set when it is made).

use super::diff::{text, Change};
use crate::config::emit::Entry;
use toml::Value;

/// One CLI line and the line that undoes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// The entry it belongs to: `route prefix=10.0.0.0/8 table=0 changed`.
    pub what: String,
    pub line: String,
    pub undo: String,
    /// An interface address line: it runs at the stage of the tables (see above).
    pub address: bool,
}

/// A change's operations: what goes away, then what comes.
#[derive(Default)]
pub struct Ops {
    pub remove: Vec<Op>,
    pub add: Vec<Op>,
}

impl Ops {
    pub(super) fn remove(&mut self, what: &str, line: String, undo: String) {
        self.remove.push(Op {
            what: what.into(),
            line,
            undo,
            address: false,
        });
    }

    pub(super) fn add(&mut self, what: &str, line: String, undo: String) {
        self.add.push(Op {
            what: what.into(),
            line,
            undo,
            address: false,
        });
    }

    /// The address lines of interface `name` going from `was` to `now`.
    pub(super) fn addresses(&mut self, what: &str, name: &str, was: &[String], now: &[String]) {
        let line = |a: &str, del: bool| {
            let del = if del { "del " } else { "" };
            format!("set interface ip address {del}{name} {a}")
        };
        let op = |line: String, undo: String| Op {
            what: what.into(),
            line,
            undo,
            address: true,
        };
        for a in was.iter().filter(|a| !now.contains(a)) {
            self.remove.push(op(line(a, true), line(a, false)));
        }
        for a in now.iter().filter(|a| !was.contains(a)) {
            self.add.push(op(line(a, false), line(a, true)));
        }
    }
}

/// A changed entry as the sections' operations take it: what the log calls it, and the entry
/// before and after (`None`: not there).
#[derive(Clone, Copy)]
pub struct Edit<'a> {
    pub what: &'a str,
    pub old: Option<&'a Entry>,
    pub new: Option<&'a Entry>,
}

/// What the operations depend on besides the change: the running daemon's workers.
pub struct Context {
    pub workers: usize,
}

/// The operations of one change, or why it cannot be applied without a restart.
pub fn ops(c: &Change, cx: &Context) -> Result<Ops, String> {
    let what = format!("{} {}", c.name(), c.kind());
    let mut o = Ops::default();
    let (old, new) = (c.old.as_ref(), c.new.as_ref());
    let ch = Edit {
        what: &what,
        old,
        new,
    };
    match c.section {
        "interface" => interface(&mut o, ch)?,
        "subinterface" => super::soft::subinterface(&mut o, ch)?,
        "bvi" => super::soft::bvi(&mut o, ch)?,
        "xconnect" => xconnect(&mut o, ch)?,
        "rx-placement" => super::workers::rx_placement(&mut o, ch, cx.workers)?,
        "handoff" => super::workers::handoff(&mut o, ch)?,
        "lcp" => lcp(&mut o, ch)?,
        "nat44" => super::nat::nat44(&mut o, ch)?,
        "nat44-interface" => super::nat::interface(&mut o, ch)?,
        "nat44-static" => super::nat::mapping(&mut o, ch)?,
        "bridge-domain" => super::bridge::bridge_domain(&mut o, ch)?,
        "l2fib" => both(&mut o, ch, l2fib_add, |e| {
            Ok(format!(
                "l2fib del {} {}",
                word(e, "mac")?,
                word(e, "bridge-domain")?
            ))
        })?,
        "ip-table" => ip_table(&mut o, ch)?,
        "route" => both(&mut o, ch, route_add, |e| {
            Ok(format!("ip route del {}{}", word(e, "prefix")?, table(e)))
        })?,
        "acl" => both(&mut o, ch, acl_set, |e| {
            Ok(format!("acl del {}", word(e, "name")?))
        })?,
        "acl-input" | "acl-output" => {
            let dir = c.section.trim_start_matches("acl-");
            let set = |e: &Entry| -> Result<String, String> {
                Ok(format!(
                    "set acl-plugin interface {} {dir} acl {}",
                    word(e, "interface")?,
                    word(e, "acl")?
                ))
            };
            both(&mut o, ch, set, |e| Ok(set(e)? + " del"))?;
        }
        s => {
            return Err(format!(
                "{what}: [{s}] is not changed live; restart the daemon with the file"
            ))
        }
    }
    Ok(o)
}

/// An entry that one line makes (`set`, replacing one of the same identity) and one line
/// takes away (`del`): added, removed or replaced.
pub(super) fn both(
    o: &mut Ops,
    Edit { what, old, new }: Edit,
    set: impl Fn(&Entry) -> Result<String, String>,
    del: impl Fn(&Entry) -> Result<String, String>,
) -> Result<(), String> {
    match (old, new) {
        (None, Some(n)) => o.add(what, set(n)?, del(n)?),
        (Some(d), None) => o.remove(what, del(d)?, set(d)?),
        (Some(d), Some(n)) => o.add(what, set(n)?, set(d)?),
        (None, None) => {}
    }
    Ok(())
}

/// A key's value as one word: a string, an integer.
pub fn word(e: &Entry, key: &str) -> Result<String, String> {
    match e.get(key) {
        Some(v @ (Value::String(_) | Value::Integer(_))) => Ok(text(v)),
        Some(v) => Err(format!("key '{key}': {} is not one word", text(v))),
        None => Err(format!("key '{key}' is missing")),
    }
}

/// A list of strings (or one string).
pub fn words(e: &Entry, key: &str) -> Vec<String> {
    match e.get(key) {
        Some(Value::Array(a)) => a.iter().map(text).collect(),
        Some(v) => vec![text(v)],
        None => Vec::new(),
    }
}

/// ` table N` when the entry's table is not 0.
fn table(e: &Entry) -> String {
    match e.get("table").and_then(Value::as_integer) {
        Some(t) if t != 0 => format!(" table {t}"),
        _ => String::new(),
    }
}

/// [[interface]]: its admin state and addresses change live; anything else is its driver's.
fn interface(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let (Some(d), Some(n)) = (old, new) else {
        return Err(format!(
            "{what}: a hardware interface is made or removed only at start; restart the \
             daemon with the file"
        ));
    };
    let live = ["state", "address"];
    let mut keys: Vec<&str> = d
        .keys
        .iter()
        .chain(&n.keys)
        .map(|(k, _)| k.as_str())
        .collect();
    keys.dedup();
    if let Some(k) = keys
        .iter()
        .find(|k| !live.contains(k) && d.get(k) != n.get(k))
    {
        return Err(format!(
            "{what}: key '{k}' is the driver's, set at start; restart the daemon with the file"
        ));
    }
    let name = word(n, "name")?;
    o.addresses(what, &name, &words(d, "address"), &words(n, "address"));
    state(o, what, &name, &word(d, "state")?, &word(n, "state")?);
    Ok(())
}

/// `set interface state` when the admin state changes.
pub(super) fn state(o: &mut Ops, what: &str, name: &str, was: &str, now: &str) {
    if was != now {
        o.add(
            what,
            format!("set interface state {name} {now}"),
            format!("set interface state {name} {was}"),
        );
    }
}

/// [[lcp]]: `lcp create` / `lcp delete`; a pair that changes is deleted and made again.
fn lcp(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let create = |e: &Entry| -> Result<String, String> {
        let mut l = format!(
            "lcp create {} host-if {}",
            word(e, "interface")?,
            word(e, "host-if")?
        );
        if e.get("netns").is_some() {
            l.push_str(&format!(" netns {}", word(e, "netns")?));
        }
        Ok(l)
    };
    let delete = |e: &Entry| Ok::<_, String>(format!("lcp delete {}", word(e, "interface")?));
    if let Some(d) = old {
        o.remove(what, delete(d)?, create(d)?);
    }
    if let Some(n) = new {
        o.add(what, create(n)?, delete(n)?);
    }
    Ok(())
}

/// [[xconnect]]: `set interface l2 xconnect`, undone by `set interface l3`.
fn xconnect(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let set = |e: &Entry| -> Result<String, String> {
        Ok(format!(
            "set interface l2 xconnect {} {}",
            word(e, "rx")?,
            word(e, "tx")?
        ))
    };
    both(o, ch, set, |e| {
        Ok(format!("set interface l3 {}", word(e, "rx")?))
    })
}

fn l2fib_add(e: &Entry) -> Result<String, String> {
    Ok(format!(
        "l2fib add {} {} {} static",
        word(e, "mac")?,
        word(e, "bridge-domain")?,
        word(e, "interface")?
    ))
}

/// `ip route add` for a [[route]] (it replaces a route of the same prefix and table).
fn route_add(e: &Entry) -> Result<String, String> {
    let mut l = format!("ip route add {}{}", word(e, "prefix")?, table(e));
    if e.get("drop") == Some(&Value::Boolean(true)) {
        return Ok(l + " drop");
    }
    let vias = words(e, "via");
    if vias.is_empty() {
        return Err("a route needs via or drop".into());
    }
    let itf = e.get("interface").map(text);
    let nh = e.get("next-hop-table").map(text);
    for v in vias {
        l.push_str(&format!(" via {v}"));
        if let Some(i) = &itf {
            l.push_str(&format!(" {i}"));
        }
        if let Some(t) = &nh {
            l.push_str(&format!(" next-hop-table {t}"));
        }
    }
    Ok(l)
}

/// `acl set NAME RULES` (replacing the list's rules).
fn acl_set(e: &Entry) -> Result<String, String> {
    Ok(format!(
        "acl set {} {}",
        word(e, "name")?,
        words(e, "rules").join(", ")
    ))
}

/// [[ip-table]]: the table, then its interfaces (both families, as the file binds them);
/// an interface that leaves goes back to table 0.
fn ip_table(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let id = word(new.or(old).ok_or("no entry")?, "id")?;
    let was = old.map(|e| words(e, "interfaces")).unwrap_or_default();
    let now = new.map(|e| words(e, "interfaces")).unwrap_or_default();
    if old.is_none() {
        o.add(
            what,
            format!("ip table add {id}"),
            format!("ip table del {id}"),
        );
    }
    for name in was.iter().filter(|n| !now.contains(n)) {
        for ip in ["ip", "ip6"] {
            o.remove(
                what,
                format!("set interface {ip} table {name} 0"),
                format!("set interface {ip} table {name} {id}"),
            );
        }
    }
    if new.is_none() {
        o.remove(
            what,
            format!("ip table del {id}"),
            format!("ip table add {id}"),
        );
    }
    for name in now.iter().filter(|n| !was.contains(n)) {
        for ip in ["ip", "ip6"] {
            o.add(
                what,
                format!("set interface {ip} table {name} {id}"),
                format!("set interface {ip} table {name} 0"),
            );
        }
    }
    Ok(())
}
