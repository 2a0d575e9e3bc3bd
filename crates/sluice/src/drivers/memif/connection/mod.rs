//! One established memif connection: the shared regions and rings both sides agreed on, and
//! the handshakes that build it, as server (`server`) and as client (`client`), one function
//! per step of the protocol. A handshake that meets a message it does not accept answers
//! DISCONNECT with the reason and fails; nothing is mapped that was not checked.

use super::copy::OwnBuffers;
use super::irq::{is_nonblocking, Notifier};
use super::proto::Msg;
use super::shm::{Region, Ring, RING_FLAG_MASK_INT};
use super::socket::Channel;
use super::violation::{Verdict, Violation};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

mod client;
mod server;

pub use client::connect;
pub use server::serve;

/// Which side of the protocol we are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Listens; maps the client's memory and copies packets in and out of it.
    Server,
    /// Connects; owns the memory (a region of its own, copied in and out; or, for a trusted
    /// peer, sluice's buffer pool, so nothing is copied).
    Client,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

/// What we say about ourselves and ask of the peer.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Interface id both sides must agree on.
    pub id: u32,
    pub secret: Option<String>,
    /// Our name in HELLO, INIT and CONNECT(ED).
    pub name: String,
    /// Queue pairs we want (client) or accept at most (server).
    pub queues: usize,
    pub log2_ring_size: u8,
    /// Client: the buffer pool's memfd and length, lent as region 1 (zero-copy). None: a
    /// region of our own, copied in and out.
    pub pool: Option<(libc::c_int, usize)>,
}

/// The agreed shared memory.
pub struct Connection {
    pub peer_name: String,
    /// Server: the client's regions by index. Client: region 0 (the rings) only.
    pub regions: Vec<Arc<Region>>,
    pub c2s: Vec<Ring>,
    pub s2c: Vec<Ring>,
    /// Interrupt eventfds of the rings (written by the producer when the consumer asks).
    pub c2s_irq: Vec<OwnedFd>,
    pub s2c_irq: Vec<OwnedFd>,
    /// Writes those eventfds for the workers, which must not (the peer can make a write
    /// sleep); the control thread stops it when the connection ends.
    pub irq: Notifier,
    /// The peer's first violation on this connection: queues stop using its rings at once,
    /// and the control thread disconnects it.
    pub verdict: Verdict,
    /// Client that lends nothing: its region 1, one buffer per ring slot.
    pub own_buffers: Option<OwnBuffers>,
}

/// Region index of the buffer pool when we are the client.
pub const POOL_REGION: u16 = 1;
/// The smallest ring a client accepts (a server's HELLO may offer less: a 1-slot ring).
pub const MIN_LOG2_RING_SIZE: u8 = 4;

/// Why a handshake failed, and the peer's violation when it broke the protocol (none when
/// the socket failed, the peer left, or something of ours failed).
#[derive(Debug)]
pub struct Failure {
    pub violation: Option<Violation>,
    pub reason: String,
}

impl Failure {
    pub(super) fn local(reason: String) -> Failure {
        Failure {
            violation: None,
            reason,
        }
    }
}

/// Tell the peer why we hang up (the violation's name first), and fail with it.
pub(super) fn refuse(ch: &Channel, v: Violation, reason: String) -> Failure {
    let reason = format!("{}: {reason}", v.name());
    let _ = ch.send(
        &Msg::Disconnect {
            code: 1,
            reason: reason.clone(),
        },
        None,
    );
    Failure {
        violation: Some(v),
        reason,
    }
}

pub(super) fn recv(ch: &Channel, what: &str) -> Result<(Msg, Option<OwnedFd>), Failure> {
    match ch.recv() {
        Ok((Msg::Disconnect { code, reason }, _)) => Err(Failure::local(format!(
            "peer disconnected while we waited for {what}: {reason} (code {code})"
        ))),
        Ok(m) => Ok(m),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            let v = Channel::proto_error(&e).map_or(Violation::BadMessage, |p| p.violation());
            Err(refuse(
                ch,
                v,
                format!("bad message while waiting for {what}: {e}"),
            ))
        }
        Err(e) => Err(Failure::local(format!("waiting for {what}: {e}"))),
    }
}

pub(super) fn expect_ack(ch: &Channel, after: &str) -> Result<(), Failure> {
    match recv(ch, "ACK")? {
        (Msg::Ack, _) => Ok(()),
        (m, _) => Err(refuse(
            ch,
            Violation::OutOfOrder,
            format!("got {} instead of ACK for {after}", m.kind()),
        )),
    }
}

pub(super) fn send(ch: &Channel, m: &Msg, fd: Option<libc::c_int>) -> Result<(), Failure> {
    ch.send(m, fd)
        .map_err(|e| Failure::local(format!("sending {}: {e}", m.kind())))
}

/// A peer's interrupt descriptor must be a non-blocking eventfd: a pipe, or an eventfd that is
/// blocking from the start, is refused at once. (The peer can still clear the flag later:
/// hence the notifier thread of `irq`.)
pub(super) fn check_eventfd(fd: &OwnedFd) -> Result<(), String> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(|e| format!("cannot inspect the interrupt descriptor: {e}"))?;
    if link.as_os_str() != "anon_inode:[eventfd]" {
        return Err(format!(
            "interrupt descriptor is {}, not an eventfd",
            link.display()
        ));
    }
    if !is_nonblocking(fd) {
        return Err("interrupt eventfd is blocking".into());
    }
    Ok(())
}

fn notifier(name: &str, c2s: &[OwnedFd], s2c: &[OwnedFd]) -> Result<Notifier, Failure> {
    Notifier::start(name, c2s, s2c)
        .map_err(|e| Failure::local(format!("cannot start the interrupt thread: {e}")))
}

/// The rings one side has agreed so far, each direction with its interrupt eventfds.
#[derive(Default)]
pub(super) struct Rings {
    pub(super) c2s: Vec<Ring>,
    pub(super) s2c: Vec<Ring>,
    c2s_irq: Vec<OwnedFd>,
    s2c_irq: Vec<OwnedFd>,
}

impl Rings {
    pub(super) fn push(&mut self, to_server: bool, ring: Ring, irq: OwnedFd) {
        if to_server {
            self.c2s.push(ring);
            self.c2s_irq.push(irq);
        } else {
            self.s2c.push(ring);
            self.s2c_irq.push(irq);
        }
    }

    /// The connection over these rings, once both sides said CONNECT(ED).
    pub(super) fn connection(
        self,
        s: &Settings,
        peer_name: String,
        regions: Vec<Arc<Region>>,
        own_buffers: Option<OwnBuffers>,
    ) -> Result<Connection, Failure> {
        let irq = notifier(&s.name, &self.c2s_irq, &self.s2c_irq)?;
        Ok(Connection {
            peer_name,
            regions,
            c2s: self.c2s,
            s2c: self.s2c,
            c2s_irq: self.c2s_irq,
            s2c_irq: self.s2c_irq,
            irq,
            verdict: Verdict::default(),
            own_buffers,
        })
    }
}

impl Connection {
    /// Wake the consumer of ring `index` of one direction, unless it polls (masked its
    /// interrupts). Never blocks: the notifier writes (see `irq`).
    pub fn interrupt(&self, c2s: bool, index: usize) {
        let rings = if c2s { &self.c2s } else { &self.s2c };
        if rings
            .get(index)
            .is_some_and(|r| r.flags() & RING_FLAG_MASK_INT == 0)
        {
            self.irq.kick(c2s, index);
        }
    }
}
