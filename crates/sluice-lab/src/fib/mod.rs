//! The tester's side of the FIB: synthetic full tables, `sluice fib ...`, the lookup-rate
//! measurements, and the previous FIB the benchmarks compare the dataplane's against.
//!
//! - `synth`: deterministic synthetic full tables shaped like the public BGP tables.
//! - `cli`: `sluice fib synth | lookup | bench`; `bench_cmd` is its benchmark.
//! - `destinations` and `measure`: address sets and lookup rates for the benchmarks.
//! - `legacy`: DIR-24-8 and the IPv6 stride trie (`StrideFib`), the benchmarks' reference.

mod bench_cmd;
pub mod cli;
pub mod destinations;
pub mod legacy;
pub mod measure;
pub mod synth;

#[cfg(test)]
mod tests;
