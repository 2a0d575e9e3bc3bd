//! The af_packet driver (TPACKET_V3 receive ring, sendmmsg transmit): placeholder until the
//! driver lands.

use super::DriverPorts;

/// An af_packet interface as configured.
#[derive(Clone, Debug, Default)]
pub struct AfPacketConfig {
    /// The Linux interface to attach to.
    pub host: String,
    /// MTU to set on the host interface (restored on exit); `None` keeps the current one.
    pub mtu: Option<u32>,
    /// Receive queues (one per worker that polls this interface; >1 uses PACKET_FANOUT).
    pub rx_queues: usize,
    /// Transmit queues: workers + 1.
    pub tx_queues: usize,
}

pub fn open(cfg: &AfPacketConfig) -> Result<DriverPorts, String> {
    Err(format!("af_packet: not built yet (interface {})", cfg.host))
}
