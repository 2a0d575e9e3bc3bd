//! IPv6: input checks, FIB lookup, rewrite, local delivery, ICMPv6 errors, neighbour
//! discovery.

// The nodes here name the shared helpers and node names of `nodes` as `super::NAME`.
use super::neighbor_hold;
use crate::nodes::*;

pub mod icmp_error;
pub mod input;
pub mod local;
pub mod lookup;
pub mod nd;
pub mod rewrite;
