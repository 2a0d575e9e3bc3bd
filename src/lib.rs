//! sluice: a userspace vector packet processor (software router and switch) with its own
//! traffic generator and router benchmark lab.

pub mod buffer;
pub mod drivers;
pub mod graph;
pub mod interface;
pub mod nodes;
pub mod wire;
pub mod control;
pub mod daemon;
pub mod gen;
pub mod lab;
