//! A driver's input node (`af-packet-input`, `af-xdp-input`, `pcap-input`): polls every rx queue of that
//! driver placed on this worker and hands the packets to ethernet-input.

use crate::buffer::FLAG_OFFLOAD;
use crate::dataplane::pcap_trace::{self, PcapTrace};
use crate::dataplane::placement::RxPlacement;
use crate::dataplane::queues::SharedQueueCounters;
use crate::drivers::{DirectTx, RxBurst, RxQueue};
use crate::ethernet::input as ethernet_input;
use crate::graph::frame::FRAME_SIZE;
use crate::graph::names::error_counters;
use crate::graph::names::next_nodes;
use crate::graph::{epoch, Node, NodeCx, NodeDecl, NodeKind};
use crate::handoff::node as handoff;
use crate::handoff::Handoff;
use crate::interface::Interface;
use crate::sys::tsc;
use std::fmt;
use std::sync::Arc;

next_nodes! {
    enum Next {
        EthernetInput = ethernet_input::NAME,
        /// Only in graphs with handoff (`decl_placed` given one).
        WorkerHandoff = handoff::WORKER_HANDOFF,
    }
}

error_counters! {
    enum Error {
        NoBuffers = "no free buffers (packet dropped)",
        TooLong = "frame larger than a buffer chain",
        Truncated = "frame truncated by the device",
        BadDescriptor = "bad descriptor from the device",
    }
}

struct Trace<'a> {
    interface: &'a str,
    queue: usize,
    len: usize,
}

impl fmt::Display for Trace<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} queue {} len {}",
            self.interface, self.queue, self.len
        )
    }
}

/// One rx queue placed on this worker.
pub struct PlacedQueue {
    pub interface: Arc<Interface>,
    pub queue: usize,
    pub rx: Box<dyn RxQueue>,
    /// Written only by the worker polling the queue (they move with it).
    pub counters: SharedQueueCounters,
}

pub struct InputNode {
    name: String,
    queues: Vec<PlacedQueue>,
    burst: Box<[u32; FRAME_SIZE]>,
    /// Queues moving to or from this worker (`set interface rx-placement`), and its index.
    placement: Option<(Arc<RxPlacement>, usize)>,
    /// Interfaces whose packets go to worker-handoff rather than ethernet-input.
    handoff: Option<Arc<Handoff>>,
    /// `pcap trace rx`.
    capture: Option<Arc<PcapTrace>>,
    /// The cross-connect patch, where some interface may take it.
    patch: Option<Patching>,
}

/// What an input node needs for the cross-connect patch (`nodes::patch`).
pub struct Patching {
    /// By interface index: the interface and this worker's transmit queue as a patch target,
    /// where its driver has one.
    pub direct: Vec<Option<(Arc<Interface>, DirectTx)>>,
    /// Shorter frames go to the graph (ethernet-input pads them).
    pub min_frame: usize,
    /// The input node's next slot for l2-patch (set by `decl_placed`).
    pub next: usize,
}

impl InputNode {
    pub fn decl(name: &str, queues: Vec<PlacedQueue>) -> NodeDecl {
        Self::decl_placed(name, queues, None, None, None, None)
    }

    /// An input node of worker `placement.1` whose queues may move to and from other
    /// workers through `placement.0`, and whose interfaces with a spread in `handoff` go to
    /// worker-handoff. With `patch`, frames may take the cross-connect patch, counted under
    /// l2-patch (which the graph must hold).
    pub fn decl_placed(
        name: &str,
        queues: Vec<PlacedQueue>,
        placement: Option<(Arc<RxPlacement>, usize)>,
        handoff: Option<Arc<Handoff>>,
        capture: Option<Arc<PcapTrace>>,
        patch: Option<Patching>,
    ) -> NodeDecl {
        // Without a handoff (tests, tools) there is no worker-handoff node to name.
        let mut next: Vec<&str> = match handoff {
            Some(_) => Next::NAMES.to_vec(),
            None => Next::NAMES[..Next::WorkerHandoff as usize].to_vec(),
        };
        let patch = patch.map(|p| Patching {
            next: next.len(),
            ..p
        });
        if patch.is_some() {
            next.push(super::patch::NAME);
        }
        NodeDecl::new(
            name,
            NodeKind::Input,
            &next,
            &Error::REASONS,
            InputNode {
                name: name.to_string(),
                queues,
                burst: Box::new([0; FRAME_SIZE]),
                placement,
                handoff,
                capture,
                patch,
            },
        )
        .offload_safe()
    }
}

/// The patch's target for queue `q` now, if it has one: the frames of its interface were last
/// seen leaving, cross-connected and untouched, by an interface whose queue takes them
/// directly, in the current forwarding epoch.
fn patch_target<'p>(
    patch: &'p Patching,
    q: &PlacedQueue,
) -> Option<&'p (Arc<Interface>, DirectTx)> {
    let tx = q.interface.patch.as_ref()?.target(epoch::current())?;
    patch
        .direct
        .get(tx as usize)?
        .as_ref()
        .filter(|(itf, _)| itf.is_up())
}

/// Send what the patch kept back from queue `q` on `to`, counted as l2-patch's work (next
/// slot `next`).
fn send_held(
    cx: &mut NodeCx<'_>,
    next: usize,
    q: &mut PlacedQueue,
    (itf, to): &(Arc<Interface>, DirectTx),
    held: usize,
) {
    let start = tsc::now();
    let t = q.rx.send_held(to);
    let c = itf.counters(cx.thread);
    c.tx_packets.add(t.sent as u64);
    c.tx_bytes.add(t.bytes);
    if t.queue_full > 0 {
        c.tx_errors.add(t.queue_full as u64);
    }
    let full = (super::patch::Error::QueueFull as usize, t.queue_full as u64);
    cx.charge(next, held, tsc::now().wrapping_sub(start), &[full]);
}

impl InputNode {
    /// Whether the frames of queue `q` may take the patch: none while they are watched or
    /// handed to other workers.
    fn may_patch(&self, q: &PlacedQueue, watched: bool) -> bool {
        self.patch.is_some()
            && q.interface.patch.is_some()
            && !watched
            && !self
                .handoff
                .as_ref()
                .is_some_and(|h| h.enabled(q.interface.index))
    }
}

impl Node for InputNode {
    fn held_buffers(&self) -> usize {
        self.queues.iter().map(|q| q.rx.held_buffers()).sum()
    }

    fn process(&mut self, cx: &mut NodeCx<'_>, _frame: &[u32]) -> usize {
        if let Some((placement, worker)) = &self.placement {
            placement.settle(*worker, &self.name, &mut self.queues);
        }
        // The XDP fast path and the patch may take packets over unless they are watched.
        let watched = cx.tracing()
            || self
                .capture
                .as_ref()
                .is_some_and(|t| t.any(pcap_trace::RX | pcap_trace::TX | pcap_trace::DROP));
        let mut total = 0;
        let mut queues = std::mem::take(&mut self.queues);
        for q in queues.iter_mut() {
            if !q.interface.is_up() {
                continue;
            }
            let counters = q.interface.counters(cx.thread);
            let missed = q.rx.take_missed();
            if missed > 0 {
                counters.rx_miss.add(missed);
                q.counters.0.drops.add(missed);
            }
            let may_patch = self.may_patch(q, watched);
            let target = match (&self.patch, may_patch) {
                (Some(p), true) => patch_target(p, q),
                _ => None,
            };
            let (r, held) = match target {
                Some(to) => {
                    let min = self.patch.as_ref().map_or(0, |p| p.min_frame);
                    match q.rx.rx_patch(&to.1, min, cx.bufs, &mut self.burst[..]) {
                        Some(p) => (p.graph, Some((p.held, p.held_bytes))),
                        None => (q.rx.rx_burst(cx.bufs, &mut self.burst[..]), None),
                    }
                }
                None => (q.rx.rx_burst(cx.bufs, &mut self.burst[..]), None),
            };
            if let (Some(to), Some((n, bytes))) = (target, held) {
                if n > 0 {
                    counters.rx_packets.add(n as u64);
                    counters.rx_bytes.add(bytes);
                    q.counters.0.packets.add(n as u64);
                    q.counters.0.bytes.add(bytes);
                    let next = self.patch.as_ref().map_or(0, |p| p.next);
                    send_held(cx, next, q, to, n);
                    total += n;
                }
            }
            total += self.hand_on(
                cx,
                q,
                r,
                may_patch || (q.interface.fast_path.is_some() && !watched),
            );
        }
        self.queues = queues;
        total
    }
}

impl InputNode {
    /// Count what one burst brought for the graph and send it to ethernet-input (or
    /// worker-handoff), marked `FLAG_OFFLOAD` if `offload`.
    fn hand_on(
        &mut self,
        cx: &mut NodeCx<'_>,
        q: &mut PlacedQueue,
        r: RxBurst,
        offload: bool,
    ) -> usize {
        let counters = q.interface.counters(cx.thread);
        let dropped = r.no_buffers + r.too_long + r.truncated + r.bad_descriptors;
        if dropped > 0 {
            cx.count_error(Error::NoBuffers as usize, r.no_buffers);
            cx.count_error(Error::TooLong as usize, r.too_long);
            cx.count_error(Error::Truncated as usize, r.truncated);
            cx.count_error(Error::BadDescriptor as usize, r.bad_descriptors);
            counters.drops.add(dropped);
            counters.rx_packets.add(dropped);
            q.counters.0.drops.add(dropped);
        }
        if r.packets == 0 {
            return 0;
        }
        counters.rx_packets.add(r.packets as u64);
        counters.rx_bytes.add(r.bytes);
        q.counters.0.packets.add(r.packets as u64);
        q.counters.0.bytes.add(r.bytes);
        let pkts = &self.burst[..r.packets];
        for &bi in pkts {
            let m = cx.bufs.meta_mut(bi);
            m.rx_if = q.interface.index;
            m.flags = if offload {
                m.flags | FLAG_OFFLOAD
            } else {
                m.flags & !FLAG_OFFLOAD
            };
        }
        if cx.tracing() {
            for &bi in pkts {
                if cx.trace_start(bi) {
                    let len = cx.bufs.packet_len(bi);
                    cx.trace(
                        bi,
                        Trace {
                            interface: &q.interface.name,
                            queue: q.queue,
                            len,
                        },
                    );
                }
            }
        }
        if let Some(t) = &self.capture {
            if t.wants(pcap_trace::RX, q.interface.index) {
                let mut capture = t.worker(cx.thread);
                for &bi in pkts {
                    capture.take(cx.bufs, bi);
                }
            }
        }
        let next = match &self.handoff {
            Some(h) if h.enabled(q.interface.index) => Next::WorkerHandoff,
            _ => Next::EthernetInput,
        };
        cx.enqueue_all(next as usize, pkts);
        r.packets
    }
}
