//! The watchdog and systemd: a worker stalled on purpose (`debug stall-worker`) is reported
//! by `show threads` and the metrics, systemd's `WATCHDOG=1` stops while it lasts, SIGTERM
//! still ends the daemon (the stuck worker left behind after the join deadline), and with
//! `exit-on-stall` the daemon stops by itself. The test plays systemd: its own datagram
//! socket as `$NOTIFY_SOCKET`.

mod common;
use common::{ctl, ctl_json, Daemon, BIN};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// One worker, two null interfaces, a short stall-timeout and the metrics endpoint.
fn config(dir: &Path, port: u16, exit_on_stall: bool) -> (PathBuf, PathBuf) {
    let sock = dir.join("cli.sock");
    let cfg = dir.join("w.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nhugepages = \"never\"\nbuffers = 2048\n[control]\nsocket = \"{}\"\n\
             [metrics]\nlisten = \"127.0.0.1:{port}\"\n\
             [watchdog]\nstall-timeout = 0.5\nexit-on-stall = {exit_on_stall}\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n\
             [[xconnect]]\nrx = \"n0\"\ntx = \"n1\"\n",
            sock.display()
        ),
    )
    .unwrap();
    (cfg, sock)
}

/// Start the daemon with `notify` as its NOTIFY_SOCKET and a 2 s WatchdogSec.
fn start(cfg: &Path, sock: &Path, notify: &Path) -> Daemon {
    let mut run = Command::new(BIN);
    run.args(["run", "-c", cfg.to_str().unwrap()])
        .env("NOTIFY_SOCKET", notify)
        .env("WATCHDOG_USEC", "2000000")
        .env_remove("WATCHDOG_PID");
    Daemon::spawn(run, sock)
}

/// The datagrams waiting on `rx`, waiting at most `wait` for the first.
fn messages(rx: &UnixDatagram, wait: Duration) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    rx.set_read_timeout(Some(wait)).unwrap();
    while let Ok(n) = rx.recv(&mut buf) {
        out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        rx.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    }
    out
}

fn scrape(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

fn worker0(sock: &Path) -> serde_json::Value {
    ctl_json(sock, "show threads")[1].clone()
}

/// Wait until worker 0 is reported stalled.
fn wait_stalled(sock: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while worker0(sock)["stalled"] != true {
        assert!(
            Instant::now() < deadline,
            "never reported: {}",
            worker0(sock)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_exit(d: &mut Daemon, limit: Duration) -> Option<(i32, String)> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = d.child.try_wait() {
            // The drain may be a moment behind the exit: give it its last read.
            std::thread::sleep(Duration::from_millis(200));
            return Some((status.code().unwrap_or(-1), d.stderr_text()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn a_stalled_worker_is_reported_and_systemd_stops_hearing_from_it() {
    let dir = common::tmpdir("watchdog");
    let port = free_port();
    let (cfg, sock) = config(&dir, port, false);
    let notify_path = dir.join("notify");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    let mut d = start(&cfg, &sock, &notify_path);

    let got = messages(&notify, Duration::from_secs(5));
    assert!(got.iter().any(|m| m == "READY=1"), "{got:?}");
    let got = messages(&notify, Duration::from_secs(5));
    assert!(got.iter().any(|m| m == "WATCHDOG=1"), "{got:?}");
    let w = worker0(&sock);
    assert_eq!(w["stalled"], false, "{w}");
    assert!(ctl(&sock, "show threads").unwrap().contains("Heartbeat"));

    let e = ctl(&sock, "debug stall-worker 5 1").unwrap_err();
    assert!(e.contains("no worker '5'"), "{e}");
    ctl(&sock, "debug stall-worker 0 60").unwrap();
    wait_stalled(&sock);
    let text = ctl(&sock, "show threads").unwrap();
    assert!(text.contains("STALLED"), "{text}");
    let m = scrape(port);
    assert!(m.contains("sys_worker_stalled{worker=\"0\"} 1"), "{m}");
    assert!(m.contains("sys_worker_stalls_total{worker=\"0\"} 1"), "{m}");
    assert!(m.contains("control_clients_accepted_total"), "{m}");

    // No WATCHDOG=1 while the worker is stalled (a ping already sent may still be queued).
    messages(&notify, Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(1500));
    let got = messages(&notify, Duration::from_millis(1));
    assert_eq!(worker0(&sock)["stalled"], true);
    assert!(!got.iter().any(|m| m == "WATCHDOG=1"), "{got:?}");

    // SIGTERM: the stuck worker does not stop; the daemon says so and exits without it.
    let pid = d.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let (code, err) = wait_exit(&mut d, Duration::from_secs(20)).expect("the daemon did not exit");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("sluice_wk_0 did not stop in time"), "{err}");
    assert!(err.contains("has not passed its loop"), "{err}");
    let got = messages(&notify, Duration::from_millis(1));
    assert!(got.iter().any(|m| m == "STOPPING=1"), "{got:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn exit_on_stall_stops_the_daemon_for_its_supervisor() {
    let dir = common::tmpdir("watchdog-exit");
    let port = free_port();
    let (cfg, sock) = config(&dir, port, true);
    let notify_path = dir.join("notify");
    let _notify = UnixDatagram::bind(&notify_path).unwrap();
    let mut d = start(&cfg, &sock, &notify_path);
    ctl(&sock, "debug stall-worker 0 60").unwrap();
    let (code, err) = wait_exit(&mut d, Duration::from_secs(20)).expect("the daemon did not exit");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("exit-on-stall"), "{err}");
    assert!(!sock.exists(), "socket not removed");
    std::fs::remove_dir_all(&dir).ok();
}
