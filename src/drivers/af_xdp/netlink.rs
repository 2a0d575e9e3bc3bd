//! Just enough rtnetlink to see which XDP program an interface has and to remove a stale one:
//! RTM_GETLINK for the IFLA_XDP attributes and RTM_SETLINK with IFLA_XDP_FD = -1.

use std::io;

const NETLINK_ROUTE: libc::c_int = 0;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_SETLINK: u16 = 19;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const IFLA_XDP: u16 = 43;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_ATTACHED: u16 = 2;
const IFLA_XDP_FLAGS: u16 = 3;
const IFLA_XDP_PROG_ID: u16 = 4;
const NLA_F_NESTED: u16 = 1 << 15;
const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | (1 << 14));

/// How an attached program runs (IFLA_XDP_ATTACHED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attached {
    None,
    Native,
    Generic,
    Offload,
    Multi,
}

/// What the kernel reports of an interface's XDP program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XdpState {
    pub attached: Attached,
    pub prog_id: u32,
}

struct Socket(libc::c_int);

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

fn open() -> io::Result<Socket> {
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
    let s = Socket(fd);
    // A receive timeout keeps a kernel that never answers from hanging the daemon.
    let tv = libc::timeval {
        tv_sec: 2,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a live timeval and its size is passed.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const libc::timeval as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    Ok(s)
}

fn push_attr(msg: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    msg.extend_from_slice(&(len as u16).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(payload);
    while !msg.len().is_multiple_of(4) {
        msg.push(0);
    }
}

/// A request: header + ifinfomsg for `ifindex` + `attrs`.
fn request(kind: u16, flags: u16, ifindex: u32, attrs: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 16];
    m.extend_from_slice(&[0u8; 16]); // ifinfomsg
    m[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    m.extend_from_slice(attrs);
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    m[4..6].copy_from_slice(&kind.to_ne_bytes());
    m[6..8].copy_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    m[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence
    m
}

fn exchange(s: &Socket, req: &[u8]) -> io::Result<Vec<u8>> {
    // SAFETY: sends `req`'s bytes; the kernel reads exactly that many.
    let rc = unsafe { libc::send(s.0, req.as_ptr() as *const libc::c_void, req.len(), 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 65536];
    // SAFETY: receives into `buf`, whose length bounds the write.
    let n = unsafe { libc::recv(s.0, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Iterate the attributes in `b`: (type, payload).
fn attrs(b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
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

/// The error a netlink error message carries (0 = success, an ack).
fn error_of(reply: &[u8]) -> Option<i32> {
    (u16_at(reply, 4)? == NLMSG_ERROR).then(|| u32_at(reply, 16).map(|e| e as i32))?
}

/// Parse an RTM_NEWLINK reply into the XDP state.
pub fn parse_link_reply(reply: &[u8]) -> io::Result<XdpState> {
    if let Some(err) = error_of(reply) {
        return Err(io::Error::from_raw_os_error(-err));
    }
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed netlink reply");
    let len = u32_at(reply, 0).ok_or_else(bad)? as usize;
    if u16_at(reply, 4) != Some(RTM_NEWLINK) || len > reply.len() || len < 32 {
        return Err(bad());
    }
    let mut state = XdpState {
        attached: Attached::None,
        prog_id: 0,
    };
    for (kind, payload) in attrs(&reply[32..len]) {
        if kind != IFLA_XDP {
            continue;
        }
        for (k, p) in attrs(payload) {
            match k {
                IFLA_XDP_ATTACHED => {
                    state.attached = match p.first() {
                        Some(1) => Attached::Native,
                        Some(2) => Attached::Generic,
                        Some(3) => Attached::Offload,
                        Some(4) => Attached::Multi,
                        _ => Attached::None,
                    }
                }
                IFLA_XDP_PROG_ID => state.prog_id = u32_at(p, 0).unwrap_or(0),
                _ => {}
            }
        }
    }
    Ok(state)
}

/// Which XDP program interface `ifindex` has.
pub fn xdp_state(ifindex: u32) -> io::Result<XdpState> {
    let s = open()?;
    let reply = exchange(&s, &request(RTM_GETLINK, 0, ifindex, &[]))?;
    parse_link_reply(&reply)
}

/// Attach (`prog_fd` >= 0) or remove (`-1`) the netlink-attached XDP program of the given
/// mode (XDP_FLAGS_SKB_MODE or XDP_FLAGS_DRV_MODE).
pub fn set_xdp_fd(ifindex: u32, prog_fd: i32, mode_flags: u32) -> io::Result<()> {
    let mut inner = Vec::new();
    push_attr(&mut inner, IFLA_XDP_FD, &prog_fd.to_ne_bytes());
    push_attr(&mut inner, IFLA_XDP_FLAGS, &mode_flags.to_ne_bytes());
    let mut outer = Vec::new();
    push_attr(&mut outer, IFLA_XDP | NLA_F_NESTED, &inner);
    let s = open()?;
    let reply = exchange(&s, &request(RTM_SETLINK, NLM_F_ACK, ifindex, &outer))?;
    match error_of(&reply) {
        Some(0) => Ok(()),
        Some(e) => Err(io::Error::from_raw_os_error(-e)),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "netlink: no acknowledgement",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_xdp_attributes_and_errors() {
        let mut inner = Vec::new();
        push_attr(&mut inner, IFLA_XDP_ATTACHED, &[1]);
        push_attr(&mut inner, IFLA_XDP_PROG_ID, &77u32.to_ne_bytes());
        let mut attrs_ = Vec::new();
        push_attr(&mut attrs_, 3, b"d0\0"); // IFLA_IFNAME, skipped
        push_attr(&mut attrs_, IFLA_XDP | NLA_F_NESTED, &inner);
        let mut reply = request(RTM_NEWLINK, 0, 5, &attrs_);
        assert_eq!(
            parse_link_reply(&reply).unwrap(),
            XdpState {
                attached: Attached::Native,
                prog_id: 77
            }
        );
        // A truncated attribute ends the walk instead of reading past the message.
        let n = reply.len();
        reply[32 + 8] = 0xff;
        assert!(parse_link_reply(&reply[..n]).is_ok());
        // An error reply becomes that errno.
        let mut err = vec![0u8; 36];
        err[0..4].copy_from_slice(&36u32.to_ne_bytes());
        err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        err[16..20].copy_from_slice(&(-libc::ENODEV).to_ne_bytes());
        assert_eq!(
            parse_link_reply(&err).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        assert!(parse_link_reply(&[1, 2, 3]).is_err());
    }
}
