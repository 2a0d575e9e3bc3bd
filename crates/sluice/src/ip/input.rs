//! ip4-input / ip6-input: each packet gets its family's header checks (`InputChecks`, in
//! `ip4/input.rs` and `ip6/input.rs`), a failure is dropped and counted by its reason, and a
//! good packet starts the family's unicast feature arc: the first feature enabled on its
//! interface, or straight to the lookup.

use super::Family;
use crate::graph::features::{self, SharedFeatures};
use crate::graph::names::Counters;
use crate::graph::{Node, NodeCx, NodeDecl};
use std::marker::PhantomData;

/// Where a checked packet goes when no feature is on.
#[repr(usize)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Lookup,
    Drop,
}

/// A family's input checks and their counters.
pub trait InputChecks: Family {
    type Counter: Counters;
    /// The verdict for one packet and the counter it bumps, if any. `ip` is the packet from
    /// its L3 header on (`None` when it is not of this family), `ip_len` the bytes from
    /// there to the end of the whole packet.
    fn check(ip: Option<&[u8]>, ip_len: usize) -> (Next, Option<Self::Counter>);
}

/// The input node of family `F`.
pub struct IpInput<F> {
    features: SharedFeatures,
    _family: PhantomData<F>,
}

impl<F: InputChecks> IpInput<F> {
    pub fn decl(features: SharedFeatures) -> NodeDecl
    where
        Self: Node,
    {
        let mut next = features::next_names(F::UNICAST_ARC, None);
        next.push(crate::nodes::error_drop::NAME.to_string());
        let node = IpInput::<F> {
            features,
            _family: PhantomData,
        };
        let decl = NodeDecl::internal(F::INPUT_NODE, &[], F::Counter::ALL, node).with_next(next);
        // The XDP fast path makes these checks itself (`fastpath::program`'s header checks).
        decl.offload_safe()
    }

    /// The slot of `next` when no feature is on: the lookup after the arc's features, the
    /// drop after it.
    pub fn slot(next: Next) -> usize {
        let end = features::ARCS[F::UNICAST_ARC].features.len();
        match next {
            Next::Lookup => end,
            Next::Drop => end + 1,
        }
    }
}

super::per_family_nodes!(IpInput);

impl<F: InputChecks> IpInput<F> {
    /// The node's loop, `Node::process` of each family's instance.
    #[inline(always)]
    fn process_frame(&mut self, cx: &mut NodeCx<'_>, frame: &[u32]) -> usize {
        let tracing = cx.tracing();
        let features = self.features.load();
        // With no feature on anywhere, every good packet goes to the lookup: no mask read.
        let any = features.any(F::UNICAST_ARC);
        for &bi in frame {
            let (ip, len) = crate::nodes::l3_packet(cx.bufs, bi, F::ETHERTYPE);
            let (next, counted) = F::check(ip, len);
            let counted: Option<usize> = counted.map(Into::into);
            if let Some(e) = counted {
                cx.count_error(e, 1);
            }
            if tracing {
                match counted.and_then(|e| F::Counter::ALL.get(e)) {
                    Some(why) => cx.trace(bi, why),
                    None => cx.trace(bi, format_args!("{} ok", F::NAME)),
                }
            }
            let slot = match next {
                Next::Lookup if any => {
                    features.next_slot(F::UNICAST_ARC, cx.bufs.meta(bi).rx_if, None)
                }
                n => Self::slot(n),
            };
            cx.enqueue(slot, bi);
        }
        frame.len()
    }
}
