//! sluice as a router between namespaces, as a user would check one: ping its addresses and
//! through it (IPv4 and IPv6) with the neighbours it learnt by itself, an ICMP time exceeded
//! from its own address for TTL 1, a blackhole route, and a storm of route changes over the
//! control socket while traffic flows, none of which may send a packet of that traffic
//! astray.

mod common;
use common::routed::*;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// One namespace test at a time: each runs a daemon with a busy worker on a small machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A neighbour in `show ip neighbors --json` (`{"neighbors": [...]}`).
fn neighbor<'a>(list: &'a Value, itf: &str, ip: &str) -> Option<&'a Value> {
    list["neighbors"]
        .as_array()?
        .iter()
        .find(|n| n["interface"] == itf && n["ip"].as_str() == Some(ip))
}

#[test]
fn router_answers_pings_forwards_them_and_reports_ttl_exceeded() {
    if !needs_root() {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ensure_ping();
    // Two tester namespaces, so that a ping from t0 to t1 must cross the router.
    let (left, right, dut) = routed_lab("r");
    let dir = tmpdir("router-ping");
    let (cfg, socket) = router_config(
        &dir,
        "[[route]]\nprefix = \"203.0.113.0/24\"\ndrop = true\n",
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);

    // The router's own addresses, from both sides, both families.
    for (ns, addr) in [
        (&left, D0_V4),
        (&left, D0_V6),
        (&right, D1_V4),
        (&right, D1_V6),
    ] {
        let (ok, out) = ping(ns, &["-c", "3", "-i", "0.2", "-W", "2", addr]);
        assert!(ok, "ping {addr} from {}: {out}", ns.name);
        assert!(out.contains(&format!("from {addr}")), "{out}");
    }
    // Through the router: t0's side to t1's address and back.
    for addr in [T1_V4, T1_V6] {
        let (ok, out) = ping(&left, &["-c", "5", "-i", "0.2", "-W", "2", addr]);
        assert!(ok, "ping {addr} through sluice: {out}");
        assert!(out.contains("5 received"), "{out}");
    }
    let echos = in_echos(&right);
    assert!(
        echos.0 >= 5 && echos.1 >= 5,
        "t1's kernel counted {echos:?}"
    );
    // The router learnt all four neighbours itself, with the ports' real MACs.
    let neighbors = ctl_json(&socket, "show ip neighbors");
    for (itf, ip, ns, dev) in [
        ("d0", T0_V4, &left, "t0"),
        ("d0", T0_V6, &left, "t0"),
        ("d1", T1_V4, &right, "t1"),
        ("d1", T1_V6, &right, "t1"),
    ] {
        let n = neighbor(&neighbors, itf, ip)
            .unwrap_or_else(|| panic!("no neighbour {ip} on {itf}: {neighbors}"));
        assert_eq!(n["mac"].as_str().unwrap(), mac_of(ns, dev), "{n}");
        assert_eq!(n["static_entry"], false, "{n}");
    }

    // TTL 1: the router answers with time exceeded from its d0 address, and t1 never sees the
    // echo request.
    let before = in_echos(&right);
    let (ok, out) = ping(&left, &["-c", "1", "-t", "1", "-W", "2", T1_V4]);
    assert!(!ok, "a TTL 1 ping must not be answered by t1: {out}");
    assert!(
        out.contains(&format!("From {D0_V4}")) && out.contains("Time to live exceeded"),
        "{out}"
    );
    // The same for IPv6: hop limit 1 expires at the router, which says so from d0's address.
    let (ok, out) = ping(&left, &["-c", "1", "-t", "1", "-W", "2", T1_V6]);
    assert!(!ok, "a hop limit 1 ping must not be answered by t1: {out}");
    assert!(
        out.contains(&format!("From {D0_V6}")) && out.contains("Time exceeded"),
        "{out}"
    );
    assert_eq!(
        in_echos(&right),
        before,
        "an expired echo request reached t1"
    );

    // A blackhole route swallows what it matches; the router stays up.
    let (ok, out) = ping(&left, &["-c", "2", "-i", "0.2", "-W", "1", "203.0.113.7"]);
    assert!(!ok && out.contains("0 received"), "{out}");
    assert!(ctl(&socket, "show version").is_ok());

    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

/// The storm's prefix `k`: /32 hosts, /24s and IPv6 /64s, far from the traffic.
fn storm_prefix(k: u64) -> String {
    match k % 3 {
        0 => format!("10.{}.{}.{}/32", (k >> 16) & 255, (k >> 8) & 255, k & 255),
        1 => format!("172.{}.{}.0/24", 16 + ((k >> 8) & 15), k & 255),
        _ => format!("2001:db8:ff:{:x}::/64", k & 0xffff),
    }
}

/// Command `i` of the storm: even ones add prefix i/2 (next hops alternating between the
/// two sides), odd ones delete it again.
fn storm_line(i: u64) -> String {
    let k = i / 2;
    let via = match (k % 3, k % 2) {
        (2, 0) => T0_V6,
        (2, _) => T1_V6,
        (_, 0) => T0_V4,
        _ => T1_V4,
    };
    if i.is_multiple_of(2) {
        format!("ip route add {} via {via}", storm_prefix(k))
    } else {
        format!("ip route del {}", storm_prefix(k))
    }
}

/// Route changes at `per_s` for `how_long` over one control connection (the socket takes
/// any number of lines per connection), paced millisecond by millisecond, replies read as
/// they come. Returns (commands answered ok, commands refused, the first refusal, seconds).
fn storm(socket: &Path, per_s: u64, how_long: Duration) -> (u64, u64, Option<String>, f64) {
    use std::io::{BufRead, BufReader, Write};
    let stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    let mut w = stream.try_clone().unwrap();
    let start = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut i: u64 = 0;
        let mut batch = String::new();
        while start.elapsed() < how_long {
            let due = (start.elapsed().as_secs_f64() * per_s as f64) as u64;
            batch.clear();
            while i < due {
                batch.push_str(&storm_line(i));
                batch.push('\n');
                i += 1;
            }
            w.write_all(batch.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        // Leave no route behind: finish an add with its delete.
        if i % 2 == 1 {
            w.write_all(format!("{}\n", storm_line(i)).as_bytes())
                .unwrap();
            i += 1;
        }
        w.shutdown(std::net::Shutdown::Write).unwrap();
        i
    });
    let (mut ok, mut bad, mut first) = (0, 0, None);
    for (n, reply) in BufReader::new(&stream).lines().enumerate() {
        let v: Value = serde_json::from_str(&reply.unwrap()).unwrap();
        if v["ok"] == true {
            ok += 1;
        } else {
            bad += 1;
            first.get_or_insert_with(|| format!("{}: {v}", storm_line(n as u64)));
        }
    }
    let took = start.elapsed().as_secs_f64();
    let sent = writer.join().unwrap();
    assert_eq!(ok + bad, sent, "a command went unanswered");
    (ok, bad, first, took)
}

#[test]
fn route_storm_while_traffic_flows_misroutes_nothing() {
    if !needs_root() {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // As in the lab: one tester namespace holding both ports, so that the generator sends on
    // t0 and counts on t1; its kernel answers the router's ARP for both.
    let Lab { tester, dut, dir } = Lab::new("st", "sd", 2, 1500, "router-storm");
    dut.sysctl("net.ipv4.ip_forward", "0");
    tester.sysctl("net.ipv4.ip_forward", "0");
    address_port(&tester, "t0", T0_V4, T0_V6);
    address_port(&tester, "t1", T1_V4, T1_V6);
    let (cfg, socket) = router_config(
        &dir,
        &format!(
            "[[route]]\nprefix = \"198.19.0.0/16\"\nvia = [\"{T1_V4}\"]\n\
             [[route]]\nprefix = \"198.18.0.0/16\"\nvia = [\"{T0_V4}\"]\n"
        ),
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let routes_before = ctl_json(&socket, "show ip fib summary");

    // var2 traffic t0 -> t1 for 6 s after a 1 s warm-up (which resolves the next hop); the
    // storm runs in the middle of it.
    let d0_mac = mac_of(&dut, "d0");
    let t0_mac = mac_of(&tester, "t0");
    let gen = gen_command(
        &tester,
        &[
            "--tx",
            "t0",
            "--rx",
            "t1",
            "--flows",
            "var2",
            "--routed",
            "--src-mac",
            &t0_mac,
            "--dst-mac",
            &d0_mac,
            "--rate",
            "20000",
            "--warmup",
            "1",
            "--duration",
            "6",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    let (ok, bad, first_error, took) = storm(&socket, 10_000, Duration::from_secs(4));
    let out = gen.wait_with_output().unwrap();
    let rate = ok as f64 / took;
    eprintln!("route storm: {ok} commands in {took:.2} s ({rate:.0}/s), {bad} refused");

    assert!(
        ctl(&socket, "show version").is_ok(),
        "sluice died in the storm"
    );
    assert_eq!(bad, 0, "refused: {first_error:?}");
    // Every route the storm added is gone again (the router's own host routes for the
    // neighbours it resolved meanwhile do not count).
    let routes_after = ctl_json(&socket, "show ip fib summary");
    let statics = |v: &Value| {
        v["by_source"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s[0] == "static"))
            .and_then(|s| s[1].as_u64())
    };
    assert_eq!(statics(&routes_before), Some(2), "{routes_before}");
    assert_eq!(
        statics(&routes_before),
        statics(&routes_after),
        "{routes_after}"
    );

    let g = json_output(&out);
    let sent = g["tx_packets"].as_u64().unwrap();
    assert!(sent > 50_000, "{g}");
    // Every frame of the traffic reached t1, routed and intact (the tester's own receive ring
    // may drop some on a loaded machine, and counts them).
    let seen = g["rx_packets"].as_u64().unwrap() + g["rx_ring_drops"].as_u64().unwrap();
    assert_eq!(
        seen,
        sent,
        "{g}\n{}",
        ctl(&socket, "show errors").unwrap_or_default()
    );
    assert_eq!(g["rx_corrupt"], 0, "{g}");
    assert_eq!(g["rx_dup"], 0, "{g}");

    // The storm kept its pace (the daemon answered as fast as the commands came).
    assert!(
        rate >= 9_000.0,
        "the control socket took only {rate:.0} route changes/s"
    );
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fib_synth_via_and_exclude_for_a_lab_table() {
    let o = Command::new(BIN)
        .args([
            "fib",
            "synth",
            "--v4",
            "20000",
            "--v6",
            "3000",
            "--via",
            T0_V4,
            "--via",
            T1_V4,
            "--via",
            T1_V6,
            "--exclude",
            "198.18.0.0/15",
            "--exclude",
            "2001:db8::/32",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let routes: Vec<(&str, &str)> = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once(' ').unwrap())
        .collect();
    assert_eq!(routes.len(), 23_000);
    // Whether prefix a/alen and b/blen (addresses left-aligned in 128 bits) overlap.
    let overlap = |a: u128, alen: u32, b: u128, blen: u32| {
        let n = alen.min(blen);
        n == 0 || (a ^ b) >> (128 - n) == 0
    };
    let left = |p: &str| -> (u128, u32) {
        let (addr, len) = p.split_once('/').unwrap();
        let len: u32 = len.parse().unwrap();
        match addr.parse::<std::net::IpAddr>().unwrap() {
            std::net::IpAddr::V4(a) => ((u32::from(a) as u128) << 96, len),
            std::net::IpAddr::V6(a) => (u128::from(a), len),
        }
    };
    let (t4, t4len) = left("198.18.0.0/15");
    let (d6, d6len) = left("2001:db8::/32");
    let mut hops = std::collections::BTreeSet::new();
    for (p, nh) in &routes {
        hops.insert(*nh);
        let (a, len) = left(p);
        if p.contains(':') {
            assert!(!overlap(a, len, d6, d6len), "{p} overlaps 2001:db8::/32");
        } else {
            assert!(!overlap(a, len, t4, t4len), "{p} overlaps 198.18.0.0/15");
        }
        assert_eq!(p.contains(':'), nh.contains(':'), "{p} {nh}");
    }
    assert_eq!(
        hops.into_iter().collect::<Vec<_>>(),
        vec![T0_V4, T1_V4, T1_V6]
    );
    // Each family needs a next hop of its own.
    let o = Command::new(BIN)
        .args(["fib", "synth", "--v4", "10", "--v6", "10", "--via", T0_V4])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
