//! Layer 2: ethernet-input (classifies each frame by EtherType and VLAN tags), the
//! cross-connect, and the bridge: l2-learn, l2-fwd, l2-flood, l2-arp-term.

pub mod arp_term;
pub mod ethernet_input;
pub mod flood;
pub mod fwd;
pub mod learn;
pub mod xconnect;
