//! The systemd notification protocol (`sd_notify(3)`), spoken directly: a datagram of
//! `KEY=VALUE` lines to the Unix socket named by `$NOTIFY_SOCKET` (a path, or an abstract
//! name after `@`). sluice sends `READY=1` once it forwards and serves its control socket,
//! `WATCHDOG=1` while every worker passes its loop (when `$WATCHDOG_USEC` asks for it), and
//! `STOPPING=1` when it begins to shut down. With no `$NOTIFY_SOCKET` nothing is sent.
//! Sending never blocks: a full or missing socket loses the message, as libsystemd's does.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// Where notifications go.
pub struct Notifier {
    socket: UnixDatagram,
    to: SocketAddr,
    watchdog: Option<Duration>,
}

impl Notifier {
    /// From the environment systemd gives a `Type=notify` service; `None` without
    /// `$NOTIFY_SOCKET`, an error when it names no usable address.
    pub fn from_env() -> Result<Option<Notifier>, String> {
        let Some(name) = std::env::var_os("NOTIFY_SOCKET") else {
            return Ok(None);
        };
        let name = name.to_string_lossy().into_owned();
        let to = address(&name).map_err(|e| format!("NOTIFY_SOCKET={name}: {e}"))?;
        let socket = UnixDatagram::unbound().map_err(|e| format!("notify socket: {e}"))?;
        socket
            .set_nonblocking(true)
            .map_err(|e| format!("notify socket: {e}"))?;
        let watchdog = watchdog_usec(
            std::env::var("WATCHDOG_USEC").ok().as_deref(),
            std::env::var("WATCHDOG_PID").ok().as_deref(),
            std::process::id(),
        );
        Ok(Some(Notifier {
            socket,
            to,
            watchdog,
        }))
    }

    /// `WatchdogSec=`, when systemd asks this process for `WATCHDOG=1`.
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.watchdog
    }

    /// Send one notification (`READY=1`, `WATCHDOG=1`, `STOPPING=1`); a failure is lost.
    pub fn send(&self, msg: &str) {
        let _ = self.socket.send_to_addr(msg.as_bytes(), &self.to);
    }
}

/// `$NOTIFY_SOCKET` as an address: an absolute path, or `@name` for the abstract namespace.
fn address(name: &str) -> Result<SocketAddr, String> {
    if let Some(abstract_name) = name.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        return SocketAddr::from_abstract_name(abstract_name.as_bytes()).map_err(|e| e.to_string());
    }
    if !name.starts_with('/') {
        return Err("not an absolute path or an @abstract name".into());
    }
    SocketAddr::from_pathname(name).map_err(|e| e.to_string())
}

/// The watchdog interval asked of process `pid`: `WATCHDOG_USEC` microseconds, unless
/// `WATCHDOG_PID` names another process (the variables were meant for a parent).
fn watchdog_usec(usec: Option<&str>, for_pid: Option<&str>, pid: u32) -> Option<Duration> {
    if let Some(p) = for_pid {
        if p.trim().parse::<u32>().ok() != Some(pid) {
            return None;
        }
    }
    let us: u64 = usec?.trim().parse().ok()?;
    (us > 0).then(|| Duration::from_micros(us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watchdog_interval_is_for_this_process_only() {
        let s = Some(Duration::from_secs(30));
        assert_eq!(watchdog_usec(Some("30000000"), None, 7), s);
        assert_eq!(watchdog_usec(Some("30000000"), Some("7"), 7), s);
        assert_eq!(watchdog_usec(Some("30000000"), Some("8"), 7), None);
        assert_eq!(watchdog_usec(Some("0"), None, 7), None);
        assert_eq!(watchdog_usec(Some("x"), None, 7), None);
        assert_eq!(watchdog_usec(None, None, 7), None);
    }

    #[test]
    fn addresses_are_paths_or_abstract_names() {
        use std::os::linux::net::SocketAddrExt;
        assert!(address("/run/systemd/notify").is_ok());
        assert!(address("@sluice-test")
            .unwrap()
            .as_abstract_name()
            .is_some());
        assert!(address("relative/path").is_err());
    }

    #[test]
    fn messages_reach_the_socket() {
        let dir = std::env::temp_dir().join(format!("sluice-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        let n = Notifier {
            socket: UnixDatagram::unbound().unwrap(),
            to: address(path.to_str().unwrap()).unwrap(),
            watchdog: None,
        };
        n.send("READY=1");
        let mut buf = [0u8; 64];
        let len = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1");
        std::fs::remove_dir_all(&dir).ok();
    }
}
