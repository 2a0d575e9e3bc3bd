//! `driver = "af_packet"`: a Linux interface through a packet socket.

use super::{af_xdp, memif, pcap, ring_size};
use crate::config::{Checker, ConfigError};
use crate::drivers::af_packet::RX_SLOTS;
use crate::interface::config::interface::InterfaceKeys;

#[derive(Debug)]
pub struct AfPacket {
    /// The Linux interface (default: the interface's name).
    pub host: String,
    /// Receive slots per queue: how long a worker may be kept off its CPU before the
    /// kernel drops at the tail (512 slots: 20 ms at 25 kpps).
    pub ring_size: u32,
}

impl AfPacket {
    pub(crate) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<AfPacket, ConfigError> {
        pcap::refuse_files(keys, c)?;
        memif::refuse_keys(keys, c)?;
        af_xdp::refuse_keys(keys, c)?;
        Ok(AfPacket {
            host: keys
                .host
                .clone()
                .unwrap_or_else(|| keys.name.get_ref().clone()),
            ring_size: ring_size(keys, (64, 16384), RX_SLOTS, c)?,
        })
    }
}
