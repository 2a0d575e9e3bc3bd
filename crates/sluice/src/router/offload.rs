//! What the XDP fast path asks the router: how far a routing decision the graph made for one
//! destination holds, so that one entry carries a whole route rather than one per address.

use super::adjacency::AdjKind;
use super::Router;
use crate::fib::prefix::Addr;
use crate::fib::RouteTable;

impl Router {
    /// The prefix around `dst` whose every address the router routes, for packets received
    /// on interface `rx_if`, exactly as it routed `dst` by adjacency `adj`: the route's whole
    /// prefix when it leads to a resolved neighbour and holds no more specific route (what
    /// ip4-input and ip4-lookup refuse by address is checked apart, per packet); `dst` alone
    /// on a connected network (each host its own MAC). `None` when `dst` is no longer routed
    /// by `adj` (the decision changed: nothing to install).
    pub fn uniform_prefix4(&self, rx_if: u32, dst: u32, adj: u32) -> Option<(u32, u8)> {
        let t = self.table_of(rx_if, false);
        let routes = self.tables.get(t)?.as_ref()?.fib.routes4();
        self.uniform(routes, dst, adj)
    }

    /// The same for an IPv6 destination (ip6-input's and ip6-lookup's refusals by address
    /// checked apart, per packet).
    pub fn uniform_prefix6(&self, rx_if: u32, dst: u128, adj: u32) -> Option<(u128, u8)> {
        let t = self.table_of(rx_if, true);
        let routes = self.tables.get(t)?.as_ref()?.fib.routes6();
        self.uniform(routes, dst, adj)
    }

    fn uniform<A: Addr>(&self, routes: &RouteTable<A>, dst: A, adj: u32) -> Option<(A, u8)> {
        let (route, by) = routes.lookup(dst)?;
        if by != adj {
            return None;
        }
        let a = self.view.adj(adj);
        let whole =
            a.kind == AdjKind::Neighbor && a.complete && routes.within(route).nth(1).is_none();
        Some(if whole {
            (route.addr(), route.len())
        } else {
            (dst, A::BITS)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{p, resolve, router, via};
    use std::net::IpAddr;

    fn a(s: &str) -> u32 {
        u32::from(s.parse::<std::net::Ipv4Addr>().unwrap())
    }

    #[test]
    fn a_route_to_a_neighbour_is_offloaded_whole_unless_something_more_specific_is_in_it() {
        let mut r = router();
        r.add_route(0, p("10.0.0.0/8"), &[via("198.51.100.2")])
            .unwrap();
        r.commit();
        let adj = |r: &super::Router, d: &str| super::super::tests::adj_of(r, d);
        // Not resolved yet: the one address (the graph resolves it first anyway).
        let before = adj(&r, "10.1.2.3");
        assert_eq!(
            r.uniform_prefix4(0, a("10.1.2.3"), before),
            Some((a("10.1.2.3"), 32))
        );
        let n: IpAddr = "198.51.100.2".parse().unwrap();
        resolve(&mut r, 1, n, super::super::tests::mac(0x22));
        r.commit();
        let by = adj(&r, "10.1.2.3");
        assert_eq!(
            r.uniform_prefix4(0, a("10.1.2.3"), by),
            Some((a("10.0.0.0"), 8))
        );
        // Another adjacency than the FIB's: the decision changed, nothing to install.
        assert_eq!(r.uniform_prefix4(0, a("10.1.2.3"), by + 100), None);
        // A more specific route inside: each address alone.
        r.add_route(0, p("10.9.0.0/16"), &[via("192.0.2.7")])
            .unwrap();
        r.commit();
        assert_eq!(
            r.uniform_prefix4(0, a("10.1.2.3"), by),
            Some((a("10.1.2.3"), 32))
        );
        // A connected network: each host its own MAC.
        let glean = adj(&r, "198.51.100.77");
        assert_eq!(
            r.uniform_prefix4(0, a("198.51.100.77"), glean),
            Some((a("198.51.100.77"), 32))
        );
    }

    #[test]
    fn an_ipv6_route_is_widened_as_an_ipv4_one() {
        let mut r = router();
        let six = |s: &str| u128::from(s.parse::<std::net::Ipv6Addr>().unwrap());
        let n: IpAddr = "2001:db8:1::2".parse().unwrap();
        r.add_route(0, p("2001:db8:19::/48"), &[via("2001:db8:1::2")])
            .unwrap();
        resolve(&mut r, 1, n, super::super::tests::mac(0x66));
        r.commit();
        let by = super::super::tests::adj_of(&r, "2001:db8:19::5");
        assert_eq!(
            r.uniform_prefix6(0, six("2001:db8:19::5"), by),
            Some((six("2001:db8:19::"), 48))
        );
        assert_eq!(r.uniform_prefix6(0, six("2001:db8:19::5"), by + 100), None);
    }
}
