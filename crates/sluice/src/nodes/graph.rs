//! The one list of a worker's graph: the daemon's workers (`dataplane::worker`), the graph
//! benchmark (`benches/graph.rs`) and the tests build their graphs from `graph_nodes`, so a
//! new node is its own file plus one line here. What the caller adds are the device nodes:
//! the input nodes that poll its queues (and the worker handoff's), and a tx node per
//! interface.

use super::{error_drop, interface_output, tx};
use crate::acl::node as acl;
use crate::dataplane::pcap_trace::PcapTrace;
use crate::drivers::TxQueue;
use crate::graph::NodeDecl;
use crate::interface::{Interface, SharedL2Modes};
use crate::ip::ip4;
use crate::ip::ip6;
use crate::l2::nodes as l2;
use crate::lcp::host_punt;
use crate::lcp::policy::PuntPolicy;
use crate::nat44::node::Nat44;
use crate::router::adjacency::SharedL3View;
use crate::router::{LearnSender, SharedTables};
use crate::subif::SharedSubIfs;
use std::sync::Arc;

/// What the nodes of one worker's graph read and send to: the tables every worker shares,
/// and this worker's MAC learner parts.
pub struct GraphParts {
    pub interfaces: Vec<Arc<Interface>>,
    pub modes: SharedL2Modes,
    pub subifs: SharedSubIfs,
    pub l2: l2::learn::LearnParts,
    pub view: SharedL3View,
    pub tables: SharedTables,
    pub learn: LearnSender,
    pub filters: acl::Filters,
    pub to_host: host_punt::PuntSender,
    pub punt: Arc<PuntPolicy>,
    /// `pcap trace` (the daemon's); `None` captures nothing.
    pub capture: Option<Arc<PcapTrace>>,
    /// Frames shorter than this are runts (ethernet-input).
    pub min_frame: usize,
}

/// Every node of a worker's graph, in `show runtime`'s order: the input nodes `inputs`,
/// ethernet-input and L2, the routing nodes, interface-output, a tx node per interface (on
/// its queue in `txs`, in the order of `interfaces`), error-drop.
pub fn graph_nodes(
    parts: GraphParts,
    inputs: Vec<NodeDecl>,
    txs: Vec<Box<dyn TxQueue>>,
) -> Vec<NodeDecl> {
    let GraphParts {
        interfaces,
        modes,
        subifs,
        l2,
        view,
        tables,
        learn,
        filters,
        to_host,
        punt,
        capture,
        min_frame,
    } = parts;
    let features = &filters.features;
    let fib = l2.fib.clone();
    let offload = fast_path(&interfaces);
    if let Some(fp) = &offload {
        fp.set_view(view.clone());
        fp.set_nat(filters.nat.clone());
        fp.set_macs(crate::drivers::af_xdp::fastpath::bridge::MacTable {
            fib: l2.fib.clone(),
            clock: l2.clock,
        });
    }
    let reply = crate::drivers::af_xdp::fastpath::offer::ReplyPath {
        tables: tables.clone(),
        features: features.clone(),
    };
    let mut decls = inputs;
    decls.extend([
        crate::ethernet::input::EthernetInput::decl(
            modes.clone(),
            view.clone(),
            subifs.clone(),
            min_frame,
        ),
        l2::xconnect::L2Xconnect::decl(modes.clone()),
        l2::learn::L2Learn::decl(modes.clone(), l2),
        l2::fwd::L2Fwd::decl(modes.clone(), fib),
        l2::flood::L2Flood::decl(modes.clone()),
        l2::arp_term::L2ArpTerm::decl(modes),
        host_punt::HostPunt::decl(to_host, punt),
        ip4::input::Ip4Input::decl(features.clone()),
        acl::AclIn::decl(false, filters.clone()),
        acl::AclIn::decl(true, filters.clone()),
        ip4::lookup::Ip4Lookup::decl(tables.clone(), view.clone()),
        ip4::arp_input::ArpInput::decl(view.clone(), learn.clone()),
        ip4::arp::Ip4Arp::decl_learning(view.clone(), Some(learn.clone())),
        ip4::rewrite::Ip4Rewrite::decl_with(view.clone(), features.clone()),
        acl::AclIn::decl_output(false, filters.clone()),
        Nat44::decl(false, filters.nat.clone(), features.clone(), view.clone()),
        Nat44::decl(true, filters.nat.clone(), features.clone(), view.clone()),
        ip4::local::Ip4Local::decl(view.clone()),
        ip4::icmp_error::Icmp4Error::decl(view.clone()),
        ip6::input::Ip6Input::decl(features.clone()),
        ip6::lookup::Ip6Lookup::decl(tables, view.clone()),
        ip6::nd::Ip6Nd::decl(view.clone(), Some(learn)),
        ip6::rewrite::Ip6Rewrite::decl_with(view.clone(), features.clone()),
        acl::AclIn::decl_output(true, filters.clone()),
        ip6::local::Ip6Local::decl(view.clone()),
        ip6::icmp_error::Icmp6Error::decl(view.clone()),
        interface_output::InterfaceOutput::decl_offloading(
            interfaces.clone(),
            subifs.clone(),
            offload.clone(),
            (Some(view.clone()), Some(filters.nat.clone()), Some(reply)),
        ),
    ]);
    for (itf, queue) in interfaces.iter().zip(txs) {
        decls.push(tx::TxNode::decl_captured(
            itf.clone(),
            queue,
            capture.clone(),
        ));
    }
    decls.push(error_drop::ErrorDrop::decl_captured(
        interfaces, subifs, capture,
    ));
    decls
}

/// The XDP fast path, if an interface has it on.
pub fn fast_path(
    interfaces: &[Arc<crate::interface::Interface>],
) -> Option<Arc<crate::drivers::af_xdp::fastpath::FastPath>> {
    if interfaces.iter().any(|i| i.fast_path.is_some()) {
        crate::drivers::af_xdp::fastpath::active()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::TxBurst;
    use crate::graph::{Graph, NodeKind};
    use crate::nodes::testing::Harness;

    struct NullTx;
    impl TxQueue for NullTx {
        fn tx_burst(&mut self, bufs: &mut crate::buffer::WorkerBuffers, pkts: &[u32]) -> TxBurst {
            bufs.free_all(pkts);
            TxBurst {
                sent: pkts.len(),
                ..TxBurst::default()
            }
        }
    }

    /// The list builds into a graph: every next node it names is in it, once; and it holds
    /// every node that declares a `NAME`.
    #[test]
    fn the_list_builds_a_whole_graph() {
        let h = Harness::new(2);
        let parts = h.graph_parts();
        let input = NodeDecl::new(
            "test-input",
            NodeKind::Input,
            &[crate::ethernet::input::NAME],
            &[],
            NullNode,
        );
        let txs: Vec<Box<dyn TxQueue>> = vec![Box::new(NullTx), Box::new(NullTx)];
        let g = Graph::build(graph_nodes(parts, vec![input], txs), 0).unwrap();
        let names = &g.shared().names;
        for name in [
            crate::ethernet::input::NAME,
            l2::xconnect::NAME,
            l2::learn::NAME,
            l2::fwd::NAME,
            l2::flood::NAME,
            l2::arp_term::NAME,
            host_punt::NAME,
            acl::ACL_IP4_IN,
            acl::ACL_IP6_IN,
            acl::ACL_IP4_OUT,
            acl::ACL_IP6_OUT,
            crate::nat44::node::NAT44_IN,
            crate::nat44::node::NAT44_OUT,
            ip4::input::NAME,
            ip4::lookup::NAME,
            ip4::arp_input::NAME,
            ip4::arp::NAME,
            ip4::rewrite::NAME,
            ip4::local::NAME,
            ip4::icmp_error::NAME,
            ip6::input::NAME,
            ip6::lookup::NAME,
            ip6::nd::NAME,
            ip6::rewrite::NAME,
            ip6::local::NAME,
            ip6::icmp_error::NAME,
            interface_output::NAME,
            "if0-tx",
            "if1-tx",
            error_drop::NAME,
        ] {
            assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
        }
        assert_eq!(names.len(), 31, "{names:?}");
        assert_eq!(names.last().map(String::as_str), Some(error_drop::NAME));
    }

    struct NullNode;
    impl crate::graph::Node for NullNode {
        fn process(&mut self, _: &mut crate::graph::NodeCx<'_>, _: &[u32]) -> usize {
            0
        }
    }
}
