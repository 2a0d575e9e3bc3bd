//! IPv4: input checks, FIB lookup, rewrite, local delivery, ICMP errors, ARP.

// The nodes here name the shared helpers and node names of `nodes` as `super::NAME`.
use super::neighbor_hold;
use crate::lcp::host_punt;
use crate::nodes::*;

pub mod arp;
pub mod arp_input;
pub mod icmp_error;
pub mod input;
pub mod local;
pub mod lookup;
pub mod rewrite;
