//! [[subinterface]] and [[bvi]] differences as CLI lines: the interfaces the CLI makes.
//!
//! A new one is made (`create sub-interface`, `bvi create` and its `set interface l2 bridge
//! ... bvi`), then its state and addresses set; one that goes loses its addresses, leaves
//! its domain and is deleted (`delete sub-interface`, `bvi delete`). Its addresses run at
//! the stage of the tables (`Ops::addresses`), so a table binds it before they come and
//! after they go; the sections that use it (cross-connects, bridge ports, routes, ACL and
//! NAT bindings, lcp) come after it in the file, so their lines run after it is made and
//! before it is deleted. What is fixed when it is made (a sub-interface's tags, a BVI's
//! MAC) is refused when it changes.

use super::ops::{state, word, words, Edit, Ops};
use crate::config::emit::Entry;
use toml::Value;

/// The keys of a sub-interface fixed when it is made.
const TAGS: &[&str] = &[
    "dot1q",
    "outer-dot1q",
    "outer-dot1ad",
    "inner-dot1q",
    "exact-match",
    "default",
    "untagged",
];

fn flag(e: &Entry, key: &str) -> bool {
    e.get(key) == Some(&Value::Boolean(true))
}

/// `create sub-interface PARENT ID TAGS` for a [[subinterface]].
fn create_subif(e: &Entry) -> Result<String, String> {
    let mut l = format!(
        "create sub-interface {} {}",
        word(e, "parent")?,
        word(e, "id")?
    );
    let tags = if flag(e, "default") {
        " default".to_string()
    } else if flag(e, "untagged") {
        " untagged".to_string()
    } else if e.get("dot1q").is_some() {
        let exact = if flag(e, "exact-match") {
            " exact-match"
        } else {
            ""
        };
        format!(" dot1q {}{exact}", word(e, "dot1q")?)
    } else {
        let (kind, outer) = match e.get("outer-dot1ad") {
            Some(_) => ("dot1ad", word(e, "outer-dot1ad")?),
            None => ("dot1q", word(e, "outer-dot1q")?),
        };
        format!(" {kind} {outer} inner-dot1q {}", word(e, "inner-dot1q")?)
    };
    l.push_str(&tags);
    Ok(l)
}

fn subif_name(e: &Entry) -> Result<String, String> {
    Ok(format!("{}.{}", word(e, "parent")?, word(e, "id")?))
}

/// [[subinterface]]: made or deleted, its state and addresses changed; its tags are fixed.
pub fn subinterface(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let name = subif_name(new.or(old).ok_or("no entry")?)?;
    let none = Vec::new();
    let addresses = |e: Option<&Entry>| e.map(|e| words(e, "address")).unwrap_or_default();
    match (old, new) {
        (Some(d), Some(n)) => {
            if let Some(k) = TAGS.iter().find(|k| d.get(k) != n.get(k)) {
                return Err(format!(
                    "{what}: key '{k}': a sub-interface's tags are set when it is made; \
                     apply the file without it, then with it"
                ));
            }
            o.addresses(what, &name, &addresses(old), &addresses(new));
            state(o, what, &name, &word(d, "state")?, &word(n, "state")?);
        }
        (Some(d), None) => {
            o.addresses(what, &name, &addresses(old), &none);
            // Deleted as it was made (up), so that undoing makes it, then sets it down.
            if word(d, "state")? != "up" {
                o.remove(
                    what,
                    format!("set interface state {name} up"),
                    format!("set interface state {name} down"),
                );
            }
            o.remove(
                what,
                format!("delete sub-interface {name}"),
                create_subif(d)?,
            );
        }
        (None, Some(n)) => {
            o.add(
                what,
                create_subif(n)?,
                format!("delete sub-interface {name}"),
            );
            state(o, what, &name, "up", &word(n, "state")?);
            o.addresses(what, &name, &none, &addresses(new));
        }
        (None, None) => {}
    }
    Ok(())
}

/// [[bvi]]: made or deleted, moved to another domain, its addresses changed; its MAC is
/// fixed.
pub fn bvi(o: &mut Ops, ch: Edit) -> Result<(), String> {
    let Edit { what, old, new } = ch;
    let instance = word(new.or(old).ok_or("no entry")?, "instance")?;
    let name = format!("bvi{instance}");
    let join = |e: &Entry| -> Result<String, String> {
        Ok(format!(
            "set interface l2 bridge {name} {} bvi",
            word(e, "bridge-domain")?
        ))
    };
    let create = |e: &Entry| -> Result<String, String> {
        let mut l = format!("bvi create instance {instance}");
        if e.get("mac").is_some() {
            l.push_str(&format!(" mac {}", word(e, "mac")?));
        }
        Ok(l)
    };
    let leave = format!("set interface l3 {name}");
    let none = Vec::new();
    let addresses = |e: Option<&Entry>| e.map(|e| words(e, "address")).unwrap_or_default();
    match (old, new) {
        (Some(d), Some(n)) => {
            if let (Some(m0), Some(m1)) = (d.get("mac"), n.get("mac")) {
                if m0 != m1 {
                    return Err(format!(
                        "{what}: key 'mac': a BVI's MAC is set when it is made; apply the \
                         file without it, then with it"
                    ));
                }
            }
            // It leaves its old domain with what goes (the domain may go too), and joins
            // the new one with what comes (after the domain is made).
            if d.get("bridge-domain") != n.get("bridge-domain") {
                o.remove(what, leave.clone(), join(d)?);
                o.add(what, join(n)?, leave.clone());
            }
            o.addresses(what, &name, &addresses(old), &addresses(new));
        }
        (Some(d), None) => {
            o.addresses(what, &name, &addresses(old), &none);
            o.remove(what, leave.clone(), join(d)?);
            o.remove(what, format!("bvi delete {name}"), create(d)?);
        }
        (None, Some(n)) => {
            o.add(what, create(n)?, format!("bvi delete {name}"));
            o.add(what, join(n)?, leave);
            o.addresses(what, &name, &none, &addresses(new));
        }
        (None, None) => {}
    }
    Ok(())
}
