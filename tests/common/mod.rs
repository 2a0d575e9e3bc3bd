//! Helpers for tests that move packets through network namespaces: every namespace a test
//! makes is removed when its guard drops, whether the test passed or not.
#![allow(dead_code)]

pub mod bridge;
pub mod cases;
pub mod fastpath;
pub mod frames;
pub mod routed;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// Whether a test's prerequisite holds. When it does not: under CI (`CI=true`) the test
/// fails, since a test that did not run must not count as passed; elsewhere it says plainly
/// that it is skipped and the caller returns.
pub fn prerequisite(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "CI=true and a prerequisite is missing: {what}");
    eprintln!("SKIPPED (not under CI): {what}");
    false
}

/// `prerequisite(is_root(), ...)` for tests that create namespaces.
pub fn needs_root() -> bool {
    prerequisite(is_root(), "root, to create network namespaces")
}

/// Whether we may create namespaces.
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Run a command, panicking with its stderr when it fails.
pub fn sh(cmd: &str, args: &[&str]) -> Output {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        o.status.success(),
        "{cmd} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A network namespace that is deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new(tag: &str) -> Netns {
        let name = format!("slt-{tag}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        sh("ip", &["netns", "add", &name]);
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// `ip -n NS ARGS`.
    pub fn ip(&self, args: &[&str]) -> Output {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        sh("ip", &a)
    }

    /// Run a command inside the namespace.
    pub fn exec(&self, cmd: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, cmd]).args(args);
        c
    }

    /// Turn off offloads that would hide per-packet work (best effort: ethtool may lack some).
    pub fn offloads_off(&self, dev: &str) {
        let _ = self
            .exec(
                "ethtool",
                &[
                    "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off",
                ],
            )
            .output();
    }

    /// A veth pair inside this namespace, both ends up, IPv6 off, offloads off.
    pub fn veth_pair(&self, a: &str, b: &str) {
        self.ip(&["link", "add", a, "type", "veth", "peer", "name", b]);
        for d in [a, b] {
            self.sysctl(&format!("net.ipv6.conf.{d}.disable_ipv6"), "1");
            self.ip(&["link", "set", d, "up"]);
            self.offloads_off(d);
        }
    }

    pub fn sysctl(&self, key: &str, value: &str) {
        let _ = self
            .exec("sysctl", &["-qw", &format!("{key}={value}")])
            .output();
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// A veth pair `a` (in `na`) – `b` (in `nb`), both up, with `mtu`, IPv6 off, offloads off.
pub fn veth(na: &Netns, a: &str, nb: &Netns, b: &str, mtu: u32) {
    sh(
        "ip",
        &[
            "link", "add", a, "netns", &na.name, "type", "veth", "peer", "name", b, "netns",
            &nb.name,
        ],
    );
    for (ns, dev) in [(na, a), (nb, b)] {
        ns.sysctl(&format!("net.ipv6.conf.{dev}.disable_ipv6"), "1");
        ns.ip(&["link", "set", dev, "mtu", &mtu.to_string(), "up"]);
        ns.offloads_off(dev);
    }
}

/// The two-namespace lab: a tester namespace with ports t0, t1, ... and a DUT namespace with
/// d0, d1, ... (veth pairs tK-dK), and a directory for the DUT's files.
pub struct Lab {
    pub tester: Netns,
    pub dut: Netns,
    pub dir: PathBuf,
}

impl Lab {
    /// Namespaces tagged `tester` and `dut` (see `Netns::new`) joined by `ports` veth pairs
    /// of `mtu`, and `tmpdir(dir)`.
    pub fn new(tester: &str, dut: &str, ports: usize, mtu: u32, dir: &str) -> Lab {
        let tester = Netns::new(tester);
        let dut = Netns::new(dut);
        for k in 0..ports {
            veth(&tester, &format!("t{k}"), &dut, &format!("d{k}"), mtu);
        }
        Lab {
            tester,
            dut,
            dir: tmpdir(dir),
        }
    }
}

/// A process stopped with SIGINT (then SIGKILL after 5 s) when dropped.
pub struct Daemon {
    pub child: Child,
}

impl Daemon {
    /// Start `sluice run -c cfg` in `ns` and wait for its control socket.
    pub fn start(ns: &Netns, cfg: &Path, socket: &Path) -> Daemon {
        Daemon::spawn(ns.exec(BIN, &["run", "-c", cfg.to_str().unwrap()]), socket)
    }

    /// Start `sluice run -c cfg` in the test's own namespace (pcap and null interfaces need
    /// no other) and wait for its control socket.
    pub fn start_here(cfg: &Path, socket: &Path) -> Daemon {
        let mut run = Command::new(BIN);
        run.args(["run", "-c", cfg.to_str().unwrap()]);
        Daemon::spawn(run, socket)
    }

    /// Start `run` (a `sluice run` command, with the environment the test gives it) and wait
    /// for its control socket.
    pub fn spawn(mut run: Command, socket: &Path) -> Daemon {
        let child = run.stderr(Stdio::piped()).spawn().unwrap();
        let mut d = Daemon { child };
        let deadline = Instant::now() + Duration::from_secs(15);
        while !socket.exists() || ctl(socket, "show version").is_err() {
            if let Ok(Some(status)) = d.child.try_wait() {
                let mut err = String::new();
                use std::io::Read;
                d.child.stderr.take().unwrap().read_to_string(&mut err).ok();
                panic!("daemon exited with {status}: {err}");
            }
            assert!(
                Instant::now() < deadline,
                "daemon did not answer on {}",
                socket.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        drain_stderr(&mut d);
        d
    }

    /// What the daemon wrote on stderr since it answered (all of it once it has exited).
    pub fn stderr_text(&self) -> String {
        let logs = LOGS.lock().unwrap_or_else(|p| p.into_inner());
        logs.iter()
            .find(|(pid, _)| *pid == self.child.id())
            .map(|(_, l)| String::from_utf8_lossy(&l.lock().unwrap()).into_owned())
            .unwrap_or_default()
    }

    /// Stop with SIGINT; returns whether it exited cleanly.
    pub fn stop(&mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// The stderr of each daemon `Daemon::spawn` started, by pid, read as it comes: a daemon
/// logs every change there, and a pipe nobody reads would fill and stall it.
type Log = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;
static LOGS: std::sync::Mutex<Vec<(u32, Log)>> = std::sync::Mutex::new(Vec::new());

fn drain_stderr(d: &mut Daemon) {
    let Some(mut err) = d.child.stderr.take() else {
        return;
    };
    let log: Log = Default::default();
    LOGS.lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((d.child.id(), log.clone()));
    std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            log.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
}

/// `sluice ctl -s SOCKET LINE` → stdout, or the error.
pub fn ctl(socket: &Path, line: &str) -> Result<String, String> {
    let mut args = vec!["ctl", "-s", socket.to_str().unwrap()];
    args.extend(line.split_whitespace());
    let o = Command::new(BIN)
        .args(&args)
        .output()
        .map_err(|e| e.to_string())?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// `ctl LINE --json`, parsed.
pub fn ctl_json(socket: &Path, line: &str) -> serde_json::Value {
    let out = ctl(socket, &format!("{line} --json")).unwrap();
    serde_json::from_str(&out).unwrap()
}

/// `text` with `from` replaced by `to` (which must be there): a config file edited.
pub fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from} in {text}");
    text.replacen(from, to, 1)
}

/// The entries `ctl diff FILE` names as changed, and its whole answer (for messages).
pub fn diff_entries(socket: &Path, file: &Path) -> (Vec<String>, serde_json::Value) {
    let d = ctl_json(socket, &format!("diff {}", file.display()));
    let entries = d["changes"]
        .as_array()
        .expect("diff --json has changes")
        .iter()
        .map(|c| c["entry"].as_str().unwrap().to_string())
        .collect();
    (entries, d)
}

/// A saved file without its first line (it has the date).
pub fn save_body(text: &str) -> &str {
    text.split_once('\n')
        .expect("a saved file starts with its date line")
        .1
}

/// `ctl save` without its first line.
pub fn saved(socket: &Path) -> String {
    save_body(&ctl(socket, "save").unwrap()).to_string()
}

/// An empty directory `sluice-TAG-PID` (one left by an earlier run of the same pid goes).
pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `sluice gen ARGS --json --quiet` in `ns`, to run or to spawn beside the test.
pub fn gen_command(ns: &Netns, args: &[&str]) -> Command {
    let mut all = vec!["gen"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--quiet"]);
    ns.exec(BIN, &all)
}

/// Run `sluice gen ARGS --json --quiet` in `ns`, require it to succeed and return its
/// summary.
#[allow(dead_code)] // not every test binary sends with the generator
pub fn gen_json(ns: &Netns, args: &[&str]) -> serde_json::Value {
    json_output(&gen_command(ns, args).output().unwrap())
}

/// `sluice gen` in `ns` from port `tx` to port `rx`: `count` frames of mixed sizes (64 to
/// 1514 bytes) over 16 flows at `rate` a second; its JSON summary.
pub fn gen_mixed_sizes(
    ns: &Netns,
    (tx, rx): (&str, &str),
    count: u64,
    rate: u32,
) -> serde_json::Value {
    let (count, rate) = (count.to_string(), rate.to_string());
    let sizes = "64,128,256,512,1024,1514";
    gen_json(
        ns,
        &[
            "--tx", tx, "--rx", rx, "--size", sizes, "--flows", "16", "--count", &count, "--rate",
            &rate,
        ],
    )
}

/// The JSON a command printed, once it succeeded (its stderr, or what it printed that is not
/// JSON, in the panic if not).
#[allow(dead_code)] // not every test binary reads a command's JSON
pub fn json_output(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The vectors `node` handled on each worker, from the JSON of `show runtime` (0 on a worker
/// without it).
pub fn vectors_by_worker(runtime: &serde_json::Value, node: &str) -> Vec<u64> {
    runtime["threads"]
        .as_array()
        .expect("show runtime --json has threads")
        .iter()
        .map(|t| {
            t["nodes"]
                .as_array()
                .expect("each thread has nodes")
                .iter()
                .filter(|n| n["name"] == node)
                .map(|n| n["vectors"].as_u64().unwrap_or(0))
                .sum()
        })
        .collect()
}

/// `v` without the keys in `volatile`, at any depth: counters and ages that differ between
/// two daemons in the same state.
pub fn without_keys(v: &mut serde_json::Value, volatile: &[&str]) {
    match v {
        serde_json::Value::Object(m) => {
            for k in volatile {
                m.remove(*k);
            }
            m.values_mut().for_each(|v| without_keys(v, volatile));
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|v| without_keys(v, volatile)),
        _ => {}
    }
}

/// A daemon's configured state, to compare with another's (tests/apply.rs, tests/save.rs):
/// each of these `show` commands without the `VOLATILE` keys.
pub const SHOWN: &[&str] = &[
    "show interface",
    "show ip fib",
    "show ip6 fib",
    "show ip fib table 7",
    "show ip table",
    "show bridge-domain",
    "show l2fib",
    "show acl",
    "show interface rx-placement",
    "show interface handoff",
    "show ip neighbors",
];

/// Keys that say what happened since start, not what is configured (counters, ages,
/// indices, memory).
pub const VOLATILE: &[&str] = &[
    "index",
    "adjacency",
    "memory_bytes",
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "drops",
    "tx_errors",
    "tx_peer_full",
    "rx_miss",
    "age_s",
    // A neighbour's seconds in its state and since confirmed.
    "age",
    "confirmed",
    "hits",
    "no_match",
    "learnt",
    "moves",
    "aged",
    "over_limit",
    "learn_batches_lost",
    "learns_refused",
    "details",
    "load",
    "vectors",
    "calls",
];

/// The configured state of the daemon on `socket`: `shown_state(socket, SHOWN, VOLATILE)`.
pub fn snapshot(socket: &Path) -> Vec<(String, serde_json::Value)> {
    shown_state(socket, SHOWN, VOLATILE)
}

/// What each `show` command in `shown` says (JSON), without the `volatile` keys: a daemon's
/// state to compare with another's.
pub fn shown_state(
    socket: &Path,
    shown: &[&str],
    volatile: &[&str],
) -> Vec<(String, serde_json::Value)> {
    shown
        .iter()
        .map(|c| {
            let mut v = ctl_json(socket, c);
            without_keys(&mut v, volatile);
            (c.to_string(), v)
        })
        .collect()
}
