//! `sluice lab`: a tester | DUT lab of two network namespaces on one machine, and runs that
//! send traffic through a DUT and report what arrived, side by side for several DUTs.
//!
//! `netns` builds the namespaces, `dut/` holds the devices under test (one file each behind
//! the `Dut` trait), `plan` the routers' addressing, `table` their route tables, `report` and
//! `chart` the results, `calibrate` what the generator sends alone; `bench` (`sluice lab bench`) and `rfc2544` (`sluice bench`) run on it.
//! `args` declares the command lines for clap.

pub mod args;
pub mod bench;
pub mod calibrate;
pub mod chart;
pub mod dut;
pub mod netns;
pub mod plan;
pub mod profile;
pub mod report;
pub mod rfc2544;
pub mod table;

use crate::gen::port::Io;
use crate::gen::Engine;
use dut::DutKind;
use netns::{LabLock, TESTER};
use report::RunResult;
use serde_json::Value;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use table::{TableFiles, TableSpec};

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
}

impl args::RunArgs {
    /// The settings, after the checks across options.
    pub fn options(self) -> Result<RunOptions, String> {
        let sessions = dut::LabAcl::sessions_for(&self.flows);
        let o = RunOptions {
            duts: self.duts,
            size: self.size,
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
            if let Some(d) = o.duts.iter().find(|d| **d != DutKind::SluiceRouter) {
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
        check_io(o.io, o.engine, &o.duts)?;
        check_profile(o.profile.is_some())?;
        check_testpmd_engine(&o, &o.flows, &o.size, o.rate.is_some(), o.bi)?;
        if o.tables.iter().any(|t| *t != TableSpec::Small) && !o.duts.iter().any(|d| d.routes()) {
            return Err("--table is for the router DUTs (linux-router, sluice-router)".into());
        }
        Ok(o)
    }
}

pub fn main(command: args::LabCommand) -> i32 {
    let code = match command {
        args::LabCommand::Up => with_lock(|| {
            if netns::up()? {
                eprintln!("lab is up: {} (t0, t1) and {} (d0, d1)", TESTER, netns::DUT);
            } else {
                eprintln!("lab is already up");
            }
            Ok(())
        }),
        args::LabCommand::Down => with_lock(|| {
            if netns::down()? {
                eprintln!("lab is down");
            } else {
                eprintln!("lab is not up");
            }
            Ok(())
        }),
        args::LabCommand::Bench(a) => match a.options() {
            Ok(o) => with_lock(|| bench::main(&o)),
            Err(e) => {
                eprintln!("sluice lab bench: {e} (see sluice lab bench --help)");
                return 2;
            }
        },
        args::LabCommand::Flamediff(a) => {
            profile::flamediff(&a.before, &a.after, &a.out).map(|_| {
                eprintln!("wrote {}", a.out.display());
            })
        }
        args::LabCommand::Run(a) => match a.options() {
            Ok(o) => with_lock(|| run(&o)),
            Err(e) => {
                eprintln!("sluice lab run: {e} (see sluice lab run --help)");
                return 2;
            }
        },
    };
    match code {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sluice lab: {e}");
            1
        }
    }
}

/// `--io` with the rest: a DUT with no driver for the io cannot take part. (With the XDP
/// live-frames engine the io is the DUT's alone: the engine sends by itself.)
pub fn check_io(io: Io, engine: Engine, duts: &[DutKind]) -> Result<(), String> {
    if engine == Engine::Xdp && io == Io::Memif {
        return Err("--engine xdp sends into a veth; it has no memif ports".into());
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

/// MTU of the lab's veths for an io: AF_XDP frames fit one buffer, and native XDP on a veth
/// needs the peer's MTU within a page.
pub fn port_mtu(io: Io) -> u32 {
    match io {
        Io::AfXdp => 1500,
        Io::AfPacket | Io::Memif => netns::LAB_MTU,
    }
}

/// The veths' MTU for a run of `kind` over `io` with frames of `size` (as `--size` says):
/// sluice's default driver runs AF_XDP natively only below about 3500 bytes, so its runs
/// use AF_XDP's MTU when the frames fit it, and the lab's jumbo MTU (where `auto` takes
/// AF_PACKET) when they do not.
pub fn run_mtu(kind: DutKind, io: Io, size: &str) -> u32 {
    let fits_1500 =
        crate::gen::frame::parse_sizes(size).is_ok_and(|s| s.iter().all(|&f| f <= 1500 + 18));
    match kind {
        DutKind::SluiceAfXdp => port_mtu(Io::AfXdp),
        DutKind::Sluice | DutKind::SluiceRouter | DutKind::SluiceBridge
            if io == Io::AfPacket && fits_1500 =>
        {
            port_mtu(Io::AfXdp)
        }
        _ => port_mtu(io),
    }
}

/// Where a DUT's memif port `k` listens (d0, d1) and the generator connects.
pub fn memif_socket(k: usize) -> std::path::PathBuf {
    format!("/run/sluice/lab-memif{k}.sock").into()
}

fn with_lock(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let _lock = LabLock::take()?;
    f()
}

/// The generator's port k: t0/t1, or the DUT's memif socket.
fn port_name(o: &RunOptions, k: usize) -> String {
    match o.io {
        Io::Memif if o.engine != Engine::Xdp => memif_socket(k).display().to_string(),
        _ => format!("t{k}"),
    }
}

/// Run the generator once in the tester namespace, receiving on port 1; returns its JSON.
pub(crate) fn generate(o: &RunOptions, extra: &[String]) -> Result<Value, String> {
    generate_with(o, true, extra)
}

/// Run the generator once in the tester namespace, with or without its receiving port.
pub(crate) fn generate_with(o: &RunOptions, rx: bool, extra: &[String]) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut args: Vec<String> = vec![
        "netns".into(),
        "exec".into(),
        TESTER.into(),
        exe.display().to_string(),
        "gen".into(),
        "--tx".into(),
        port_name(o, 0),
        "--size".into(),
        o.size.clone(),
        "--flows".into(),
        o.flows.clone(),
        "--cpu".into(),
        o.gen_cpu.to_string(),
        "--json".into(),
        "--quiet".into(),
    ];
    if rx {
        args.extend(["--rx".into(), port_name(o, 1)]);
    }
    if let Some(d) = &o.duration {
        args.extend(["--duration".into(), d.clone()]);
    }
    if let Some(c) = &o.count {
        args.extend(["--count".into(), c.clone()]);
    }
    if let Some(r) = &o.rate {
        args.extend(["--rate".into(), r.clone()]);
    }
    if o.bi {
        args.push("--bi".into());
    }
    if o.macs > 1 {
        args.extend(["--macs".into(), o.macs.to_string()]);
    }
    match o.vlans.as_slice() {
        [] => {}
        [v] => args.extend(["--vlan".into(), v.to_string()]),
        [outer, inner, ..] => args.extend(["--qinq".into(), format!("{outer},{inner}")]),
    }
    if let Some(n) = o.vrfs {
        args.extend([
            "--vlan".into(),
            dut::VRF_VLAN.to_string(),
            "--vlans".into(),
            n.to_string(),
        ]);
    }
    args.extend(["--engine".into(), o.engine.name().into()]);
    if o.engine == Engine::Testpmd && o.io == Io::Memif {
        if let Some(c) = testpmd_rx_cpu(o) {
            args.extend(["--rx-cpu".into(), c.to_string()]);
        }
    }
    if o.engine != Engine::Xdp {
        args.extend(["--io".into(), o.io.name().into()]);
    }
    args.extend(extra.iter().cloned());
    let out = Command::new("ip")
        .args(&args)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "generator failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("generator output: {e}"))
}

/// One run of `kind`; a router DUT with `table`'s synthetic routes (None: the small table).
pub(crate) fn one_run(
    o: &RunOptions,
    kind: DutKind,
    table: Option<&TableFiles>,
) -> Result<RunResult, String> {
    let _mtu = netns::PortMtu::set(run_mtu(kind, o.io, &o.size))?;
    netns::dut_napi(o.napi_on_dut, o.engine == Engine::Xdp, o.dut_cpu)?;
    let mut d = dut::start(
        kind,
        o.dut_cpu,
        o.io,
        table,
        &o.vlans,
        (o.acl, o.vrfs, o.bird),
    )?;
    if kind.routes() {
        warm_up(o, &d)?;
    }
    d.ctl("clear runtime");
    d.ctl("clear interfaces");
    let recording = match &o.profile {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            Some(profile::start(o.dut_cpu, &dir.join(".perf.data"))?)
        }
        None => None,
    };
    let mut extra = d.gen_args();
    if o.macs == 1 && kind.bridges() {
        // A learning bridge is measured forwarding to a destination it knows.
        extra.extend(["--macs".to_string(), "1".to_string()]);
    }
    let gen = generate(o, &extra);
    let profile = match (recording, &o.profile) {
        (Some(rec), Some(dir)) => {
            let stem = profile::next_stem(dir, kind.name());
            let title = format!(
                "{} on CPU {}: {} frames of {}, {} flows",
                kind.name(),
                o.dut_cpu,
                calibrate::io_label(o),
                o.size,
                o.flows
            );
            // A profile that fails costs the run its flame graph, not its figures.
            rec.finish(&stem, &title)
                .map_err(|e| eprintln!("profile of {}: {e}", kind.name()))
                .ok()
        }
        _ => None,
    };
    let runtime = d.ctl_json("show runtime");
    let interfaces = d.ctl_json("show interface");
    let l2fib = d.ctl_json("show l2fib count");
    let load_s = d.table_load_s();
    let convergence = d.convergence();
    d.stop();
    let mut r = RunResult::from_gen(kind.name(), &gen?, runtime, interfaces);
    r.profile = profile;
    if kind == DutKind::SluiceBridge {
        r.l2fib_entries = l2fib.and_then(|v| v["all_domains"].as_u64());
    }
    if kind.routes() {
        r.table = Some(table.map_or(TableSpec::Small, |t| t.spec).label());
        r.table_load_s = load_s;
        r.convergence = convergence;
    }
    Ok(r)
}

/// A few hundred frames each way through a router before the measured traffic, over
/// AF_PACKET whatever the run's io, so that a router resolving its next hops by ARP has done
/// so (an AF_XDP or XDP generator takes the frames the tester's kernel would answer).
pub(crate) fn warm_up(o: &RunOptions, d: &dut::RunningDut) -> Result<(), String> {
    let w = RunOptions {
        size: "64".into(),
        duration: None,
        count: Some("200".into()),
        rate: Some("20000".into()),
        bi: true,
        engine: Engine::Ports,
        io: Io::AfPacket,
        profile: None,
        ..o.clone()
    };
    let g = generate(&w, &d.gen_args())?;
    if g["rx_packets"].as_u64().unwrap_or(0) == 0 {
        eprintln!("warm-up: no frame came through the router: {g}");
    }
    Ok(())
}

/// Write the synthetic tables `o` asks for (router DUTs only) into `dir`.
fn table_files(o: &RunOptions, dir: &std::path::Path) -> Result<Vec<TableFiles>, String> {
    if !o.duts.iter().any(|d| d.routes()) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for &spec in &o.tables {
        let t = std::time::Instant::now();
        if let Some(f) = table::write(spec, dir)? {
            if !o.json {
                eprintln!(
                    "table {}: {} IPv4 + {} IPv6 synthetic routes via t0/t1, written in {:.1} s",
                    spec.label(),
                    f.v4,
                    f.v6,
                    t.elapsed().as_secs_f64()
                );
            }
            out.push(f);
        }
    }
    Ok(out)
}

fn run(o: &RunOptions) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    if let Some((k, why)) = o.duts.iter().find_map(|k| k.unavailable().map(|w| (k, w))) {
        return Err(format!("DUT {} cannot run: {why}", k.name()));
    }
    let brought_up = netns::up()?;
    let dir = std::env::temp_dir().join(format!("sluice-lab-tables-{}", std::process::id()));
    let calibration = calibration(o);
    let result = table_files(o, &dir).and_then(|files| run_matrix(o, &files, &stop));
    let _ = std::fs::remove_dir_all(&dir);
    if brought_up {
        netns::down()?;
    }
    let results = result?;
    if o.json {
        println!("{}", report::json(o, &results, &calibration));
    } else {
        print!("{}", report::table(o, &results, &calibration));
    }
    Ok(())
}

/// What the generator sends alone, or why that is not known.
fn calibration(o: &RunOptions) -> Result<calibrate::Calibration, String> {
    if !o.calibrate {
        return Err("not measured (--no-calibrate)".into());
    }
    let c = calibrate::Cache::default()
        .get(o)
        .map_err(|e| format!("not measured ({e})"));
    if !o.json {
        match &c {
            Ok(c) => eprintln!(
                "generator alone ({} s into {}): {}",
                c.duration_s.round(),
                c.sink,
                crate::bench::linerate::fmt_pps(c.tx_pps)
            ),
            Err(e) => eprintln!("generator alone: {e}"),
        }
    }
    c
}

fn run_matrix(
    o: &RunOptions,
    files: &[TableFiles],
    stop: &AtomicBool,
) -> Result<Vec<RunResult>, String> {
    if !o.json {
        if o.napi_on_dut {
            eprintln!(
                "generator on CPU {} ({TESTER}); DUT on CPU {} ({}): its worker and the NAPI \
                 threads that receive on d0 and d1",
                o.gen_cpu,
                o.dut_cpu,
                netns::DUT
            );
        } else {
            eprintln!(
                "generator on CPU {} ({TESTER}), DUT worker on CPU {} ({}); the DUT ports' receive \
                 work runs in the sender's context",
                o.gen_cpu,
                o.dut_cpu,
                netns::DUT
            );
        }
    }
    let mut results = Vec::new();
    for r in 0..o.repeat {
        // Alternate the order run by run, so drift on the machine hits every DUT alike.
        let mut order = o.duts.clone();
        if r % 2 == 1 {
            order.reverse();
        }
        for kind in order {
            // A router runs once per table, others once.
            let tables: Vec<Option<&TableFiles>> = if kind.routes() {
                o.tables
                    .iter()
                    .map(|spec| files.iter().find(|f| f.spec == *spec))
                    .collect()
            } else {
                vec![None]
            };
            for table in tables {
                if stop.load(Ordering::Relaxed) {
                    return Err("interrupted".into());
                }
                let res = one_run(o, kind, table)?;
                if !o.json {
                    eprintln!(
                        "run {}/{} {:<16} {}{}",
                        r + 1,
                        o.repeat,
                        kind.name(),
                        res.table
                            .as_ref()
                            .map(|t| format!("table {t}: "))
                            .unwrap_or_default(),
                        report::run_line(&res)
                    );
                }
                results.push(res);
            }
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn parse_run(s: &str) -> Result<RunOptions, String> {
        args::parse_words::<args::RunArgs>(s)?.options()
    }

    #[test]
    fn run_defaults_and_options() {
        let o = parse_run("").unwrap();
        assert_eq!(o.duts, vec![DutKind::Sluice]);
        assert_eq!(o.size, "64");
        assert_eq!(o.repeat, 1);
        assert!(o.napi_on_dut);
        assert_eq!((o.gen_cpu, o.dut_cpu), (0, 1));
        let o = parse_run(
            "--dut sluice,linux-bridge --size 1514 --flows 100 --count 1000 --repeat 5 --json",
        )
        .unwrap();
        assert_eq!(o.duts, vec![DutKind::Sluice, DutKind::LinuxBridge]);
        assert_eq!(o.count.as_deref(), Some("1000"));
        assert!(o.json);
        let o = parse_run("--napi sender --engine xdp --gen-cpu 2 --dut-cpu 3").unwrap();
        assert!(!o.napi_on_dut && o.engine == Engine::Xdp);
        assert_eq!((o.gen_cpu, o.dut_cpu), (2, 3));
    }

    #[test]
    fn run_rejects_bad_options() {
        for bad in [
            "--dut vpp9",
            "--size 12",
            "--flows 0",
            "--duration -1",
            "--count 0",
            "--rate x",
            "--repeat 0",
            "--duration 1 --count 5",
            "--frob",
            "--dut",
            "--napi both",
            "--gen-cpu x",
            "--table full",
        ] {
            assert!(parse_run(bad).is_err(), "accepted: {bad}");
        }
    }
}
