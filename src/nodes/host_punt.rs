//! host-punt: packets for the host's control plane, on their way to the Linux tap of their
//! receive interface's lcp pair (`src/lcp/`). ip4-local and ip6-local send what no service of
//! the router takes (a BGP session's TCP, OSPF, an echo reply to a ping Linux sent); arp-input
//! and ip6-local send a copy of ARP and neighbour discovery, which the router answers itself
//! but Linux must hear too, to resolve its own neighbours.
//!
//! The packet's bytes are copied into a message for the lcp thread, which writes it to the
//! tap, and the buffer is freed here: the punt path is a slow path by design, and a flood must
//! not take buffers from forwarding. Each worker's node has its own token bucket, so a flood
//! costs at most `PUNT_RATE` copies a second a worker; the rest are counted drops.

use super::rate_limit::TokenBucket;
use crate::graph::{Node, NodeCx, NodeDecl};
use std::sync::mpsc::{SyncSender, TrySendError};

pub const HOST_PUNT: &str = "host-punt";

/// Packets a second each worker's host-punt passes at most, and how many it saves up.
pub const PUNT_RATE: u64 = 10_000;
pub const PUNT_BURST: u64 = 1_000;

/// Punted frames waiting for the lcp thread at most; workers drop (and count) more.
pub const PUNT_QUEUE: usize = 4096;

/// One frame for the host: the interface it arrived on and its bytes from the Ethernet header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Punted {
    pub interface: u32,
    pub frame: Vec<u8>,
}

pub type PuntSender = SyncSender<Punted>;

/// Why a packet goes to the host, carried in `BufferMeta::aux`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Local4 = 0,
    Local6 = 1,
    ArpCopy = 2,
    NdCopy = 3,
}

impl Reason {
    fn from_aux(aux: u32) -> Reason {
        match aux {
            0 => Reason::Local4,
            1 => Reason::Local6,
            2 => Reason::ArpCopy,
            _ => Reason::NdCopy,
        }
    }
}

#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Local4,
    Local6,
    ArpCopy,
    NdCopy,
    RateLimited,
    QueueFull,
    NoHost,
}

pub const ERRORS: [&str; 7] = [
    "ip4 to the host (lcp)",
    "ip6 to the host (lcp)",
    "arp copied to the host (lcp)",
    "neighbour discovery copied to the host (lcp)",
    "punt rate limit exceeded (dropped)",
    "punt queue to the host full (dropped)",
    "host side of the pair gone (dropped)",
];

pub struct HostPunt {
    to_host: PuntSender,
    bucket: TokenBucket,
    frame: Vec<u8>,
}

impl HostPunt {
    pub fn decl(to_host: PuntSender) -> NodeDecl {
        let node = HostPunt {
            to_host,
            bucket: TokenBucket::on_tsc(PUNT_RATE, PUNT_BURST),
            frame: Vec::new(),
        };
        NodeDecl::internal(HOST_PUNT, &[], &ERRORS, node)
    }

    fn punt(&mut self, cx: &mut NodeCx<'_>, bi: u32) -> Error {
        let meta = *cx.bufs.meta(bi);
        let reason = match Reason::from_aux(meta.aux) {
            Reason::Local4 => Error::Local4,
            Reason::Local6 => Error::Local6,
            Reason::ArpCopy => Error::ArpCopy,
            Reason::NdCopy => Error::NdCopy,
        };
        if !self.bucket.allow_at(crate::drivers::tsc::now()) {
            return Error::RateLimited;
        }
        self.frame.clear();
        cx.bufs.copy_packet(bi, &mut self.frame);
        let p = Punted {
            interface: meta.rx_if,
            frame: std::mem::take(&mut self.frame),
        };
        match self.to_host.try_send(p) {
            Ok(()) => reason,
            Err(TrySendError::Full(p)) => {
                self.frame = p.frame;
                Error::QueueFull
            }
            Err(TrySendError::Disconnected(p)) => {
                self.frame = p.frame;
                Error::NoHost
            }
        }
    }
}

impl Node for HostPunt {
    fn process(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        for &bi in frame {
            let outcome = self.punt(cx, bi);
            cx.count_error(outcome as usize, 1);
            if cx.tracing() {
                cx.trace(bi, ERRORS[outcome as usize]);
            }
            cx.bufs.free(bi);
        }
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::Harness;

    #[test]
    fn copies_the_frame_frees_the_buffer_and_counts_a_full_queue() {
        let h = Harness::new(4);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let frames = vec![vec![1u8; 60], vec![2u8; 64]];
        let reasons = [Reason::Local4, Reason::ArpCopy];
        let out = h.run_node_with(HostPunt::decl(tx), &frames, 3, |m, k| {
            m.aux = reasons[k] as u32
        });
        let got = rx.try_recv().unwrap();
        assert_eq!((got.interface, got.frame), (3, vec![1u8; 60]));
        assert!(rx.try_recv().is_err());
        out.assert_counted(&[(Error::Local4 as usize, 1), (Error::QueueFull as usize, 1)]);
        drop(rx);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        drop(rx);
        let out = h.run_node(HostPunt::decl(tx), &frames[..1], 0);
        out.assert_counted(&[(Error::NoHost as usize, 1)]);
    }
}
