//! A transmit-only engine for the generator: the kernel's XDP "live frames" test mode
//! (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18+). The kernel builds frames from
//! one template and runs a tiny XDP program on each, which answers XDP_TX, so the frame goes
//! out of the interface named in the context — millions per second from one thread, several
//! times what AF_PACKET can send on a veth.
//!
//! The kernel recycles the frames' pages without copying the template in again, and a DUT
//! that forwards in the kernel (a router rewriting MACs and TTL) writes into those pages, so
//! the program writes the first 42 bytes (Ethernet, IPv4, UDP headers) back on every run.
//!
//! Frames sent this way into a veth are dropped unless the peer receives in NAPI mode (an
//! XDP program attached there, or GRO on): the lab turns GRO on at the DUT's port.

use std::io;

const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_int = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
/// ld_imm64's source register value that makes the immediate a map file descriptor.
const BPF_PSEUDO_MAP_FD: u8 = 1;
const HELPER_MAP_LOOKUP_ELEM: i32 = 1;
const HELPER_KTIME_GET_NS: i32 = 5;
const BPF_PROG_TEST_RUN: libc::c_int = 10;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
const XDP_DROP: i32 = 1;
const XDP_TX: i32 = 3;
/// Bytes of header the program writes back on every run.
pub const HEADER_LEN: usize = 42;

/// One BPF instruction (struct bpf_insn).
#[derive(Clone, Copy)]
#[repr(C)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | (dst & 0xf),
        off,
        imm,
    }
}

// Instruction classes and modes used here (see the kernel's bpf_common.h / bpf.h).
const LDX_MEM_W: u8 = 0x61;
const ST_MEM_W: u8 = 0x62;
const ST_MEM_H: u8 = 0x6a;
const ALU64_MOV_REG: u8 = 0xbf;
const ALU64_MOV_IMM: u8 = 0xb7;
const ALU64_ADD_IMM: u8 = 0x07;
const JMP_JGT_REG: u8 = 0x2d;
const JMP_EXIT: u8 = 0x95;
const LD_IMM64: u8 = 0x18;
const LDX_MEM_DW: u8 = 0x79;
const STX_MEM_DW: u8 = 0x7b;
const ST_MEM_W_: u8 = ST_MEM_W;
const ALU64_ADD_REG: u8 = 0x0f;
const JMP_JEQ_IMM: u8 = 0x15;
const JMP_JLT_REG: u8 = 0xad;
const JMP_JGE_REG: u8 = 0x3d;
const JMP_CALL: u8 = 0x85;

/// The pacing state shared with the program (one array-map value):
/// next frame's due time (ns, CLOCK_MONOTONIC), the interval between frames, frames sent.
const STATE_SIZE: u32 = 24;

/// The XDP program. The kernel runs it as fast as it can; it transmits a frame only when one is
/// due, which paces the output smoothly (a run of the kernel's loop costs far less than a
/// transmit), and otherwise answers XDP_DROP, which sends nothing:
///
/// ```text
/// state = map[0]; now = ktime_get_ns()
/// if now < state.next_due: drop
/// state.next_due = max(state.next_due + state.interval, now); state.sent += 1
/// write the header template into the frame; transmit
/// ```
/// Catching up to `now` after a stall means no burst of missed frames follows it.
fn program(header: &[u8; HEADER_LEN], map_fd: i32) -> Vec<Insn> {
    let mut p = vec![
        insn(ALU64_MOV_REG, 6, 1, 0, 0),  // r6 = ctx
        insn(ST_MEM_W_, 10, 0, -4, 0),    // key = 0 on the stack
        insn(ALU64_MOV_REG, 2, 10, 0, 0), // r2 = &key
        insn(ALU64_ADD_IMM, 2, 0, 0, -4),
        insn(LD_IMM64, 1, BPF_PSEUDO_MAP_FD, 0, map_fd), // r1 = map
        insn(0, 0, 0, 0, 0),
        insn(JMP_CALL, 0, 0, 0, HELPER_MAP_LOOKUP_ELEM),
    ];
    // Branches to the drop return are patched once its position is known.
    let mut to_drop = vec![p.len()];
    p.push(insn(JMP_JEQ_IMM, 0, 0, 0, 0)); // if r0 == NULL drop
    p.extend([
        insn(ALU64_MOV_REG, 7, 0, 0, 0), // r7 = state
        insn(JMP_CALL, 0, 0, 0, HELPER_KTIME_GET_NS),
        insn(LDX_MEM_DW, 1, 7, 0, 0), // r1 = next_due
    ]);
    to_drop.push(p.len());
    p.push(insn(JMP_JLT_REG, 0, 1, 0, 0)); // if now < next_due drop
    p.extend([
        insn(LDX_MEM_DW, 2, 7, 8, 0),    // r2 = interval
        insn(ALU64_ADD_REG, 1, 2, 0, 0), // r1 += interval
        insn(JMP_JGE_REG, 1, 0, 1, 0),   // if r1 >= now skip the catch-up
        insn(ALU64_MOV_REG, 1, 0, 0, 0), // r1 = now
        insn(STX_MEM_DW, 7, 1, 0, 0),    // next_due = r1
        insn(LDX_MEM_DW, 1, 7, 16, 0),   // sent += 1 (one thread runs the program)
        insn(ALU64_ADD_IMM, 1, 0, 0, 1),
        insn(STX_MEM_DW, 7, 1, 16, 0),
        insn(LDX_MEM_W, 2, 6, 0, 0), // r2 = ctx->data
        insn(LDX_MEM_W, 3, 6, 4, 0), // r3 = ctx->data_end
        insn(ALU64_MOV_REG, 4, 2, 0, 0),
        insn(ALU64_ADD_IMM, 4, 0, 0, HEADER_LEN as i32),
    ]);
    to_drop.push(p.len());
    p.push(insn(JMP_JGT_REG, 4, 3, 0, 0)); // if data + 42 > data_end drop
    for w in 0..HEADER_LEN / 4 {
        let b = &header[w * 4..w * 4 + 4];
        // Stores take the immediate in host order; the bytes land as they are in memory.
        let imm = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        p.push(insn(ST_MEM_W, 2, 0, (w * 4) as i16, imm));
    }
    let tail = u16::from_ne_bytes([header[40], header[41]]);
    p.push(insn(ST_MEM_H, 2, 0, 40, tail as i32));
    p.push(insn(ALU64_MOV_IMM, 0, 0, 0, XDP_TX));
    p.push(insn(JMP_EXIT, 0, 0, 0, 0));
    let drop_at = p.len();
    p.push(insn(ALU64_MOV_IMM, 0, 0, 0, XDP_DROP));
    p.push(insn(JMP_EXIT, 0, 0, 0, 0));
    for at in to_drop {
        p[at].off = (drop_at - at - 1) as i16;
    }
    p
}

fn bpf(cmd: libc::c_int, attr: &mut [u8]) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a zero-padded buffer laid out as the union bpf_attr member this
    // command reads, and its length is passed so the kernel reads no further.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

/// A loaded program bound to one frame and one interface.
pub struct LiveFrames {
    prog_fd: libc::c_int,
    map_fd: libc::c_int,
    frame: Vec<u8>,
    ifindex: u32,
}

fn map_key_value(map_fd: libc::c_int, key: &u32, value: *mut u8) -> [u8; 32] {
    let mut attr = [0u8; 32];
    put_u32(&mut attr, 0, map_fd as u32);
    put_u64(&mut attr, 8, key as *const u32 as u64);
    put_u64(&mut attr, 16, value as u64);
    attr
}

impl LiveFrames {
    /// Load the program for `frame` (at least 60 bytes), to be sent out of `ifindex`.
    pub fn new(frame: &[u8], ifindex: u32) -> Result<LiveFrames, String> {
        if frame.len() < 60 || frame.len() > 4096 - 256 - 320 {
            return Err(format!(
                "xdp engine: frame of {} bytes not supported (60..3520)",
                frame.len()
            ));
        }
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&frame[..HEADER_LEN]);
        let mut mattr = [0u8; 64];
        put_u32(&mut mattr, 0, BPF_MAP_TYPE_ARRAY);
        put_u32(&mut mattr, 4, 4);
        put_u32(&mut mattr, 8, STATE_SIZE);
        put_u32(&mut mattr, 12, 1);
        let map_fd = bpf(BPF_MAP_CREATE, &mut mattr).map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) => {
                "xdp engine needs CAP_BPF and CAP_NET_ADMIN (run as root)".to_string()
            }
            _ => format!("xdp engine: creating its map failed: {e}"),
        })? as libc::c_int;
        let insns = program(&header, map_fd);
        let license = b"GPL\0";
        let mut log = vec![0u8; 65536];
        let mut attr = [0u8; 128];
        put_u32(&mut attr, 0, BPF_PROG_TYPE_XDP);
        put_u32(&mut attr, 4, insns.len() as u32);
        put_u64(&mut attr, 8, insns.as_ptr() as u64);
        put_u64(&mut attr, 16, license.as_ptr() as u64);
        put_u32(&mut attr, 24, 1); // log level
        put_u32(&mut attr, 28, log.len() as u32);
        put_u64(&mut attr, 32, log.as_mut_ptr() as u64);
        attr[48..48 + 10].copy_from_slice(b"sluice_gen");
        let fd = bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
            // SAFETY: we own the map descriptor and close it once, on this error path.
            unsafe { libc::close(map_fd) };
            let text = String::from_utf8_lossy(&log);
            let text = text.trim_end_matches('\0').trim();
            match e.raw_os_error() {
                Some(libc::EPERM) => {
                    "xdp engine needs CAP_BPF and CAP_NET_ADMIN (run as root)".to_string()
                }
                _ => format!("xdp engine: loading the program failed: {e} {text}"),
            }
        })?;
        Ok(LiveFrames {
            prog_fd: fd as libc::c_int,
            map_fd,
            frame: frame.to_vec(),
            ifindex,
        })
    }

    /// Pace transmissions at `pps` frames per second (`None`: as fast as possible).
    pub fn set_rate(&mut self, pps: Option<f64>) -> Result<(), String> {
        let interval = pps.map_or(0, |r| (1e9 / r) as u64);
        let mut value = self.state()?;
        value[8..16].copy_from_slice(&interval.to_ne_bytes());
        let key = 0u32;
        let mut attr = map_key_value(self.map_fd, &key, value.as_mut_ptr());
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr)
            .map(|_| ())
            .map_err(|e| format!("xdp engine: setting the rate: {e}"))
    }

    fn state(&self) -> Result<[u8; STATE_SIZE as usize], String> {
        let mut value = [0u8; STATE_SIZE as usize];
        let key = 0u32;
        let mut attr = map_key_value(self.map_fd, &key, value.as_mut_ptr());
        bpf(BPF_MAP_LOOKUP_ELEM, &mut attr)
            .map_err(|e| format!("xdp engine: reading its state: {e}"))?;
        Ok(value)
    }

    /// Frames transmitted so far.
    pub fn sent(&self) -> Result<u64, String> {
        let value = self.state()?;
        let mut c = [0u8; 8];
        c.copy_from_slice(&value[16..24]);
        Ok(u64::from_ne_bytes(c))
    }

    /// Run the program `count` times (one kernel call); each run transmits a frame if one is
    /// due. `sent` tells how many went out.
    pub fn run(&mut self, count: u32) -> Result<(), String> {
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index,
        // egress_ifindex. data_end must equal the frame size.
        let mut ctx = [0u32; 6];
        ctx[1] = self.frame.len() as u32;
        ctx[3] = self.ifindex;
        let mut attr = [0u8; 80];
        put_u32(&mut attr, 0, self.prog_fd as u32);
        put_u32(&mut attr, 8, self.frame.len() as u32);
        put_u64(&mut attr, 16, self.frame.as_ptr() as u64);
        put_u32(&mut attr, 32, count);
        put_u32(&mut attr, 40, std::mem::size_of_val(&ctx) as u32);
        put_u64(&mut attr, 48, ctx.as_ptr() as u64);
        put_u32(&mut attr, 64, BPF_F_TEST_XDP_LIVE_FRAMES);
        bpf(BPF_PROG_TEST_RUN, &mut attr)
            .map(|_| ())
            .map_err(|e| format!("xdp engine: BPF_PROG_RUN: {e}"))
    }
}

impl Drop for LiveFrames {
    fn drop(&mut self) {
        // SAFETY: we own both descriptors and close each once.
        unsafe {
            libc::close(self.prog_fd);
            libc::close(self.map_fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_shape() {
        let p = program(&[0xab; HEADER_LEN], 7);
        assert_eq!(p[p.len() - 2].imm, XDP_DROP);
        assert_eq!(p[p.len() - 4].imm, XDP_TX);
        // Every conditional jump lands on the drop return or just past the catch-up move.
        let drop_at = p.len() - 2;
        for (i, x) in p.iter().enumerate() {
            if [JMP_JEQ_IMM, JMP_JLT_REG, JMP_JGT_REG].contains(&x.code) {
                assert_eq!(i + 1 + x.off as usize, drop_at, "jump at {i}");
            }
        }
        // The map is loaded as a pseudo map descriptor.
        let ld = p.iter().position(|x| x.code == LD_IMM64).unwrap();
        assert_eq!((p[ld].regs >> 4, p[ld].imm), (BPF_PSEUDO_MAP_FD, 7));
    }
}
