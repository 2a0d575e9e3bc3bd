//! Kernel routes of several listeners (namespaces) in one router.

use super::*;

fn router() -> Router {
    crate::router::test_support::two_ports()
}

fn p(s: &str) -> IpPrefix {
    crate::fib::parse::parse_prefix(s).unwrap()
}

fn via(itf: u32, gw: &str) -> KernelHops {
    KernelHops::Paths(vec![KernelPath {
        interface: itf,
        gateway: Some(gw.parse().unwrap()),
    }])
}

fn owned(r: &Router, owner: KernelOwner) -> Vec<String> {
    let (v4, _) = r.owned_kernel_prefixes(owner, 0).unwrap();
    v4.into_iter()
        .map(|p| IpPrefix::V4(p).to_string())
        .collect()
}

#[test]
fn each_listener_owns_its_routes_in_a_shared_table() {
    let mut r = router();
    let (a, b) = (1, 2);
    let to_a = via(0, "192.0.2.2");
    let to_b = via(1, "198.51.100.2");
    r.set_kernel_route(a, 0, p("10.1.0.0/16"), &to_a).unwrap();
    r.set_kernel_route(b, 0, p("10.2.0.0/16"), &to_b).unwrap();
    r.set_kernel_route(a, 0, p("10.3.0.0/16"), &to_a).unwrap();
    assert_eq!(owned(&r, a), ["10.1.0.0/16", "10.3.0.0/16"]);
    assert_eq!(owned(&r, b), ["10.2.0.0/16"]);
    // The first holder keeps a prefix: another listener neither replaces nor deletes it.
    assert!(r.set_kernel_route(b, 0, p("10.1.0.0/16"), &to_b).is_err());
    assert_eq!(r.del_kernel_route(b, 0, p("10.1.0.0/16")), Ok(false));
    assert_eq!(r.del_kernel_route(a, 0, p("10.2.0.0/16")), Ok(false));
    assert_eq!(r.kernel_route_count(0), (3, 0));
    // Once its holder deleted it, another may take it.
    assert_eq!(r.del_kernel_route(a, 0, p("10.1.0.0/16")), Ok(true));
    r.set_kernel_route(b, 0, p("10.1.0.0/16"), &to_b).unwrap();
    assert_eq!(owned(&r, a), ["10.3.0.0/16"]);
    assert_eq!(owned(&r, b), ["10.1.0.0/16", "10.2.0.0/16"]);
    // A table emptied of kernel routes starts anew with its next owner.
    for (o, q) in [(a, "10.3.0.0/16"), (b, "10.1.0.0/16"), (b, "10.2.0.0/16")] {
        assert_eq!(r.del_kernel_route(o, 0, p(q)), Ok(true));
    }
    r.set_kernel_route(b, 0, p("10.4.0.0/16"), &to_b).unwrap();
    assert_eq!(owned(&r, b), ["10.4.0.0/16"]);
    assert!(owned(&r, a).is_empty());
}
