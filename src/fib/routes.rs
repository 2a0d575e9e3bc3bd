//! The control plane's truth: which prefixes have which next hop. Ordered by (network address,
//! length) so that a prefix and all its more-specifics are one contiguous range, and the covering
//! route of a prefix is at most `BITS` point look-ups away. Its `lookup` is the slow, obviously
//! right longest match that tests compare the fast structures against.

use super::prefix::{Addr, Prefix};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct RouteTable<A: Addr> {
    routes: BTreeMap<(A, u8), u32>,
}

impl<A: Addr> RouteTable<A> {
    pub fn new() -> RouteTable<A> {
        RouteTable {
            routes: BTreeMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Adds or replaces a route; returns the next hop it replaced.
    pub fn insert(&mut self, p: Prefix<A>, next_hop: u32) -> Option<u32> {
        self.routes.insert((p.addr(), p.len()), next_hop)
    }

    /// Removes a route; returns its next hop, or `None` if there was no such route.
    pub fn remove(&mut self, p: Prefix<A>) -> Option<u32> {
        self.routes.remove(&(p.addr(), p.len()))
    }

    pub fn get(&self, p: Prefix<A>) -> Option<u32> {
        self.routes.get(&(p.addr(), p.len())).copied()
    }

    /// The longest route strictly shorter than `p` that contains it.
    pub fn covering(&self, p: Prefix<A>) -> Option<(Prefix<A>, u32)> {
        (0..p.len()).rev().find_map(|len| {
            let c = Prefix::containing(p.addr(), len);
            self.get(c).map(|nh| (c, nh))
        })
    }

    /// Longest-prefix match by probing every length from the longest down: slow and simple.
    pub fn lookup(&self, addr: A) -> Option<(Prefix<A>, u32)> {
        (0..=A::BITS).rev().find_map(|len| {
            let c = Prefix::containing(addr, len);
            self.get(c).map(|nh| (c, nh))
        })
    }

    /// `p` and every route inside it.
    pub fn within(&self, p: Prefix<A>) -> impl Iterator<Item = (Prefix<A>, u32)> + '_ {
        self.routes
            .range((p.addr(), p.len())..=(p.last(), A::BITS))
            .filter_map(|(&(a, l), &nh)| Prefix::new(a, l).map(|p| (p, nh)))
    }

    pub fn iter(&self) -> impl Iterator<Item = (Prefix<A>, u32)> + '_ {
        self.routes
            .iter()
            .filter_map(|(&(a, l), &nh)| Prefix::new(a, l).map(|p| (p, nh)))
    }

    /// A rough size: a B-tree node holds up to 11 keys and values plus edges; measured
    /// allocators give about 1.5 times the payload.
    pub fn approx_memory_bytes(&self) -> usize {
        self.routes.len() * (std::mem::size_of::<(A, u8)>() + 4) * 3 / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::prefix::Prefix4;

    fn p(s: &str) -> Prefix4 {
        let (a, l) = s.split_once('/').unwrap();
        let a: std::net::Ipv4Addr = a.parse().unwrap();
        Prefix4::new(u32::from(a), l.parse().unwrap()).unwrap()
    }

    #[test]
    fn fib_routes_covering_within_and_lookup() {
        let mut t = RouteTable::new();
        assert_eq!(t.insert(p("10.0.0.0/8"), 1), None);
        t.insert(p("10.1.0.0/16"), 2);
        t.insert(p("10.1.2.0/24"), 3);
        t.insert(p("11.0.0.0/8"), 4);
        assert_eq!(t.insert(p("10.1.0.0/16"), 5), Some(2));
        assert_eq!(t.covering(p("10.1.2.0/24")), Some((p("10.1.0.0/16"), 5)));
        assert_eq!(t.covering(p("10.0.0.0/8")), None);
        let inside: Vec<_> = t
            .within(p("10.0.0.0/8"))
            .map(|(q, _)| q.to_string())
            .collect();
        assert_eq!(inside, ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24"]);
        assert_eq!(t.lookup(0x0a01_0203), Some((p("10.1.2.0/24"), 3)));
        assert_eq!(t.lookup(0x0a01_0303), Some((p("10.1.0.0/16"), 5)));
        assert_eq!(t.lookup(0x0c00_0000), None);
        assert_eq!(t.remove(p("10.1.0.0/16")), Some(5));
        assert_eq!(t.remove(p("10.1.0.0/16")), None);
        assert_eq!(t.lookup(0x0a01_0303), Some((p("10.0.0.0/8"), 1)));
    }
}
