//! `driver = ...`: which driver an [[interface]] uses, with that driver's own keys. Each
//! driver's file checks its keys and gives the error for them on an interface of another
//! driver, so each key is checked in one place.

mod af_packet;
mod af_xdp;
mod dpdk;
mod memif;
mod null;
mod pcap;

pub use af_packet::AfPacket;
pub use af_xdp::AfXdp;
pub use dpdk::Dpdk;
pub use memif::Memif;
pub use null::Null;
pub use pcap::Pcap;

use super::interface::InterfaceKeys;
use crate::config::{Checker, ConfigError};
use toml::Spanned;

/// The driver of an interface and its settings, by `driver = ...`.
#[derive(Debug)]
pub enum Driver {
    /// AF_XDP when the kernel and the device allow it, else AF_PACKET (the start-up says
    /// which, and why). The af_xdp keys apply when AF_XDP is chosen.
    Auto(AfXdp),
    AfPacket(AfPacket),
    AfXdp(AfXdp),
    Memif(Memif),
    Pcap(Pcap),
    /// No device: frames made on receive, freed on transmit (benchmarks).
    Null(Null),
    /// A port DPDK drives.
    Dpdk(Dpdk),
}

impl Driver {
    /// The driver that `keys` name, with its keys checked.
    pub(crate) fn check(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<Driver, ConfigError> {
        if keys.driver.get_ref() != "dpdk" {
            dpdk::refuse_devargs(keys, c)?;
        }
        match keys.driver.get_ref().as_str() {
            "dpdk" => Dpdk::check(keys, c).map(Driver::Dpdk),
            "auto" => AfXdp::check(keys, c).map(Driver::Auto),
            "af_packet" => AfPacket::check(keys, c).map(Driver::AfPacket),
            "af_xdp" => AfXdp::check(keys, c).map(Driver::AfXdp),
            "memif" => Memif::check(keys, c).map(Driver::Memif),
            "pcap" => Pcap::check(keys, c).map(Driver::Pcap),
            "null" => Null::check(keys, c).map(Driver::Null),
            other => Err(c.err(
                keys.driver.span(),
                "driver",
                format!(
                    "unknown driver '{other}' (known: auto, af_packet, af_xdp, memif, pcap, null, dpdk)"
                ),
            )),
        }
    }

    /// The name the config gives the driver.
    pub fn name(&self) -> &'static str {
        match self {
            Driver::Auto(_) => "auto",
            Driver::AfPacket(_) => "af_packet",
            Driver::AfXdp(_) => "af_xdp",
            Driver::Memif(_) => "memif",
            Driver::Pcap(_) => "pcap",
            Driver::Null(_) => "null",
            Driver::Dpdk(_) => "dpdk",
        }
    }

    /// The Linux interface a host driver attaches to.
    pub fn host(&self) -> Option<&str> {
        match self {
            Driver::AfPacket(d) => Some(&d.host),
            Driver::AfXdp(d) | Driver::Auto(d) => Some(&d.host),
            Driver::Memif(_) | Driver::Pcap(_) | Driver::Null(_) | Driver::Dpdk(_) => None,
        }
    }

    /// A driver's own limit on the MTU, checked before the common range. (`auto` has none:
    /// an MTU too large for AF_XDP makes it choose AF_PACKET.)
    pub(crate) fn check_mtu(&self, mtu: &Spanned<u32>, c: &Checker<'_>) -> Result<(), ConfigError> {
        match self {
            Driver::AfXdp(_) => af_xdp::check_mtu(mtu, c),
            _ => Ok(()),
        }
    }
}

/// `ring-size`: a power of two in `lo..=hi`, or `default`.
fn ring_size(
    keys: &InterfaceKeys,
    (lo, hi): (u32, u32),
    default: u32,
    c: &Checker<'_>,
) -> Result<u32, ConfigError> {
    let Some(r) = &keys.ring_size else {
        return Ok(default);
    };
    let v = *r.get_ref();
    if !v.is_power_of_two() || !(lo..=hi).contains(&v) {
        return Err(c.err(
            r.span(),
            "ring-size",
            format!("{v} is not a power of two between {lo} and {hi}"),
        ));
    }
    Ok(v)
}

/// `ring-size` on a driver without rings.
fn refuse_ring_size(keys: &InterfaceKeys, c: &Checker<'_>) -> Result<(), ConfigError> {
    match &keys.ring_size {
        Some(r) => Err(c.err(
            r.span(),
            "ring-size",
            "belongs to af_packet, af_xdp and memif interfaces".into(),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;

    use crate::config::{interface_with, Config};

    error_tests! {
        unknown_driver: interface_with("dpdk2", "")
            => "t.toml:3: key 'driver': unknown driver 'dpdk2' (known: auto, af_packet, af_xdp, memif, pcap, null, dpdk)";
        ring_size_on_an_interface_without_rings: interface_with("null", "ring-size = 1024\n")
            => "t.toml:4: key 'ring-size': belongs to af_packet, af_xdp and memif interfaces";
        ring_size_on_pcap: interface_with("pcap", "tx-file = \"o\"\nring-size = 1024\n")
            => "t.toml:5: key 'ring-size': belongs to af_packet, af_xdp and memif interfaces";
        af_packet_ring_size_not_a_power_of_two: interface_with("af_packet", "ring-size = 1000\n")
            => "t.toml:4: key 'ring-size': 1000 is not a power of two between 64 and 16384";
    }

    #[test]
    fn each_driver_is_its_variant() {
        let src = format!(
            "{}{}{}{}{}",
            interface_with("af_packet", "host = \"eth0\"\n"),
            interface_with("af_xdp", "").replace("\"a\"", "\"b\""),
            interface_with("memif", "socket = \"s\"\n").replace("\"a\"", "\"c\""),
            interface_with("pcap", "rx-file = \"i\"\n").replace("\"a\"", "\"d\""),
            interface_with("auto", "mtu = 9000\n").replace("\"a\"", "\"e\""),
        );
        let c = Config::parse(&src, "t.toml").unwrap();
        let names: Vec<_> = c.interfaces.iter().map(|i| i.driver.name()).collect();
        assert_eq!(names, ["af_packet", "af_xdp", "memif", "pcap", "auto"]);
        let hosts: Vec<_> = c.interfaces.iter().map(|i| i.driver.host()).collect();
        assert_eq!(hosts, [Some("eth0"), Some("b"), None, None, Some("e")]);
    }
}
