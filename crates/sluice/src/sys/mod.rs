//! Operating-system helpers shared by the drivers, the graph and the tables (as DPDK's EAL):
//! the time-stamp counter, thread placement, shared mappings and huge-page tables, socket
//! options, the `bpf()` call, network namespaces, rtnetlink for links, and a fast hasher.

pub mod bpf;
pub mod bpf_asm;
pub mod bpf_batch;
pub mod cpu;
pub mod fasthash;
pub mod mapping;
pub mod mem;
pub mod netns;
pub mod rtnetlink;
pub mod sockopt;
pub mod tsc;
