//! A memif interface's control thread: it runs the protocol (listening or connecting),
//! publishes each connection to the queues and disconnects a peer that breaks the rules.

use super::connection::{Connection, Role, Settings};
use super::socket::Channel;
use super::violation::Violation;
use super::{connection, proto, MemifConfig, Shared};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The control thread; stopping it (drop) disconnects the peer and removes our socket file.
pub(super) struct ControlThread {
    pub(super) shared: Arc<Shared>,
    pub(super) handle: Option<JoinHandle<()>>,
}

impl Drop for ControlThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.shared.publish(None);
        if self.shared.role == Role::Server {
            let _ = std::fs::remove_file(&self.shared.socket);
        }
    }
}

/// Hang up on a peer that broke the protocol, saying why.
pub(super) fn disconnect(ch: &Channel, shared: &Shared, name: &str, reason: String) {
    let _ = ch.send(
        &proto::Msg::Disconnect {
            code: 1,
            reason: reason.clone(),
        },
        None,
    );
    shared.note_error(name, &reason);
}

/// Wait for the peer to go away, break the protocol (a queue found a violation in the
/// rings, or a message came) or us to stop, refusing anybody else who connects.
pub(super) fn watch(
    ch: &Channel,
    listener: Option<&Channel>,
    shared: &Shared,
    name: &str,
    conn: &Connection,
) {
    loop {
        if conn.irq.saw_blocking() {
            shared.count_violation(conn, Violation::BadInterrupt);
        }
        if let Some(v) = conn.verdict.get() {
            // Counted by the queue that saw it.
            disconnect(
                ch,
                shared,
                name,
                format!("protocol violation: {}", v.name()),
            );
            return;
        }
        if shared.stop.load(Ordering::Relaxed) {
            let _ = ch.send(
                &proto::Msg::Disconnect {
                    code: 0,
                    reason: "sluice is stopping".into(),
                },
                None,
            );
            return;
        }
        if let Some(l) = listener {
            if l.wait(0) {
                if let Ok(other) = l.accept() {
                    let _ = other.send(
                        &proto::Msg::Disconnect {
                            code: 1,
                            reason: "interface already connected".into(),
                        },
                        None,
                    );
                }
            }
        }
        if !ch.wait(100) {
            continue;
        }
        match ch.recv() {
            Ok((proto::Msg::Disconnect { reason, .. }, _)) => {
                shared.note_error(name, &format!("peer disconnected: {reason}"));
                return;
            }
            Ok((m, _)) => {
                let v = Violation::OutOfOrder;
                shared.count_violation(conn, v);
                let e = format!("{}: unexpected {} after connecting", v.name(), m.kind());
                disconnect(ch, shared, name, e);
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                let v = Channel::proto_error(&e).map_or(Violation::BadMessage, |p| p.violation());
                shared.count_violation(conn, v);
                disconnect(ch, shared, name, format!("{}: {e}", v.name()));
                return;
            }
            Err(e) => {
                shared.note_error(name, &format!("peer lost: {e}"));
                return;
            }
        }
    }
}

pub(super) fn sleep_unless_stopped(shared: &Shared, d: Duration) {
    let step = Duration::from_millis(50);
    let mut left = d;
    while !left.is_zero() && !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(step.min(left));
        left = left.saturating_sub(step);
    }
}

pub(super) fn control_loop(
    shared: Arc<Shared>,
    listener: Option<Channel>,
    cfg: MemifConfig,
    settings: Settings,
) {
    let name = cfg.name.as_str();
    while !shared.stop.load(Ordering::Relaxed) {
        let ch = match &listener {
            Some(l) => {
                if !l.wait(100) {
                    continue;
                }
                match l.accept() {
                    Ok(c) => c,
                    Err(e) => {
                        shared.note_error(name, &format!("accept: {e}"));
                        continue;
                    }
                }
            }
            None => match Channel::connect(&cfg.socket) {
                Ok(c) => c,
                Err(_) => {
                    // Nobody listens yet: try again in a second.
                    sleep_unless_stopped(&shared, Duration::from_secs(1));
                    continue;
                }
            },
        };
        let setup = match cfg.role {
            Role::Server => connection::serve(&ch, &settings),
            Role::Client => connection::connect(&ch, &settings),
        };
        match setup {
            Ok(conn) => {
                let pairs = conn.c2s.len().min(conn.s2c.len());
                shared.say(
                    name,
                    &format!("connected to {} ({pairs} queue pairs)", conn.peer_name),
                );
                let conn = Arc::new(conn);
                shared.publish(Some(conn.clone()));
                watch(&ch, listener.as_ref(), &shared, name, &conn);
                // Before the queues let go of the connection (the last may drop it on a
                // worker): a write the peer made sleep is interrupted here.
                conn.irq.stop();
                shared.publish(None);
                shared.say(name, "disconnected");
            }
            Err(f) => {
                if let Some(v) = f.violation {
                    shared.violations.add(v);
                }
                shared.note_error(name, &format!("connection refused: {}", f.reason));
                if cfg.role == Role::Client {
                    sleep_unless_stopped(&shared, Duration::from_secs(1));
                }
            }
        }
    }
}
