//! The device nodes (input, tx, interface-output, error-drop), the one list every graph is
//! built from (`graph.rs`), and what several layers share (rate limits, the L3 offset
//! helpers, ICMP error requests). Every other node lives with its subsystem, one file each:
//! `ethernet/` (ethernet-input), `l2/nodes/` (the cross-connect, the bridge's learn, forward,
//! flood and ARP termination), `ip/` (the IPv4/IPv6 nodes written once, `ip4/` and `ip6/`
//! with what differs, ARP and ND), `acl/node.rs`, `lcp/host_punt.rs`, `handoff/node.rs`.

pub mod error_drop;
pub mod graph;
pub mod input;
pub mod interface_output;
pub mod patch;
#[cfg(test)]
mod patch_tests;
pub mod rate_limit;
pub mod tx;

#[cfg(test)]
pub mod testing;

/// The tx node of interface `name`.
pub fn tx_node_name(interface: &str) -> String {
    format!("{interface}-tx")
}

/// An ICMP error a forwarding node asks icmp4-error or icmp6-error to send about a packet,
/// carried in `BufferMeta::aux`: type, code, and a 16-bit argument (the next-hop MTU for
/// "fragmentation needed" and "packet too big").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpErrorRequest {
    pub kind: u8,
    pub code: u8,
    pub arg: u16,
}

impl IcmpErrorRequest {
    /// An error of ICMP type `kind` and `code`; `arg` is the MTU of a "too big" error or the
    /// pointer of a parameter problem, else 0.
    pub const fn new(kind: u8, code: u8, arg: u16) -> IcmpErrorRequest {
        IcmpErrorRequest { kind, code, arg }
    }

    pub fn to_aux(self) -> u32 {
        (self.kind as u32) << 24 | (self.code as u32) << 16 | self.arg as u32
    }

    pub fn from_aux(aux: u32) -> IcmpErrorRequest {
        IcmpErrorRequest::new((aux >> 24) as u8, (aux >> 16) as u8, aux as u16)
    }
}

/// The packet from its L3 header on, at the offset ethernet-input recorded, when the
/// EtherType just in front of it (after any VLAN tags) is `ethertype`; `None` for a frame of
/// another protocol or one too short to hold the offset. Packets the router builds itself
/// start untagged with the EtherType at 12, where a fresh buffer's offset expects it.
#[inline(always)]
pub(crate) fn l3_header(
    bufs: &crate::buffer::WorkerBuffers,
    bi: u32,
    ethertype: crate::wire::EtherType,
) -> Option<&[u8]> {
    let (m, data) = bufs.meta_data(bi);
    l3_in(data, m.l3_offset as usize, ethertype)
}

/// `l3_header` of a segment already in hand: its bytes and the recorded L3 offset.
#[inline(always)]
pub(crate) fn l3_in(data: &[u8], at: usize, ethertype: crate::wire::EtherType) -> Option<&[u8]> {
    match data.get(at.checked_sub(2)?..)? {
        [high, low, l3 @ ..] if u16::from_be_bytes([*high, *low]) == ethertype.0 => Some(l3),
        _ => None,
    }
}

/// `l3_header` and `l3_len` together, for one ownership check.
#[inline(always)]
pub(crate) fn l3_packet(
    bufs: &crate::buffer::WorkerBuffers,
    bi: u32,
    ethertype: crate::wire::EtherType,
) -> (Option<&[u8]>, usize) {
    let (m, data) = bufs.meta_data(bi);
    let at = m.l3_offset as usize;
    let len = (m.total_len as usize).saturating_sub(at);
    (l3_in(data, at, ethertype), len)
}

/// Bytes from the L3 header to the end of the whole packet (its chained segments too).
#[inline(always)]
pub(crate) fn l3_len(bufs: &crate::buffer::WorkerBuffers, bi: u32) -> usize {
    let m = bufs.meta(bi);
    (m.total_len as usize).saturating_sub(m.l3_offset as usize)
}

/// The packet came in a link-layer broadcast or multicast frame (the group bit of its
/// destination MAC).
#[inline(always)]
pub(crate) fn link_group(bufs: &crate::buffer::WorkerBuffers, bi: u32) -> bool {
    link_group_of(bufs.data(bi))
}

/// `link_group` of a frame's first segment already in hand.
#[inline(always)]
pub(crate) fn link_group_of(frame: &[u8]) -> bool {
    frame.first().is_some_and(|b| b & 1 != 0)
}

/// Put an ICMP error built in `frame` (room for an Ethernet header, then the IP packet) into a
/// new buffer. The Ethernet header is a placeholder of `ethertype` and zero addresses: the
/// lookup node reads only the EtherType and the rewrite node writes the rest. The error
/// comes in by the interface `orig` (the packet it is about) came in by, is the router's own
/// (`FLAG_LOCAL_ORIGIN`) and continues `orig`'s trace record, if it has one. `None` when no
/// buffer is free.
pub(crate) fn icmp_error_buffer(
    bufs: &mut crate::buffer::WorkerBuffers,
    frame: &mut [u8],
    ethertype: crate::wire::EtherType,
    orig: &crate::buffer::BufferMeta,
) -> Option<u32> {
    use crate::buffer::{FLAG_LOCAL_ORIGIN, FLAG_TRACED};
    use crate::wire::ethernet::HEADER_LEN;
    frame[..HEADER_LEN - 2].fill(0);
    frame[HEADER_LEN - 2..HEADER_LEN].copy_from_slice(&ethertype.0.to_be_bytes());
    let nb = bufs.alloc_one()?;
    let m = bufs.meta_mut(nb);
    m.len = frame.len() as u16;
    m.total_len = frame.len() as u32;
    m.rx_if = orig.rx_if;
    m.flags = FLAG_LOCAL_ORIGIN | (orig.flags & FLAG_TRACED);
    m.trace_index = orig.trace_index;
    bufs.data_mut(nb).copy_from_slice(frame);
    Some(nb)
}

/// Cut the packet starting at `bi` to `len` bytes: Ethernet padding or trailing bytes after
/// the IP datagram are not part of it, and a router forwards only the datagram (RFC 1812
/// 5.2.2: the total length says where it ends). Segments past the end go back to the pool.
/// A packet already no longer than `len` is left as it is.
pub(crate) fn trim_to(bufs: &mut crate::buffer::WorkerBuffers, bi: u32, len: usize) {
    use crate::buffer::NO_BUFFER;
    if bufs.packet_len(bi) <= len {
        return;
    }
    bufs.meta_mut(bi).total_len = len as u32;
    let mut seg = bi;
    let mut left = len;
    loop {
        let m = bufs.meta_mut(seg);
        if (m.len as usize) >= left || m.next == NO_BUFFER {
            m.len = left.min(m.len as usize) as u16;
            let rest = std::mem::replace(&mut m.next, NO_BUFFER);
            if rest != NO_BUFFER {
                bufs.free(rest);
            }
            return;
        }
        left -= m.len as usize;
        seg = m.next;
    }
}

#[cfg(test)]
mod trim_tests {
    use super::trim_to;
    use crate::buffer::{BufferPool, HugePages};

    #[test]
    fn trim_cuts_single_and_chained_packets_and_frees_the_tail() {
        let pool = BufferPool::new(16, HugePages::Never).unwrap();
        let mut bufs = pool.worker_handle();
        let bytes: Vec<u8> = (0..5000).map(|i| i as u8).collect();
        for (len, keep) in [
            (100, 60),
            (5000, 2100),
            (5000, 100),
            (5000, 5000),
            (80, 200),
        ] {
            let bi = bufs.packet_from_bytes(&bytes[..len]).unwrap();
            trim_to(&mut bufs, bi, keep);
            let mut out = Vec::new();
            bufs.copy_packet(bi, &mut out);
            assert_eq!(out, &bytes[..keep.min(len)]);
            bufs.free(bi);
        }
        drop(bufs);
        assert_eq!(pool.report().in_use, 0);
    }
}

/// The L3 nodes read their headers at the offset the metadata records. Whatever that offset
/// says — right, past the end, inside the Ethernet header — and whatever the bytes, they give
/// a verdict and count it; nothing panics or reads outside the packet.
#[cfg(test)]
mod l3_offset_tests {
    use crate::buffer::{BufferPool, HugePages};
    use crate::ip::ip4;
    use crate::ip::ip6;
    use proptest::prelude::*;

    proptest::proptest! {
        #[test]
        fn l3_nodes_take_any_offset(
            bytes in proptest::collection::vec(any::<u8>(), 0..160),
            l3 in any::<u8>(),
            adj in 0u32..8,
            v6 in any::<bool>(),
        ) {
            let pool = BufferPool::new(64, HugePages::Never).unwrap();
            let mut bufs = pool.worker_handle();
            let (view4, view6) = (
                ip4::rewrite::test_support::view().load_full(),
                ip6::input::test_support::view().load_full(),
            );
            for step in 0..3 {
                let Some(bi) = bufs.packet_from_bytes(&bytes) else {
                    return Ok(());
                };
                let m = bufs.meta_mut(bi);
                (m.l3_offset, m.adj, m.rx_if) = (l3, adj, 0);
                match (step, v6) {
                    (0, false) => {
                        let _ = ip4::rewrite::Ip4Rewrite::rewrite(&view4, &mut bufs, bi);
                    }
                    (1, false) => {
                        let _ = <crate::ip::V4 as crate::ip::local::LocalRules>::local(&view4, &mut bufs, bi);
                    }
                    (0, true) => {
                        let _ = ip6::rewrite::Ip6Rewrite::rewrite(&view6, &mut bufs, bi);
                    }
                    (1, true) => {
                        let _ = <crate::ip::V6 as crate::ip::local::LocalRules>::local(&view6, &mut bufs, bi);
                    }
                    _ => {
                        let ip = super::l3_header(&bufs, bi, crate::wire::EtherType::IPV6);
                        let _ = <crate::ip::V6 as crate::ip::input::InputChecks>::check(ip, super::l3_len(&bufs, bi));
                    }
                }
                bufs.free(bi);
            }
        }
    }
}
