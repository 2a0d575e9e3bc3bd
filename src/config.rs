//! The daemon's configuration file (TOML). Every error names the line and the key.
//!
//! ```toml
//! [dataplane]
//! workers = 1              # worker threads
//! worker-cores = [1]       # CPU of each worker (optional)
//! main-core = 0            # CPU of the main thread (optional)
//! buffers = 16384          # packet buffers in the pool
//! hugepages = "auto"       # auto | require | never
//! min-frame = 60           # frames shorter than this are runts
//!
//! [control]
//! socket = "/run/sluice/cli.sock"
//!
//! [[interface]]
//! name = "d0"
//! driver = "af_packet"     # af_packet | af_xdp | memif | pcap
//! host = "d0"              # af_packet, af_xdp: the Linux interface (default: name)
//! xdp-mode = "auto"        # af_xdp: auto | native | generic
//! socket-mode = "auto"     # af_xdp: auto | zero-copy | copy
//! ring-size = 2048         # af_xdp, memif: entries per ring (power of two)
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
//! [[route]]
//! prefix = "198.19.0.0/16"
//! via = ["198.51.100.2"]   # one next hop, or several for ECMP
//! interface = "d1"         # optional: the next hops' interface (else found by address)
//! [[route]]
//! prefix = "203.0.113.0/24"
//! drop = true              # blackhole
//!
//! [fib]
//! route-file = "table.txt" # PREFIX NEXTHOP lines, `ip route show` or `birdc show route`
//! ```

use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

pub const DEFAULT_SOCKET: &str = "/run/sluice/cli.sock";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub dataplane: Dataplane,
    #[serde(default)]
    pub control: Control,
    #[serde(default, rename = "interface")]
    pub interfaces: Vec<InterfaceConfig>,
    #[serde(default, rename = "xconnect")]
    pub xconnects: Vec<Xconnect>,
    #[serde(default, rename = "route")]
    pub routes: Vec<RouteConfig>,
    #[serde(default)]
    pub fib: FibConfig,
}

/// A static route.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    pub prefix: Spanned<String>,
    #[serde(default)]
    pub via: Vec<Spanned<String>>,
    pub interface: Option<Spanned<String>>,
    #[serde(default)]
    pub drop: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FibConfig {
    /// Routes loaded at start, in one build.
    #[serde(alias = "route_file")]
    pub route_file: Option<Spanned<PathBuf>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Dataplane {
    #[serde(default = "one")]
    pub workers: Spanned<usize>,
    #[serde(default)]
    pub worker_cores: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub main_core: Option<Spanned<usize>>,
    #[serde(default = "default_buffers")]
    pub buffers: Spanned<u32>,
    #[serde(default = "default_hugepages")]
    pub hugepages: Spanned<String>,
    #[serde(default = "default_min_frame")]
    pub min_frame: Spanned<usize>,
}

impl Default for Dataplane {
    fn default() -> Self {
        Dataplane {
            workers: one(),
            worker_cores: None,
            main_core: None,
            buffers: default_buffers(),
            hugepages: default_hugepages(),
            min_frame: default_min_frame(),
        }
    }
}

fn one() -> Spanned<usize> {
    Spanned::new(0..0, 1)
}
fn default_buffers() -> Spanned<u32> {
    Spanned::new(0..0, 32768)
}
fn default_hugepages() -> Spanned<String> {
    Spanned::new(0..0, "auto".into())
}
fn default_min_frame() -> Spanned<usize> {
    Spanned::new(0..0, crate::wire::ethernet::MIN_FRAME_LEN)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    #[serde(default = "default_socket")]
    pub socket: PathBuf,
}

impl Default for Control {
    fn default() -> Self {
        Control {
            socket: default_socket(),
        }
    }
}

fn default_socket() -> PathBuf {
    DEFAULT_SOCKET.into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct InterfaceConfig {
    pub name: Spanned<String>,
    pub driver: Spanned<String>,
    /// af_packet, af_xdp: the Linux interface to attach to.
    pub host: Option<String>,
    /// af_xdp: where the XDP program runs (auto: native if the driver has it).
    pub xdp_mode: Option<Spanned<String>>,
    /// af_xdp: zero-copy or copy sockets (auto: zero-copy if the driver allows it).
    pub socket_mode: Option<Spanned<String>>,
    /// af_xdp, memif: entries of each ring.
    pub ring_size: Option<Spanned<u32>>,
    /// memif: the control socket's path.
    pub socket: Option<PathBuf>,
    /// memif: client or server.
    pub role: Option<Spanned<String>>,
    /// memif: the interface id.
    pub id: Option<u32>,
    /// memif: the shared secret.
    pub secret: Option<String>,
    pub mtu: Option<Spanned<u32>>,
    pub state: Option<Spanned<String>>,
    /// pcap: the file to replay.
    pub rx_file: Option<PathBuf>,
    /// pcap: the file to write.
    pub tx_file: Option<PathBuf>,
    /// pcap: replay forever.
    #[serde(default, rename = "loop")]
    pub looping: bool,
    /// IPv4/IPv6 addresses with prefix length: the interface routes.
    #[serde(default)]
    pub address: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Xconnect {
    pub rx: Spanned<String>,
    pub tx: Spanned<String>,
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

struct Checker<'a> {
    src: &'a str,
    origin: &'a str,
}

impl Checker<'_> {
    fn err(&self, span: std::ops::Range<usize>, key: &str, msg: String) -> ConfigError {
        ConfigError(format!(
            "{}:{}: key '{key}': {msg}",
            self.origin,
            line_of(self.src, span.start)
        ))
    }
}

pub const MAX_WORKERS: usize = 64;
pub const MAX_MTU: u32 = 9000;
pub const MIN_MTU: u32 = 68;

impl Config {
    /// Read and check a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let src = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
        Config::parse(&src, &path.display().to_string())
    }

    /// Parse and check config text; `origin` names it in errors.
    pub fn parse(src: &str, origin: &str) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(src).map_err(|e| {
            let line = e.span().map(|s| line_of(src, s.start)).unwrap_or(0);
            let msg = e.message().replace('\n', " ");
            ConfigError(format!("{origin}:{line}: {msg}"))
        })?;
        cfg.check(&Checker { src, origin })?;
        Ok(cfg)
    }

    fn check(&self, c: &Checker<'_>) -> Result<(), ConfigError> {
        let d = &self.dataplane;
        let workers = *d.workers.get_ref();
        if workers == 0 || workers > MAX_WORKERS {
            return Err(c.err(
                d.workers.span(),
                "workers",
                format!("must be between 1 and {MAX_WORKERS}, not {workers}"),
            ));
        }
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        if let Some(cores) = &d.worker_cores {
            if cores.get_ref().len() != workers {
                return Err(c.err(
                    cores.span(),
                    "worker-cores",
                    format!(
                        "lists {} cores for {workers} workers",
                        cores.get_ref().len()
                    ),
                ));
            }
            if let Some(bad) = cores.get_ref().iter().find(|&&k| k >= cpus) {
                return Err(c.err(
                    cores.span(),
                    "worker-cores",
                    format!("CPU {bad} does not exist (this machine has {cpus})"),
                ));
            }
        }
        if let Some(m) = &d.main_core {
            if *m.get_ref() >= cpus {
                return Err(c.err(
                    m.span(),
                    "main-core",
                    format!(
                        "CPU {} does not exist (this machine has {cpus})",
                        m.get_ref()
                    ),
                ));
            }
        }
        if *d.buffers.get_ref() < 1024 {
            return Err(c.err(d.buffers.span(), "buffers", "must be at least 1024".into()));
        }
        if !["auto", "require", "never"].contains(&d.hugepages.get_ref().as_str()) {
            return Err(c.err(
                d.hugepages.span(),
                "hugepages",
                format!(
                    "'{}' is not one of auto, require, never",
                    d.hugepages.get_ref()
                ),
            ));
        }
        let mut names: Vec<&str> = Vec::new();
        for i in &self.interfaces {
            let name = i.name.get_ref().as_str();
            if name.is_empty() || name.len() > 32 || name.contains(char::is_whitespace) {
                return Err(c.err(
                    i.name.span(),
                    "name",
                    format!("'{name}' is not a usable interface name (1-32 characters, no spaces)"),
                ));
            }
            if names.contains(&name) {
                return Err(c.err(
                    i.name.span(),
                    "name",
                    format!("interface '{name}' is defined twice"),
                ));
            }
            names.push(name);
            match i.driver.get_ref().as_str() {
                "af_packet" | "af_xdp" => {
                    if i.rx_file.is_some() || i.tx_file.is_some() {
                        return Err(c.err(
                            i.driver.span(),
                            "rx-file",
                            "rx-file and tx-file belong to pcap interfaces".into(),
                        ));
                    }
                }
                "memif" => {
                    if i.socket.is_none() {
                        return Err(c.err(
                            i.driver.span(),
                            "socket",
                            format!("memif interface '{name}' needs socket = \"PATH\""),
                        ));
                    }
                    if i.rx_file.is_some() || i.tx_file.is_some() || i.host.is_some() {
                        return Err(c.err(
                            i.driver.span(),
                            "driver",
                            "a memif interface takes socket, role, id, secret, ring-size".into(),
                        ));
                    }
                }
                "pcap" => {
                    if i.rx_file.is_none() && i.tx_file.is_none() {
                        return Err(c.err(
                            i.driver.span(),
                            "driver",
                            format!("pcap interface '{name}' needs rx-file, tx-file or both"),
                        ));
                    }
                }
                other => {
                    return Err(c.err(
                        i.driver.span(),
                        "driver",
                        format!("unknown driver '{other}' (known: af_packet, af_xdp, memif, pcap)"),
                    ))
                }
            }
            let is_xdp = i.driver.get_ref() == "af_xdp";
            let is_memif = i.driver.get_ref() == "memif";
            if let Some(r) = &i.role {
                if !is_memif {
                    return Err(c.err(r.span(), "role", "belongs to memif interfaces".into()));
                }
                if !["client", "server"].contains(&r.get_ref().as_str()) {
                    return Err(c.err(
                        r.span(),
                        "role",
                        format!("'{}' is not client or server", r.get_ref()),
                    ));
                }
            }
            if !is_memif && (i.socket.is_some() || i.id.is_some() || i.secret.is_some()) {
                return Err(c.err(
                    i.driver.span(),
                    "socket",
                    "socket, id and secret belong to memif interfaces".into(),
                ));
            }
            if i.secret.as_ref().is_some_and(|s| s.len() > 23) {
                return Err(c.err(
                    i.driver.span(),
                    "secret",
                    "a memif secret is at most 23 bytes".into(),
                ));
            }
            for (key, v, allowed) in [
                ("xdp-mode", &i.xdp_mode, &["auto", "native", "generic"][..]),
                (
                    "socket-mode",
                    &i.socket_mode,
                    &["auto", "zero-copy", "copy"][..],
                ),
            ] {
                if let Some(v) = v {
                    if !is_xdp {
                        return Err(c.err(v.span(), key, "belongs to af_xdp interfaces".into()));
                    }
                    if !allowed.contains(&v.get_ref().as_str()) {
                        return Err(c.err(
                            v.span(),
                            key,
                            format!("'{}' is not one of {}", v.get_ref(), allowed.join(", ")),
                        ));
                    }
                }
            }
            if let Some(r) = &i.ring_size {
                let v = *r.get_ref();
                let (lo, hi) = match (is_xdp, is_memif) {
                    (true, _) => (64, 32768),
                    (_, true) => (16, 16384),
                    _ => {
                        return Err(c.err(
                            r.span(),
                            "ring-size",
                            "belongs to af_xdp and memif interfaces".into(),
                        ))
                    }
                };
                if !v.is_power_of_two() || !(lo..=hi).contains(&v) {
                    return Err(c.err(
                        r.span(),
                        "ring-size",
                        format!("{v} is not a power of two between {lo} and {hi}"),
                    ));
                }
            }
            if let Some(mtu) = &i.mtu {
                let v = *mtu.get_ref();
                if is_xdp && v > crate::drivers::af_xdp::MAX_MTU {
                    return Err(c.err(
                        mtu.span(),
                        "mtu",
                        format!(
                            "{v} is too large for af_xdp (frames must fit one buffer: at most {})",
                            crate::drivers::af_xdp::MAX_MTU
                        ),
                    ));
                }
                if !(MIN_MTU..=MAX_MTU).contains(&v) {
                    return Err(c.err(
                        mtu.span(),
                        "mtu",
                        format!("{v} is outside {MIN_MTU}..={MAX_MTU}"),
                    ));
                }
            }
            if let Some(s) = &i.state {
                if !["up", "down"].contains(&s.get_ref().as_str()) {
                    return Err(c.err(
                        s.span(),
                        "state",
                        format!("'{}' is not up or down", s.get_ref()),
                    ));
                }
            }
        }
        let mut rxs: Vec<&str> = Vec::new();
        for x in &self.xconnects {
            for (key, v) in [("rx", &x.rx), ("tx", &x.tx)] {
                if !names.contains(&v.get_ref().as_str()) {
                    return Err(c.err(
                        v.span(),
                        key,
                        format!(
                            "no interface named '{}' (defined: {})",
                            v.get_ref(),
                            names.join(", ")
                        ),
                    ));
                }
            }
            if rxs.contains(&x.rx.get_ref().as_str()) {
                return Err(c.err(
                    x.rx.span(),
                    "rx",
                    format!("interface '{}' is cross-connected twice", x.rx.get_ref()),
                ));
            }
            rxs.push(x.rx.get_ref());
        }
        for i in &self.interfaces {
            for a in &i.address {
                crate::router::parse_interface_address(a.get_ref())
                    .map_err(|e| c.err(a.span(), "address", e))?;
            }
            if !i.address.is_empty() && rxs.contains(&i.name.get_ref().as_str()) {
                return Err(c.err(
                    i.name.span(),
                    "address",
                    format!(
                        "interface '{}' is cross-connected; it cannot also route",
                        i.name.get_ref()
                    ),
                ));
            }
        }
        for r in &self.routes {
            let prefix = crate::fib::parse::parse_prefix(r.prefix.get_ref())
                .map_err(|e| c.err(r.prefix.span(), "prefix", e))?;
            if r.drop != r.via.is_empty() {
                return Err(c.err(
                    r.prefix.span(),
                    "via",
                    format!(
                        "route {prefix} needs either via (next hops) or drop = true, not {}",
                        if r.drop { "both" } else { "neither" }
                    ),
                ));
            }
            for v in &r.via {
                let ip: std::net::IpAddr = v.get_ref().parse().map_err(|_| {
                    c.err(
                        v.span(),
                        "via",
                        format!("'{}' is not an address", v.get_ref()),
                    )
                })?;
                let v4 = matches!(prefix, crate::fib::parse::IpPrefix::V4(_));
                if ip.is_ipv4() != v4 {
                    return Err(c.err(
                        v.span(),
                        "via",
                        format!("{ip} is not of the family of {prefix}"),
                    ));
                }
            }
            if let Some(itf) = &r.interface {
                if !names.contains(&itf.get_ref().as_str()) {
                    return Err(c.err(
                        itf.span(),
                        "interface",
                        format!("no interface named '{}'", itf.get_ref()),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
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

    #[test]
    fn good_config_parses() {
        let c = Config::parse(GOOD, "t.toml").unwrap();
        assert_eq!(c.interfaces.len(), 2);
        assert_eq!(c.xconnects[0].tx.get_ref(), "p1");
        assert_eq!(c.control.socket, PathBuf::from(DEFAULT_SOCKET));
    }

    fn err(src: &str) -> String {
        Config::parse(src, "t.toml").unwrap_err().0
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
        let e = err(&GOOD.replace("driver = \"pcap\"\nrx-file", "driver = \"dpdk\"\nrx-file"));
        assert!(e.contains(":7: key 'driver'") && e.contains("dpdk"), "{e}");
    }

    #[test]
    fn wrong_type_is_an_error_with_line() {
        let e = err("[dataplane]\nworkers = \"two\"\n");
        assert!(e.starts_with("t.toml:2:"), "{e}");
    }

    #[test]
    fn mtu_out_of_range() {
        let e = err("[[interface]]\nname = \"a\"\ndriver = \"af_packet\"\nmtu = 65000\n");
        assert!(e.starts_with("t.toml:4: key 'mtu'"), "{e}");
    }

    #[test]
    fn shipped_examples_parse() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
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

    #[test]
    fn routing_keys_are_checked() {
        let base = "[[interface]]\nname = \"a\"\ndriver = \"pcap\"\ntx-file = \"o.pcap\"\n";
        let bad = [
            ("address = [\"192.0.2.1\"]\n", "address"),
            ("address = [\"192.0.2.1/33\"]\n", "address"),
            ("[[route]]\nprefix = \"10.0.0.0/8\"\n", "via"),
            (
                "[[route]]\nprefix = \"10.0.0.1/8\"\nvia = [\"192.0.2.2\"]\n",
                "prefix",
            ),
            (
                "[[route]]\nprefix = \"10.0.0.0/8\"\nvia = [\"2001:db8::1\"]\n",
                "via",
            ),
            (
                "[[route]]\nprefix = \"10.0.0.0/8\"\ndrop = true\nvia = [\"192.0.2.2\"]\n",
                "via",
            ),
            (
                "[[route]]\nprefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\ninterface = \"zz\"\n",
                "interface",
            ),
        ];
        for (extra, key) in bad {
            let e = Config::parse(&format!("{base}{extra}"), "r.toml")
                .unwrap_err()
                .0;
            assert!(e.contains(&format!("key '{key}'")), "{extra}: {e}");
        }
        let ok = format!(
            "{base}address = [\"192.0.2.1/24\", \"2001:db8::1/64\"]\n\
             [[route]]\nprefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\", \"192.0.2.3\"]\n\
             [fib]\nroute-file = \"t.txt\"\n"
        );
        let c = Config::parse(&ok, "r.toml").unwrap();
        assert_eq!(c.routes[0].via.len(), 2);
        assert_eq!(c.interfaces[0].address.len(), 2);
    }

    // One test per error the checker gives, each with its full text: where, which key, what.

    /// An interface `a` of `driver` (lines 1-3) followed by `extra` (from line 4).
    fn itf(driver: &str, extra: &str) -> String {
        format!("[[interface]]\nname = \"a\"\ndriver = \"{driver}\"\n{extra}")
    }

    fn cpus() -> usize {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    }

    #[test]
    fn load_names_the_unreadable_file() {
        let e = Config::load(Path::new("/nonexistent/x.toml"))
            .unwrap_err()
            .0;
        assert!(e.starts_with("/nonexistent/x.toml: "), "{e}");
    }

    #[test]
    fn workers_out_of_range() {
        for n in [0, 65] {
            assert_eq!(
                err(&format!("[dataplane]\nworkers = {n}\n")),
                format!("t.toml:2: key 'workers': must be between 1 and 64, not {n}")
            );
        }
    }

    #[test]
    fn worker_cores_of_the_wrong_count() {
        assert_eq!(
            err("[dataplane]\nworkers = 2\nworker-cores = [0]\n"),
            "t.toml:3: key 'worker-cores': lists 1 cores for 2 workers"
        );
    }

    #[test]
    fn worker_core_that_does_not_exist() {
        assert_eq!(
            err("[dataplane]\nworker-cores = [4096]\n"),
            format!(
                "t.toml:2: key 'worker-cores': CPU 4096 does not exist (this machine has {})",
                cpus()
            )
        );
    }

    #[test]
    fn main_core_that_does_not_exist() {
        assert_eq!(
            err("[dataplane]\nmain-core = 4096\n"),
            format!(
                "t.toml:2: key 'main-core': CPU 4096 does not exist (this machine has {})",
                cpus()
            )
        );
    }

    #[test]
    fn too_few_buffers() {
        assert_eq!(
            err("[dataplane]\nbuffers = 1000\n"),
            "t.toml:2: key 'buffers': must be at least 1024"
        );
    }

    #[test]
    fn unknown_hugepages_choice() {
        assert_eq!(
            err("[dataplane]\nhugepages = \"maybe\"\n"),
            "t.toml:2: key 'hugepages': 'maybe' is not one of auto, require, never"
        );
    }

    #[test]
    fn unusable_interface_name() {
        for name in ["", "a b", &"x".repeat(33)] {
            assert_eq!(
                err(&format!(
                    "[[interface]]\nname = \"{name}\"\ndriver = \"af_packet\"\n"
                )),
                format!(
                    "t.toml:2: key 'name': '{name}' is not a usable interface name \
                     (1-32 characters, no spaces)"
                )
            );
        }
    }

    #[test]
    fn interface_defined_twice() {
        let one = itf("af_packet", "");
        assert_eq!(
            err(&format!("{one}{one}")),
            "t.toml:5: key 'name': interface 'a' is defined twice"
        );
    }

    #[test]
    fn unknown_driver() {
        assert_eq!(
            err(&itf("dpdk", "")),
            "t.toml:3: key 'driver': unknown driver 'dpdk' (known: af_packet, af_xdp, memif, pcap)"
        );
    }

    #[test]
    fn mtu_outside_the_range() {
        for v in [67, 9001] {
            assert_eq!(
                err(&itf("af_packet", &format!("mtu = {v}\n"))),
                format!("t.toml:4: key 'mtu': {v} is outside 68..=9000")
            );
        }
    }

    #[test]
    fn unknown_state() {
        assert_eq!(
            err(&itf("pcap", "state = \"sideways\"\ntx-file = \"o\"\n")),
            "t.toml:4: key 'state': 'sideways' is not up or down"
        );
    }

    #[test]
    fn bad_interface_address() {
        assert_eq!(
            err(&itf("af_packet", "address = [\"192.0.2.1\"]\n")),
            "t.toml:4: key 'address': '192.0.2.1' is not ADDRESS/LENGTH"
        );
    }

    #[test]
    fn address_on_a_cross_connected_interface() {
        let src = format!(
            "{}[[interface]]\nname = \"b\"\ndriver = \"af_packet\"\n\
             [[xconnect]]\nrx = \"a\"\ntx = \"b\"\n",
            itf("af_packet", "address = [\"192.0.2.1/24\"]\n")
        );
        assert_eq!(
            err(&src),
            "t.toml:2: key 'address': interface 'a' is cross-connected; it cannot also route"
        );
    }

    #[test]
    fn pcap_files_on_a_host_interface() {
        for (driver, key) in [("af_packet", "rx-file"), ("af_xdp", "tx-file")] {
            assert_eq!(
                err(&itf(driver, &format!("{key} = \"f.pcap\"\n"))),
                "t.toml:3: key 'rx-file': rx-file and tx-file belong to pcap interfaces"
            );
        }
    }

    #[test]
    fn role_on_a_non_memif_interface() {
        assert_eq!(
            err(&itf("af_packet", "role = \"client\"\n")),
            "t.toml:4: key 'role': belongs to memif interfaces"
        );
    }

    #[test]
    fn memif_keys_on_a_non_memif_interface() {
        for extra in ["socket = \"s\"\n", "id = 1\n", "secret = \"x\"\n"] {
            assert_eq!(
                err(&itf("pcap", &format!("tx-file = \"o\"\n{extra}"))),
                "t.toml:3: key 'socket': socket, id and secret belong to memif interfaces"
            );
        }
    }

    #[test]
    fn xdp_keys_on_a_non_xdp_interface() {
        for key in ["xdp-mode", "socket-mode"] {
            assert_eq!(
                err(&itf("af_packet", &format!("{key} = \"auto\"\n"))),
                format!("t.toml:4: key '{key}': belongs to af_xdp interfaces")
            );
        }
    }

    #[test]
    fn ring_size_on_an_interface_without_rings() {
        assert_eq!(
            err(&itf("af_packet", "ring-size = 1024\n")),
            "t.toml:4: key 'ring-size': belongs to af_xdp and memif interfaces"
        );
    }

    #[test]
    fn unknown_xdp_modes() {
        assert_eq!(
            err(&itf("af_xdp", "xdp-mode = \"turbo\"\n")),
            "t.toml:4: key 'xdp-mode': 'turbo' is not one of auto, native, generic"
        );
        assert_eq!(
            err(&itf("af_xdp", "socket-mode = \"fast\"\n")),
            "t.toml:4: key 'socket-mode': 'fast' is not one of auto, zero-copy, copy"
        );
    }

    #[test]
    fn af_xdp_ring_size_out_of_range() {
        for v in [100, 32, 65536] {
            assert_eq!(
                err(&itf("af_xdp", &format!("ring-size = {v}\n"))),
                format!(
                    "t.toml:4: key 'ring-size': {v} is not a power of two between 64 and 32768"
                )
            );
        }
    }

    #[test]
    fn af_xdp_mtu_larger_than_a_buffer() {
        let v = crate::drivers::af_xdp::MAX_MTU + 1;
        assert_eq!(
            err(&itf("af_xdp", &format!("mtu = {v}\n"))),
            format!(
                "t.toml:4: key 'mtu': {v} is too large for af_xdp (frames must fit one buffer: \
                 at most {})",
                crate::drivers::af_xdp::MAX_MTU
            )
        );
    }

    #[test]
    fn memif_without_socket() {
        assert_eq!(
            err(&itf("memif", "")),
            "t.toml:3: key 'socket': memif interface 'a' needs socket = \"PATH\""
        );
    }

    #[test]
    fn memif_with_host_or_files() {
        for extra in ["host = \"h\"\n", "rx-file = \"i\"\n", "tx-file = \"o\"\n"] {
            assert_eq!(
                err(&itf("memif", &format!("socket = \"s\"\n{extra}"))),
                "t.toml:3: key 'driver': a memif interface takes socket, role, id, secret, ring-size"
            );
        }
    }

    #[test]
    fn unknown_memif_role() {
        assert_eq!(
            err(&itf("memif", "socket = \"s\"\nrole = \"boss\"\n")),
            "t.toml:5: key 'role': 'boss' is not client or server"
        );
    }

    #[test]
    fn memif_secret_too_long() {
        let secret = "s".repeat(24);
        assert_eq!(
            err(&itf(
                "memif",
                &format!("socket = \"s\"\nsecret = \"{secret}\"\n")
            )),
            "t.toml:3: key 'secret': a memif secret is at most 23 bytes"
        );
    }

    #[test]
    fn memif_ring_size_out_of_range() {
        for v in [8, 100, 32768] {
            assert_eq!(
                err(&itf("memif", &format!("socket = \"s\"\nring-size = {v}\n"))),
                format!(
                    "t.toml:5: key 'ring-size': {v} is not a power of two between 16 and 16384"
                )
            );
        }
    }

    #[test]
    fn pcap_without_files() {
        assert_eq!(
            err(&itf("pcap", "")),
            "t.toml:3: key 'driver': pcap interface 'a' needs rx-file, tx-file or both"
        );
    }

    #[test]
    fn xconnect_to_an_unknown_interface() {
        assert_eq!(
            err(&GOOD.replace("rx = \"p0\"", "rx = \"p9\"")),
            "t.toml:16: key 'rx': no interface named 'p9' (defined: p0, p1)"
        );
        assert_eq!(
            err(&GOOD.replace("tx = \"p1\"", "tx = \"p9\"")),
            "t.toml:17: key 'tx': no interface named 'p9' (defined: p0, p1)"
        );
    }

    #[test]
    fn interface_cross_connected_twice() {
        assert_eq!(
            err(&format!("{GOOD}[[xconnect]]\nrx = \"p0\"\ntx = \"p0\"\n")),
            "t.toml:19: key 'rx': interface 'p0' is cross-connected twice"
        );
    }

    /// A pcap interface `a` (lines 1-4) and one `[[route]]` (from line 5).
    fn route(lines: &str) -> String {
        format!("{}[[route]]\n{lines}", itf("pcap", "tx-file = \"o\"\n"))
    }

    #[test]
    fn bad_route_prefix() {
        assert_eq!(
            err(&route("prefix = \"10.0.0.1/8\"\nvia = [\"192.0.2.2\"]\n")),
            "t.toml:6: key 'prefix': '10.0.0.1/8' has host bits set past /8"
        );
    }

    #[test]
    fn route_needs_via_or_drop() {
        assert_eq!(
            err(&route("prefix = \"10.0.0.0/8\"\n")),
            "t.toml:6: key 'via': route 10.0.0.0/8 needs either via (next hops) or drop = true, \
             not neither"
        );
        assert_eq!(
            err(&route(
                "prefix = \"10.0.0.0/8\"\ndrop = true\nvia = [\"192.0.2.2\"]\n"
            )),
            "t.toml:6: key 'via': route 10.0.0.0/8 needs either via (next hops) or drop = true, \
             not both"
        );
    }

    #[test]
    fn route_via_not_an_address() {
        assert_eq!(
            err(&route("prefix = \"10.0.0.0/8\"\nvia = [\"gateway\"]\n")),
            "t.toml:7: key 'via': 'gateway' is not an address"
        );
    }

    #[test]
    fn route_via_of_the_other_family() {
        assert_eq!(
            err(&route("prefix = \"10.0.0.0/8\"\nvia = [\"2001:db8::1\"]\n")),
            "t.toml:7: key 'via': 2001:db8::1 is not of the family of 10.0.0.0/8"
        );
    }

    #[test]
    fn route_through_an_unknown_interface() {
        assert_eq!(
            err(&route(
                "prefix = \"10.0.0.0/8\"\nvia = [\"192.0.2.2\"]\ninterface = \"zz\"\n"
            )),
            "t.toml:8: key 'interface': no interface named 'zz'"
        );
    }
}
