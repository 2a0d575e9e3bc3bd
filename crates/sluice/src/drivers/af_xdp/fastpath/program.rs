//! The fast path's XDP program: a frame whose flow the graph has offloaded is sent on in the
//! kernel (redirected to the egress interface through the devmap); every other frame goes to
//! the receive queue's AF_XDP socket as without the fast path.
//!
//! In C it would read:
//!
//! ```text
//! if (data + 60 > data_end || ethertype is 802.1Q or 802.1ad)
//!                                { count(GRAPH); goto socket; }  // padding, tags: the graph's
//! if (ethertype is IPv4 && ((v = lpm_lookup(routes, {ingress, ip->daddr})) && (routed = 1)
//!         || (ihl 5, TCP or UDP && (v = lookup(nat, {ingress, addresses, ports, proto}))
//!             && (routed = 2)))) {
//!     if (options, fragment, ttl <= 1, martian or refused source, 0/8 127/8 224/3
//!         destination, padding, bad checksum)
//!                                { count(GRAPH); goto socket; }
//! } else if (!(v = lookup(flows, {ingress, KIND_XCONNECT}))
//!            && !(v = lookup(flows, {ingress, KIND_BRIDGE, dst MAC, src MAC})))
//!                                { count(MISS_NO_ENTRY); goto socket; }
//! if (v->epoch != epoch[0])      { count(MISS_STALE); goto socket; }
//! if (routed && (dst MAC != v->in_mac || len > v->max_len))
//!                                { count(GRAPH); goto socket; }
//! if (routed == 2 && TCP with SYN, FIN or RST)
//!                                { count(GRAPH); goto socket; }
//! if (redirect_map(devmap, v->out_slot, 0) != XDP_REDIRECT)
//!                                { count(MISS_NO_EGRESS); goto socket; }
//! if (routed) { Ethernet header = v's; ttl -= 1; checksum updated; }
//! if (routed == 2) { addresses, ports = v's; checksums += v's sums; }
//! IPv6 alike: routed = 3 by `routes6` (its own header checks); the hop limit one less.
//! ifstats[v->in_stat].rx += 1, len;  ifstats[v->out_stat].tx += 1, len;
//! v->hits += 1;  v->seen = epoch[1];  count(HIT);  return XDP_REDIRECT;
//! socket: return redirect_map(xsks, ctx->rx_queue_index, XDP_PASS);
//! ```
//!
//! The layouts of the key and value are `maps::Key` and `maps::Value`.

use super::maps::{value as v, Maps, KEY_LEN, KIND_BRIDGE, KIND_XCONNECT};
use crate::sys::bpf::Insn;
use crate::sys::bpf_asm::{Alu, Asm, Cond, Size, FP, R0, R1, R2, R3, R4, R5, R6, R7, R8, R9};

const HELPER_MAP_LOOKUP: i32 = 1;
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
        "for the graph: shorter than 60 bytes, VLAN-tagged, an IPv4 header or source it \
         checks, or a NAT session's TCP SYN, FIN or RST (to the socket)",
    ),
];

/// Frames shorter than this go to the graph, which pads them (a switch passes short frames
/// on padded, as ethernet-input does).
pub const MIN_FRAME: i32 = 60;

// The stack: the key at -24..0, the epoch and stats indices below it, then the sweep's
// generation.
const KEY_AT: i16 = -(KEY_LEN as i16);
const INDEX_AT: i16 = KEY_AT - 8;
const GENERATION_AT: i16 = INDEX_AT - 8;

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
    // IPv4 looks for a route first (a routed ingress then pays no cross-connect miss); a
    // cross-connected one finds none (its trie entries, if any, are stale) and goes on.
    a.jmp_imm(Cond::Eq, R1, i32::from(u16::from_be(0x86dd)), "ipv6");
    a.jmp_imm(Cond::Ne, R1, i32::from(u16::from_be(0x0800)), "xconnect");
    route_lookup(&mut a, m);
    a.label("ipv6");
    route6_lookup(&mut a, m);
    a.label("xconnect");
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
        .mov_imm(R9, 0) // not routed
        .jmp_imm(Cond::Ne, R0, 0, "found");
    // No cross-connect: a bridge's flow, keyed by both MAC addresses too.
    packet(&mut a, MIN_FRAME, "no_entry");
    a.st_imm(Size::H, FP, KEY_AT + 4, KIND_BRIDGE as i32);
    for off in [0, 4, 8] {
        a.ldx(Size::W, R1, R2, off)
            .stx(Size::W, FP, KEY_AT + 8 + off, R1);
    }
    a.ld_map(R1, m.flows.raw_fd())
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, KEY_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Eq, R0, 0, "no_entry");
    a.label("found").mov(R7, R0);
    a.label("entry");
    // The epoch the entry was made in must be the current one.
    a.st_imm(Size::W, FP, INDEX_AT, 0)
        .ld_map(R1, m.epoch.raw_fd())
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, INDEX_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Eq, R0, 0, "stale")
        .ldx(Size::W, R1, R0, 0)
        .ldx(Size::W, R2, R7, v::EPOCH)
        .jmp(Cond::Ne, R1, R2, "stale")
        .ldx(Size::W, R1, R0, 4)
        .stx(Size::W, FP, GENERATION_AT, R1);
    a.jmp_imm(Cond::Eq, R9, 0, "redirect");
    route_checks(&mut a);
    nat_checks(&mut a);
    a.label("redirect");
    // Redirect first: only a frame that will leave is counted as forwarded.
    a.ld_map(R1, m.devmap.raw_fd())
        .ldx(Size::W, R2, R7, v::OUT_SLOT)
        .mov_imm(R3, 0)
        .call(HELPER_REDIRECT_MAP)
        .jmp_imm(Cond::Ne, R0, XDP_REDIRECT, "no_egress");
    a.jmp_imm(Cond::Eq, R9, 0, "count");
    ethernet_rewrite(&mut a);
    a.jmp_imm(Cond::Eq, R9, 3, "rewrite6");
    ttl_rewrite(&mut a);
    a.jmp_imm(Cond::Ne, R9, 2, "count");
    nat_rewrite(&mut a);
    a.ja("count").label("rewrite6");
    hop_limit_rewrite(&mut a);
    a.label("count");
    a.ldx(Size::W, R8, R6, 4) // data_end
        .ldx(Size::W, R1, R6, 0) // data
        .alu(Alu::Sub, R8, R1);
    count_interface(&mut a, m, v::IN_STAT, 0, "rx_counted");
    count_interface(&mut a, m, v::OUT_STAT, 16, "tx_counted");
    // The sweep's generation, not a time: the installer ages entries by it (a timestamp
    // would cost a helper call per frame).
    a.ldx(Size::DW, R1, R7, v::HITS)
        .alu_imm(Alu::Add, R1, 1)
        .stx(Size::DW, R7, v::HITS, R1)
        .ldx(Size::W, R1, FP, GENERATION_AT)
        .stx(Size::W, R7, v::SEEN, R1);
    count(&mut a, m, Reason::Hit, "hit_counted");
    a.mov_imm(R0, XDP_REDIRECT).exit();

    nat_lookup(&mut a, m);
    route_checks_header(&mut a, m);
    route6_checks_header(&mut a);
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

/// `r2 = data`, `r3 = data_end`, and the first `n` bytes known to be there (else `miss`).
fn packet(a: &mut Asm, n: i32, miss: &'static str) {
    a.ldx(Size::W, R2, R6, 0)
        .ldx(Size::W, R3, R6, 4)
        .mov(R1, R2)
        .alu_imm(Alu::Add, R1, n)
        .jmp(Cond::Gt, R1, R3, miss);
}

/// `packet` of an IPv4 header without options (version 4, IHL 5); anything else goes to
/// `miss`.
fn ipv4_packet<'a>(a: &'a mut Asm, miss: &'static str) -> &'a mut Asm {
    packet(a, MIN_FRAME, miss);
    a.ldx(Size::B, R1, R2, 14).jmp_imm(Cond::Ne, R1, 0x45, miss)
}

/// Look the key at the stack's `KEY_AT` up in `map`: none goes to `miss`; an entry goes to
/// `next` with r7 = the value and r9 = `routed` (which checks and rewrite it takes).
fn lookup_entry(a: &mut Asm, map: i32, miss: &'static str, (routed, next): (i32, &'static str)) {
    a.ld_map(R1, map)
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, KEY_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Eq, R0, 0, miss)
        .mov(R7, R0)
        .mov_imm(R9, routed)
        .ja(next);
}

/// An IPv4 frame looked up by its ingress and destination in the `routes` trie (longest
/// prefix): no entry goes on to the NAT lookup, an entry to the header checks
/// (`route_checks_header`) with r7 = the value, r9 = 1.
fn route_lookup(a: &mut Asm, m: &Maps) {
    packet(a, MIN_FRAME, "xconnect");
    a.st_imm(Size::W, FP, KEY_AT, 64) // all 64 bits (the ingress, the destination) to match
        .ldx(Size::W, R1, R6, 12) // ctx->ingress_ifindex
        .stx(Size::W, FP, KEY_AT + 4, R1)
        .ldx(Size::W, R1, R2, 30)
        .stx(Size::W, FP, KEY_AT + 8, R1);
    lookup_entry(a, m.routes.raw_fd(), "nat_lookup", (1, "route_header"));
}

/// An IPv4 TCP or UDP frame (no options: the ports at a fixed place) looked up by its
/// ingress and tuple in the `nat` map: no entry goes on to the cross-connect lookup, an
/// entry to the header checks with r7 = the value, r9 = 2.
fn nat_lookup(a: &mut Asm, m: &Maps) {
    a.label("nat_lookup");
    ipv4_packet(a, "xconnect")
        .ldx(Size::B, R4, R2, 23)
        .jmp_imm(Cond::Eq, R4, 6, "nat_key")
        .jmp_imm(Cond::Ne, R4, 17, "xconnect")
        .label("nat_key")
        .st_imm(Size::W, FP, KEY_AT + 16, 0)
        .stx(Size::B, FP, KEY_AT + 16, R4)
        .ldx(Size::W, R1, R6, 12) // ctx->ingress_ifindex
        .stx(Size::W, FP, KEY_AT, R1);
    // Source, destination, then both ports: as the frame holds them.
    for (at, off) in [(4, 26), (8, 30), (12, 34)] {
        a.ldx(Size::W, R1, R2, off)
            .stx(Size::W, FP, KEY_AT + at, R1);
    }
    lookup_entry(a, m.nat.raw_fd(), "xconnect", (2, "route_header"));
}

/// A routed frame whose header ip4-input would pass as it is goes on to "entry";
/// what the graph treats apart goes to it: options, fragments, TTL 1 or 0, a martian source
/// or one the router refuses (`Maps::refused`), a destination no route carries alike, a bad
/// checksum, padding or a short frame (the total length not the frame's).
fn route_checks_header(a: &mut Asm, m: &Maps) {
    a.label("route_header");
    ipv4_packet(a, "graph")
        // Flags and fragment offset, network order: MF or an offset is a fragment.
        .ldx(Size::H, R1, R2, 20)
        .alu_imm(Alu::And, R1, i32::from(u16::from_be(0x3fff)))
        .jmp_imm(Cond::Ne, R1, 0, "graph")
        .ldx(Size::B, R1, R2, 22)
        .jmp_imm(Cond::Le, R1, 1, "graph");
    // Martian sources (0/8, 127/8, 224/3): ip4-input drops them. A destination ip4-input
    // refuses, or one no route carries alike (a route entry may cover a whole prefix): 0/8,
    // 127/8, multicast, class E and broadcast.
    for at in [26, 30] {
        a.ldx(Size::B, R1, R2, at)
            .jmp_imm(Cond::Eq, R1, 0, "graph")
            .jmp_imm(Cond::Eq, R1, 127, "graph")
            .jmp_imm(Cond::Ge, R1, 224, "graph");
    }
    // The total length must be the frame's: no padding for the graph to trim.
    length_is_the_frames(a, 16, 14, "graph");
    // The header checksum: the ones' complement sum of its ten words is 0xffff.
    a.mov_imm(R5, 0);
    for k in 0..10 {
        a.ldx(Size::H, R1, R2, 14 + 2 * k).alu(Alu::Add, R5, R1);
    }
    for _ in 0..2 {
        a.mov(R1, R5)
            .alu_imm(Alu::Rsh, R1, 16)
            .alu_imm(Alu::And, R5, 0xffff)
            .alu(Alu::Add, R5, R1);
    }
    a.jmp_imm(Cond::Ne, R5, 0xffff, "graph");
    // A source ip4-lookup refuses (ours, a subnet's broadcast address) is the graph's.
    a.ldx(Size::W, R1, R2, 26)
        .stx(Size::W, FP, INDEX_AT, R1)
        .ld_map(R1, m.refused.raw_fd())
        .mov(R2, FP)
        .alu_imm(Alu::Add, R2, INDEX_AT as i32)
        .call(HELPER_MAP_LOOKUP)
        .jmp_imm(Cond::Ne, R0, 0, "graph")
        .ja("entry");
}

/// Goes to `miss` unless the 16-bit length at `at` of the frame (r2 to r3), plus the `before`
/// bytes it does not count, is the frame's length (no padding, nothing cut off).
fn length_is_the_frames(a: &mut Asm, at: i16, before: i32, miss: &'static str) {
    a.ldx(Size::H, R1, R2, at)
        .to_be(R1, 16)
        .alu_imm(Alu::Add, R1, before)
        .mov(R4, R3)
        .alu(Alu::Sub, R4, R2)
        .jmp(Cond::Ne, R1, R4, miss);
}

/// A routed frame's last checks against its entry: addressed to the ingress's MAC (the
/// graph drops others), and no longer than the egress sends.
fn route_checks(a: &mut Asm) {
    packet(a, MIN_FRAME, "graph");
    a.ldx(Size::W, R1, R2, 0)
        .ldx(Size::W, R4, R7, v::IN_MAC)
        .jmp(Cond::Ne, R1, R4, "graph")
        .ldx(Size::H, R1, R2, 4)
        .ldx(Size::H, R4, R7, v::IN_MAC + 4)
        .jmp(Cond::Ne, R1, R4, "graph")
        .mov(R4, R3)
        .alu(Alu::Sub, R4, R2)
        .ldx(Size::H, R1, R7, v::MAX_LEN)
        .jmp(Cond::Gt, R4, R1, "graph");
}

/// An IPv6 frame looked up by its ingress and destination in the `routes6` trie: no entry
/// goes on to the cross-connect lookup, an entry to the header checks with r7 = the value,
/// r9 = 3.
fn route6_lookup(a: &mut Asm, m: &Maps) {
    packet(a, MIN_FRAME, "xconnect");
    a.st_imm(Size::W, FP, KEY_AT, 32 + 128)
        .ldx(Size::W, R1, R6, 12) // ctx->ingress_ifindex
        .stx(Size::W, FP, KEY_AT + 4, R1);
    for k in 0..4 {
        a.ldx(Size::W, R1, R2, 38 + 4 * k)
            .stx(Size::W, FP, KEY_AT + 8 + 4 * k, R1);
    }
    lookup_entry(a, m.routes6.raw_fd(), "xconnect", (3, "route6_header"));
}

/// `r1 = 0` when the IPv6 address at `at` of the frame (r2) is :: or ::1.
fn unspecified_or_loopback(a: &mut Asm, at: i16) {
    a.ldx(Size::W, R1, R2, at);
    for k in 1..3 {
        a.ldx(Size::W, R4, R2, at + 4 * k).alu(Alu::Or, R1, R4);
    }
    // The last word as loaded: its last byte (the top one here) may be 0 or 1.
    a.ldx(Size::W, R4, R2, at + 12)
        .alu_imm(Alu::And, R4, !(1i32 << 24))
        .alu(Alu::Or, R1, R4);
}

/// An IPv6 frame whose header ip6-input and ip6-lookup would pass as it is goes on to
/// "entry"; what they treat apart goes to the graph: a hop-by-hop header, hop limit 1 or 0,
/// a payload length that is not the frame's (padding, or short), a multicast, link-local,
/// unspecified or loopback source or destination.
fn route6_checks_header(a: &mut Asm) {
    a.label("route6_header");
    packet(a, MIN_FRAME, "graph");
    a.ldx(Size::B, R1, R2, 14)
        .alu_imm(Alu::Rsh, R1, 4)
        .jmp_imm(Cond::Ne, R1, 6, "graph")
        .ldx(Size::B, R1, R2, 20)
        .jmp_imm(Cond::Eq, R1, 0, "graph")
        .ldx(Size::B, R1, R2, 21)
        .jmp_imm(Cond::Le, R1, 1, "graph");
    length_is_the_frames(a, 18, 14 + 40, "graph");
    for at in [22, 38] {
        // ff00::/8 and fe80::/10.
        a.ldx(Size::B, R1, R2, at)
            .jmp_imm(Cond::Eq, R1, 0xff, "graph")
            .ldx(Size::H, R1, R2, at)
            .alu_imm(Alu::And, R1, i32::from(u16::from_be(0xffc0)))
            .jmp_imm(Cond::Eq, R1, i32::from(u16::from_be(0xfe80)), "graph");
        unspecified_or_loopback(a, at);
        a.jmp_imm(Cond::Eq, R1, 0, "graph");
    }
    a.ja("entry");
}

/// A NAT entry's frame (r9 = 2) that would move its session's state goes to the graph: TCP
/// with SYN, FIN or RST.
fn nat_checks(a: &mut Asm) {
    a.jmp_imm(Cond::Ne, R9, 2, "redirect");
    packet(a, MIN_FRAME, "graph");
    a.ldx(Size::B, R1, R2, 23)
        .jmp_imm(Cond::Ne, R1, 6, "redirect")
        .ldx(Size::B, R1, R2, 14 + 20 + 13)
        .alu_imm(Alu::And, R1, 0x07)
        .jmp_imm(Cond::Ne, R1, 0, "graph");
}

/// `checksum at off = ~(~checksum + sum at value's sum_at)`, folded (RFC 1624, eqn. 3).
fn add_to_checksum(a: &mut Asm, off: i16, sum_at: i16) {
    a.ldx(Size::H, R1, R2, off)
        .alu_imm(Alu::Xor, R1, 0xffff)
        .ldx(Size::H, R4, R7, sum_at)
        .alu(Alu::Add, R1, R4);
    for _ in 0..2 {
        a.mov(R4, R1)
            .alu_imm(Alu::Rsh, R4, 16)
            .alu_imm(Alu::And, R1, 0xffff)
            .alu(Alu::Add, R1, R4);
    }
    a.alu_imm(Alu::Xor, R1, 0xffff).stx(Size::H, R2, off, R1);
}

/// What nat44-in or nat44-out does to a frame of the entry's session: its addresses and
/// ports, and the checksums updated by the entry's sums (a UDP checksum of 0, none sent,
/// stays 0).
fn nat_rewrite(a: &mut Asm) {
    packet(a, MIN_FRAME, "no_egress");
    for (at, off) in [(v::NAT_SRC, 26), (v::NAT_DST, 30), (v::NAT_PORTS, 34)] {
        a.ldx(Size::W, R1, R7, at).stx(Size::W, R2, off, R1);
    }
    add_to_checksum(a, 24, v::NAT_IP_SUM);
    a.ldx(Size::B, R5, R2, 23)
        .jmp_imm(Cond::Eq, R5, 17, "nat_udp");
    add_to_checksum(a, 14 + 20 + 16, v::NAT_L4_SUM);
    a.ja("count").label("nat_udp");
    a.ldx(Size::H, R1, R2, 14 + 20 + 6)
        .jmp_imm(Cond::Eq, R1, 0, "count");
    add_to_checksum(a, 14 + 20 + 6, v::NAT_L4_SUM);
}

/// What ip4-rewrite and ip6-rewrite do first: the next hop's Ethernet header.
fn ethernet_rewrite(a: &mut Asm) {
    packet(a, MIN_FRAME, "no_egress");
    a.ldx(Size::W, R1, R7, v::DST_MAC)
        .stx(Size::W, R2, 0, R1)
        .ldx(Size::H, R1, R7, v::DST_MAC + 4)
        .stx(Size::H, R2, 4, R1)
        .ldx(Size::H, R1, R7, v::SRC_MAC)
        .stx(Size::H, R2, 6, R1)
        .ldx(Size::W, R1, R7, v::SRC_MAC + 2)
        .stx(Size::W, R2, 8, R1);
}

/// ip6-rewrite's: the hop limit one less (IPv6 has no header checksum).
fn hop_limit_rewrite(a: &mut Asm) {
    packet(a, MIN_FRAME, "no_egress");
    a.ldx(Size::B, R1, R2, 21)
        .alu_imm(Alu::Sub, R1, 1)
        .stx(Size::B, R2, 21, R1);
}

/// ip4-rewrite's: the TTL one less and the header checksum updated for it (RFC 1624; as
/// Linux's ip_decrease_ttl).
fn ttl_rewrite(a: &mut Asm) {
    packet(a, MIN_FRAME, "no_egress");
    a.ldx(Size::B, R1, R2, 22)
        .alu_imm(Alu::Sub, R1, 1)
        .stx(Size::B, R2, 22, R1)
        // The checksum word as loaded (network order bytes): htons(0x0100) is 1 here.
        .ldx(Size::H, R1, R2, 24)
        .alu_imm(Alu::Add, R1, i32::from(u16::from_ne_bytes([1, 0])))
        .jmp_imm(Cond::Lt, R1, 0xffff, "sum_done")
        .alu_imm(Alu::Add, R1, 1)
        .label("sum_done")
        .stx(Size::H, R2, 24, R1);
}
