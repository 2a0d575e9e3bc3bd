//! Layer 2: ethernet-input (classifies each frame by EtherType and VLAN tags) and the
//! cross-connect.

// The nodes here name the shared helpers and node names of `nodes` as `super::NAME`.
use super::*;

pub mod ethernet_input;
pub mod xconnect;
