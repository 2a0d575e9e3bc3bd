//! The client's handshake: the server's HELLO in; INIT, the two regions (rings; the buffer
//! pool or buffers of our own), the rings and CONNECT out.

use super::{
    expect_ack, recv, refuse, send, Connection, Failure, Rings, Settings, MIN_LOG2_RING_SIZE,
    POOL_REGION,
};
use crate::drivers::memif::copy::OwnBuffers;
use crate::drivers::memif::proto::{
    AddRegion, AddRing, Hello, Init, Msg, MAX_RINGS, MODE_ETHERNET, VERSION,
};
use crate::drivers::memif::shm::{memfd, ring_bytes, Region, RING_FLAG_MASK_INT};
use crate::drivers::memif::socket::Channel;
use crate::drivers::memif::violation::Violation;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

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
    let hello = expect_hello(ch)?;
    let (queues, log2) = agree_sizes(ch, s, &hello)?;
    let (pool_fd, pool_len, own_buffers) = buffer_region(s, queues, log2)?;
    let layout = RingLayout::new(queues, log2);
    let fd = memfd("sluice-memif-rings", layout.len)
        .map_err(|e| Failure::local(format!("memfd: {e}")))?;
    let rings_region =
        Arc::new(Region::map(fd, layout.len, true).map_err(|(_, e)| Failure::local(e))?);
    send_init(ch, s)?;
    add_regions(ch, &rings_region, layout.len, pool_fd, pool_len)?;
    let rings = add_rings(ch, &rings_region, &layout)?;
    let peer_name = connect_rings(ch, s, hello.name)?;
    rings.connection(s, peer_name, vec![rings_region], own_buffers)
}

/// The server's HELLO, first thing on the socket.
fn expect_hello(ch: &Channel) -> Result<Hello, Failure> {
    match recv(ch, "HELLO")? {
        (Msg::Hello(h), _) => Ok(h),
        (m, _) => Err(refuse(
            ch,
            Violation::OutOfOrder,
            format!("got {} instead of HELLO", m.kind()),
        )),
    }
}

/// The queue pairs and ring size both sides accept (refused when the server's limits leave
/// too little: rings under `MIN_LOG2_RING_SIZE`, or no room for the buffer region).
fn agree_sizes(ch: &Channel, s: &Settings, hello: &Hello) -> Result<(usize, u8), Failure> {
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
    Ok((queues, log2))
}

/// Region 1: the buffer pool (lent, zero-copy) or buffers of our own, one per slot; its
/// descriptor and length.
fn buffer_region(
    s: &Settings,
    queues: usize,
    log2: u8,
) -> Result<(libc::c_int, usize, Option<OwnBuffers>), Failure> {
    if let Some((fd, len)) = s.pool {
        return Ok((fd, len, None));
    }
    let bytes = OwnBuffers::bytes(queues, log2);
    if bytes > 1 << 32 {
        return Err(Failure::local(format!(
            "{queues} queue pairs of 2^{log2} slots need {bytes} bytes of buffers, more \
             than the 4 GiB 32-bit descriptor offsets reach: use smaller rings"
        )));
    }
    let len = bytes as usize;
    let fd =
        memfd("sluice-memif-buffers", len).map_err(|e| Failure::local(format!("memfd: {e}")))?;
    let region = Arc::new(Region::map(fd, len, true).map_err(|(_, e)| Failure::local(e))?);
    let fd = region.fd().unwrap_or(-1);
    let own = OwnBuffers {
        region,
        queues,
        log2,
    };
    Ok((fd, len, Some(own)))
}

/// Region 0: the rings, C2S then S2C for each queue, each on its own cache lines.
struct RingLayout {
    queues: usize,
    log2: u8,
    /// Bytes from one ring to the next.
    per_ring: usize,
    /// The region's length, whole pages.
    len: usize,
}

impl RingLayout {
    fn new(queues: usize, log2: u8) -> RingLayout {
        let per_ring = ring_bytes(log2).div_ceil(64) * 64;
        RingLayout {
            queues,
            log2,
            per_ring,
            len: (per_ring * 2 * queues).div_ceil(4096) * 4096,
        }
    }
}

fn send_init(ch: &Channel, s: &Settings) -> Result<(), Failure> {
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
    expect_ack(ch, "INIT")
}

/// Lend the server region 0 (the rings) and region 1 (the buffers).
fn add_regions(
    ch: &Channel,
    rings_region: &Arc<Region>,
    rings_len: usize,
    pool_fd: libc::c_int,
    pool_len: usize,
) -> Result<(), Failure> {
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
    expect_ack(ch, "ADD_REGION 1")
}

/// Lay out every ring in region 0 and tell the server where each is, with its eventfd.
fn add_rings(
    ch: &Channel,
    rings_region: &Arc<Region>,
    layout: &RingLayout,
) -> Result<Rings, Failure> {
    let queues = layout.queues;
    let mut rings = Rings::default();
    for (k, to_server) in (0..queues)
        .map(|q| (q, true))
        .chain((0..queues).map(|q| (q, false)))
    {
        let slot = if to_server { k } else { queues + k };
        let offset = slot * layout.per_ring;
        let ring = rings_region
            .ring(offset, layout.log2)
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
                log2_size: layout.log2,
                private_hdr_size: 0,
            }),
            Some(irq.as_raw_fd()),
        )?;
        expect_ack(ch, "ADD_RING")?;
        rings.push(to_server, ring, irq);
    }
    Ok(rings)
}

/// CONNECT out, CONNECTED in; the server's name (from HELLO when CONNECTED has none).
fn connect_rings(ch: &Channel, s: &Settings, hello_name: String) -> Result<String, Failure> {
    send(
        ch,
        &Msg::Connect {
            name: s.name.clone(),
        },
        None,
    )?;
    match recv(ch, "CONNECTED")? {
        (Msg::Connected { name }, _) => Ok(if name.is_empty() { hello_name } else { name }),
        (m, _) => Err(refuse(
            ch,
            Violation::OutOfOrder,
            format!("got {} instead of CONNECTED", m.kind()),
        )),
    }
}
