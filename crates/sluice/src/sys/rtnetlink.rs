//! Just enough rtnetlink (NETLINK_ROUTE) for the drivers: requests about one link
//! (RTM_GETLINK, RTM_SETLINK), a socket subscribed to link notifications (RTMGRP_LINK), and
//! a parser for the RTM_NEWLINK / RTM_DELLINK messages both bring.
//!
//! A message is a 16-byte `nlmsghdr` (length, type, flags, sequence, port id) followed, for
//! links, by a 16-byte `ifinfomsg` (family, type, index, flags, change) and attributes.

use std::io;

const NETLINK_ROUTE: libc::c_int = 0;
pub const RTM_NEWLINK: u16 = 16;
pub const RTM_DELLINK: u16 = 17;
pub const RTM_GETLINK: u16 = 18;
pub const RTM_SETLINK: u16 = 19;
const NLMSG_ERROR: u16 = 2;
pub const NLM_F_REQUEST: u16 = 1;
pub const NLM_F_ACK: u16 = 4;
/// Multicast group of link changes (RTNLGRP_LINK as a bit of the legacy group mask).
const RTMGRP_LINK: u32 = 1;
pub const NLA_F_NESTED: u16 = 1 << 15;
const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | (1 << 14));
const IFLA_IFNAME: u16 = 3;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_STATS64: u16 = 23;
/// Where `tx_packets` and `tx_dropped` are in struct rtnl_link_stats64 (its second and
/// eighth u64).
const STATS64_TX_PACKETS: usize = 8;
const STATS64_TX_DROPPED: usize = 56;
/// Bytes of nlmsghdr + ifinfomsg, where a link message's attributes begin.
pub const LINK_HEADER: usize = 32;

/// An owned NETLINK_ROUTE socket.
pub struct Socket(libc::c_int);

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

impl Socket {
    /// A socket for requests; a kernel that never answers times out after 2 s instead of
    /// hanging the caller.
    pub fn open() -> io::Result<Socket> {
        let s = Socket::raw()?;
        s.set_receive_timeout(std::time::Duration::from_secs(2))?;
        Ok(s)
    }

    /// A socket that receives every link change in this network namespace.
    pub fn link_events() -> io::Result<Socket> {
        let s = Socket::raw()?;
        // SAFETY: sockaddr_nl is plain data; all-zero is valid (port id 0: the kernel picks).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        sa.nl_groups = RTMGRP_LINK;
        // SAFETY: `sa` is a valid sockaddr_nl of the size passed.
        let rc = unsafe {
            libc::bind(
                s.0,
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // A larger queue rides out a burst of changes (many veths created at once); when it
        // still overflows, recv says ENOBUFS and the reader asks for the state again.
        let size: libc::c_int = 1 << 20;
        // SAFETY: `size` is a live c_int and its size is passed.
        unsafe {
            libc::setsockopt(
                s.0,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &size as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        Ok(s)
    }

    fn raw() -> io::Result<Socket> {
        // SAFETY: plain socket creation; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Socket(fd))
    }

    /// How long `recv` waits before it fails with WouldBlock.
    pub fn set_receive_timeout(&self, t: std::time::Duration) -> io::Result<()> {
        let tv = libc::timeval {
            tv_sec: t.as_secs() as libc::time_t,
            tv_usec: t.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: `tv` is a live timeval and its size is passed.
        let rc = unsafe {
            libc::setsockopt(
                self.0,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const libc::timeval as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn send(&self, req: &[u8]) -> io::Result<()> {
        // SAFETY: sends `req`'s bytes; the kernel reads exactly that many.
        let rc = unsafe { libc::send(self.0, req.as_ptr() as *const libc::c_void, req.len(), 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receive one datagram (one or more messages) into `buf`; returns its length.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: receives into `buf`, whose length bounds the write.
        let n = unsafe { libc::recv(self.0, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Send a request and return the first datagram of the answer.
    pub fn exchange(&self, req: &[u8]) -> io::Result<Vec<u8>> {
        self.send(req)?;
        let mut buf = vec![0u8; 65536];
        let n = self.recv(&mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }
}

/// Append attribute `kind` with `payload`, padded to 4 bytes.
pub fn push_attr(msg: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    msg.extend_from_slice(&(len as u16).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(payload);
    while !msg.len().is_multiple_of(4) {
        msg.push(0);
    }
}

/// A link message: header + ifinfomsg for `ifindex` with `flags` (IFF_*) + `attrs`.
pub fn link_message(
    kind: u16,
    nl_flags: u16,
    ifindex: u32,
    if_flags: u32,
    attrs: &[u8],
) -> Vec<u8> {
    let mut m = vec![0u8; LINK_HEADER];
    m[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    m[24..28].copy_from_slice(&if_flags.to_ne_bytes());
    m.extend_from_slice(attrs);
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m[4..6].copy_from_slice(&kind.to_ne_bytes());
    m[6..8].copy_from_slice(&nl_flags.to_ne_bytes());
    m[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence
    m
}

/// A request about link `ifindex`.
pub fn request(kind: u16, flags: u16, ifindex: u32, attrs: &[u8]) -> Vec<u8> {
    link_message(kind, NLM_F_REQUEST | flags, ifindex, 0, attrs)
}

/// RTM_NEWADDR: put an address on a link.
pub const RTM_NEWADDR: u16 = 20;
/// RTM_DELADDR: take one off.
pub const RTM_DELADDR: u16 = 21;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_REPLACE: u16 = 0x100;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;

/// A request that puts `addr/len` on link `ifindex` (an existing one is kept), acked:
/// nlmsghdr + ifaddrmsg (family, prefix length, flags, scope, index) + IFA_LOCAL and
/// IFA_ADDRESS.
pub fn address_request(ifindex: u32, addr: std::net::IpAddr, len: u8) -> Vec<u8> {
    let (family, bytes) = match addr {
        std::net::IpAddr::V4(a) => (libc::AF_INET as u8, a.octets().to_vec()),
        std::net::IpAddr::V6(a) => (libc::AF_INET6 as u8, a.octets().to_vec()),
    };
    let mut m = vec![0u8; 16 + 8];
    m[16] = family;
    m[17] = len;
    m[20..24].copy_from_slice(&ifindex.to_ne_bytes());
    push_attr(&mut m, IFA_LOCAL, &bytes);
    push_attr(&mut m, IFA_ADDRESS, &bytes);
    let total = m.len() as u32;
    m[0..4].copy_from_slice(&total.to_ne_bytes());
    m[4..6].copy_from_slice(&RTM_NEWADDR.to_ne_bytes());
    let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    m[6..8].copy_from_slice(&flags.to_ne_bytes());
    m[8..12].copy_from_slice(&1u32.to_ne_bytes());
    m
}

/// Put `addr/len` on link `ifindex` in this thread's network namespace.
pub fn add_address(ifindex: u32, addr: std::net::IpAddr, len: u8) -> io::Result<()> {
    exchange_address(&address_request(ifindex, addr, len))
}

/// Take `addr/len` off link `ifindex` in this thread's network namespace.
pub fn delete_address(ifindex: u32, addr: std::net::IpAddr, len: u8) -> io::Result<()> {
    let mut m = address_request(ifindex, addr, len);
    m[4..6].copy_from_slice(&RTM_DELADDR.to_ne_bytes());
    m[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    exchange_address(&m)
}

fn exchange_address(request: &[u8]) -> io::Result<()> {
    let s = Socket::open()?;
    let answer = s.exchange(request)?;
    let code = messages(&answer).next().and_then(error_of);
    match code {
        Some(0) => Ok(()),
        Some(e) => Err(io::Error::from_raw_os_error(-e)),
        None => Err(io::Error::other("no answer from the kernel")),
    }
}

pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Iterate the attributes in `b`: (type, payload). A truncated attribute ends the walk.
pub fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let len = u16_at(b, at)? as usize;
        let kind = u16_at(b, at + 2)? & NLA_TYPE_MASK;
        if len < 4 || at + len > b.len() {
            return None;
        }
        let payload = &b[at + 4..at + len];
        at += len.div_ceil(4) * 4;
        Some((kind, payload))
    })
}

/// The messages of one datagram, each whole (header included). A length that does not fit
/// ends the walk.
pub fn messages(b: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let len = u32_at(b, at)? as usize;
        if len < 16 || at + len > b.len() {
            return None;
        }
        let m = &b[at..at + len];
        at += len.div_ceil(4) * 4;
        Some(m)
    })
}

/// The error a netlink error message carries (0 = success, an ack).
pub fn error_of(msg: &[u8]) -> Option<i32> {
    (u16_at(msg, 4)? == NLMSG_ERROR).then(|| u32_at(msg, 16).map(|e| e as i32))?
}

/// What a RTM_NEWLINK or RTM_DELLINK message says of a link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkMessage {
    /// RTM_DELLINK: the device is gone (deleted, or moved to another namespace).
    pub deleted: bool,
    pub ifindex: u32,
    /// IFF_* flags: IFF_UP is the administrative state, IFF_LOWER_UP the carrier.
    pub flags: u32,
    pub name: Option<String>,
    /// IFLA_OPERSTATE (RFC 2863: 2 down, 5 dormant, 6 up, 7 lower layer down...).
    pub operstate: Option<u8>,
    /// IFLA_STATS64's tx_packets and tx_dropped: frames the kernel sent on the device, and
    /// those it could not send.
    pub tx_packets: Option<u64>,
    pub tx_dropped: Option<u64>,
}

/// Parse one message; `None` for anything that is not a well-formed link message.
pub fn parse_link(msg: &[u8]) -> Option<LinkMessage> {
    let kind = u16_at(msg, 4)?;
    if kind != RTM_NEWLINK && kind != RTM_DELLINK {
        return None;
    }
    let len = (u32_at(msg, 0)? as usize).min(msg.len());
    if len < LINK_HEADER {
        return None;
    }
    let mut m = LinkMessage {
        deleted: kind == RTM_DELLINK,
        ifindex: u32_at(msg, 20)?,
        flags: u32_at(msg, 24)?,
        name: None,
        operstate: None,
        tx_packets: None,
        tx_dropped: None,
    };
    for (k, p) in attrs(&msg[LINK_HEADER..len]) {
        match k {
            IFLA_IFNAME => {
                let end = p.iter().position(|&c| c == 0).unwrap_or(p.len());
                m.name = Some(String::from_utf8_lossy(&p[..end]).into_owned());
            }
            IFLA_OPERSTATE => m.operstate = p.first().copied(),
            IFLA_STATS64 => {
                let at = |at: usize| {
                    p.get(at..at + 8)
                        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default()))
                };
                m.tx_packets = at(STATS64_TX_PACKETS);
                m.tx_dropped = at(STATS64_TX_DROPPED);
            }
            _ => {}
        }
    }
    Some(m)
}

/// The current state of link `ifindex`; `None` when there is no such link.
pub fn get_link(ifindex: u32) -> io::Result<Option<LinkMessage>> {
    let s = Socket::open()?;
    let reply = s.exchange(&request(RTM_GETLINK, 0, ifindex, &[]))?;
    match error_of(&reply) {
        Some(e) if -e == libc::ENODEV => return Ok(None),
        Some(e) if e != 0 => return Err(io::Error::from_raw_os_error(-e)),
        _ => {}
    }
    parse_link(&reply)
        .map(Some)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed netlink reply"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(kind: u16, ifindex: u32, flags: u32, name: &str, oper: u8) -> Vec<u8> {
        let mut a = Vec::new();
        let mut n = name.as_bytes().to_vec();
        n.push(0);
        push_attr(&mut a, IFLA_IFNAME, &n);
        push_attr(&mut a, 4, &1500u32.to_ne_bytes()); // IFLA_MTU, skipped
        push_attr(&mut a, IFLA_OPERSTATE, &[oper]);
        link_message(kind, 0, ifindex, flags, &a)
    }

    #[test]
    fn a_links_state_comes_with_its_tx_drops() {
        let lo = get_link(1).unwrap().expect("lo in every namespace");
        assert_eq!(lo.name.as_deref(), Some("lo"));
        assert!(lo.tx_dropped.is_some() && lo.tx_packets.is_some(), "{lo:?}");
    }

    #[test]
    fn parses_new_and_deleted_links() {
        let up = (libc::IFF_UP | libc::IFF_LOWER_UP) as u32;
        let m = parse_link(&link(RTM_NEWLINK, 7, up, "d2", 6)).unwrap();
        assert_eq!(
            m,
            LinkMessage {
                deleted: false,
                ifindex: 7,
                flags: up,
                name: Some("d2".into()),
                operstate: Some(6),
                tx_packets: None,
                tx_dropped: None,
            }
        );
        let d = parse_link(&link(RTM_DELLINK, 7, 0, "d2", 2)).unwrap();
        assert!(d.deleted);
        // Not a link message, too short, an error.
        assert!(parse_link(&request(RTM_GETLINK, 0, 1, &[])[..20]).is_none());
        assert!(parse_link(&[0u8; 8]).is_none());
        let mut err = vec![0u8; 36];
        err[0..4].copy_from_slice(&36u32.to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[16..20].copy_from_slice(&(-libc::ENODEV).to_ne_bytes());
        assert!(parse_link(&err).is_none());
        assert_eq!(error_of(&err), Some(-libc::ENODEV));
    }

    #[test]
    fn walks_every_message_of_a_datagram_and_stops_at_a_bad_length() {
        let mut dgram = link(RTM_NEWLINK, 3, 0, "a", 2);
        dgram.extend(link(RTM_DELLINK, 4, 0, "bb", 2));
        let names: Vec<_> = messages(&dgram)
            .filter_map(parse_link)
            .map(|m| (m.ifindex, m.deleted))
            .collect();
        assert_eq!(names, vec![(3, false), (4, true)]);
        // A length past the end ends the walk rather than reading outside.
        let n = dgram.len();
        dgram[0..4].copy_from_slice(&(n as u32 + 100).to_ne_bytes());
        assert_eq!(messages(&dgram).count(), 0);
        // A truncated attribute ends the attribute walk, not the parse.
        let mut t = link(RTM_NEWLINK, 9, 0, "xyz", 2);
        t[LINK_HEADER] = 0xff;
        assert_eq!(parse_link(&t).unwrap().name, None);
    }

    #[test]
    fn asks_the_kernel_about_loopback_and_a_missing_link() {
        let lo = crate::drivers::af_packet::netdev::index("lo").unwrap();
        let m = get_link(lo).unwrap().unwrap();
        assert_eq!(m.name.as_deref(), Some("lo"));
        assert_eq!(m.ifindex, lo);
        assert!(get_link(u32::MAX >> 1).unwrap().is_none());
    }
}
