//! Netlink listeners in several namespaces feeding one router: what one namespace does must
//! not reach past its own routes and tables. Each namespace holds a veth named like a tap
//! (`tap-a`, `tap-b`) paired with one of the router's interfaces.

mod common;

use common::{needs_root, Netns};
use sluice::netlink::{HostPairs, Listener, Options};
use sluice::router::{RouteSource, Router};
use sluice::wire::MacAddress;
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
    let (na, a) = namespace("nl-own-a", "tap-a", "192.0.2.1/24", &router, 0, Options::default());
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
    assert!(a.wait_resyncs(2, Duration::from_secs(20)), "{:#?}", a.stats());
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
