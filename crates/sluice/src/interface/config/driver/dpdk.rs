//! `driver = "dpdk"`: a port DPDK drives, named by `devargs` as DPDK names it (a PCI address,
//! or a virtual device with its arguments). The EAL settings are `[dpdk]`'s.

use super::{af_xdp, memif, pcap, refuse_ring_size};
use crate::config::{Checker, ConfigError};
use crate::interface::config::interface::InterfaceKeys;

#[derive(Debug)]
pub struct Dpdk {
    pub devargs: String,
}

impl Dpdk {
    pub(crate) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<Dpdk, ConfigError> {
        if keys.host.is_some() {
            return Err(c.err(
                keys.driver.span(),
                "host",
                "a dpdk interface is named by devargs: host belongs to af_packet, af_xdp and \
                 auto"
                    .into(),
            ));
        }
        pcap::refuse_files(keys, c)?;
        memif::refuse_keys(keys, c)?;
        af_xdp::refuse_keys(keys, c)?;
        refuse_ring_size(keys, c)?;
        let Some(d) = &keys.devargs else {
            return Err(c.err(
                keys.driver.span(),
                "devargs",
                "a dpdk interface needs devargs: a PCI address (\"0000:3b:00.0\") or a virtual \
                 device (\"net_null0\", \"net_pcap0,rx_pcap=in.pcap\")"
                    .into(),
            ));
        };
        let v = d.get_ref().trim();
        let name = v.split(',').next().unwrap_or("");
        if name.is_empty() || v.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
            return Err(c.err(
                d.span(),
                "devargs",
                format!("'{v}' is not a DPDK device name with its arguments"),
            ));
        }
        Ok(Dpdk {
            devargs: v.to_string(),
        })
    }
}

/// `devargs` on an interface of another driver.
pub(crate) fn refuse_devargs(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<(), ConfigError> {
    match &keys.devargs {
        Some(d) => Err(c.err(d.span(), "devargs", "belongs to dpdk interfaces".into())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::interface_with;

    error_tests! {
        dpdk_without_devargs: interface_with("dpdk", "")
            => "t.toml:3: key 'devargs': a dpdk interface needs devargs: a PCI address (\"0000:3b:00.0\") or a virtual device (\"net_null0\", \"net_pcap0,rx_pcap=in.pcap\")";
        dpdk_with_host: interface_with("dpdk", "host = \"eth0\"\n")
            => "t.toml:3: key 'host': a dpdk interface is named by devargs: host belongs to af_packet, af_xdp and auto";
        devargs_with_spaces: interface_with("dpdk", "devargs = \"net_null0, x\"\n")
            => "t.toml:4: key 'devargs': 'net_null0, x' is not a DPDK device name with its arguments";
        devargs_on_af_packet: interface_with("af_packet", "host = \"eth0\"\ndevargs = \"net_null0\"\n")
            => "t.toml:5: key 'devargs': belongs to dpdk interfaces";
    }
}
