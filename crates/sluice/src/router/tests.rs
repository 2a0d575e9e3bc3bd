use super::adjacency::{AdjKind, Adjacency, SourceKind};
use super::*;
use crate::fib::Prefix4;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

pub(super) fn mac(last: u8) -> MacAddress {
    MacAddress([0x02, 0, 0, 0, 0, last])
}

/// A neighbour resolved as the daemon resolves one: a worker asked, it answered.
pub(super) fn resolve(r: &mut Router, interface: u32, ip: IpAddr, m: MacAddress) {
    let now = Instant::now();
    r.learn(NeighborLearn::solicit(interface, ip), now).unwrap();
    r.learn(NeighborLearn::answer(interface, ip, m), now)
        .unwrap();
}

pub(super) fn router() -> Router {
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

pub(super) fn p(s: &str) -> IpPrefix {
    crate::fib::parse::parse_prefix(s).unwrap()
}

/// The adjacency index a worker would get for `ip` from the published FIB.
pub(super) fn adj_of(r: &Router, ip: &str) -> u32 {
    let fib = r.fib_reader().load_full();
    let mut out = [0u32; 1];
    match ip.parse::<IpAddr>().unwrap() {
        IpAddr::V4(a) => fib.v4().lookup_batch(&[u32::from(a)], &mut out),
        IpAddr::V6(a) => fib.v6().lookup_batch(&[u128::from(a)], &mut out),
    }
    out[0]
}

/// The adjacency a worker would get for `ip` from the published FIB and view.
fn forward(r: &Router, ip: &str) -> Adjacency {
    *r.view().load().adj(adj_of(r, ip))
}

pub(super) fn via(a: &str) -> NextHopSpec {
    NextHopSpec::Via {
        addr: a.parse().unwrap(),
        interface: None,
        table: None,
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
    r.add_route(0, p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    r.commit();
    let a = forward(&r, "10.1.2.3");
    assert_eq!(
        (a.kind, a.interface, a.complete),
        (AdjKind::Neighbor, 1, false)
    );
    resolve(&mut r, 1, "198.51.100.2".parse().unwrap(), mac(0x22));
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

/// What the XDP fast path's epoch follows: a commit says whether it published anything.
#[test]
fn commit_says_whether_anything_changed() {
    let mut r = router();
    assert!(!r.commit(), "nothing since the last commit");
    r.add_route(0, p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    assert!(r.commit(), "a route");
    let n = "198.51.100.2".parse().unwrap();
    resolve(&mut r, 1, n, mac(0x22));
    assert!(r.commit(), "its neighbour resolved");
    let now = Instant::now();
    r.learn(NeighborLearn::answer(1, n, mac(0x22)), now)
        .unwrap();
    assert!(!r.commit(), "the same answer again changes nothing");
    r.learn(NeighborLearn::request(1, n, mac(0x23)), now)
        .unwrap();
    assert!(r.commit(), "the neighbour's new MAC");
    assert!(!r.commit());
}

#[test]
fn bad_routes_are_refused_with_reasons() {
    let mut r = router();
    let e = r
        .add_route(0, p("10.0.0.0/8"), &[via("203.0.113.1")])
        .unwrap_err();
    assert!(e.contains("not on a connected network"), "{e}");
    let e = r
        .add_route(0, p("10.0.0.0/8"), &[via("192.0.2.1")])
        .unwrap_err();
    assert!(e.contains("address of this router"), "{e}");
    let e = r
        .add_route(0, p("192.0.2.0/24"), &[via("198.51.100.2")])
        .unwrap_err();
    assert!(e.contains("not replaced"), "{e}");
    let e = r
        .add_route(0, p("10.0.0.0/8"), &[via("2001:db8:1::2")])
        .unwrap_err();
    assert!(e.contains("family"), "{e}");
    assert!(r.del_route(0, p("10.0.0.0/8")).is_err());
    assert!(r.del_route(0, p("192.0.2.0/24")).is_err());
    // Nothing refused left an adjacency behind.
    assert_eq!(r.summary(0).unwrap().adjacencies, 2 + 2);
}

#[test]
fn ecmp_routes_spread_and_share_members() {
    let mut r = router();
    r.add_route(
        0,
        p("10.0.0.0/8"),
        &[via("198.51.100.2"), via("198.51.100.3")],
    )
    .unwrap();
    r.add_route(
        0,
        p("11.0.0.0/8"),
        &[via("198.51.100.3"), via("198.51.100.2")],
    )
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
    r.add_route(0, p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    r.commit();
    let before = r.summary(0).unwrap().adjacencies;
    r.del_route(0, p("10.0.0.0/8")).unwrap();
    r.commit();
    assert_eq!(r.summary(0).unwrap().adjacencies, before - 1);
    // The freed index is still readable as it was (a worker may hold the old FIB).
    let view = r.view().load_full();
    assert!(view.adjs.iter().any(|a| a.kind == AdjKind::Neighbor));
    // Re-adding right away takes a new index rather than the quarantined one.
    r.add_route(0, p("10.0.0.0/8"), &[via("198.51.100.3")])
        .unwrap();
    r.commit();
    assert_eq!(r.current().adjs.len(), view.adjs.len() + 1);
}

#[test]
fn deleting_an_address_removes_its_routes() {
    let mut r = router();
    r.del_address(0, "192.0.2.1".parse().unwrap(), 24).unwrap();
    r.commit();
    assert_eq!(r.route_for(0, "192.0.2.1").unwrap().map(|v| v.prefix), None);
    assert!(r.del_address(0, "192.0.2.1".parse().unwrap(), 24).is_err());
}

#[test]
fn learning_off_link_or_multicast_is_refused() {
    let mut r = router();
    let off = NeighborLearn::request(0, "198.51.100.2".parse().unwrap(), mac(1));
    assert!(r.learn(off, Instant::now()).is_err());
    let mcast = NeighborLearn::request(
        0,
        "192.0.2.2".parse().unwrap(),
        MacAddress([1, 0, 0x5e, 0, 0, 1]),
    );
    assert!(r.learn(mcast, Instant::now()).is_err());
    assert!(r.neighbors().is_empty());
}

#[test]
fn link_local_neighbours_are_learnt_on_ipv6_interfaces_without_a_route() {
    let mut r = router();
    let ll = |interface| NeighborLearn::request(interface, "fe80::1".parse().unwrap(), mac(1));
    // d0 has no IPv6 address: no link-local neighbours there.
    assert!(r.learn(ll(0), Instant::now()).is_err());
    assert!(r.learn(ll(1), Instant::now()).unwrap());
    r.commit();
    assert_eq!(r.neighbors().len(), 1);
    assert_eq!(r.route_for(0, "fe80::1").unwrap().map(|v| v.prefix), None);
    // The glean adjacency that reaches it is the interface's.
    let glean = r.view().load().interfaces[1].glean;
    assert_eq!(r.view().load().adj(glean).kind, AdjKind::Glean);
    assert_eq!(r.view().load().adj(glean).interface, 1);
}

#[test]
fn static_neighbour_is_not_overridden_by_learning() {
    let mut r = router();
    let ip: IpAddr = "192.0.2.2".parse().unwrap();
    let n = |m| NeighborLearn::answer(0, ip, mac(m));
    r.set_static_neighbor(n(5)).unwrap();
    assert!(!r.learn(n(6), Instant::now()).unwrap());
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
    let s = r.summary(0).unwrap();
    assert_eq!(s.route_file_routes, 3);
    let _ = (Ipv4Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
}

/// The adjacency a worker would get for `ip` arriving on interface `rx`: the table of `rx`,
/// then its FIB, as ip4-lookup / ip6-lookup do.
fn forward_from(r: &Router, rx: u32, ip: &str) -> Adjacency {
    let set = r.tables().load_full();
    let ip: IpAddr = ip.parse().unwrap();
    let fib = set.fib(set.table_of(rx, ip.is_ipv6())).unwrap().load_full();
    let mut out = [0u32; 1];
    match ip {
        IpAddr::V4(a) => fib.v4().lookup_batch(&[u32::from(a)], &mut out),
        IpAddr::V6(a) => fib.v6().lookup_batch(&[u128::from(a)], &mut out),
    }
    *r.view().load().adj(out[0])
}

/// d0, d1 in table 0 and d2, d3 in table 10, each pair with the same addresses.
fn two_tenants() -> Router {
    let mut r = Router::new(&[
        ("d0".into(), mac(0xa0), 1500),
        ("d1".into(), mac(0xa1), 1500),
        ("d2".into(), mac(0xa2), 1500),
        ("d3".into(), mac(0xa3), 1500),
    ]);
    r.add_table(10).unwrap();
    for itf in [2, 3] {
        r.set_interface_table(itf, false, 10).unwrap();
        r.set_interface_table(itf, true, 10).unwrap();
    }
    for (itf, a) in [(0, "192.0.2.1"), (1, "198.51.100.1")] {
        r.add_address(itf, a.parse().unwrap(), 24).unwrap();
        r.add_address(itf + 2, a.parse().unwrap(), 24).unwrap();
    }
    r.add_address(1, "2001:db8:1::1".parse().unwrap(), 64)
        .unwrap();
    r.add_address(3, "2001:db8:1::1".parse().unwrap(), 64)
        .unwrap();
    r.commit();
    r
}

fn via_in(a: &str, table: u32) -> NextHopSpec {
    NextHopSpec::Via {
        addr: a.parse().unwrap(),
        interface: None,
        table: Some(table),
    }
}

#[test]
fn tables_keep_the_same_prefix_apart() {
    let mut r = two_tenants();
    // The same address is ours in both tables; its connected network leaves by the
    // interface of the packet's own table.
    assert_eq!(forward_from(&r, 0, "192.0.2.1").kind, AdjKind::Local);
    assert_eq!(forward_from(&r, 2, "192.0.2.1").kind, AdjKind::Local);
    assert_eq!(forward_from(&r, 0, "198.51.100.9").interface, 1);
    assert_eq!(forward_from(&r, 2, "198.51.100.9").interface, 3);
    assert_eq!(forward_from(&r, 2, "2001:db8:1::9").interface, 3);
    // The same route in both tables, each to its own neighbour.
    r.add_route(0, p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    r.add_route(10, p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    r.add_route(10, p("2001:db8:9::/48"), &[via("2001:db8:1::2")])
        .unwrap();
    r.commit();
    let (a, b) = (
        forward_from(&r, 0, "10.1.2.3"),
        forward_from(&r, 2, "10.1.2.3"),
    );
    assert_eq!((a.kind, a.interface), (AdjKind::Neighbor, 1));
    assert_eq!((b.kind, b.interface), (AdjKind::Neighbor, 3));
    assert_eq!(forward_from(&r, 2, "2001:db8:9::1").interface, 3);
    assert_eq!(forward_from(&r, 0, "2001:db8:9::1").kind, AdjKind::Drop);
    // A route only in table 10 is not seen from table 0.
    r.add_route(10, p("172.16.0.0/12"), &[via("198.51.100.3")])
        .unwrap();
    r.commit();
    assert_eq!(forward_from(&r, 2, "172.16.0.1").interface, 3);
    assert_eq!(
        r.route_for(0, "172.16.0.1").unwrap().map(|v| v.prefix),
        None
    );
    assert_eq!(
        r.route_for(10, "172.16.0.1").unwrap().unwrap().prefix,
        "172.16.0.0/12"
    );
    // Deleting table 0's copy leaves table 10's.
    r.del_route(0, p("10.0.0.0/8")).unwrap();
    r.commit();
    assert_eq!(forward_from(&r, 2, "10.1.2.3").interface, 3);
    assert!(r.del_route(0, p("10.0.0.0/8")).is_err());
    assert!(r.del_route(7, p("10.0.0.0/8")).is_err());
}

#[test]
fn learnt_neighbours_make_host_routes_in_their_table() {
    let mut r = two_tenants();
    let ip: IpAddr = "198.51.100.7".parse().unwrap();
    resolve(&mut r, 3, ip, mac(7));
    r.commit();
    let host = p("198.51.100.7/32");
    let t10 = r.table_index(10).unwrap();
    assert_eq!(r.source_in(t10, host), Some(RouteSource::Host));
    assert_eq!(r.source_of(host), None);
    let a = forward_from(&r, 2, "198.51.100.7");
    assert_eq!(
        (a.kind, a.interface, a.complete),
        (AdjKind::Neighbor, 3, true)
    );
    // Table 0's d1 has the same subnet: the neighbour on d1 is a different one.
    assert_eq!(forward_from(&r, 0, "198.51.100.7").kind, AdjKind::Glean);
}

#[test]
fn inter_table_routes_find_their_next_hop_in_the_other_table() {
    let mut r = two_tenants();
    // Table 0 sends 203.0.113.0/24 to a host on table 10's d3 network.
    r.add_route(0, p("203.0.113.0/24"), &[via_in("198.51.100.5", 10)])
        .unwrap();
    // No interface of table 0 is on 203.0.113.0/24's next hop network in table 10's view.
    assert!(r
        .add_route(0, p("203.0.114.0/24"), &[via_in("192.0.3.5", 10)])
        .unwrap_err()
        .contains("not on a connected network of table 10"));
    assert!(r
        .add_route(0, p("203.0.115.0/24"), &[via_in("192.0.2.5", 99)])
        .unwrap_err()
        .contains("no table 99"));
    r.commit();
    let a = forward_from(&r, 0, "203.0.113.9");
    assert_eq!((a.kind, a.interface), (AdjKind::Neighbor, 3));
}

#[test]
fn tables_are_made_bound_and_removed_with_checks() {
    let mut r = two_tenants();
    // An interface with addresses stays in its table.
    let e = r.set_interface_table(3, false, 0).unwrap_err();
    assert!(e.contains("d3 has IPv4 addresses"), "{e}");
    assert!(r.set_interface_table(0, false, 99).is_err());
    // A table in use is not removed; table 0 never is.
    let e = r.del_table(10).unwrap_err();
    assert!(e.contains("in use by d2, d3"), "{e}");
    assert!(r.del_table(0).is_err());
    // Emptied and unbound, it goes, with the adjacencies its routes held.
    let before = r.summary(0).unwrap().adjacencies;
    r.add_table(20).unwrap();
    r.add_table(20).unwrap();
    r.add_route(20, p("10.0.0.0/8"), &[via_in("192.0.2.44", 0)])
        .unwrap();
    r.commit();
    assert_eq!(r.summary(0).unwrap().adjacencies, before + 1);
    assert_eq!(r.summary(20).unwrap().tables, 3);
    r.del_table(20).unwrap();
    r.commit();
    assert_eq!(r.summary(0).unwrap().adjacencies, before);
    assert!(r.summary(20).is_err());
    let ids: Vec<u32> = r.table_views().iter().map(|t| t.id).collect();
    assert_eq!(ids, [0, 10]);
    // Its slot is taken by the next table made.
    r.add_table(30).unwrap();
    assert_eq!(r.table_index(30).unwrap(), 2);
}

/// 1 000 tables of 10 routes each cost less than one full table (about 33 MiB for 1 M IPv4
/// and 200 k IPv6 routes: docs/fib.md).
#[test]
fn a_thousand_small_tables_are_cheap() {
    let names: Vec<(String, MacAddress, u32)> = (0..1000)
        .map(|k| (format!("v{k}"), mac(k as u8), 1500))
        .collect();
    let mut r = Router::new(&names);
    for k in 0..1000u32 {
        let id = k + 1;
        r.add_table(id).unwrap();
        r.set_interface_table(k, false, id).unwrap();
        r.add_address(k, "192.0.2.1".parse().unwrap(), 24).unwrap();
        for j in 0..10u32 {
            let prefix = IpPrefix::V4(Prefix::containing(0x0a00_0000 | j << 16, 16));
            r.add_route(id, prefix, &[via("192.0.2.2")]).unwrap();
        }
    }
    r.commit();
    let s = r.summary(1000).unwrap();
    assert_eq!((s.tables, s.v4_routes), (1001, 10 + 4));
    let mib = s.all_tables_bytes as f64 / (1 << 20) as f64;
    assert!(mib < 32.0, "1 000 small tables take {mib:.1} MiB");
    eprintln!("1 000 tables of 10 routes: {mib:.2} MiB");
    assert_eq!(forward_from(&r, 999, "10.9.0.1").interface, 999);
}

/// With many addresses the martian-source check probes an index; it answers as the walk of
/// every interface does, table by table.
#[test]
fn source_index_answers_as_the_walk() {
    let names: Vec<(String, MacAddress, u32)> = (0..12)
        .map(|k| (format!("v{k}"), mac(k as u8), 1500))
        .collect();
    let mut r = Router::new(&names);
    r.add_table(5).unwrap();
    for k in 0..12u32 {
        if k % 2 == 1 {
            r.set_interface_table(k, false, 5).unwrap();
        }
        let a = Ipv4Addr::new(10, k as u8, 0, 1);
        r.add_address(k, IpAddr::V4(a), 24).unwrap();
    }
    r.commit();
    let indexed = r.view().load_full();
    assert!(!indexed.v4_sources.is_empty());
    let mut walked = (*indexed).clone();
    walked.v4_sources.clear();
    let t5 = r.table_index(5).unwrap() as u16;
    for table in [0, t5] {
        for k in 0..12u32 {
            for host in [0u32, 1, 2, 255] {
                let src = u32::from(Ipv4Addr::new(10, k as u8, 0, 0)) | host;
                assert_eq!(
                    indexed.v4_source(table, src),
                    walked.v4_source(table, src),
                    "table {table} source {}",
                    Ipv4Addr::from(src)
                );
            }
        }
    }
    let ours = u32::from(Ipv4Addr::new(10, 1, 0, 1));
    assert_eq!(indexed.v4_source(t5, ours), Some(SourceKind::Ours));
    assert_eq!(indexed.v4_source(0, ours), None);
    let bcast = u32::from(Ipv4Addr::new(10, 2, 0, 255));
    assert_eq!(indexed.v4_source(0, bcast), Some(SourceKind::Broadcast));
}

#[test]
fn attached_static_route_uses_the_interface_glean() {
    let mut r = router();
    let hop = NextHopSpec::Attached {
        interface: "d1".into(),
    };
    r.add_route(0, p("172.16.0.0/16"), &[hop]).unwrap();
    r.commit();
    let a = forward(&r, "172.16.3.4");
    assert_eq!((a.kind, a.interface), (AdjKind::Glean, 1));
    assert_eq!(r.source_of(p("172.16.0.0/16")), Some(RouteSource::Static));
    let bad = NextHopSpec::Attached {
        interface: "nope".into(),
    };
    assert!(r.add_route(0, p("172.17.0.0/16"), &[bad]).is_err());
}

fn kpath(itf: u32, gw: Option<&str>) -> KernelPath {
    KernelPath {
        interface: itf,
        gateway: gw.map(|g| g.parse().unwrap()),
    }
}

#[test]
fn kernel_routes_are_added_replaced_deleted_and_told_apart() {
    let mut r = router();
    let one = KernelHops::Paths(vec![kpath(1, Some("198.51.100.2"))]);
    let two = KernelHops::Paths(vec![
        kpath(1, Some("198.51.100.3")),
        kpath(0, Some("192.0.2.3")),
    ]);
    let attached = KernelHops::Paths(vec![kpath(0, None)]);
    use KernelRouteChange::*;
    assert_eq!(r.set_kernel_route(1, 0, p("10.0.0.0/8"), &one), Ok(Added));
    assert_eq!(
        r.set_kernel_route(1, 0, p("10.0.0.0/8"), &one),
        Ok(Unchanged)
    );
    assert_eq!(
        r.set_kernel_route(1, 0, p("10.0.0.0/8"), &two),
        Ok(Replaced)
    );
    assert_eq!(
        r.set_kernel_route(1, 0, p("10.9.0.0/16"), &attached),
        Ok(Added)
    );
    assert_eq!(
        r.set_kernel_route(1, 0, p("203.0.113.0/24"), &KernelHops::Drop),
        Ok(Added)
    );
    let v6 = KernelHops::Paths(vec![kpath(1, Some("fe80::2"))]);
    assert_eq!(
        r.set_kernel_route(1, 0, p("2001:db8:9::/48"), &v6),
        Ok(Added)
    );
    r.commit();
    assert_eq!(forward(&r, "10.1.1.1").kind, AdjKind::Multipath);
    let g = forward(&r, "10.9.1.1");
    assert_eq!((g.kind, g.interface), (AdjKind::Glean, 0));
    assert_eq!(forward(&r, "203.0.113.9").kind, AdjKind::Drop);
    let n = forward(&r, "2001:db8:9::1");
    assert_eq!((n.kind, n.interface), (AdjKind::Neighbor, 1));
    assert_eq!(r.source_of(p("10.0.0.0/8")), Some(RouteSource::Kernel));
    assert_eq!(r.source_of(p("203.0.113.0/24")), Some(RouteSource::Kernel));
    let s = r.summary(0).unwrap();
    assert!(s.by_source.contains(&(RouteSource::Kernel, 4)));
    let (k4, k6) = r.kernel_prefixes(0).unwrap();
    assert_eq!(
        k4,
        vec![
            Prefix4::new(0x0a00_0000, 8).unwrap(),
            Prefix4::new(0x0a09_0000, 16).unwrap(),
            Prefix4::new(0xcb00_7100, 24).unwrap()
        ]
    );
    assert_eq!(k6.len(), 1);
    // A seeded neighbour completes the kernel route's adjacency, as a learnt one would.
    r.seed_neighbor(NeighborLearn::request(
        1,
        "fe80::2".parse().unwrap(),
        mac(0x42),
    ))
    .unwrap();
    r.commit();
    assert!(forward(&r, "2001:db8:9::1").complete);
    assert_eq!(r.del_kernel_route(1, 0, p("10.0.0.0/8")), Ok(true));
    assert_eq!(r.del_kernel_route(1, 0, p("10.0.0.0/8")), Ok(false));
    r.commit();
    assert_eq!(forward(&r, "10.1.1.1").kind, AdjKind::Drop);
    assert!(r
        .summary(0)
        .unwrap()
        .by_source
        .contains(&(RouteSource::Kernel, 3)));
}

#[test]
fn kernel_routes_leave_static_and_address_routes_alone() {
    let mut r = router();
    r.add_route(0, p("10.0.0.0/8"), &[via("198.51.100.2")])
        .unwrap();
    let hops = KernelHops::Paths(vec![kpath(1, Some("198.51.100.9"))]);
    // A static route holds its prefix; the address routes theirs.
    assert!(r.set_kernel_route(1, 0, p("10.0.0.0/8"), &hops).is_err());
    assert!(r.set_kernel_route(1, 0, p("192.0.2.0/24"), &hops).is_err());
    assert!(r.set_kernel_route(1, 0, p("192.0.2.1/32"), &hops).is_err());
    assert_eq!(r.del_kernel_route(1, 0, p("10.0.0.0/8")), Ok(false));
    assert_eq!(r.source_of(p("10.0.0.0/8")), Some(RouteSource::Static));
    // A gateway that is our own address, of the other family, or an unknown interface.
    let ours = KernelHops::Paths(vec![kpath(1, Some("198.51.100.1"))]);
    assert!(r.set_kernel_route(1, 0, p("10.1.0.0/16"), &ours).is_err());
    let family = KernelHops::Paths(vec![kpath(1, Some("2001:db8::1"))]);
    assert!(r.set_kernel_route(1, 0, p("10.1.0.0/16"), &family).is_err());
    let nowhere = KernelHops::Paths(vec![kpath(9, None)]);
    assert!(r
        .set_kernel_route(1, 0, p("10.1.0.0/16"), &nowhere)
        .is_err());
    assert!(r.set_kernel_route(1, 7, p("10.1.0.0/16"), &hops).is_err());
    // A learnt host route gives way to the kernel's.
    resolve(&mut r, 1, "198.51.100.7".parse().unwrap(), mac(0x07));
    assert_eq!(
        r.set_kernel_route(1, 0, p("198.51.100.7/32"), &hops),
        Ok(KernelRouteChange::Replaced)
    );
    assert_eq!(r.kernel_prefixes(0).unwrap().0.len(), 1);
}

#[test]
fn saved_routes_are_the_configured_static_ones() {
    let mut r = router();
    let file = "10.0.0.0/8 via 198.51.100.2\n172.16.0.0/12 via 198.51.100.2\n";
    let routes = crate::fib::parse::parse_routes(file, "t").unwrap();
    assert_eq!(r.load_routes("t", &routes).unwrap(), 2);
    r.add_route(
        0,
        p("198.18.0.0/15"),
        &[via("192.0.2.2"), via("198.51.100.2")],
    )
    .unwrap();
    r.add_route(0, p("203.0.113.0/24"), &[NextHopSpec::Drop])
        .unwrap();
    // A CLI route over one of the file's prefixes is saved; the file's others are not.
    r.add_route(0, p("172.16.0.0/12"), &[via("192.0.2.3")])
        .unwrap();
    r.add_route(0, p("192.0.2.77/32"), &[via("192.0.2.2")])
        .unwrap();
    r.del_route(0, p("192.0.2.77/32")).unwrap();
    // A learnt host route takes no configured prefix; it is not saved either.
    resolve(&mut r, 0, "192.0.2.9".parse().unwrap(), mac(9));
    r.commit();
    let hop = |itf: &str, a: &str| SavedHop::Via {
        interface: itf.into(),
        addr: a.parse().unwrap(),
        table: 0,
        by_address: true,
    };
    let saved: Vec<(String, Vec<SavedHop>)> = r
        .saved_routes()
        .into_iter()
        .map(|s| (s.prefix.to_string(), s.hops))
        .collect();
    assert_eq!(
        saved,
        vec![
            ("172.16.0.0/12".into(), vec![hop("d0", "192.0.2.3")]),
            (
                "198.18.0.0/15".into(),
                vec![hop("d0", "192.0.2.2"), hop("d1", "198.51.100.2")]
            ),
            ("203.0.113.0/24".into(), vec![SavedHop::Drop]),
        ]
    );
    // A removed table takes its configured routes along.
    r.add_table(5).unwrap();
    r.add_route(5, p("10.0.0.0/8"), &[NextHopSpec::Drop])
        .unwrap();
    assert_eq!(r.saved_routes().len(), 4);
    r.del_table(5).unwrap();
    assert_eq!(r.saved_routes().len(), 3);
}
