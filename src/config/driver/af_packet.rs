//! `driver = "af_packet"`: a Linux interface through a packet socket.

use super::{af_xdp, memif, pcap, refuse_ring_size};
use crate::config::interface::InterfaceKeys;
use crate::config::{Checker, ConfigError};

#[derive(Debug)]
pub struct AfPacket {
    /// The Linux interface (default: the interface's name).
    pub host: String,
}

impl AfPacket {
    pub(super) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<AfPacket, ConfigError> {
        pcap::refuse_files(keys, c)?;
        memif::refuse_keys(keys, c)?;
        af_xdp::refuse_keys(keys, c)?;
        refuse_ring_size(keys, c)?;
        Ok(AfPacket {
            host: keys
                .host
                .clone()
                .unwrap_or_else(|| keys.name.get_ref().clone()),
        })
    }
}
