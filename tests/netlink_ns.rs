//! The netlink listener against a real kernel: in a namespace, veths named like tap mirrors
//! (`tap-e0`, `tap-e1`) are paired with a router's `e0` and `e1`; what `ip` does to them
//! must show in the router, and after a forced overflow the FIB must equal the kernel's
//! table entry by entry.

mod common;

use common::{needs_root, Netns};
use sluice::fib::parse::{parse_prefix, IpPrefix};
use sluice::netlink::{HostPairs, Listener, Options};
use sluice::router::{RouteSource, Router};
use sluice::wire::MacAddress;
use std::collections::BTreeSet;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Lab {
    ns: Netns,
    router: Arc<Mutex<Router>>,
    listener: Listener,
}

/// A namespace with `tap-e0`, `tap-e1` (veths, up, paired) and `other0` (not paired), and a
/// listener on it.
fn lab(tag: &str, options: Options) -> Lab {
    let ns = Netns::new(tag);
    for (a, b) in [
        ("tap-e0", "peer-e0"),
        ("tap-e1", "peer-e1"),
        ("other0", "peer-o0"),
    ] {
        ns.ip(&["link", "add", a, "type", "veth", "peer", "name", b]);
        ns.ip(&["link", "set", a, "up"]);
        ns.ip(&["link", "set", b, "up"]);
    }
    let router = Arc::new(Mutex::new(Router::new(&[
        ("e0".into(), MacAddress([2, 0, 0, 0, 0, 0xe0]), 1500),
        ("e1".into(), MacAddress([2, 0, 0, 0, 0, 0xe1]), 1500),
    ])));
    let pairs = HostPairs::new();
    pairs.set("tap-e0", 0);
    pairs.set("tap-e1", 1);
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
    Lab {
        ns,
        router,
        listener,
    }
}

impl Lab {
    /// Wait until `f` holds of the router (10 s at most).
    fn until(&self, what: &str, f: impl Fn(&Router) -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if f(&self.router.lock().unwrap()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "{what}: not reached; listener: {:#?}",
            self.listener.stats()
        );
    }

    fn route(&self, p: &str) -> Option<(RouteSource, Vec<String>)> {
        let r = self.router.lock().unwrap();
        r.route_for(0, p)
            .unwrap()
            .filter(|v| v.prefix == p)
            .map(|v| (v.source, v.paths))
    }

    /// `ip -batch` of these lines in the namespace; how long the kernel took.
    fn batch(&self, lines: &[String]) -> Duration {
        let start = Instant::now();
        let mut child = self
            .ns
            .exec("ip", &["-batch", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let text = lines.join("\n") + "\n";
        stdin.write_all(text.as_bytes()).unwrap();
        drop(stdin);
        assert!(child.wait().unwrap().success(), "ip -batch");
        start.elapsed()
    }
}

fn kernel_count(r: &Router) -> usize {
    let (v4, v6) = r.kernel_route_count(0);
    v4 + v6
}

#[test]
fn addresses_routes_and_neighbours_follow_linux() {
    if !needs_root() {
        return;
    }
    let l = lab("nl-follow", Options::default());
    let ip = |args: &[&str]| {
        l.ns.ip(args);
    };
    ip(&["addr", "add", "192.0.2.1/24", "dev", "tap-e0"]);
    ip(&["addr", "add", "198.51.100.1/24", "dev", "tap-e1"]);
    ip(&["addr", "add", "2001:db8:1::1/64", "dev", "tap-e0", "nodad"]);
    ip(&["addr", "add", "203.0.113.1/24", "dev", "other0"]);
    l.until("addresses", |r| {
        r.addresses(0).len() == 2 && r.addresses(1) == ["198.51.100.1/24"]
    });
    assert_eq!(
        l.route("192.0.2.0/24").unwrap().0,
        RouteSource::Connected,
        "sluice makes its own connected route; the kernel's proto kernel one is skipped"
    );
    // Via a gateway, replaced, ECMP over both taps, blackhole, dev only, IPv6.
    ip(&[
        "route",
        "add",
        "10.1.0.0/16",
        "via",
        "192.0.2.2",
        "dev",
        "tap-e0",
    ]);
    ip(&[
        "route",
        "add",
        "10.2.0.0/16",
        "nexthop",
        "via",
        "192.0.2.2",
        "nexthop",
        "via",
        "198.51.100.2",
    ]);
    ip(&["route", "add", "blackhole", "10.3.0.0/16"]);
    ip(&["route", "add", "10.4.0.0/16", "dev", "tap-e1"]);
    ip(&[
        "-6",
        "route",
        "add",
        "2001:db8:9::/48",
        "via",
        "fe80::2",
        "dev",
        "tap-e0",
    ]);
    ip(&[
        "route",
        "add",
        "10.5.0.0/16",
        "via",
        "203.0.113.2",
        "dev",
        "other0",
    ]);
    l.until("routes", |r| {
        r.route_for(0, "2001:db8:9::/48").unwrap().is_some()
            && r.route_for(0, "10.4.0.0/16").unwrap().is_some()
    });
    assert_eq!(
        l.route("10.1.0.0/16"),
        Some((
            RouteSource::Kernel,
            vec!["via 192.0.2.2 e0 (unresolved)".into()]
        ))
    );
    let (src, mut paths) = l.route("10.2.0.0/16").unwrap();
    paths.sort();
    assert_eq!(src, RouteSource::Kernel);
    assert_eq!(
        paths,
        [
            "via 192.0.2.2 e0 (unresolved)",
            "via 198.51.100.2 e1 (unresolved)"
        ]
    );
    assert_eq!(l.route("10.3.0.0/16").unwrap().1, ["drop"]);
    assert_eq!(l.route("10.4.0.0/16").unwrap().1, ["glean e1"]);
    assert_eq!(
        l.route("2001:db8:9::/48").unwrap().1,
        ["via fe80::2 e0 (unresolved)"]
    );
    // The route via other0 came last: wait until the listener has counted it ignored.
    let end = Instant::now() + Duration::from_secs(10);
    while l
        .listener
        .stats()
        .ignored
        .get("route not via a paired interface")
        .is_none_or(|&n| n < 1)
    {
        assert!(Instant::now() < end, "{:#?}", l.listener.stats());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(l.route("10.5.0.0/16"), None, "other0 is not paired");

    ip(&[
        "route",
        "replace",
        "10.1.0.0/16",
        "via",
        "198.51.100.3",
        "dev",
        "tap-e1",
    ]);
    l.until("replace", |r| {
        r.route_for(0, "10.1.0.0/16").unwrap().unwrap().paths
            == ["via 198.51.100.3 e1 (unresolved)"]
    });
    // Neighbours Linux knows seed sluice's table, and go with it.
    ip(&[
        "neigh",
        "add",
        "192.0.2.2",
        "lladdr",
        "02:00:00:00:00:22",
        "dev",
        "tap-e0",
        "nud",
        "reachable",
    ]);
    l.until("neighbour", |r| {
        r.neighbors()
            .iter()
            .any(|n| n.ip.to_string() == "192.0.2.2" && n.mac == "02:00:00:00:00:22")
    });
    let (_, mut paths) = l.route("10.2.0.0/16").unwrap();
    paths.sort();
    assert_eq!(paths[0], "via 192.0.2.2 e0 (02:00:00:00:00:22)");
    ip(&["neigh", "del", "192.0.2.2", "dev", "tap-e0"]);
    l.until("neighbour gone", |r| {
        r.neighbors()
            .iter()
            .all(|n| n.ip.to_string() != "192.0.2.2")
    });

    for p in ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16", "10.4.0.0/16"] {
        ip(&["route", "del", p]);
    }
    ip(&["-6", "route", "del", "2001:db8:9::/48"]);
    l.until("deletes", |r| kernel_count(r) == 0);
    // Address deleted: its routes go too.
    ip(&["addr", "del", "198.51.100.1/24", "dev", "tap-e1"]);
    l.until("address deleted", |r| r.addresses(1).is_empty());
    assert_eq!(l.route("198.51.100.0/24"), None);
    let s = l.listener.stats();
    assert!(
        s.routes_added == 5 && s.routes_replaced >= 1 && s.routes_deleted >= 5,
        "{s:#?}"
    );
    assert_eq!(s.overflows, 0);
}

/// The kernel's main table as `ip route show` prints it, prefixes only, without the routes
/// of addresses (proto kernel).
fn kernel_table(ns: &Netns, v6: bool) -> BTreeSet<String> {
    let fam = if v6 { "-6" } else { "-4" };
    let out = ns.ip(&[fam, "route", "show", "table", "main"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("proto kernel") && !l.starts_with("multicast"))
        .map(|l| {
            let mut w = l.split_whitespace();
            let mut first = w.next().unwrap();
            if matches!(first, "blackhole" | "unreachable" | "prohibit") {
                first = w.next().unwrap();
            }
            let p = if first == "default" {
                if v6 {
                    "::/0".to_string()
                } else {
                    "0.0.0.0/0".to_string()
                }
            } else if first.contains('/') {
                first.to_string()
            } else if v6 {
                format!("{first}/128")
            } else {
                format!("{first}/32")
            };
            parse_prefix(&p).unwrap().to_string()
        })
        .collect()
}

fn sluice_table(r: &Router) -> BTreeSet<String> {
    let (v4, v6) = r.kernel_prefixes(0).unwrap();
    v4.into_iter()
        .map(|p| IpPrefix::V4(p).to_string())
        .chain(v6.into_iter().map(|p| IpPrefix::V6(p).to_string()))
        .collect()
}

#[test]
fn an_overflow_is_followed_by_an_exact_reconcile() {
    if !needs_root() {
        return;
    }
    // A small queue, so that pausing the reader overflows it.
    let l = lab(
        "nl-overflow",
        Options {
            receive_buffer: 256 << 10,
            ..Options::default()
        },
    );
    l.ns.ip(&["addr", "add", "192.0.2.1/24", "dev", "tap-e0"]);
    l.ns.ip(&["addr", "add", "2001:db8:1::1/64", "dev", "tap-e1", "nodad"]);
    // Routes that exist before the pause, some of which go during it.
    let before: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                "route add 172.16.{}.{}/30 via 192.0.2.2",
                i / 64,
                (i % 64) * 4
            )
        })
        .collect();
    l.batch(&before);
    l.until("before", |r| kernel_count(r) == 1000);
    l.listener.pause(Duration::from_secs(3));
    let n = 100_000u32;
    let mut lines: Vec<String> = (0..n)
        .map(|i| {
            let a = 0x0a00_0000u32 + (i << 8);
            format!(
                "route add {}.{}.{}.0/24 via 192.0.2.{}",
                a >> 24,
                (a >> 16) & 255,
                (a >> 8) & 255,
                2 + i % 3
            )
        })
        .collect();
    lines.extend((0..500).map(|i| format!("route del 172.16.{}.{}/30", i / 64, (i % 64) * 4)));
    lines.extend((0..2000).map(|i| format!("route add 2001:db8:{i:x}::/48 via 2001:db8:1::2")));
    let kernel = l.batch(&lines);
    let want = 1000 - 500 + n as usize;
    l.until("after the overflow", |r| {
        r.kernel_route_count(0) == (want, 2000)
    });
    let s = l.listener.stats();
    assert!(s.overflows > 0, "the pause overflowed the socket: {s:#?}");
    assert!(s.resyncs >= 2, "{s:#?}");
    let r = l.router.lock().unwrap();
    let mut kernel_routes = kernel_table(&l.ns, false);
    kernel_routes.extend(kernel_table(&l.ns, true));
    let ours = sluice_table(&r);
    let missing: Vec<_> = kernel_routes.difference(&ours).take(5).collect();
    let extra: Vec<_> = ours.difference(&kernel_routes).take(5).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?}"
    );
    assert_eq!(ours.len(), want + 2000);
    eprintln!(
        "overflow: {} routes in {:.2} s by the kernel; {} overflows, {} resyncs, last: {:?}",
        lines.len(),
        kernel.as_secs_f64(),
        s.overflows,
        s.resyncs,
        s.last_reconcile
    );
}

/// A bulk load as a routing daemon makes it: N IPv4 and N/5 IPv6 routes with `ip -batch`
/// (N = `SLUICE_NETLINK_ROUTES`, 100 000 unless set), then all deleted. Prints how long the
/// kernel took and how far sluice's FIB lagged behind.
#[test]
fn a_bulk_load_reaches_the_fib_and_leaves_it() {
    if !needs_root() {
        return;
    }
    let n: u32 = std::env::var("SLUICE_NETLINK_ROUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let n6 = n / 5;
    let l = lab("nl-bulk", Options::default());
    l.ns.ip(&["addr", "add", "192.0.2.1/24", "dev", "tap-e0"]);
    l.ns.ip(&["addr", "add", "2001:db8:1::1/64", "dev", "tap-e1", "nodad"]);
    l.until("addresses", |r| r.addresses(1).len() == 1);
    let v4: Vec<String> = (0..n)
        .map(|i| {
            let a = 0x0100_0000u32 + (i << 8);
            format!("{}.{}.{}.0/24", a >> 24, (a >> 16) & 255, (a >> 8) & 255)
        })
        .collect();
    let v6: Vec<String> = (0..n6)
        .map(|i| format!("2001:{:x}:{:x}::/48", 0x1000 + (i >> 16), i & 0xffff))
        .collect();
    let adds: Vec<String> = v4
        .iter()
        .map(|p| format!("route add {p} via 192.0.2.2"))
        .chain(
            v6.iter()
                .map(|p| format!("route add {p} via 2001:db8:1::2")),
        )
        .collect();
    let start = Instant::now();
    let kernel = l.batch(&adds);
    let want = (n as usize, n6 as usize);
    let end = Instant::now() + Duration::from_secs(120);
    while l.router.lock().unwrap().kernel_route_count(0) != want && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(2));
    }
    let total = start.elapsed();
    let s = l.listener.stats();
    assert_eq!(
        l.router.lock().unwrap().kernel_route_count(0),
        want,
        "{s:#?}"
    );
    eprintln!(
        "bulk add: {n} IPv4 + {n6} IPv6 routes: kernel {:.2} s, in sluice's FIB after {:.2} s \
         (lag {:.2} s); {} overflows, {} resyncs, {} batches ({} in bulk)",
        kernel.as_secs_f64(),
        total.as_secs_f64(),
        (total - kernel).as_secs_f64(),
        s.overflows,
        s.resyncs,
        s.batches,
        s.bulk_batches
    );
    let dels: Vec<String> = v4
        .iter()
        .chain(v6.iter())
        .map(|p| format!("route del {p}"))
        .collect();
    let start = Instant::now();
    let kernel = l.batch(&dels);
    let end = Instant::now() + Duration::from_secs(120);
    while l.router.lock().unwrap().kernel_route_count(0) != (0, 0) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(2));
    }
    let total = start.elapsed();
    assert_eq!(l.router.lock().unwrap().kernel_route_count(0), (0, 0));
    let s = l.listener.stats();
    eprintln!(
        "bulk delete: kernel {:.2} s, gone from sluice's FIB after {:.2} s (lag {:.2} s); \
         {} overflows, {} resyncs",
        kernel.as_secs_f64(),
        total.as_secs_f64(),
        (total - kernel).as_secs_f64(),
        s.overflows,
        s.resyncs
    );
}
