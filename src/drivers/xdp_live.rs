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

const BPF_PROG_LOAD: libc::c_int = 5;
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

/// The XDP program: if the frame holds at least `HEADER_LEN` bytes, write the header template
/// into it and transmit it; otherwise drop it.
fn program(header: &[u8; HEADER_LEN]) -> Vec<Insn> {
    let mut p = vec![
        insn(LDX_MEM_W, 2, 1, 0, 0),                     // r2 = ctx->data
        insn(LDX_MEM_W, 3, 1, 4, 0),                     // r3 = ctx->data_end
        insn(ALU64_MOV_REG, 4, 2, 0, 0),                 // r4 = r2
        insn(ALU64_ADD_IMM, 4, 0, 0, HEADER_LEN as i32), // r4 += 42
    ];
    let stores = HEADER_LEN / 4 + 1; // ten words and a half-word
                                     // if r4 > r3 skip the stores and the XDP_TX return.
    p.push(insn(JMP_JGT_REG, 4, 3, stores as i16 + 2, 0));
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
    p.push(insn(ALU64_MOV_IMM, 0, 0, 0, XDP_DROP));
    p.push(insn(JMP_EXIT, 0, 0, 0, 0));
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
    frame: Vec<u8>,
    ifindex: u32,
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
        let insns = program(&header);
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
            frame: frame.to_vec(),
            ifindex,
        })
    }

    /// Send `count` frames (one kernel call; it returns when they are all sent).
    pub fn send(&mut self, count: u32) -> Result<(), String> {
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
        // SAFETY: we own the program descriptor and close it once.
        unsafe { libc::close(self.prog_fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_shape() {
        let p = program(&[0xab; HEADER_LEN]);
        // 4 setup, 1 branch, 10 words + 1 half-word, 2 for TX, 2 for drop.
        assert_eq!(p.len(), 20);
        // The branch lands on the drop return.
        let branch = 4;
        assert_eq!(branch + 1 + p[branch].off as usize, p.len() - 2);
        assert_eq!(p[p.len() - 2].imm, XDP_DROP);
        assert_eq!(p[p.len() - 4].imm, XDP_TX);
    }
}
