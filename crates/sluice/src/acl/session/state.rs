//! What a session's state is made of: the protocols it tells apart, the flags it remembers
//! per side (TCP's SYN and FIN, RST, and which sides have sent at all), the timeouts and the
//! eviction class that follow from them, and the clock.

use crate::wire::tcp;
use std::sync::OnceLock;
use std::time::Instant;

pub(super) const ICMP: u8 = 1;
pub(super) const ICMPV6: u8 = 58;
pub(super) const TCP: u8 = 6;
pub(super) const UDP: u8 = 17;

// Flags a session remembers, per side (a = the lower address and port).
pub(super) const SYN_A: u64 = 1;
pub(super) const SYN_B: u64 = 2;
pub(super) const FIN_A: u64 = 4;
pub(super) const FIN_B: u64 = 8;
pub(super) const RST: u64 = 16;
/// A packet went from side a (any protocol).
pub(super) const SENT_A: u64 = 32;
/// A packet went from side b.
pub(super) const SENT_B: u64 = 64;
/// Slot flag: the first packet went from side b to side a.
pub(super) const FROM_B: u64 = 1 << 63;

/// Seconds a session lives after its last packet, by protocol and TCP state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP with a SYN seen each way and no FIN or RST.
    pub tcp_established: u64,
    /// TCP opening (one SYN) or closing (a FIN each way, or a RST).
    pub tcp_transient: u64,
    pub udp: u64,
    pub icmp: u64,
    /// Any other protocol.
    pub other: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            tcp_established: 7200,
            tcp_transient: 120,
            udp: 120,
            icmp: 30,
            other: 60,
        }
    }
}

impl Timeouts {
    /// Milliseconds a session of `proto` with `flags` lives after its last packet.
    pub(super) fn of(&self, proto: u8, flags: u64) -> u64 {
        let s = match proto {
            TCP if tcp_established(flags) => self.tcp_established,
            TCP => self.tcp_transient,
            UDP => self.udp,
            ICMP | ICMPV6 => self.icmp,
            _ => self.other,
        };
        s.saturating_mul(1000)
    }
}

/// TCP with a SYN seen each way and neither a RST nor a FIN each way.
pub(super) fn tcp_established(flags: u64) -> bool {
    flags & (SYN_A | SYN_B) == SYN_A | SYN_B
        && flags & RST == 0
        && flags & (FIN_A | FIN_B) != FIN_A | FIN_B
}

/// Whether a full table may evict the session to make room: TCP not established (opening,
/// or closing), or another protocol that has not been answered (packets one way only) —
/// the sessions Linux calls not yet assured, and VPP's transient list.
pub(super) fn transient(proto: u8, flags: u64) -> bool {
    match proto {
        TCP => !tcp_established(flags),
        _ => flags & (SENT_A | SENT_B) != SENT_A | SENT_B,
    }
}

/// Whether a packet of `proto` with TCP header flags `tcp_flags` may open a session: any
/// packet but TCP, and of TCP a SYN without ACK, RST or FIN (the first packet of a
/// connection), as Linux conntrack with `nf_conntrack_tcp_loose = 0`.
pub(super) fn may_open(proto: u8, tcp_flags: u8) -> bool {
    proto != TCP || tcp_flags & (tcp::SYN | tcp::ACK | tcp::RST | tcp::FIN) == tcp::SYN
}

/// Milliseconds since the first call: the sessions' clock.
pub fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// The flags a packet going from side a (`from_a`) or b adds to its session: that the side
/// has sent, and for TCP its SYN, FIN and RST.
pub(super) fn packet_bits(proto: u8, tcp_flags: u8, from_a: bool) -> u64 {
    let (syn, fin, sent) = if from_a {
        (SYN_A, FIN_A, SENT_A)
    } else {
        (SYN_B, FIN_B, SENT_B)
    };
    if proto != TCP {
        return sent;
    }
    let mut b = sent;
    if tcp_flags & tcp::SYN != 0 {
        b |= syn;
    }
    if tcp_flags & tcp::FIN != 0 {
        b |= fin;
    }
    if tcp_flags & tcp::RST != 0 {
        b |= RST;
    }
    b
}
