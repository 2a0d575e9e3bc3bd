//! Devices under test in the lab's `sl-dut` namespace: sluice cross-connecting d0 and d1, or
//! the kernel's bridge. Each starts before a run and is taken down after it, even on error.

use super::netns::{in_ns, run, DUT};
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
    Testpmd,
    Vpp,
}

/// DPDK's forwarding test program, as Debian installs it.
pub const TESTPMD: &str = "dpdk-testpmd";

impl DutKind {
    pub const ALL: [DutKind; 6] = [
        DutKind::Sluice,
        DutKind::SluiceAfXdp,
        DutKind::LinuxBridge,
        DutKind::LinuxRouter,
        DutKind::Testpmd,
        DutKind::Vpp,
    ];

    pub fn parse(s: &str) -> Result<DutKind, String> {
        DutKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown DUT '{s}' (known: sluice, sluice-af_xdp, linux-bridge, linux-router, testpmd, vpp)"
                )
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            DutKind::Sluice => "sluice",
            DutKind::SluiceAfXdp => "sluice-af_xdp",
            DutKind::LinuxBridge => "linux-bridge",
            DutKind::LinuxRouter => "linux-router",
            DutKind::Testpmd => "testpmd",
            DutKind::Vpp => "vpp",
        }
    }

    /// Whether the DUT can use `io` for its ports (the kernel's DUTs forward whatever the
    /// veths bring, so any io on the veths suits them).
    pub fn supports(self, io: Io) -> bool {
        match io {
            Io::AfPacket | Io::AfXdp => true,
            Io::Memif if self == DutKind::SluiceAfXdp => false,
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
            DutKind::Vpp if !on_path("vpp") => Some("no vpp binary on the PATH".into()),
            DutKind::Vpp => Some("the vpp DUT is not wired into the lab yet".into()),
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
    },
    LinuxBridge,
    LinuxRouter {
        /// What the generator must be told: router MACs, and that frames are routed.
        gen_args: Vec<String>,
    },
    Testpmd {
        child: Child,
        /// Held open: testpmd without a terminal exits when its standard input ends.
        _stdin: Option<std::process::ChildStdin>,
        log: PathBuf,
    },
}

const BRIDGE: &str = "br0";

/// Start a DUT, its worker (if it has one) on `dut_cpu`.
pub fn start(kind: DutKind, dut_cpu: usize, io: Io) -> Result<RunningDut, String> {
    match kind {
        DutKind::Sluice => start_sluice(dut_cpu, io),
        DutKind::SluiceAfXdp => start_sluice(dut_cpu, Io::AfXdp),
        DutKind::LinuxRouter => start_router(),
        DutKind::Testpmd => start_testpmd(dut_cpu, io),
        DutKind::Vpp => Err(DutKind::Vpp.unavailable().unwrap_or_default()),
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

/// Router addressing (documentation and benchmarking ranges only): d0 192.0.2.1/24 with
/// the tester's t0 as 192.0.2.2; d1 198.51.100.1/24 with t1 as 198.51.100.2; the generator's
/// destinations 198.19.0.0/16 routed to t1 and its sources 198.18.0.0/16 to t0.
const ROUTER_SETUP: [&[&str]; 6] = [
    &["addr", "add", "192.0.2.1/24", "dev", "d0"],
    &["addr", "add", "198.51.100.1/24", "dev", "d1"],
    &[
        "route",
        "add",
        "198.19.0.0/16",
        "via",
        "198.51.100.2",
        "dev",
        "d1",
    ],
    &[
        "route",
        "add",
        "198.18.0.0/16",
        "via",
        "192.0.2.2",
        "dev",
        "d0",
    ],
    &[
        "neigh",
        "replace",
        "198.51.100.2",
        "lladdr",
        "T1MAC",
        "dev",
        "d1",
        "nud",
        "permanent",
    ],
    &[
        "neigh",
        "replace",
        "192.0.2.2",
        "lladdr",
        "T0MAC",
        "dev",
        "d0",
        "nud",
        "permanent",
    ],
];

fn start_router() -> Result<RunningDut, String> {
    let t0 = mac_of(super::netns::TESTER, "t0")?;
    let t1 = mac_of(super::netns::TESTER, "t1")?;
    let d0 = mac_of(DUT, "d0")?;
    let d1 = mac_of(DUT, "d1")?;
    let dut = RunningDut::LinuxRouter {
        gen_args: vec![
            "--routed".into(),
            "--src-mac".into(),
            t0.clone(),
            "--dst-mac".into(),
            d0,
            "--src-mac-reverse".into(),
            t1.clone(),
            "--dst-mac-reverse".into(),
            d1,
        ],
    };
    for step in ROUTER_SETUP {
        let args: Vec<&str> = step
            .iter()
            .map(|a| match *a {
                "T0MAC" => t0.as_str(),
                "T1MAC" => t1.as_str(),
                other => other,
            })
            .collect();
        let mut full = vec!["-n", DUT];
        full.extend(args);
        run("ip", &full)?;
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

fn start_sluice(dut_cpu: usize, io: Io) -> Result<RunningDut, String> {
    let dir = std::env::temp_dir().join(format!("sluice-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let socket = PathBuf::from("/run/sluice/lab-dut.sock");
    let cfg = dir.join("dut.toml");
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
    let text = format!(
        "[dataplane]\nworkers = 1\nworker-cores = [{dut_cpu}]\nmain-core = {main_core}\n\
         [control]\nsocket = \"{}\"\n\
         [[interface]]\nname = \"d0\"\ndriver = \"{driver}\"\n{}\
         [[interface]]\nname = \"d1\"\ndriver = \"{driver}\"\n{}\
         [[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n",
        socket.display(),
        port(0),
        port(1)
    );
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
    };
    let deadline = Instant::now() + Duration::from_secs(10);
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
    if let Ok(None) = child.try_wait() {
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
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
            _ => None,
        }
    }

    /// Extra generator arguments this DUT needs (a router's MACs).
    pub fn gen_args(&self) -> Vec<String> {
        match self {
            RunningDut::LinuxRouter { gen_args } => gen_args.clone(),
            _ => Vec::new(),
        }
    }

    /// Take the DUT down: SIGINT to sluice (SIGKILL after 5 s), or delete the bridge.
    pub fn stop(&mut self) {
        match self {
            RunningDut::Sluice { child, dir, .. } => {
                stop_child(child, Duration::from_secs(5));
                let _ = std::fs::remove_dir_all(&*dir);
            }
            RunningDut::LinuxBridge => {
                let _ = in_ns(DUT, "ip", &["link", "del", BRIDGE]);
            }
            RunningDut::LinuxRouter { .. } => {
                let _ = in_ns(DUT, "sysctl", &["-qw", "net.ipv4.ip_forward=0"]);
                for dev in ["d0", "d1"] {
                    let _ = run("ip", &["-n", DUT, "addr", "flush", "dev", dev]);
                    let _ = run("ip", &["-n", DUT, "neigh", "flush", "dev", dev]);
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
        }
    }
}

impl Drop for RunningDut {
    fn drop(&mut self) {
        self.stop();
    }
}
