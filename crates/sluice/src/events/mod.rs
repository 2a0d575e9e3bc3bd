//! The event bus: what changes in the router, as typed events for `sluice ctl watch` and
//! the typed `watch` request (docs/api.md). An event is one JSON object,
//! `{"seq": N, "time": T, "kind": K, ...}`, `seq` counting every event published since the
//! daemon started and `time` the Unix time in seconds.
//!
//! Publishers are control-plane threads only (the CLI's handlers, the netlink thread, the
//! watchdog, the control socket's own `watcher`, which compares what the workers and
//! drivers left in shared state): a worker never publishes. Publishing takes two short
//! locks (the list of subscribers, then each queue for one push) and never waits for a
//! subscriber: each has a bounded queue (`QUEUE` events), and when it is full the oldest
//! event is dropped and counted; the subscriber's next event is then
//! `{"kind": "overflow", "lost": N, "time": T}`. With no subscriber, publishing is one
//! atomic load.

pub mod watcher;

use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

/// Events a subscriber's queue holds before the oldest are dropped.
pub const QUEUE: usize = 1024;

/// The classes of event, each a `kind` a subscriber may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An interface's admin or link state changed.
    Link,
    /// An interface was created or deleted.
    Interface,
    /// A neighbour was learnt or set, changed its MAC, or went away.
    Neighbor,
    /// A route was added or removed (with its source: config, cli, netlink).
    Route,
    /// A memif peer connected or disconnected, or broke the protocol.
    Memif,
    /// A session table came near its limit, or refused sessions because it was full.
    Sessions,
    /// A worker stopped passing its loop, or passes it again.
    Worker,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::Link,
        Kind::Interface,
        Kind::Neighbor,
        Kind::Route,
        Kind::Memif,
        Kind::Sessions,
        Kind::Worker,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Link => "link",
            Kind::Interface => "interface",
            Kind::Neighbor => "neighbor",
            Kind::Route => "route",
            Kind::Memif => "memif",
            Kind::Sessions => "sessions",
            Kind::Worker => "worker",
        }
    }

    pub fn parse(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("no event kind '{}' (kinds: {})", s.escape_debug(), names()))
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// Every kind's name, for messages.
pub fn names() -> String {
    let n: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    n.join(", ")
}

/// A `route` event: `event` is `added` or `removed`, `source` `config`, `cli` or `netlink`.
pub fn route(bus: &Bus, event: &str, prefix: impl std::fmt::Display, table: u32, source: &str) {
    if bus.watched() {
        bus.publish(
            Kind::Route,
            json!({"event": event, "prefix": prefix.to_string(), "table": table,
                   "source": source}),
        );
    }
}

/// The Unix time in seconds, to the microsecond.
fn now() -> f64 {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_micros() as f64) / 1e6
}

/// One subscriber's queue.
struct Queue {
    kinds: u32,
    inner: Mutex<Pending>,
    ready: Condvar,
}

#[derive(Default)]
struct Pending {
    events: VecDeque<Arc<Value>>,
    lost: u64,
}

impl Queue {
    fn push(&self, event: &Arc<Value>) {
        let mut p = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if p.events.len() >= QUEUE {
            p.events.pop_front();
            p.lost += 1;
        }
        p.events.push_back(event.clone());
        drop(p);
        self.ready.notify_one();
    }
}

/// The bus: the sequence counter and the subscribers.
#[derive(Default)]
pub struct Bus {
    seq: AtomicU64,
    /// How many subscribers there are (read without the lock).
    count: AtomicUsize,
    subscribers: Mutex<Vec<Arc<Queue>>>,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("seq", &self.seq)
            .field("subscribers", &self.count)
            .finish()
    }
}

impl Bus {
    pub fn new() -> Arc<Bus> {
        Arc::default()
    }

    /// Whether anyone is subscribed (to any kind).
    pub fn watched(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Publish an event of `kind` with `fields` (a JSON object; other values are put under
    /// `"value"`). Returns its `seq`, or `None` when no one was subscribed.
    pub fn publish(&self, kind: Kind, fields: Value) -> Option<u64> {
        if !self.watched() {
            return None;
        }
        let subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let mut m = Map::new();
        m.insert("seq".into(), json!(seq));
        m.insert("time".into(), json!(now()));
        m.insert("kind".into(), json!(kind.as_str()));
        match fields {
            Value::Object(f) => m.extend(f),
            other => {
                m.insert("value".into(), other);
            }
        }
        let event = Arc::new(Value::Object(m));
        for q in subs.iter().filter(|q| q.kinds & kind.bit() != 0) {
            q.push(&event);
        }
        Some(seq)
    }

    /// Subscribe to `kinds` (every kind when empty).
    pub fn subscribe(self: &Arc<Bus>, kinds: &[Kind]) -> Subscription {
        let mask = if kinds.is_empty() {
            Kind::ALL.iter().fold(0, |m, k| m | k.bit())
        } else {
            kinds.iter().fold(0, |m, k| m | k.bit())
        };
        let queue = Arc::new(Queue {
            kinds: mask,
            inner: Mutex::default(),
            ready: Condvar::new(),
        });
        let mut subs = self.subscribers.lock().unwrap_or_else(|e| e.into_inner());
        subs.push(queue.clone());
        self.count.store(subs.len(), Ordering::Relaxed);
        Subscription {
            bus: self.clone(),
            queue,
        }
    }
}

/// One subscriber; dropping it unsubscribes.
pub struct Subscription {
    bus: Arc<Bus>,
    queue: Arc<Queue>,
}

impl Subscription {
    /// The next event, waiting at most `wait`: an `overflow` event first when events were
    /// dropped since the last one taken.
    pub fn next(&self, wait: Duration) -> Option<Arc<Value>> {
        let q = &self.queue;
        let mut p = q.inner.lock().unwrap_or_else(|e| e.into_inner());
        if p.events.is_empty() && p.lost == 0 {
            p = q
                .ready
                .wait_timeout(p, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if p.lost > 0 {
            let lost = std::mem::take(&mut p.lost);
            return Some(Arc::new(
                json!({"kind": "overflow", "lost": lost, "time": now()}),
            ));
        }
        p.events.pop_front()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut subs = self
            .bus
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        subs.retain(|q| !Arc::ptr_eq(q, &self.queue));
        self.bus.count.store(subs.len(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Duration = Duration::ZERO;

    #[test]
    fn events_carry_seq_time_kind_and_fields() {
        let bus = Bus::new();
        assert_eq!(bus.publish(Kind::Link, json!({"interface": "n0"})), None);
        let s = bus.subscribe(&[]);
        assert!(bus.watched());
        assert_eq!(bus.publish(Kind::Link, json!({"interface": "n0"})), Some(1));
        let e = s.next(NOW).unwrap();
        assert_eq!(e["seq"], json!(1));
        assert_eq!(e["kind"], json!("link"));
        assert_eq!(e["interface"], json!("n0"));
        assert!(e["time"].as_f64().unwrap() > 1.6e9, "{e}");
        assert!(s.next(NOW).is_none());
        drop(s);
        assert!(!bus.watched());
    }

    #[test]
    fn a_subscriber_gets_only_its_kinds() {
        let bus = Bus::new();
        let routes = bus.subscribe(&[Kind::Route]);
        let all = bus.subscribe(&[]);
        bus.publish(Kind::Link, json!({}));
        bus.publish(Kind::Route, json!({}));
        assert_eq!(routes.next(NOW).unwrap()["kind"], json!("route"));
        assert!(routes.next(NOW).is_none());
        assert_eq!(all.next(NOW).unwrap()["seq"], json!(1));
        assert_eq!(all.next(NOW).unwrap()["seq"], json!(2));
    }

    #[test]
    fn overflow_drops_the_oldest_and_says_how_many() {
        let bus = Bus::new();
        let slow = bus.subscribe(&[]);
        let quick = bus.subscribe(&[]);
        for i in 0..QUEUE + 10 {
            bus.publish(Kind::Route, json!({"i": i}));
            // The quick one keeps up and loses nothing.
            assert_eq!(quick.next(NOW).unwrap()["i"], json!(i));
        }
        let first = slow.next(NOW).unwrap();
        assert_eq!(first["kind"], json!("overflow"));
        assert_eq!(first["lost"], json!(10));
        assert_eq!(slow.next(NOW).unwrap()["i"], json!(10));
        let mut n = 1;
        while slow.next(NOW).is_some() {
            n += 1;
        }
        assert_eq!(n, QUEUE);
    }

    #[test]
    fn a_waiting_subscriber_is_woken() {
        let bus = Bus::new();
        let s = bus.subscribe(&[Kind::Worker]);
        let b = bus.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            b.publish(Kind::Worker, json!({"worker": "w0"}));
        });
        let mut got = None;
        while got.is_none() {
            got = s.next(Duration::from_secs(1));
        }
        assert_eq!(got.unwrap()["worker"], json!("w0"));
        t.join().unwrap();
    }

    #[test]
    fn kinds_parse_by_name() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Ok(*k));
        }
        let e = Kind::parse("links").unwrap_err();
        assert!(e.contains("link, interface, neighbor"), "{e}");
    }
}
