//! The testpmd engine: DPDK's testpmd sends in txonly mode on the --tx port, so that a figure
//! can be confirmed by a tester nobody here wrote. What arrives is counted by the --rx
//! interface's counter (veths), or on memif by a second testpmd in rxonly mode.
//!
//! testpmd runs interactively with its commands on standard input (`start`, `stop`, `quit`);
//! its counters are read from what `stop` prints. No huge pages, no PCI devices, no shared
//! configuration, a runtime directory of its own (removed when it ends); its main and
//! forwarding lcores share one CPU (the main one only waits on its prompt).

use super::frame::FCS_LEN;
use super::port::Io;
use super::report::{Report, RxReport, TxReport};
use super::Options;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// DPDK's forwarding test program, as Debian installs it.
pub const TESTPMD: &str = "dpdk-testpmd";

/// How long testpmd may take to come up (probe its port, reach a memif server).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Why testpmd cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    if crate::lab::dut::on_path(TESTPMD) {
        return None;
    }
    Some(format!(
        "{TESTPMD} is not installed (apt-get install dpdk-dev)"
    ))
}

/// The DPDK virtual device that reaches `port` over `io`; `k` numbers it within a process.
fn vdev(io: Io, port: &str, k: usize) -> String {
    match io {
        Io::AfPacket => format!("net_af_packet{k},iface={port}"),
        Io::AfXdp => format!("net_af_xdp{k},iface={port}"),
        Io::Memif => format!("net_memif{k},role=client,socket={port},socket-abstract=no"),
        Io::DpdkNull => format!("net_null{k}"),
    }
}

/// Counters `stop` printed for all ports together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counters {
    rx_packets: u64,
    tx_packets: u64,
    /// Frames the port's queue did not take (txonly drops them).
    tx_dropped: u64,
}

/// The last "NAME: N" in `text`.
fn last_field(text: &str, name: &str) -> Option<u64> {
    let key = format!("{name}:");
    let at = text.rfind(&key)? + key.len();
    text[at..].split_whitespace().next()?.parse().ok()
}

/// The accumulated counters of `stop`'s report (the per-port ones when it printed no
/// accumulated block, as with one port).
fn parse_stop(text: &str) -> Result<Counters, String> {
    let (Some(rx_packets), Some(tx_packets)) = (
        last_field(text, "RX-packets"),
        last_field(text, "TX-packets"),
    ) else {
        return Err(format!(
            "{TESTPMD}: no forward statistics in its output: {}",
            tail(text)
        ));
    };
    Ok(Counters {
        rx_packets,
        tx_packets,
        tx_dropped: last_field(text, "TX-dropped").unwrap_or(0),
    })
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(8).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// One interactive testpmd.
struct Testpmd {
    child: Child,
    stdin: ChildStdin,
    /// Everything it printed so far.
    out: Arc<Mutex<String>>,
    /// Its `--file-prefix`: DPDK's runtime directory is named after it.
    prefix: String,
}

impl Testpmd {
    /// Start testpmd on one port with `args` after `--`, and wait for its prompt.
    fn start(io: Io, port: &str, cpu: usize, args: &[String]) -> Result<Testpmd, String> {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let prefix = format!(
            "sluice-gen-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        // Line-buffered: testpmd's reports go through stdio, fully buffered into a pipe, while
        // its prompt is written directly; without this the report would trail the prompt.
        let mut child = Command::new("stdbuf")
            .args(["-oL", TESTPMD])
            .args(["--no-huge", "-m", "256", "--no-pci", "--no-shconf"])
            .args(["--file-prefix", &prefix])
            .args(["--lcores", &format!("0@{cpu},1@{cpu}")])
            .args(["--vdev", &vdev(io, port, 0)])
            .args(["--", "-i", "--nb-cores=1", "--total-num-mbufs=8192"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {TESTPMD}: {e}"))?;
        let out = Arc::new(Mutex::new(String::new()));
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let out = out.clone();
            std::thread::spawn(move || {
                // testpmd's prompt has no newline: read bytes, not lines.
                let mut r = BufReader::new(stream);
                loop {
                    let buf = match r.fill_buf() {
                        Ok([]) | Err(_) => break,
                        Ok(b) => b.to_vec(),
                    };
                    r.consume(buf.len());
                    if let Ok(mut o) = out.lock() {
                        o.push_str(&String::from_utf8_lossy(&buf));
                    }
                }
            });
        }
        let stdin = child.stdin.take().ok_or("testpmd has no stdin")?;
        let mut t = Testpmd {
            child,
            stdin,
            out,
            prefix,
        };
        t.wait_for("testpmd> ", 1, START_TIMEOUT)?;
        if io == Io::Memif {
            t.wait_link_up()?;
        }
        Ok(t)
    }

    fn text(&self) -> String {
        self.out.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Wait until `what` has been printed `n` times.
    fn wait_for(&mut self, what: &str, n: usize, timeout: Duration) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let text = self.text();
            if text.matches(what).count() >= n {
                return Ok(text);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{TESTPMD} exited ({status}): {}", tail(&text)));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{TESTPMD} did not print '{}' within {} s: {}",
                    what.trim(),
                    timeout.as_secs(),
                    tail(&text)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send one command and wait for the prompt after it.
    fn command(&mut self, cmd: &str) -> Result<String, String> {
        let prompts = self.text().matches("testpmd> ").count();
        writeln!(self.stdin, "{cmd}").map_err(|e| format!("{TESTPMD}: {e}"))?;
        let text = self.wait_for("testpmd> ", prompts + 1, Duration::from_secs(10))?;
        // What this command printed: after the prompt it was typed at.
        let at = text
            .match_indices("testpmd> ")
            .nth(prompts - 1)
            .map_or(0, |(i, _)| i);
        Ok(text[at..].to_string())
    }

    /// A memif client connects in the background: wait until its link is up.
    fn wait_link_up(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let info = self.command("show port info 0")?;
            if info.contains("Link status: up") {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{TESTPMD}: its memif port did not connect within 15 s (is the server there?)"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `stop` and its counters.
    fn stop(&mut self) -> Result<Counters, String> {
        parse_stop(&self.command("stop")?)
    }

    fn quit(mut self) {
        let _ = writeln!(self.stdin, "quit");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Testpmd {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{}", self.prefix));
    }
}

/// testpmd's txonly options for the profile's one flow and size.
fn txonly_args(opts: &Options) -> Vec<String> {
    let p = &opts.profile;
    let len = p.sizes[0] - FCS_LEN;
    let ip = |n: [u8; 2]| format!("{}.{}.0.1", n[0], n[1]);
    vec![
        "--forward-mode=txonly".into(),
        format!("--txpkts={len}"),
        format!("--tx-ip={},{}", ip(p.src_net), ip(p.dst_net)),
        format!("--eth-peer=0,{}", p.dst_mac),
    ]
}

/// Send for --duration with testpmd; count arrivals as the options say.
pub(super) fn run_testpmd(opts: &Options) -> Result<Report, String> {
    if let Some(why) = unavailable() {
        return Err(why);
    }
    let cpu = opts.cpu.unwrap_or(0);
    // The receiving side first, so that nothing sent is missed.
    let mut receiver = None;
    let mut counter_before = None;
    if let Some(rx) = &opts.rx {
        if opts.io == Io::Memif {
            let rx_cpu = opts.rx_cpu.unwrap_or(cpu);
            let mut r =
                Testpmd::start(opts.io, rx, rx_cpu, &["--forward-mode=rxonly".to_string()])?;
            r.command("start")?;
            receiver = Some(r);
        } else {
            counter_before = Some(super::xdp::rx_counter(rx)?);
        }
    }
    let mut sender = Testpmd::start(opts.io, &opts.tx, cpu, &txonly_args(opts))?;
    let started = Instant::now();
    sender.command("start")?;
    std::thread::sleep(opts.duration);
    let sent = sender.stop()?;
    let elapsed = started.elapsed();
    sender.quit();
    // Frames still in the DUT arrive within a moment.
    let mut rx = None;
    if let (Some(name), Some(before)) = (&opts.rx, counter_before) {
        let mut last = super::xdp::rx_counter(name)?;
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = super::xdp::rx_counter(name)?;
            if now == last {
                break;
            }
            last = now;
        }
        rx = Some(last - before);
    }
    if let Some(mut r) = receiver {
        std::thread::sleep(Duration::from_millis(300));
        rx = Some(r.stop()?.rx_packets);
        r.quit();
    }
    let len = (opts.profile.sizes[0] - FCS_LEN) as u64;
    Ok(Report {
        tx: TxReport {
            packets: sent.tx_packets,
            bytes: sent.tx_packets * len,
            errors: 0,
            queue_full: sent.tx_dropped,
            elapsed,
        },
        rx: rx.map(|packets| RxReport {
            packets,
            bytes: packets * len,
            ..RxReport::default()
        }),
        lanes: 1,
        reverse: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What testpmd 22.11 prints at `stop` with one port.
    const STOP_ONE_PORT: &str = "testpmd> stop
Telling cores to stop...
Waiting for lcores to finish...

  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 0              RX-dropped: 0             RX-total: 0
  TX-packets: 31882944       TX-dropped: 1204          TX-total: 31884148
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 0              RX-dropped: 0             RX-total: 0
  TX-packets: 31882944       TX-dropped: 1204          TX-total: 31884148
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++

Done.
testpmd> ";

    #[test]
    fn stop_counters_parse() {
        let c = parse_stop(STOP_ONE_PORT).unwrap();
        assert_eq!(
            c,
            Counters {
                rx_packets: 0,
                tx_packets: 31_882_944,
                tx_dropped: 1204
            }
        );
        let rx = STOP_ONE_PORT
            .replace("RX-packets: 0 ", "RX-packets: 77 ")
            .replace("TX-packets: 31882944", "TX-packets: 0");
        assert_eq!(parse_stop(&rx).unwrap().rx_packets, 77);
        assert!(parse_stop("testpmd> stop\nPacket forwarding not started\ntestpmd> ").is_err());
    }

    #[test]
    fn txonly_asks_for_the_profiles_flow() {
        let o = crate::gen::args::tests::options("--tx t0 --engine testpmd --size 128").unwrap();
        let a = txonly_args(&o);
        assert!(a.contains(&"--txpkts=124".to_string()), "{a:?}");
        assert!(
            a.contains(&"--tx-ip=198.18.0.1,198.19.0.1".to_string()),
            "{a:?}"
        );
        assert!(
            a.contains(&"--eth-peer=0,02:00:00:00:00:02".to_string()),
            "{a:?}"
        );
    }
}
