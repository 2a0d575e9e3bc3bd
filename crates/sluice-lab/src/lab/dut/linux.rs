//! The kernel as a lab DUT: `linux-bridge` bridging d0 and d1, `linux-router` routing between
//! them with fixed neighbours (and the synthetic table, loaded with `ip -batch`). Nothing runs
//! but the DUT namespace's kernel; stopping undoes the configuration.

use super::{ip_in, mac_of, port_ipv6, routed_gen_args, Dut, DutSpec};
use crate::gen::frame::Family;
use crate::gen::port::Io;
use crate::lab::netns::{in_ns, run, DUT, TESTER};
use crate::lab::plan;
use crate::lab::table::TableFiles;
use std::time::Instant;

const BRIDGE: &str = "br0";

/// `linux-bridge`: the kernel's bridge over d0 and d1, forwarding whatever io the veths
/// bring.
pub const BRIDGE_DUT: DutSpec = DutSpec {
    bridges: true,
    ..DutSpec::new("linux-bridge", |s| Ok(Box::new(start_bridge(s.io)?)))
};

/// `linux-router`: the kernel routing between d0 and d1, filtering with nftables.
pub const ROUTER_DUT: DutSpec = DutSpec {
    routes: true,
    filters: true,
    ..DutSpec::new("linux-router", |s| {
        Ok(Box::new(start_router(s.table, s.acl, s.family)?))
    })
};

/// The kernel's bridge over d0 and d1.
pub struct LinuxBridge;

/// Make the bridge, at the ports' MTU for `io`.
pub fn start_bridge(io: Io) -> Result<LinuxBridge, String> {
    let ip = |args: &[&str]| {
        let mut a = vec!["-n", DUT];
        a.extend_from_slice(args);
        run("ip", &a).map(|_| ())
    };
    let _ = ip(&["link", "del", BRIDGE]);
    ip(&[
        "link",
        "add",
        BRIDGE,
        "type",
        "bridge",
        "stp_state",
        "0",
        "forward_delay",
        "0",
    ])?;
    ip(&[
        "link",
        "set",
        BRIDGE,
        "mtu",
        &crate::lab::port_mtu(io).to_string(),
    ])?;
    for d in ["d0", "d1"] {
        ip(&["link", "set", d, "master", BRIDGE])?;
    }
    ip(&["link", "set", BRIDGE, "up"])?;
    Ok(LinuxBridge)
}

impl Dut for LinuxBridge {
    /// Delete the bridge.
    fn stop(&mut self) {
        let _ = in_ns(DUT, "ip", &["link", "del", BRIDGE]);
    }
}

impl Drop for LinuxBridge {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The nftables table `--acl-rules` makes in the DUT namespace.
const NFT_TABLE: &str = "sluice_lab";

/// N rules in the forward hook of an `inet` table, each dropping one source the traffic
/// never has, as many separate rules as an operator's rule list would be (not a set: a set
/// is one lookup whatever its size, and is not what the rule count measures); what matches
/// none is accepted by the chain's policy.
fn nft_rules(acl: super::LabAcl) -> String {
    let mut s = format!(
        "table inet {NFT_TABLE} {{\n  chain forward {{\n    type filter hook forward priority 0; \
         policy accept;\n"
    );
    if acl.stateful {
        // Conntrack on: a packet of a flow conntrack has seen both ways skips the rules.
        s.push_str("    ct state established,related accept\n");
    }
    for a in super::lab_deny_sources(acl.rules) {
        s.push_str(&format!("    ip saddr {a} drop\n"));
    }
    s.push_str("  }\n}\n");
    s
}

/// Load `nft_rules(acl)` into the DUT namespace's kernel.
fn nft_load(acl: super::LabAcl) -> Result<(), String> {
    if !super::on_path("nft") {
        return Err("--acl-rules with linux-router needs nft (apt-get install nftables)".into());
    }
    let _ = in_ns(DUT, "nft", &["delete", "table", "inet", NFT_TABLE]);
    let file = std::env::temp_dir().join(format!("sluice-lab-nft-{}.nft", std::process::id()));
    std::fs::write(&file, nft_rules(acl)).map_err(|e| format!("{}: {e}", file.display()))?;
    let r = in_ns(DUT, "nft", &["-f", &file.display().to_string()]);
    let _ = std::fs::remove_file(&file);
    r.map(|_| ())
}

/// The kernel routing between d0 and d1.
pub struct LinuxRouter {
    /// What the generator must be told: router MACs, and that frames are routed.
    gen_args: Vec<String>,
    /// Seconds `ip -batch` took to load the synthetic table.
    load_s: Option<f64>,
}

/// Load a synthetic table into the DUT namespace's kernel; returns the seconds it took.
fn linux_load(table: &TableFiles) -> Result<f64, String> {
    let t = Instant::now();
    let batch = table.ip_batch.display().to_string();
    run("ip", &["-n", DUT, "-batch", &batch])?;
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "linux-router: loaded {} IPv4 + {} IPv6 routes with ip -batch in {s:.2} s",
        table.v4, table.v6
    );
    Ok(s)
}

/// The generator's IPv6 networks routed to the tester's ports through fixed neighbours (the
/// tester's MACs `t0`, `t1`), as its IPv4 ones are, and IPv6 forwarding on.
fn route_ipv6(t0: &str, t1: &str) -> Result<(), String> {
    route_through(true, plan::TO_T1_V6, plan::T1_V6, t1, "d1")?;
    route_through(true, plan::TO_T0_V6, plan::T0_V6, t0, "d0")?;
    in_ns(DUT, "sysctl", &["-qw", "net.ipv6.conf.all.forwarding=1"]).map(|_| ())
}

/// The DUT routes `to` via the tester's port `via` (MAC `mac`) out of `dev`. The tester's
/// ports have no addresses for this DUT: the neighbour is fixed.
fn route_through(v6: bool, to: &str, via: &str, mac: &str, dev: &str) -> Result<(), String> {
    let family: &[&str] = if v6 { &["-6"] } else { &[] };
    let route = ["route", "add", to, "via", via, "dev", dev];
    let neigh = [
        "neigh",
        "replace",
        via,
        "lladdr",
        mac,
        "dev",
        dev,
        "nud",
        "permanent",
    ];
    ip_in(DUT, &[family, &route].concat())?;
    ip_in(DUT, &[family, &neigh].concat())
}

/// Address d0 and d1, route the generator's ranges to the tester, fix the neighbours, load
/// `table` if any, and turn forwarding on.
pub fn start_router(
    table: Option<&TableFiles>,
    acl: Option<super::LabAcl>,
    family: Family,
) -> Result<LinuxRouter, String> {
    let t0 = mac_of(TESTER, "t0")?;
    let t1 = mac_of(TESTER, "t1")?;
    let mut dut = LinuxRouter {
        gen_args: routed_gen_args()?,
        load_s: None,
    };
    ip_in(DUT, &["addr", "add", plan::D0_V4, "dev", "d0"])?;
    ip_in(DUT, &["addr", "add", plan::D1_V4, "dev", "d1"])?;
    route_through(false, plan::TO_T1, plan::T1_V4, &t1, "d1")?;
    route_through(false, plan::TO_T0, plan::T0_V4, &t0, "d0")?;
    let v6_routes = table.is_some_and(|t| t.v6 > 0);
    if v6_routes || family == Family::Ipv6 {
        // IPv6 next hops must lie on a connected subnet.
        for (dev, addr) in [("d0", plan::D0_V6), ("d1", plan::D1_V6)] {
            port_ipv6(DUT, dev, true)?;
            ip_in(DUT, &["addr", "add", addr, "dev", dev, "nodad"])?;
        }
    }
    if family == Family::Ipv6 {
        route_ipv6(&t0, &t1)?;
    }
    if let Some(t) = table {
        dut.load_s = Some(linux_load(t)?);
    }
    if let Some(acl) = acl {
        nft_load(acl)?;
    }
    for key in [
        "net.ipv4.ip_forward=1",
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.d0.rp_filter=0",
        "net.ipv4.conf.d1.rp_filter=0",
    ] {
        in_ns(DUT, "sysctl", &["-qw", key])?;
    }
    Ok(dut)
}

impl Dut for LinuxRouter {
    fn gen_args(&self) -> Vec<String> {
        self.gen_args.clone()
    }

    fn table_load_s(&self) -> Option<f64> {
        self.load_s
    }

    /// Forwarding off, routes, addresses and neighbours flushed, IPv6 off again.
    fn stop(&mut self) {
        let _ = in_ns(DUT, "sysctl", &["-qw", "net.ipv4.ip_forward=0"]);
        let _ = in_ns(DUT, "sysctl", &["-qw", "net.ipv6.conf.all.forwarding=0"]);
        if super::on_path("nft") {
            let _ = in_ns(DUT, "nft", &["delete", "table", "inet", NFT_TABLE]);
        }
        // A full table's routes go with the addresses their next hops sat on.
        let _ = run("ip", &["-n", DUT, "route", "flush", "table", "main"]);
        let _ = run("ip", &["-n", DUT, "-6", "route", "flush", "table", "main"]);
        for dev in ["d0", "d1"] {
            let _ = run("ip", &["-n", DUT, "addr", "flush", "dev", dev]);
            let _ = run("ip", &["-n", DUT, "neigh", "flush", "dev", dev]);
            let _ = port_ipv6(DUT, dev, false);
        }
    }
}

impl Drop for LinuxRouter {
    fn drop(&mut self) {
        self.stop();
    }
}
