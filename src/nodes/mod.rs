//! Graph nodes, one file each: the node, its next nodes, its error counters and its trace.

pub mod error_drop;
pub mod ethernet_input;
pub mod icmp6_error;
pub mod input;
pub mod interface_output;
pub mod ip4_input;
pub mod ip4_lookup;
pub mod ip6_input;
pub mod ip6_local;
pub mod ip6_lookup;
pub mod ip6_nd;
pub mod ip6_rewrite;
pub mod l2_xconnect;
pub mod tx;

#[cfg(test)]
pub mod testing;

/// Names of the fixed nodes, used where other nodes name them as next nodes.
pub const ETHERNET_INPUT: &str = "ethernet-input";
pub const L2_XCONNECT: &str = "l2-xconnect";
pub const INTERFACE_OUTPUT: &str = "interface-output";
pub const ERROR_DROP: &str = "error-drop";
pub const ARP_INPUT: &str = "arp-input";
pub const IP4_ARP: &str = "ip4-arp";
pub const IP4_LOCAL: &str = "ip4-local";
pub const ICMP4_ERROR: &str = "icmp4-error";
pub const IP6_INPUT: &str = "ip6-input";
pub const IP6_LOOKUP: &str = "ip6-lookup";
pub const IP6_REWRITE: &str = "ip6-rewrite";
pub const IP6_ND: &str = "ip6-nd";
pub const IP6_LOCAL: &str = "ip6-local";
pub const ICMP6_ERROR: &str = "icmp6-error";

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
    pub fn to_aux(self) -> u32 {
        (self.kind as u32) << 24 | (self.code as u32) << 16 | self.arg as u32
    }

    pub fn from_aux(aux: u32) -> IcmpErrorRequest {
        IcmpErrorRequest {
            kind: (aux >> 24) as u8,
            code: (aux >> 16) as u8,
            arg: aux as u16,
        }
    }
}
