//! Layer-2 switching state beside the graph's L2 nodes: `mac_table`, the bridge domains' MAC
//! tables (learning, moves, limits, ageing, static entries). The bridge domains, their
//! commands and nodes build on it (issue 15); nothing forwards through it yet.

pub mod mac_table;
