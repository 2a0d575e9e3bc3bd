//! The listener's NETLINK_ROUTE sockets (netlink-sys): one subscribed to the groups it
//! follows, with a large receive buffer, and one-shot sockets for dumps.

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REQUEST,
};
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::neighbour::NeighbourMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

// Multicast groups (RTNLGRP_*), joined with NETLINK_ADD_MEMBERSHIP.
const RTNLGRP_LINK: u32 = 1;
const RTNLGRP_NEIGH: u32 = 3;
const RTNLGRP_IPV4_IFADDR: u32 = 5;
const RTNLGRP_IPV4_ROUTE: u32 = 7;
const RTNLGRP_IPV4_RULE: u32 = 8;
const RTNLGRP_IPV6_IFADDR: u32 = 9;
const RTNLGRP_IPV6_ROUTE: u32 = 11;
const RTNLGRP_IPV6_RULE: u32 = 19;

/// Bytes one receive takes at most: a notification is one message, a dump part up to a few
/// pages; 1 MiB leaves room for any.
pub const RECV_BYTES: usize = 1 << 20;

/// The subscribed socket.
pub struct Events {
    socket: Socket,
    buf: Vec<u8>,
    /// The receive buffer the kernel granted (it reports twice what was asked).
    pub receive_buffer: usize,
}

/// What one receive gave.
pub enum Received<'a> {
    Datagram(&'a [u8]),
    /// Nothing arrived within the timeout.
    Idle,
    /// The kernel dropped messages: the socket's queue overflowed (ENOBUFS).
    Overflow,
}

impl Events {
    /// Subscribe to links, addresses, routes (both families), neighbours and rules, asking
    /// for `receive_buffer` bytes of queue (SO_RCVBUFFORCE, as root; else SO_RCVBUF up to
    /// the system's limit). `wait`: how long a receive waits before it says `Idle`.
    pub fn open(receive_buffer: usize, wait: Duration) -> io::Result<Events> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind(&SocketAddr::new(0, 0))?;
        for g in [
            RTNLGRP_LINK,
            RTNLGRP_NEIGH,
            RTNLGRP_IPV4_IFADDR,
            RTNLGRP_IPV4_ROUTE,
            RTNLGRP_IPV4_RULE,
            RTNLGRP_IPV6_IFADDR,
            RTNLGRP_IPV6_ROUTE,
            RTNLGRP_IPV6_RULE,
        ] {
            socket.add_membership(g)?;
        }
        let fd = socket.as_raw_fd();
        let size = receive_buffer.min(i32::MAX as usize) as libc::c_int;
        if crate::sys::sockopt::set(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &size).is_err() {
            crate::sys::sockopt::set(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &size)?;
        }
        set_wait(fd, wait)?;
        let granted = socket.get_rx_buf_sz().unwrap_or(0);
        Ok(Events {
            socket,
            buf: Vec::with_capacity(RECV_BYTES),
            receive_buffer: granted,
        })
    }

    /// One datagram, or `Idle` after the wait, or `Overflow`. `nonblocking`: do not wait.
    pub fn recv(&mut self, nonblocking: bool) -> io::Result<Received<'_>> {
        self.buf.clear();
        let flags = if nonblocking { libc::MSG_DONTWAIT } else { 0 };
        match self.socket.recv(&mut self.buf, flags) {
            Ok(_) => Ok(Received::Datagram(&self.buf)),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(Received::Overflow),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(Received::Idle)
            }
            Err(e) => Err(e),
        }
    }
}

fn set_wait(fd: libc::c_int, wait: Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_usec: wait.subsec_micros() as libc::suseconds_t,
    };
    crate::sys::sockopt::set(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)
}

/// What a dump asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dump {
    Links,
    Addresses,
    Neighbors,
    Routes,
}

/// Dump one kind of object (both families), handing each part (a datagram of messages) to
/// `part`. A dump the kernel marks interrupted (the table changed under it) is started
/// again, up to a few times.
pub fn dump(what: Dump, mut part: impl FnMut(&[u8])) -> Result<(), String> {
    for _ in 0..5 {
        match dump_once(what, &mut part)? {
            true => return Ok(()),
            false => continue,
        }
    }
    Err(format!("the {what:?} dump was interrupted five times"))
}

/// One dump; `false` when the kernel marked it interrupted.
fn dump_once(what: Dump, part: &mut impl FnMut(&[u8])) -> Result<bool, String> {
    let err = |e: io::Error| format!("{what:?} dump: {e}");
    let mut socket = Socket::new(NETLINK_ROUTE).map_err(err)?;
    socket.bind_auto().map_err(err)?;
    set_wait(socket.as_raw_fd(), Duration::from_secs(10)).map_err(err)?;
    let request = match what {
        Dump::Links => RouteNetlinkMessage::GetLink(LinkMessage::default()),
        Dump::Addresses => RouteNetlinkMessage::GetAddress(AddressMessage::default()),
        Dump::Neighbors => RouteNetlinkMessage::GetNeighbour(NeighbourMessage::default()),
        Dump::Routes => RouteNetlinkMessage::GetRoute(RouteMessage::default()),
    };
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    header.sequence_number = 1;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(request));
    msg.finalize();
    let mut req = vec![0u8; msg.buffer_len()];
    msg.serialize(&mut req);
    socket
        .send_to(&req, &SocketAddr::new(0, 0), 0)
        .map_err(err)?;
    let mut buf = Vec::with_capacity(RECV_BYTES);
    let mut interrupted = false;
    loop {
        buf.clear();
        socket.recv(&mut buf, 0).map_err(err)?;
        // The end (NLMSG_DONE) or an error (NLMSG_ERROR) ends the dump; the flags of each
        // part say whether it was interrupted.
        let mut off = 0;
        let mut done = false;
        while off + 16 <= buf.len() {
            let len =
                u32::from_ne_bytes([buf[off], buf[off + 1], buf[off + 2], buf[off + 3]]) as usize;
            let kind = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
            let flags = u16::from_ne_bytes([buf[off + 6], buf[off + 7]]);
            if len < 16 || off + len > buf.len() {
                return Err(format!("{what:?} dump: a truncated message"));
            }
            interrupted |= flags & NLM_F_DUMP_INTR != 0;
            match kind {
                NLMSG_DONE => done = true,
                NLMSG_ERROR => {
                    let code = if len >= 20 {
                        i32::from_ne_bytes([
                            buf[off + 16],
                            buf[off + 17],
                            buf[off + 18],
                            buf[off + 19],
                        ])
                    } else {
                        0
                    };
                    if code != 0 {
                        return Err(format!(
                            "{what:?} dump: {}",
                            io::Error::from_raw_os_error(-code)
                        ));
                    }
                    done = true;
                }
                _ => {}
            }
            off += (len + 3) & !3;
        }
        part(&buf);
        if done {
            return Ok(!interrupted);
        }
    }
}

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
