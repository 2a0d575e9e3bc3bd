//! The fast path's XDP program: a frame whose flow the graph has offloaded is sent on in the
//! kernel (redirected to the egress interface through the devmap); every other frame goes to
//! the receive queue's AF_XDP socket as without the fast path.
//!
//! In C it would read:
//!
//! ```text
//! if (data + 60 > data_end || ethertype is 802.1Q or 802.1ad)
//!                                { count(GRAPH); goto socket; }  // padding, tags: the graph's
//! key = { .ifindex = ctx->ingress_ifindex, .kind = KIND_XCONNECT };
//! v = lookup(flows, &key);
//! if (!v)                        { count(MISS_NO_ENTRY); goto socket; }
//! if (v->epoch != epoch[0])      { count(MISS_STALE); goto socket; }
//! if (redirect_map(devmap, v->out_slot, 0) != XDP_REDIRECT)
//!                                { count(MISS_NO_EGRESS); goto socket; }
//! len = data_end - data;
//! ifstats[v->in_stat].rx += 1, len;  ifstats[v->out_stat].tx += 1, len;
//! v->last_ns = ktime_get_ns();   count(HIT);   return XDP_REDIRECT;
//! socket: return redirect_map(xsks, ctx->rx_queue_index, XDP_PASS);
//! ```
//!
//! The layouts of the key and value are `maps::Key` and `maps::Value`.

use super::maps::{Maps, KEY_LEN, KIND_XCONNECT};
use crate::sys::bpf::Insn;
use crate::sys::bpf_asm::{Alu, Asm, Cond, Size, FP, R0, R1, R2, R3, R6, R7, R8};

const HELPER_MAP_LOOKUP: i32 = 1;
const HELPER_KTIME_GET_NS: i32 = 5;
const HELPER_REDIRECT_MAP: i32 = 51;
pub const XDP_PASS: i32 = 2;
pub const XDP_REDIRECT: i32 = 4;

/// Why a frame did or did not take the fast path: the `reasons` map's slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Hit = 0,
    NoEntry = 1,
    Stale = 2,
    NoEgress = 3,
    Graph = 4,
}

pub const REASONS: [(Reason, &str); 5] = [
    (Reason::Hit, "forwarded in XDP"),
    (Reason::NoEntry, "no offloaded flow (to the socket)"),
    (Reason::Stale, "flow from an older epoch (to the socket)"),
    (Reason::NoEgress, "egress not in the devmap (to the socket)"),
    (
        Reason::Graph,
        "shorter than 60 bytes or VLAN-tagged: for the graph (to the socket)",
    ),
];

/// Frames shorter than this go to the graph, which pads them (a switch passes short frames
/// on padded, as ethernet-input does).
pub const MIN_FRAME: i32 = 60;

// The stack: the key at -24..0, the epoch and stats indices below it.
const KEY_AT: i16 = -(KEY_LEN as i16);
const INDEX_AT: i16 = KEY_AT - 8;

/// `reasons[reason] += 1` (per-CPU: a plain add).
fn count(a: &mut Asm, m: &Maps, reason: Reason, done: &'static str) {
    a.st_imm(Size::W, FP, INDEX_AT, reason as i32)
        .ld_map(R1, m.reasons.raw_fd())
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, INDEX_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Eq, R0, 0, done)
        .ldx(Size::DW, R1, R0, 0)
        .alu_imm(Alu::Add, R1, 1)
        .stx(Size::DW, R0, 0, R1)
        .label(done);
}

/// `ifstats[value->field]`: packets += 1 at `at`, bytes += r8 at `at + 8`.
fn count_interface(a: &mut Asm, m: &Maps, field: i16, at: i16, done: &'static str) {
    a.ldx(Size::H, R1, R7, field)
        .stx(Size::W, FP, INDEX_AT, R1)
        .ld_map(R1, m.ifstats.raw_fd())
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, INDEX_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Eq, R0, 0, done)
        .ldx(Size::DW, R1, R0, at)
        .alu_imm(Alu::Add, R1, 1)
        .stx(Size::DW, R0, at, R1)
        .ldx(Size::DW, R1, R0, at + 8)
        .alu(Alu::Add, R1, R8)
        .stx(Size::DW, R0, at + 8, R1)
        .label(done);
}

/// The program for an interface whose sockets are in `xsks`.
pub fn fast_path_program(m: &Maps, xsks: i32) -> Result<Vec<Insn>, String> {
    use super::maps::value as v;
    let mut a = Asm::new();
    a.mov(R6, R1);
    // What ethernet-input treats apart stays with the graph: short frames (padded there) and
    // tagged ones (sub-interfaces, tag checks).
    a.ldx(Size::W, R2, R6, 0) // data
        .ldx(Size::W, R3, R6, 4) // data_end
        .mov(R1, R2)
        .alu_imm(Alu::Add, R1, MIN_FRAME)
        .jmp(Cond::Gt, R1, R3, "graph")
        .ldx(Size::H, R1, R2, 12) // the ethertype, in network order
        .jmp_imm(Cond::Eq, R1, i32::from(u16::from_be(0x8100)), "graph")
        .jmp_imm(Cond::Eq, R1, i32::from(u16::from_be(0x88a8)), "graph");
    // The key: zeroed, then the ingress interface and the kind.
    a.mov_imm(R1, 0);
    for off in (0..KEY_LEN as i16).step_by(8) {
        a.stx(Size::DW, FP, KEY_AT + off, R1);
    }
    a.ldx(Size::W, R1, R6, 12) // ctx->ingress_ifindex
        .stx(Size::W, FP, KEY_AT, R1)
        .st_imm(Size::H, FP, KEY_AT + 4, KIND_XCONNECT as i32)
        .ld_map(R1, m.flows.raw_fd())
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, KEY_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Eq, R0, 0, "no_entry")
        .mov(R7, R0);
    // The epoch the entry was made in must be the current one.
    a.st_imm(Size::W, FP, INDEX_AT, 0)
        .ld_map(R1, m.epoch.raw_fd())
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, INDEX_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Eq, R0, 0, "stale")
        .ldx(Size::W, R1, R0, 0)
        .ldx(Size::W, R2, R7, v::EPOCH)
        .jmp(Cond::Ne, R1, R2, "stale");
    // Redirect first: only a frame that will leave is counted as forwarded.
    a.ld_map(R1, m.devmap.raw_fd())
        .ldx(Size::W, R2, R7, v::OUT_SLOT)
        .mov_imm(R3, 0)
        .call(HELPER_REDIRECT_MAP)
        .jmp_imm(Cond::Ne, R0, XDP_REDIRECT, "no_egress");
    a.ldx(Size::W, R8, R6, 4) // data_end
        .ldx(Size::W, R1, R6, 0) // data
        .alu(Alu::Sub, R8, R1);
    count_interface(&mut a, m, v::IN_STAT, 0, "rx_counted");
    count_interface(&mut a, m, v::OUT_STAT, 16, "tx_counted");
    a.call(HELPER_KTIME_GET_NS)
        .stx(Size::DW, R7, v::LAST_NS, R0);
    count(&mut a, m, Reason::Hit, "hit_counted");
    a.mov_imm(R0, XDP_REDIRECT).exit();

    a.label("no_egress");
    count(&mut a, m, Reason::NoEgress, "no_egress_counted");
    a.ja("socket");
    a.label("stale");
    count(&mut a, m, Reason::Stale, "stale_counted");
    a.ja("socket");
    a.label("graph");
    count(&mut a, m, Reason::Graph, "graph_counted");
    a.ja("socket");
    a.label("no_entry");
    count(&mut a, m, Reason::NoEntry, "no_entry_counted");
    a.label("socket")
        .ldx(Size::W, R2, R6, 16) // ctx->rx_queue_index
        .ld_map(R1, xsks)
        .mov_imm(R3, XDP_PASS)
        .call(HELPER_REDIRECT_MAP)
        .exit();
    a.finish()
}
