//! Benchmark arithmetic and search: line rates, the RFC 2544 throughput search.

pub mod compare;
pub mod graph;
pub mod linerate;
pub mod search;
