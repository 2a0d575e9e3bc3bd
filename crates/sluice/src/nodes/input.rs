//! A driver's input node (`af-packet-input`, `af-xdp-input`, `pcap-input`): polls every rx queue of that
//! driver placed on this worker and hands the packets to ethernet-input.

use crate::buffer::FLAG_OFFLOAD;
use crate::dataplane::pcap_trace::{self, PcapTrace};
use crate::dataplane::placement::RxPlacement;
use crate::dataplane::queues::SharedQueueCounters;
use crate::drivers::RxQueue;
use crate::ethernet::input as ethernet_input;
use crate::graph::frame::FRAME_SIZE;
use crate::graph::names::error_counters;
use crate::graph::names::next_nodes;
use crate::graph::{Node, NodeCx, NodeDecl, NodeKind};
use crate::handoff::node as handoff;
use crate::handoff::Handoff;
use crate::interface::Interface;
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
}

impl InputNode {
    pub fn decl(name: &str, queues: Vec<PlacedQueue>) -> NodeDecl {
        Self::decl_placed(name, queues, None, None, None)
    }

    /// An input node of worker `placement.1` whose queues may move to and from other
    /// workers through `placement.0`, and whose interfaces with a spread in `handoff` go to
    /// worker-handoff.
    pub fn decl_placed(
        name: &str,
        queues: Vec<PlacedQueue>,
        placement: Option<(Arc<RxPlacement>, usize)>,
        handoff: Option<Arc<Handoff>>,
        capture: Option<Arc<PcapTrace>>,
    ) -> NodeDecl {
        // Without a handoff (tests, tools) there is no worker-handoff node to name.
        let next = match handoff {
            Some(_) => &Next::NAMES[..],
            None => &Next::NAMES[..Next::WorkerHandoff as usize],
        };
        NodeDecl::new(
            name,
            NodeKind::Input,
            next,
            &Error::REASONS,
            InputNode {
                name: name.to_string(),
                queues,
                burst: Box::new([0; FRAME_SIZE]),
                placement,
                handoff,
                capture,
            },
        )
        .offload_safe()
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
        let mut total = 0;
        for q in self.queues.iter_mut() {
            if !q.interface.is_up() {
                continue;
            }
            let counters = q.interface.counters(cx.thread);
            let missed = q.rx.take_missed();
            if missed > 0 {
                counters.rx_miss.add(missed);
                q.counters.0.drops.add(missed);
            }
            let r = q.rx.rx_burst(cx.bufs, &mut self.burst[..]);
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
                continue;
            }
            counters.rx_packets.add(r.packets as u64);
            counters.rx_bytes.add(r.bytes);
            q.counters.0.packets.add(r.packets as u64);
            q.counters.0.bytes.add(r.bytes);
            let pkts = &self.burst[..r.packets];
            // The XDP fast path may take this flow over unless the packets are watched.
            let offload = q.interface.fast_path.is_some()
                && !cx.tracing()
                && !self
                    .capture
                    .as_ref()
                    .is_some_and(|t| t.any(pcap_trace::RX | pcap_trace::TX | pcap_trace::DROP));
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
            total += r.packets;
        }
        total
    }
}
