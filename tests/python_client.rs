//! The Python client (python/sluice_client.py, docs/api.md) against a running daemon: its
//! own test script (requests, error codes, events), and the example that watches link events
//! and adds a route when a link comes up. Needs python3 (under CI=true its absence fails).

mod common;
use common::{ctl, ctl_json, Daemon};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn have_python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    common::prerequisite(ok, "python3")
}

fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

fn config(dir: &Path) -> (PathBuf, PathBuf) {
    let sock = dir.join("cli.sock");
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\nbuffers = 2048\n\
             [control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\nstate = \"down\"\n",
            sock.display()
        ),
    )
    .unwrap();
    (cfg, sock)
}

#[test]
fn the_client_test_script_passes() {
    if !have_python() {
        return;
    }
    let dir = common::tmpdir("py-client");
    let (cfg, sock) = config(&dir);
    let _d = Daemon::start_here(&cfg, &sock);
    let out = Command::new("python3")
        .arg(python_dir().join("test_sluice_client.py"))
        .arg(&sock)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
}

#[test]
fn the_example_adds_a_route_when_a_link_comes_up() {
    if !have_python() {
        return;
    }
    let dir = common::tmpdir("py-example");
    let (cfg, sock) = config(&dir);
    let _d = Daemon::start_here(&cfg, &sock);
    ctl(&sock, "set interface ip address n1 192.0.2.1/24").unwrap();
    let mut example = Command::new("python3")
        .arg(python_dir().join("examples/watch_and_route.py"))
        .args([
            sock.to_str().unwrap(),
            "n1",
            "198.19.0.0/16",
            "192.0.2.2",
            "--once",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(example.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "watching links\n");
    // Nothing is added while n1 stays down.
    std::thread::sleep(Duration::from_millis(500));
    let fib = ctl_json(&sock, "show ip fib 198.19.0.1");
    assert!(!fib.to_string().contains("198.19.0.0/16"), "{fib}");
    ctl(&sock, "set interface state n1 up").unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = example.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the example did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(status.success(), "{rest}");
    assert_eq!(rest, "link up: added 198.19.0.0/16 via 192.0.2.2 n1\n");
    let fib = ctl_json(&sock, "show ip fib 198.19.0.1");
    assert!(fib.to_string().contains("198.19.0.0/16"), "{fib}");
}
