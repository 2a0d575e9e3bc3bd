//! Devices under test in the lab's `sl-dut` namespace: sluice cross-connecting d0 and d1 or
//! routing between them, the kernel's bridge or router, testpmd, VPP (`vpp.rs`). Each starts
//! before a run and is taken down after it, even on error.

use super::netns::{in_ns, run, DUT, TESTER};
use super::table::TableFiles;
use super::vpp::Vpp;
use crate::gen::port::Io;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DutKind {
    Sluice,
    /// sluice with AF_XDP ports on the veths, whatever the generator uses: to compare it with
    /// sluice on AF_PACKET in one run.
    SluiceAfXdp,
    LinuxBridge,
    LinuxRouter,
    /// sluice routing between d0 and d1 (addresses, static routes, its own ARP).
    SluiceRouter,
    Testpmd,
    /// FD.io VPP cross-connecting d0 and d1 (`l2 xconnect`).
    Vpp,
    /// FD.io VPP routing between d0 and d1, as linux-router does.
    VppRouter,
}

/// DPDK's forwarding test program, as Debian installs it.
pub const TESTPMD: &str = "dpdk-testpmd";

impl DutKind {
    pub const ALL: [DutKind; 8] = [
        DutKind::Sluice,
        DutKind::SluiceAfXdp,
        DutKind::LinuxBridge,
        DutKind::LinuxRouter,
        DutKind::SluiceRouter,
        DutKind::Testpmd,
        DutKind::Vpp,
        DutKind::VppRouter,
    ];

    pub fn parse(s: &str) -> Result<DutKind, String> {
        DutKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown DUT '{s}' (known: sluice, sluice-af_xdp, linux-bridge, linux-router, sluice-router, testpmd, vpp, vpp-router)"
                )
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            DutKind::Sluice => "sluice",
            DutKind::SluiceAfXdp => "sluice-af_xdp",
            DutKind::LinuxBridge => "linux-bridge",
            DutKind::LinuxRouter => "linux-router",
            DutKind::SluiceRouter => "sluice-router",
            DutKind::Testpmd => "testpmd",
            DutKind::Vpp => "vpp",
            DutKind::VppRouter => "vpp-router",
        }
    }

    /// Whether the DUT routes (and so takes a route table).
    pub fn routes(self) -> bool {
        matches!(
            self,
            DutKind::LinuxRouter | DutKind::SluiceRouter | DutKind::VppRouter
        )
    }

    /// Whether the DUT can use `io` for its ports (the kernel's DUTs forward whatever the
    /// veths bring, so any io on the veths suits them).
    pub fn supports(self, io: Io) -> bool {
        match io {
            Io::AfPacket | Io::AfXdp => true,
            Io::Memif if self == DutKind::SluiceAfXdp => false,
            // The routers' next hops are the tester's veths, which a memif never reaches.
            Io::Memif if self.routes() => false,
            // Userspace forwarders only: the kernel has no memif.
            Io::Memif => matches!(self, DutKind::Sluice | DutKind::Testpmd | DutKind::Vpp),
        }
    }

    /// Why this DUT cannot run here, if it cannot.
    pub fn unavailable(self) -> Option<String> {
        let on_path = |bin: &str| {
            Command::new("sh")
                .args(["-c", &format!("command -v {bin}")])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        };
        match self {
            DutKind::Testpmd if !on_path(TESTPMD) => Some(format!(
                "{TESTPMD} is not installed (apt-get install dpdk-dev)"
            )),
            DutKind::Vpp | DutKind::VppRouter => super::vpp::unavailable(),
            _ => None,
        }
    }
}

/// A running DUT; `stop` (or drop) takes it down.
pub enum RunningDut {
    Sluice {
        child: Child,
        socket: PathBuf,
        dir: PathBuf,
        /// As a router: what the generator must be told (router MACs, routed frames); the
        /// tester's ports then hold addresses until the DUT stops.
        gen_args: Vec<String>,
        /// Seconds from start until its FIB held the synthetic table.
        load_s: Option<f64>,
    },
    LinuxBridge,
    LinuxRouter {
        /// What the generator must be told: router MACs, and that frames are routed.
        gen_args: Vec<String>,
        /// Seconds `ip -batch` took to load the synthetic table.
        load_s: Option<f64>,
    },
    Testpmd {
        child: Child,
        /// Held open: testpmd without a terminal exits when its standard input ends.
        _stdin: Option<std::process::ChildStdin>,
        log: PathBuf,
    },
    Vpp(super::vpp::Vpp),
}

const BRIDGE: &str = "br0";

/// Start a DUT, its worker (if it has one) on `dut_cpu`.
pub fn start(kind: DutKind, dut_cpu: usize, io: Io) -> Result<RunningDut, String> {
    start_with(kind, dut_cpu, io, None)
}

/// `start`, a router DUT with `table`'s synthetic routes besides its test routes.
pub fn start_with(
    kind: DutKind,
    dut_cpu: usize,
    io: Io,
    table: Option<&TableFiles>,
) -> Result<RunningDut, String> {
    match kind {
        DutKind::Sluice => start_sluice(dut_cpu, io, None),
        DutKind::SluiceAfXdp => start_sluice(dut_cpu, Io::AfXdp, None),
        DutKind::SluiceRouter => start_sluice_router(dut_cpu, io, table),
        DutKind::LinuxRouter => start_router(table),
        DutKind::Testpmd => start_testpmd(dut_cpu, io),
        DutKind::Vpp => Vpp::start(dut_cpu, io, None, None, Vec::new()).map(RunningDut::Vpp),
        DutKind::VppRouter => {
            let macs = (
                mac_of(DUT, "d0")?,
                mac_of(DUT, "d1")?,
                mac_of(TESTER, "t0")?,
                mac_of(TESTER, "t1")?,
            );
            Vpp::start(dut_cpu, io, Some(table), Some(macs), routed_gen_args()?)
                .map(RunningDut::Vpp)
        }
        DutKind::LinuxBridge => {
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
                &super::port_mtu(io).to_string(),
            ])?;
            for d in ["d0", "d1"] {
                ip(&["link", "set", d, "master", BRIDGE])?;
            }
            ip(&["link", "set", BRIDGE, "up"])?;
            Ok(RunningDut::LinuxBridge)
        }
    }
}

fn mac_of(ns: &str, dev: &str) -> Result<String, String> {
    let path = format!("/sys/class/net/{dev}/address");
    let o = in_ns(ns, "cat", &[&path])?;
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The routers' addressing, documentation and benchmarking ranges only (RFC 5737, 3849,
/// 2544): the DUT's d0 and d1 with the tester's t0 and t1 on the same subnets, the
/// generator's destinations (198.19/16) routed to t1 and its sources (198.18/16) to t0.
pub mod plan {
    pub const D0_V4: &str = "192.0.2.1/24";
    pub const T0_V4: &str = "192.0.2.2";
    pub const D1_V4: &str = "198.51.100.1/24";
    pub const T1_V4: &str = "198.51.100.2";
    pub const D0_V6: &str = "2001:db8::1/64";
    pub const T0_V6: &str = "2001:db8::2";
    pub const D1_V6: &str = "2001:db8:1::1/64";
    pub const T1_V6: &str = "2001:db8:1::2";
    /// The generator's destinations (sent t0 → t1).
    pub const TO_T1: &str = "198.19.0.0/16";
    /// The generator's sources: the reverse direction's destinations.
    pub const TO_T0: &str = "198.18.0.0/16";
    /// Length of the IPv4 subnets on both sides.
    pub const V4_LEN: &str = "24";
    pub const V6_LEN: &str = "64";
}

/// A router's generator arguments: routed frames, to the router's MAC on each side.
fn routed_gen_args() -> Result<Vec<String>, String> {
    Ok(vec![
        "--routed".into(),
        "--src-mac".into(),
        mac_of(TESTER, "t0")?,
        "--dst-mac".into(),
        mac_of(DUT, "d0")?,
        "--src-mac-reverse".into(),
        mac_of(TESTER, "t1")?,
        "--dst-mac-reverse".into(),
        mac_of(DUT, "d1")?,
    ])
}

/// `ip -n NS ARGS`.
fn ip_in(ns: &str, args: &[&str]) -> Result<(), String> {
    let mut a = vec!["-n", ns];
    a.extend_from_slice(args);
    run("ip", &a).map(|_| ())
}

/// Turn IPv6 on or off on a lab port (the lab keeps it off: no stray ND and MLD frames),
/// without router advertisements or duplicate address detection when on.
fn port_ipv6(ns: &str, dev: &str, on: bool) -> Result<(), String> {
    let keys: &[String] = if on {
        &[
            format!("net.ipv6.conf.{dev}.accept_ra=0"),
            format!("net.ipv6.conf.{dev}.accept_dad=0"),
            format!("net.ipv6.conf.{dev}.disable_ipv6=0"),
        ]
    } else {
        &[format!("net.ipv6.conf.{dev}.disable_ipv6=1")]
    };
    for k in keys {
        in_ns(ns, "sysctl", &["-qw", k])?;
    }
    Ok(())
}

/// Give the tester's ports their addresses (so that their kernel answers a router's ARP and
/// neighbour solicitations), or take them away.
fn tester_addresses(add: bool) -> Result<(), String> {
    let ports = [
        ("t0", plan::T0_V4, plan::T0_V6),
        ("t1", plan::T1_V4, plan::T1_V6),
    ];
    if !add {
        for (dev, _, _) in ports {
            let _ = ip_in(TESTER, &["addr", "flush", "dev", dev]);
            let _ = port_ipv6(TESTER, dev, false);
        }
        return Ok(());
    }
    // Start from bare ports, whatever an interrupted run left.
    tester_addresses(false)?;
    // The tester must not route between its ports what the DUT hands it.
    in_ns(TESTER, "sysctl", &["-qw", "net.ipv4.ip_forward=0"])?;
    for (dev, v4, v6) in ports {
        port_ipv6(TESTER, dev, true)?;
        ip_in(
            TESTER,
            &["addr", "add", &format!("{v4}/{}", plan::V4_LEN), "dev", dev],
        )?;
        ip_in(
            TESTER,
            &[
                "addr",
                "add",
                &format!("{v6}/{}", plan::V6_LEN),
                "dev",
                dev,
                "nodad",
            ],
        )?;
    }
    Ok(())
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

fn start_router(table: Option<&TableFiles>) -> Result<RunningDut, String> {
    let t0 = mac_of(TESTER, "t0")?;
    let t1 = mac_of(TESTER, "t1")?;
    let mut dut = RunningDut::LinuxRouter {
        gen_args: routed_gen_args()?,
        load_s: None,
    };
    let t0_v4 = plan::T0_V4;
    let t1_v4 = plan::T1_V4;
    let steps: [&[&str]; 6] = [
        &["addr", "add", plan::D0_V4, "dev", "d0"],
        &["addr", "add", plan::D1_V4, "dev", "d1"],
        &["route", "add", plan::TO_T1, "via", t1_v4, "dev", "d1"],
        &["route", "add", plan::TO_T0, "via", t0_v4, "dev", "d0"],
        // The tester's ports have no addresses for this DUT: its neighbours are fixed.
        &[
            "neigh",
            "replace",
            t1_v4,
            "lladdr",
            &t1,
            "dev",
            "d1",
            "nud",
            "permanent",
        ],
        &[
            "neigh",
            "replace",
            t0_v4,
            "lladdr",
            &t0,
            "dev",
            "d0",
            "nud",
            "permanent",
        ],
    ];
    for step in steps {
        ip_in(DUT, step)?;
    }
    if let Some(t) = table {
        if t.v6 > 0 {
            // IPv6 next hops must lie on a connected subnet.
            for (dev, addr) in [("d0", plan::D0_V6), ("d1", plan::D1_V6)] {
                port_ipv6(DUT, dev, true)?;
                ip_in(DUT, &["addr", "add", addr, "dev", dev, "nodad"])?;
            }
        }
        let s = linux_load(t)?;
        if let RunningDut::LinuxRouter { load_s, .. } = &mut dut {
            *load_s = Some(s);
        }
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

fn start_testpmd(dut_cpu: usize, io: Io) -> Result<RunningDut, String> {
    if let Some(why) = DutKind::Testpmd.unavailable() {
        return Err(why);
    }
    let main_cpu = if dut_cpu == 0 { 1 } else { 0 };
    let log = std::env::temp_dir().join(format!("sluice-lab-testpmd-{}.log", std::process::id()));
    let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    // No huge pages, no PCI devices: two af_packet (or af_xdp) ports on d0 and d1, io
    // forwarding (each port's frames go out of the other unchanged), the forwarding core on
    // the DUT CPU.
    let vdev = |k: usize| match io {
        Io::AfPacket => format!("net_af_packet{k},iface=d{k}"),
        Io::AfXdp => format!("net_af_xdp{k},iface=d{k}"),
        Io::Memif => format!(
            "net_memif{k},role=server,socket={},socket-abstract=no",
            super::memif_socket(k).display()
        ),
    };
    let mut child = Command::new("ip")
        .args([
            "netns",
            "exec",
            DUT,
            TESTPMD,
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
        ])
        .args([
            "--file-prefix",
            "sluice-lab",
            "-l",
            &format!("{main_cpu},{dut_cpu}"),
        ])
        .args(["--vdev", &vdev(0), "--vdev", &vdev(1)])
        .args([
            "--",
            "--forward-mode=io",
            "--total-num-mbufs=16384",
            "--auto-start",
        ])
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {TESTPMD}: {e}"))?;
    let stdin = child.stdin.take();
    // Ready when both ports are started: DPDK's af_packet ports turn promiscuous mode on.
    // (Its log is no use for this: its output does not always reach the file in time.)
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let links = run("ip", &["-n", DUT, "link", "show"])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let ready = match io {
            Io::Memif => super::memif_socket(0).exists() && super::memif_socket(1).exists(),
            _ => links.matches("PROMISC").count() >= 2,
        };
        if ready {
            std::thread::sleep(Duration::from_millis(500));
            break;
        }
        if child.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            for dev in ["d0", "d1"] {
                let _ = run("ip", &["-n", DUT, "link", "set", dev, "promisc", "off"]);
            }
            return Err(format!("{TESTPMD} did not start: {}", text.trim()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(RunningDut::Testpmd {
        child,
        _stdin: stdin,
        log,
    })
}

/// The parts of sluice's config that make it a router between d0 and d1: the plan's
/// addresses for each port, then a static route per traffic direction and the synthetic
/// table's route file when there is one.
pub fn router_parts(table: Option<&TableFiles>) -> (String, String, String) {
    let addresses = |v4: &str, v6: &str| format!("address = [\"{v4}\", \"{v6}\"]\n");
    let mut tail = String::new();
    for (prefix, via) in [(plan::TO_T1, plan::T1_V4), (plan::TO_T0, plan::T0_V4)] {
        tail.push_str(&format!(
            "[[route]]\nprefix = \"{prefix}\"\nvia = [\"{via}\"]\n"
        ));
    }
    if let Some(t) = table {
        tail.push_str(&format!(
            "[fib]\nroute-file = \"{}\"\n",
            t.route_file.display()
        ));
    }
    (
        addresses(plan::D0_V4, plan::D0_V6),
        addresses(plan::D1_V4, plan::D1_V6),
        tail,
    )
}

fn start_sluice_router(
    dut_cpu: usize,
    io: Io,
    table: Option<&TableFiles>,
) -> Result<RunningDut, String> {
    let gen_args = routed_gen_args()?;
    tester_addresses(true).inspect_err(|_| {
        let _ = tester_addresses(false);
    })?;
    let t = Instant::now();
    let mut dut = match start_sluice(dut_cpu, io, Some(table)) {
        Ok(d) => d,
        Err(e) => {
            let _ = tester_addresses(false);
            return Err(e);
        }
    };
    if let RunningDut::Sluice {
        gen_args: g,
        load_s,
        ..
    } = &mut dut
    {
        *g = gen_args;
        if let Some(table) = table {
            let want = (table.v4 + table.v6) as u64;
            let s = wait_for_fib(&dut_socket(), want, t)?;
            eprintln!(
                "sluice-router: FIB holds {} IPv4 + {} IPv6 synthetic routes {s:.2} s after start",
                table.v4, table.v6
            );
            *load_s = Some(s);
        }
    }
    Ok(dut)
}

fn dut_socket() -> PathBuf {
    PathBuf::from("/run/sluice/lab-dut.sock")
}

/// How many routes of the route file `show ip fib summary --json` says the FIB holds (all its
/// routes when it does not say).
pub fn fib_route_count(summary: &Value) -> Option<u64> {
    summary["route_file_routes"]
        .as_u64()
        .or_else(|| Some(summary["v4_routes"].as_u64()? + summary["v6_routes"].as_u64()?))
}

/// Wait until sluice's FIB holds at least `want` routes; seconds since `since`.
fn wait_for_fib(socket: &std::path::Path, want: u64, since: Instant) -> Result<f64, String> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let reply = crate::control::client::run_command(socket, "show ip fib summary --json")?;
        let v: Value = serde_json::from_str(&reply).map_err(|e| format!("fib summary: {e}"))?;
        let n = fib_route_count(&v)
            .ok_or_else(|| format!("no route count in show ip fib summary: {v}"))?;
        if n >= want {
            let s = since.elapsed().as_secs_f64();
            if let Some(own) = v["load_seconds"].as_f64() {
                eprintln!("sluice-router: its own count of the route file's load: {own:.2} s");
            }
            return Ok(s);
        }
        if Instant::now() > deadline {
            return Err(format!("sluice's FIB holds {n} routes, not {want}: {v}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start sluice on d0 and d1: cross-connecting them, or routing (`router` holds the table).
/// sluice's config on d0 and d1: cross-connecting them, or routing (`router` holds the
/// synthetic table, if any).
pub fn sluice_config(
    dut_cpu: usize,
    io: Io,
    router: Option<Option<&TableFiles>>,
    socket: &std::path::Path,
) -> String {
    let main_core = if dut_cpu == 0 { 1 } else { 0 };
    let (driver, mtu) = (io.name(), super::port_mtu(io));
    // memif ports listen where the generator connects; the others attach to the veths.
    let port = |k: usize| match io {
        Io::Memif => format!(
            "socket = \"{}\"\nrole = \"server\"\n",
            super::memif_socket(k).display()
        ),
        _ => format!("host = \"d{k}\"\nmtu = {mtu}\n"),
    };
    let (extra0, extra1, tail) = match router {
        None => (
            String::new(),
            String::new(),
            "[[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n"
                .to_string(),
        ),
        Some(table) => router_parts(table),
    };
    format!(
        "[dataplane]\nworkers = 1\nworker-cores = [{dut_cpu}]\nmain-core = {main_core}\n\
         [control]\nsocket = \"{}\"\n\
         [[interface]]\nname = \"d0\"\ndriver = \"{driver}\"\n{}{extra0}\
         [[interface]]\nname = \"d1\"\ndriver = \"{driver}\"\n{}{extra1}{tail}",
        socket.display(),
        port(0),
        port(1)
    )
}

fn start_sluice(
    dut_cpu: usize,
    io: Io,
    router: Option<Option<&TableFiles>>,
) -> Result<RunningDut, String> {
    let dir = std::env::temp_dir().join(format!("sluice-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let socket = dut_socket();
    let cfg = dir.join("dut.toml");
    let text = sluice_config(dut_cpu, io, router, &socket);
    std::fs::write(&cfg, text).map_err(|e| format!("{}: {e}", cfg.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let log = std::fs::File::create(dir.join("dut.log")).map_err(|e| e.to_string())?;
    let child = Command::new("ip")
        .args(["netns", "exec", DUT])
        .arg(&exe)
        .args(["run", "-c"])
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start sluice: {e}"))?;
    let mut dut = RunningDut::Sluice {
        child,
        socket: socket.clone(),
        dir: dir.clone(),
        gen_args: Vec::new(),
        load_s: None,
    };
    // A full table may be read before the control socket opens.
    let deadline = Instant::now()
        + Duration::from_secs(if matches!(router, Some(Some(_))) {
            300
        } else {
            10
        });
    loop {
        if crate::control::client::run_command(&socket, "show version").is_ok() {
            return Ok(dut);
        }
        let exited = match &mut dut {
            RunningDut::Sluice { child, .. } => child.try_wait().ok().flatten().is_some(),
            _ => false,
        };
        if exited || Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("dut.log")).unwrap_or_default();
            dut.stop();
            return Err(format!("sluice did not come up in {DUT}: {}", log.trim()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGINT, then SIGKILL if the process has not exited within `grace`.
fn stop_child(child: &mut Child, grace: Duration) {
    signal_child(child, "INT", grace);
}

/// Send `signal` (a `kill -SIGNAL` name), then SIGKILL if the process has not exited within
/// `grace`.
pub(super) fn signal_child(child: &mut Child, signal: &str, grace: Duration) {
    if let Ok(None) = child.try_wait() {
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl RunningDut {
    /// `sluice ctl LINE --json` against the DUT, when it is sluice.
    pub fn ctl_json(&self, line: &str) -> Option<Value> {
        let out = self.ctl(&format!("{line} --json"))?;
        serde_json::from_str(&out).ok()
    }

    /// `sluice ctl LINE` against the DUT, when it is sluice.
    pub fn ctl(&self, line: &str) -> Option<String> {
        match self {
            RunningDut::Sluice { socket, .. } => {
                crate::control::client::run_command(socket, line).ok()
            }
            RunningDut::Vpp(vpp) => vpp.ctl(line),
            _ => None,
        }
    }

    /// Extra generator arguments this DUT needs (a router's MACs).
    pub fn gen_args(&self) -> Vec<String> {
        match self {
            RunningDut::LinuxRouter { gen_args, .. } | RunningDut::Sluice { gen_args, .. } => {
                gen_args.clone()
            }
            RunningDut::Vpp(vpp) => vpp.gen_args.clone(),
            _ => Vec::new(),
        }
    }

    /// Seconds the DUT took to load its synthetic table, if it was given one.
    pub fn table_load_s(&self) -> Option<f64> {
        match self {
            RunningDut::LinuxRouter { load_s, .. } | RunningDut::Sluice { load_s, .. } => *load_s,
            RunningDut::Vpp(vpp) => vpp.load_s,
            _ => None,
        }
    }

    /// Take the DUT down: SIGINT to sluice (SIGKILL after 5 s), or delete the bridge.
    pub fn stop(&mut self) {
        match self {
            RunningDut::Sluice {
                child,
                dir,
                gen_args,
                ..
            } => {
                stop_child(child, Duration::from_secs(5));
                let _ = std::fs::remove_dir_all(&*dir);
                if !gen_args.is_empty() {
                    let _ = tester_addresses(false);
                    gen_args.clear();
                }
            }
            RunningDut::LinuxBridge => {
                let _ = in_ns(DUT, "ip", &["link", "del", BRIDGE]);
            }
            RunningDut::LinuxRouter { .. } => {
                let _ = in_ns(DUT, "sysctl", &["-qw", "net.ipv4.ip_forward=0"]);
                // A full table's routes go with the addresses their next hops sat on.
                let _ = run("ip", &["-n", DUT, "route", "flush", "table", "main"]);
                let _ = run("ip", &["-n", DUT, "-6", "route", "flush", "table", "main"]);
                for dev in ["d0", "d1"] {
                    let _ = run("ip", &["-n", DUT, "addr", "flush", "dev", dev]);
                    let _ = run("ip", &["-n", DUT, "neigh", "flush", "dev", dev]);
                    let _ = port_ipv6(DUT, dev, false);
                }
            }
            RunningDut::Testpmd { child, log, .. } => {
                stop_child(child, Duration::from_secs(10));
                // DPDK's af_packet ports leave the interfaces promiscuous: undo it.
                for dev in ["d0", "d1"] {
                    let _ = run("ip", &["-n", DUT, "link", "set", dev, "promisc", "off"]);
                }
                let _ = std::fs::remove_file(&*log);
                // DPDK leaves its runtime directory behind.
                let _ = std::fs::remove_dir_all("/var/run/dpdk/sluice-lab");
            }
            RunningDut::Vpp(vpp) => vpp.stop(),
        }
    }
}

impl Drop for RunningDut {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config sluice-router gets is one sluice accepts (CPU numbers left out: they
    /// depend on the machine).
    #[test]
    fn router_config_is_valid() {
        let table = TableFiles {
            spec: super::super::table::FULL,
            route_file: "/tmp/table.txt".into(),
            ip_batch: "/tmp/batch.txt".into(),
            v4: 1,
            v6: 1,
        };
        for (router, routes) in [(None, 0), (Some(None), 2), (Some(Some(&table)), 2)] {
            let text: String = sluice_config(1, Io::AfPacket, router, "/tmp/s.sock".as_ref())
                .lines()
                .filter(|l| !l.starts_with("worker-cores") && !l.starts_with("main-core"))
                .map(|l| format!("{l}\n"))
                .collect();
            let cfg = crate::config::Config::parse(&text, "lab")
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(cfg.routes.len(), routes, "{text}");
            assert_eq!(cfg.interfaces.len(), 2);
            assert_eq!(
                cfg.fib.route_file.is_some(),
                matches!(router, Some(Some(_))),
                "{text}"
            );
            let want = if router.is_some() { 2 } else { 0 };
            for i in &cfg.interfaces {
                assert_eq!(i.address.len(), want, "{text}");
            }
        }
    }
}
