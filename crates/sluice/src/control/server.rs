//! The control socket: a Unix stream socket (mode 0600) that takes command lines and
//! answers each with one JSON object: `{"ok":true,"text":...}`, `{"ok":true,"json":...}` or
//! `{"ok":false,"error":...}`. A line that starts with `{` is a typed request instead
//! (control::request), answered with its own reply shape.
//!
//! Each client is served on a thread of its own, at most `MAX_CLIENTS` at a time; the
//! commands themselves run one at a time under the control plane's lock, and a reply is
//! written after the lock is let go. A client has `IDLE_TIMEOUT` to send each command line
//! and `WRITE_TIMEOUT` to take each whole reply, and every blocked read or write looks at
//! the stop flag every `POLL`: a client that stops reading delays no other client and
//! never the daemon's shutdown. `ClientStats` counts what was refused or cut off.
//!
//! `watch` (control::watch) turns a connection into a stream of events: it has no
//! `IDLE_TIMEOUT` (it sends nothing) but has `WRITE_TIMEOUT` for each event, so a watcher
//! that stops reading is cut off; until then its bounded queue drops the oldest events
//! (crate::events), and no publisher waits for it. The accept loop also runs the events
//! `Watcher`, which compares the state every `watcher::EVERY` while someone watches.

use super::exec::{Control, Reply};
use super::{request, watch};
use crate::events::{watcher::Watcher, Subscription};
use serde_json::json;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest command line accepted.
pub const MAX_LINE: usize = 4096;
/// Clients served at once; one more is answered with an error and closed.
pub const MAX_CLIENTS: u64 = 16;
/// How long a client has to send each command line (and to close after its last).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client has to take one whole reply.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a client's blocked read or write looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// The socket's file-creation mask: the file is made 0600, owner only. A command can
/// reconfigure the router, so the socket gives what root has; a group (0660) would need a
/// group the daemon is told of, and sluice has none.
const SOCKET_UMASK: u32 = 0o177;

/// What the control socket counted since the daemon started.
#[derive(Debug, Default)]
pub struct ClientStats {
    /// Connections served.
    pub accepted: AtomicU64,
    /// Clients being served now.
    pub active: AtomicU64,
    /// Connections refused: `MAX_CLIENTS` were being served (or no thread could start).
    pub refused: AtomicU64,
    /// Clients closed for taking longer than `IDLE_TIMEOUT` to send a line or
    /// `WRITE_TIMEOUT` to take a reply.
    pub timed_out: AtomicU64,
    /// Command lines longer than `MAX_LINE` (answered with an error, then closed).
    pub too_long: AtomicU64,
}

/// A bound control socket; the file is removed when this is dropped.
pub struct ControlSocket {
    listener: UnixListener,
    path: PathBuf,
    stats: Arc<ClientStats>,
}

/// What stands at the socket's path before it is bound.
fn clear_path(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot inspect {}: {e}", path.display())),
    };
    let t = meta.file_type();
    if !t.is_socket() {
        let what = if t.is_symlink() {
            "a symbolic link"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_file() {
            "a regular file"
        } else {
            "not a socket"
        };
        return Err(format!(
            "{} is {what}, not a stale control socket: refusing to remove it (remove it \
             yourself, or set [control] socket)",
            path.display()
        ));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(format!(
            "another sluice is serving {} (stop it, or set [control] socket)",
            path.display()
        ));
    }
    std::fs::remove_file(path).map_err(|e| format!("cannot remove stale {}: {e}", path.display()))
}

impl ControlSocket {
    /// Bind `path`, replacing a stale socket file but never a live one, nor anything that
    /// is not a socket. Call before any other thread starts (the mask is process-wide).
    pub fn bind(path: &Path) -> Result<ControlSocket, String> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
        }
        clear_path(path)?;
        // Made 0600 by bind itself: no moment when another user could connect.
        let listener = crate::sys::cpu::with_umask(SOCKET_UMASK, || UnixListener::bind(path))
            .map_err(|e| format!("cannot bind control socket {}: {e}", path.display()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("control socket: {e}"))?;
        Ok(ControlSocket {
            listener,
            path: path.to_path_buf(),
            stats: Arc::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The counters of this socket (for the metrics endpoint).
    pub fn stats(&self) -> Arc<ClientStats> {
        self.stats.clone()
    }

    /// Answer commands until `stop` is set; returns the control plane when every client
    /// thread has ended (within `POLL` of the stop plus one command).
    pub fn serve(&self, control: Control, stop: &AtomicBool) -> Control {
        let control = Mutex::new(control);
        let stats = &*self.stats;
        let mut refused = Refused(Default::default());
        let mut watcher = Watcher::default();
        std::thread::scope(|s| {
            while !stop.load(Ordering::Relaxed) {
                refused.drain();
                if watcher.due() {
                    let c = control.lock().unwrap_or_else(|p| p.into_inner());
                    watcher.poll(&c, &c.dp.events);
                }
                let stream = match self.listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                    Err(e) => {
                        eprintln!("sluice: control socket accept: {e}");
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    }
                };
                if stats.active.load(Ordering::Relaxed) >= MAX_CLIENTS {
                    refused.refuse(stream, &format!("too many control clients ({MAX_CLIENTS})"));
                    stats.refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                stats.active.fetch_add(1, Ordering::Relaxed);
                let control = &control;
                let spawned = std::thread::Builder::new()
                    .name("sluice_ctl".into())
                    .spawn_scoped(s, move || {
                        if let Err(e) = answer(control, &stream, stop, stats) {
                            eprintln!("sluice: control connection: {e}");
                        }
                        stats.active.fetch_sub(1, Ordering::Relaxed);
                    });
                if let Err(e) = spawned {
                    // The stream went with the closure: the client sees its connection close.
                    eprintln!("sluice: control connection: cannot start a thread: {e}");
                    stats.active.fetch_sub(1, Ordering::Relaxed);
                    stats.refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        control.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Refused clients, kept open for `LINGER` (at most `LINGERING` of them) so that the command
/// they send is read before the close: closing with unread bytes would reset the
/// connection, and the client would see the reset instead of the reason.
struct Refused(std::collections::VecDeque<(UnixStream, Instant)>);

const LINGER: Duration = Duration::from_secs(1);
const LINGERING: usize = 64;

impl Refused {
    /// Tell a client it was not served, without waiting for it to read.
    fn refuse(&mut self, stream: UnixStream, why: &str) {
        let mut out = json!({"ok": false, "error": why}).to_string();
        out.push('\n');
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = (&stream).write(out.as_bytes());
        let _ = stream.shutdown(std::net::Shutdown::Write);
        if self.0.len() == LINGERING {
            self.0.pop_front();
        }
        self.0.push_back((stream, Instant::now() + LINGER));
    }

    /// Read what the refused clients sent; close those that are done or out of time.
    fn drain(&mut self) {
        let mut sink = [0u8; 4096];
        self.0.retain(|(s, until)| {
            loop {
                match (&*s).read(&mut sink) {
                    Ok(0) => return false,
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => return false,
                }
            }
            Instant::now() < *until
        });
    }
}

/// Why a connection ended early.
enum Cut {
    TimedOut(&'static str),
    Stopped,
    Io(std::io::Error),
}

impl From<std::io::Error> for Cut {
    fn from(e: std::io::Error) -> Cut {
        Cut::Io(e)
    }
}

/// What the next read of a command line found.
enum Got {
    Line(String),
    TooLong,
    Closed,
}

/// One client's connection: its unread bytes, and the deadlines of its reads and writes.
struct Conn<'a> {
    stream: &'a UnixStream,
    stop: &'a AtomicBool,
    pending: Vec<u8>,
}

/// Whether an error only means the wait (SO_RCVTIMEO/SO_SNDTIMEO) ran out or a signal came.
fn waited(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

impl Conn<'_> {
    /// How long the next blocking call may wait before the stop flag is looked at again.
    fn slice(&self, deadline: Instant, what: &'static str) -> Result<Duration, Cut> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Cut::Stopped);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Cut::TimedOut(what));
        }
        Ok(left.min(POLL))
    }

    fn read_line(&mut self) -> Result<Got, Cut> {
        let deadline = Instant::now() + IDLE_TIMEOUT;
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                if i >= MAX_LINE {
                    return Ok(Got::TooLong);
                }
                let line: Vec<u8> = self.pending.drain(..=i).collect();
                return Ok(Got::Line(String::from_utf8_lossy(&line).into_owned()));
            }
            if self.pending.len() >= MAX_LINE {
                return Ok(Got::TooLong);
            }
            let slice = self.slice(deadline, "send a command line")?;
            self.stream.set_read_timeout(Some(slice))?;
            match (&*self.stream).read(&mut chunk) {
                Ok(0) if self.pending.is_empty() => return Ok(Got::Closed),
                // A last line without its newline is still a command.
                Ok(0) => {
                    let line = std::mem::take(&mut self.pending);
                    return Ok(Got::Line(String::from_utf8_lossy(&line).into_owned()));
                }
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if waited(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn write_all(&self, mut data: &[u8]) -> Result<(), Cut> {
        let deadline = Instant::now() + WRITE_TIMEOUT;
        while !data.is_empty() {
            let slice = self.slice(deadline, "take a reply")?;
            self.stream.set_write_timeout(Some(slice))?;
            match (&*self.stream).write(data) {
                Ok(0) => return Err(std::io::Error::from(ErrorKind::WriteZero).into()),
                Ok(n) => data = &data[n..],
                Err(e) if waited(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Whether the client closed its side (bytes it sends while watching are dropped).
    fn closed(&mut self) -> Result<bool, Cut> {
        let mut chunk = [0u8; 512];
        self.stream.set_nonblocking(true)?;
        let got = (&*self.stream).read(&mut chunk);
        self.stream.set_nonblocking(false)?;
        match got {
            Ok(0) => Ok(true),
            Ok(_) => Ok(false),
            Err(e) if waited(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Send every event of `sub` until the client closes, the daemon stops, or the client
    /// takes longer than `WRITE_TIMEOUT` over one event.
    fn send_events(&mut self, sub: &Subscription) -> Result<(), Cut> {
        let mut out = Vec::new();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Cut::Stopped);
            }
            match sub.next(POLL) {
                Some(event) => {
                    out.clear();
                    serde_json::to_writer(&mut out, &*event).map_err(|e| Cut::Io(e.into()))?;
                    out.push(b'\n');
                    self.write_all(&out)?;
                }
                None if self.closed()? => return Ok(()),
                None => {}
            }
        }
    }
}

/// Answer every command line of one connection, one JSON reply line each, until the client
/// closes its side (`sluice ctl` sends one line; `sluice ctl --batch` many).
fn answer(
    control: &Mutex<Control>,
    stream: &UnixStream,
    stop: &AtomicBool,
    stats: &ClientStats,
) -> Result<(), String> {
    stats.accepted.fetch_add(1, Ordering::Relaxed);
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    let mut conn = Conn {
        stream,
        stop,
        pending: Vec::new(),
    };
    let result = serve_lines(control, &mut conn, stats);
    match result {
        Ok(()) | Err(Cut::Stopped) => Ok(()),
        Err(Cut::TimedOut(what)) => {
            stats.timed_out.fetch_add(1, Ordering::Relaxed);
            Err(format!("closed a client that took too long to {what}"))
        }
        Err(Cut::Io(e)) => Err(e.to_string()),
    }
}

fn serve_lines(
    control: &Mutex<Control>,
    conn: &mut Conn<'_>,
    stats: &ClientStats,
) -> Result<(), Cut> {
    loop {
        let line = match conn.read_line()? {
            Got::Closed => return Ok(()),
            Got::Line(l) => l,
            Got::TooLong => {
                stats.too_long.fetch_add(1, Ordering::Relaxed);
                let e =
                    json!({"ok": false, "error": format!("command longer than {MAX_LINE} bytes")});
                // The rest of an over-long line is not a command.
                return conn.write_all(format!("{e}\n").as_bytes());
            }
        };
        if let Some(w) = watch::parse(&line) {
            let w = match w {
                Ok(w) => w,
                Err(refusal) => {
                    conn.write_all(format!("{refusal}\n").as_bytes())?;
                    continue;
                }
            };
            let bus = control
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .dp
                .events
                .clone();
            let sub = bus.subscribe(&w.kinds);
            conn.write_all(format!("{}\n", w.reply).as_bytes())?;
            return conn.send_events(&sub);
        }
        let reply = {
            let mut c = control.lock().unwrap_or_else(|p| p.into_inner());
            if request::is_typed(&line) {
                request::answer(&mut c, line.trim())
            } else {
                match c.handle_line(line.trim()) {
                    Ok(Reply::Text(t)) => json!({"ok": true, "text": t}),
                    Ok(Reply::Json(v)) => json!({"ok": true, "json": v}),
                    Err(e) => json!({"ok": false, "error": e}),
                }
            }
        };
        let mut out = serde_json::to_vec(&reply).map_err(|e| Cut::Io(e.into()))?;
        out.push(b'\n');
        conn.write_all(&out)?;
    }
}
