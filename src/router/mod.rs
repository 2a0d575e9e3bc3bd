//! The router's control plane: interface addresses, routes, adjacencies and neighbours, and
//! how they are published to the workers.

pub mod adjacency;
