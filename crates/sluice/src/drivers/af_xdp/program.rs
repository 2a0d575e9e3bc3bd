//! The XDP program that hands each receive queue's frames to that queue's AF_XDP socket, the
//! XSKMAP it looks them up in, and attaching it to an interface.
//!
//! The program is attached through a BPF link, so the kernel removes it when the daemon exits
//! or dies. A program named like ours that is attached the old way (netlink, which outlives
//! its process) is taken for a leftover of an earlier run and replaced.

use super::netlink::{self, Attached};
use crate::sys::bpf::{
    insn, link_xdp, load_map_fd, load_xdp_program, map_create, map_update, program_name, BpfFd,
    BpfMap, Insn, MapKind, ALU64_MOV_IMM, JMP_CALL, JMP_EXIT, LDX_MEM_W,
};

pub const PROGRAM_NAME: &str = "sluice_xsk";
const HELPER_REDIRECT_MAP: i32 = 51;
const XDP_PASS: i32 = 2;
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Where the program runs: in the driver (native) or after the kernel built an skb (generic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    Native,
    Generic,
}

impl XdpMode {
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        }
    }

    fn flags(self) -> u32 {
        match self {
            XdpMode::Native => XDP_FLAGS_DRV_MODE,
            XdpMode::Generic => XDP_FLAGS_SKB_MODE,
        }
    }
}

/// `return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)`: a queue with no socket
/// in the map passes its frames on to the kernel stack.
pub fn redirect_program(map_fd: i32) -> Vec<Insn> {
    let mut p = vec![insn(LDX_MEM_W, 2, 1, 16, 0)]; // r2 = ctx->rx_queue_index
    p.extend(load_map_fd(1, map_fd)); // r1 = xsks
    p.push(insn(ALU64_MOV_IMM, 3, 0, 0, XDP_PASS)); // r3 = fallback action
    p.push(insn(JMP_CALL, 0, 0, 0, HELPER_REDIRECT_MAP));
    p.push(insn(JMP_EXIT, 0, 0, 0, 0));
    p
}

/// The program attached to one interface; dropping it detaches the program.
pub struct Attachment {
    pub map: BpfMap,
    _prog: BpfFd,
    _link: BpfFd,
    pub mode: XdpMode,
    /// What was done about an earlier program, for the log and `show interface`.
    pub replaced: Option<String>,
}

impl Attachment {
    /// Put socket `xsk_fd` in the map for receive queue `queue`.
    pub fn add_socket(&self, queue: u32, xsk_fd: i32) -> Result<(), String> {
        map_update(
            &self.map,
            &queue.to_ne_bytes(),
            &(xsk_fd as u32).to_ne_bytes(),
        )
        .map_err(|e| format!("adding queue {queue} to the XSKMAP: {e}"))
    }
}

/// Remove a leftover sluice program attached by netlink; refuse to touch anyone else's.
fn clear_leftover(ifindex: u32, host: &str) -> Result<Option<String>, String> {
    let state = netlink::xdp_state(ifindex)
        .map_err(|e| format!("reading the XDP state of '{host}': {e}"))?;
    if state.attached == Attached::None || state.prog_id == 0 {
        return Ok(None);
    }
    let name = program_name(state.prog_id).unwrap_or_else(|_| "?".into());
    if name != PROGRAM_NAME {
        return Err(format!(
            "'{host}' already has XDP program '{name}' (id {}); remove it first (ip link set dev {host} xdp off)",
            state.prog_id
        ));
    }
    let flags = match state.attached {
        Attached::Generic => XDP_FLAGS_SKB_MODE,
        _ => XDP_FLAGS_DRV_MODE,
    };
    match netlink::set_xdp_fd(ifindex, -1, flags) {
        Ok(()) => Ok(Some(format!(
            "replaced a leftover {PROGRAM_NAME} program (id {}) from an earlier run",
            state.prog_id
        ))),
        // A link-attached program cannot be removed by netlink: a live process holds it.
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Err(format!(
            "'{host}' is in use by another running sluice (its {PROGRAM_NAME} program, id {}, is attached)",
            state.prog_id
        )),
        Err(e) => Err(format!(
            "cannot remove the leftover {PROGRAM_NAME} program (id {}) from '{host}': {e}",
            state.prog_id
        )),
    }
}

/// Load the program with an XSKMAP of `queues` entries and attach it to `ifindex`:
/// in `force` mode, or native first and generic when the driver has no native XDP.
/// With `fast_path`, the program is the fast path's (fastpath::program), which sends the
/// frames of offloaded flows on in the kernel and the rest to the sockets.
pub fn attach(
    ifindex: u32,
    host: &str,
    queues: u32,
    force: Option<XdpMode>,
    fast_path: Option<&super::fastpath::FastPath>,
) -> Result<Attachment, String> {
    let replaced = clear_leftover(ifindex, host)?;
    let map = map_create(MapKind::XskMap, 4, 4, queues.max(1))?;
    let insns = match fast_path {
        Some(fp) => super::fastpath::program::fast_path_program(&fp.maps, map.raw_fd())?,
        None => redirect_program(map.raw_fd()),
    };
    let prog = load_xdp_program(&insns, PROGRAM_NAME)?;
    let modes: &[XdpMode] = match force {
        Some(XdpMode::Native) => &[XdpMode::Native],
        Some(XdpMode::Generic) => &[XdpMode::Generic],
        None => &[XdpMode::Native, XdpMode::Generic],
    };
    let mut last = String::new();
    for &mode in modes {
        match link_xdp(&prog, ifindex, mode.flags()) {
            Ok(link) => {
                return Ok(Attachment {
                    map,
                    _prog: prog,
                    _link: link,
                    mode,
                    replaced,
                })
            }
            Err(e) => {
                last = match e.raw_os_error() {
                    Some(libc::EBUSY) | Some(libc::EEXIST) => format!(
                        "'{host}' already has an XDP program in {} mode: {e}",
                        mode.name()
                    ),
                    // veth refuses native XDP while its peer's MTU exceeds a page's worth.
                    Some(libc::ERANGE) => format!(
                        "the kernel refused {} XDP on '{host}': {e} (on a veth, the peer's MTU must be at most about 3500; lower it or set xdp-mode = \"generic\")",
                        mode.name()
                    ),
                    _ => format!(
                        "the kernel refused {} XDP on '{host}': {e}",
                        mode.name()
                    ),
                }
            }
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::bpf::{BPF_PSEUDO_MAP_FD, LD_IMM64};

    #[test]
    fn redirect_program_shape() {
        let p = redirect_program(9);
        assert_eq!(p.len(), 6);
        assert_eq!((p[0].code, p[0].off), (LDX_MEM_W, 16));
        assert_eq!(
            (p[1].code, p[1].regs >> 4, p[1].imm),
            (LD_IMM64, BPF_PSEUDO_MAP_FD, 9)
        );
        assert_eq!(p[3].imm, XDP_PASS);
        assert_eq!((p[4].code, p[4].imm), (JMP_CALL, HELPER_REDIRECT_MAP));
        assert_eq!(p[5].code, JMP_EXIT);
    }
}
