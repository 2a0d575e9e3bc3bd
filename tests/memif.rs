//! memif: sluice against itself and against DPDK's net_memif (testpmd), in both roles and
//! both directions; frames arrive byte-identical (jumbo frames chained across descriptors
//! included) and counts match. A peer killed mid-traffic takes the link down, every buffer
//! comes back to the pool, and traffic resumes when the peer returns. The generator can
//! serve a client DUT, which copies nothing when it lends its pool (`show hardware` says so);
//! a client copies by default.

mod common;
use common::frames::{frame, write_pcap};
use common::*;
use sluice::drivers::pcap::file::read_file;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// One memif test at a time: testpmd and two daemons at once starve two cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const TESTPMD: &str = "dpdk-testpmd";

fn have_testpmd() -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {TESTPMD}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Mixed sizes, jumbo frames (several descriptors each) among them.
fn frames(n: usize, seed: u32) -> Vec<Vec<u8>> {
    let sizes = [60, 128, 512, 1514, 2049, 4000, 9014];
    (0..n)
        .map(|i| frame(sizes[i % sizes.len()], seed ^ i as u32))
        .collect()
}

fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    read_file(path)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|r| r.data)
        .collect()
}

/// A sluice config: p0 replays `input` (held down until the test raises it) into m0;
/// what m0 receives is written to `output` by p1.
fn sluice_config(
    dir: &Path,
    tag: &str,
    role: &str,
    socket: &Path,
    input: &Path,
    output: &Path,
) -> (PathBuf, PathBuf) {
    let ctl = dir.join(format!("{tag}.sock"));
    let cfg = dir.join(format!("{tag}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"p0\"\ndriver = \"pcap\"\nrx-file = \"{}\"\nstate = \"down\"\n\
             [[interface]]\nname = \"m0\"\ndriver = \"memif\"\nsocket = \"{}\"\nrole = \"{role}\"\nring-size = 1024\n\
             [[interface]]\nname = \"p1\"\ndriver = \"pcap\"\ntx-file = \"{}\"\n\
             [[xconnect]]\nrx = \"p0\"\ntx = \"m0\"\n[[xconnect]]\nrx = \"m0\"\ntx = \"p1\"\n",
            ctl.display(),
            input.display(),
            socket.display(),
            output.display()
        ),
    )
    .unwrap();
    (cfg, ctl)
}

/// Start `sluice run` outside any namespace (memif needs none).
fn start_daemon(cfg: &Path, ctl: &Path) -> Daemon {
    let child = Command::new(BIN)
        .args(["run", "-c", cfg.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let d = Daemon { child };
    let deadline = Instant::now() + Duration::from_secs(15);
    while ctl_result(ctl).is_err() {
        assert!(Instant::now() < deadline, "daemon did not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
    d
}

fn ctl_result(ctl: &Path) -> Result<String, String> {
    ctl_raw(ctl, "show version")
}

fn ctl_raw(ctl: &Path, line: &str) -> Result<String, String> {
    common::ctl(ctl, line)
}

fn interface(ctl: &Path, name: &str) -> serde_json::Value {
    let list = ctl_json(ctl, "show interface");
    list.as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .cloned()
        .unwrap()
}

fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Like `wait_for`, with the daemon's counters in the failure message.
fn wait_showing(ctl: &Path, what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        if Instant::now() > deadline {
            panic!(
                "timed out waiting for {what}:\n{}\n{}\n{}",
                ctl_raw(ctl, "show interface").unwrap_or_default(),
                ctl_raw(ctl, "show hardware m0").unwrap_or_default(),
                ctl_raw(ctl, "show errors").unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// testpmd with one memif port and one pcap port, io forwarding between them, driven from
/// its prompt (so forwarding starts when the test says).
struct Testpmd {
    child: Child,
    stdin: ChildStdin,
    prefix: String,
}

/// DPDK leaves its runtime directory behind (always when killed): remove it.
fn forget_runtime(prefix: &str) {
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
}

impl Testpmd {
    fn start(tag: &str, role: &str, socket: &Path, rx_pcap: &Path, tx_pcap: &Path) -> Testpmd {
        let prefix = format!("sluice-memif-{tag}-{}", std::process::id());
        let mut child = Command::new(TESTPMD)
            .args(["--no-huge", "-m", "512", "--no-pci", "--file-prefix"])
            .arg(&prefix)
            .args(["-l", "0,1", "--vdev"])
            .arg(format!(
                "net_memif0,role={role},socket={},socket-abstract=no,rsize=11",
                socket.display()
            ))
            .arg("--vdev")
            .arg(format!(
                "net_pcap0,rx_pcap={},tx_pcap={}",
                rx_pcap.display(),
                tx_pcap.display()
            ))
            .args([
                "--",
                "-i",
                "--no-flush-rx",
                "--forward-mode=io",
                "--total-num-mbufs=16384",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        Testpmd {
            child,
            stdin,
            prefix,
        }
    }

    fn say(&mut self, line: &str) {
        let _ = writeln!(self.stdin, "{line}");
        let _ = self.stdin.flush();
    }

    /// Stop forwarding and quit, so the pcap port writes its file out.
    fn quit(mut self) {
        self.say("stop");
        self.say("quit");
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
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
        forget_runtime(&self.prefix);
    }
}

/// sluice's client lends its buffer pool (`zero-copy = true`) instead of copying.
fn lend_pool(cfg: &Path) {
    let text = std::fs::read_to_string(cfg).unwrap();
    let text = text.replace(
        "role = \"client\"\n",
        "role = \"client\"\nzero-copy = true\n",
    );
    std::fs::write(cfg, text).unwrap();
}

/// m0 on DPDK's net_memif through sluice's dpdk driver instead of sluice's memif driver.
fn through_dpdk(cfg: &Path, role: &str, socket: &Path) {
    let text = std::fs::read_to_string(cfg).unwrap();
    let ours = format!(
        "driver = \"memif\"\nsocket = \"{}\"\nrole = \"{role}\"\nring-size = 1024\n",
        socket.display()
    );
    let dpdk = format!(
        "driver = \"dpdk\"\ndevargs = \"net_memif0,role={role},socket={},socket-abstract=no\"\n\
         mtu = 9000\n",
        socket.display()
    );
    assert!(text.contains(&ours), "{text}");
    std::fs::write(cfg, text.replace(&ours, &dpdk)).unwrap();
}

/// How sluice's m0 speaks memif: its own driver copying, its own driver lending its pool, or
/// DPDK's net_memif through its dpdk driver.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Memif {
    Copying,
    Lending,
    Dpdk,
}

/// Frames both ways between sluice in `role` (its m0 as `how` says) and testpmd in the other
/// role.
fn with_testpmd(role: &str, how: Memif) {
    let zero_copy = how == Memif::Lending;
    let dir = tmpdir(&format!("memif-tp-{role}-{how:?}"));
    let socket = dir.join("memif.sock");
    // Fewer descriptors than a ring holds: testpmd drops what does not fit (no back-pressure).
    let (to_tp, from_tp) = (frames(400, 1), frames(300, 2));
    let (sl_in, sl_out) = (dir.join("sl-in.pcap"), dir.join("sl-out.pcap"));
    let (tp_in, tp_out) = (dir.join("tp-in.pcap"), dir.join("tp-out.pcap"));
    write_pcap(&sl_in, &to_tp);
    write_pcap(&tp_in, &from_tp);
    let (cfg, ctl) = sluice_config(&dir, "sl", role, &socket, &sl_in, &sl_out);
    if zero_copy {
        lend_pool(&cfg);
    }
    if how == Memif::Dpdk {
        through_dpdk(&cfg, role, &socket);
    }
    let peer_role = if role == "client" { "server" } else { "client" };
    // The server listens first.
    let (mut daemon, mut tp);
    if role == "server" {
        daemon = start_daemon(&cfg, &ctl);
        tp = Testpmd::start(role, peer_role, &socket, &tp_in, &tp_out);
    } else {
        tp = Testpmd::start(role, peer_role, &socket, &tp_in, &tp_out);
        wait_for("testpmd's socket", 30, || socket.exists());
        if how == Memif::Dpdk {
            // DPDK's net_memif client connects once, when its port starts; testpmd's server
            // names its interface only once its own port has started, a moment after the
            // socket appears ("ID not found" before).
            std::thread::sleep(Duration::from_secs(2));
        }
        daemon = start_daemon(&cfg, &ctl);
    }
    wait_for("the memif link", 30, || {
        interface(&ctl, "m0")["link"] == "up"
    });
    let hw = ctl_json(&ctl, "show hardware m0");
    if how == Memif::Dpdk {
        assert_eq!(hw[0]["details"]["pmd"], "net_memif", "{hw}");
    } else {
        assert_eq!(hw[0]["details"]["role"], role, "{hw}");
    }
    // testpmd forwards from now on: its pcap file comes to us, and it takes ours.
    tp.say("start");
    std::thread::sleep(Duration::from_millis(500));
    assert!(ctl_raw(&ctl, "set interface state p0 up").is_ok());
    wait_showing(&ctl, "sluice to send its frames", 30, || {
        interface(&ctl, "m0")["tx_packets"] == to_tp.len() as u64
    });
    wait_showing(&ctl, "testpmd's frames", 30, || {
        interface(&ctl, "p1")["tx_packets"] == from_tp.len() as u64
    });
    let m0 = interface(&ctl, "m0");
    assert_eq!(m0["rx_packets"], from_tp.len() as u64, "{m0}");
    assert_eq!(m0["tx_errors"], 0, "{m0}");
    assert_eq!(m0["drops"], 0, "{m0}");
    tp.quit();
    wait_for("the link to go down", 10, || {
        interface(&ctl, "m0")["link"] == "down"
    });
    let buffers = ctl_json(&ctl, "show buffers");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    assert_eq!(read_pcap(&tp_out), to_tp, "sluice -> testpmd ({role})");
    assert_eq!(read_pcap(&sl_out), from_tp, "testpmd -> sluice ({role})");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn interop_with_testpmd_as_client_and_as_server() {
    if !needs_root() || !prerequisite(have_testpmd(), "dpdk-testpmd (scripts/test.sh installs it)")
    {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_testpmd("client", Memif::Copying);
    with_testpmd("client", Memif::Lending);
    with_testpmd("server", Memif::Copying);
}

/// sluice's dpdk driver on DPDK's net_memif, against testpmd's net_memif in the other role,
/// both ways, jumbo frames included.
#[test]
fn sluice_dpdk_net_memif_with_testpmd_in_both_roles() {
    if !needs_root()
        || !prerequisite(have_testpmd(), "dpdk-testpmd (scripts/test.sh installs it)")
        || !prerequisite(
            sluice::drivers::dpdk::BUILT,
            sluice::drivers::dpdk::NOT_BUILT,
        )
    {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_testpmd("client", Memif::Dpdk);
    with_testpmd("server", Memif::Dpdk);
}

#[test]
fn sluice_to_sluice_both_roles_both_ways() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    sluice_to_sluice(false);
    sluice_to_sluice(true);
}

/// sluice as server and as client (copying, or lending its pool when `zero_copy`).
fn sluice_to_sluice(zero_copy: bool) {
    let dir = tmpdir(&format!("memif-sl-{zero_copy}"));
    let socket = dir.join("memif.sock");
    let (a_frames, b_frames) = (frames(500, 3), frames(400, 4));
    let (a_in, a_out, b_in, b_out) = (
        dir.join("a-in.pcap"),
        dir.join("a-out.pcap"),
        dir.join("b-in.pcap"),
        dir.join("b-out.pcap"),
    );
    write_pcap(&a_in, &a_frames);
    write_pcap(&b_in, &b_frames);
    let (a_cfg, a_ctl) = sluice_config(&dir, "a", "server", &socket, &a_in, &a_out);
    let (b_cfg, b_ctl) = sluice_config(&dir, "b", "client", &socket, &b_in, &b_out);
    if zero_copy {
        lend_pool(&b_cfg);
    }
    let mut a = start_daemon(&a_cfg, &a_ctl);
    let mut b = start_daemon(&b_cfg, &b_ctl);
    wait_for("the memif link", 10, || {
        interface(&a_ctl, "m0")["link"] == "up" && interface(&b_ctl, "m0")["link"] == "up"
    });
    assert!(ctl_raw(&a_ctl, "set interface state p0 up").is_ok());
    assert!(ctl_raw(&b_ctl, "set interface state p0 up").is_ok());
    let done = || {
        interface(&a_ctl, "p1")["tx_packets"] == b_frames.len() as u64
            && interface(&b_ctl, "p1")["tx_packets"] == a_frames.len() as u64
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        if Instant::now() > deadline {
            let state = |c: &Path| {
                format!(
                    "{}\n{}",
                    ctl_raw(c, "show interface").unwrap_or_default(),
                    ctl_raw(c, "show errors").unwrap_or_default()
                )
            };
            panic!(
                "not all frames went through:\nA {}\nB {}",
                state(&a_ctl),
                state(&b_ctl)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The server (a) copied every frame; the client (b) too, into and out of its own region,
    // unless it lends its pool (then none).
    let moved = (a_frames.len() + b_frames.len()).to_string();
    let copies = |ctl: &Path| {
        let m0 = interface(ctl, "m0");
        let d = &m0["details"];
        (d["frames copied"].clone(), d["frames zero-copy"].clone())
    };
    let client = match zero_copy {
        true => ("0".into(), moved.clone().into()),
        false => (moved.clone().into(), "0".into()),
    };
    assert_eq!(copies(&b_ctl), client, "client, zero-copy {zero_copy}");
    assert_eq!(copies(&a_ctl), (moved.into(), "0".into()), "server");
    assert!(a.stop() && b.stop());
    assert_eq!(read_pcap(&b_out), a_frames, "server -> client");
    assert_eq!(read_pcap(&a_out), b_frames, "client -> server");
    std::fs::remove_dir_all(&dir).ok();
}

/// testpmd generating traffic (txonly) into sluice: killed mid-traffic, restarted.
fn peer_loss(role: &str) {
    let dir = tmpdir(&format!("memif-loss-{role}"));
    let socket = dir.join("memif.sock");
    let input = dir.join("in.pcap");
    write_pcap(&input, &frames(10, 5));
    let (cfg, ctl) = sluice_config(&dir, "sl", role, &socket, &input, &dir.join("out.pcap"));
    // Nothing is written out: drop what arrives instead of filling a file.
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("[[xconnect]]\nrx = \"m0\"\ntx = \"p1\"\n", "");
    std::fs::write(&cfg, text).unwrap();
    let peer_role = if role == "client" { "server" } else { "client" };
    let loss_prefix = |n: u32| format!("sluice-loss-{role}-{n}-{}", std::process::id());
    let txonly = |n: u32| {
        Command::new(TESTPMD)
            .args(["--no-huge", "-m", "512", "--no-pci", "--file-prefix"])
            .arg(loss_prefix(n))
            .args(["-l", "0,1", "--vdev"])
            .arg(format!(
                "net_memif0,role={peer_role},socket={},socket-abstract=no",
                socket.display()
            ))
            .args([
                "--",
                "--forward-mode=txonly",
                "--total-num-mbufs=16384",
                "--auto-start",
            ])
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(dir.join(format!("testpmd-{n}.log"))).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut daemon;
    let mut tp;
    if role == "server" {
        daemon = start_daemon(&cfg, &ctl);
        tp = txonly(1);
    } else {
        tp = txonly(1);
        wait_for("testpmd's socket", 30, || socket.exists());
        daemon = start_daemon(&cfg, &ctl);
    }
    let idle = ctl_json(&ctl, "show buffers")["in_use"].as_u64().unwrap();
    wait_for("traffic", 30, || {
        interface(&ctl, "m0")["rx_packets"].as_u64().unwrap() > 10_000
    });
    // The peer dies without a word.
    tp.kill().unwrap();
    tp.wait().unwrap();
    forget_runtime(&loss_prefix(1));
    wait_for("the link to go down", 10, || {
        interface(&ctl, "m0")["link"] == "down"
    });
    // Every buffer the rings held is back (a worker lets go at its next poll).
    wait_for("buffers back to idle", 10, || {
        let b = ctl_json(&ctl, "show buffers");
        b["unaccounted"] == 0 && b["in_use"].as_u64().unwrap() <= idle
    });
    let before = interface(&ctl, "m0")["rx_packets"].as_u64().unwrap();
    if role == "client" {
        // A killed testpmd leaves its socket file, and a new one will not bind over it; our
        // client meanwhile keeps knocking (connection refused) once a second.
        std::thread::sleep(Duration::from_millis(1500));
        std::fs::remove_file(&socket).ok();
    }
    let mut tp = txonly(2);
    let deadline = Instant::now() + Duration::from_secs(30);
    while interface(&ctl, "m0")["link"] != "up" {
        if Instant::now() > deadline {
            panic!(
                "the peer did not return:\n{}\ntestpmd: {}",
                ctl_raw(&ctl, "show hardware m0").unwrap_or_default(),
                std::fs::read_to_string(dir.join("testpmd-2.log")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_for("traffic to resume", 30, || {
        interface(&ctl, "m0")["rx_packets"].as_u64().unwrap() > before + 10_000
    });
    let hw = ctl_json(&ctl, "show hardware m0");
    assert_eq!(hw[0]["details"]["connects"], "2", "{hw}");
    let _ = tp.kill();
    let _ = tp.wait();
    forget_runtime(&loss_prefix(2));
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn peer_killed_and_back() {
    if !needs_root() || !prerequisite(have_testpmd(), "dpdk-testpmd (scripts/test.sh installs it)")
    {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    peer_loss("server");
    peer_loss("client");
}

/// A broken peer: every malformed or out-of-range control message is answered with a
/// DISCONNECT that says why, the daemon stays up, and a good peer connects afterwards.
#[test]
fn malformed_control_messages_are_refused() {
    use sluice::drivers::memif::proto::{AddRegion, AddRing, Init, Msg, VERSION};
    use sluice::drivers::memif::socket::Channel;
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("memif-bad");
    let socket = dir.join("memif.sock");
    let input = dir.join("in.pcap");
    write_pcap(&input, &frames(3, 6));
    let (cfg, ctl) = sluice_config(&dir, "sl", "server", &socket, &input, &dir.join("out.pcap"));
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("role = \"server\"\n", "role = \"server\"\nid = 9\n");
    std::fs::write(&cfg, text).unwrap();
    let mut daemon = start_daemon(&cfg, &ctl);
    let init = |id: u32, version: u16| Init {
        version,
        id,
        mode: 0,
        secret: String::new(),
        name: "broken".into(),
    };
    // A region of 4096 bytes, for the ring checks.
    let region = {
        let name = std::ffi::CString::new("t").unwrap();
        // SAFETY: a test memfd, checked and owned right away.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_ALLOW_SEALING) };
        assert!(fd >= 0);
        // SAFETY: our own descriptor.
        unsafe {
            libc::ftruncate(fd, 4096);
            libc::fcntl(fd, 1033, 0x0002 | 0x0004);
        }
        fd
    };
    type Script = Box<dyn Fn(&Channel)>;
    let good_init = move |c: &Channel| {
        c.send(&Msg::Init(init(9, VERSION)), None).unwrap();
        assert!(matches!(c.recv().unwrap().0, Msg::Ack));
    };
    let cases: Vec<(&str, Script)> = vec![
        (
            "bytes",
            Box::new(|c| c.send_bytes(&[3, 0, 0, 2], None).unwrap()),
        ),
        (
            "unknown message type",
            Box::new(|c| {
                let mut b = [0u8; 128];
                b[0] = 200;
                c.send_bytes(&b, None).unwrap()
            }),
        ),
        (
            "unknown interface id",
            Box::new(move |c| c.send(&Msg::Init(init(1, VERSION)), None).unwrap()),
        ),
        (
            "version",
            Box::new(move |c| c.send(&Msg::Init(init(9, 0x0100)), None).unwrap()),
        ),
        (
            "without a descriptor",
            Box::new(move |c| {
                good_init(c);
                c.send(
                    &Msg::AddRegion(AddRegion {
                        index: 0,
                        size: 4096,
                    }),
                    None,
                )
                .unwrap()
            }),
        ),
        (
            "out of order",
            Box::new(move |c| {
                good_init(c);
                c.send(
                    &Msg::AddRegion(AddRegion {
                        index: 3,
                        size: 4096,
                    }),
                    Some(region),
                )
                .unwrap()
            }),
        ),
        (
            "file has",
            Box::new(move |c| {
                good_init(c);
                c.send(
                    &Msg::AddRegion(AddRegion {
                        index: 0,
                        size: 1 << 30,
                    }),
                    Some(region),
                )
                .unwrap()
            }),
        ),
        (
            "does not fit region",
            Box::new(move |c| {
                good_init(c);
                c.send(
                    &Msg::AddRegion(AddRegion {
                        index: 0,
                        size: 4096,
                    }),
                    Some(region),
                )
                .unwrap();
                assert!(matches!(c.recv().unwrap().0, Msg::Ack));
                let ring = AddRing {
                    c2s: true,
                    index: 0,
                    region: 0,
                    offset: 4032,
                    log2_size: 10,
                    private_hdr_size: 0,
                };
                c.send(&Msg::AddRing(ring), Some(region)).unwrap()
            }),
        ),
        (
            "unknown region",
            Box::new(move |c| {
                good_init(c);
                let ring = AddRing {
                    c2s: true,
                    index: 0,
                    region: 5,
                    offset: 0,
                    log2_size: 4,
                    private_hdr_size: 0,
                };
                c.send(&Msg::AddRing(ring), Some(region)).unwrap()
            }),
        ),
        (
            "CONNECT before a ring",
            Box::new(move |c| {
                good_init(c);
                c.send(&Msg::Connect { name: "x".into() }, None).unwrap()
            }),
        ),
    ];
    for (reason, script) in cases {
        let c = Channel::connect(&socket).unwrap();
        assert!(matches!(c.recv().unwrap().0, Msg::Hello(_)));
        script(&c);
        match c.recv() {
            Ok((Msg::Disconnect { reason: r, .. }, _)) => {
                assert!(r.contains(reason), "expected '{reason}', got '{r}'")
            }
            other => panic!("expected a DISCONNECT for '{reason}', got {other:?}"),
        }
        assert!(ctl_result(&ctl).is_ok(), "daemon died on '{reason}'");
    }
    // SAFETY: closing the test's own memfd.
    unsafe { libc::close(region) };
    let hw = ctl_json(&ctl, "show hardware m0");
    assert!(
        hw[0]["details"]["last-error"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{hw}"
    );
    // A well-behaved peer still gets in.
    let (b_cfg, b_ctl) = sluice_config(&dir, "b", "client", &socket, &input, &dir.join("b.pcap"));
    let text = std::fs::read_to_string(&b_cfg)
        .unwrap()
        .replace("role = \"client\"\n", "role = \"client\"\nid = 9\n");
    std::fs::write(&b_cfg, text).unwrap();
    let mut b = start_daemon(&b_cfg, &b_ctl);
    wait_for("a good peer", 10, || interface(&ctl, "m0")["link"] == "up");
    assert!(b.stop() && daemon.stop());
    std::fs::remove_dir_all(&dir).ok();
}

/// `sluice gen` as the memif server of both ports (server:PATH) and sluice as a client
/// cross-connecting them, lending its pool (`zero-copy = true`): every frame goes through,
/// and the client's counters show that it copied none of them.
#[test]
fn the_generator_serves_a_client_dut_that_copies_nothing() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("memif-gs");
    let (m0, m1) = (dir.join("m0.sock"), dir.join("m1.sock"));
    let ctl = dir.join("dut.sock");
    let cfg = dir.join("dut.toml");
    let port = |name: &str, socket: &Path| {
        format!(
            "[[interface]]\nname = \"{name}\"\ndriver = \"memif\"\nsocket = \"{}\"\nrole = \"client\"\nzero-copy = true\n",
            socket.display()
        )
    };
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n{}{}\
             [[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n",
            ctl.display(),
            port("d0", &m0),
            port("d1", &m1)
        ),
    )
    .unwrap();
    // The generator listens first; the DUT's clients connect (and retry) after.
    let gen = Command::new(BIN)
        .args(["gen", "--io", "memif", "--count", "2000", "--rate", "20000"])
        .args(["--json", "--quiet", "--tx"])
        .arg(format!("server:{}", m0.display()))
        .arg("--rx")
        .arg(format!("server:{}", m1.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut dut = start_daemon(&cfg, &ctl);
    let out = gen.wait_with_output().unwrap();
    let r = common::json_output(&out);
    assert_eq!(r["rx_packets"], 2000, "{r}");
    for (name, dir) in [("d0", "received"), ("d1", "sent")] {
        let i = interface(&ctl, name);
        let d = &i["details"];
        assert_eq!(d["role"], "client", "{i}");
        assert_eq!(d["frames zero-copy"], "2000", "{name} {dir}: {i}");
        assert_eq!(d["frames copied"], "0", "{name}: {i}");
    }
    assert!(dut.stop());
    std::fs::remove_dir_all(&dir).ok();
}
