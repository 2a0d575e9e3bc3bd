//! An [[interface]] table: the keys every interface has (name, mtu, state, address) and its
//! `Driver`, which checks the keys of `driver = ...` (see driver/).

use super::driver::Driver;
use crate::config::emit::Entry;
use crate::config::reference::{Key, SectionDoc};
use crate::config::section::Saved;
use crate::config::{Checker, ConfigError, MAX_MTU, MIN_MTU};
use crate::control::save::{state_word, State};
use serde::Deserialize;
use std::path::PathBuf;
use toml::Spanned;
use toml::Value;

/// [[interface]] in the reference (`docs/config.md`). The driver's own keys are checked in
/// `driver/`, which refuses them on an interface of another driver.
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "interface",
    array: true,
    file: "interface/config/interface.rs` and `crates/sluice/src/interface/config/driver/",
    doc: "A port: a Linux interface (af_packet, af_xdp, auto), a memif peer, pcap files or a \
          port DPDK drives (dpdk). \
          Keys marked with a driver belong to that driver only; on another driver they are an \
          error. An interface with addresses routes; one that is cross-connected or a \
          bridge-domain member switches and may have none.",
    accepted: crate::config::reference::serde_fields::<InterfaceKeys>,
    aliases: &[],
    keys: &[
        Key::required(
            "name",
            "string",
            "the interface's name in sluice (1-32 characters, no spaces, unique)",
            "\"d0\"",
        ),
        Key::required(
            "driver",
            "string",
            "auto (AF_XDP where the kernel and device allow it, else AF_PACKET) | af_packet | \
             af_xdp | memif | pcap | null (no device: 64-byte frames made on receive, freed on \
             transmit; for benchmarks) | dpdk (a port DPDK drives: a NIC or a DPDK virtual \
             device; in binaries built with DPDK, see docs/dpdk.md)",
            "\"af_packet\"",
        ),
        Key {
            name: "host",
            ty: "string",
            default: "the interface's name",
            doc: "af_packet, af_xdp, auto: the Linux interface to attach to",
            example: "\"eth1\"",
        },
        Key {
            name: "xdp-mode",
            ty: "string",
            default: "\"auto\"",
            doc: "af_xdp, auto: where the XDP program runs: auto (native if the driver has it, else generic) | native | generic",
            example: "\"auto\"",
        },
        Key {
            name: "socket-mode",
            ty: "string",
            default: "\"auto\"",
            doc: "af_xdp, auto: auto (zero-copy if the driver allows it, else copy) | zero-copy | copy",
            example: "\"auto\"",
        },
        Key {
            name: "busy-poll",
            ty: "integer",
            default: "0 (off)",
            doc: "af_xdp, auto: microseconds of preferred busy polling per receive call, 0 to 1000",
            example: "0",
        },
        Key {
            name: "fast-path",
            ty: "string",
            default: "\"off\"",
            doc: "af_xdp: on | off: flows the graph has decided (cross-connects, IPv4 routes) are forwarded by sluice's XDP program in the kernel, without the trip through the socket (docs/xdp-fastpath.md)",
            example: "\"off\"",
        },
        Key {
            name: "ring-size",
            ty: "integer",
            default: "512 (af_packet), 2048 (af_xdp), 1024 (memif)",
            doc: "af_packet: receive slots per queue, a power of two 64-16384 (each holds one frame: the time a worker may be kept off its CPU before the kernel drops, counted as rx-miss; more slots, more queueing in overload); af_xdp, auto (AF_XDP only), memif: entries of each ring, a power of two (af_xdp 64-32768, memif 16-16384)",
            example: "2048",
        },
        Key {
            name: "socket",
            ty: "string (path)",
            default: "required for memif",
            doc: "memif: the memif control socket",
            example: "\"/run/sluice/memif0.sock\"",
        },
        Key {
            name: "role",
            ty: "string",
            default: "\"client\"",
            doc: "memif: client (owns the shared memory: a region of its own, copied in and out; or the buffer pool with zero-copy) | server (listens; copies in and out of the client's buffers)",
            example: "\"client\"",
        },
        Key {
            name: "zero-copy",
            ty: "boolean",
            default: "false",
            doc: "memif client: lend sluice's whole buffer pool to the peer as its region 1, so frames are not copied; the peer can then read and rewrite every interface's packets at any time: for trusted peers only",
            example: "false",
        },
        Key {
            name: "id",
            ty: "integer",
            default: "0",
            doc: "memif: the interface id, as the peer names it",
            example: "0",
        },
        Key {
            name: "secret",
            ty: "string",
            default: "none",
            doc: "memif: the shared secret, at most 23 bytes",
            example: "\"s3cret\"",
        },
        Key {
            name: "mtu",
            ty: "integer",
            default: "the device's (host drivers); none (memif, pcap)",
            doc: "68 to 9000; af_xdp at most 2030 (a frame fits one buffer); a host device's MTU is set and restored on exit",
            example: "1500",
        },
        Key {
            name: "state",
            ty: "string",
            default: "\"up\"",
            doc: "up | down: the admin state at start (`set interface state` changes it)",
            example: "\"up\"",
        },
        Key {
            name: "devargs",
            ty: "string",
            default: "none (required by dpdk)",
            doc: "dpdk: the port as DPDK names it, with its arguments: a PCI address, or a \
                  virtual device such as net_null0, net_ring0, net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap, \
                  net_memif0,role=server,socket=/run/m.sock, net_af_packet0,iface=eth0",
            example: "\"0000:3b:00.0\"",
        },
        Key {
            name: "rx-file",
            ty: "string (path)",
            default: "none",
            doc: "pcap: the capture file to replay into the graph (pcap needs rx-file, tx-file or both)",
            example: "\"in.pcap\"",
        },
        Key {
            name: "tx-file",
            ty: "string (path)",
            default: "none",
            doc: "pcap: the capture file to write what the interface transmits",
            example: "\"out.pcap\"",
        },
        Key {
            name: "loop",
            ty: "boolean",
            default: "false",
            doc: "pcap: replay rx-file forever instead of once",
            example: "false",
        },
        Key {
            name: "address",
            ty: "list of strings",
            default: "[] (none)",
            doc: "IPv4 and IPv6 ADDRESS/LENGTH: the interface routes (connected and local routes, ARP and ND answered)",
            example: "[\"192.0.2.1/24\", \"2001:db8::1/64\"]",
        },
    ],
};

/// An [[interface]], checked.
#[derive(Debug)]
pub struct InterfaceConfig {
    pub name: Spanned<String>,
    pub driver: Driver,
    pub mtu: Option<u32>,
    /// Administratively up (`state = "up"`, the default).
    pub up: bool,
    /// IPv4/IPv6 addresses with prefix length: the interface routes.
    pub address: Vec<Spanned<String>>,
}

/// An [[interface]] as written: the keys of every driver, which driver/ sorts out.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct InterfaceKeys {
    pub(crate) name: Spanned<String>,
    pub(crate) driver: Spanned<String>,
    /// af_packet, af_xdp: the Linux interface to attach to.
    pub(crate) host: Option<String>,
    /// af_xdp: where the XDP program runs (auto: native if the driver has it).
    pub(crate) xdp_mode: Option<Spanned<String>>,
    /// af_xdp: zero-copy or copy sockets (auto: zero-copy if the driver allows it).
    pub(crate) socket_mode: Option<Spanned<String>>,
    /// af_xdp: microseconds of preferred busy polling per receive call (0: off).
    pub(crate) busy_poll: Option<Spanned<u32>>,
    /// af_xdp: the XDP fast path on or off.
    pub(crate) fast_path: Option<Spanned<String>>,
    /// af_packet: receive slots per queue; af_xdp, memif: entries of each ring.
    pub(crate) ring_size: Option<Spanned<u32>>,
    /// memif: the control socket's path.
    pub(crate) socket: Option<PathBuf>,
    /// memif: client or server.
    pub(crate) role: Option<Spanned<String>>,
    /// memif: the interface id.
    pub(crate) id: Option<u32>,
    /// memif client: lend the buffer pool (no copy; trusted peers).
    pub(crate) zero_copy: Option<Spanned<bool>>,
    /// memif: the shared secret.
    pub(crate) secret: Option<String>,
    mtu: Option<Spanned<u32>>,
    state: Option<Spanned<String>>,
    /// dpdk: the port as DPDK names it, with its arguments.
    pub(crate) devargs: Option<Spanned<String>>,
    /// pcap: the file to replay.
    pub(crate) rx_file: Option<PathBuf>,
    /// pcap: the file to write.
    pub(crate) tx_file: Option<PathBuf>,
    /// pcap: replay forever.
    #[serde(default, rename = "loop")]
    pub(crate) looping: bool,
    #[serde(default)]
    address: Vec<Spanned<String>>,
}

impl InterfaceKeys {
    /// Check this interface; `defined` are the ones before it.
    pub(crate) fn check(
        self,
        defined: &[InterfaceConfig],
        c: &Checker<'_>,
    ) -> Result<InterfaceConfig, ConfigError> {
        let name = self.name.get_ref();
        if name.is_empty() || name.len() > 32 || name.contains(char::is_whitespace) {
            return Err(c.err(
                self.name.span(),
                "name",
                format!("'{name}' is not a usable interface name (1-32 characters, no spaces)"),
            ));
        }
        if defined.iter().any(|i| i.name.get_ref() == name) {
            return Err(c.err(
                self.name.span(),
                "name",
                format!("interface '{name}' is defined twice"),
            ));
        }
        let driver = Driver::check(&self, c)?;
        if let Some(mtu) = &self.mtu {
            driver.check_mtu(mtu, c)?;
        }
        c.within(&self.mtu, "mtu", MIN_MTU..=MAX_MTU, |v| {
            format!("{v} is outside {MIN_MTU}..={MAX_MTU}")
        })?;
        let up = match &self.state {
            None => true,
            Some(s) => match s.get_ref().as_str() {
                "up" => true,
                "down" => false,
                _ => {
                    return Err(c.err(
                        s.span(),
                        "state",
                        format!("'{}' is not up or down", s.get_ref()),
                    ))
                }
            },
        };
        Ok(InterfaceConfig {
            name: self.name,
            driver,
            mtu: self.mtu.map(Spanned::into_inner),
            up,
            address: self.address,
        })
    }
}

impl InterfaceConfig {
    /// The addresses parse, and only an interface that is not cross-connected has any.
    pub(crate) fn check_addresses(
        &self,
        l2_ports: &[(&str, &str)],
        c: &Checker<'_>,
    ) -> Result<(), ConfigError> {
        for a in &self.address {
            crate::router::parse_interface_address(a.get_ref())
                .map_err(|e| c.err(a.span(), "address", e))?;
        }
        let port = l2_ports.iter().find(|(n, _)| n == self.name.get_ref());
        if let (Some((_, what)), false) = (port, self.address.is_empty()) {
            return Err(c.err(
                self.name.span(),
                "address",
                format!(
                    "interface '{}' {what}; it cannot also route",
                    self.name.get_ref()
                ),
            ));
        }
        Ok(())
    }
}

/// [[interface]] in the one list of sections (`section::SECTIONS`).
pub static INTERFACE: Saved = Saved(&SECTION, interfaces);

/// [[interface]]: the driver keys and MTU of the start-up file; the admin state and the
/// addresses as they are now.
fn interfaces(st: &State) -> Result<Vec<Entry>, String> {
    let sec = &SECTION;
    let started: Vec<&toml::Table> = match st.started("interface") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_table).collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for itf in &st.c.dp.interfaces.list[..st.c.dp.hardware] {
        let written = started
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(itf.name.as_str()))
            .ok_or_else(|| format!("interface {} is not in the start-up file", itf.name))?;
        let mut e = Entry::from_table(sec, written);
        e.remove("address");
        e.set("state", state_word(itf.is_up()));
        st.set_addresses(&mut e, itf.index);
        out.push(e);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;

    use crate::config::interface_with;

    error_tests! {
        empty_name: "[[interface]]\nname = \"\"\ndriver = \"af_packet\"\n"
            => "t.toml:2: key 'name': '' is not a usable interface name (1-32 characters, no spaces)";
        name_with_a_space: "[[interface]]\nname = \"a b\"\ndriver = \"af_packet\"\n"
            => "t.toml:2: key 'name': 'a b' is not a usable interface name (1-32 characters, no spaces)";
        name_too_long: format!("[[interface]]\nname = \"{}\"\ndriver = \"af_packet\"\n", "x".repeat(33))
            => format!("t.toml:2: key 'name': '{}' is not a usable interface name (1-32 characters, no spaces)", "x".repeat(33));
        interface_defined_twice: interface_with("af_packet", "").repeat(2)
            => "t.toml:5: key 'name': interface 'a' is defined twice";
        mtu_below_the_range: interface_with("af_packet", "mtu = 67\n")
            => "t.toml:4: key 'mtu': 67 is outside 68..=9000";
        mtu_above_the_range: interface_with("memif", "socket = \"s\"\nmtu = 9001\n")
            => "t.toml:5: key 'mtu': 9001 is outside 68..=9000";
        unknown_state: interface_with("pcap", "state = \"sideways\"\ntx-file = \"o\"\n")
            => "t.toml:4: key 'state': 'sideways' is not up or down";
        address_without_length: interface_with("af_packet", "address = [\"192.0.2.1\"]\n")
            => "t.toml:4: key 'address': '192.0.2.1' is not ADDRESS/LENGTH";
        address_on_a_cross_connected_interface: format!(
            "{}[[interface]]\nname = \"b\"\ndriver = \"af_packet\"\n[[xconnect]]\nrx = \"a\"\ntx = \"b\"\n",
            interface_with("af_packet", "address = [\"192.0.2.1/24\"]\n"))
            => "t.toml:2: key 'address': interface 'a' is cross-connected; it cannot also route";
    }

    #[test]
    fn mtu_out_of_range() {
        let e = crate::config::parse_error(
            "[[interface]]\nname = \"a\"\ndriver = \"af_packet\"\nmtu = 65000\n",
        );
        assert!(e.starts_with("t.toml:4: key 'mtu'"), "{e}");
    }

    #[test]
    fn shared_keys() {
        let src = interface_with(
            "af_packet",
            "mtu = 1500\nstate = \"down\"\naddress = [\"192.0.2.1/24\"]\n",
        );
        let c = crate::config::Config::parse(&src, "t.toml").unwrap();
        let i = &c.interfaces[0];
        assert_eq!((i.mtu, i.up, i.address.len()), (Some(1500), false, 1));
        let c = crate::config::Config::parse(&interface_with("af_packet", ""), "t.toml").unwrap();
        assert_eq!((c.interfaces[0].mtu, c.interfaces[0].up), (None, true));
    }
}
