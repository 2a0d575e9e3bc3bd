//! The control socket against clients that misbehave: one that never reads its replies, too
//! many at once, and a socket path that holds something other than a stale socket.

mod common;
use common::{ctl, Daemon, BIN};

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A daemon with two null interfaces cross-connected (no privileges, no other namespace).
fn config(dir: &Path) -> (PathBuf, PathBuf) {
    let sock = dir.join("cli.sock");
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nhugepages = \"never\"\nbuffers = 2048\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n\
             [[xconnect]]\nrx = \"n0\"\ntx = \"n1\"\n",
            sock.display()
        ),
    )
    .unwrap();
    (cfg, sock)
}

/// Send SIGTERM and wait up to `limit` for the daemon to exit; whether it did.
fn terminate(d: &mut Daemon, limit: Duration) -> bool {
    let pid = d.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = d.child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A client asks for `show runtime --json` a thousand times and never reads a reply: the
/// daemon's writes to it fill the socket and stop. Other clients are still answered, and
/// SIGTERM still stops the daemon.
#[test]
fn a_client_that_never_reads_blocks_no_one() {
    let dir = common::tmpdir("ctl-stuck");
    let (cfg, sock) = config(&dir);
    let mut d = Daemon::start_here(&cfg, &sock);
    let stuck = UnixStream::connect(&sock).unwrap();
    stuck
        .set_write_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let asks = "show runtime --json\n".repeat(1000);
    // The requests fit in the socket's buffer; the replies (megabytes) do not.
    let _ = (&stuck).write_all(asks.as_bytes());
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        let out = ctl(&sock, "show version").expect("a second client is answered");
        assert!(out.contains("sluice"), "{out}");
    }
    assert!(
        terminate(&mut d, Duration::from_secs(10)),
        "SIGTERM did not stop the daemon while a client held a reply"
    );
    drop(stuck);
    assert!(!sock.exists(), "socket not removed on exit");
    std::fs::remove_dir_all(&dir).ok();
}

/// At most 16 clients are served at once; the next is told so and closed, and is served
/// again once the others have gone.
#[test]
fn clients_beyond_the_limit_are_refused_with_a_reason() {
    let dir = common::tmpdir("ctl-limit");
    let (cfg, sock) = config(&dir);
    let _d = Daemon::start_here(&cfg, &sock);
    let idle: Vec<UnixStream> = (0..16)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    // Let the daemon take all sixteen before the seventeenth comes.
    std::thread::sleep(Duration::from_millis(500));
    let e = ctl(&sock, "show version").unwrap_err();
    assert!(e.contains("too many control clients (16)"), "{e}");
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(5);
    while ctl(&sock, "show version").is_err() {
        assert!(
            Instant::now() < deadline,
            "not served after the others closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// What is at the socket's path and is not a socket is left alone, with an error that says
/// what it is.
#[test]
fn only_a_stale_socket_is_removed_from_the_socket_path() {
    let dir = common::tmpdir("ctl-path");
    let (cfg, sock) = config(&dir);
    // The daemon must refuse to start; one that starts anyway is killed and fails the test.
    let run = || {
        let mut child = Command::new(BIN)
            .args(["run", "-c"])
            .arg(&cfg)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                child.kill().unwrap();
                let _ = child.wait();
                panic!("the daemon started over what was at the socket path");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    };

    std::fs::write(&sock, "precious").unwrap();
    let o = run();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("is a regular file") && e.contains("refusing"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&sock).unwrap(), "precious");
    std::fs::remove_file(&sock).unwrap();

    let target = dir.join("target");
    std::fs::write(&target, "kept").unwrap();
    std::os::unix::fs::symlink(&target, &sock).unwrap();
    let e = String::from_utf8_lossy(&run().stderr).into_owned();
    assert!(e.contains("is a symbolic link"), "{e}");
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    std::fs::remove_file(&sock).unwrap();

    std::fs::create_dir(&sock).unwrap();
    let e = String::from_utf8_lossy(&run().stderr).into_owned();
    assert!(e.contains("is a directory"), "{e}");
    std::fs::remove_dir(&sock).unwrap();

    // A socket nobody serves is stale: replaced, and the daemon starts.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let mut d = Daemon::start_here(&cfg, &sock);
    assert!(d.stop());
    std::fs::remove_dir_all(&dir).ok();
}
