//! The FIB before the compressed tries, kept as the benchmarks' reference so that `sluice fib
//! bench` and `cargo bench --bench fib` measure both in one process; the dataplane no longer
//! carries it.
//!
//! - `stride`: the incremental update algorithm shared by both tables (prefix expansion with
//!   per-cell depths, as in DPDK's rte_lpm), and `Cells`, the first level and node area that
//!   both tables hold.
//! - `ip4`: `Ip4Lpm`, DIR-24-8. `ip6`: `Ip6Lpm`, a 16-8-8-… multibit trie.
//! - `stride_fib`: both, published left-right over `ArcSwap`.

pub mod ip4;
pub mod ip6;
mod stride;
pub mod stride_fib;

pub use ip4::Ip4Lpm;
pub use ip6::Ip6Lpm;
pub use sluice::fib::NO_ROUTE;
pub use stride_fib::{StrideFib, StrideFibReader, StrideFibWriter};

/// A cell with this bit links to a node instead of holding a leaf.
const CHILD: u32 = 0x8000_0000;

#[cfg(test)]
mod tests;
