//! One established memif connection: the shared regions and rings both sides agreed on, and
//! the handshakes that build it, as server and as client. A handshake that meets a message it
//! does not accept answers DISCONNECT with the reason and fails; nothing is mapped that was
//! not checked.

use super::copy::OwnBuffers;
use super::irq::{is_nonblocking, Notifier};
use super::proto::{
    AddRegion, AddRing, Hello, Init, Msg, MAX_LOG2_RING_SIZE, MAX_REGIONS, MAX_RINGS,
    MODE_ETHERNET, RING_COOKIE, VERSION,
};
use super::shm::{memfd, ring_bytes, Region, Ring, RING_FLAG_MASK_INT};
use super::socket::Channel;
use super::violation::{Verdict, Violation};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

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
    fn local(reason: String) -> Failure {
        Failure {
            violation: None,
            reason,
        }
    }
}

/// Tell the peer why we hang up (the violation's name first), and fail with it.
fn refuse(ch: &Channel, v: Violation, reason: String) -> Failure {
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

fn recv(ch: &Channel, what: &str) -> Result<(Msg, Option<OwnedFd>), Failure> {
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

fn expect_ack(ch: &Channel, after: &str) -> Result<(), Failure> {
    match recv(ch, "ACK")? {
        (Msg::Ack, _) => Ok(()),
        (m, _) => Err(refuse(
            ch,
            Violation::OutOfOrder,
            format!("got {} instead of ACK for {after}", m.kind()),
        )),
    }
}

fn send(ch: &Channel, m: &Msg, fd: Option<libc::c_int>) -> Result<(), Failure> {
    ch.send(m, fd)
        .map_err(|e| Failure::local(format!("sending {}: {e}", m.kind())))
}

/// A peer's interrupt descriptor must be a non-blocking eventfd: a pipe, or an eventfd that is
/// blocking from the start, is refused at once. (The peer can still clear the flag later:
/// hence the notifier thread of `irq`.)
fn check_eventfd(fd: &OwnedFd) -> Result<(), String> {
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

/// The server's side: HELLO out, then INIT, regions, rings and CONNECT in.
pub fn serve(ch: &Channel, s: &Settings) -> Result<Connection, Failure> {
    let hello = Hello {
        name: s.name.clone(),
        min_version: VERSION,
        max_version: VERSION,
        max_region: MAX_REGIONS - 1,
        max_c2s_ring: (s.queues.min(MAX_RINGS as usize) - 1) as u16,
        max_s2c_ring: (s.queues.min(MAX_RINGS as usize) - 1) as u16,
        max_log2_ring_size: MAX_LOG2_RING_SIZE,
    };
    send(ch, &Msg::Hello(hello), None)?;
    let peer_name = match recv(ch, "INIT")? {
        (Msg::Init(i), _) => {
            if i.id != s.id {
                return Err(refuse(
                    ch,
                    Violation::BadIdentity,
                    format!("unknown interface id {} (ours is {})", i.id, s.id),
                ));
            }
            if let Some(secret) = &s.secret {
                if &i.secret != secret {
                    return Err(refuse(ch, Violation::BadIdentity, "wrong secret".into()));
                }
            }
            i.name
        }
        (m, _) => {
            return Err(refuse(
                ch,
                Violation::OutOfOrder,
                format!("got {} instead of INIT", m.kind()),
            ))
        }
    };
    send(ch, &Msg::Ack, None)?;
    let mut regions: Vec<Arc<Region>> = Vec::new();
    let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
    let (mut c2s_irq, mut s2c_irq) = (Vec::new(), Vec::new());
    loop {
        match recv(ch, "ADD_REGION, ADD_RING or CONNECT")? {
            (Msg::AddRegion(AddRegion { index, size }), fd) => {
                if index as usize != regions.len() {
                    return Err(refuse(
                        ch,
                        Violation::BadRegion,
                        format!("region {index} out of order (next is {})", regions.len()),
                    ));
                }
                let Some(fd) = fd else {
                    return Err(refuse(
                        ch,
                        Violation::BadRegion,
                        format!("region {index} came without a descriptor"),
                    ));
                };
                let Ok(len) = usize::try_from(size) else {
                    return Err(refuse(
                        ch,
                        Violation::BadRegion,
                        format!("region {index} of {size} bytes"),
                    ));
                };
                let r = Region::map(fd, len, false)
                    .map_err(|(v, e)| refuse(ch, v, format!("region {index}: {e}")))?;
                regions.push(Arc::new(r));
            }
            (Msg::AddRing(r), fd) => {
                let AddRing {
                    c2s: to_server,
                    index,
                    region,
                    offset,
                    log2_size,
                    private_hdr_size,
                } = r;
                let list = if to_server { &mut c2s } else { &mut s2c };
                let bad_ring = |reason: String| refuse(ch, Violation::BadRing, reason);
                if index as usize != list.len() || index as usize >= s.queues {
                    return Err(bad_ring(format!(
                        "ring {index} out of order or beyond {} queues",
                        s.queues
                    )));
                }
                if private_hdr_size != 0 {
                    return Err(bad_ring("private ring headers are not supported".into()));
                }
                let Some(reg) = regions.get(region as usize) else {
                    return Err(bad_ring(format!("ring {index} in unknown region {region}")));
                };
                let Some(ring) = reg.ring(offset as usize, log2_size) else {
                    return Err(bad_ring(format!(
                        "ring {index} at offset {offset} (2^{log2_size} slots) does not fit region {region} of {} bytes",
                        reg.len()
                    )));
                };
                if ring.cookie() != RING_COOKIE {
                    return Err(bad_ring(format!(
                        "ring {index} has a bad cookie {:#x}",
                        ring.cookie()
                    )));
                }
                let Some(fd) = fd else {
                    return Err(refuse(
                        ch,
                        Violation::BadInterrupt,
                        format!("ring {index} came without an interrupt descriptor"),
                    ));
                };
                check_eventfd(&fd).map_err(|e| {
                    refuse(ch, Violation::BadInterrupt, format!("ring {index}: {e}"))
                })?;
                list.push(ring);
                if to_server {
                    c2s_irq.push(fd);
                } else {
                    s2c_irq.push(fd);
                }
            }
            (Msg::Connect { name }, _) => {
                if c2s.is_empty() || s2c.is_empty() {
                    return Err(refuse(
                        ch,
                        Violation::OutOfOrder,
                        "CONNECT before a ring in each direction".into(),
                    ));
                }
                // We poll the rings we consume: ask the client not to interrupt us.
                for r in &c2s {
                    r.set_flags(r.flags() | RING_FLAG_MASK_INT);
                }
                send(
                    ch,
                    &Msg::Connected {
                        name: s.name.clone(),
                    },
                    None,
                )?;
                let peer = if name.is_empty() { peer_name } else { name };
                let irq = notifier(&s.name, &c2s_irq, &s2c_irq)?;
                return Ok(Connection {
                    peer_name: peer,
                    regions,
                    c2s,
                    s2c,
                    c2s_irq,
                    s2c_irq,
                    irq,
                    verdict: Verdict::default(),
                    own_buffers: None,
                });
            }
            (m, _) => {
                return Err(refuse(
                    ch,
                    Violation::OutOfOrder,
                    format!("unexpected {} during setup", m.kind()),
                ))
            }
        }
        send(ch, &Msg::Ack, None)?;
    }
}

fn eventfd() -> Result<OwnedFd, Failure> {
    // SAFETY: plain eventfd creation; checked and owned.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(Failure::local(format!(
            "eventfd: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a descriptor we just created.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The client's side: HELLO in; INIT, regions (rings; the buffer pool), rings and CONNECT out.
pub fn connect(ch: &Channel, s: &Settings) -> Result<Connection, Failure> {
    let hello = match recv(ch, "HELLO")? {
        (Msg::Hello(h), _) => h,
        (m, _) => {
            return Err(refuse(
                ch,
                Violation::OutOfOrder,
                format!("got {} instead of HELLO", m.kind()),
            ))
        }
    };
    if hello.max_log2_ring_size < MIN_LOG2_RING_SIZE {
        return Err(refuse(
            ch,
            Violation::BadRing,
            format!(
                "peer allows rings of at most 2^{} descriptors (we need 2^{MIN_LOG2_RING_SIZE})",
                hello.max_log2_ring_size
            ),
        ));
    }
    let queues = s
        .queues
        .min(hello.max_c2s_ring as usize + 1)
        .min(hello.max_s2c_ring as usize + 1)
        .min(MAX_RINGS as usize)
        .max(1);
    let log2 = s.log2_ring_size.min(hello.max_log2_ring_size);
    if hello.max_region < POOL_REGION {
        return Err(refuse(
            ch,
            Violation::BadRegion,
            "peer accepts only one region; we need two".into(),
        ));
    }
    // Region 1: the buffer pool (lent, zero-copy) or buffers of our own, one per slot.
    let (pool_fd, pool_len, own_buffers) = match s.pool {
        Some((fd, len)) => (fd, len, None),
        None => {
            let bytes = OwnBuffers::bytes(queues, log2);
            if bytes > 1 << 32 {
                return Err(Failure::local(format!(
                    "{queues} queue pairs of 2^{log2} slots need {bytes} bytes of buffers, more \
                     than the 4 GiB 32-bit descriptor offsets reach: use smaller rings"
                )));
            }
            let len = bytes as usize;
            let fd = memfd("sluice-memif-buffers", len)
                .map_err(|e| Failure::local(format!("memfd: {e}")))?;
            let region = Arc::new(Region::map(fd, len, true).map_err(|(_, e)| Failure::local(e))?);
            let fd = region.fd().unwrap_or(-1);
            let own = OwnBuffers {
                region,
                queues,
                log2,
            };
            (fd, len, Some(own))
        }
    };
    // Region 0: the rings, C2S then S2C for each queue.
    let per_ring = ring_bytes(log2).div_ceil(64) * 64;
    let rings_len = (per_ring * 2 * queues).div_ceil(4096) * 4096;
    let fd = memfd("sluice-memif-rings", rings_len)
        .map_err(|e| Failure::local(format!("memfd: {e}")))?;
    let rings_region =
        Arc::new(Region::map(fd, rings_len, true).map_err(|(_, e)| Failure::local(e))?);
    send(
        ch,
        &Msg::Init(Init {
            version: VERSION,
            id: s.id,
            mode: MODE_ETHERNET,
            secret: s.secret.clone().unwrap_or_default(),
            name: s.name.clone(),
        }),
        None,
    )?;
    expect_ack(ch, "INIT")?;
    send(
        ch,
        &Msg::AddRegion(AddRegion {
            index: 0,
            size: rings_len as u64,
        }),
        rings_region.fd(),
    )?;
    expect_ack(ch, "ADD_REGION 0")?;
    send(
        ch,
        &Msg::AddRegion(AddRegion {
            index: POOL_REGION,
            size: pool_len as u64,
        }),
        Some(pool_fd),
    )?;
    expect_ack(ch, "ADD_REGION 1")?;
    let (mut c2s, mut s2c) = (Vec::new(), Vec::new());
    let (mut c2s_irq, mut s2c_irq) = (Vec::new(), Vec::new());
    for (k, to_server) in (0..queues)
        .map(|q| (q, true))
        .chain((0..queues).map(|q| (q, false)))
    {
        let slot = if to_server { k } else { queues + k };
        let offset = slot * per_ring;
        let ring = rings_region
            .ring(offset, log2)
            .ok_or_else(|| Failure::local("ring layout does not fit its region".into()))?;
        // We poll what we receive (S2C): no interrupts wanted there.
        ring.init(if to_server { 0 } else { RING_FLAG_MASK_INT });
        let irq = eventfd()?;
        send(
            ch,
            &Msg::AddRing(AddRing {
                c2s: to_server,
                index: k as u16,
                region: 0,
                offset: offset as u32,
                log2_size: log2,
                private_hdr_size: 0,
            }),
            Some(irq.as_raw_fd()),
        )?;
        expect_ack(ch, "ADD_RING")?;
        if to_server {
            c2s.push(ring);
            c2s_irq.push(irq);
        } else {
            s2c.push(ring);
            s2c_irq.push(irq);
        }
    }
    send(
        ch,
        &Msg::Connect {
            name: s.name.clone(),
        },
        None,
    )?;
    let peer_name = match recv(ch, "CONNECTED")? {
        (Msg::Connected { name }, _) => {
            if name.is_empty() {
                hello.name
            } else {
                name
            }
        }
        (m, _) => {
            return Err(refuse(
                ch,
                Violation::OutOfOrder,
                format!("got {} instead of CONNECTED", m.kind()),
            ))
        }
    };
    let irq = notifier(&s.name, &c2s_irq, &s2c_irq)?;
    Ok(Connection {
        peer_name,
        regions: vec![rings_region],
        c2s,
        s2c,
        c2s_irq,
        s2c_irq,
        irq,
        verdict: Verdict::default(),
        own_buffers,
    })
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
