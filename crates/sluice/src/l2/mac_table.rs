//! The MAC table of the bridge domains: which interface each learnt or configured MAC
//! address is behind, per bridge domain. Learning a source address either adds it, refreshes
//! it, or moves it to the interface it now arrives on (a move is counted); a bridge domain
//! holds at most its limit of learnt entries, and each port at most its own limit, so a MAC
//! flood from one port fills that port's share and the excess is counted, never stored,
//! while stations on the other ports are still learnt; static entries neither age nor move
//! and count against no limit; ageing removes learnt entries not seen for the bridge
//! domain's age.
//!
//! This is the control-plane table: the bridge nodes will read a copy published the way the
//! FIB is and send what they learn to the control thread, so the per-packet path takes no
//! lock.

use crate::wire::MacAddress;
use std::collections::HashMap;

/// A bridge domain's number.
pub type BdId = u32;

/// Where a MAC address is, and since when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacEntry {
    /// The interface (its index) the address is behind.
    pub interface: u32,
    /// Configured (`l2fib add ... static`): never ages, never moves.
    pub is_static: bool,
    /// When it was last seen as a source, in the caller's clock (seconds).
    pub seen: u64,
}

/// What learning a source address did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Learnt {
    Added,
    Refreshed,
    /// It was behind another interface.
    Moved {
        from: u32,
    },
    /// A static entry says another interface: kept as configured.
    StaticElsewhere,
    /// The bridge domain holds its limit of learnt entries already.
    LimitReached,
    /// The interface holds its port limit of learnt entries already (a new address, or one
    /// moving to it: the entry stays where it was).
    PortLimitReached,
    /// Multicast, broadcast and all-zero sources are never learnt (IEEE 802.1D 7.8).
    NotUnicast,
}

/// Counters of one bridge domain's table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MacCounters {
    pub learnt: u64,
    pub moves: u64,
    pub aged: u64,
    /// Sources not learnt because the domain's limit was reached.
    pub over_limit: u64,
    /// Sources not learnt (or not moved) because their port's limit was reached.
    pub over_port_limit: u64,
}

/// One port's share of its domain's table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCount {
    /// Learnt entries behind the port.
    pub learnt: usize,
    /// Sources of this port not learnt or moved because it was at its limit.
    pub over_limit: u64,
}

#[derive(Debug, Default)]
struct Domain {
    entries: HashMap<MacAddress, MacEntry>,
    /// Learnt (not static) entries: what the limit counts.
    dynamic: usize,
    limit: usize,
    counters: MacCounters,
    /// Learnt entries and refusals by interface.
    ports: HashMap<u32, PortCount>,
}

impl Domain {
    /// A learnt entry behind `interface` came or went.
    fn port_add(&mut self, interface: u32, n: isize) {
        let p = self.ports.entry(interface).or_default();
        p.learnt = p.learnt.saturating_add_signed(n);
    }
}

/// Every bridge domain's MAC table.
#[derive(Debug, Default)]
pub struct MacTable {
    domains: HashMap<BdId, Domain>,
}

impl MacTable {
    pub fn new() -> MacTable {
        MacTable::default()
    }

    /// Create bridge domain `bd` with room for `limit` learnt entries (or change its limit;
    /// entries beyond a lowered limit stay until they age).
    pub fn set_limit(&mut self, bd: BdId, limit: usize) {
        self.domains.entry(bd).or_default().limit = limit;
    }

    /// Drop bridge domain `bd` and its entries.
    pub fn remove_domain(&mut self, bd: BdId) {
        self.domains.remove(&bd);
    }

    /// `mac` was seen as a source on `interface` at `now`; `interface` holds at most
    /// `port_limit` learnt entries.
    pub fn learn(
        &mut self,
        bd: BdId,
        mac: MacAddress,
        interface: u32,
        port_limit: usize,
        now: u64,
    ) -> Learnt {
        if mac.is_multicast() || mac.0 == [0; 6] {
            return Learnt::NotUnicast;
        }
        let d = self.domains.entry(bd).or_default();
        let port_full = d.ports.get(&interface).map_or(0, |p| p.learnt) >= port_limit;
        let refuse_port = |d: &mut Domain| {
            d.counters.over_port_limit += 1;
            d.ports.entry(interface).or_default().over_limit += 1;
            Learnt::PortLimitReached
        };
        match d.entries.get_mut(&mac) {
            Some(e) if e.is_static => {
                if e.interface == interface {
                    Learnt::Refreshed
                } else {
                    Learnt::StaticElsewhere
                }
            }
            Some(e) if e.interface == interface => {
                e.seen = now;
                Learnt::Refreshed
            }
            Some(_) if port_full => refuse_port(d),
            Some(e) => {
                e.seen = now;
                let from = e.interface;
                e.interface = interface;
                d.counters.moves += 1;
                d.port_add(from, -1);
                d.port_add(interface, 1);
                Learnt::Moved { from }
            }
            None if d.dynamic >= d.limit => {
                d.counters.over_limit += 1;
                Learnt::LimitReached
            }
            None if port_full => refuse_port(d),
            None => {
                d.entries.insert(
                    mac,
                    MacEntry {
                        interface,
                        is_static: false,
                        seen: now,
                    },
                );
                d.dynamic += 1;
                d.port_add(interface, 1);
                d.counters.learnt += 1;
                Learnt::Added
            }
        }
    }

    /// Configure `mac` behind `interface`, static or as if learnt at `now` (replacing what
    /// was there; a static entry does not count against the limit).
    pub fn add(&mut self, bd: BdId, mac: MacAddress, interface: u32, is_static: bool, now: u64) {
        let d = self.domains.entry(bd).or_default();
        let entry = MacEntry {
            interface,
            is_static,
            seen: now,
        };
        if let Some(old) = d.entries.insert(mac, entry) {
            if !old.is_static {
                d.dynamic -= 1;
                d.port_add(old.interface, -1);
            }
        }
        if !is_static {
            d.dynamic += 1;
            d.port_add(interface, 1);
        }
    }

    /// Remove `mac`; returns what was there.
    pub fn remove(&mut self, bd: BdId, mac: MacAddress) -> Option<MacEntry> {
        let d = self.domains.get_mut(&bd)?;
        let e = d.entries.remove(&mac)?;
        if !e.is_static {
            d.dynamic -= 1;
            d.port_add(e.interface, -1);
        }
        Some(e)
    }

    pub fn lookup(&self, bd: BdId, mac: MacAddress) -> Option<MacEntry> {
        self.domains.get(&bd)?.entries.get(&mac).copied()
    }

    /// Remove learnt entries of `bd` not seen since `now - max_age`; returns how many.
    pub fn age(&mut self, bd: BdId, now: u64, max_age: u64) -> usize {
        let Some(d) = self.domains.get_mut(&bd) else {
            return 0;
        };
        let before = d.entries.len();
        let ports = &mut d.ports;
        d.entries.retain(|_, e| {
            let keep = e.is_static || now.saturating_sub(e.seen) < max_age;
            if !keep {
                ports.entry(e.interface).or_default().learnt -= 1;
            }
            keep
        });
        let aged = before - d.entries.len();
        d.dynamic -= aged;
        d.counters.aged += aged as u64;
        aged
    }

    /// Remove learnt entry `mac` of `bd` because it aged (counted); false when it is not
    /// there or static.
    pub fn expire(&mut self, bd: BdId, mac: MacAddress) -> bool {
        let Some(d) = self.domains.get_mut(&bd) else {
            return false;
        };
        let Some(e) = d.entries.get(&mac).filter(|e| !e.is_static).copied() else {
            return false;
        };
        d.entries.remove(&mac);
        d.dynamic -= 1;
        d.port_add(e.interface, -1);
        d.counters.aged += 1;
        true
    }

    /// Remove every learnt entry of `bd` (`clear l2fib`); static ones stay.
    pub fn flush(&mut self, bd: BdId) -> usize {
        self.age(bd, u64::MAX, 0)
    }

    /// Entries of `bd`: (all, learnt).
    pub fn count(&self, bd: BdId) -> (usize, usize) {
        self.domains
            .get(&bd)
            .map_or((0, 0), |d| (d.entries.len(), d.dynamic))
    }

    /// `interface`'s learnt entries and refusals in `bd`.
    pub fn port(&self, bd: BdId, interface: u32) -> PortCount {
        self.domains
            .get(&bd)
            .and_then(|d| d.ports.get(&interface))
            .copied()
            .unwrap_or_default()
    }

    /// Forget `interface`'s counts in `bd` (it left the domain; its entries went first).
    pub fn forget_port(&mut self, bd: BdId, interface: u32) {
        if let Some(d) = self.domains.get_mut(&bd) {
            d.ports.remove(&interface);
        }
    }

    pub fn counters(&self, bd: BdId) -> MacCounters {
        self.domains
            .get(&bd)
            .map_or_else(MacCounters::default, |d| d.counters)
    }

    /// `bd`'s entries, sorted by address.
    pub fn entries(&self, bd: BdId) -> Vec<(MacAddress, MacEntry)> {
        let mut v: Vec<_> = self
            .domains
            .get(&bd)
            .map(|d| d.entries.iter().map(|(m, e)| (*m, *e)).collect())
            .unwrap_or_default();
        v.sort_by_key(|(m, _)| *m);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mac(n: u8) -> MacAddress {
        MacAddress([2, 0, 0, 0, 0, n])
    }

    #[test]
    fn learn_refresh_move_and_static() {
        let mut t = MacTable::new();
        t.set_limit(1, 10);
        assert_eq!(t.learn(1, mac(1), 3, 10, 0), Learnt::Added);
        assert_eq!(t.learn(1, mac(1), 3, 10, 5), Learnt::Refreshed);
        assert_eq!(t.lookup(1, mac(1)).unwrap().seen, 5);
        assert_eq!(t.learn(1, mac(1), 4, 10, 6), Learnt::Moved { from: 3 });
        assert_eq!(t.counters(1).moves, 1);
        t.add(1, mac(2), 7, true, 0);
        assert_eq!(t.learn(1, mac(2), 8, 10, 9), Learnt::StaticElsewhere);
        assert_eq!(t.lookup(1, mac(2)).unwrap().interface, 7);
        assert_eq!(
            t.learn(1, MacAddress::BROADCAST, 3, 10, 0),
            Learnt::NotUnicast
        );
        let zero = MacAddress([0; 6]);
        assert_eq!(t.learn(1, zero, 3, 10, 0), Learnt::NotUnicast);
        // Another bridge domain knows nothing of these.
        assert_eq!(t.lookup(2, mac(1)), None);
        assert_eq!(t.count(1), (2, 1));
    }

    #[test]
    fn a_mac_flood_fills_the_limit_and_is_counted() {
        let mut t = MacTable::new();
        t.set_limit(1, 100);
        t.add(1, mac(0), 1, true, 0);
        for i in 0..10_000u32 {
            let m = MacAddress([6, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
            t.learn(1, m, 2, usize::MAX, 0);
        }
        assert_eq!(t.count(1), (101, 100));
        let c = t.counters(1);
        assert_eq!((c.learnt, c.over_limit), (100, 9_900));
        // Ageing frees room; static entries stay through ageing and flushing.
        assert_eq!(t.age(1, 301, 300), 100);
        assert_eq!(t.learn(1, mac(9), 2, usize::MAX, 301), Learnt::Added);
        t.flush(1);
        assert_eq!(t.count(1), (1, 0));
        assert!(t.lookup(1, mac(0)).is_some());
    }

    #[test]
    fn a_flood_from_one_port_leaves_room_for_the_others() {
        let mut t = MacTable::new();
        t.set_limit(1, 1000);
        for i in 0..5_000u32 {
            let m = MacAddress([6, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
            t.learn(1, m, 2, 100, 0);
        }
        assert_eq!(
            t.port(1, 2),
            PortCount {
                learnt: 100,
                over_limit: 4_900
            }
        );
        // A station on another port is learnt; one moving to the full port is not moved.
        assert_eq!(t.learn(1, mac(1), 3, 100, 0), Learnt::Added);
        assert_eq!(t.learn(1, mac(1), 2, 100, 1), Learnt::PortLimitReached);
        assert_eq!(t.lookup(1, mac(1)).unwrap().interface, 3);
        let c = t.counters(1);
        assert_eq!((c.learnt, c.over_limit, c.over_port_limit), (101, 0, 4_901));
        // Ageing and removal give the port its room back.
        assert_eq!(t.age(1, 300, 300), 101);
        assert_eq!(t.port(1, 2).learnt, 0);
        assert_eq!(t.learn(1, mac(1), 2, 100, 300), Learnt::Added);
        assert_eq!(t.remove(1, mac(1)).map(|e| e.interface), Some(2));
        assert_eq!(t.port(1, 2).learnt, 0);
    }

    /// The table against a plain model: the same operations, the same answers.
    #[derive(Debug, Clone)]
    enum Op {
        Learn(u8, u32),
        AddStatic(u8, u32),
        Remove(u8),
        Age(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..24, 0u32..4).prop_map(|(m, i)| Op::Learn(m, i)),
            (0u8..24, 0u32..4).prop_map(|(m, i)| Op::AddStatic(m, i)),
            (0u8..24).prop_map(Op::Remove),
            (0u64..20).prop_map(Op::Age),
        ]
    }

    proptest! {
        #[test]
        fn matches_a_model(
            ops in prop::collection::vec(op(), 1..200),
            limit in 0usize..12,
            port_limit in 0usize..6,
        ) {
            let mut t = MacTable::new();
            t.set_limit(1, limit);
            let mut model: HashMap<MacAddress, MacEntry> = HashMap::new();
            for (now, op) in ops.into_iter().enumerate() {
                let now = now as u64;
                match op {
                    Op::Learn(m, i) => {
                        let got = t.learn(1, mac(m), i, port_limit, now);
                        let dynamic = model.values().filter(|e| !e.is_static).count();
                        let on_port = model.values().filter(|e| !e.is_static && e.interface == i).count();
                        let want = match model.get_mut(&mac(m)) {
                            Some(e) if e.is_static => if e.interface == i { Learnt::Refreshed } else { Learnt::StaticElsewhere },
                            Some(e) if e.interface == i => { e.seen = now; Learnt::Refreshed }
                            Some(_) if on_port >= port_limit => Learnt::PortLimitReached,
                            Some(e) => { e.seen = now; let from = e.interface; e.interface = i; Learnt::Moved { from } }
                            None if dynamic >= limit => Learnt::LimitReached,
                            None if on_port >= port_limit => Learnt::PortLimitReached,
                            None => { model.insert(mac(m), MacEntry { interface: i, is_static: false, seen: now }); Learnt::Added }
                        };
                        prop_assert_eq!(got, want);
                    }
                    Op::AddStatic(m, i) => {
                        t.add(1, mac(m), i, true, now);
                        model.insert(mac(m), MacEntry { interface: i, is_static: true, seen: now });
                    }
                    Op::Remove(m) => {
                        prop_assert_eq!(t.remove(1, mac(m)), model.remove(&mac(m)));
                    }
                    Op::Age(max) => {
                        let before = model.len();
                        model.retain(|_, e| e.is_static || now.saturating_sub(e.seen) < max);
                        prop_assert_eq!(t.age(1, now, max), before - model.len());
                    }
                }
                let dynamic = model.values().filter(|e| !e.is_static).count();
                prop_assert_eq!(t.count(1), (model.len(), dynamic));
                // A flood never takes the learnt entries past the limits; each port's count
                // is what is behind it.
                prop_assert!(t.count(1).1 <= limit);
                for i in 0..4 {
                    let on_port = model.values().filter(|e| !e.is_static && e.interface == i).count();
                    prop_assert_eq!(t.port(1, i).learnt, on_port);
                    prop_assert!(on_port <= port_limit);
                }
            }
            let mut want: Vec<_> = model.into_iter().collect();
            want.sort_by_key(|(m, _)| *m);
            prop_assert_eq!(t.entries(1), want);
        }
    }
}
