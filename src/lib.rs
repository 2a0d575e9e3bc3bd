//! sluice: a userspace vector packet processor (software router and switch) with its own
//! traffic generator and router benchmark lab.

pub mod acl;
pub mod bench;
pub mod buffer;
pub mod capture;
pub mod config;
pub mod control;
pub mod daemon;
pub mod dataplane;
pub mod drivers;
pub mod fib;
pub mod gen;
pub mod graph;
pub mod handoff;
pub mod interface;
pub mod l2;
pub mod lab;
pub mod lcp;
pub mod netlink;
pub mod nodes;
pub mod router;
pub mod rss;
pub mod sd_notify;
pub mod stats;
pub mod subif;
pub mod sys;
pub mod wire;
