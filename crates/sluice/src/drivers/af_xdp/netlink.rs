//! Which XDP program an interface has, and removing a stale one: RTM_GETLINK for the
//! IFLA_XDP attributes and RTM_SETLINK with IFLA_XDP_FD = -1 (over the shared rtnetlink
//! module).

use crate::sys::rtnetlink::{
    attrs, error_of, push_attr, request, u16_at, u32_at, Socket, LINK_HEADER, NLA_F_NESTED,
    NLM_F_ACK, RTM_GETLINK, RTM_NEWLINK, RTM_SETLINK,
};
use std::io;

const IFLA_XDP: u16 = 43;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_ATTACHED: u16 = 2;
const IFLA_XDP_FLAGS: u16 = 3;
const IFLA_XDP_PROG_ID: u16 = 4;

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

/// Parse an RTM_NEWLINK reply into the XDP state.
pub fn parse_link_reply(reply: &[u8]) -> io::Result<XdpState> {
    if let Some(err) = error_of(reply) {
        return Err(io::Error::from_raw_os_error(-err));
    }
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed netlink reply");
    let len = u32_at(reply, 0).ok_or_else(bad)? as usize;
    if u16_at(reply, 4) != Some(RTM_NEWLINK) || len > reply.len() || len < LINK_HEADER {
        return Err(bad());
    }
    let mut state = XdpState {
        attached: Attached::None,
        prog_id: 0,
    };
    for (kind, payload) in attrs(&reply[LINK_HEADER..len]) {
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
    let s = Socket::open()?;
    let reply = s.exchange(&request(RTM_GETLINK, 0, ifindex, &[]))?;
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
    let s = Socket::open()?;
    let reply = s.exchange(&request(RTM_SETLINK, NLM_F_ACK, ifindex, &outer))?;
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
        err[4..6].copy_from_slice(&2u16.to_ne_bytes()); // NLMSG_ERROR
        err[16..20].copy_from_slice(&(-libc::ENODEV).to_ne_bytes());
        assert_eq!(
            parse_link_reply(&err).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        assert!(parse_link_reply(&[1, 2, 3]).is_err());
    }
}
