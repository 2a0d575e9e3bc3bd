//! The events whose only source is state the workers, drivers and the neighbour learner
//! leave behind: the control socket's main thread compares a snapshot of it with the last
//! one every `EVERY` while someone is subscribed (`watcher::Watcher::poll`, under the
//! control plane's lock) and publishes the differences. A change undone between two looks
//! is not seen; a worker's packet path is never touched (it already keeps these counters).
//!
//! - `link`: an interface's admin state (`set interface state`) or link state (a memif
//!   peer, a host device's carrier) changed;
//! - `interface`: one was created or deleted (sub-interfaces);
//! - `neighbor`: an entry appeared (`learnt`, or `set` when static), its MAC changed, or it
//!   went away (`removed`: aged out, failed, evicted or deleted);
//! - `memif`: a memif interface's peer `connected` or `disconnected`, or a protocol
//!   `violation` was counted;
//! - `sessions`: an ACL session table went over `HIGH_WATER` of its capacity (`high`), back
//!   under it (`normal`), or refused sessions because it was full (`full`, with how many).

use super::{Bus, Kind};
use crate::control::exec::Control;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// How often the state is compared.
pub const EVERY: Duration = Duration::from_millis(100);
/// The share of a session table's capacity above which it is reported `high`, in percent.
pub const HIGH_WATER: usize = 90;

#[derive(Clone, PartialEq, Eq)]
struct Iface {
    index: u32,
    driver: &'static str,
    admin: bool,
    link: &'static str,
    violations: BTreeMap<String, u64>,
}

/// One session table's state: whether over the high-water mark, and its refusals.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Table {
    entries: u64,
    capacity: usize,
    high: bool,
    full: u64,
}

#[derive(Default)]
struct Snapshot {
    interfaces: BTreeMap<String, Iface>,
    /// (interface, address) → (MAC, static)
    neighbors: BTreeMap<(String, String), (String, bool)>,
    /// ACL session tables by worker.
    sessions: Vec<Table>,
}

fn snapshot(c: &Control) -> Snapshot {
    let mut s = Snapshot::default();
    for i in c.dp.interfaces.live() {
        let violations = i
            .all_details()
            .into_iter()
            .filter_map(|(k, v)| {
                let name = k.strip_prefix("violation: ")?;
                Some((name.to_string(), v.parse().ok()?))
            })
            .collect();
        s.interfaces.insert(
            i.name.clone(),
            Iface {
                index: i.index,
                driver: i.driver,
                admin: i.is_up(),
                link: i.link_state(),
                violations,
            },
        );
    }
    let neighbors =
        c.dp.router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .neighbors();
    for n in neighbors.into_iter().filter(|n| !n.mac.is_empty()) {
        s.neighbors
            .insert((n.interface, n.ip.to_string()), (n.mac, n.static_entry));
    }
    let sessions =
        c.dp.acls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .filters()
            .sessions
            .clone();
    for t in sessions.tables() {
        let entries = t.stats.entries.load(Relaxed);
        let capacity = t.capacity();
        s.sessions.push(Table {
            entries,
            capacity,
            high: entries as usize * 100 >= capacity * HIGH_WATER,
            full: t.stats.table_full.load(Relaxed),
        });
    }
    s
}

/// The last snapshot, while someone watches.
#[derive(Default)]
pub struct Watcher {
    last: Option<Snapshot>,
    looked: Option<Instant>,
}

impl Watcher {
    /// Whether it is time for another look.
    pub fn due(&self) -> bool {
        self.looked.is_none_or(|t| t.elapsed() >= EVERY)
    }

    /// Compare the state with the last look and publish what changed. With no subscriber
    /// nothing is looked at, and the next subscriber's first look is the baseline.
    pub fn poll(&mut self, c: &Control, bus: &Bus) {
        self.looked = Some(Instant::now());
        if !bus.watched() {
            self.last = None;
            return;
        }
        let now = snapshot(c);
        if let Some(last) = &self.last {
            interfaces(last, &now, bus);
            neighbors(last, &now, bus);
            sessions(last, &now, bus);
        }
        self.last = Some(now);
    }
}

fn interfaces(last: &Snapshot, now: &Snapshot, bus: &Bus) {
    for (name, was) in &last.interfaces {
        if !now.interfaces.contains_key(name) {
            bus.publish(
                Kind::Interface,
                json!({"event": "deleted", "interface": name, "index": was.index}),
            );
        }
    }
    for (name, i) in &now.interfaces {
        let Some(was) = last.interfaces.get(name) else {
            bus.publish(
                Kind::Interface,
                json!({"event": "created", "interface": name, "index": i.index,
                       "driver": i.driver}),
            );
            continue;
        };
        if (was.admin, was.link) != (i.admin, i.link) {
            bus.publish(
                Kind::Link,
                json!({"interface": name, "admin": if i.admin { "up" } else { "down" },
                       "link": i.link, "was": {"admin": if was.admin { "up" } else { "down" },
                       "link": was.link}}),
            );
        }
        if i.driver == "memif" && (was.link == "up") != (i.link == "up") {
            let event = if i.link == "up" {
                "connected"
            } else {
                "disconnected"
            };
            bus.publish(Kind::Memif, json!({"event": event, "interface": name}));
        }
        for (v, n) in &i.violations {
            let before = was.violations.get(v).copied().unwrap_or(0);
            if *n > before {
                bus.publish(
                    Kind::Memif,
                    json!({"event": "violation", "interface": name, "violation": v,
                           "count": n - before}),
                );
            }
        }
    }
}

fn neighbors(last: &Snapshot, now: &Snapshot, bus: &Bus) {
    for ((interface, ip), (mac, _)) in &last.neighbors {
        if !now.neighbors.contains_key(&(interface.clone(), ip.clone())) {
            bus.publish(
                Kind::Neighbor,
                json!({"event": "removed", "interface": interface, "ip": ip, "mac": mac}),
            );
        }
    }
    for (key, (mac, fixed)) in &now.neighbors {
        let (interface, ip) = key;
        match last.neighbors.get(key) {
            None => {
                let event = if *fixed { "set" } else { "learnt" };
                bus.publish(
                    Kind::Neighbor,
                    json!({"event": event, "interface": interface, "ip": ip, "mac": mac,
                           "static": fixed}),
                );
            }
            Some((was, _)) if was != mac => {
                bus.publish(
                    Kind::Neighbor,
                    json!({"event": "changed", "interface": interface, "ip": ip, "mac": mac,
                           "was": was, "static": fixed}),
                );
            }
            Some(_) => {}
        }
    }
}

fn sessions(last: &Snapshot, now: &Snapshot, bus: &Bus) {
    for (w, t) in now.sessions.iter().enumerate() {
        let was = last.sessions.get(w).copied().unwrap_or(Table {
            high: false,
            full: t.full,
            ..*t
        });
        let fields = |event: &str| {
            json!({"event": event, "table": "acl", "worker": w, "entries": t.entries,
                   "capacity": t.capacity})
        };
        if t.high != was.high {
            bus.publish(
                Kind::Sessions,
                fields(if t.high { "high" } else { "normal" }),
            );
        }
        if t.full > was.full {
            let mut f = fields("full");
            f["refused"] = json!(t.full - was.full);
            bus.publish(Kind::Sessions, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn drain(s: &crate::events::Subscription) -> Vec<serde_json::Value> {
        std::iter::from_fn(|| s.next(Duration::ZERO))
            .map(|e| (*e).clone())
            .collect()
    }

    fn table(entries: u64, full: u64) -> Table {
        Table {
            entries,
            capacity: 100,
            high: entries as usize * 100 >= 100 * HIGH_WATER,
            full,
        }
    }

    #[test]
    fn session_tables_report_high_water_and_refusals() {
        let bus = Arc::new(Bus::default());
        let sub = bus.subscribe(&[Kind::Sessions]);
        let snap = |t: Table| Snapshot {
            sessions: vec![t],
            ..Snapshot::default()
        };
        sessions(&snap(table(10, 0)), &snap(table(89, 0)), &bus);
        assert!(drain(&sub).is_empty());
        sessions(&snap(table(89, 0)), &snap(table(100, 3)), &bus);
        let e = drain(&sub);
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!(
            (&e[0]["event"], &e[0]["entries"]),
            (&json!("high"), &json!(100))
        );
        assert_eq!(
            (&e[1]["event"], &e[1]["refused"]),
            (&json!("full"), &json!(3))
        );
        sessions(&snap(table(100, 3)), &snap(table(50, 3)), &bus);
        assert_eq!(drain(&sub)[0]["event"], json!("normal"));
        // A table that appears already full reports it, without refusals from before.
        sessions(&Snapshot::default(), &snap(table(95, 7)), &bus);
        let e = drain(&sub);
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0]["event"], json!("high"));
    }

    #[test]
    fn neighbors_are_learnt_changed_and_removed() {
        let bus = Arc::new(Bus::default());
        let sub = bus.subscribe(&[Kind::Neighbor]);
        let snap = |entries: &[(&str, &str, bool)]| Snapshot {
            neighbors: entries
                .iter()
                .map(|(ip, mac, s)| (("n0".to_string(), ip.to_string()), (mac.to_string(), *s)))
                .collect(),
            ..Snapshot::default()
        };
        let a = snap(&[("192.0.2.9", "02:00:00:00:00:09", false)]);
        let b = snap(&[("192.0.2.9", "02:00:00:00:00:0a", false)]);
        neighbors(&Snapshot::default(), &a, &bus);
        neighbors(&a, &b, &bus);
        neighbors(&b, &Snapshot::default(), &bus);
        let e = drain(&sub);
        let events: Vec<&serde_json::Value> = e.iter().map(|e| &e["event"]).collect();
        assert_eq!(
            events,
            [&json!("learnt"), &json!("changed"), &json!("removed")]
        );
        assert_eq!(e[1]["was"], json!("02:00:00:00:00:09"));
    }
}
