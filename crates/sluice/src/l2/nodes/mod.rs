//! Layer 2's graph nodes: the cross-connect, and the bridge: l2-learn, l2-fwd, l2-flood,
//! l2-arp-term (ethernet-input, which feeds them and the IP nodes, is `ethernet/`).

pub mod arp_term;
pub mod flood;
pub mod fwd;
pub mod learn;
#[cfg(test)]
mod offload_tests;
pub mod xconnect;
