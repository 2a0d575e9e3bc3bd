//! The control sockets: Unix stream sockets that take command lines and
//! answers each with one JSON object: `{"ok":true,"text":...}`, `{"ok":true,"json":...}` or
//! `{"ok":false,"error":...}`. A line that starts with `{` is a typed request instead
//! (control::request), answered with its own reply shape. The read-write socket takes every
//! command; the read-only one (when `[control] read-only-socket` is set) only those that
//! change nothing (control::access), and every command that changes state is logged
//! (control::audit). Both are served by the one accept loop below.
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

use super::access::{self, Access, ControlConfig, Ownership};
use super::exec::{Control, Reply};
use super::{audit, cli, request, watch};
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
/// The sockets' file-creation mask: each file is made 0600, owner only, and then given the
/// owner, group and mode of its `[control]` keys (control::access).
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

/// The bound control sockets: the read-write one first, then the read-only one if any.
pub struct ControlSocket {
    sockets: Vec<Bound>,
    stats: Arc<ClientStats>,
}

/// One bound socket; its file is removed when this is dropped.
struct Bound {
    listener: UnixListener,
    path: PathBuf,
    access: Access,
}

/// Which socket a client came in on: what it may do, and the name its changes are logged
/// under.
struct Who<'a> {
    access: Access,
    source: &'a str,
}

impl Drop for Bound {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
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

impl Bound {
    /// Bind `path`, replacing a stale socket file but never a live one, nor anything that
    /// is not a socket, and give the file its owner, group and mode.
    fn bind(path: &Path, ownership: &Ownership, access: Access) -> Result<Bound, String> {
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
        let bound = Bound {
            listener,
            path: path.to_path_buf(),
            access,
        };
        ownership.apply(path)?;
        bound
            .listener
            .set_nonblocking(true)
            .map_err(|e| format!("control socket: {e}"))?;
        Ok(bound)
    }
}

impl ControlSocket {
    /// Bind the sockets of `[control]` (see `Bound::bind`). Call before any other thread
    /// starts (the mask is process-wide).
    pub fn bind(cfg: &ControlConfig) -> Result<ControlSocket, String> {
        let mut sockets = vec![Bound::bind(&cfg.socket, &cfg.access, Access::ReadWrite)?];
        if let Some((path, ownership)) = &cfg.read_only {
            sockets.push(Bound::bind(path, ownership, Access::ReadOnly)?);
        }
        Ok(ControlSocket {
            sockets,
            stats: Arc::default(),
        })
    }

    /// The read-write socket's path.
    pub fn path(&self) -> &Path {
        &self.sockets[0].path
    }

    /// The read-only socket's path, when there is one.
    pub fn read_only_path(&self) -> Option<&Path> {
        self.sockets.get(1).map(|b| b.path.as_path())
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
                let Some((stream, bound)) = self.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
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
                        let source = bound.path.display().to_string();
                        let who = Who {
                            access: bound.access,
                            source: &source,
                        };
                        if let Err(e) = answer(control, &stream, stop, stats, &who) {
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

    /// A client waiting on any of the sockets, and the socket.
    fn accept(&self) -> Option<(UnixStream, &Bound)> {
        self.sockets.iter().find_map(|b| match b.listener.accept() {
            Ok((stream, _)) => Some((stream, b)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => None,
            Err(e) => {
                eprintln!("sluice: control socket {} accept: {e}", b.path.display());
                None
            }
        })
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
    who: &Who<'_>,
) -> Result<(), String> {
    stats.accepted.fetch_add(1, Ordering::Relaxed);
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    let mut conn = Conn {
        stream,
        stop,
        pending: Vec::new(),
    };
    let result = serve_lines(control, &mut conn, stats, who);
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
    who: &Who<'_>,
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
            run(&mut c, line.trim(), who)
        };
        let mut out = serde_json::to_vec(&reply).map_err(|e| Cut::Io(e.into()))?;
        out.push(b'\n');
        conn.write_all(&out)?;
    }
}

/// Carry out one command line or typed request from a client of `who`'s socket: refused on
/// the read-only socket unless it changes nothing, and logged when it changes state.
fn run(c: &mut Control, line: &str, who: &Who<'_>) -> serde_json::Value {
    if request::is_typed(line) {
        let (reply, command) = request::answer(c, line, who.access);
        if command.is_some_and(|c| c.effect == cli::Effect::Changes) {
            let what = serde_json::from_str::<serde_json::Value>(line)
                .map_or_else(|_| line.to_string(), |v| v.to_string());
            audit::log(who.source, &what, outcome(&reply));
        }
        return reply;
    }
    let mut words: Vec<&str> = line.split_whitespace().collect();
    words.retain(|w| *w != "--json");
    let command = cli::find(&words).ok().map(|(c, _)| c);
    if let Err(e) = access::permits(who.access, command) {
        return json!({"ok": false, "error": e});
    }
    let reply = match c.handle_line(line) {
        Ok(Reply::Text(t)) => json!({"ok": true, "text": t}),
        Ok(Reply::Json(v)) => json!({"ok": true, "json": v}),
        Err(e) => json!({"ok": false, "error": e}),
    };
    if command.is_some_and(|c| c.effect == cli::Effect::Changes) {
        audit::log(who.source, line, outcome(&reply));
    }
    reply
}

/// A reply's outcome, for the change log.
fn outcome(reply: &serde_json::Value) -> Result<(), &str> {
    match reply.get("ok").and_then(serde_json::Value::as_bool) {
        Some(true) => Ok(()),
        _ => Err(reply
            .get("error")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("failed")),
    }
}
