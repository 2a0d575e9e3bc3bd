//! Graph nodes, one file each: the node, its next nodes, its error counters and its trace.

pub mod error_drop;
pub mod ethernet_input;
pub mod input;
pub mod interface_output;
pub mod ip4_input;
pub mod ip4_lookup;
pub mod l2_xconnect;
pub mod tx;

#[cfg(test)]
pub mod testing;

/// Names of the fixed nodes, used where other nodes name them as next nodes.
pub const ETHERNET_INPUT: &str = "ethernet-input";
pub const L2_XCONNECT: &str = "l2-xconnect";
pub const INTERFACE_OUTPUT: &str = "interface-output";
pub const ERROR_DROP: &str = "error-drop";

/// The tx node of interface `name`.
pub fn tx_node_name(interface: &str) -> String {
    format!("{interface}-tx")
}
