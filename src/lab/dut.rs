//! Devices under test in the lab's `sl-dut` namespace: sluice cross-connecting d0 and d1, or
//! the kernel's bridge. Each starts before a run and is taken down after it, even on error.

use super::netns::{in_ns, run, DUT};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DutKind {
    Sluice,
    LinuxBridge,
}

impl DutKind {
    pub fn parse(s: &str) -> Result<DutKind, String> {
        match s {
            "sluice" => Ok(DutKind::Sluice),
            "linux-bridge" => Ok(DutKind::LinuxBridge),
            other => Err(format!(
                "unknown DUT '{other}' (known: sluice, linux-bridge)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DutKind::Sluice => "sluice",
            DutKind::LinuxBridge => "linux-bridge",
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
}

const BRIDGE: &str = "br0";

/// Start a DUT, its worker (if it has one) on `dut_cpu`.
pub fn start(kind: DutKind, dut_cpu: usize) -> Result<RunningDut, String> {
    match kind {
        DutKind::Sluice => start_sluice(dut_cpu),
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
            ip(&["link", "set", BRIDGE, "mtu", "9000"])?;
            for d in ["d0", "d1"] {
                ip(&["link", "set", d, "master", BRIDGE])?;
            }
            ip(&["link", "set", BRIDGE, "up"])?;
            Ok(RunningDut::LinuxBridge)
        }
    }
}

fn start_sluice(dut_cpu: usize) -> Result<RunningDut, String> {
    let dir = std::env::temp_dir().join(format!("sluice-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let socket = PathBuf::from("/run/sluice/lab-dut.sock");
    let cfg = dir.join("dut.toml");
    let main_core = if dut_cpu == 0 { 1 } else { 0 };
    let text = format!(
        "[dataplane]\nworkers = 1\nworker-cores = [{dut_cpu}]\nmain-core = {main_core}\n\
         [control]\nsocket = \"{}\"\n\
         [[interface]]\nname = \"d0\"\ndriver = \"af_packet\"\nhost = \"d0\"\nmtu = 9000\n\
         [[interface]]\nname = \"d1\"\ndriver = \"af_packet\"\nhost = \"d1\"\nmtu = 9000\n\
         [[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n",
        socket.display()
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
            RunningDut::LinuxBridge => false,
        };
        if exited || Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("dut.log")).unwrap_or_default();
            dut.stop();
            return Err(format!("sluice did not come up in {DUT}: {}", log.trim()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl RunningDut {
    /// `sluice ctl LINE --json` against the DUT, when it is sluice.
    pub fn ctl_json(&self, line: &str) -> Option<Value> {
        match self {
            RunningDut::Sluice { socket, .. } => {
                let out =
                    crate::control::client::run_command(socket, &format!("{line} --json")).ok()?;
                serde_json::from_str(&out).ok()
            }
            RunningDut::LinuxBridge => None,
        }
    }

    pub fn ctl(&self, line: &str) -> Option<String> {
        match self {
            RunningDut::Sluice { socket, .. } => {
                crate::control::client::run_command(socket, line).ok()
            }
            RunningDut::LinuxBridge => None,
        }
    }

    /// Take the DUT down: SIGINT to sluice (SIGKILL after 5 s), or delete the bridge.
    pub fn stop(&mut self) {
        match self {
            RunningDut::Sluice { child, dir, .. } => {
                if let Ok(None) = child.try_wait() {
                    let _ = Command::new("kill")
                        .args(["-INT", &child.id().to_string()])
                        .status();
                    let deadline = Instant::now() + Duration::from_secs(5);
                    while Instant::now() < deadline {
                        if let Ok(Some(_)) = child.try_wait() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    if let Ok(None) = child.try_wait() {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                }
                let _ = std::fs::remove_dir_all(&*dir);
            }
            RunningDut::LinuxBridge => {
                let _ = in_ns(DUT, "ip", &["link", "del", BRIDGE]);
            }
        }
    }
}

impl Drop for RunningDut {
    fn drop(&mut self) {
        self.stop();
    }
}
