//! The forwarding information base: longest-prefix match for IPv4 and IPv6, built for lookups
//! in batches by the dataplane and changed route by route by the control plane.
//!
//! - `prefix`: `Prefix<A>` for both families (`Prefix4`, `Prefix6`).
//! - `routes`: `RouteTable`, the control-plane truth (prefix → next hop) and the reference LPM.
//! - `poptrie`: `Poptrie4` and `Poptrie6`, the compressed tries the dataplane looks up in
//!   (18-bit top level, dense slots' roots as blocks of 64 nodes found by position, 6-bit
//!   strides found by popcount); `poptrie_build` builds subtrees from
//!   the route table, `poptrie_writer` changes a trie in place while workers read it.
//! - `publish`: `FibWriter` / `FibReader`, one copy of each trie, lock-free for readers, old
//!   tables freed after the readers' quiescent point.
//! - `parse`: route files (`PREFIX NEXTHOP`, `ip route show`, `birdc show route`).
//! - `rng`: the deterministic generator the tests (and the tester's synthetic tables) draw from.
//!
//! Synthetic full tables, `sluice fib`, the lookup-rate measurements and the previous FIB
//! (DIR-24-8 and the IPv6 stride trie, the benchmarks' reference) are the tester's:
//! `sluice_lab::fib`.
//!
//! Leaves are `u32` next-hop (adjacency) indices chosen by the caller, at most `MAX_NEXT_HOP`;
//! a lookup that matches nothing gives `NO_ROUTE`. Figures are in docs/fib.md.

pub mod parse;
pub mod poptrie;
mod poptrie_build;
pub mod poptrie_writer;
pub mod prefix;
pub mod publish;
pub mod rng;
pub mod routes;

pub use poptrie::{Poptrie4, Poptrie6};
pub use prefix::{Prefix, Prefix4, Prefix6};
pub use publish::{Fib, FibError, FibMemory, FibReader, FibWriter};
pub use routes::RouteTable;

/// The lookup result when no route matches.
pub const NO_ROUTE: u32 = 0x7fff_ffff;
/// The largest next hop a route can carry.
pub const MAX_NEXT_HOP: u32 = NO_ROUTE - 1;
/// A cell with this bit links to a node instead of holding a leaf.
const CHILD: u32 = 0x8000_0000;

#[cfg(test)]
mod poptrie_tests;
#[cfg(test)]
mod tests;
