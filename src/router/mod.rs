//! The router's control plane: interface addresses, routes, adjacencies and neighbours, and
//! how they are published to the workers.

pub mod adjacency;

use crate::wire::MacAddress;
use std::net::IpAddr;

/// A neighbour a worker heard from (ARP or ND), on its way to the control plane, which
/// completes the adjacencies that wait for it and publishes a new view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighborLearn {
    pub interface: u32,
    pub ip: IpAddr,
    pub mac: MacAddress,
}

/// Workers hold one of these; `try_send` never blocks a worker (a full channel is a counted
/// drop of the learn, and the neighbour is learnt again from its next packet).
pub type LearnSender = std::sync::mpsc::SyncSender<NeighborLearn>;
