//! `driver = "null"`: no device. Its receive side makes 64-byte frames as fast as a worker
//! asks for them and its transmit side frees what it is given, so the graph and the workers
//! can be measured without any I/O (`sluice bench graph`), as DPDK's net_null does.

use super::{af_xdp, memif, pcap, refuse_ring_size};
use crate::config::{Checker, ConfigError};
use crate::interface::config::interface::InterfaceKeys;

#[derive(Debug)]
pub struct Null;

impl Null {
    pub(crate) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<Null, ConfigError> {
        if keys.host.is_some() {
            return Err(c.err(
                keys.driver.span(),
                "host",
                "a null interface has no device: host belongs to af_packet, af_xdp and auto".into(),
            ));
        }
        pcap::refuse_files(keys, c)?;
        memif::refuse_keys(keys, c)?;
        af_xdp::refuse_keys(keys, c)?;
        refuse_ring_size(keys, c)?;
        Ok(Null)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::interface_with;

    error_tests! {
        null_with_host: interface_with("null", "host = \"eth0\"\n")
            => "t.toml:3: key 'host': a null interface has no device: host belongs to af_packet, af_xdp and auto";
        null_with_a_file: interface_with("null", "rx-file = \"f.pcap\"\n")
            => "t.toml:3: key 'rx-file': rx-file and tx-file belong to pcap interfaces";
    }
}
