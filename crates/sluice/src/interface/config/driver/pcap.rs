//! `driver = "pcap"`: replay a capture file, write one, or both.

use super::{af_xdp, memif, refuse_ring_size};
use crate::config::{Checker, ConfigError};
use crate::interface::config::interface::InterfaceKeys;
use std::path::PathBuf;

#[derive(Debug)]
pub struct Pcap {
    /// The file to replay.
    pub rx_file: Option<PathBuf>,
    /// The file to write.
    pub tx_file: Option<PathBuf>,
    /// Replay forever.
    pub looping: bool,
}

impl Pcap {
    pub(crate) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<Pcap, ConfigError> {
        if keys.rx_file.is_none() && keys.tx_file.is_none() {
            return Err(c.err(
                keys.driver.span(),
                "driver",
                format!(
                    "pcap interface '{}' needs rx-file, tx-file or both",
                    keys.name.get_ref()
                ),
            ));
        }
        memif::refuse_keys(keys, c)?;
        af_xdp::refuse_keys(keys, c)?;
        refuse_ring_size(keys, c)?;
        Ok(Pcap {
            rx_file: keys.rx_file.clone(),
            tx_file: keys.tx_file.clone(),
            looping: keys.looping,
        })
    }
}

/// The pcap keys on a host interface.
pub(crate) fn refuse_files(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<(), ConfigError> {
    if keys.rx_file.is_some() || keys.tx_file.is_some() {
        return Err(c.err(
            keys.driver.span(),
            "rx-file",
            "rx-file and tx-file belong to pcap interfaces".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;

    use crate::config::interface_with;

    error_tests! {
        rx_file_on_af_packet: interface_with("af_packet", "rx-file = \"f.pcap\"\n")
            => "t.toml:3: key 'rx-file': rx-file and tx-file belong to pcap interfaces";
        tx_file_on_af_xdp: interface_with("af_xdp", "tx-file = \"f.pcap\"\n")
            => "t.toml:3: key 'rx-file': rx-file and tx-file belong to pcap interfaces";
        pcap_without_files: interface_with("pcap", "")
            => "t.toml:3: key 'driver': pcap interface 'a' needs rx-file, tx-file or both";
    }
}
