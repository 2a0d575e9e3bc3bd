//! A `lab run`: the namespaces up, the synthetic tables written, then each DUT started in
//! turn, the generator run through it and the results gathered.

use super::report::{self, RunResult};
use super::table::{self, TableFiles, TableSpec};
use super::{calibrate, dut, memif_socket, netns, profile, run_mtu, testpmd_rx_cpu, RunOptions};
use crate::gen::frame::{Family, L4};
use crate::gen::port::Io;
use crate::gen::Engine;
use dut::DutKind;
use netns::TESTER;
use serde_json::Value;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    if o.family != Family::Ipv4 {
        args.extend(["--family".into(), o.family.name().into()]);
    }
    if o.l4 != L4::Udp {
        args.extend(["--l4".into(), o.l4.name().into()]);
    }
    if o.reply && rx {
        args.push("--reply".into());
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
    if o.io == Io::DpdkNull {
        return null_run(o, kind);
    }
    let _mtu = netns::PortMtu::set(run_mtu(kind, o.io, &o.size))?;
    netns::dut_napi(o.napi_on_dut, o.engine == Engine::Xdp, o.dut_cpu)?;
    // Every DUT of the invocation alike: a fast-path DUT's XDP frames need NAPI on t0/t1.
    netns::tester_napi(o.duts.iter().any(|d| d.fast_path()))?;
    let mut d = dut::start(
        kind,
        o.dut_cpu,
        o.io,
        table,
        &o.vlans,
        (o.acl, o.vrfs, o.bird, o.family),
        None,
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
    let queue_before = netns::QueueDrops::read();
    let gen = generate(o, &extra);
    let queue_drops = netns::QueueDrops::read().since(queue_before);
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
    let sessions = session_table(o, kind, &d);
    let load_s = d.table_load_s();
    let convergence = d.convergence();
    d.stop();
    let mut r = RunResult::from_gen(kind.name(), &gen?, runtime, interfaces);
    r.profile = profile;
    r.sessions = sessions;
    r.queue_drops = queue_drops;
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

/// `--io dpdk-null`: the DUT forwards between two net_null ports, which make and take its
/// frames (of `--size`, less the FCS: net_null's `size` devarg); after a second's warm-up its own counters over the run's duration are
/// the figure.
fn null_run(o: &RunOptions, kind: DutKind) -> Result<RunResult, String> {
    let no_acl = (None, None, false, o.family);
    let size = null_size(&o.size)?;
    let frame = Some(size - crate::gen::frame::FCS_LEN);
    let mut d = dut::start(kind, o.dut_cpu, o.io, None, &[], no_acl, frame)?;
    std::thread::sleep(Duration::from_secs(1));
    d.ctl("clear runtime");
    // The lab checked --duration (seconds) when it parsed it; the generator's default is 5.
    let seconds = o
        .duration
        .as_deref()
        .and_then(|d| d.parse::<f64>().ok())
        .unwrap_or(5.0);
    let pps = d.null_rate(seconds);
    let runtime = d.ctl_json("show runtime");
    let interfaces = d.ctl_json("show interface");
    d.stop();
    let pps = pps?;
    let n = (pps * seconds) as u64;
    let gen = serde_json::json!({
        "frame_size": size, "flows": 1, "tx_packets": n, "rx_packets": n, "lost": 0,
        "tx_pps": pps, "rx_pps": pps, "l2_bps": pps * size as f64 * 8.0, "rate_reached": true,
        "duration_s": seconds,
    });
    let mut r = RunResult::from_gen(kind.name(), &gen, runtime, interfaces);
    r.dut_only = true;
    Ok(r)
}

/// With `--stateful` or a NAT DUT: the DUT's session table after the run (sluice's `show
/// sessions summary` or `show nat44 summary`, the kernel's conntrack).
fn session_table(o: &RunOptions, kind: DutKind, d: &dut::RunningDut) -> Option<Value> {
    let line = if kind.translates() {
        "show nat44 summary"
    } else if o.acl.is_some_and(|a| a.stateful) {
        "show sessions summary"
    } else {
        return None;
    };
    d.ctl_json(line).or_else(|| {
        matches!(kind, DutKind::LinuxRouter | DutKind::LinuxNat)
            .then(|| netns::in_ns(netns::DUT, "cat", &["/proc/net/nf_conntrack"]).ok())
            .flatten()
            .map(|out| conntrack_summary(&String::from_utf8_lossy(&out.stdout)))
    })
}

/// The kernel's conntrack table as the lab reports it: entries, how many reached
/// ESTABLISHED (assured), and entries by TCP state.
pub(crate) fn conntrack_summary(table: &str) -> Value {
    let mut states = serde_json::Map::new();
    let (mut entries, mut assured) = (0u64, 0u64);
    for line in table.lines() {
        entries += 1;
        assured += line.contains("[ASSURED]") as u64;
        let w: Vec<&str> = line.split_whitespace().collect();
        // "ipv4 2 tcp 6 TIMEOUT STATE src=..."
        if w.get(2) == Some(&"tcp") {
            if let Some(state) = w.get(5) {
                let n = states.entry(state.to_string()).or_insert(0.into());
                *n = (n.as_u64().unwrap_or(0) + 1).into();
            }
        }
    }
    serde_json::json!({"conntrack_entries": entries, "assured": assured, "tcp_states": states})
}

/// A few hundred frames each way through a router before the measured traffic, over
/// AF_PACKET whatever the run's io, so that a router resolving its next hops by ARP has done
/// so (an AF_XDP or XDP generator takes the frames the tester's kernel would answer).
pub(crate) fn warm_up(o: &RunOptions, d: &dut::RunningDut) -> Result<(), String> {
    // UDP of the run's family: what makes a router resolve that family's next hops.
    let w = RunOptions {
        size: crate::gen::frame::min_size(o.family, L4::Udp).to_string(),
        l4: L4::Udp,
        reply: false,
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

pub(super) fn run(o: &RunOptions) -> Result<(), String> {
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
    if o.io == Io::DpdkNull {
        return Err("not measured (--io dpdk-null: no generator)".into());
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

/// Where the run's work goes, said before the first run. With `--io dpdk-null` there is no
/// generator: the DUT's net_null ports make and take the frames on its CPU.
pub(crate) fn placement(o: &RunOptions) -> String {
    if o.io == Io::DpdkNull {
        format!(
            "DUT on CPU {}, no generator: its net_null ports make and take the frames",
            o.dut_cpu
        )
    } else if o.napi_on_dut {
        format!(
            "generator on CPU {} ({TESTER}); DUT on CPU {} ({}): its worker and the NAPI \
             threads that receive on d0 and d1",
            o.gen_cpu,
            o.dut_cpu,
            netns::DUT
        )
    } else {
        format!(
            "generator on CPU {} ({TESTER}), DUT worker on CPU {} ({}); the DUT ports' receive \
             work runs in the sender's context",
            o.gen_cpu,
            o.dut_cpu,
            netns::DUT
        )
    }
}

/// `--io dpdk-null`'s frame size: net_null makes frames of one size, so `--size` names one.
pub(crate) fn null_size(size: &str) -> Result<usize, String> {
    let fcs = crate::gen::frame::FCS_LEN;
    match crate::gen::frame::parse_sizes(size)?.as_slice() {
        // One mbuf a frame: 2048 bytes of data room (sluice's buffers and testpmd's mbufs).
        [one] if *one - fcs <= 2048 => Ok(*one),
        [_] => Err(format!(
            "--io dpdk-null: net_null makes one-segment frames, at most 2048 bytes (--size \
             {}); not --size {size}",
            2048 + fcs
        )),
        _ => Err(format!(
            "--io dpdk-null: net_null makes frames of one size; --size {size} names several"
        )),
    }
}

fn run_matrix(
    o: &RunOptions,
    files: &[TableFiles],
    stop: &AtomicBool,
) -> Result<Vec<RunResult>, String> {
    if !o.json {
        eprintln!("{}", placement(o));
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
