//! Netlink listeners in several namespaces feeding one router: what one namespace does must
//! not reach past its own routes and tables. Each namespace holds a veth named like a tap
//! (`tap-a`, `tap-b`) paired with one of the router's interfaces.

mod common;

use common::{needs_root, Netns};
use sluice::netlink::{HostPairs, Listener, Options};
use sluice::router::{RouteSource, Router};
use sluice::wire::MacAddress;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A router with `e0` and `e1`, both in table 0.
fn router() -> Arc<Mutex<Router>> {
    Arc::new(Mutex::new(Router::new(&[
        ("e0".into(), MacAddress([2, 0, 0, 0, 0, 0xe0]), 1500),
        ("e1".into(), MacAddress([2, 0, 0, 0, 0, 0xe1]), 1500),
    ])))
}

/// A namespace holding `tap` (a veth, up, with `addr`), and a listener there pairing it with
/// the router's interface `itf`, synced.
fn namespace(
    tag: &str,
    tap: &str,
    addr: &str,
    router: &Arc<Mutex<Router>>,
    itf: u32,
    options: Options,
) -> (Netns, Listener) {
    let ns = Netns::new(tag);
    ns.ip(&["link", "add", tap, "type", "veth", "peer", "name", "peer0"]);
    ns.ip(&["link", "set", tap, "up"]);
    ns.ip(&["link", "set", "peer0", "up"]);
    ns.ip(&["addr", "add", addr, "dev", tap]);
    let pairs = HostPairs::new();
    pairs.set(tap, itf);
    let listener = Listener::start(
        router.clone(),
        pairs,
        Options {
            netns: Some(ns.name.clone()),
            ..options
        },
    )
    .expect("listener starts");
    assert!(
        listener.wait_resyncs(1, Duration::from_secs(20)),
        "start-up reconcile"
    );
    (ns, listener)
}

/// Wait until `f` holds of the router (20 s at most).
fn until(router: &Mutex<Router>, what: &str, l: &Listener, f: impl Fn(&Router) -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if f(&router.lock().unwrap()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{what}: not reached; listener: {:#?}", l.stats());
}

fn source(r: &Router, table: u32, p: &str) -> Option<RouteSource> {
    r.route_for(table, p)
        .unwrap()
        .filter(|v| v.prefix == p)
        .map(|v| v.source)
}

/// Item 6 of issue 33: a dump and reconcile of one namespace's listener deletes only the
/// routes that listener put in, not another namespace's in the same table.
#[test]
fn one_namespaces_resync_leaves_anothers_routes() {
    if !needs_root() {
        return;
    }
    let router = router();
    let (na, a) = namespace(
        "nl-own-a",
        "tap-a",
        "192.0.2.1/24",
        &router,
        0,
        Options::default(),
    );
    let (nb, b) = namespace(
        "nl-own-b",
        "tap-b",
        "198.51.100.1/24",
        &router,
        1,
        Options::default(),
    );
    na.ip(&["route", "add", "10.1.0.0/16", "via", "192.0.2.2"]);
    nb.ip(&["route", "add", "10.2.0.0/16", "via", "198.51.100.2"]);
    nb.ip(&["-6", "route", "add", "2001:db8:2::/48", "dev", "tap-b"]);
    until(&router, "both namespaces' routes", &b, |r| {
        source(r, 0, "10.1.0.0/16") == Some(RouteSource::Kernel)
            && source(r, 0, "10.2.0.0/16") == Some(RouteSource::Kernel)
            && source(r, 0, "2001:db8:2::/48") == Some(RouteSource::Kernel)
    });
    // A's route goes while nobody listens in A; its resync must find that out and delete
    // it, and nothing of B's.
    a.pause(Duration::from_millis(300));
    na.ip(&["route", "del", "10.1.0.0/16"]);
    a.resync();
    assert!(
        a.wait_resyncs(2, Duration::from_secs(20)),
        "{:#?}",
        a.stats()
    );
    let r = router.lock().unwrap();
    assert_eq!(source(&r, 0, "10.1.0.0/16"), None, "{:#?}", a.stats());
    assert_eq!(
        source(&r, 0, "10.2.0.0/16"),
        Some(RouteSource::Kernel),
        "A's reconcile deleted B's route: {:#?}",
        a.stats().last_reconcile
    );
    assert_eq!(source(&r, 0, "2001:db8:2::/48"), Some(RouteSource::Kernel));
    drop(r);
    // And the other way round.
    b.resync();
    assert!(b.wait_resyncs(2, Duration::from_secs(20)));
    assert_eq!(router.lock().unwrap().kernel_route_count(0), (1, 1));
}

/// Item 7 of issue 33: a namespace's routes go only into the tables its taps' interfaces
/// route in; a route for another table is refused and counted.
#[test]
fn a_namespace_writes_only_its_taps_tables() {
    if !needs_root() {
        return;
    }
    let router = router();
    {
        let mut r = router.lock().unwrap();
        r.add_table(100).unwrap();
        r.add_table(200).unwrap();
        r.set_interface_table(1, false, 200).unwrap();
    }
    // A's tap is e0's (table 0), B's is e1's (table 200 for IPv4, 0 for IPv6).
    let (na, a) = namespace(
        "nl-tbl-a",
        "tap-a",
        "192.0.2.1/24",
        &router,
        0,
        Options::default(),
    );
    let (nb, b) = namespace(
        "nl-tbl-b",
        "tap-b",
        "198.51.100.1/24",
        &router,
        1,
        Options::default(),
    );
    for t in ["100", "200"] {
        na.ip(&[
            "route",
            "add",
            "10.1.0.0/16",
            "via",
            "192.0.2.2",
            "table",
            t,
        ]);
    }
    na.ip(&["route", "add", "10.1.0.0/16", "via", "192.0.2.2"]);
    nb.ip(&[
        "route",
        "add",
        "10.2.0.0/16",
        "via",
        "198.51.100.2",
        "table",
        "200",
    ]);
    nb.ip(&[
        "route",
        "add",
        "10.2.0.0/16",
        "via",
        "198.51.100.2",
        "table",
        "100",
    ]);
    until(&router, "A's main route", &a, |r| {
        source(r, 0, "10.1.0.0/16") == Some(RouteSource::Kernel)
    });
    until(&router, "B's table 200 route", &b, |r| {
        source(r, 200, "10.2.0.0/16") == Some(RouteSource::Kernel)
    });
    // The listeners count what they refused.
    let end = Instant::now() + Duration::from_secs(20);
    while a.stats().routes_refused_table < 2 || b.stats().routes_refused_table < 1 {
        assert!(Instant::now() < end, "{:#?} {:#?}", a.stats(), b.stats());
        std::thread::sleep(Duration::from_millis(10));
    }
    let r = router.lock().unwrap();
    assert_eq!(r.kernel_route_count(100), (0, 0), "nobody's table");
    assert_eq!(source(&r, 200, "10.1.0.0/16"), None, "B's table, not A's");
    assert_eq!(r.kernel_route_count(200), (1, 0));
    assert_eq!(r.kernel_route_count(0), (1, 0));
    drop(r);
    // A resync refuses them again, and counts them again.
    let before = a.stats().routes_refused_table;
    a.resync();
    assert!(a.wait_resyncs(2, Duration::from_secs(20)));
    assert_eq!(a.stats().routes_refused_table, before + 2);
    assert_eq!(router.lock().unwrap().kernel_route_count(100), (0, 0));
}

/// Item 8 of issue 33: the reader's queue to the applier is bounded. With the applier held
/// (the router locked) while a namespace adds routes, the queue fills; the reader drops
/// what it read, counts the overflow, and its dump and reconcile leave the router equal to
/// the kernel.
#[test]
fn a_full_queue_to_the_applier_is_an_overflow_and_a_resync() {
    if !needs_root() {
        return;
    }
    let router = router();
    let (na, a) = namespace(
        "nl-queue",
        "tap-a",
        "192.0.2.1/24",
        &router,
        0,
        Options {
            queue: 1,
            ..Options::default()
        },
    );
    // Ten batches with pauses between them, so that the reader, idle in between, queues
    // each as a piece of its own: more pieces than the queue holds.
    let n = 3000u32;
    let held = router.lock().unwrap();
    for k in 0..10 {
        let lines: String = (k * n / 10..(k + 1) * n / 10)
            .map(|i| format!("route add 10.{}.{}.0/24 via 192.0.2.2\n", i / 256, i % 256))
            .collect();
        let mut child = na
            .exec("ip", &["-batch", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
        std::thread::sleep(Duration::from_millis(100));
    }
    let end = Instant::now() + Duration::from_secs(20);
    while a.stats().queue_overflows == 0 {
        assert!(Instant::now() < end, "no queue overflow: {:#?}", a.stats());
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(held);
    until(&router, "every route after the resync", &a, |r| {
        r.kernel_route_count(0) == (n as usize, 0)
    });
    // The routes may all be in before the resync that the overflow asked for is counted
    // (the applier drains what it has first): wait for it, within the same bound.
    let resynced = a.wait_resyncs(2, Duration::from_secs(20));
    let s = a.stats();
    assert!(resynced, "no resync after the overflow: {s:#?}");
    assert_eq!(s.overflows, 0, "the socket itself kept up: {s:#?}");
}
