//! `lab run`'s settings: its command line turned into `RunOptions`, and the checks across
//! options that `lab bench` and `sluice bench` share.

use super::bench::Loadtest;
use super::table::TableSpec;
use super::{args, dut, profile};
use crate::gen::frame::{Family, L4};
use crate::gen::port::Io;
use crate::gen::Engine;
use dut::DutKind;

/// Settings of `lab run`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOptions {
    pub duts: Vec<DutKind>,
    pub size: String,
    pub flows: String,
    pub duration: Option<String>,
    pub count: Option<String>,
    pub rate: Option<String>,
    pub repeat: usize,
    pub gen_cpu: usize,
    pub dut_cpu: usize,
    pub json: bool,
    /// Both directions at once.
    pub bi: bool,
    /// The generator's sending engine: sluice's ports, xdp live frames or testpmd.
    pub engine: Engine,
    /// Receive work of the DUT's ports on the DUT's CPU (NAPI threads pinned there), or in
    /// the sender's context as a veth does by default.
    pub napi_on_dut: bool,
    /// How generator and DUT reach the lab's ports.
    pub io: Io,
    /// Route tables the router DUTs run with, each in turn.
    pub tables: Vec<TableSpec>,
    /// Measure first what the generator sends alone (`calibrate`).
    pub calibrate: bool,
    /// Sample the DUT's CPU in each run and write its flame graphs into this directory.
    pub profile: Option<std::path::PathBuf>,
    /// MAC pairs the generator steps through (1: one pair).
    pub macs: u32,
    /// VLAN tags on the frames: none, one 802.1Q id, or 802.1ad outer and 802.1Q inner.
    pub vlans: Vec<u16>,
    /// The router DUTs' filter (`None`: none).
    pub acl: Option<dut::LabAcl>,
    /// sluice-router's tenants, each in its own table on VLAN sub-interfaces (`None`: the
    /// plain ports in table 0).
    pub vrfs: Option<u16>,
    /// sluice-router's table from BIRD over netlink instead of its route file.
    pub bird: bool,
    /// The frames' address family and transport.
    pub family: Family,
    pub l4: L4,
    /// t1 answers every frame (sluice gen --reply).
    pub reply: bool,
}

impl RunOptions {
    /// A `lab run` of loadtest `lt` on `duts`, `duration` long, as the bench and `sluice
    /// bench` make one: one run in JSON, the small table, nothing calibrated or profiled, no
    /// filter, tenants, tags or answers, the generator on CPU 0 and the DUT on CPU 1.
    pub fn loadtest(
        lt: &Loadtest,
        duts: Vec<DutKind>,
        duration: String,
        engine: Engine,
        io: Io,
        (family, l4): (Family, L4),
    ) -> RunOptions {
        RunOptions {
            duts,
            size: lt.size.clone(),
            flows: lt.flows.clone(),
            duration: Some(duration),
            count: None,
            rate: None,
            repeat: 1,
            gen_cpu: 0,
            dut_cpu: 1,
            json: true,
            bi: lt.bi,
            engine,
            napi_on_dut: true,
            io,
            tables: vec![TableSpec::Small],
            calibrate: false,
            profile: None,
            macs: 1,
            vlans: Vec::new(),
            acl: None,
            vrfs: None,
            bird: false,
            family,
            l4,
            reply: false,
        }
    }
}

impl args::RunArgs {
    /// The settings, after the checks across options.
    pub fn options(self) -> Result<RunOptions, String> {
        let sessions = dut::LabAcl::sessions_for(&self.flows);
        let (family, l4) = (self.frames.family, self.frames.l4);
        let min = crate::gen::frame::min_size(family, l4);
        // A NAT DUT is measured with traffic that answers: its far side answers the
        // translated address, and the answers are translated back.
        let reply = self.reply || self.duts.iter().any(|d| d.translates());
        let o = RunOptions {
            duts: self.duts,
            size: self.size.unwrap_or_else(|| min.to_string()),
            family,
            l4,
            reply,
            flows: self.flows,
            duration: self.duration,
            count: self.count,
            rate: self.load.rate,
            repeat: self.repeat,
            gen_cpu: self.cpus.gen_cpu,
            dut_cpu: self.cpus.dut_cpu,
            json: self.json,
            bi: self.bi,
            engine: self.ports.engine,
            napi_on_dut: self.cpus.napi_on_dut,
            io: self.ports.io,
            tables: self.tables,
            calibrate: !self.no_calibrate,
            profile: self.profile.then_some(self.profile_dir),
            macs: self.macs,
            vlans: match (self.vlan, self.qinq) {
                (Some(v), _) => vec![v],
                (None, Some((o, i))) => vec![o, i],
                (None, None) => Vec::new(),
            },
            acl: match (self.acl_rules, self.stateful) {
                (None, false) => None,
                (rules, stateful) => Some(dut::LabAcl {
                    rules: rules.unwrap_or(0),
                    stateful,
                    sessions,
                }),
            },
            vrfs: self.vrfs,
            bird: self.control == "bird",
        };
        if o.bird {
            if let Some(d) = o.duts.iter().find(|d| !d.takes_vrfs()) {
                return Err(format!(
                    "--control bird is for sluice-router; {} loads its table itself",
                    d.name()
                ));
            }
            if o.tables.contains(&TableSpec::Small) {
                return Err(
                    "--control bird announces a synthetic table: give --table full or \
                            V4[+V6]"
                        .into(),
                );
            }
        }
        if let Some(n) = o.vrfs {
            if let Some(d) = o.duts.iter().find(|d| !d.takes_vrfs()) {
                return Err(format!(
                    "--vrfs is for sluice-router; {} has no VRFs here (this kernel has neither \
                     vrf nor 802.1Q devices)",
                    d.name()
                ));
            }
            if !o.vlans.is_empty() || o.acl.is_some() || o.engine != Engine::Ports {
                return Err(
                    "--vrfs tags the frames itself: it goes with neither --vlan, \
                            --qinq, --acl-rules, --stateful nor --engine xdp|testpmd"
                        .into(),
                );
            }
            let flows = if o.flows == "var2" {
                u64::MAX
            } else {
                o.flows.parse().unwrap_or(0)
            };
            if flows < n as u64 {
                return Err(format!(
                    "--vrfs {n}: --flows {} leaves some tenants without traffic",
                    o.flows
                ));
            }
        }
        if let Some(d) = o.duts.iter().find(|d| o.acl.is_some() && !d.filters()) {
            return Err(format!(
                "--acl-rules and --stateful are for sluice-router and linux-router; {} does \
                 not filter",
                d.name()
            ));
        }
        if let Some(d) = o
            .duts
            .iter()
            .find(|d| !o.vlans.is_empty() && !d.takes_vlans())
        {
            return Err(format!(
                "--vlan and --qinq are for the sluice DUTs; {} does not take them (the kernel \
                 here has no 802.1Q devices for linux-bridge)",
                d.name()
            ));
        }
        if let Some(d) = o.duts.iter().find(|d| o.bi && d.translates()) {
            return Err(format!(
                "{} is measured with the answering generator (--reply, which it implies): \
                 no --bi",
                d.name()
            ));
        }
        check_frames(&o)?;
        check_io(o.io, o.engine, &o.duts)?;
        if o.io == Io::DpdkNull
            && (o.rate.is_some() || o.count.is_some() || o.bi || o.reply || o.profile.is_some())
        {
            return Err(
                "--io dpdk-null has no generator (the DUT's net_null ports make and take its \
                 frames): no --rate, --count, --bi, --reply or --profile"
                    .into(),
            );
        }
        if o.io == Io::DpdkNull {
            super::run::null_size(&o.size)?;
        }
        check_profile(o.profile.is_some())?;
        check_testpmd_engine(&o, &o.flows, &o.size, o.rate.is_some(), o.bi)?;
        if o.tables.iter().any(|t| *t != TableSpec::Small) && !o.duts.iter().any(|d| d.routes()) {
            return Err("--table is for the router DUTs (linux-router, sluice-router)".into());
        }
        Ok(o)
    }
}

/// `--family`, `--l4` and `--reply` with the rest: what the generator can send, and the
/// DUTs that route IPv6 here.
pub(super) fn check_frames(o: &RunOptions) -> Result<(), String> {
    let kind = format!("{}/{}", o.family.name(), o.l4.name()).to_uppercase();
    let min = crate::gen::frame::min_size(o.family, o.l4);
    crate::gen::frame::sizes_for(&o.size, min, &kind)?;
    let plain = (o.family, o.l4) == (Family::Ipv4, L4::Udp);
    if o.engine == Engine::Testpmd && (!plain || o.reply) {
        return Err(
            "--engine testpmd sends IPv4/UDP one way: no --family ipv6, --l4 tcp or --reply".into(),
        );
    }
    if o.engine == Engine::Xdp && (o.l4 == L4::Tcp || o.reply) {
        return Err(
            "--engine xdp sends UDP and reads nothing it receives: no --l4 tcp or --reply".into(),
        );
    }
    if o.family == Family::Ipv6 {
        if let Some(d) = o.duts.iter().find(|d| d.routes() && !d.routes_ipv6()) {
            return Err(format!(
                "--family ipv6: {} has no IPv6 routes in the lab",
                d.name()
            ));
        }
        if o.vrfs.is_some() {
            return Err("--vrfs routes the tenants' IPv4 only: no --family ipv6".into());
        }
    }
    Ok(())
}

/// `--io` with the rest: a DUT with no driver for the io cannot take part. (With the XDP
/// live-frames engine the io is the DUT's alone: the engine sends by itself.)
pub fn check_io(io: Io, engine: Engine, duts: &[DutKind]) -> Result<(), String> {
    if engine == Engine::Xdp && io == Io::Memif {
        return Err("--engine xdp sends into a veth; it has no memif ports".into());
    }
    if engine != Engine::Ports && io == Io::DpdkNull {
        return Err("--io dpdk-null has no generator: no --engine".into());
    }
    if let Some(d) = duts.iter().find(|d| !d.supports(io)) {
        return Err(format!("DUT {} has no {} ports", d.name(), io.name()));
    }
    Ok(())
}

/// `--profile` needs perf.
pub fn check_profile(profile: bool) -> Result<(), String> {
    match profile.then(profile::unavailable).flatten() {
        Some(why) => Err(format!("--profile: {why}")),
        None => Ok(()),
    }
}

/// What testpmd's txonly mode can send: one flow, one frame size, one way, at full speed.
pub fn check_testpmd_engine(
    o: &impl Placement,
    flows: &str,
    size: &str,
    rate: bool,
    bi: bool,
) -> Result<(), String> {
    if o.engine() != Engine::Testpmd {
        return Ok(());
    }
    let one_size = crate::gen::frame::parse_sizes(size).is_ok_and(|s| s.len() == 1);
    if flows != "single" || !one_size || rate || bi {
        return Err(
            "--engine testpmd sends one flow of one frame size, one way, at full speed \
             (no var2, size mixes, --rate or --bi)"
                .into(),
        );
    }
    if let Some(why) = crate::gen::testpmd::unavailable() {
        return Err(format!("--engine testpmd: {why}"));
    }
    if o.io() == Io::Memif && testpmd_rx_cpu(o).is_none() {
        return Err(format!(
            "--engine testpmd on memif needs a CPU of its own for its rxonly receiver, besides \
             the generator's ({}) and the DUT's ({}); this machine has {}",
            o.cpus().0,
            o.cpus().1,
            online_cpus()
        ));
    }
    Ok(())
}

/// What the checks and the generator's command line need of a command's options.
pub trait Placement {
    fn engine(&self) -> Engine;
    fn io(&self) -> Io;
    /// The generator's CPU and the DUT's.
    fn cpus(&self) -> (usize, usize);
}

impl Placement for RunOptions {
    fn engine(&self) -> Engine {
        self.engine
    }
    fn io(&self) -> Io {
        self.io
    }
    fn cpus(&self) -> (usize, usize) {
        (self.gen_cpu, self.dut_cpu)
    }
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPU of testpmd's memif receiver: one that neither the generator nor the DUT runs on.
/// (Sharing the sender's CPU, it would poll only in its scheduler slices and lose most frames
/// in its own ring: a figure of the tester, not the DUT.)
pub fn testpmd_rx_cpu(o: &impl Placement) -> Option<usize> {
    let (gen, dut) = o.cpus();
    (0..online_cpus()).find(|&c| c != gen && c != dut)
}
