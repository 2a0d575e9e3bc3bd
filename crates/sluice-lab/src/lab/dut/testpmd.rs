//! DPDK's testpmd as a lab DUT: io forwarding between two af_packet, af_xdp or memif ports on
//! d0 and d1 (each port's frames go out of the other unchanged), no huge pages, no PCI
//! devices, the forwarding core on the DUT CPU.

use super::{stop_child, Dut, DutSpec, DPDK_IO};
use crate::gen::port::Io;
pub use crate::gen::testpmd::{unavailable, TESTPMD};
use crate::lab::netns::{run, DUT};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `testpmd`: io forwarding between d0 and d1 (a userspace forwarder: memif too).
pub const IO_FORWARD_DUT: DutSpec = DutSpec {
    io: DPDK_IO,
    unavailable,
    ..DutSpec::new("testpmd", |s| {
        Ok(Box::new(start(s.dut_cpu, s.io, s.null_frame)?))
    })
};

/// A running testpmd.
pub struct Testpmd {
    child: Child,
    /// Held open: testpmd without a terminal exits when its standard input ends.
    _stdin: Option<std::process::ChildStdin>,
    log: PathBuf,
}

/// testpmd's port `k` for `io`.
fn vdev(io: Io, k: usize, null_frame: Option<usize>) -> String {
    match io {
        Io::AfPacket => format!("net_af_packet{k},iface=d{k}"),
        Io::AfXdp => format!("net_af_xdp{k},iface=d{k}"),
        Io::DpdkNull => super::null_devargs(k, null_frame),
        Io::Memif => format!(
            "net_memif{k},role=server,socket={},socket-abstract=no",
            crate::lab::memif_socket(k).display()
        ),
    }
}

pub fn start(dut_cpu: usize, io: Io, null_frame: Option<usize>) -> Result<Testpmd, String> {
    if let Some(why) = unavailable() {
        return Err(why);
    }
    let main_cpu = if dut_cpu == 0 { 1 } else { 0 };
    let log = std::env::temp_dir().join(format!("sluice-lab-testpmd-{}.log", std::process::id()));
    let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    // No huge pages, no PCI devices: two af_packet (or af_xdp) ports on d0 and d1, io
    // forwarding (each port's frames go out of the other unchanged), the forwarding core on
    // the DUT CPU.
    let vdev = |k: usize| vdev(io, k, null_frame);
    // With no generator, its own statistics are the measurement: a line each second (stdbuf:
    // line-buffered, so each reaches the log as it is printed).
    let (stats, prefix): (&[&str], &[&str]) = match io {
        Io::DpdkNull => (&["--stats-period=1"], &["stdbuf", "-oL"]),
        _ => (&[], &[]),
    };
    let mut child = Command::new("ip")
        .args(["netns", "exec", DUT])
        .args(prefix)
        .args([TESTPMD, "--no-huge", "-m", "512", "--no-pci"])
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
        .args(stats)
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
            Io::Memif => {
                crate::lab::memif_socket(0).exists() && crate::lab::memif_socket(1).exists()
            }
            // Forwarding once its first statistics period is out.
            Io::DpdkNull => std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Tx-pps")),
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
    Ok(Testpmd {
        child,
        _stdin: stdin,
        log,
    })
}

impl Dut for Testpmd {
    /// testpmd's own figure: the sum of both ports' Tx-pps of each one-second period printed
    /// during `seconds`, the median period.
    fn null_rate(&mut self, seconds: f64) -> Result<f64, String> {
        let read = || std::fs::read_to_string(&self.log).unwrap_or_default();
        let from = read().len();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let text = read();
        let pps: Vec<f64> = text
            .get(from..)
            .unwrap_or("")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Tx-pps:"))
            .filter_map(|v| v.split_whitespace().next()?.parse().ok())
            .collect();
        let mut periods: Vec<f64> = pps.chunks_exact(2).map(|p| p[0] + p[1]).collect();
        if periods.is_empty() {
            return Err(format!("{TESTPMD} printed no statistics"));
        }
        periods.sort_by(f64::total_cmp);
        Ok(periods[periods.len() / 2])
    }

    /// SIGINT (SIGKILL after 10 s), then undo what DPDK leaves behind.
    fn stop(&mut self) {
        stop_child(&mut self.child, Duration::from_secs(10));
        // DPDK's af_packet ports leave the interfaces promiscuous: undo it.
        for dev in ["d0", "d1"] {
            let _ = run("ip", &["-n", DUT, "link", "set", dev, "promisc", "off"]);
        }
        let _ = std::fs::remove_file(&self.log);
        // DPDK leaves its runtime directory behind.
        let _ = std::fs::remove_dir_all("/var/run/dpdk/sluice-lab");
    }
}

impl Drop for Testpmd {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--io dpdk-null --size N`: testpmd's net_null ports make frames of N less the FCS.
    #[test]
    fn null_ports_make_frames_of_the_size_asked() {
        assert_eq!(vdev(Io::DpdkNull, 1, Some(1510)), "net_null1,size=1510");
        assert_eq!(vdev(Io::DpdkNull, 0, None), "net_null0");
        assert_eq!(vdev(Io::AfPacket, 0, Some(60)), "net_af_packet0,iface=d0");
    }
}
