//! The `bpf()` system call, the few commands sluice uses, and BPF instructions as data. No
//! libbpf and no compiler: our programs are a handful of instructions written out here.

use std::io;

pub const BPF_MAP_CREATE: libc::c_int = 0;
pub const BPF_MAP_LOOKUP_ELEM: libc::c_int = 1;
pub const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
pub const BPF_PROG_LOAD: libc::c_int = 5;
pub const BPF_PROG_TEST_RUN: libc::c_int = 10;
pub const BPF_PROG_GET_FD_BY_ID: libc::c_int = 13;
pub const BPF_OBJ_GET_INFO_BY_FD: libc::c_int = 15;
pub const BPF_LINK_CREATE: libc::c_int = 28;

pub const BPF_MAP_TYPE_ARRAY: u32 = 2;
pub const BPF_MAP_TYPE_XSKMAP: u32 = 17;
pub const BPF_PROG_TYPE_XDP: u32 = 6;
/// The attach type of an XDP program (enum bpf_attach_type).
pub const BPF_XDP: u32 = 37;

/// ld_imm64's source register value that makes the immediate a map file descriptor.
pub const BPF_PSEUDO_MAP_FD: u8 = 1;

/// One BPF instruction (struct bpf_insn).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Insn {
    pub code: u8,
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

pub fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | (dst & 0xf),
        off,
        imm,
    }
}

// Opcodes used by sluice's programs (class | size/source | mode/op, from the kernel's bpf.h).
pub const LDX_MEM_W: u8 = 0x61;
pub const LDX_MEM_DW: u8 = 0x79;
pub const ST_MEM_W: u8 = 0x62;
pub const ST_MEM_H: u8 = 0x6a;
pub const STX_MEM_DW: u8 = 0x7b;
pub const ALU64_MOV_REG: u8 = 0xbf;
pub const ALU64_MOV_IMM: u8 = 0xb7;
pub const ALU64_ADD_IMM: u8 = 0x07;
pub const ALU64_ADD_REG: u8 = 0x0f;
pub const ALU64_AND_IMM: u8 = 0x57;
pub const ALU64_SUB_REG: u8 = 0x1f;
pub const ALU64_XOR_IMM: u8 = 0xa7;
pub const ALU64_RSH_IMM: u8 = 0x77;
pub const ALU64_MOD_IMM: u8 = 0x97;
/// Byte swap to big-endian (BPF_ALU | BPF_END | BPF_TO_BE); the immediate is the width.
pub const ALU_TO_BE: u8 = 0xdc;
pub const STX_MEM_H: u8 = 0x6b;
pub const JMP_JEQ_IMM: u8 = 0x15;
pub const JMP_JGT_REG: u8 = 0x2d;
pub const JMP_JGE_REG: u8 = 0x3d;
pub const JMP_JLT_REG: u8 = 0xad;
pub const JMP_CALL: u8 = 0x85;
pub const JMP_EXIT: u8 = 0x95;
pub const LD_IMM64: u8 = 0x18;

/// The two instruction slots that load map `fd` into register `dst`.
pub fn load_map_fd(dst: u8, fd: i32) -> [Insn; 2] {
    [
        insn(LD_IMM64, dst, BPF_PSEUDO_MAP_FD, 0, fd),
        insn(0, 0, 0, 0, 0),
    ]
}

/// Issue one bpf() command. `attr` is the command's union bpf_attr member, zero-padded.
pub fn bpf(cmd: libc::c_int, attr: &mut [u8]) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a zero-padded buffer laid out as the union bpf_attr member this
    // command reads, and its length is passed so the kernel reads no further.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

/// A BPF object (map, program or link) file descriptor, closed on drop.
#[derive(Debug)]
pub struct BpfFd(pub libc::c_int);

impl Drop for BpfFd {
    fn drop(&mut self) {
        // SAFETY: we own the descriptor and close it exactly once.
        unsafe { libc::close(self.0) };
    }
}

fn permission_hint(e: io::Error, what: &str) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => format!("{what}: needs CAP_BPF and CAP_NET_ADMIN (run as root)"),
        _ => format!("{what}: {e}"),
    }
}

/// Create a map.
pub fn map_create(
    kind: u32,
    key_size: u32,
    value_size: u32,
    entries: u32,
) -> Result<BpfFd, String> {
    let mut attr = [0u8; 64];
    put_u32(&mut attr, 0, kind);
    put_u32(&mut attr, 4, key_size);
    put_u32(&mut attr, 8, value_size);
    put_u32(&mut attr, 12, entries);
    let fd =
        bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| permission_hint(e, "creating a BPF map"))?;
    Ok(BpfFd(fd as libc::c_int))
}

fn map_attr(map: &BpfFd, key: *const u8, value: *const u8) -> [u8; 32] {
    let mut attr = [0u8; 32];
    put_u32(&mut attr, 0, map.0 as u32);
    put_u64(&mut attr, 8, key as u64);
    put_u64(&mut attr, 16, value as u64);
    attr
}

/// Set `map[key] = value`; both must have the map's key and value sizes.
pub fn map_update(map: &BpfFd, key: &[u8], value: &[u8]) -> io::Result<()> {
    let mut attr = map_attr(map, key.as_ptr(), value.as_ptr());
    bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(|_| ())
}

/// Read `map[key]` into `value`.
pub fn map_lookup(map: &BpfFd, key: &[u8], value: &mut [u8]) -> io::Result<()> {
    let mut attr = map_attr(map, key.as_ptr(), value.as_mut_ptr());
    bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).map(|_| ())
}

/// Load an XDP program called `name` (at most 15 bytes). The verifier's log is part of the
/// error when it refuses the program.
pub fn load_xdp_program(insns: &[Insn], name: &str) -> Result<BpfFd, String> {
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
    let n = name.len().min(15);
    attr[48..48 + n].copy_from_slice(&name.as_bytes()[..n]);
    put_u32(&mut attr, 68, BPF_XDP); // expected attach type
    let fd = bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
        let text = String::from_utf8_lossy(&log);
        let text = text.trim_end_matches('\0').trim().to_string();
        let base = permission_hint(e, &format!("loading XDP program {name}"));
        if text.is_empty() {
            base
        } else {
            format!("{base} (verifier: {text})")
        }
    })?;
    Ok(BpfFd(fd as libc::c_int))
}

/// Attach an XDP program to an interface through a BPF link: the kernel detaches it when the
/// link's last descriptor closes, so a process that dies leaves no program behind.
pub fn link_xdp(prog: &BpfFd, ifindex: u32, xdp_flags: u32) -> io::Result<BpfFd> {
    let mut attr = [0u8; 64];
    put_u32(&mut attr, 0, prog.0 as u32);
    put_u32(&mut attr, 4, ifindex);
    put_u32(&mut attr, 8, BPF_XDP);
    put_u32(&mut attr, 12, xdp_flags);
    let fd = bpf(BPF_LINK_CREATE, &mut attr)?;
    Ok(BpfFd(fd as libc::c_int))
}

/// The name of the loaded program with id `id`.
pub fn program_name(id: u32) -> io::Result<String> {
    let mut attr = [0u8; 16];
    put_u32(&mut attr, 0, id);
    let fd = BpfFd(bpf(BPF_PROG_GET_FD_BY_ID, &mut attr)? as libc::c_int);
    // struct bpf_prog_info: name[16] at offset 64.
    let mut info = [0u8; 232];
    let mut attr = [0u8; 16];
    put_u32(&mut attr, 0, fd.0 as u32);
    put_u32(&mut attr, 4, info.len() as u32);
    put_u64(&mut attr, 8, info.as_mut_ptr() as u64);
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr)?;
    let name = &info[64..80];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}
