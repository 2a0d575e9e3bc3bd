//! Layer-2 switching state beside the graph's L2 nodes (`nodes/l2`): `bridge`, the bridge
//! domains and their members as the control plane keeps them; `mac_table`, their MAC tables
//! (learning, moves, limits, ageing, static entries); `fib`, the copy of the MAC table the
//! workers read without a lock; `reserved`, the addresses IEEE 802.1D sets apart.

pub mod bridge;
pub mod commands;
pub mod config;
pub mod fib;
pub mod mac_table;
pub mod nodes;
pub mod reserved;
pub mod section;
