//! Ethernet: ethernet-input (`input.rs`), the node every received frame enters, which
//! classifies it by EtherType and VLAN tags and hands it to layer 2 (the cross-connect, the
//! bridge) or layer 3 (the IP nodes, ARP).

pub mod input;
