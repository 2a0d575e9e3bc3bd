//! host-punt: packets for the host's control plane, on their way to the Linux tap of their
//! receive interface's lcp pair (`src/lcp/`). ip4-local and ip6-local send what no service of
//! the router takes (a BGP session's TCP, OSPF, an echo reply to a ping Linux sent); arp-input
//! and ip6-local send a copy of ARP and neighbour discovery, which the router answers itself
//! but Linux must hear too, to resolve its own neighbours.
//!
//! The packet's bytes are copied into a message for the lcp thread, which writes it to the
//! tap, and the buffer is freed here: the punt path is a slow path by design, and a flood must
//! not take buffers from forwarding. The punt policy (`[punt]`, `src/lcp/policy.rs`) decides
//! what goes up and in which class (`src/lcp/punt_class.rs`): the rest is dropped and
//! counted. Each worker's node has a token bucket per class at that class's rate, so a flood
//! costs at most that many copies a second a worker and empties only its own class's bucket
//! (a SYN flood does not starve the BGP of the configured peers); the rest are counted drops,
//! a counter per class.

use crate::graph::names::error_counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::lcp::policy::PuntPolicy;
use crate::lcp::punt_class::{PuntClass, CLASSES};
use crate::nodes::rate_limit::TokenBucket;
use crate::wire::EtherType;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

pub const NAME: &str = "host-punt";

/// Punted frames waiting for the lcp thread at most; workers drop (and count) more.
pub const PUNT_QUEUE: usize = 4096;

/// One frame for the host: the interface it arrived on and its bytes from the Ethernet header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Punted {
    pub interface: u32,
    pub frame: Vec<u8>,
}

/// The workers' end of the channel to the lcp thread. It counts what waits in the channel
/// so that only the protected class may fill its last quarter: when Linux or the lcp thread
/// falls behind, the classes' floods fill the queue up to the reserve, and a peer's routing
/// protocol packets still find room.
#[derive(Clone)]
pub struct PuntSender {
    tx: SyncSender<Punted>,
    queued: Arc<AtomicUsize>,
    /// Queued frames from which only the protected class is taken.
    reserve_from: usize,
}

/// The lcp thread's end.
pub struct PuntReceiver {
    rx: Receiver<Punted>,
    queued: Arc<AtomicUsize>,
}

/// A channel of `PUNT_QUEUE` frames.
pub fn punt_channel() -> (PuntSender, PuntReceiver) {
    punt_channel_of(PUNT_QUEUE)
}

/// A channel of `capacity` frames, the last quarter kept for the protected class.
pub fn punt_channel_of(capacity: usize) -> (PuntSender, PuntReceiver) {
    let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
    let queued = Arc::new(AtomicUsize::new(0));
    let sender = PuntSender {
        tx,
        queued: queued.clone(),
        reserve_from: capacity - capacity / 4,
    };
    (sender, PuntReceiver { rx, queued })
}

impl PuntSender {
    fn try_send(&self, p: Punted, protected: bool) -> Result<(), TrySendError<Punted>> {
        // Counted before the send, so the receiver never takes away what was not added.
        let before = self.queued.fetch_add(1, Ordering::Relaxed);
        let sent = if !protected && before >= self.reserve_from {
            Err(TrySendError::Full(p))
        } else {
            self.tx.try_send(p)
        };
        if sent.is_err() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }
}

impl PuntReceiver {
    fn took(&self, p: Punted) -> Punted {
        self.queued.fetch_sub(1, Ordering::Relaxed);
        p
    }

    pub fn recv_timeout(&self, wait: Duration) -> Result<Punted, RecvTimeoutError> {
        self.rx.recv_timeout(wait).map(|p| self.took(p))
    }

    /// What waits now, without blocking.
    pub fn try_iter(&self) -> impl Iterator<Item = Punted> + '_ {
        self.rx.try_iter().map(|p| self.took(p))
    }
}

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

error_counters! {
    pub enum Error {
        Local4 = "ip4 to the host (lcp)",
        Local6 = "ip6 to the host (lcp)",
        ArpCopy = "arp copied to the host (lcp)",
        NdCopy = "neighbour discovery copied to the host (lcp)",
        QueueFull = "punt queue to the host full (dropped)",
        NoHost = "host side of the pair gone (dropped)",
        Refused = "outside the punt policy (dropped)",
        /// A class's bucket was empty: one counter per class, in `PuntClass` order.
        LimitProtected = "punt rate limit exceeded: protected (dropped)",
        LimitRouting = "punt rate limit exceeded: routing (dropped)",
        LimitArp = "punt rate limit exceeded: arp (dropped)",
        LimitNd = "punt rate limit exceeded: nd (dropped)",
        LimitIcmp = "punt rate limit exceeded: icmp (dropped)",
        LimitTcpUdp = "punt rate limit exceeded: tcp-udp (dropped)",
        LimitOther = "punt rate limit exceeded: other (dropped)",
    }
    impl From<PuntClass> {
        Protected => LimitProtected,
        Routing => LimitRouting,
        Arp => LimitArp,
        Nd => LimitNd,
        Icmp => LimitIcmp,
        TcpUdp => LimitTcpUdp,
        Other => LimitOther,
    }
}

pub struct HostPunt {
    to_host: PuntSender,
    policy: Arc<PuntPolicy>,
    /// A bucket per class, by `PuntClass` index.
    buckets: [TokenBucket; CLASSES.len()],
    frame: Vec<u8>,
}

impl HostPunt {
    pub fn decl(to_host: PuntSender, policy: Arc<PuntPolicy>) -> NodeDecl {
        let node = HostPunt {
            to_host,
            buckets: CLASSES.map(|c| {
                let r = policy.rate(c);
                TokenBucket::on_tsc(r.rate, r.burst)
            }),
            policy,
            frame: Vec::new(),
        };
        NodeDecl::internal(NAME, &[], &Error::REASONS, node)
    }

    fn punt(&mut self, cx: &mut NodeCx<'_>, bi: u32) -> Error {
        let meta = *cx.bufs.meta(bi);
        let why = Reason::from_aux(meta.aux);
        let (reason, family) = match why {
            Reason::Local4 => (Error::Local4, Some(EtherType::IPV4)),
            Reason::Local6 => (Error::Local6, Some(EtherType::IPV6)),
            Reason::ArpCopy => (Error::ArpCopy, None),
            Reason::NdCopy => (Error::NdCopy, None),
        };
        let l3 = family.and_then(|e| crate::nodes::l3_header(cx.bufs, bi, e));
        let Some(class) = self.policy.judge(why, l3) else {
            return Error::Refused;
        };
        if !self.buckets[class as usize].allow_at(crate::sys::tsc::now()) {
            return Error::from(class);
        }
        self.frame.clear();
        cx.bufs.copy_packet(bi, &mut self.frame);
        let p = Punted {
            interface: meta.rx_if,
            frame: std::mem::take(&mut self.frame),
        };
        match self.to_host.try_send(p, class == PuntClass::Protected) {
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
                cx.trace(bi, outcome.reason());
            }
            cx.bufs.free(bi);
        }
        frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodes::testing::{Harness, Outcome};

    #[test]
    fn copies_the_frame_frees_the_buffer_and_counts_a_full_queue() {
        let h = Harness::new(4);
        let (tx, rx) = punt_channel_of(1);
        let frames = vec![vec![1u8; 60], vec![2u8; 64]];
        let reasons = [Reason::Local4, Reason::ArpCopy];
        let out = h.run_node_with(
            HostPunt::decl(tx, Arc::new(PuntPolicy::default())),
            &frames,
            3,
            |m, k| m.aux = reasons[k] as u32,
        );
        let got: Vec<Punted> = rx.try_iter().collect();
        assert_eq!(
            got,
            [Punted {
                interface: 3,
                frame: vec![1u8; 60]
            }]
        );
        out.assert_counted(&[(Error::Local4 as usize, 1), (Error::QueueFull as usize, 1)]);
        drop(rx);
        let (tx, rx) = punt_channel_of(1);
        drop(rx);
        let out = h.run_node(
            HostPunt::decl(tx, Arc::new(PuntPolicy::default())),
            &frames[..1],
            0,
        );
        out.assert_counted(&[(Error::NoHost as usize, 1)]);
    }

    /// Run host-punt with `policy` and a queue of `queue` to the lcp thread over `frames`
    /// (IPv4 from if1, frame k punted for `reasons[k]`, the rest for the last reason): the
    /// counters and the frames that went up.
    fn punt(
        policy: PuntPolicy,
        queue: usize,
        frames: &[Vec<u8>],
        reasons: &[Reason],
    ) -> (Outcome, Vec<Vec<u8>>) {
        let (tx, rx) = punt_channel_of(queue);
        let h = Harness::new(4);
        let out = h.run_node_with(HostPunt::decl(tx, Arc::new(policy)), frames, 1, |m, k| {
            m.aux = reasons[k.min(reasons.len() - 1)] as u32;
            m.l3_offset = 14;
        });
        (out, rx.try_iter().map(|p| p.frame).collect())
    }

    /// A flood of SYNs to port 22 empties the tcp-udp bucket and no other: the peer's BGP
    /// segments after it still go up, each class counting its own drops.
    #[test]
    fn a_flood_empties_only_its_own_class() {
        use crate::lcp::punt_class::{ClassRate, Peers};
        let mut policy = PuntPolicy {
            peers: Peers::parse(&["10.0.0.1"]).unwrap(),
            ..PuntPolicy::default()
        };
        // One token a second: the test ends long before a refill.
        policy.classes = CLASSES.map(|_| ClassRate { rate: 1, burst: 2 });
        let mut frames = vec![tcp(1, 22); 6];
        frames.extend([tcp(9, 179), tcp(9, 179), tcp(9, 179)]);
        frames.extend([tcp(1, 179), tcp(1, 179)]);
        let (out, up) = punt(policy, 16, &frames, &[Reason::Local4]);
        out.assert_counted(&[
            (Error::Local4 as usize, 6),
            (Error::LimitTcpUdp as usize, 4),
            (Error::LimitRouting as usize, 1),
        ]);
        assert_eq!(
            &up[4..],
            [tcp(1, 179), tcp(1, 179)],
            "the peer's BGP went up"
        );
    }

    /// The last quarter of the queue to the lcp thread is the protected class's: SSH fills
    /// the queue to 6 of 8, a peer's BGP the rest.
    #[test]
    fn the_protected_class_has_the_end_of_the_queue() {
        let policy = PuntPolicy {
            peers: crate::lcp::punt_class::Peers::parse(&["10.0.0.1"]).unwrap(),
            ..PuntPolicy::default()
        };
        let mut frames = vec![tcp_to(22); 8];
        frames.extend([tcp_to(179), tcp_to(179), tcp_to(179)]);
        let (out, up) = punt(policy, 8, &frames, &[Reason::Local4]);
        out.assert_counted(&[(Error::Local4 as usize, 8), (Error::QueueFull as usize, 3)]);
        assert_eq!(&up[6..], [tcp_to(179), tcp_to(179)]);
    }

    /// A TCP SYN from 10.0.0.1 to 10.0.0.2 port `dport`, in an Ethernet frame.
    fn tcp_to(dport: u16) -> Vec<u8> {
        tcp(1, dport)
    }

    /// A TCP SYN from 10.0.0.`src` to 10.0.0.2 port `dport`, in an Ethernet frame.
    fn tcp(src: u8, dport: u16) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, src, 10, 0, 0, 2]);
        f.extend_from_slice(&40000u16.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.resize(60, 0);
        f
    }

    /// With `allow = ["bgp", "nd"]` a BGP segment goes up, ssh and an ARP copy do not.
    #[test]
    fn the_policy_decides_what_goes_up() {
        let mut allow = Vec::new();
        for w in ["bgp", "nd"] {
            allow.extend(crate::lcp::policy::PuntRule::parse(w).unwrap());
        }
        let policy = PuntPolicy {
            allow: Some(allow),
            ..PuntPolicy::default()
        };
        let frames = vec![tcp_to(179), tcp_to(22), vec![0u8; 60], vec![0u8; 60]];
        let reasons = [
            Reason::Local4,
            Reason::Local4,
            Reason::ArpCopy,
            Reason::NdCopy,
        ];
        let (out, up) = punt(policy, 8, &frames, &reasons);
        out.assert_counted(&[
            (Error::Local4 as usize, 1),
            (Error::Refused as usize, 2),
            (Error::NdCopy as usize, 1),
        ]);
        assert_eq!(up, [tcp_to(179), vec![0u8; 60]]);
    }
}
