//! The daemon's configuration file (TOML). Every error names the line and the key.
//!
//! ```toml
//! [dataplane]
//! workers = 1              # worker threads
//! worker-cores = [1]       # CPU of each worker (optional)
//! main-core = 0            # CPU of the main thread (optional)
//! buffers = 16384          # packet buffers in the pool
//! hugepages = "auto"       # auto | require | never
//! min-frame = 60           # switched frames shorter than this are padded to it
//! worker-nice = -5         # the workers' nice value: weight against the kernel's receive threads
//!
//! [control]                # sockets, owners, groups, modes; keys in control/access.rs
//! socket = "/run/sluice/cli.sock"
//!
//! [metrics]                # optional: Prometheus GET /metrics; keys in metrics.rs
//! listen = "127.0.0.1:9482"
//!
//! [watchdog]               # optional: stall-timeout, exit-on-stall; keys in watchdog.rs
//! [neighbors]              # optional: table size and NUD timers; keys in neighbors.rs
//!
//! [[interface]]
//! name = "d0"
//! driver = "af_packet"     # af_packet | af_xdp | memif | pcap
//! host = "d0"              # af_packet, af_xdp: the Linux interface (default: name)
//! xdp-mode = "auto"        # af_xdp: auto | native | generic
//! socket-mode = "auto"     # af_xdp: auto | zero-copy | copy
//! ring-size = 2048         # af_packet: receive slots; af_xdp, memif: entries per ring
//! socket = "/run/sluice/memif.sock"  # memif: the control socket
//! role = "client"          # memif: client (owns the memory; zero-copy) | server
//! id = 0                   # memif: interface id, as the peer names it
//! secret = "..."           # memif: optional shared secret
//! mtu = 9000
//! state = "up"             # up | down
//!
//! address = ["192.0.2.1/24", "2001:db8::1/64"]  # routed: IPv4/IPv6 addresses
//!
//! [[xconnect]]
//! rx = "d0"
//! tx = "d1"
//!
//! [[bridge-domain]]        # keys in bridge.rs
//! id = 10
//! members = ["d2", "d3"]
//!
//! [[ip-table]]            # a routing table (VRF) besides table 0; keys in table.rs
//! id = 10
//! interfaces = ["d2"]      # their IPv4 and IPv6 route in table 10
//!
//! [[route]]
//! prefix = "198.19.0.0/16"
//! via = ["198.51.100.2"]   # one next hop, or several for ECMP
//! interface = "d1"         # optional: the next hops' interface (else found by address)
//! table = 0                # optional: the table the route is in (default 0)
//! next-hop-table = 10      # optional: the table whose connected networks hold the next hops
//! [[route]]
//! prefix = "203.0.113.0/24"
//! drop = true              # blackhole
//!
//! [fib]
//! route-file = "table.txt" # PREFIX NEXTHOP lines, `ip route show` or `birdc show route`
//!
//! [[acl]]
//! name = "edge"
//! rules = ["deny proto icmp", "permit"]  # first match decides; no match is denied
//! [[acl-input]]
//! interface = "d0"         # what d0 receives is checked by "edge" before routing
//! acl = "edge"
//! [[acl-output]]
//! interface = "d1"         # what d1 sends is checked by "edge" after the rewrite
//! acl = "edge"
//!
//! [sessions]               # what permit+reflect rules open; timeouts in seconds
//! per-worker = 65536       # sessions each worker's table holds (about 64 bytes each)
//! tcp-established = 7200   # SYN seen both ways, no FIN or RST
//! tcp-transient = 120      # opening, or closing (a FIN each way, or a RST)
//! udp = 120
//! icmp = 30
//! other = 60
//!
//! [[lcp]]                  # a Linux tap mirroring d0 (routing daemons run behind it)
//! interface = "d0"
//! host-if = "tap-d0"
//! ```
//!
//! The text is read into each section's keys as written (serde structs of `Spanned` values,
//! so an error can name its line), then each section checks its own keys where it is
//! defined: `dataplane.rs` ([dataplane]), `interface.rs` (the keys every [[interface]] has),
//! `metrics.rs` ([metrics]), `driver/` (`Driver`, one variant and one file per `driver = ...`, each checking its own
//! keys and refusing them on other drivers), `xconnect.rs` ([[xconnect]]), `bridge.rs`
//! ([[bridge-domain]], [[l2fib]]), `table.rs` ([[ip-table]]), `route.rs` ([[route]], [fib]) and `acl.rs` ([[acl]],
//! [[acl-input]], [[acl-output]], [sessions]) and `lcp.rs` ([[lcp]]); `emit.rs` writes a file
//! back (`sluice ctl save`). This file holds `Config`, the errors and the order of the checks.
//! Each section also declares its keys' documentation (`reference::SectionDoc`) beside its serde
//! struct; `reference.rs` gathers them into `docs/config.md` (`sluice run
//! --print-config-reference`) and its tests hold them to the keys serde accepts. `section.rs`
//! holds the `Section` trait and `SECTIONS`, the one list of sections that the reference and
//! `sluice ctl save` iterate.

/// One `#[test]` per case: config text and the exact error it gives.
#[cfg(test)]
macro_rules! error_tests {
    ($($name:ident: $src:expr => $want:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(crate::config::parse_error(&$src), $want);
        }
    )*};
}

#[cfg(test)]
pub(crate) use error_tests;

// Each section's keys and checks live with its subsystem (`acl/config.rs`,
// `l2/config/`, ...); this file parses the whole and checks across sections.
use crate::acl::config as acl;
use crate::control::metrics::config as metrics;
use crate::dataplane::config::{placement, watchdog, workers as dataplane};
use crate::handoff::config as handoff;
use crate::interface::config::{driver, interface, subif};
use crate::l2::config::{bridge, xconnect};
use crate::lcp::config::{pair as lcp, punt};
use crate::router::config::{neighbors, route, table};

pub use acl::{AclConfig, AclInput, SessionsConfig, DEFAULT_SESSIONS};
pub use dataplane::DEFAULT_WORKER_NICE;
pub mod emit;
pub mod reference;
pub mod section;

pub use bridge::{parse_mac_age, BridgeDomainConfig, BviConfig, StaticMac};
pub use dataplane::Dataplane;
pub use driver::{AfPacket, AfXdp, Driver, Memif, Pcap};
pub use handoff::HandoffConfig;
pub use interface::InterfaceConfig;
pub use lcp::LcpConfig;
pub use metrics::MetricsConfig;
pub use placement::RxPlacementConfig;
pub use route::{FibConfig, RouteConfig};
pub use subif::SubIfConfig;
pub use table::TableConfig;
pub use xconnect::Xconnect;

use serde::Deserialize;
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;
use toml::Spanned;

pub use crate::control::access::ControlConfig as Control;

pub const DEFAULT_SOCKET: &str = "/run/sluice/cli.sock";
pub const MAX_WORKERS: usize = 64;
pub const MAX_MTU: u32 = 9000;
pub const MIN_MTU: u32 = 68;

/// A checked config file.
#[derive(Debug)]
pub struct Config {
    pub dataplane: Dataplane,
    pub control: Control,
    pub metrics: MetricsConfig,
    pub watchdog: crate::dataplane::watchdog::WatchdogConfig,
    pub neighbors: crate::router::nud::Times,
    pub interfaces: Vec<InterfaceConfig>,
    pub subinterfaces: Vec<SubIfConfig>,
    pub xconnects: Vec<Xconnect>,
    pub rx_placements: Vec<RxPlacementConfig>,
    pub handoffs: Vec<HandoffConfig>,
    pub bridge_domains: Vec<BridgeDomainConfig>,
    pub static_macs: Vec<StaticMac>,
    pub bvis: Vec<BviConfig>,
    pub tables: Vec<TableConfig>,
    pub routes: Vec<RouteConfig>,
    pub fib: FibConfig,
    pub acls: Vec<AclConfig>,
    pub acl_inputs: Vec<AclInput>,
    pub acl_outputs: Vec<AclInput>,
    pub sessions: SessionsConfig,
    pub lcps: Vec<LcpConfig>,
    pub punt: crate::lcp::policy::PuntPolicy,
    /// [nat44], [[nat44-interface]], [[nat44-static]]; `None` when none is written.
    pub nat44: Option<crate::nat44::config::Nat44Config>,
    /// [dpdk]: DPDK's environment for the dpdk interfaces.
    pub dpdk: crate::drivers::dpdk::config::DpdkSection,
    /// The file's tables as written (`sluice ctl save` keeps the sections the CLI cannot
    /// change, and each interface's driver keys, from it).
    pub written: toml::Table,
}

/// The file as written, before the checks.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigKeys {
    #[serde(default)]
    dataplane: dataplane::DataplaneKeys,
    #[serde(default)]
    control: crate::control::access::ControlKeys,
    #[serde(default)]
    metrics: metrics::MetricsKeys,
    #[serde(default)]
    watchdog: watchdog::WatchdogKeys,
    #[serde(default)]
    neighbors: neighbors::NeighborKeys,
    #[serde(default, rename = "interface")]
    interfaces: Vec<interface::InterfaceKeys>,
    #[serde(default, rename = "subinterface")]
    subinterfaces: Vec<subif::SubIfKeys>,
    #[serde(default, rename = "xconnect")]
    xconnects: Vec<Xconnect>,
    #[serde(default, rename = "rx-placement")]
    rx_placements: Vec<placement::PlacementKeys>,
    #[serde(default, rename = "handoff")]
    handoffs: Vec<handoff::HandoffKeys>,
    #[serde(default, rename = "bridge-domain")]
    bridge_domains: Vec<bridge::BridgeDomainKeys>,
    #[serde(default, rename = "l2fib")]
    static_macs: Vec<bridge::StaticMacKeys>,
    #[serde(default, rename = "bvi")]
    bvis: Vec<bridge::BviKeys>,
    #[serde(default, rename = "ip-table")]
    tables: Vec<table::TableKeys>,
    #[serde(default, rename = "route")]
    routes: Vec<route::RouteKeys>,
    #[serde(default)]
    fib: FibConfig,
    #[serde(default, rename = "acl")]
    acls: Vec<acl::AclKeys>,
    #[serde(default, rename = "acl-input")]
    acl_inputs: Vec<acl::AclInputKeys>,
    #[serde(default, rename = "acl-output")]
    acl_outputs: Vec<acl::AclInputKeys>,
    #[serde(default)]
    sessions: acl::SessionsKeys,
    #[serde(default, rename = "lcp")]
    lcps: Vec<lcp::LcpKeys>,
    #[serde(default)]
    punt: punt::PuntKeys,
    #[serde(default)]
    nat44: crate::nat44::config::NatKeys,
    #[serde(default, rename = "nat44-interface")]
    nat44_interfaces: Vec<crate::nat44::config::NatInterfaceKeys>,
    #[serde(default, rename = "nat44-static")]
    nat44_statics: Vec<crate::nat44::config::NatStaticKeys>,
    #[serde(default)]
    dpdk: crate::drivers::dpdk::config::DpdkKeys,
}

/// A config error: where, which key, what is wrong.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn line_of(src: &str, offset: usize) -> usize {
    src[..offset.min(src.len())].matches('\n').count() + 1
}

/// Turns a span of the text into a "origin:line: key 'k': what" error.
pub(crate) struct Checker<'a> {
    pub(crate) src: &'a str,
    pub(crate) origin: &'a str,
}

impl Checker<'_> {
    pub(crate) fn err(&self, span: std::ops::Range<usize>, key: &str, msg: String) -> ConfigError {
        ConfigError(format!(
            "{}:{}: key '{key}': {msg}",
            self.origin,
            line_of(self.src, span.start)
        ))
    }

    /// `name` (the value of `key`) is one of the interfaces `names` (the [[interface]]s, or
    /// those and the sub-interfaces, as the section allows).
    pub(crate) fn known_interface(
        &self,
        name: &Spanned<String>,
        key: &str,
        names: &[&str],
    ) -> Result<(), ConfigError> {
        if names.contains(&name.get_ref().as_str()) {
            return Ok(());
        }
        Err(self.err(
            name.span(),
            key,
            format!(
                "no interface named '{}' (defined: {})",
                name.get_ref(),
                names.join(", ")
            ),
        ))
    }

    /// The value of the optional key `key` if it lies in `range`; outside it, the error
    /// `msg` writes for that value.
    pub(crate) fn within<T: PartialOrd + Copy>(
        &self,
        v: &Option<Spanned<T>>,
        key: &str,
        range: std::ops::RangeInclusive<T>,
        msg: impl FnOnce(T) -> String,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = v else {
            return Ok(None);
        };
        let x = *v.get_ref();
        if !range.contains(&x) {
            return Err(self.err(v.span(), key, msg(x)));
        }
        Ok(Some(x))
    }

    /// The value that `v` names among `choices`, or an error listing them.
    pub(crate) fn one_of<T: Copy>(
        &self,
        v: &Spanned<String>,
        key: &str,
        choices: &[(&str, T)],
    ) -> Result<T, ConfigError> {
        match choices
            .iter()
            .find(|(name, _)| *name == v.get_ref().as_str())
        {
            Some((_, value)) => Ok(*value),
            None => {
                let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
                Err(self.err(
                    v.span(),
                    key,
                    format!("'{}' is not one of {}", v.get_ref(), names.join(", ")),
                ))
            }
        }
    }
}

impl Config {
    /// Read and check a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let src = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
        Config::parse(&src, &path.display().to_string())
    }

    /// Parse and check config text; `origin` names it in errors.
    pub fn parse(src: &str, origin: &str) -> Result<Config, ConfigError> {
        let keys: ConfigKeys = toml::from_str(src).map_err(|e| {
            let line = e.span().map(|s| line_of(src, s.start)).unwrap_or(0);
            let msg = e.message().replace('\n', " ");
            ConfigError(format!("{origin}:{line}: {msg}"))
        })?;
        let written: toml::Table = toml::from_str(src)
            .map_err(|e| ConfigError(format!("{origin}: {}", e.message().replace('\n', " "))))?;
        let mut cfg = Config::check(keys, &Checker { src, origin })?;
        cfg.written = written;
        Ok(cfg)
    }

    /// Each section in file order; the cross-references (xconnects, addresses, routes) once
    /// every interface is known.
    fn check(keys: ConfigKeys, c: &Checker<'_>) -> Result<Config, ConfigError> {
        let dataplane = keys.dataplane.check(c)?;
        let control = keys.control.check(c)?;
        let metrics = keys.metrics.check(c)?;
        let watchdog = keys.watchdog.check(c)?;
        let neighbors = keys.neighbors.check(c)?;
        let mut interfaces: Vec<InterfaceConfig> = Vec::new();
        for i in keys.interfaces {
            let checked = i.check(&interfaces, c)?;
            interfaces.push(checked);
        }
        let hardware: Vec<&str> = interfaces
            .iter()
            .map(|i| i.name.get_ref().as_str())
            .collect();
        let mut subinterfaces: Vec<SubIfConfig> = Vec::new();
        for s in keys.subinterfaces {
            let checked = s.check(&hardware, &subinterfaces, c)?;
            subinterfaces.push(checked);
        }
        let sub_names: Vec<String> = subinterfaces.iter().map(|s| s.name()).collect();
        let mut names = hardware.clone();
        names.extend(sub_names.iter().map(String::as_str));
        let cross_connected = xconnect::check(&keys.xconnects, &names, c)?;
        let rx_placements = placement::check(keys.rx_placements, &hardware, dataplane.workers, c)?;
        let handoffs = handoff::check(keys.handoffs, &hardware, dataplane.workers, c)?;
        let bridge_domains = bridge::check_domains(keys.bridge_domains, &names, c)?;
        let static_macs = bridge::check_macs(keys.static_macs, &bridge_domains, c)?;
        let bvis = bridge::check_bvis(keys.bvis, &bridge_domains, c)?;
        // A route may leave by a BVI; a BVI joins its domain by [[bvi]], not as a member.
        let bvi_names: Vec<String> = bvis.iter().map(|b| b.name()).collect();
        let mut route_names = names.clone();
        route_names.extend(bvi_names.iter().map(String::as_str));
        let mut l2_ports: Vec<(&str, &str)> = Vec::new();
        for d in &bridge_domains {
            for (name, _) in &d.members {
                if cross_connected.contains(&name.as_str()) {
                    return Err(ConfigError(format!(
                        "{}: interface '{name}' is both cross-connected and in bridge domain {}",
                        c.origin, d.id
                    )));
                }
                l2_ports.push((name, "is in a bridge domain"));
            }
        }
        l2_ports.extend(cross_connected.iter().map(|n| (*n, "is cross-connected")));
        for i in &interfaces {
            i.check_addresses(&l2_ports, c)?;
        }
        for s in &subinterfaces {
            if let (Some((_, what)), Some(a)) = (
                l2_ports.iter().find(|(n, _)| *n == s.name()),
                s.address.first(),
            ) {
                return Err(c.err(
                    a.span(),
                    "address",
                    format!("interface '{}' {what}; it cannot also route", s.name()),
                ));
            }
        }
        let tables = table::check(keys.tables, &route_names, c)?;
        let table_ids: Vec<u32> = tables.iter().map(|t| t.id).collect();
        let mut routes = Vec::new();
        for r in keys.routes {
            routes.push(r.check(&route_names, &table_ids, c)?);
        }
        let acls = acl::check_acls(keys.acls, c)?;
        let acl_inputs = acl::check_inputs(keys.acl_inputs, &acls, &names, (c, "input"))?;
        let acl_outputs = acl::check_inputs(keys.acl_outputs, &acls, &names, (c, "output"))?;
        let sessions = keys.sessions.check(c)?;
        let lcps = lcp::check(keys.lcps, &names, c)?;
        let punt = keys.punt.check(c)?;
        let nat = (keys.nat44, keys.nat44_interfaces, keys.nat44_statics);
        let nat44 = crate::nat44::config::check(nat, &route_names, c)?;
        let dpdk = keys.dpdk.check(c)?;
        Ok(Config {
            dataplane,
            control,
            metrics,
            watchdog,
            neighbors,
            interfaces,
            subinterfaces,
            xconnects: keys.xconnects,
            rx_placements,
            handoffs,
            bridge_domains,
            static_macs,
            bvis,
            tables,
            routes,
            fib: keys.fib,
            acls,
            acl_inputs,
            acl_outputs,
            sessions,
            lcps,
            punt,
            nat44,
            dpdk,
            written: toml::Table::new(),
        })
    }
}

/// The error `src` gives, for the tests of each section.
#[cfg(test)]
pub(crate) fn parse_error(src: &str) -> String {
    Config::parse(src, "t.toml").unwrap_err().0
}

/// An interface `a` of `driver` (lines 1-3) followed by `extra` (from line 4).
#[cfg(test)]
pub(crate) fn interface_with(driver: &str, extra: &str) -> String {
    format!("[[interface]]\nname = \"a\"\ndriver = \"{driver}\"\n{extra}")
}

/// Two pcap interfaces, p0 cross-connected to p1 (the xconnect at lines 15-17).
#[cfg(test)]
pub(crate) const GOOD: &str = r#"
[dataplane]
workers = 1

[[interface]]
name = "p0"
driver = "pcap"
rx-file = "in.pcap"

[[interface]]
name = "p1"
driver = "pcap"
tx-file = "out.pcap"

[[xconnect]]
rx = "p0"
tx = "p1"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_config_parses() {
        let c = Config::parse(GOOD, "t.toml").unwrap();
        assert_eq!(c.interfaces.len(), 2);
        assert_eq!(c.xconnects[0].tx.get_ref(), "p1");
        assert_eq!(c.control.socket, PathBuf::from(DEFAULT_SOCKET));
    }

    fn err(src: &str) -> String {
        parse_error(src)
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let e = err("[dataplane]\nworkers = 1\nwrokers = 2\n");
        assert!(e.starts_with("t.toml:3:"), "{e}");
        assert!(e.contains("wrokers"), "{e}");
    }

    #[test]
    fn bad_value_names_line_and_key() {
        let e = err("[dataplane]\n\nworkers = 0\n");
        assert!(e.starts_with("t.toml:3: key 'workers'"), "{e}");
        let e = err(&GOOD.replace("tx = \"p1\"", "tx = \"p9\""));
        assert!(e.contains(":17: key 'tx'") && e.contains("p9"), "{e}");
        let e = err(&GOOD.replace("driver = \"pcap\"\nrx-file", "driver = \"netmap\"\nrx-file"));
        assert!(
            e.contains(":7: key 'driver'") && e.contains("netmap"),
            "{e}"
        );
    }

    #[test]
    fn wrong_type_is_an_error_with_line() {
        let e = err("[dataplane]\nworkers = \"two\"\n");
        assert!(e.starts_with("t.toml:2:"), "{e}");
    }

    #[test]
    fn load_names_the_unreadable_file() {
        let e = Config::load(Path::new("/nonexistent/x.toml"))
            .unwrap_err()
            .0;
        assert!(e.starts_with("/nonexistent/x.toml: "), "{e}");
    }

    #[test]
    fn shipped_examples_parse() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                Config::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                n += 1;
            }
        }
        assert!(n >= 3, "examples found: {n}");
    }
}
