//! ip4-local / ip6-local: packets addressed to the router itself. Each family decides what
//! one of them gets (`LocalRules::local`, in `ip4/local.rs` and `ip6/local.rs`): an echo
//! request becomes its reply in place and goes back through the family's lookup like any
//! packet; neighbour discovery goes to ip6-nd; what no service here takes asks the family's
//! ICMP error node for an unreachable or a parameter problem; the rest is a counted drop.
//! The node loop, its next nodes, counters and trace are here, once.

use super::Family;
use crate::buffer::WorkerBuffers;
use crate::graph::names::next_nodes;
use crate::graph::names::Counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use crate::lcp::host_punt;
use crate::nodes::error_drop;
use crate::nodes::IcmpErrorRequest;
use crate::router::adjacency::{L3View, SharedL3View};

next_nodes! {
    pub enum Next<F: LocalRules> {
        Lookup = F::LOOKUP_NODE,
        IcmpError = F::ICMP_ERROR_NODE,
        Drop = error_drop::NAME,
        /// host-punt: to the Linux tap of the interface's lcp pair.
        Punt = host_punt::NAME,
        /// ip6-nd (IPv6 only: ARP reaches IPv4 through arp-input, not here).
        Discovery = F::DISCOVERY_NODE.unwrap_or(""),
    }
}

/// What happens to one packet; `Reply` has already turned it into the reply, every other
/// verdict leaves it as it arrived (icmp-error quotes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict<C> {
    Reply,
    Discovery,
    Icmp(IcmpErrorRequest),
    Drop(C),
}

/// What a family's local delivery needs of it.
pub trait LocalRules: Family {
    type Counter: Counters;
    /// Where neighbour discovery goes, for a family that receives it here.
    const DISCOVERY_NODE: Option<&'static str>;
    /// Decide one packet's fate; an echo request is turned into its reply, ready for the
    /// lookup.
    fn local(view: &L3View, bufs: &mut WorkerBuffers, bi: u32) -> Verdict<Self::Counter>;
    /// The counter a verdict bumps (a reply and a request for an error count too).
    fn counter(verdict: Verdict<Self::Counter>) -> Self::Counter;
    /// Whether a packet with this verdict goes to the host instead, when its interface has a
    /// Linux tap (an lcp pair): what no service of the router takes, left as it arrived.
    fn for_host(verdict: Verdict<Self::Counter>) -> bool;
    /// host-punt's reason for this family's packets.
    const HOST_REASON: crate::lcp::host_punt::Reason;
}

/// The local delivery node of family `F`.
pub struct IpLocal<F: LocalRules> {
    view: SharedL3View,
    _family: std::marker::PhantomData<F>,
}

impl<F: LocalRules> IpLocal<F> {
    pub fn decl(view: SharedL3View) -> NodeDecl
    where
        Self: Node,
    {
        let node = IpLocal::<F> {
            view,
            _family: std::marker::PhantomData,
        };
        // A family with no discovery here (IPv4) names no node for the slot it never uses.
        let names = Next::names::<F>();
        let next = match F::DISCOVERY_NODE {
            None => &names[..Next::Discovery as usize],
            Some(_) => &names[..],
        };
        NodeDecl::internal(F::LOCAL_NODE, next, F::Counter::ALL, node)
    }
}

super::per_family_nodes!(IpLocal);

impl<F: LocalRules> IpLocal<F> {
    /// The node's loop, `Node::process` of each family's instance.
    #[inline(always)]
    fn process_frame(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let view = self.view.load();
        let tracing = cx.tracing();
        for &bi in frame {
            let verdict = F::local(&view, cx.bufs, bi);
            let rx_if = cx.bufs.meta(bi).rx_if;
            let host = view.interface(rx_if).is_some_and(|i| i.host);
            if host && F::for_host(verdict) {
                cx.bufs.meta_mut(bi).aux = F::HOST_REASON as u32;
                if tracing {
                    cx.trace(bi, "to the host (lcp)");
                }
                cx.enqueue(Next::Punt as usize, bi);
                continue;
            }
            if host && matches!(verdict, Verdict::Discovery) {
                // The router answers neighbour discovery itself; Linux hears a copy.
                if let Some(copy) = cx.bufs.clone_packet(bi) {
                    cx.bufs.meta_mut(copy).aux = crate::lcp::host_punt::Reason::NdCopy as u32;
                    cx.enqueue(Next::Punt as usize, copy);
                }
            }
            let counter: usize = F::counter(verdict).into();
            cx.count_error(counter, 1);
            let next = match verdict {
                Verdict::Reply => Next::Lookup,
                Verdict::Discovery => Next::Discovery,
                Verdict::Icmp(req) => {
                    cx.bufs.meta_mut(bi).aux = req.to_aux();
                    Next::IcmpError
                }
                Verdict::Drop(_) => Next::Drop,
            };
            if tracing {
                cx.trace(bi, F::Counter::ALL.get(counter).copied().unwrap_or("?"));
            }
            cx.enqueue(next as usize, bi);
        }
        frame.len()
    }
}

/// Run family `F`'s local delivery on one `frame` received by interface 0: the verdict, the
/// bytes after it and the metadata.
#[cfg(test)]
pub(crate) fn local_one<F: LocalRules>(
    view: &SharedL3View,
    frame: &[u8],
) -> (Verdict<F::Counter>, Vec<u8>, crate::buffer::BufferMeta) {
    let pool = crate::buffer::BufferPool::new(16, crate::buffer::HugePages::Never).unwrap();
    let mut bufs = pool.worker_handle();
    let bi = crate::nodes::testing::received(&mut bufs, frame);
    bufs.meta_mut(bi).rx_if = 0;
    let verdict = F::local(&view.load(), &mut bufs, bi);
    let mut out = Vec::new();
    bufs.copy_packet(bi, &mut out);
    let meta = *bufs.meta(bi);
    bufs.free(bi);
    (verdict, out, meta)
}
