//! Per-buffer metadata: what the nodes and drivers say about a packet besides its bytes.

use super::{HEADROOM, NO_BUFFER};

/// Buffer flag: the packet is being traced.
pub const FLAG_TRACED: u8 = 1 << 0;
/// Buffer flag: the router itself made this packet (an ICMP reply or error), so forwarding
/// does not check or decrement its TTL.
pub const FLAG_LOCAL_ORIGIN: u8 = 1 << 1;
/// Buffer flag: nat44-in translated this packet, so nat44-out leaves it alone.
pub const FLAG_NAT_DONE: u8 = 1 << 2;
/// Buffer flag: worker-handoff sends this packet to the worker in `aux` (a NAT reply to the
/// worker owning its session) instead of the one its flow hash picks.
pub const FLAG_TO_WORKER: u8 = 1 << 3;
/// Buffer flag: nat44-in found this packet's session (its index in `aux`) and left the
/// translation, of its source alone, to nat44-out, which then need not look it up again.
pub const FLAG_NAT_HINT: u8 = 1 << 4;
/// Buffer flag: every node this packet crossed can be done by the XDP fast path, so its flow
/// may be offloaded (drivers::af_xdp::fastpath); set by an input node of an interface with
/// the fast path on, cleared by every node not declared offload-safe.
pub const FLAG_OFFLOAD: u8 = 1 << 5;
/// Buffer flag: a NAT node translated this packet by a session the XDP fast path may carry
/// (`aux`: the session's index, and `NAT_OFFER_REPLY` for its reply direction), so
/// interface-output offers the session's direction, not a route.
pub const FLAG_NAT_OFFER: u8 = 1 << 6;
/// Buffer flag: l2-fwd sent this frame to the port its destination was learnt on (`aux`:
/// the bridge domain's index), so interface-output offers the bridge's flow (ingress,
/// destination and source MAC), not a cross-connect.
pub const FLAG_L2_OFFER: u8 = 1 << 7;
/// With `FLAG_NAT_OFFER`: `aux`'s bit for a session's reply direction.
pub const NAT_OFFER_REPLY: u32 = 1 << 31;
/// Where the L3 header of a packet without VLAN tags starts: after the 14-byte Ethernet
/// header. A fresh buffer's `l3_offset`, so the packets the router builds itself need not set
/// it.
pub const UNTAGGED_L3_OFFSET: u8 = 14;

/// Per-buffer metadata, kept apart from the packet bytes so that the data region stays a
/// plain array of equal strides (the shape AF_XDP UMEM and memif regions need).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct BufferMeta {
    /// Start of this segment's data, counted from the start of the buffer.
    pub offset: u16,
    /// Bytes of data in this segment.
    pub len: u16,
    /// Bytes in the whole chain; meaningful in the first segment only.
    pub total_len: u32,
    /// Next segment of a chained packet, or `NO_BUFFER`.
    pub next: u32,
    /// Interface the packet arrived on.
    pub rx_if: u32,
    /// Interface the packet leaves by, chosen by a forwarding node.
    pub tx_if: u32,
    /// Next hop (adjacency index) chosen by a lookup node; `u32::MAX` before one ran.
    pub adj: u32,
    /// A word one node leaves for the next: on the way to icmp4-error / icmp6-error, the
    /// error to send (see `nodes::IcmpErrorRequest`). 0 when unused.
    pub aux: u32,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// Where the L3 header starts, counted from the start of the data: ethernet-input
    /// records it once (VLAN tags included) so that the L3 nodes do not parse the Ethernet
    /// header again. A byte is enough: at most two tags follow the 14-byte header.
    pub l3_offset: u8,
    /// Index of this packet's record in the worker's trace, when traced.
    pub trace_index: u16,
    /// Receive time in nanoseconds since the Unix epoch (0 when unknown).
    pub timestamp_ns: u64,
}

impl BufferMeta {
    /// A fresh buffer's metadata: data at `HEADROOM`, nothing chosen yet.
    pub const FRESH: BufferMeta = BufferMeta {
        offset: HEADROOM as u16,
        len: 0,
        total_len: 0,
        next: NO_BUFFER,
        rx_if: u32::MAX,
        tx_if: u32::MAX,
        adj: u32::MAX,
        aux: 0,
        flags: 0,
        l3_offset: UNTAGGED_L3_OFFSET,
        trace_index: 0,
        timestamp_ns: 0,
    };

    /// Drop the first `n` bytes of the first segment (outer headers a node removes).
    /// Refused, with nothing changed, when the segment is shorter than `n`.
    pub fn advance(&mut self, n: usize) -> bool {
        let Ok(n16) = u16::try_from(n) else {
            return false;
        };
        if n16 > self.len || n as u32 > self.total_len {
            return false;
        }
        self.offset += n16;
        self.len -= n16;
        self.total_len -= n as u32;
        // The L3 header stays where it was in the bytes: nearer the new start.
        self.l3_offset = self.l3_offset.saturating_sub(n.min(u8::MAX as usize) as u8);
        true
    }

    /// Make room for `n` more bytes in front of the first segment, out of the headroom.
    /// Refused, with nothing changed, when the headroom is shorter than `n`.
    pub fn prepend(&mut self, n: usize) -> bool {
        let Ok(n16) = u16::try_from(n) else {
            return false;
        };
        if n16 > self.offset || self.len as usize + n > u16::MAX as usize {
            return false;
        }
        self.offset -= n16;
        self.len += n16;
        self.total_len += n as u32;
        self.l3_offset = self.l3_offset.saturating_add(n.min(u8::MAX as usize) as u8);
        true
    }
}
