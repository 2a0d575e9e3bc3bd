//! Typed JSON requests against a running daemon (docs/api.md): a change and a show with its
//! JSON, every error code, command lines beside them on one connection answered as before,
//! and `sluice ctl` passing a typed request through. Null interfaces: no privileges, no
//! other namespace.

mod common;
use common::{Daemon, BIN};

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn config(dir: &Path) -> (PathBuf, PathBuf) {
    let sock = dir.join("cli.sock");
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nhugepages = \"never\"\nbuffers = 2048\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n",
            sock.display()
        ),
    )
    .unwrap();
    (cfg, sock)
}

/// Send `lines` over one connection; the reply lines, as sent.
fn exchange(sock: &Path, lines: &[String]) -> Vec<String> {
    let s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    (&s).write_all(text.as_bytes()).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let replies: Vec<String> = BufReader::new(&s).lines().map(Result::unwrap).collect();
    assert_eq!(replies.len(), lines.len(), "{replies:?}");
    replies
}

/// Send typed requests over one connection; their replies.
fn typed(sock: &Path, requests: &[Value]) -> Vec<Value> {
    let lines: Vec<String> = requests.iter().map(Value::to_string).collect();
    exchange(sock, &lines)
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect()
}

fn ok(reply: &Value) -> &Value {
    assert_eq!(reply["ok"], json!(true), "{reply}");
    assert_eq!(reply["code"], json!("ok"), "{reply}");
    assert!(reply.get("error").is_none(), "{reply}");
    reply
}

#[test]
fn typed_requests_change_show_and_fail_with_codes() {
    let dir = common::tmpdir("api-typed");
    let (cfg, sock) = config(&dir);
    let _d = Daemon::start_here(&cfg, &sock);
    let r = typed(
        &sock,
        &[
            json!({"version": 1, "command": "set interface state", "interface": "n1", "state": "down"}),
            json!({"version": 1, "command": "show interface", "interface": "n1"}),
            json!({"version": 1, "command": "set interface ip address", "interface": "n0",
                   "address": "192.0.2.1/24"}),
            json!({"version": 1, "command": "ip route add",
                   "args": "198.19.0.0/16 via 192.0.2.2 n0"}),
            json!({"version": 1, "command": "show ip fib", "args": ["198.19.1.1"]}),
        ],
    );
    assert_eq!(ok(&r[0])["text"], json!(""));
    assert!(r[0].get("json").is_none(), "{}", r[0]);
    let shown = &ok(&r[1])["json"][0];
    assert_eq!(
        (&shown["name"], &shown["admin"]),
        (&json!("n1"), &json!("down"))
    );
    assert!(r[1]["text"].as_str().unwrap().contains("n1"), "{}", r[1]);
    ok(&r[2]);
    ok(&r[3]);
    assert_eq!(ok(&r[4])["json"]["route"]["prefix"], json!("198.19.0.0/16"));

    let codes = [
        ("{not json", "bad_request"),
        (
            r#"{"version": 1, "command": "show version"} more"#,
            "bad_request",
        ),
        (r#"{"command": "show version"}"#, "bad_version"),
        (
            r#"{"version": 2, "command": "show version"}"#,
            "bad_version",
        ),
        (r#"{"version": 1, "command": "sh ver"}"#, "unknown_command"),
        (
            r#"{"version": 1, "command": "set interface state", "interface": "n0"}"#,
            "missing_field",
        ),
        (
            r#"{"version": 1, "command": "show version", "json": true}"#,
            "unknown_field",
        ),
        (
            r#"{"version": 1, "command": "set interface state", "interface": "n0", "state": "sideways"}"#,
            "bad_field",
        ),
        (
            r#"{"version": 1, "command": "trace add", "node": "ip4-lookup", "count": "ten"}"#,
            "bad_field",
        ),
        (
            r#"{"version": 1, "command": "set interface state", "interface": "zz", "state": "up"}"#,
            "failed",
        ),
    ];
    let lines: Vec<String> = codes.iter().map(|(l, _)| l.to_string()).collect();
    for ((line, code), reply) in codes.iter().zip(exchange(&sock, &lines)) {
        let v: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(
            (&v["ok"], &v["code"]),
            (&json!(false), &json!(code)),
            "{line}: {v}"
        );
        let e = v["error"].as_str().unwrap();
        assert!(!e.is_empty() && !e.contains('\n'), "{line}: {e}");
    }
    // Nothing that failed changed anything: n0 is still up.
    let r = typed(
        &sock,
        &[json!({"version": 1, "command": "show interface", "interface": "n0"})],
    );
    assert_eq!(ok(&r[0])["json"][0]["admin"], json!("up"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Command lines beside typed requests keep their replies exactly; `sluice ctl` sends a
/// typed request given as its one word, and `--batch` typed lines.
#[test]
fn lines_keep_their_replies_and_ctl_passes_requests_through() {
    let dir = common::tmpdir("api-lines");
    let (cfg, sock) = config(&dir);
    let _d = Daemon::start_here(&cfg, &sock);
    let v = env!("CARGO_PKG_VERSION");
    let replies = exchange(
        &sock,
        &[
            "show version".into(),
            r#"{"version": 1, "command": "show version"}"#.into(),
            "show version --json".into(),
            "show frobs".into(),
        ],
    );
    assert_eq!(
        replies[0],
        format!(r#"{{"ok":true,"text":"sluice {v}\n"}}"#)
    );
    let t: Value = serde_json::from_str(&replies[1]).unwrap();
    assert_eq!(
        t,
        json!({"ok": true, "code": "ok", "text": format!("sluice {v}\n"), "json": {"version": v}})
    );
    assert_eq!(
        replies[2],
        format!(r#"{{"json":{{"version":"{v}"}},"ok":true}}"#)
    );
    assert_eq!(
        replies[3],
        r#"{"error":"unknown command 'show frobs' (try: help)","ok":false}"#
    );

    let ctl = |args: &[&str], input: &str| {
        let mut c = Command::new(BIN)
            .args(["ctl", "-s", sock.to_str().unwrap()])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        c.wait_with_output().unwrap()
    };
    let o = ctl(&[r#"{"version": 1, "command": "show version"}"#], "");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("sluice {v}\n"));
    let o = ctl(&[r#"{"version": 1, "command": "show vers"}"#], "");
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown command 'show vers'"),
        "{o:?}"
    );
    let batch = "{\"version\": 1, \"command\": \"set interface state\", \"interface\": \"n0\", \"state\": \"down\"}\n\
                 {\"version\": 1, \"command\": \"show version\"}\n";
    let o = ctl(&["--batch"], batch);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("sluice {v}\n"));
    let n0 = common::ctl_json(&sock, "show interface n0");
    assert_eq!(n0[0]["admin"], json!("down"));
    std::fs::remove_dir_all(&dir).ok();
}
