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

use sluice::sys::bpf::{
    self, insn, load_map_fd, map_create, map_lookup, map_update, prog_test_run, BpfFd, BpfMap,
    Insn, MapKind, TestRun, ALU64_ADD_IMM, ALU64_ADD_REG, ALU64_AND_IMM, ALU64_MOD_IMM,
    ALU64_MOV_IMM, ALU64_MOV_REG, ALU64_RSH_IMM, ALU64_SUB_REG, ALU64_XOR_IMM, ALU_TO_BE, JMP_CALL,
    JMP_EXIT, JMP_JEQ_IMM, JMP_JGE_REG, JMP_JGT_REG, JMP_JLT_REG, LDX_MEM_DW, LDX_MEM_W,
    STX_MEM_DW, STX_MEM_H, ST_MEM_H, ST_MEM_W,
};

const HELPER_MAP_LOOKUP_ELEM: i32 = 1;
const HELPER_KTIME_GET_NS: i32 = 5;
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
const XDP_DROP: i32 = 1;
const XDP_TX: i32 = 3;
/// Bytes of header the program writes back on every run: Ethernet, IPv4, UDP.
pub const HEADER_LEN: usize = 42;
/// The same with IPv6.
pub const HEADER_LEN6: usize = 62;

/// The pacing state shared with the program (one array-map value):
/// next frame's due time (ns, CLOCK_MONOTONIC), the interval between frames, frames sent.
const STATE_SIZE: u32 = 24;

/// What varies from frame to frame.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Variation {
    /// T-Rex var2 over this many flows: the low 16 bits of both addresses are
    /// `seq % flows + 1`.
    pub var2_flows: Option<u32>,
    /// Frame lengths (without FCS) taken in turn by sequence number; empty or one entry: the
    /// template's length. The template must be the longest.
    pub lengths: Vec<u32>,
    /// IPv6/UDP frames (the program also writes the UDP checksum, which IPv6 requires).
    pub ipv6: bool,
}

impl Variation {
    pub(super) fn mixed_lengths(&self) -> bool {
        self.lengths.len() > 1
    }

    pub(super) fn rewrites(&self) -> bool {
        self.var2_flows.is_some() || self.mixed_lengths()
    }
}

const HELPER_XDP_ADJUST_TAIL: i32 = 65;
const STX_MEM_W: u8 = 0x63;
pub(super) const JMP_JNE_IMM: u8 = 0x55;

/// The XDP program. The kernel runs it as fast as it can; it transmits a frame only when one is
/// due, which paces the output smoothly (a run of the kernel's loop costs far less than a
/// transmit), and otherwise answers XDP_DROP, which sends nothing:
///
/// ```text
/// state = map[0]; now = ktime_get_ns()
/// if now < state.next_due: drop
/// state.next_due = max(state.next_due + state.interval, now); seq = state.sent; state.sent += 1
/// [mixed sizes] cut the frame to lengths[seq % n] (bpf_xdp_adjust_tail)
/// write the header template into the frame
/// [var2 or mixed sizes] write seq's addresses, lengths, IPv4 id and header checksum (IPv6:
///                       addresses, lengths and the UDP checksum, `xdp_live6`)
/// transmit
/// ```
/// Catching up to `now` after a stall means no burst of missed frames follows it.
fn program(
    header: &[u8],
    template_len: usize,
    state_fd: i32,
    lengths_fd: Option<i32>,
    v: &Variation,
    payload_sum: u32,
) -> Vec<Insn> {
    let mut p = vec![
        insn(ALU64_MOV_REG, 6, 1, 0, 0),  // r6 = ctx
        insn(ST_MEM_W, 10, 0, -4, 0),     // key = 0 on the stack
        insn(ALU64_MOV_REG, 2, 10, 0, 0), // r2 = &key
        insn(ALU64_ADD_IMM, 2, 0, 0, -4),
    ];
    p.extend(load_map_fd(1, state_fd)); // r1 = map
    p.push(insn(JMP_CALL, 0, 0, 0, HELPER_MAP_LOOKUP_ELEM));
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
        insn(ALU64_MOV_REG, 8, 1, 0, 0), // r8 = this frame's sequence number
        insn(ALU64_ADD_IMM, 1, 0, 0, 1),
        insn(STX_MEM_DW, 7, 1, 16, 0),
    ]);
    if let (true, Some(fd)) = (v.mixed_lengths(), lengths_fd) {
        p.extend([
            insn(ALU64_MOV_REG, 1, 8, 0, 0), // key = seq % n
            insn(ALU64_MOD_IMM, 1, 0, 0, v.lengths.len() as i32),
            insn(STX_MEM_W, 10, 1, -8, 0),
            insn(ALU64_MOV_REG, 2, 10, 0, 0),
            insn(ALU64_ADD_IMM, 2, 0, 0, -8),
        ]);
        p.extend(load_map_fd(1, fd));
        p.push(insn(JMP_CALL, 0, 0, 0, HELPER_MAP_LOOKUP_ELEM));
        to_drop.push(p.len());
        p.push(insn(JMP_JEQ_IMM, 0, 0, 0, 0)); // if r0 == NULL drop
        p.extend([
            // IPv6: r7 = the payload's sum at this length (the state is no longer needed).
            insn(LDX_MEM_W, 7, 0, 4, 0),
            insn(LDX_MEM_W, 2, 0, 0, 0), // r2 = length - template length (<= 0)
            insn(ALU64_ADD_IMM, 2, 0, 0, -(template_len as i32)),
            insn(ALU64_MOV_REG, 1, 6, 0, 0),
            insn(JMP_CALL, 0, 0, 0, HELPER_XDP_ADJUST_TAIL),
        ]);
        to_drop.push(p.len());
        p.push(insn(JMP_JNE_IMM, 0, 0, 0, 0)); // if it failed drop
    }
    p.extend([
        insn(LDX_MEM_W, 2, 6, 0, 0), // r2 = ctx->data
        insn(LDX_MEM_W, 3, 6, 4, 0), // r3 = ctx->data_end
        insn(ALU64_MOV_REG, 4, 2, 0, 0),
        insn(ALU64_ADD_IMM, 4, 0, 0, header.len() as i32),
    ]);
    to_drop.push(p.len());
    p.push(insn(JMP_JGT_REG, 4, 3, 0, 0)); // if data + header > data_end drop
    let hl = header.len();
    for w in 0..hl / 4 {
        let b = &header[w * 4..w * 4 + 4];
        // Stores take the immediate in host order; the bytes land as they are in memory.
        let imm = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        p.push(insn(ST_MEM_W, 2, 0, (w * 4) as i16, imm));
    }
    let tail = u16::from_ne_bytes([header[hl - 2], header[hl - 1]]);
    p.push(insn(ST_MEM_H, 2, 0, hl as i16 - 2, tail as i32));
    match (v.rewrites(), v.ipv6) {
        (true, false) => p.extend(rewrite(header, v)),
        (true, true) => p.extend(super::xdp_live6::rewrite6(header, v, payload_sum)),
        (false, _) => {}
    }
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

// Where the rewrite writes, in the frame: IPv4 total length, id, header checksum, low halves
// of the addresses, UDP length.
const IP_AT: usize = 14;
const TOTAL_LEN_AT: usize = IP_AT + 2;
const ID_AT: usize = IP_AT + 4;
const CSUM_AT: usize = IP_AT + 10;
const SRC_LO_AT: usize = IP_AT + 14;
const DST_LO_AT: usize = IP_AT + 18;
const UDP_LEN_AT: usize = IP_AT + 20 + 4;

/// The sum of the IPv4 header's 16-bit words that the rewrite leaves alone.
fn constant_header_sum(header: &[u8], var2: bool) -> u32 {
    let mut varying = vec![TOTAL_LEN_AT, ID_AT, CSUM_AT];
    if var2 {
        varying.extend([SRC_LO_AT, DST_LO_AT]);
    }
    (IP_AT..IP_AT + 20)
        .step_by(2)
        .filter(|at| !varying.contains(at))
        .map(|at| u16::from_be_bytes([header[at], header[at + 1]]) as u32)
        .sum()
}

/// Stores register `reg`'s low 16 bits big-endian at `at` in the frame (r2), through r4.
pub(super) fn store_be16(reg: u8, at: usize) -> [Insn; 3] {
    [
        insn(ALU64_MOV_REG, 4, reg, 0, 0),
        insn(ALU_TO_BE, 4, 0, 0, 16),
        insn(STX_MEM_H, 2, 4, at as i16, 0),
    ]
}

/// var2: both addresses' low halves (at `src_lo_at`, `dst_lo_at`) become seq % flows + 1,
/// added twice to the checksum in r0.
pub(super) fn var2_addresses(flows: u32, src_lo_at: usize, dst_lo_at: usize) -> Vec<Insn> {
    let mut p = vec![
        insn(ALU64_MOV_REG, 3, 8, 0, 0), // r3 = seq % flows + 1
        insn(ALU64_MOD_IMM, 3, 0, 0, flows.max(1) as i32),
        insn(ALU64_ADD_IMM, 3, 0, 0, 1),
        insn(ALU64_ADD_REG, 0, 3, 0, 0),
        insn(ALU64_ADD_REG, 0, 3, 0, 0),
    ];
    p.extend(store_be16(3, src_lo_at));
    p.push(insn(STX_MEM_H, 2, 4, dst_lo_at as i16, 0));
    p
}

/// Folds the sum in r0 to 16 bits (twice: the first fold may carry) and inverts it.
pub(super) fn fold_and_invert() -> Vec<Insn> {
    let mut p = Vec::new();
    for _ in 0..2 {
        p.extend([
            insn(ALU64_MOV_REG, 4, 0, 0, 0),
            insn(ALU64_RSH_IMM, 4, 0, 0, 16),
            insn(ALU64_AND_IMM, 0, 0, 0, 0xffff),
            insn(ALU64_ADD_REG, 0, 4, 0, 0),
        ]);
    }
    p.push(insn(ALU64_XOR_IMM, 0, 0, 0, 0xffff));
    p
}

/// Instructions (r2 = frame data, r3 = data end, r8 = sequence number) that give frame `seq`
/// its lengths, IPv4 id, var2 addresses and header checksum.
fn rewrite(header: &[u8], v: &Variation) -> Vec<Insn> {
    let mut p = vec![
        insn(ALU64_MOV_REG, 9, 3, 0, 0), // r9 = IPv4 total length = data_end - data - 14
        insn(ALU64_SUB_REG, 9, 2, 0, 0),
        insn(ALU64_ADD_IMM, 9, 0, 0, -(IP_AT as i32)),
    ];
    p.extend(store_be16(9, TOTAL_LEN_AT));
    p.push(insn(ALU64_MOV_REG, 5, 9, 0, 0)); // UDP length = total length - 20
    p.push(insn(ALU64_ADD_IMM, 5, 0, 0, -20));
    p.extend(store_be16(5, UDP_LEN_AT));
    p.extend([
        insn(ALU64_MOV_REG, 5, 8, 0, 0), // r5 = seq as u16: the IPv4 id
        insn(ALU64_AND_IMM, 5, 0, 0, 0xffff),
    ]);
    p.extend(store_be16(5, ID_AT));
    // r0 = constant part + total length + id (+ both addresses' low halves).
    p.extend([
        insn(
            ALU64_MOV_IMM,
            0,
            0,
            0,
            constant_header_sum(header, v.var2_flows.is_some()) as i32,
        ),
        insn(ALU64_ADD_REG, 0, 9, 0, 0),
        insn(ALU64_ADD_REG, 0, 5, 0, 0),
    ]);
    if let Some(flows) = v.var2_flows {
        p.extend(var2_addresses(flows, SRC_LO_AT, DST_LO_AT));
    }
    // Fold the carries twice, invert, store.
    p.extend(fold_and_invert());
    p.extend([
        insn(ALU_TO_BE, 0, 0, 0, 16),
        insn(STX_MEM_H, 2, 0, CSUM_AT as i16, 0),
    ]);
    p
}

/// A loaded program bound to one frame and one interface.
pub struct LiveFrames {
    prog: BpfFd,
    map: BpfMap,
    _lengths: Option<BpfMap>,
    frame: Vec<u8>,
    ifindex: u32,
}

const KEY: [u8; 4] = 0u32.to_ne_bytes();

impl LiveFrames {
    /// Load the program for template `frame` (60..3520 bytes; the longest of `v.lengths`),
    /// to be sent out of `ifindex`.
    pub fn new(frame: &[u8], ifindex: u32, v: &Variation) -> Result<LiveFrames, String> {
        if frame.len() < 60 || frame.len() > 4096 - 256 - 320 {
            return Err(format!(
                "xdp engine: frame of {} bytes not supported (60..3520)",
                frame.len()
            ));
        }
        if v.lengths
            .iter()
            .any(|&l| l < 60 || l as usize > frame.len())
        {
            return Err("xdp engine: every length must be 60 bytes up to the template's".into());
        }
        let hl = if v.ipv6 { HEADER_LEN6 } else { HEADER_LEN };
        let header = &frame[..hl];
        // IPv6's UDP checksum covers the payload: its sum at each length the program cuts the
        // template to (folded to 16 bits), beside the length in the size table.
        let payload_sum = |len: usize| super::xdp_live6::folded_sum(&frame[hl.min(len)..len]);
        let map =
            map_create(MapKind::Array, 4, STATE_SIZE, 1).map_err(|e| format!("xdp engine: {e}"))?;
        let lengths = if v.mixed_lengths() {
            let m = map_create(MapKind::Array, 4, 8, v.lengths.len() as u32)
                .map_err(|e| format!("xdp engine: {e}"))?;
            for (i, &l) in v.lengths.iter().enumerate() {
                let mut value = [0u8; 8];
                value[..4].copy_from_slice(&l.to_ne_bytes());
                value[4..].copy_from_slice(&payload_sum(l as usize).to_ne_bytes());
                map_update(&m, &(i as u32).to_ne_bytes(), &value)
                    .map_err(|e| format!("xdp engine: filling its size table: {e}"))?;
            }
            Some(m)
        } else {
            None
        };
        let insns = program(
            header,
            frame.len(),
            map.raw_fd(),
            lengths.as_ref().map(|m| m.raw_fd()),
            v,
            payload_sum(frame.len()),
        );
        let prog =
            bpf::load_xdp_program(&insns, "sluice_gen").map_err(|e| format!("xdp engine: {e}"))?;
        Ok(LiveFrames {
            prog,
            map,
            _lengths: lengths,
            frame: frame.to_vec(),
            ifindex,
        })
    }

    /// Pace transmissions at `pps` frames per second (`None`: as fast as possible).
    pub fn set_rate(&mut self, pps: Option<f64>) -> Result<(), String> {
        let interval = pps.map_or(0, |r| (1e9 / r) as u64);
        let mut value = self.state()?;
        value[8..16].copy_from_slice(&interval.to_ne_bytes());
        map_update(&self.map, &KEY, &value)
            .map_err(|e| format!("xdp engine: setting the rate: {e}"))
    }

    fn state(&self) -> Result<[u8; STATE_SIZE as usize], String> {
        let mut value = [0u8; STATE_SIZE as usize];
        map_lookup(&self.map, &KEY, &mut value)
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

    /// Run the program once on a copy of the frame, without sending it, and return the frame
    /// as the program left it (BPF_PROG_RUN's plain test mode). Advances the sequence.
    pub fn dry_run(&mut self) -> Result<Vec<u8>, String> {
        let mut out = vec![0u8; self.frame.len()];
        let len = prog_test_run(
            &self.prog,
            TestRun {
                data_in: &self.frame,
                data_out: Some(&mut out),
                ctx_in: None,
                repeat: 1,
                flags: 0,
            },
        )
        .map_err(|e| format!("xdp engine: BPF_PROG_RUN: {e}"))?;
        out.truncate(len);
        Ok(out)
    }

    /// Run the program `count` times (one kernel call); each run transmits a frame if one is
    /// due. `sent` tells how many went out.
    pub fn run(&mut self, count: u32) -> Result<(), String> {
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index,
        // egress_ifindex. data_end must equal the frame size.
        let mut ctx = [0u32; 6];
        ctx[1] = self.frame.len() as u32;
        ctx[3] = self.ifindex;
        let mut ctx_bytes = [0u8; 24];
        for (b, v) in ctx_bytes.chunks_exact_mut(4).zip(ctx) {
            b.copy_from_slice(&v.to_ne_bytes());
        }
        prog_test_run(
            &self.prog,
            TestRun {
                data_in: &self.frame,
                data_out: None,
                ctx_in: Some(&ctx_bytes),
                repeat: count,
                flags: BPF_F_TEST_XDP_LIVE_FRAMES,
            },
        )
        .map(|_| ())
        .map_err(|e| format!("xdp engine: BPF_PROG_RUN: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn frames_match_the_generator_profile() {
        if !is_root() {
            // Under CI a test that did not run must not count as passed.
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "CI=true and not root: the BPF test run needs root"
            );
            eprintln!("SKIPPED (not under CI): the BPF test run needs root");
            return;
        }
        use crate::gen::frame::{Family, Profile, DST_NET6, L4, SRC_NET6, VAR2_FLOWS};
        for (sizes, var2, family) in [
            ("64", true, Family::Ipv4),
            ("imix", false, Family::Ipv4),
            ("imix", true, Family::Ipv4),
            ("mixed", true, Family::Ipv4),
            ("78", false, Family::Ipv6),
            ("78", true, Family::Ipv6),
            ("imix", false, Family::Ipv6),
            ("imix", true, Family::Ipv6),
            ("mixed", true, Family::Ipv6),
        ] {
            let min = crate::gen::frame::min_size(family, L4::Udp);
            let profile = Profile {
                sizes: crate::gen::frame::sizes_for(sizes, min, "").unwrap(),
                flows: if var2 { VAR2_FLOWS } else { 1 },
                var2,
                src_net: [16, 0],
                dst_net: [48, 0],
                family,
                l4: L4::Udp,
                src_net6: SRC_NET6,
                dst_net6: DST_NET6,
                routed: false,
                translated: false,
                src_mac: sluice::wire::MacAddress([2, 0, 0, 0, 0, 1]),
                dst_mac: sluice::wire::MacAddress([2, 0, 0, 0, 0, 2]),
                macs: 1,
                vlans: Vec::new(),
                vlan_spread: 1,
            };
            let (template, v) = crate::gen::xdp_frames(&profile);
            let mut e = LiveFrames::new(&template, 1, &v).unwrap();
            let mut want = Vec::new();
            for seq in 0..70_000u64 {
                let got = e.dry_run().unwrap();
                if seq % 997 != 0 && !(65_530..65_540).contains(&seq) && seq > 60 {
                    continue;
                }
                profile.build(seq, 0, &mut want);
                // Length, and the Ethernet, IPv4 (lengths, addresses, id, checksum) and UDP
                // headers are the profile's.
                let what = format!("{sizes} var2 {var2} {family:?}: frame {seq}");
                assert_eq!(got.len(), want.len(), "{what}");
                if family == Family::Ipv4 {
                    assert_eq!(got[..HEADER_LEN], want[..HEADER_LEN], "{what}");
                    continue;
                }
                // IPv6: the headers but the UDP checksum are the profile's; the checksum,
                // over the template's payload, is right (pseudo-header and segment sum to
                // 0xffff).
                assert_eq!(got[..HEADER_LEN6 - 2], want[..HEADER_LEN6 - 2], "{what}");
                let mut pseudo = got[22..54].to_vec();
                pseudo.extend_from_slice(&[0, 17]);
                pseudo.extend_from_slice(&got[58..60]);
                let sum = crate::gen::xdp_live6::folded_sum(&pseudo)
                    + crate::gen::xdp_live6::folded_sum(&got[54..]);
                assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff, "{what}");
            }
            assert_eq!(e.sent().unwrap(), 70_000);
        }
    }

    #[test]
    fn program_shape() {
        let p = program(&[0xab; HEADER_LEN], 60, 7, None, &Variation::default(), 0);
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
        let ld = p.iter().position(|x| x.code == bpf::LD_IMM64).unwrap();
        assert_eq!((p[ld].regs >> 4, p[ld].imm), (bpf::BPF_PSEUDO_MAP_FD, 7));
    }
}
