//! The XDP engine's rewrite of IPv6/UDP frames: per frame, the payload and UDP lengths (mixed
//! sizes), the low halves of both addresses (var2), and the UDP checksum that IPv6 requires
//! (RFC 8200 8.1), from a constant part and what varies.

use super::frame::checksum;
use super::xdp_live::{fold_and_invert, store_be16, var2_addresses, Variation, JMP_JNE_IMM};
use sluice::sys::bpf::{
    insn, Insn, ALU64_ADD_IMM, ALU64_ADD_REG, ALU64_MOV_IMM, ALU64_MOV_REG, ALU64_SUB_REG,
    ALU_TO_BE, STX_MEM_H,
};

const IP_AT: usize = 14;
const PLEN_AT: usize = IP_AT + 4;
const SRC_LO_AT: usize = IP_AT + 8 + 14;
const DST_LO_AT: usize = IP_AT + 24 + 14;
const UDP_AT: usize = IP_AT + 40;
const UDP_LEN_AT: usize = UDP_AT + 4;
const UDP_CSUM_AT: usize = UDP_AT + 6;

/// The one's-complement sum of `bytes`, folded to 16 bits (the frame builder's sum,
/// uncomplemented).
pub fn folded_sum(bytes: &[u8]) -> u32 {
    !checksum::finish(checksum::sum(bytes)) as u32
}

/// The checksum's words that no frame changes: the addresses (but their low halves with
/// var2), the next header, the ports.
fn constant_sum(header: &[u8], var2: bool) -> u32 {
    let word = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]) as u32;
    let addresses: u32 = (IP_AT + 8..IP_AT + 40)
        .step_by(2)
        .filter(|&at| !(var2 && (at == SRC_LO_AT || at == DST_LO_AT)))
        .map(word)
        .sum();
    addresses + 17 + word(UDP_AT) + word(UDP_AT + 2)
}

/// Instructions (r2 = frame data, r3 = data end, r8 = sequence number, r7 = the payload's sum
/// with mixed sizes) that give frame `seq` its lengths, var2 addresses and UDP checksum.
/// `payload_sum`: the payload's sum when every frame has the template's length.
pub fn rewrite6(header: &[u8], v: &Variation, payload_sum: u32) -> Vec<Insn> {
    let mut p = vec![
        insn(ALU64_MOV_REG, 9, 3, 0, 0), // r9 = UDP length = data_end - data - 54
        insn(ALU64_SUB_REG, 9, 2, 0, 0),
        insn(ALU64_ADD_IMM, 9, 0, 0, -(UDP_AT as i32)),
    ];
    p.extend(store_be16(9, PLEN_AT));
    p.extend(store_be16(9, UDP_LEN_AT));
    let var2 = v.var2_flows.is_some();
    let mut constant = constant_sum(header, var2);
    if !v.mixed_lengths() {
        constant += payload_sum;
    }
    // r0 = constant + the length twice (pseudo-header and UDP header) [+ payload's sum].
    p.extend([
        insn(ALU64_MOV_IMM, 0, 0, 0, constant as i32),
        insn(ALU64_ADD_REG, 0, 9, 0, 0),
        insn(ALU64_ADD_REG, 0, 9, 0, 0),
    ]);
    if v.mixed_lengths() {
        p.push(insn(ALU64_ADD_REG, 0, 7, 0, 0));
    }
    if let Some(flows) = v.var2_flows {
        p.extend(var2_addresses(flows, SRC_LO_AT, DST_LO_AT));
    }
    // Fold the carries twice, invert; a UDP checksum of 0 is sent as 0xffff.
    p.extend(fold_and_invert());
    p.extend([
        insn(JMP_JNE_IMM, 0, 0, 1, 0),
        insn(ALU64_MOV_IMM, 0, 0, 0, 0xffff),
        insn(ALU_TO_BE, 0, 0, 0, 16),
        insn(STX_MEM_H, 2, 0, UDP_CSUM_AT as i16, 0),
    ]);
    p
}
