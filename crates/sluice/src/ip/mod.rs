//! What IPv4 and IPv6 forwarding share. A node whose work is the same for both families is
//! written once here, generic over `Family`, and each family's module (`ip4/`, `ip6/`) keeps
//! only what truly differs: its header checks and their counters, ARP against ND, a
//! checksum against none, fragmentation. The generic nodes are monomorphized per family, so
//! a family's constants cost nothing at run time.
//!
//! - `input`: ip4-input / ip6-input (the family's checks, then the unicast feature arc).
//! - `lookup`: ip4-lookup / ip6-lookup (per-table batched FIB lookups, then each family's
//!   decision on the adjacency).
//! - `local`: ip4-local / ip6-local (the loop around each family's delivery to the router).
//! - `rewrite`: ip4-rewrite / ip6-rewrite (the Ethernet header, the output arc; each family's
//!   hop count, MTU and, for IPv4, fragments).
//! - `icmp_error`: icmp4-error / icmp6-error (the node loop around each family's builder).

pub mod icmp_error;
pub mod input;
pub mod ip4;
pub mod ip6;
pub mod local;
pub mod lookup;
pub mod neighbor_hold;
pub mod rewrite;
pub mod table_lookup;
#[cfg(test)]
pub(crate) mod test_view;

use crate::wire::EtherType;

/// `Node` for the IPv4 and IPv6 instances of generic node `$node`, by its `process_frame`.
/// An impl per family rather than one generic impl: symbols are named by their impl, so
/// under `impl<F> Node for IpInput<F>` both families' frames read `IpInput<F>` in a profile
/// and flame graphs fold ip4-input and ip6-input into one; here each names its family.
macro_rules! per_family_nodes {
    ($node:ident) => {
        impl crate::graph::Node for $node<crate::ip::V4> {
            fn process(&mut self, cx: &mut crate::graph::NodeCx<'_>, frame: &[u32]) -> usize {
                self.process_frame(cx, frame)
            }
        }
        impl crate::graph::Node for $node<crate::ip::V6> {
            fn process(&mut self, cx: &mut crate::graph::NodeCx<'_>, frame: &[u32]) -> usize {
                self.process_frame(cx, frame)
            }
        }
    };
}
pub(crate) use per_family_nodes;

/// One address family as the shared nodes see it.
pub trait Family: Send + Sync + 'static {
    /// "ip4" or "ip6": how traces and node names start.
    const NAME: &'static str;
    const IPV6: bool;
    const ETHERTYPE: EtherType;
    /// The node names of this family's path.
    const INPUT_NODE: &'static str;
    const LOOKUP_NODE: &'static str;
    const ICMP_ERROR_NODE: &'static str;
    const REWRITE_NODE: &'static str;
    const LOCAL_NODE: &'static str;
    /// The feature arc that input starts and lookup ends (`features::ARCS` index).
    const UNICAST_ARC: usize;
}

/// IPv4.
pub struct V4;
/// IPv6.
pub struct V6;

impl Family for V4 {
    const NAME: &'static str = "ip4";
    const IPV6: bool = false;
    const ETHERTYPE: EtherType = EtherType::IPV4;
    const INPUT_NODE: &'static str = ip4::input::NAME;
    const LOOKUP_NODE: &'static str = ip4::lookup::NAME;
    const ICMP_ERROR_NODE: &'static str = ip4::icmp_error::NAME;
    const REWRITE_NODE: &'static str = ip4::rewrite::NAME;
    const LOCAL_NODE: &'static str = ip4::local::NAME;
    const UNICAST_ARC: usize = crate::graph::features::IP4_UNICAST;
}

impl Family for V6 {
    const NAME: &'static str = "ip6";
    const IPV6: bool = true;
    const ETHERTYPE: EtherType = EtherType::IPV6;
    const INPUT_NODE: &'static str = ip6::input::NAME;
    const LOOKUP_NODE: &'static str = ip6::lookup::NAME;
    const ICMP_ERROR_NODE: &'static str = ip6::icmp_error::NAME;
    const REWRITE_NODE: &'static str = ip6::rewrite::NAME;
    const LOCAL_NODE: &'static str = ip6::local::NAME;
    const UNICAST_ARC: usize = crate::graph::features::IP6_UNICAST;
}
