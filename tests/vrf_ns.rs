//! Routing tables (VRFs) with real packets: two tenants behind one sluice, each with a left
//! and a right tester using the very same addresses. Tenant A's ports (d0, d1) route in
//! table 0, tenant B's (d2, d3) in table 10. Pings cross the router within each tenant and
//! land only in that tenant's namespace; a route of table 10 is invisible to tenant A until
//! an inter-VRF route in table 0 names a next hop in table 10; the mistakes an operator can
//! make with tables are refused with a reason.

mod common;
use common::routed::*;
use common::*;

/// Tenant B's testers: `{tag}bl` (t2) and `{tag}br` (t3), ports d2 and d3 of the DUT, with
/// tenant A's addresses.
fn tenant_b(tag: &str, dut: &Netns) -> (Netns, Netns) {
    let left = Netns::new(&format!("{tag}bl"));
    let right = Netns::new(&format!("{tag}br"));
    veth(&left, "t2", dut, "d2", 1500);
    veth(&right, "t3", dut, "d3", 1500);
    address_port(&left, "t2", T0_V4, T0_V6);
    address_port(&right, "t3", T1_V4, T1_V6);
    for (ns, v4, v6) in [(&left, D0_V4, D0_V6), (&right, D1_V4, D1_V6)] {
        ns.ip(&["route", "add", "default", "via", v4]);
        ns.ip(&["-6", "route", "add", "default", "via", v6]);
    }
    (left, right)
}

#[test]
fn tenants_with_the_same_addresses_stay_apart() {
    if !needs_root() {
        return;
    }
    ensure_ping();
    let (a_left, a_right, dut) = routed_lab("v");
    let (b_left, b_right) = tenant_b("v", &dut);
    let dir = tmpdir("vrf");
    let tenant_b_ports = format!(
        "[[interface]]\nname = \"d2\"\ndriver = \"af_packet\"\nhost = \"d2\"\n\
         address = [\"{D0_V4}/24\", \"{D0_V6}/64\"]\n\
         [[interface]]\nname = \"d3\"\ndriver = \"af_packet\"\nhost = \"d3\"\n\
         address = [\"{D1_V4}/24\", \"{D1_V6}/64\"]\n\
         [[ip-table]]\nid = 10\ninterfaces = [\"d2\", \"d3\"]\n"
    );
    let (cfg, socket) = router_config(&dir, &tenant_b_ports);
    let mut daemon = Daemon::start(&dut, &cfg, &socket);

    // Within each tenant, both families cross the router, and the echo requests reach that
    // tenant's right tester only.
    for (name, left, right, other) in [
        ("A", &a_left, &a_right, &b_right),
        ("B", &b_left, &b_right, &a_right),
    ] {
        let (mine, theirs) = (in_echos(right), in_echos(other));
        for addr in [T1_V4, T1_V6] {
            let (ok, out) = ping(left, &["-c", "3", "-i", "0.2", "-W", "2", addr]);
            assert!(ok, "tenant {name}: ping {addr} through sluice: {out}");
        }
        let (m, t) = (in_echos(right), in_echos(other));
        assert!(
            m.0 >= mine.0 + 3 && m.1 >= mine.1 + 3,
            "tenant {name}: {m:?} after {mine:?}"
        );
        assert_eq!(t, theirs, "tenant {name}'s pings reached the other tenant");
    }
    let tables = ctl_json(&socket, "show ip table");
    let t10 = tables["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == 10)
        .unwrap_or_else(|| panic!("no table 10: {tables}"));
    assert_eq!(t10["ip4_interfaces"], serde_json::json!(["d2", "d3"]));
    assert_eq!(t10["ip6_interfaces"], serde_json::json!(["d2", "d3"]));

    // A route in table 10 only: tenant B reaches 203.0.113.1 (an address of its right
    // tester), tenant A has no route there.
    b_right.ip(&["addr", "add", "203.0.113.1/32", "dev", "lo"]);
    ctl(
        &socket,
        &format!("ip route add 203.0.113.0/24 table 10 via {T1_V4}"),
    )
    .unwrap();
    let (ok, out) = ping(&b_left, &["-c", "2", "-i", "0.2", "-W", "2", "203.0.113.1"]);
    assert!(ok, "tenant B to 203.0.113.1: {out}");
    let before = in_echos(&b_right).0;
    let (ok, out) = ping(&a_left, &["-c", "2", "-i", "0.2", "-W", "1", "203.0.113.1"]);
    assert!(!ok, "tenant A reached a route of table 10: {out}");
    assert_eq!(in_echos(&b_right).0, before, "{out}");
    let s = ctl_json(&socket, "show ip fib table 10 summary");
    assert_eq!((&s["table"], &s["tables"]), (&10.into(), &2.into()), "{s}");
    let r = ctl_json(&socket, "show ip fib table 10 203.0.113.1");
    assert_eq!(r["route"]["prefix"], "203.0.113.0/24", "{r}");
    let r = ctl_json(&socket, "show ip fib 203.0.113.1");
    assert_eq!(r["route"], serde_json::Value::Null, "{r}");

    // Inter-VRF: table 0 sends 203.0.113.0/24 to tenant B's right tester, found in table
    // 10. A's echo requests now arrive there (its replies go back within table 10, to B's
    // left tester, which has A's address: the route is one way, as configured).
    ctl(
        &socket,
        &format!("ip route add 203.0.113.0/24 via {T1_V4} next-hop-table 10"),
    )
    .unwrap();
    let before = in_echos(&b_right).0;
    let _ = ping(&a_left, &["-c", "3", "-i", "0.2", "-W", "1", "203.0.113.1"]);
    assert!(
        in_echos(&b_right).0 >= before + 3,
        "the inter-VRF route did not carry tenant A's pings to table 10's next hop"
    );

    // What an operator can get wrong, each refused with its reason.
    for (line, why) in [
        ("set interface ip table d3 0", "d3 has IPv4 addresses"),
        ("ip table del 10", "table 10 is in use by d2, d3"),
        ("ip table del 0", "default table"),
        (
            "ip route add 10.0.0.0/8 table 99 via 192.0.2.2",
            "no table 99",
        ),
        (
            "ip route add 10.0.0.0/8 via 192.0.2.9 next-hop-table 7",
            "no table 7",
        ),
        ("ip table add red", "'red' is not a table id"),
        ("show ip fib table", "'table' needs a table id"),
        ("show ip fib table 10 a b", "unexpected 'b'"),
    ] {
        let e = ctl(&socket, line).expect_err(line);
        assert!(e.contains(why), "{line}: {e}");
    }
    // A table made at run time takes an interface freed of its addresses, and goes again.
    ctl(&socket, "ip table add 20").unwrap();
    ctl(
        &socket,
        &format!("set interface ip address del d3 {D1_V4}/24"),
    )
    .unwrap();
    ctl(&socket, "set interface ip table d3 20").unwrap();
    ctl(&socket, &format!("set interface ip address d3 {D1_V4}/24")).unwrap();
    let s = ctl_json(&socket, "show ip fib table 20 summary");
    assert!(s["v4_routes"].as_u64().unwrap() >= 2, "{s}");
    ctl(
        &socket,
        &format!("set interface ip address del d3 {D1_V4}/24"),
    )
    .unwrap();
    ctl(&socket, "set interface ip table d3 10").unwrap();
    ctl(&socket, "ip table del 20").unwrap();
    assert!(ctl(&socket, "show ip fib table 20").is_err());

    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
