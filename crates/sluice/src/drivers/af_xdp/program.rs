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
use crate::sys::bpf_asm::{Alu, Asm, Cond, Size, R0, R1, R2, R3, R4};

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

/// What the kernel must still see of an interface whose frames go to the sockets: ARP and
/// IPv6 neighbour discovery (router and neighbour solicitations and advertisements, and
/// redirects). A traffic generator's port needs it: its host answers for its address, as a
/// tester's kernel answers a router's ARP probes during a long run. A router's port does
/// not: sluice answers those itself.
pub fn host_neighbours_program(map_fd: i32) -> Result<Vec<Insn>, String> {
    let mut a = Asm::new();
    a.ldx(Size::W, R2, R1, 0) // data
        .ldx(Size::W, R3, R1, 4) // data_end
        .mov(R4, R2)
        .alu_imm(Alu::Add, R4, 55)
        .jmp(Cond::Gt, R4, R3, "short")
        .ldx(Size::H, R4, R2, 12) // the ethertype, in network order
        .jmp_imm(Cond::Eq, R4, i32::from(u16::from_be(0x0806)), "pass")
        .jmp_imm(Cond::Ne, R4, i32::from(u16::from_be(0x86dd)), "sockets")
        .ldx(Size::B, R4, R2, 20) // IPv6 next header
        .jmp_imm(Cond::Ne, R4, 58, "sockets")
        .ldx(Size::B, R4, R2, 54) // ICMPv6 type
        .jmp_imm(Cond::Lt, R4, 133, "sockets")
        .jmp_imm(Cond::Gt, R4, 137, "sockets")
        .label("pass")
        .mov_imm(R0, XDP_PASS)
        .exit();
    // Shorter than an ICMPv6 header after IPv6: an ARP frame (28 bytes after Ethernet) may
    // be; anything else goes to the sockets.
    a.label("short")
        .mov(R4, R2)
        .alu_imm(Alu::Add, R4, 14)
        .jmp(Cond::Gt, R4, R3, "sockets")
        .ldx(Size::H, R4, R2, 12)
        .jmp_imm(Cond::Eq, R4, i32::from(u16::from_be(0x0806)), "pass");
    a.label("sockets")
        .ldx(Size::W, R2, R1, 16) // ctx->rx_queue_index
        .ld_map(R1, map_fd)
        .mov_imm(R3, XDP_PASS)
        .call(HELPER_REDIRECT_MAP)
        .exit();
    a.finish()
}

/// Which program an interface gets.
#[derive(Clone, Copy)]
pub enum Program<'a> {
    /// Every frame to the sockets (`redirect_program`).
    Sockets,
    /// ARP and neighbour discovery to the kernel, the rest to the sockets.
    HostNeighbours,
    /// The fast path's (fastpath::program): offloaded flows sent on in the kernel.
    FastPath(&'a super::fastpath::FastPath),
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
pub fn attach(
    ifindex: u32,
    host: &str,
    queues: u32,
    force: Option<XdpMode>,
    program: Program<'_>,
) -> Result<Attachment, String> {
    let replaced = clear_leftover(ifindex, host)?;
    let map = map_create(MapKind::XskMap, 4, 4, queues.max(1))?;
    let insns = match program {
        Program::FastPath(fp) => {
            super::fastpath::program::fast_path_program(&fp.maps, map.raw_fd())?
        }
        Program::HostNeighbours => host_neighbours_program(map.raw_fd())?,
        Program::Sockets => redirect_program(map.raw_fd()),
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

    /// The action the program gives `frame` received on lo's queue 0.
    fn action(prog: &BpfFd, frame: &[u8]) -> u32 {
        use crate::sys::bpf::{prog_test_run_action, TestRun};
        let mut ctx = [0u8; 24];
        ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        ctx[12..16].copy_from_slice(&1u32.to_ne_bytes());
        let run = TestRun {
            data_in: frame,
            data_out: None,
            ctx_in: Some(&ctx),
            repeat: 1,
            flags: 0,
        };
        prog_test_run_action(prog, run).unwrap().0
    }

    #[test]
    fn a_generators_port_leaves_arp_and_neighbour_discovery_to_its_kernel() {
        // A devmap stands for the sockets: its redirect succeeds in a test run, where an
        // XSKMAP's would need a bound socket.
        let sockets = match map_create(MapKind::DevMap, 4, 4, 1) {
            Ok(m) => m,
            Err(e) if std::env::var_os("CI").is_none() && e.contains("CAP_BPF") => return,
            Err(e) => panic!("{e}"),
        };
        map_update(&sockets, &0u32.to_ne_bytes(), &1u32.to_ne_bytes()).unwrap();
        let insns = host_neighbours_program(sockets.raw_fd()).unwrap();
        let prog = load_xdp_program(&insns, "sluice_hn_test").unwrap();
        let (pass, sockets) = (XDP_PASS as u32, 4u32);
        let frame = |ethertype: [u8; 2], len: usize| {
            let mut f = vec![0u8; len];
            f[12..14].copy_from_slice(&ethertype);
            f
        };
        let icmp6 = |kind: u8| {
            let mut f = frame([0x86, 0xdd], 78);
            f[20] = 58;
            f[54] = kind;
            f
        };
        assert_eq!(
            action(&prog, &frame([0x08, 0x06], 42)),
            pass,
            "ARP, unpadded"
        );
        assert_eq!(action(&prog, &frame([0x08, 0x06], 60)), pass, "ARP");
        for kind in [133, 134, 135, 136, 137] {
            assert_eq!(action(&prog, &icmp6(kind)), pass, "ICMPv6 type {kind}");
        }
        for kind in [1, 3, 128, 129, 132, 138] {
            assert_eq!(action(&prog, &icmp6(kind)), sockets, "ICMPv6 type {kind}");
        }
        let mut udp6 = icmp6(135);
        udp6[20] = 17;
        assert_eq!(action(&prog, &udp6), sockets, "UDP over IPv6");
        assert_eq!(action(&prog, &frame([0x08, 0x00], 60)), sockets, "IPv4");
        assert_eq!(
            action(&prog, &frame([0x86, 0xdd], 54)),
            sockets,
            "IPv6, short"
        );
        assert_eq!(
            action(&prog, &frame([0x08, 0x00], 14)),
            sockets,
            "IPv4, a header only"
        );
    }
}
