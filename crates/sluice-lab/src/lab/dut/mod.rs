//! Devices under test in the lab's `sl-dut` namespace, one file each behind the `Dut` trait:
//! sluice cross-connecting d0 and d1 or routing between them (`sluice.rs`), the kernel's
//! bridge or router (`linux.rs`), the kernel's NAT (`linux_nat.rs`), testpmd (`testpmd.rs`), VPP (`vpp.rs`). Each file declares
//! its DUTs (a `DutSpec` each), `kind.rs` lists them as `DutKind`, and `start` starts one;
//! this module holds what they share (the tester's MACs and
//! addresses, stopping a child process). Each starts before a run and is taken down after
//! it, even on error: every DUT stops when dropped.

pub mod bird;
mod kind;
pub mod linux;
pub mod linux_nat;
pub mod sluice;
pub mod sluice_dpdk;
pub mod sluice_nat;
pub mod sluice_xdp;
pub mod testpmd;
pub mod vpp;

pub use self::kind::{DutKind, DutSpec, Setup, ANY_IO, DPDK_IO, VETH_IO};
use super::netns::{in_ns, run, DUT, TESTER};
use super::plan;
use super::table::TableFiles;
use crate::gen::frame::Family;
use crate::gen::port::Io;
use serde_json::Value;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A running DUT. Each also stops when dropped (`impl Drop` calling `stop`), so that an
/// error anywhere in a run takes it down.
pub trait Dut {
    /// `sluice ctl LINE` against the DUT, when it answers such lines (sluice, VPP).
    fn ctl(&self, _line: &str) -> Option<String> {
        None
    }

    /// `sluice ctl LINE --json` against the DUT, when it answers such lines.
    fn ctl_json(&self, line: &str) -> Option<Value> {
        let out = self.ctl(&format!("{line} --json"))?;
        serde_json::from_str(&out).ok()
    }

    /// Extra generator arguments this DUT needs (a router's MACs).
    fn gen_args(&self) -> Vec<String> {
        Vec::new()
    }

    /// Seconds the DUT took to load its synthetic table, if it was given one.
    fn table_load_s(&self) -> Option<f64> {
        None
    }

    /// With BIRD as the control plane: how long announcements and withdrawals took.
    fn convergence(&self) -> Option<Value> {
        None
    }

    /// With `--io dpdk-null` (no generator): frames a second the DUT sent out of both ports
    /// over `seconds`, by its own counters (`show interface` for one that answers sluice's
    /// CLI).
    fn null_rate(&mut self, seconds: f64) -> Result<f64, String> {
        let sent = |d: &Self| -> Result<u64, String> {
            let v = d
                .ctl_json("show interface")
                .ok_or("the DUT did not answer show interface")?;
            Ok(v.as_array()
                .map(|a| a.iter().filter_map(|i| i["tx_packets"].as_u64()).sum())
                .unwrap_or(0))
        };
        let (a, t0) = (sent(self)?, Instant::now());
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let (b, t1) = (sent(self)?, Instant::now());
        Ok(b.saturating_sub(a) as f64 / (t1 - t0).as_secs_f64())
    }

    /// Take the DUT down and undo what it changed; harmless when repeated.
    fn stop(&mut self);
}

/// DPDK's devargs for net_null port `k` of the lab: frames of `frame` bytes when given.
pub fn null_devargs(k: usize, frame: Option<usize>) -> String {
    match frame {
        Some(n) => format!("net_null{k},size={n}"),
        None => format!("net_null{k}"),
    }
}

/// A running DUT of any kind.
pub type RunningDut = Box<dyn Dut>;

/// Start a DUT, its worker (if it has one) on `dut_cpu`; a router DUT with `table`'s
/// synthetic routes besides its test routes.
pub fn start(
    kind: DutKind,
    dut_cpu: usize,
    io: Io,
    table: Option<&TableFiles>,
    vlans: &[u16],
    (acl, vrfs, bird, family): (Option<LabAcl>, Option<u16>, bool, Family),
    null_frame: Option<usize>,
) -> Result<RunningDut, String> {
    if !vlans.is_empty() && !kind.takes_vlans() {
        return Err(format!("{} does not take --vlan or --qinq", kind.name()));
    }
    if vrfs.is_some() && !kind.takes_vrfs() {
        return Err(format!("{} does not take --vrfs", kind.name()));
    }
    if acl.is_some() && !kind.filters() {
        return Err(format!("{} does not take --acl-rules", kind.name()));
    }
    let setup = Setup {
        dut_cpu,
        io,
        table,
        vlans,
        acl,
        vrfs,
        bird,
        family,
        null_frame,
    };
    (kind.spec().start)(&setup)
}

/// The VLAN id of the first tenant with `--vrfs` (tenant k: this + k).
pub const VRF_VLAN: u16 = 100;

/// What the router DUTs filter with (`--acl-rules`, `--stateful`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabAcl {
    /// Deny rules the traffic never matches, before the final permit.
    pub rules: u32,
    /// The final permit keeps state (sluice: permit+reflect; the kernel: conntrack).
    pub stateful: bool,
    /// Sessions per worker sluice's table must hold (every flow of the run, with room).
    pub sessions: usize,
}

impl LabAcl {
    /// Room for every flow of `--flows` (at least the default table).
    pub fn sessions_for(flows: &str) -> usize {
        let n: usize = flows.parse().unwrap_or(0);
        (n + n / 4).max(::sluice::config::DEFAULT_SESSIONS)
    }
}

/// The sources of the lab's `--acl-rules N` deny rules, one rule each: the first N
/// addresses of 100.64.0.0/10 (shared address space), which the lab's traffic never uses.
pub fn lab_deny_sources(n: u32) -> impl Iterator<Item = std::net::Ipv4Addr> {
    (0..n.min(1 << 22)).map(|i| std::net::Ipv4Addr::from(0x6440_0000u32 + i))
}

/// Whether `bin` is on the PATH.
pub fn on_path(bin: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {bin}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The MAC of `dev` in namespace `ns`.
fn mac_of(ns: &str, dev: &str) -> Result<String, String> {
    let path = format!("/sys/class/net/{dev}/address");
    let o = in_ns(ns, "cat", &[&path])?;
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
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
        for net in [plan::TO_T0, plan::TO_T1, plan::TO_T0_V6, plan::TO_T1_V6] {
            let _ = ip_in(TESTER, &["route", "del", "blackhole", net]);
        }
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
    // What the DUT forwards to the generator's networks is read by the generator's sockets;
    // the tester's kernel drops its copy at a blackhole route instead of failing a route
    // lookup per frame (IPv6 then tries an ICMPv6 error for each, with a route lookup of its
    // own), work that a veth runs on the DUT's CPU and that the lab would charge to the DUT.
    for net in [plan::TO_T0, plan::TO_T1, plan::TO_T0_V6, plan::TO_T1_V6] {
        ip_in(TESTER, &["route", "replace", "blackhole", net])?;
    }
    Ok(())
}

/// SIGINT, then SIGKILL if the process has not exited within `grace`.
pub(crate) fn stop_child(child: &mut Child, grace: Duration) {
    signal_child(child, "INT", grace);
}

/// Send `signal` (a `kill -SIGNAL` name), then SIGKILL if the process has not exited within
/// `grace`.
fn signal_child(child: &mut Child, signal: &str, grace: Duration) {
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
