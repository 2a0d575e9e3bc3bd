//! The `bpf()` system call, the few commands sluice uses, and BPF instructions as data. No
//! libbpf and no compiler: our programs are a handful of instructions written out here.
//!
//! The raw system call is an `unsafe fn`: the attribute block holds addresses the kernel reads
//! and writes, and only the caller knows what they point at. Everything else is safe, because
//! each wrapper builds the block itself from slices and checks what the kernel would trust us
//! on: a map's key and value sizes (a map handle remembers them), buffer lengths that fit the
//! kernel's `u32` fields, names that fit their NUL-terminated field. A descriptor is owned by
//! exactly one handle and closed once, when it drops.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

pub const BPF_MAP_CREATE: libc::c_int = 0;
pub const BPF_MAP_LOOKUP_ELEM: libc::c_int = 1;
pub const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
pub const BPF_MAP_DELETE_ELEM: libc::c_int = 3;
pub const BPF_MAP_GET_NEXT_KEY: libc::c_int = 4;
pub const BPF_PROG_LOAD: libc::c_int = 5;
pub const BPF_PROG_TEST_RUN: libc::c_int = 10;
pub const BPF_PROG_GET_FD_BY_ID: libc::c_int = 13;
pub const BPF_OBJ_GET_INFO_BY_FD: libc::c_int = 15;
pub const BPF_LINK_CREATE: libc::c_int = 28;

const BPF_MAP_TYPE_HASH: u32 = 1;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
const BPF_MAP_TYPE_DEVMAP: u32 = 14;
const BPF_MAP_TYPE_LPM_TRIE: u32 = 11;
const BPF_F_NO_PREALLOC: u32 = 1;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
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

/// One classic BPF instruction (struct sock_filter), for socket filters (SO_ATTACH_FILTER).
/// Classic BPF is what a socket filter still takes most simply: the kernel checks the program
/// when it is attached (every jump forward and inside it, a return at the end) and translates
/// it to eBPF itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct ClassicInsn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// `A = 32-bit word at k` (BPF_LD | BPF_W | BPF_ABS); with k in the ancillary range
/// (`SKF_AD_OFF + ...`) it loads a field of the packet's metadata instead.
pub const CLASSIC_LD_W_ABS: u16 = 0x20;
/// `if A == k` jump `jt` forward, else `jf` (BPF_JMP | BPF_JEQ | BPF_K).
pub const CLASSIC_JEQ_K: u16 = 0x15;
/// Return k: accept the first k bytes of the packet, 0 drops it (BPF_RET | BPF_K).
pub const CLASSIC_RET_K: u16 = 0x06;
/// Where the ancillary loads start (SKF_AD_OFF, -0x1000 as a u32).
pub const SKF_AD_OFF: u32 = 0xffff_f000;
/// The ancillary field `skb->queue_mapping` (SKF_AD_QUEUE, linux/filter.h).
pub const SKF_AD_QUEUE: u32 = 24;

/// The two instruction slots that load map `fd` into register `dst`.
pub fn load_map_fd(dst: u8, fd: i32) -> [Insn; 2] {
    [
        insn(LD_IMM64, dst, BPF_PSEUDO_MAP_FD, 0, fd),
        insn(0, 0, 0, 0, 0),
    ]
}

/// Issue one bpf() command. `attr` is the command's union bpf_attr member, zero-padded; its
/// length is passed, so the kernel reads no further than the slice.
///
/// # Safety
///
/// `attr` must be laid out as the bpf_attr member that `cmd` reads. Every address in it must
/// point at memory that is valid, until the call returns, for what the kernel does there for
/// this command: read (keys, values to store, instructions, input frames) or written (values
/// looked up, logs, output frames, object info), for at least the length the block gives for
/// it (or the size the object fixes, such as a map's key and value size). Descriptors in the
/// block are checked by the kernel and need no promise.
pub unsafe fn bpf(cmd: libc::c_int, attr: &mut [u8]) -> io::Result<libc::c_long> {
    // SAFETY: the caller upholds the contract above; `attr` itself is live for its length.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

pub(super) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

pub(super) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

/// A length the kernel takes as a `u32`, or an error naming what was too long.
fn len_u32(len: usize, what: &str) -> io::Result<u32> {
    u32::try_from(len).map_err(|_| invalid(format!("{what} of {len} bytes is too long")))
}

pub(super) fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// A BPF object (map, program or link) file descriptor: owned by this handle alone (no
/// `Clone`, no public constructor from a number) and closed exactly once, on drop.
#[derive(Debug)]
pub struct BpfFd(OwnedFd);

impl BpfFd {
    /// Take ownership of a descriptor the kernel just returned.
    fn from_syscall(rc: libc::c_long) -> io::Result<BpfFd> {
        let fd = RawFd::try_from(rc).map_err(|_| invalid(format!("bpf() returned {rc}")))?;
        // SAFETY: the kernel returned a new descriptor that nothing else holds.
        Ok(BpfFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }
}

impl AsRawFd for BpfFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl AsFd for BpfFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// The map kinds sluice creates. Only `PercpuArray` is per-CPU: its lookups write one value
/// per possible CPU (`map_lookup_percpu`); the others' write exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    Array,
    XskMap,
    Hash,
    PercpuArray,
    /// Interfaces a program redirects to, by index (values: ifindex).
    DevMap,
    /// Longest-prefix match: keys are a 32-bit prefix length in bits, then the data.
    LpmTrie,
    /// A hash map whose entries are allocated as they are added (BPF_F_NO_PREALLOC): room
    /// for millions costs memory only once they are there.
    SparseHash,
}

/// A map and the sizes it was created with, which every access is checked against.
#[derive(Debug)]
pub struct BpfMap {
    fd: BpfFd,
    pub(super) key_size: u32,
    pub(super) value_size: u32,
    percpu: bool,
}

impl BpfMap {
    pub fn fd(&self) -> &BpfFd {
        &self.fd
    }

    /// Whether lookups write one value per possible CPU.
    pub fn is_percpu(&self) -> bool {
        self.percpu
    }

    /// The map's descriptor, for `load_map_fd` (the kernel resolves it when it loads the
    /// program; a wrong number is refused there).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub(super) fn check(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        if key.len() != self.key_size as usize {
            return Err(invalid(format!(
                "BPF map key of {} bytes, the map's keys are {} bytes",
                key.len(),
                self.key_size
            )));
        }
        if value.len() != self.value_size as usize {
            return Err(invalid(format!(
                "BPF map value of {} bytes, the map's values are {} bytes",
                value.len(),
                self.value_size
            )));
        }
        Ok(())
    }

    fn elem_attr(&self, key: *const u8, value: *const u8) -> [u8; 32] {
        let mut attr = [0u8; 32];
        put_u32(&mut attr, 0, self.fd.as_raw_fd() as u32);
        put_u64(&mut attr, 8, key as u64);
        put_u64(&mut attr, 16, value as u64);
        attr
    }
}

fn permission_hint(e: io::Error, what: &str) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => format!("{what}: needs CAP_BPF and CAP_NET_ADMIN (run as root)"),
        _ => format!("{what}: {e}"),
    }
}

/// Create a map of `entries` entries with keys and values of the given sizes.
pub fn map_create(
    kind: MapKind,
    key_size: u32,
    value_size: u32,
    entries: u32,
) -> Result<BpfMap, String> {
    let type_id = match kind {
        MapKind::Array => BPF_MAP_TYPE_ARRAY,
        MapKind::XskMap => BPF_MAP_TYPE_XSKMAP,
        MapKind::Hash | MapKind::SparseHash => BPF_MAP_TYPE_HASH,
        MapKind::PercpuArray => BPF_MAP_TYPE_PERCPU_ARRAY,
        MapKind::DevMap => BPF_MAP_TYPE_DEVMAP,
        MapKind::LpmTrie => BPF_MAP_TYPE_LPM_TRIE,
    };
    let mut attr = [0u8; 64];
    put_u32(&mut attr, 0, type_id);
    put_u32(&mut attr, 4, key_size);
    put_u32(&mut attr, 8, value_size);
    put_u32(&mut attr, 12, entries);
    if kind == MapKind::LpmTrie || kind == MapKind::SparseHash {
        // The kernel makes LPM tries only without preallocation; a sparse hash asks for it.
        put_u32(&mut attr, 16, BPF_F_NO_PREALLOC);
    }
    // SAFETY: the map_create member (type, key size, value size, entries) holds no address.
    let rc = unsafe { bpf(BPF_MAP_CREATE, &mut attr) }
        .map_err(|e| permission_hint(e, "creating a BPF map"))?;
    let fd = BpfFd::from_syscall(rc).map_err(|e| e.to_string())?;
    Ok(BpfMap {
        fd,
        key_size,
        value_size,
        percpu: kind == MapKind::PercpuArray,
    })
}

/// Set `map[key] = value`. A key or value not of the map's sizes is refused before the call.
pub fn map_update(map: &BpfMap, key: &[u8], value: &[u8]) -> io::Result<()> {
    map.check(key, value)?;
    let mut attr = map.elem_attr(key.as_ptr(), value.as_ptr());
    // SAFETY: the kernel reads key_size bytes at `key` and value_size bytes at `value`, and
    // `check` made both slices exactly that long; they live until the call returns.
    unsafe { bpf(BPF_MAP_UPDATE_ELEM, &mut attr) }.map(|_| ())
}

/// Read `map[key]` into `value`. A key or value not of the map's sizes is refused before the
/// call (the kernel writes value_size bytes whatever the buffer's length).
pub fn map_lookup(map: &BpfMap, key: &[u8], value: &mut [u8]) -> io::Result<()> {
    if map.percpu {
        return Err(invalid(
            "a per-CPU map is read with map_lookup_percpu".into(),
        ));
    }
    map.check(key, value)?;
    let mut attr = map.elem_attr(key.as_ptr(), value.as_mut_ptr());
    // SAFETY: the kernel reads key_size bytes at `key` and writes value_size bytes (the map
    // is not per-CPU, checked above) at `value`, a writable slice of exactly that length
    // (checked above) that lives until the call returns.
    unsafe { bpf(BPF_MAP_LOOKUP_ELEM, &mut attr) }.map(|_| ())
}

/// CPUs the kernel may ever run (/sys/devices/system/cpu/possible, "0-N"): how many values a
/// per-CPU map's lookup writes.
pub fn possible_cpus() -> io::Result<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    let mut n = 0;
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let last: usize = match (a.parse::<usize>(), b.parse::<usize>()) {
            (Ok(a), Ok(b)) if b >= a => b,
            _ => return Err(invalid(format!("cannot read possible CPUs from '{text}'"))),
        };
        n = n.max(last + 1);
    }
    Ok(n)
}

/// Read every CPU's `map[key]` of a per-CPU map: one value per possible CPU, each as its
/// bytes (value_size rounded up to 8, as the kernel lays them out).
pub fn map_lookup_percpu(map: &BpfMap, key: &[u8]) -> io::Result<Vec<Vec<u8>>> {
    if !map.percpu {
        return Err(invalid("map_lookup_percpu reads per-CPU maps only".into()));
    }
    let stride = (map.value_size as usize).div_ceil(8) * 8;
    let cpus = possible_cpus()?;
    let mut all = vec![0u8; stride * cpus];
    map.check(key, &all[..map.value_size as usize])?;
    let mut attr = map.elem_attr(key.as_ptr(), all.as_mut_ptr());
    // SAFETY: the kernel reads key_size bytes at `key` (checked) and writes, for a per-CPU
    // map, value_size rounded up to 8 bytes for each possible CPU at `value`: `all` is
    // exactly that long and lives until the call returns.
    unsafe { bpf(BPF_MAP_LOOKUP_ELEM, &mut attr) }?;
    Ok(all
        .chunks(stride)
        .map(|c| c[..map.value_size as usize].to_vec())
        .collect())
}

/// Remove `map[key]` (a hash map's entry); an absent key is an error (ENOENT).
pub fn map_delete(map: &BpfMap, key: &[u8]) -> io::Result<()> {
    map.check(key, &vec![0u8; map.value_size as usize])?;
    let mut attr = map.elem_attr(key.as_ptr(), std::ptr::null());
    // SAFETY: the kernel reads key_size bytes at `key`, exactly the slice's length (checked).
    unsafe { bpf(BPF_MAP_DELETE_ELEM, &mut attr) }.map(|_| ())
}

/// Every key of a hash map now (entries may come and go while this walks: a key deleted
/// meanwhile restarts the walk at the first key, as the kernel does, so a key may repeat).
pub fn map_keys(map: &BpfMap, most: usize) -> io::Result<Vec<Vec<u8>>> {
    let size = map.key_size as usize;
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut next = vec![0u8; size];
    while keys.len() < most {
        let prev = keys.last().map_or(std::ptr::null(), |k| k.as_ptr());
        let mut attr = map.elem_attr(prev, next.as_mut_ptr());
        // SAFETY: the kernel reads key_size bytes at the previous key (a slice of that
        // length in `keys`, or null for the first) and writes key_size bytes into `next`,
        // which is that long; both live until the call returns.
        match unsafe { bpf(BPF_MAP_GET_NEXT_KEY, &mut attr) } {
            Ok(_) => keys.push(next.clone()),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(keys)
}

/// Longest program name: the kernel's field is 16 bytes with the terminating NUL.
pub const MAX_PROGRAM_NAME: usize = 15;

/// Load an XDP program called `name` (at most 15 bytes, no NUL). The verifier's log is part of
/// the error when it refuses the program.
pub fn load_xdp_program(insns: &[Insn], name: &str) -> Result<BpfFd, String> {
    if name.len() > MAX_PROGRAM_NAME || name.contains('\0') {
        return Err(format!(
            "BPF program name '{}' must be at most {MAX_PROGRAM_NAME} bytes without NUL",
            name.escape_debug()
        ));
    }
    let count = len_u32(insns.len(), "BPF program").map_err(|e| e.to_string())?;
    let license = c"GPL";
    let mut log = vec![0u8; 65536];
    let mut attr = [0u8; 128];
    put_u32(&mut attr, 0, BPF_PROG_TYPE_XDP);
    put_u32(&mut attr, 4, count);
    put_u64(&mut attr, 8, insns.as_ptr() as u64);
    put_u64(&mut attr, 16, license.as_ptr() as u64);
    put_u32(&mut attr, 24, 1); // log level
    put_u32(&mut attr, 28, log.len() as u32);
    put_u64(&mut attr, 32, log.as_mut_ptr() as u64);
    // The rest of the 16-byte field stays zero: the name is NUL-terminated.
    attr[48..48 + name.len()].copy_from_slice(name.as_bytes());
    put_u32(&mut attr, 68, BPF_XDP); // expected attach type
                                     // SAFETY: the kernel reads `count` instructions at `insns` (a slice of exactly that many
                                     // 8-byte struct bpf_insn), the NUL-terminated license, and writes at most `log.len()`
                                     // bytes of log into `log`; all three live until the call returns.
    let rc = unsafe { bpf(BPF_PROG_LOAD, &mut attr) }.map_err(|e| {
        let text = String::from_utf8_lossy(&log);
        let text = text.trim_end_matches('\0').trim().to_string();
        let base = permission_hint(e, &format!("loading XDP program {name}"));
        if text.is_empty() {
            base
        } else {
            format!("{base} (verifier: {text})")
        }
    })?;
    BpfFd::from_syscall(rc).map_err(|e| e.to_string())
}

/// Attach an XDP program to an interface through a BPF link: the kernel detaches it when the
/// link's last descriptor closes, so a process that dies leaves no program behind.
pub fn link_xdp(prog: &BpfFd, ifindex: u32, xdp_flags: u32) -> io::Result<BpfFd> {
    let mut attr = [0u8; 64];
    put_u32(&mut attr, 0, prog.as_raw_fd() as u32);
    put_u32(&mut attr, 4, ifindex);
    put_u32(&mut attr, 8, BPF_XDP);
    put_u32(&mut attr, 12, xdp_flags);
    // SAFETY: the link_create member here holds descriptors and numbers, no address.
    let rc = unsafe { bpf(BPF_LINK_CREATE, &mut attr) }?;
    BpfFd::from_syscall(rc)
}

/// One BPF_PROG_RUN of a loaded program (the kernel's test mode).
pub struct TestRun<'a> {
    /// The frame the program runs on.
    pub data_in: &'a [u8],
    /// Where the frame goes after the run (at most its length is written), if anywhere.
    pub data_out: Option<&'a mut [u8]>,
    /// The program's context (for XDP a struct xdp_md), if not the kernel's default.
    pub ctx_in: Option<&'a [u8]>,
    /// Runs in this one call.
    pub repeat: u32,
    /// BPF_F_TEST_* flags.
    pub flags: u32,
}

/// Run `prog` as `run` says; returns the length of the frame after the last run (the full
/// length, even when `data_out` was too short and the kernel refused with ENOSPC).
pub fn prog_test_run(prog: &BpfFd, run: TestRun<'_>) -> io::Result<usize> {
    prog_test_run_action(prog, run).map(|(_, len)| len)
}

/// `prog_test_run`, with the program's return value (for XDP its action) of the last run.
pub fn prog_test_run_action(prog: &BpfFd, run: TestRun<'_>) -> io::Result<(u32, usize)> {
    let data_in_len = len_u32(run.data_in.len(), "test frame")?;
    let (out_ptr, out_len) = match run.data_out {
        Some(out) => (out.as_mut_ptr(), len_u32(out.len(), "test output")?),
        None => (std::ptr::null_mut(), 0),
    };
    let (ctx_ptr, ctx_len) = match run.ctx_in {
        Some(ctx) => (ctx.as_ptr(), len_u32(ctx.len(), "test context")?),
        None => (std::ptr::null(), 0),
    };
    let mut attr = [0u8; 80];
    put_u32(&mut attr, 0, prog.as_raw_fd() as u32);
    put_u32(&mut attr, 8, data_in_len);
    put_u32(&mut attr, 12, out_len);
    put_u64(&mut attr, 16, run.data_in.as_ptr() as u64);
    put_u64(&mut attr, 24, out_ptr as u64);
    put_u32(&mut attr, 32, run.repeat);
    put_u32(&mut attr, 40, ctx_len);
    put_u64(&mut attr, 48, ctx_ptr as u64);
    put_u32(&mut attr, 64, run.flags);
    // SAFETY: the kernel reads data_size_in bytes of `data_in` and ctx_size_in bytes of
    // `ctx_in`, and writes at most data_size_out bytes into `data_out` (none when null);
    // each length is its live slice's own, and ctx_out stays null.
    unsafe { bpf(BPF_PROG_TEST_RUN, &mut attr) }?;
    let retval = u32::from_ne_bytes([attr[4], attr[5], attr[6], attr[7]]);
    let len = u32::from_ne_bytes([attr[12], attr[13], attr[14], attr[15]]) as usize;
    Ok((retval, len))
}

/// The name of the loaded program with id `id`.
pub fn program_name(id: u32) -> io::Result<String> {
    let mut attr = [0u8; 16];
    put_u32(&mut attr, 0, id);
    // SAFETY: the prog_get_fd_by_id member holds a number, no address.
    let fd = BpfFd::from_syscall(unsafe { bpf(BPF_PROG_GET_FD_BY_ID, &mut attr) }?)?;
    // struct bpf_prog_info: name[16] at offset 64.
    let mut info = [0u8; 232];
    let mut attr = [0u8; 16];
    put_u32(&mut attr, 0, fd.as_raw_fd() as u32);
    put_u32(&mut attr, 4, info.len() as u32);
    put_u64(&mut attr, 8, info.as_mut_ptr() as u64);
    // SAFETY: the kernel writes at most info_len bytes into `info`, which is that long.
    unsafe { bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr) }?;
    let name = &info[64..80];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map handle over a descriptor that is no BPF map (/dev/null), so that anything that
    /// did reach the kernel would fail with an OS error: the checks need no root.
    fn fake_map(key_size: u32, value_size: u32) -> BpfMap {
        let file = std::fs::File::open("/dev/null").unwrap();
        BpfMap {
            fd: BpfFd(OwnedFd::from(file)),
            key_size,
            value_size,
            percpu: false,
        }
    }

    fn refused_before_the_kernel(r: io::Result<()>, what: &str) {
        let e = r.expect_err("a wrong size must be refused");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.raw_os_error(), None, "reached the kernel: {e}");
        assert!(e.to_string().contains(what), "{e}");
    }

    #[test]
    fn wrong_sized_values_and_keys_are_refused_with_an_error() {
        let m = fake_map(4, 24);
        let mut small = [0u8; 8];
        refused_before_the_kernel(map_lookup(&m, &[0; 4], &mut small), "value");
        refused_before_the_kernel(map_update(&m, &[0; 4], &small), "value");
        refused_before_the_kernel(map_update(&m, &[0; 4], &[0; 32]), "value");
        refused_before_the_kernel(map_lookup(&m, &[0; 2], &mut [0; 24]), "key");
        refused_before_the_kernel(map_update(&m, &[0; 8], &[0; 24]), "key");
        // The right sizes do go to the kernel, which refuses a descriptor that is no map.
        let e = map_lookup(&m, &[0; 4], &mut [0; 24]).unwrap_err();
        assert!(e.raw_os_error().is_some(), "{e}");
    }

    #[test]
    fn program_names_must_fit_the_kernel_field() {
        let e = load_xdp_program(&[], "sixteen_bytes_xx").unwrap_err();
        assert!(e.contains("at most 15 bytes"), "{e}");
        let e = load_xdp_program(&[], "nul\0inside").unwrap_err();
        assert!(e.contains("without NUL"), "{e}");
    }
}
