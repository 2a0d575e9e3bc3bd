//! Events (`sluice ctl watch`, the typed `watch`; docs/api.md) against a running daemon: a
//! subscriber sees each kind the test causes (link, interface, neighbour, route, worker,
//! memif with a second daemon as the peer), only the kinds it asked for; a watcher that
//! sends nothing outlives IDLE_TIMEOUT; one that stops reading loses the oldest events
//! (an overflow event says how many) and is cut off after WRITE_TIMEOUT. Null and memif
//! interfaces: no privileges, no other namespace.

mod common;
use common::{ctl, Daemon, BIN};

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One worker, a short stall-timeout, two null interfaces and `extra` config.
fn config(dir: &Path, tag: &str, extra: &str) -> (PathBuf, PathBuf) {
    let sock = dir.join(format!("{tag}.sock"));
    let cfg = dir.join(format!("{tag}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\nbuffers = 2048\n\
             [control]\nsocket = \"{}\"\n[watchdog]\nstall-timeout = 0.3\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n{extra}",
            sock.display()
        ),
    )
    .unwrap();
    (cfg, sock)
}

/// A watching connection.
struct Watcher {
    lines: BufReader<UnixStream>,
    first: Value,
}

impl Watcher {
    fn start(sock: &Path, request: &str) -> Watcher {
        let s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        (&s).write_all(format!("{request}\n").as_bytes()).unwrap();
        let mut lines = BufReader::new(s);
        let mut first = String::new();
        lines.read_line(&mut first).unwrap();
        Watcher {
            first: serde_json::from_str(&first).unwrap(),
            lines,
        }
    }

    fn next(&mut self) -> Value {
        let mut l = String::new();
        let n = self.lines.read_line(&mut l).unwrap();
        assert!(n > 0, "the daemon closed the stream");
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{l}: {e}"))
    }

    /// Events until one for which `want` holds (panics after 15 s with what came).
    fn until(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            let e = self.next();
            if want(&e) {
                return e;
            }
            seen.push(e);
        }
        panic!("no {what} event; saw {seen:?}");
    }
}

fn run(sock: &Path, line: &str) {
    ctl(sock, line).unwrap_or_else(|e| panic!("{line}: {e}"));
}

#[test]
fn a_subscriber_sees_each_kind_it_causes() {
    let dir = common::tmpdir("events-kinds");
    let (cfg, sock) = config(&dir, "k", "");
    let _d = Daemon::start_here(&cfg, &sock);
    let mut all = Watcher::start(&sock, r#"{"version": 1, "command": "watch"}"#);
    assert_eq!(all.first["ok"], json!(true), "{}", all.first);
    assert_eq!(all.first["code"], json!("ok"));
    let mut routes = Watcher::start(&sock, "watch route");
    assert_eq!(routes.first["text"], json!("watching route\n"));
    // The watcher's first look is its baseline: give it one before the changes.
    std::thread::sleep(Duration::from_millis(300));

    run(&sock, "set interface state n1 down");
    let e = all.until("link", |e| e["kind"] == "link");
    assert_eq!(e["interface"], json!("n1"));
    assert_eq!((&e["admin"], &e["link"]), (&json!("down"), &json!("up")));
    assert_eq!(e["was"]["admin"], json!("up"));
    assert!(e["seq"].as_u64().unwrap() >= 1 && e["time"].as_f64().unwrap() > 1.6e9);

    run(&sock, "create sub-interface n0 7");
    let e = all.until("interface", |e| e["kind"] == "interface");
    assert_eq!(
        (&e["event"], &e["interface"]),
        (&json!("created"), &json!("n0.7"))
    );
    run(&sock, "delete sub-interface n0.7");
    let e = all.until("interface", |e| e["kind"] == "interface");
    assert_eq!(
        (&e["event"], &e["interface"]),
        (&json!("deleted"), &json!("n0.7"))
    );

    run(&sock, "set interface ip address n0 192.0.2.1/24");
    run(&sock, "set ip neighbor n0 192.0.2.9 02:00:00:00:00:09");
    let e = all.until("neighbor", |e| e["kind"] == "neighbor");
    assert_eq!(e["event"], json!("set"));
    assert_eq!(
        (&e["ip"], &e["mac"]),
        (&json!("192.0.2.9"), &json!("02:00:00:00:00:09"))
    );
    run(&sock, "set ip neighbor n0 192.0.2.9 02:00:00:00:00:0a");
    let e = all.until("neighbor", |e| e["kind"] == "neighbor");
    assert_eq!(e["event"], json!("changed"));
    assert_eq!(e["was"], json!("02:00:00:00:00:09"));
    run(&sock, "set ip neighbor del n0 192.0.2.9");
    let e = all.until("neighbor", |e| e["kind"] == "neighbor");
    assert_eq!(e["event"], json!("removed"));

    run(&sock, "ip route add 198.19.0.0/16 via 192.0.2.2 n0");
    run(&sock, "ip route del 198.19.0.0/16");
    for w in [&mut all, &mut routes] {
        let e = w.until("route", |e| e["kind"] == "route");
        assert_eq!(
            (&e["event"], &e["prefix"], &e["source"], &e["table"]),
            (
                &json!("added"),
                &json!("198.19.0.0/16"),
                &json!("cli"),
                &json!(0)
            )
        );
        let e = w.until("route", |e| e["kind"] == "route");
        assert_eq!(e["event"], json!("removed"));
    }

    run(&sock, "debug stall-worker 0 1");
    let e = all.until("worker", |e| e["kind"] == "worker");
    assert_eq!(
        (&e["event"], &e["worker"]),
        (&json!("stalled"), &json!("sluice_wk_0"))
    );
    let e = all.until("worker", |e| e["kind"] == "worker");
    assert_eq!(e["event"], json!("resumed"));

    // The route watcher saw routes only: its next event is the one made now.
    run(&sock, "ip route add 198.18.0.0/15 drop");
    let e = routes.next();
    assert_eq!(
        (&e["kind"], &e["prefix"]),
        (&json!("route"), &json!("198.18.0.0/15"))
    );

    // A route a config file brings in (`apply`, as SIGHUP does) has source config.
    let file = dir.join("more.toml");
    let saved = ctl(&sock, "save").unwrap();
    std::fs::write(
        &file,
        saved + "[[route]]\nprefix = \"203.0.113.0/24\"\ndrop = true\n",
    )
    .unwrap();
    run(&sock, &format!("apply {}", file.display()));
    let e = routes.until("config route", |e| e["prefix"] == "203.0.113.0/24");
    assert_eq!(
        (&e["event"], &e["source"]),
        (&json!("added"), &json!("config")),
        "{e}"
    );
    // And one the CLI adds after it is the CLI's again.
    run(&sock, "ip route add 198.51.100.0/24 drop");
    let e = routes.until("cli route", |e| e["prefix"] == "198.51.100.0/24");
    assert_eq!(e["source"], json!("cli"), "{e}");
}

#[test]
fn a_memif_peer_connecting_is_a_link_and_a_memif_event() {
    let dir = common::tmpdir("events-memif");
    let memif = dir.join("memif.sock");
    let iface = |role: &str| {
        format!(
            "[[interface]]\nname = \"m0\"\ndriver = \"memif\"\nsocket = \"{}\"\nrole = \"{role}\"\n",
            memif.display()
        )
    };
    let (cfg, sock) = config(&dir, "server", &iface("server"));
    let _server = Daemon::start_here(&cfg, &sock);
    let mut w = Watcher::start(&sock, "watch link memif");
    std::thread::sleep(Duration::from_millis(300));
    let (peer_cfg, peer_sock) = config(&dir, "client", &iface("client"));
    let mut peer = Daemon::start_here(&peer_cfg, &peer_sock);
    // One look finds both: the link event comes first.
    let link = w.until("link", |e| e["kind"] == "link");
    assert_eq!(
        (&link["interface"], &link["link"]),
        (&json!("m0"), &json!("up"))
    );
    let e = w.next();
    assert_eq!(
        (&e["kind"], &e["event"], &e["interface"]),
        (&json!("memif"), &json!("connected"), &json!("m0"))
    );
    assert!(peer.stop());
    let e = w.until("memif", |e| e["kind"] == "memif");
    assert_eq!(e["event"], json!("disconnected"));
}

#[test]
fn a_quiet_watcher_stays_and_sluice_ctl_watch_prints_events() {
    let dir = common::tmpdir("events-quiet");
    let (cfg, sock) = config(&dir, "q", "");
    let _d = Daemon::start_here(&cfg, &sock);
    let mut w = Watcher::start(&sock, "watch route");
    let mut printer = Command::new(BIN)
        .args(["ctl", "-s", sock.to_str().unwrap(), "watch", "route"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Longer than IDLE_TIMEOUT (5 s) with nothing sent.
    std::thread::sleep(Duration::from_secs(6));
    run(&sock, "ip route add 198.18.0.0/15 drop");
    let e = w.next();
    assert_eq!(e["prefix"], json!("198.18.0.0/15"));
    let mut out = BufReader::new(printer.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let e: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        (&e["kind"], &e["event"]),
        (&json!("route"), &json!("added"))
    );
    let _ = printer.kill();
    let _ = printer.wait();
    // Bad kinds are refused before any event.
    let e = ctl(&sock, "watch routes").unwrap_err();
    assert!(e.contains("no event kind 'routes'"), "{e}");
}

/// `n` route changes over one connection.
fn route_storm(sock: &Path, n: usize) {
    let mut text = String::new();
    for i in 0..n {
        let (a, b) = (i / 256 % 256, i % 256);
        text.push_str(&format!("ip route add 10.{a}.{b}.0/24 drop\n"));
    }
    let s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        w.write_all(text.as_bytes()).unwrap();
        w.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let replies = BufReader::new(&s).lines().count();
    writer.join().unwrap();
    assert_eq!(replies, n);
}

#[test]
fn a_slow_watcher_overflows_and_one_that_stops_reading_is_cut_off() {
    let dir = common::tmpdir("events-slow");
    let (cfg, sock) = config(&dir, "s", "");
    let _d = Daemon::start_here(&cfg, &sock);
    // More events than the queue (1024) and the socket's buffer hold.
    let n = 3000;
    let mut slow = Watcher::start(&sock, "watch route");
    let mut stuck = Watcher::start(&sock, "watch route");
    let started = Instant::now();
    route_storm(&sock, n);
    let stormed = started.elapsed();
    // The slow one reads now: events, an overflow with how many were lost, the rest.
    let mut got = 0;
    let mut lost = 0;
    loop {
        let e = slow.next();
        if e["kind"] == "overflow" {
            lost = e["lost"].as_u64().unwrap();
        } else {
            got += 1;
        }
        if e["prefix"] == json!(format!("10.{}.{}.0/24", (n - 1) / 256, (n - 1) % 256)) {
            break;
        }
    }
    assert!(
        lost > 0,
        "no overflow ({got} events, storm took {stormed:?})"
    );
    assert_eq!(
        got + lost as usize,
        n,
        "every event is either read or counted lost"
    );
    // The stuck one took nothing for longer than WRITE_TIMEOUT (5 s): closed.
    std::thread::sleep((stormed + Duration::from_secs(6)).saturating_sub(started.elapsed()));
    let mut rest = Vec::new();
    let closed = stuck.lines.get_mut().read_to_end(&mut rest);
    assert!(
        closed.is_ok(),
        "the stuck watcher is still served: {closed:?}"
    );
    assert!(ctl(&sock, "show version").is_ok());
}
