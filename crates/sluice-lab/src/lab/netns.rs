//! The lab's namespaces and veths: `sl-tester` (t0, t1) and `sl-dut` (d0, d1), joined
//! t0–d0 and t1–d1, built and removed with iproute2.

use std::process::{Command, Output};

pub const TESTER: &str = "sl-tester";
pub const DUT: &str = "sl-dut";
/// Veth pairs: (tester side, DUT side).
pub const PAIRS: [(&str, &str); 2] = [("t0", "d0"), ("t1", "d1")];
/// MTU of every lab port, so jumbo frames can be tested.
pub const LAB_MTU: u32 = 9000;
const LOCK_PATH: &str = "/run/sluice-lab.lock";

/// Run a command; an error carries its stderr.
pub fn run(cmd: &str, args: &[&str]) -> Result<Output, String> {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(o)
}

/// Run a command inside namespace `ns`.
pub fn in_ns(ns: &str, cmd: &str, args: &[&str]) -> Result<Output, String> {
    let mut a = vec!["netns", "exec", ns, cmd];
    a.extend_from_slice(args);
    run("ip", &a)
}

pub fn namespaces() -> Vec<String> {
    run("ip", &["netns", "list"])
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_up() -> bool {
    let ns = namespaces();
    ns.iter().any(|n| n == TESTER) && ns.iter().any(|n| n == DUT)
}

/// Install ethtool from Debian when it is missing (we are root in the lab).
pub fn ensure_ethtool() -> Result<(), String> {
    if Command::new("ethtool").arg("--version").output().is_ok() {
        return Ok(());
    }
    let install = || run("apt-get", &["install", "-y", "-qq", "ethtool"]);
    if install().is_err() {
        run("apt-get", &["update", "-qq"])?;
        install().map_err(|e| format!("cannot install ethtool: {e}"))?;
    }
    Ok(())
}

/// An exclusive lock so that two labs (or lab tests) never build or tear down at once.
pub struct LabLock {
    _file: std::fs::File,
}

impl LabLock {
    pub fn take() -> Result<LabLock, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_PATH)
            .map_err(|e| format!("{LOCK_PATH}: {e}"))?;
        sluice::sys::cpu::lock_file(&file).map_err(|e| format!("{LOCK_PATH}: {e}"))?;
        Ok(LabLock { _file: file })
    }
}

/// Build the lab. Returns false when it was already up.
pub fn up() -> Result<bool, String> {
    if is_up() {
        return Ok(false);
    }
    ensure_ethtool()?;
    // A half-built lab from an interrupted run: start clean.
    let _ = down();
    let built = build();
    if built.is_err() {
        let _ = down();
    }
    built.map(|_| true)
}

fn build() -> Result<(), String> {
    for ns in [TESTER, DUT] {
        run("ip", &["netns", "add", ns])?;
        run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    }
    for (t, d) in PAIRS {
        run(
            "ip",
            &[
                "link", "add", t, "netns", TESTER, "type", "veth", "peer", "name", d, "netns", DUT,
            ],
        )?;
    }
    // The DUT namespace's own kernel must not forward copies of what a userspace DUT reads.
    in_ns(DUT, "sysctl", &["-qw", "net.ipv4.ip_forward=0"])?;
    for (ns, dev) in PAIRS.iter().flat_map(|(t, d)| [(TESTER, *t), (DUT, *d)]) {
        // No IPv6: no neighbour discovery or MLD frames to miscount.
        in_ns(
            ns,
            "sysctl",
            &["-qw", &format!("net.ipv6.conf.{dev}.disable_ipv6=1")],
        )?;
        run(
            "ip",
            &[
                "-n",
                ns,
                "link",
                "set",
                dev,
                "mtu",
                &LAB_MTU.to_string(),
                "up",
            ],
        )?;
        // Offloads that would hide per-packet cost; a feature veth lacks is not an error.
        let _ = in_ns(
            ns,
            "ethtool",
            &[
                "-K", dev, "tso", "off", "gso", "off", "gro", "off", "lro", "off", "tx", "off",
                "rx", "off",
            ],
        );
    }
    Ok(())
}

/// Set the MTU of all four lab ports (the DUTs set theirs again as they need).
pub fn set_mtu(mtu: u32) -> Result<(), String> {
    for (ns, dev) in PAIRS.iter().flat_map(|(t, d)| [(TESTER, *t), (DUT, *d)]) {
        run(
            "ip",
            &["-n", ns, "link", "set", dev, "mtu", &mtu.to_string()],
        )?;
    }
    Ok(())
}

/// The lab ports' MTU for one run; the lab's own MTU comes back when it drops.
pub struct PortMtu;

impl PortMtu {
    pub fn set(mtu: u32) -> Result<PortMtu, String> {
        set_mtu(mtu)?;
        Ok(PortMtu)
    }
}

impl Drop for PortMtu {
    fn drop(&mut self) {
        let _ = set_mtu(LAB_MTU);
    }
}

/// Remove the lab. Returns false when there was nothing to remove.
pub fn down() -> Result<bool, String> {
    let present: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| n == TESTER || n == DUT)
        .collect();
    for ns in &present {
        run("ip", &["netns", "del", ns])?;
    }
    Ok(!present.is_empty())
}

/// GRO on or off on the tester's ports (off as the lab makes them). On puts a veth in NAPI
/// mode, without which the frames a DUT's XDP program redirects into d0 or d1 never reach
/// t0 or t1 (sluice's XDP fast path; the generator's own AF_XDP ports are in NAPI mode
/// anyway). It merges nothing: the lab sends UDP, which the kernel does not aggregate.
pub fn tester_napi(on: bool) -> Result<(), String> {
    let gro = if on { "on" } else { "off" };
    for dev in ["t0", "t1"] {
        in_ns(TESTER, "ethtool", &["-K", dev, "gro", gro])?;
    }
    Ok(())
}

/// Make the DUT's ports receive in their own NAPI kernel threads pinned to the DUT's CPU.
///
/// A veth normally receives in the sender's context, so whatever a kernel DUT does (bridge,
/// route) and the copy into a userspace DUT's ring would run on the generator's CPU and slow
/// the generator instead of costing the DUT. GRO on puts a veth in NAPI mode (which frames
/// sent by XDP also need), `threaded` gives it a kernel thread, and we pin that thread, so all
/// of a DUT's receive work lands on the DUT's CPU. GRO merges nothing here: the lab sends UDP,
/// which the kernel does not aggregate when forwarding.
///
/// With `on_dut` false, the ports go back to receiving in the sender's context (GRO stays on
/// when `xdp` is set, since XDP frames need NAPI mode).
pub fn dut_napi(on_dut: bool, xdp: bool, cpu: usize) -> Result<(), String> {
    let gro = if on_dut || xdp { "on" } else { "off" };
    for dev in ["d0", "d1"] {
        let threaded = |v: u8| {
            in_ns(
                DUT,
                "sh",
                &["-c", &format!("echo {v} > /sys/class/net/{dev}/threaded")],
            )
        };
        if on_dut {
            in_ns(DUT, "ethtool", &["-K", dev, "gro", gro])?;
            threaded(1)?;
        } else {
            // Fails harmlessly when the port has no NAPI (GRO already off).
            let _ = threaded(0);
            in_ns(DUT, "ethtool", &["-K", dev, "gro", gro])?;
        }
    }
    if !on_dut {
        return Ok(());
    }
    // The kernel names the threads napi/<dev>-<id>; they exist once the ports are up.
    let ps = run("ps", &["-eo", "pid=,comm="])?;
    let mut pinned = 0;
    for line in String::from_utf8_lossy(&ps.stdout).lines() {
        let mut f = line.split_whitespace();
        let (Some(pid), Some(comm)) = (f.next(), f.next()) else {
            continue;
        };
        if comm.starts_with("napi/d0-") || comm.starts_with("napi/d1-") {
            run("taskset", &["-pc", &cpu.to_string(), pid])?;
            pinned += 1;
        }
    }
    if pinned == 0 {
        return Err("no NAPI threads found for d0/d1 after enabling threaded NAPI".into());
    }
    Ok(())
}

/// Frames the kernel dropped at the lab's veths because the receiving end's queue was full,
/// as counted at the sending end (a veth counts its peer's full queue as its own `tx_dropped`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueDrops {
    /// Sent by the tester, dropped for want of room at the DUT's ports.
    pub to_dut: u64,
    /// Sent by the DUT, dropped for want of room at the tester's ports.
    pub to_tester: u64,
}

impl QueueDrops {
    /// The counters now; a run's figure is the difference of two readings.
    pub fn read() -> QueueDrops {
        QueueDrops {
            to_dut: PAIRS.iter().map(|p| tx_dropped(TESTER, p.0)).sum(),
            to_tester: PAIRS.iter().map(|p| tx_dropped(DUT, p.1)).sum(),
        }
    }

    pub fn since(self, before: QueueDrops) -> QueueDrops {
        QueueDrops {
            to_dut: self.to_dut.saturating_sub(before.to_dut),
            to_tester: self.to_tester.saturating_sub(before.to_tester),
        }
    }
}

/// `dev`'s `tx_dropped` in `ns` (0 when it cannot be read: the figure then explains less).
fn tx_dropped(ns: &str, dev: &str) -> u64 {
    run("ip", &["-n", ns, "-s", "-j", "link", "show", dev])
        .ok()
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|v| v[0]["stats64"]["tx"]["dropped"].as_u64())
        .unwrap_or(0)
}
