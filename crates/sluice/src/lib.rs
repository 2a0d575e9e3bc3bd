//! sluice: a userspace vector packet processor (software router and switch): the dataplane,
//! its daemon and control socket. The traffic generator and the benchmark lab that measure it
//! are the `sluice-lab` crate, which depends on this one.

pub mod acl;
pub mod buffer;
pub mod capture;
pub mod config;
pub mod control;
pub mod daemon;
pub mod dataplane;
pub mod drivers;
pub mod ethernet;
pub mod events;
pub mod fib;
pub mod graph;
pub mod handoff;
pub mod interface;
pub mod ip;
pub mod l2;
pub mod lcp;
pub mod nat44;
pub mod netlink;
pub mod nodes;
pub mod router;
pub mod rss;
pub mod sd_notify;
/// Sub-interfaces are the interface subsystem's (`interface/subif.rs`).
pub use interface::subif;
pub mod sys;
pub mod wire;
