use super::adjacency::{AdjKind, Adjacency};
use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn mac(last: u8) -> MacAddress {
    MacAddress([0x02, 0, 0, 0, 0, last])
}

fn router() -> Router {
    let mut r = Router::new(&[
        ("d0".into(), mac(0xa0), 1500),
        ("d1".into(), mac(0xa1), 1500),
    ]);
    r.add_address(0, "192.0.2.1".parse().unwrap(), 24).unwrap();
    r.add_address(1, "198.51.100.1".parse().unwrap(), 24)
        .unwrap();
    r.add_address(1, "2001:db8:1::1".parse().unwrap(), 64)
        .unwrap();
    r.commit();
    r
}

fn p(s: &str) -> IpPrefix {
    crate::fib::parse::parse_prefix(s).unwrap()
}

/// The adjacency a worker would get for `ip` from the published FIB and view.
fn forward(r: &Router, ip: &str) -> Adjacency {
    let fib = r.fib_reader().load_full();
    let mut out = [0u32; 1];
    match ip.parse::<IpAddr>().unwrap() {
        IpAddr::V4(a) => fib.v4().lookup_batch(&[u32::from(a)], &mut out),
        IpAddr::V6(a) => fib.v6().lookup_batch(&[u128::from(a)], &mut out),
    }
    *r.view().load().adj(out[0])
}

fn via(a: &str) -> NextHopSpec {
    NextHopSpec::Via {
        addr: a.parse().unwrap(),
        interface: None,
    }
}

#[test]
fn addresses_make_local_connected_and_edge_routes() {
    let r = router();
    assert_eq!(forward(&r, "192.0.2.1").kind, AdjKind::Local);
    let g = forward(&r, "192.0.2.77");
    assert_eq!((g.kind, g.interface), (AdjKind::Glean, 0));
    assert_eq!(forward(&r, "192.0.2.0").kind, AdjKind::Drop);
    assert_eq!(forward(&r, "192.0.2.255").kind, AdjKind::Drop);
    assert_eq!(forward(&r, "2001:db8:1::1").kind, AdjKind::Local);
    assert_eq!(forward(&r, "2001:db8:1::9").kind, AdjKind::Glean);
    assert_eq!(r.source_of(p("192.0.2.0/24")), Some(RouteSource::Connected));
    let mut r = r;
    assert!(r.add_address(1, "192.0.2.9".parse().unwrap(), 24).is_err());
    assert!(r.add_address(0, "192.0.2.1".parse().unwrap(), 24).is_err());
}

#[test]
fn static_route_waits_for_its_neighbour_then_completes() {
    let mut r = router();
    r.add_route(p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    r.commit();
    let a = forward(&r, "10.1.2.3");
    assert_eq!(
        (a.kind, a.interface, a.complete),
        (AdjKind::Neighbor, 1, false)
    );
    r.learn(NeighborLearn {
        interface: 1,
        ip: "198.51.100.2".parse().unwrap(),
        mac: mac(0x22),
    })
    .unwrap();
    r.commit();
    let a = forward(&r, "10.1.2.3");
    assert!(a.complete);
    assert_eq!(&a.rewrite[..6], &mac(0x22).0);
    assert_eq!(&a.rewrite[6..12], &mac(0xa1).0);
    assert_eq!(&a.rewrite[12..], &[0x08, 0x00]);
    // The neighbour also got a host route, so its own packets skip the glean path.
    assert_eq!(forward(&r, "198.51.100.2").kind, AdjKind::Neighbor);
    assert_eq!(r.source_of(p("198.51.100.2/32")), Some(RouteSource::Host));
}

#[test]
fn bad_routes_are_refused_with_reasons() {
    let mut r = router();
    let e = r
        .add_route(p("10.0.0.0/8"), &[via("203.0.113.1")])
        .unwrap_err();
    assert!(e.contains("not on a connected network"), "{e}");
    let e = r
        .add_route(p("10.0.0.0/8"), &[via("192.0.2.1")])
        .unwrap_err();
    assert!(e.contains("address of this router"), "{e}");
    let e = r
        .add_route(p("192.0.2.0/24"), &[via("198.51.100.2")])
        .unwrap_err();
    assert!(e.contains("not replaced"), "{e}");
    let e = r
        .add_route(p("10.0.0.0/8"), &[via("2001:db8:1::2")])
        .unwrap_err();
    assert!(e.contains("family"), "{e}");
    assert!(r.del_route(p("10.0.0.0/8")).is_err());
    assert!(r.del_route(p("192.0.2.0/24")).is_err());
    // Nothing refused left an adjacency behind.
    assert_eq!(r.summary().adjacencies, 2 + 2);
}

#[test]
fn ecmp_routes_spread_and_share_members() {
    let mut r = router();
    r.add_route(p("10.0.0.0/8"), &[via("198.51.100.2"), via("198.51.100.3")])
        .unwrap();
    r.add_route(p("11.0.0.0/8"), &[via("198.51.100.3"), via("198.51.100.2")])
        .unwrap();
    r.commit();
    let a = forward(&r, "10.0.0.1");
    assert_eq!((a.kind, a.count), (AdjKind::Multipath, 2));
    let b = forward(&r, "11.0.0.1");
    assert_eq!(a.first, b.first, "same member set, same adjacency");
    let view = r.view().load_full();
    let fib = r.fib_reader().load_full();
    let mut out = [0u32; 1];
    fib.v4().lookup_batch(&[0x0a00_0001], &mut out);
    let picks: std::collections::HashSet<u32> = (0..16).map(|h| view.pick(out[0], h)).collect();
    assert_eq!(picks.len(), 2);
    for m in picks {
        assert_eq!(view.adj(m).kind, AdjKind::Neighbor);
    }
}

#[test]
fn deleting_routes_frees_adjacencies_only_after_quarantine() {
    let mut r = router();
    r.add_route(p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    r.commit();
    let before = r.summary().adjacencies;
    r.del_route(p("10.0.0.0/8")).unwrap();
    r.commit();
    assert_eq!(r.summary().adjacencies, before - 1);
    // The freed index is still readable as it was (a worker may hold the old FIB).
    let view = r.view().load_full();
    assert!(view.adjs.iter().any(|a| a.kind == AdjKind::Neighbor));
    // Re-adding right away takes a new index rather than the quarantined one.
    r.add_route(p("10.0.0.0/8"), &[via("198.51.100.3")])
        .unwrap();
    r.commit();
    assert_eq!(r.current().adjs.len(), view.adjs.len() + 1);
}

#[test]
fn deleting_an_address_removes_its_routes() {
    let mut r = router();
    r.del_address(0, "192.0.2.1".parse().unwrap(), 24).unwrap();
    r.commit();
    assert_eq!(r.route_for("192.0.2.1").unwrap().map(|v| v.prefix), None);
    assert!(r.del_address(0, "192.0.2.1".parse().unwrap(), 24).is_err());
}

#[test]
fn learning_off_link_or_multicast_is_refused() {
    let mut r = router();
    let off = NeighborLearn {
        interface: 0,
        ip: "198.51.100.2".parse().unwrap(),
        mac: mac(1),
    };
    assert!(r.learn(off).is_err());
    let mcast = NeighborLearn {
        interface: 0,
        ip: "192.0.2.2".parse().unwrap(),
        mac: MacAddress([1, 0, 0x5e, 0, 0, 1]),
    };
    assert!(r.learn(mcast).is_err());
    assert!(r.neighbors().is_empty());
}

#[test]
fn link_local_neighbours_are_learnt_on_ipv6_interfaces_without_a_route() {
    let mut r = router();
    let ll = |interface| NeighborLearn {
        interface,
        ip: "fe80::1".parse().unwrap(),
        mac: mac(1),
    };
    // d0 has no IPv6 address: no link-local neighbours there.
    assert!(r.learn(ll(0)).is_err());
    assert!(r.learn(ll(1)).unwrap());
    r.commit();
    assert_eq!(r.neighbors().len(), 1);
    assert_eq!(r.route_for("fe80::1").unwrap().map(|v| v.prefix), None);
    // The glean adjacency that reaches it is the interface's.
    let glean = r.view().load().interfaces[1].glean;
    assert_eq!(r.view().load().adj(glean).kind, AdjKind::Glean);
    assert_eq!(r.view().load().adj(glean).interface, 1);
}

#[test]
fn static_neighbour_is_not_overridden_by_learning() {
    let mut r = router();
    let ip: IpAddr = "192.0.2.2".parse().unwrap();
    let n = |m| NeighborLearn {
        interface: 0,
        ip,
        mac: mac(m),
    };
    r.set_static_neighbor(n(5)).unwrap();
    assert!(!r.learn(n(6)).unwrap());
    let v = r.neighbors();
    assert_eq!(v[0].mac, mac(5).to_string());
    assert!(v[0].static_entry);
    r.del_neighbor(0, ip).unwrap();
    assert!(r.neighbors().is_empty());
}

#[test]
fn route_file_loads_in_one_build_and_keeps_interface_routes() {
    let mut r = Router::new(&[
        ("d0".into(), mac(0xa0), 1500),
        ("d1".into(), mac(0xa1), 1500),
    ]);
    r.add_address(1, "198.51.100.1".parse().unwrap(), 24)
        .unwrap();
    let text = "10.0.0.0/8 via 198.51.100.2 dev d1\n198.51.100.0/24 via 198.51.100.9\n\
                blackhole 203.0.113.0/24\n2001:db8:9::/48 dev d1 metric 1024\n";
    let routes = crate::fib::parse::parse_routes(text, "t").unwrap();
    assert_eq!(r.load_routes("t", &routes).unwrap(), 3);
    r.commit();
    assert_eq!(forward(&r, "10.9.9.9").kind, AdjKind::Neighbor);
    assert_eq!(forward(&r, "198.51.100.77").kind, AdjKind::Glean);
    assert_eq!(forward(&r, "203.0.113.5").kind, AdjKind::Drop);
    assert_eq!(forward(&r, "2001:db8:9::1").kind, AdjKind::Glean);
    let bad = crate::fib::parse::parse_routes("172.16.0.0/12 192.0.2.7\n", "t").unwrap();
    assert!(r.load_routes("t", &bad).is_err());
    let s = r.summary();
    assert_eq!(s.route_file_routes, 3);
    let _ = (Ipv4Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
}
