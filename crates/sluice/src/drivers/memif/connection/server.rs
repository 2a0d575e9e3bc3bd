//! The server's handshake: HELLO out, then the client's INIT, regions, rings and CONNECT
//! in, each checked before anything is mapped or kept.

use super::{check_eventfd, recv, refuse, send, Connection, Failure, Rings, Settings};
use crate::drivers::memif::proto::{
    AddRegion, AddRing, Hello, Msg, MAX_LOG2_RING_SIZE, MAX_REGIONS, MAX_RINGS, RING_COOKIE,
    VERSION,
};
use crate::drivers::memif::shm::{Region, RING_FLAG_MASK_INT};
use crate::drivers::memif::socket::Channel;
use crate::drivers::memif::violation::Violation;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// The server's side: HELLO out, then INIT, regions, rings and CONNECT in.
pub fn serve(ch: &Channel, s: &Settings) -> Result<Connection, Failure> {
    send(ch, &Msg::Hello(server_hello(s)), None)?;
    let peer_name = accept_init(ch, s)?;
    send(ch, &Msg::Ack, None)?;
    let mut regions: Vec<Arc<Region>> = Vec::new();
    let mut rings = Rings::default();
    loop {
        match recv(ch, "ADD_REGION, ADD_RING or CONNECT")? {
            (Msg::AddRegion(r), fd) => regions.push(accept_region(ch, &regions, r, fd)?),
            (Msg::AddRing(r), fd) => accept_ring(ch, s, &regions, &mut rings, r, fd)?,
            (Msg::Connect { name }, _) => {
                accept_connect(ch, s, &rings)?;
                let peer = if name.is_empty() { peer_name } else { name };
                return rings.connection(s, peer, regions, None);
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

/// What the server offers: its queue and ring limits.
fn server_hello(s: &Settings) -> Hello {
    Hello {
        name: s.name.clone(),
        min_version: VERSION,
        max_version: VERSION,
        max_region: MAX_REGIONS - 1,
        max_c2s_ring: (s.queues.min(MAX_RINGS as usize) - 1) as u16,
        max_s2c_ring: (s.queues.min(MAX_RINGS as usize) - 1) as u16,
        max_log2_ring_size: MAX_LOG2_RING_SIZE,
    }
}

/// The client's INIT, checked against our interface id and secret; its name.
fn accept_init(ch: &Channel, s: &Settings) -> Result<String, Failure> {
    match recv(ch, "INIT")? {
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
            Ok(i.name)
        }
        (m, _) => Err(refuse(
            ch,
            Violation::OutOfOrder,
            format!("got {} instead of INIT", m.kind()),
        )),
    }
}

/// The client's next region, mapped once its index, descriptor and size are checked.
fn accept_region(
    ch: &Channel,
    regions: &[Arc<Region>],
    AddRegion { index, size }: AddRegion,
    fd: Option<OwnedFd>,
) -> Result<Arc<Region>, Failure> {
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
    Ok(Arc::new(r))
}

/// The client's next ring of one direction: in order, within our queues, inside a mapped
/// region, with the ring cookie and a non-blocking interrupt eventfd.
fn accept_ring(
    ch: &Channel,
    s: &Settings,
    regions: &[Arc<Region>],
    rings: &mut Rings,
    r: AddRing,
    fd: Option<OwnedFd>,
) -> Result<(), Failure> {
    let AddRing {
        c2s: to_server,
        index,
        region,
        offset,
        log2_size,
        private_hdr_size,
    } = r;
    let listed = if to_server {
        rings.c2s.len()
    } else {
        rings.s2c.len()
    };
    let bad_ring = |reason: String| refuse(ch, Violation::BadRing, reason);
    if index as usize != listed || index as usize >= s.queues {
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
    check_eventfd(&fd)
        .map_err(|e| refuse(ch, Violation::BadInterrupt, format!("ring {index}: {e}")))?;
    rings.push(to_server, ring, fd);
    Ok(())
}

/// The client's CONNECT: accepted once there is a ring each way, answered CONNECTED.
fn accept_connect(ch: &Channel, s: &Settings, rings: &Rings) -> Result<(), Failure> {
    if rings.c2s.is_empty() || rings.s2c.is_empty() {
        return Err(refuse(
            ch,
            Violation::OutOfOrder,
            "CONNECT before a ring in each direction".into(),
        ));
    }
    // We poll the rings we consume: ask the client not to interrupt us.
    for r in &rings.c2s {
        r.set_flags(r.flags() | RING_FLAG_MASK_INT);
    }
    send(
        ch,
        &Msg::Connected {
            name: s.name.clone(),
        },
        None,
    )
}
