//! A small BPF assembler: instructions by name, jumps to labels resolved at the end, so that a
//! program of a few dozen instructions reads as the C it stands for and no offset is counted
//! by hand.

use super::bpf::{insn, load_map_fd, Insn};
use std::collections::HashMap;

/// Access sizes (BPF_W, BPF_H, BPF_B, BPF_DW).
#[derive(Clone, Copy, Debug)]
pub enum Size {
    B,
    H,
    W,
    DW,
}

impl Size {
    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

const LDX_MEM: u8 = 0x61 & !0x18; // BPF_LDX | BPF_MEM
const ST_MEM: u8 = 0x62 & !0x18; // BPF_ST | BPF_MEM
const STX_MEM: u8 = 0x63 & !0x18; // BPF_STX | BPF_MEM
const STX_ATOMIC: u8 = 0xc3 & !0x18; // BPF_STX | BPF_ATOMIC
const ALU64: u8 = 0x07;
const ALU32: u8 = 0x04;
const JMP: u8 = 0x05;
const SRC_REG: u8 = 0x08;

/// ALU operations (the op bits of BPF_ALU64 / BPF_ALU).
#[derive(Clone, Copy, Debug)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Xor = 0xa0,
    Mov = 0xb0,
}

/// Conditional jumps (the op bits of BPF_JMP).
#[derive(Clone, Copy, Debug)]
pub enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ge = 0x30,
    Ne = 0x50,
    Lt = 0xa0,
    Le = 0xb0,
}

/// Registers by their BPF names: r0 return value, r1-r5 arguments (clobbered by calls),
/// r6-r9 kept across calls, r10 the frame pointer (read-only).
pub const R0: u8 = 0;
pub const R1: u8 = 1;
pub const R2: u8 = 2;
pub const R3: u8 = 3;
pub const R4: u8 = 4;
pub const R5: u8 = 5;
pub const R6: u8 = 6;
pub const R7: u8 = 7;
pub const R8: u8 = 8;
pub const R9: u8 = 9;
pub const FP: u8 = 10;

#[derive(Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: HashMap<&'static str, usize>,
    /// Jumps waiting for their label: instruction index and label.
    fixups: Vec<(usize, &'static str)>,
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, i: Insn) -> &mut Asm {
        self.insns.push(i);
        self
    }

    /// Mark the next instruction as `name`.
    pub fn label(&mut self, name: &'static str) -> &mut Asm {
        let at = self.insns.len();
        if self.labels.insert(name, at).is_some() {
            // Reported by `finish`, which cannot tell two places apart otherwise.
            self.fixups.push((usize::MAX, name));
        }
        self
    }

    /// `dst op= imm` (64-bit).
    pub fn alu_imm(&mut self, op: Alu, dst: u8, imm: i32) -> &mut Asm {
        self.push(insn(ALU64 | op as u8, dst, 0, 0, imm))
    }

    /// `dst op= src` (64-bit).
    pub fn alu(&mut self, op: Alu, dst: u8, src: u8) -> &mut Asm {
        self.push(insn(ALU64 | op as u8 | SRC_REG, dst, src, 0, 0))
    }

    /// `dst = (u32)(dst op imm)`: 32-bit, the upper half cleared.
    pub fn alu32_imm(&mut self, op: Alu, dst: u8, imm: i32) -> &mut Asm {
        self.push(insn(ALU32 | op as u8, dst, 0, 0, imm))
    }

    pub fn mov_imm(&mut self, dst: u8, imm: i32) -> &mut Asm {
        self.alu_imm(Alu::Mov, dst, imm)
    }

    pub fn mov(&mut self, dst: u8, src: u8) -> &mut Asm {
        self.alu(Alu::Mov, dst, src)
    }

    /// Swap `dst`'s low `bits` (16, 32, 64) between host and network order (BPF_END | BPF_TO_BE).
    pub fn to_be(&mut self, dst: u8, bits: i32) -> &mut Asm {
        self.push(insn(0xdc, dst, 0, 0, bits))
    }

    /// `dst = *(size *)(src + off)`.
    pub fn ldx(&mut self, size: Size, dst: u8, src: u8, off: i16) -> &mut Asm {
        self.push(insn(LDX_MEM | size.bits(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = src`.
    pub fn stx(&mut self, size: Size, dst: u8, off: i16, src: u8) -> &mut Asm {
        self.push(insn(STX_MEM | size.bits(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = imm`.
    pub fn st_imm(&mut self, size: Size, dst: u8, off: i16, imm: i32) -> &mut Asm {
        self.push(insn(ST_MEM | size.bits(), dst, 0, off, imm))
    }

    /// `*(u64 *)(dst + off) += src`, atomically (for values other CPUs update too).
    pub fn atomic_add64(&mut self, dst: u8, off: i16, src: u8) -> &mut Asm {
        self.push(insn(STX_ATOMIC | Size::DW.bits(), dst, src, off, 0))
    }

    /// `dst = map` (the map's descriptor, resolved by the kernel at load).
    pub fn ld_map(&mut self, dst: u8, fd: i32) -> &mut Asm {
        for i in load_map_fd(dst, fd) {
            self.push(i);
        }
        self
    }

    pub fn call(&mut self, helper: i32) -> &mut Asm {
        self.push(insn(JMP | 0x80, 0, 0, 0, helper))
    }

    pub fn exit(&mut self) -> &mut Asm {
        self.push(insn(JMP | 0x90, 0, 0, 0, 0))
    }

    /// `goto label`.
    pub fn ja(&mut self, label: &'static str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(insn(JMP, 0, 0, 0, 0))
    }

    /// `if dst cond imm goto label`.
    pub fn jmp_imm(&mut self, cond: Cond, dst: u8, imm: i32, label: &'static str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(insn(JMP | cond as u8, dst, 0, 0, imm))
    }

    /// `if dst cond src goto label`.
    pub fn jmp(&mut self, cond: Cond, dst: u8, src: u8, label: &'static str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(insn(JMP | cond as u8 | SRC_REG, dst, src, 0, 0))
    }

    /// The program, every jump resolved; an unknown or doubly defined label is an error.
    pub fn finish(&mut self) -> Result<Vec<Insn>, String> {
        for &(at, label) in &self.fixups {
            if at == usize::MAX {
                return Err(format!("BPF label '{label}' defined twice"));
            }
            let target = *self
                .labels
                .get(label)
                .ok_or_else(|| format!("BPF label '{label}' is never defined"))?;
            let off = target as i64 - at as i64 - 1;
            self.insns[at].off =
                i16::try_from(off).map_err(|_| format!("jump to '{label}' is too far"))?;
        }
        Ok(std::mem::take(&mut self.insns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_land_on_their_labels_both_ways() {
        let mut a = Asm::new();
        a.label("top")
            .mov_imm(R0, 1)
            .jmp_imm(Cond::Eq, R0, 1, "end")
            .ja("top")
            .label("end")
            .exit();
        let p = a.finish().unwrap();
        assert_eq!(p.len(), 4);
        // From instruction 1 to 3: skip one.
        assert_eq!((p[1].code, p[1].off, p[1].imm), (0x15, 1, 1));
        // From instruction 2 back to 0.
        assert_eq!((p[2].code, p[2].off), (0x05, -3));
        assert_eq!(p[3].code, 0x95);
    }

    #[test]
    fn bad_labels_are_errors() {
        let e = Asm::new().ja("nowhere").exit().finish().unwrap_err();
        assert!(e.contains("never defined"), "{e}");
        let e = Asm::new()
            .label("x")
            .label("x")
            .exit()
            .finish()
            .unwrap_err();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn opcodes_are_the_kernels() {
        let mut a = Asm::new();
        a.ldx(Size::W, R2, R1, 16)
            .stx(Size::DW, FP, -8, R1)
            .st_imm(Size::H, FP, -20, 1)
            .atomic_add64(R0, 8, R1)
            .alu(Alu::Sub, R8, R1)
            .alu_imm(Alu::Add, R2, -24);
        let p = a.finish().unwrap();
        let codes: Vec<u8> = p.iter().map(|i| i.code).collect();
        assert_eq!(codes, [0x61, 0x7b, 0x6a, 0xdb, 0x1f, 0x07]);
    }
}
