//! Control socket access (`[control]` owner, group, mode, read-only-socket; docs/api.md
//! "Access") and the change log, against a running daemon with null interfaces: each socket
//! file has the owner, group and mode it was given; the read-only socket answers show
//! commands and watch and refuses changes, as lines and as typed requests (`read_only`);
//! every change made on the read-write socket is one line on the daemon's stderr with its
//! outcome, and nothing else is.

mod common;
use common::{ctl, Daemon};

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Sockets {
    rw: PathBuf,
    ro: PathBuf,
}

/// One worker, two null interfaces, both sockets with the given `[control]` ownership keys.
fn start(tag: &str, keys: &str) -> (Daemon, Sockets) {
    let dir = common::tmpdir(tag);
    let s = Sockets {
        rw: dir.join("rw.sock"),
        ro: dir.join("ro.sock"),
    };
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\nbuffers = 2048\n\
             [control]\nsocket = \"{}\"\nread-only-socket = \"{}\"\n{keys}\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n",
            s.rw.display(),
            s.ro.display()
        ),
    )
    .unwrap();
    let d = Daemon::start_here(&cfg, &s.rw);
    (d, s)
}

/// The (uid, gid, permission bits) of a socket file.
fn stat(path: &Path) -> (u32, u32, u32) {
    let m = std::fs::metadata(path).unwrap();
    assert!(m.file_type().is_socket(), "{}", path.display());
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

/// Send lines on one connection; the reply to each.
fn send(sock: &Path, lines: &[&str]) -> Vec<Value> {
    let s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    lines
        .iter()
        .map(|l| {
            (&s).write_all(format!("{l}\n").as_bytes()).unwrap();
            let mut reply = String::new();
            r.read_line(&mut reply).unwrap();
            serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{reply}: {e}"))
        })
        .collect()
}

fn one(sock: &Path, line: &str) -> Value {
    send(sock, &[line]).remove(0)
}

#[test]
fn sockets_get_their_owner_group_and_mode() {
    let (mut d, s) = start(
        "access-mode",
        "owner = 0\ngroup = \"daemon\"\nmode = \"0660\"\n\
         read-only-owner = \"daemon\"\nread-only-group = 65534\nread-only-mode = \"0666\"",
    );
    assert_eq!(stat(&s.rw), (0, 1, 0o660));
    assert_eq!(stat(&s.ro), (1, 65534, 0o666));
    assert!(d.stop());
    assert!(!s.rw.exists() && !s.ro.exists(), "the daemon removes both");

    // Left out: root's own, 0600.
    let (mut d, s) = start("access-default", "");
    let me = std::fs::metadata(s.rw.parent().unwrap()).unwrap();
    assert_eq!(stat(&s.rw), (me.uid(), me.gid(), 0o600));
    assert_eq!(stat(&s.ro), (me.uid(), me.gid(), 0o600));
    assert!(d.stop());
}

#[test]
fn read_only_socket_shows_and_watches_but_refuses_changes() {
    let (mut d, s) = start("access-ro", "read-only-mode = \"0666\"");
    // Show commands and help, as lines (abbreviated too) and typed.
    assert!(ctl(&s.ro, "show version").unwrap().starts_with("sluice "));
    let r = one(&s.ro, "sh int n0 --json");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(one(&s.ro, "help")["ok"], true);
    let r = one(
        &s.ro,
        r#"{"version": 1, "command": "show interface", "interface": "n0"}"#,
    );
    assert_eq!(
        (r["ok"].clone(), r["code"].clone()),
        (true.into(), "ok".into()),
        "{r}"
    );
    assert_eq!(r["json"][0]["name"], "n0", "{r}");

    // Changes: refused as a line (ctl fails with the reason) and as a request (read_only).
    let e = ctl(&s.ro, "set interface state n0 down").unwrap_err();
    assert!(
        e.contains("read-only socket: 'set interface state' changes state"),
        "{e}"
    );
    for line in [
        "set int state n0 down",
        "clear errors",
        "save /tmp/x.toml",
        "nosuch cmd",
    ] {
        let r = one(&s.ro, line);
        assert_eq!(r["ok"], false, "{line}: {r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .starts_with("read-only socket: "),
            "{r}"
        );
    }
    for req in [
        r#"{"version": 1, "command": "set interface state", "interface": "n0", "state": "down"}"#,
        r#"{"version": 1, "command": "ip route add", "args": "198.19.0.0/16 drop"}"#,
        r#"{"version": 1, "command": "no such"}"#,
        r#"{"version": 1}"#,
    ] {
        let r = one(&s.ro, req);
        assert_eq!(
            (r["ok"].clone(), r["code"].clone()),
            (false.into(), "read_only".into()),
            "{r}"
        );
    }
    // Nothing changed: n0 is still up; the read-write socket takes the same change.
    let state = |sock: &Path| one(sock, "show interface n0 --json")["json"][0]["admin"].clone();
    assert_eq!(state(&s.ro), "up");
    let watch = UnixStream::connect(&s.ro).unwrap();
    watch
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    (&watch).write_all(b"watch route\n").unwrap();
    let mut events = BufReader::new(watch);
    let mut first = String::new();
    events.read_line(&mut first).unwrap();
    assert!(first.contains("\"ok\":true"), "{first}");
    let r = one(&s.rw, "set interface state n0 down");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(state(&s.ro), "down");
    // The read-only watcher sees a change made on the other socket (route events are
    // published by the command itself, with no baseline to wait for).
    assert_eq!(one(&s.rw, "ip route add 198.19.0.0/16 drop")["ok"], true);
    let mut event = String::new();
    events.read_line(&mut event).unwrap();
    let event: Value = serde_json::from_str(&event).unwrap();
    assert_eq!(
        (event["kind"].clone(), event["prefix"].clone()),
        ("route".into(), "198.19.0.0/16".into())
    );
    let typed_watch = one(
        &s.ro,
        r#"{"version": 1, "command": "watch", "kinds": ["route"]}"#,
    );
    assert_eq!(typed_watch["code"], "ok", "{typed_watch}");
    assert!(d.stop());
}

/// The daemon's stderr after it stopped.
fn stderr_of(mut d: Daemon) -> String {
    assert!(d.stop());
    // The drain may be a moment behind the exit: give it its last read.
    std::thread::sleep(Duration::from_millis(200));
    d.stderr_text()
}

#[test]
fn every_change_is_logged_once_with_its_outcome() {
    let (d, s) = start("access-log", "");
    let rw = s.rw.display().to_string();
    let replies = send(
        &s.rw,
        &[
            "set interface state n0 down",
            "set interface state nope up",
            "show interface",
            r#"{"version": 1, "command": "ip route add", "args": "198.19.0.0/16 drop"}"#,
            r#"{"version": 1, "command": "set interface state", "interface": "n1", "state": "sideways"}"#,
            r#"{"version": 1, "command": "show version"}"#,
            "nosuch command",
            "{not json",
        ],
    );
    let oks: Vec<&Value> = replies.iter().map(|r| &r["ok"]).collect();
    assert_eq!(oks, [true, false, true, true, false, true, false, false]);
    // Refused on the read-only socket: not a change, not logged.
    assert_eq!(one(&s.ro, "set interface state n1 down")["ok"], false);
    let err = stderr_of(d);
    let changes: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("sluice: change: "))
        .collect();
    let want = [
        format!("sluice: change: {rw}: set interface state n0 down: ok"),
        format!(
            "sluice: change: {rw}: set interface state nope up: error: no interface named \
             'nope' (known: n0, n1)"
        ),
        format!(
            "sluice: change: {rw}: {{\"args\":\"198.19.0.0/16 drop\",\"command\":\"ip route \
             add\",\"version\":1}}: ok"
        ),
    ];
    assert_eq!(changes[..3], want, "{err}");
    assert_eq!(changes.len(), 4, "{err}");
    assert!(
        changes[3].starts_with(&format!(
            "sluice: change: {rw}: {{\"command\":\"set interface state\",\"interface\":\"n1\""
        )) && changes[3].contains(": error: field 'state' must be one of"),
        "{}",
        changes[3]
    );
}
