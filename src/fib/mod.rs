//! The forwarding information base: longest-prefix match for IPv4 and IPv6, built for lookups
//! in batches by the dataplane and changed route by route by the control plane.
//!
//! - `prefix`: `Prefix<A>` for both families (`Prefix4`, `Prefix6`).
//! - `routes`: `RouteTable`, the control-plane truth (prefix → next hop) and the reference LPM.
//! - `stride`: the incremental update algorithm shared by both tables (prefix expansion with
//!   per-cell depths, as in DPDK's rte_lpm), and `Cells`, the first level and node area that
//!   both tables hold.
//! - `ip4`: `Ip4Lpm`, DIR-24-8. `ip6`: `Ip6Lpm`, a 16-8-8-… multibit trie.
//! - `poptrie`: `Poptrie4` and `Poptrie6`, compressed tries (18-bit top level, 6-bit strides found by
//!   popcount), built from the route table and measured beside DIR-24-8 by `fib bench`.
//! - `publish`: `FibWriter` / `FibReader`, lock-free publication by a left-right pair.
//! - `parse`: route files (`PREFIX NEXTHOP`, `ip route show`, `birdc show route`).
//! - `synth`: deterministic synthetic full tables. `cli`: `sluice fib ...`.
//! - `destinations` and `measure`: address sets and lookup rates for the benchmarks.
//!
//! Leaves are `u32` next-hop (adjacency) indices chosen by the caller, at most `MAX_NEXT_HOP`;
//! a lookup that matches nothing gives `NO_ROUTE`. Figures are in docs/fib.md.

pub mod cli;
pub mod destinations;
pub mod ip4;
pub mod ip6;
pub mod measure;
pub(crate) mod mem;
pub mod parse;
pub mod poptrie;
pub mod prefix;
pub mod publish;
pub mod routes;
mod stride;
pub mod synth;

pub use ip4::Ip4Lpm;
pub use ip6::Ip6Lpm;
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
mod tests;
