//! FD.io VPP as a lab DUT: `vpp` cross-connecting d0 and d1 (`l2 xconnect`) and `vpp-router`
//! routing between them, over af_packet host interfaces, af_xdp or memif, the worker on the
//! DUT CPU. VPP is not packaged in Debian: it runs when `vpp` and `vppctl` are on the PATH
//! (built from FD.io's public source), and the lab says so plainly when they are not.
//!
//! VPP gets a startup.conf of its own (no DPDK, no PCI, buffers and heap on normal pages, its
//! sockets and shared memory under names of the lab's), runs in the DUT namespace, and is
//! configured and read with `vppctl` over its CLI socket. `show runtime` and `show interface`
//! are parsed into the JSON shapes sluice's own commands give, so the lab's report shows VPP's
//! clocks per node beside sluice's.

use super::{mac_of, on_path, routed_gen_args, signal_child, Dut, DutSpec, ANY_IO};
use crate::gen::port::Io;
use crate::lab::memif_socket;
use crate::lab::netns::{in_ns, run, DUT, TESTER};
use crate::lab::plan;
use crate::lab::table::TableFiles;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const VPP: &str = "vpp";
pub const VPPCTL: &str = "vppctl";

/// `vpp`: FD.io VPP cross-connecting d0 and d1 (`l2 xconnect`).
pub const XCONNECT_DUT: DutSpec = DutSpec {
    io: ANY_IO,
    unavailable,
    ..DutSpec::new("vpp", |s| {
        Ok(Box::new(Vpp::start(
            s.dut_cpu,
            s.io,
            None,
            None,
            Vec::new(),
        )?))
    })
};

/// `vpp-router`: FD.io VPP routing between d0 and d1, as linux-router does.
pub const ROUTER_DUT: DutSpec = DutSpec {
    routes: true,
    unavailable,
    ..DutSpec::new("vpp-router", |s| {
        Ok(Box::new(start_router(s.dut_cpu, s.io, s.table)?))
    })
};

/// The plugins the lab uses; every other plugin stays disabled (a full build has ~100).
const PLUGINS: [&str; 4] = ["af_packet", "af_xdp", "memif", "ping"];

/// Why VPP cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    let missing: Vec<&str> = [VPP, VPPCTL].into_iter().filter(|b| !on_path(b)).collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "VPP is not installed ({} not on the PATH). It is not packaged in Debian: build it \
         from FD.io's public source (github.com/FDio/vpp, a release tag) with its af_packet, \
         af_xdp and memif plugins and put vpp and vppctl on the PATH (docs/vpp.md)",
        missing.join(", ")
    ))
}

/// A running VPP.
pub struct Vpp {
    child: Child,
    dir: PathBuf,
    io: Io,
    /// What the generator must be told when VPP routes (router MACs, routed frames).
    gen_args: Vec<String>,
    /// Seconds VPP took to load the synthetic table, if it was given one.
    load_s: Option<f64>,
}

/// VPP's name for lab port `k` over `io`.
pub fn port_name(io: Io, k: usize) -> String {
    match io {
        Io::AfPacket => format!("host-d{k}"),
        Io::AfXdp => format!("xd{k}"),
        Io::Memif => format!("memif{}/0", k + 1),
        // Not a VPP io (its spec does not take it): no port.
        Io::DpdkNull => String::new(),
    }
}

/// The startup.conf for a VPP whose files live in `dir`: main thread on `main_core`, one
/// worker on `worker_core`.
pub fn startup_conf(dir: &Path, main_core: usize, worker_core: usize) -> String {
    let d = dir.display();
    let mut plugins = String::from("  plugin default { disable }\n");
    for p in PLUGINS {
        plugins.push_str(&format!("  plugin {p}_plugin.so {{ enable }}\n"));
    }
    format!(
        "unix {{\n  nodaemon\n  cli-listen {d}/cli.sock\n  log {d}/vpp.log\n  \
         cli-no-pager\n}}\n\
         api-segment {{ prefix sluice-lab-vpp }}\n\
         socksvr {{ socket-name {d}/api.sock }}\n\
         statseg {{ socket-name {d}/stats.sock size 32m page-size 4k }}\n\
         cpu {{ main-core {main_core} corelist-workers {worker_core} }}\n\
         buffers {{ buffers-per-numa 32768 page-size 4k default data-size 2048 }}\n\
         memory {{ main-heap-size 1G main-heap-page-size 4k }}\n\
         plugins {{\n{plugins}}}\n"
    )
}

/// The CLI lines that make VPP's ports over `io`: (line, whether it prints the new name).
fn port_lines(io: Io, k: usize) -> Vec<String> {
    match io {
        // Without the virtio-net header VPP asks for by default: through a TX ring on these
        // kernels it cost every frame its first 10 bytes (seen on Linux 6.18, VPP 26.06),
        // and the lab's frames need no checksum or GSO offload.
        Io::AfPacket => vec![format!("create host-interface name d{k} cksum-gso-disable")],
        Io::AfXdp => vec![format!(
            "create interface af_xdp host-if d{k} name xd{k} num-rx-queues 1 no-zero-copy"
        )],
        Io::DpdkNull => Vec::new(),
        Io::Memif => vec![
            format!(
                "create memif socket id {} filename {}",
                k + 1,
                memif_socket(k).display()
            ),
            format!("create interface memif id 0 socket-id {} master", k + 1),
        ],
    }
}

/// The CLI lines that configure a cross-connect (`routes` false) or the router (`routes`
/// true, with the tester ports' MACs) once the ports exist.
pub fn forwarding_lines(io: Io, routes: Option<(&str, &str, &str, &str)>) -> Vec<String> {
    let (a, b) = (port_name(io, 0), port_name(io, 1));
    let mut lines = Vec::new();
    match routes {
        None => {
            lines.push(format!("set interface l2 xconnect {a} {b}"));
            lines.push(format!("set interface l2 xconnect {b} {a}"));
        }
        Some((d0_mac, d1_mac, t0_mac, t1_mac)) => {
            // The router answers with the veths' own MACs, which the generator addresses.
            lines.push(format!("set interface mac address {a} {d0_mac}"));
            lines.push(format!("set interface mac address {b} {d1_mac}"));
            lines.push(format!("set interface ip address {a} {}", plan::D0_V4));
            lines.push(format!("set interface ip address {b} {}", plan::D1_V4));
            lines.push(format!("enable ip6 interface {a}"));
            lines.push(format!("enable ip6 interface {b}"));
            lines.push(format!("set interface ip address {a} {}", plan::D0_V6));
            lines.push(format!("set interface ip address {b} {}", plan::D1_V6));
            // Fixed neighbours, as linux-router has: no ARP from the tester is needed.
            lines.push(format!(
                "set ip neighbor {a} {} {t0_mac} static",
                plan::T0_V4
            ));
            lines.push(format!(
                "set ip neighbor {b} {} {t1_mac} static",
                plan::T1_V4
            ));
            lines.push(format!(
                "set ip neighbor {a} {} {t0_mac} static",
                plan::T0_V6
            ));
            lines.push(format!(
                "set ip neighbor {b} {} {t1_mac} static",
                plan::T1_V6
            ));
            lines.push(format!(
                "ip route add {} via {} {b}",
                plan::TO_T1,
                plan::T1_V4
            ));
            lines.push(format!(
                "ip route add {} via {} {a}",
                plan::TO_T0,
                plan::T0_V4
            ));
        }
    }
    lines
}

/// A synthetic table (the lab's `ip -batch` file, `route replace P via H`) as VPP CLI lines.
pub fn table_lines(batch: &str) -> Result<String, String> {
    let mut out = String::with_capacity(batch.len());
    for (n, line) in batch.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            [] => {}
            ["route", "replace", prefix, "via", hop] => {
                out.push_str(&format!("ip route add {prefix} via {hop}\n"));
            }
            _ => return Err(format!("table line {}: '{line}' is not a route", n + 1)),
        }
    }
    Ok(out)
}

/// `vppctl -s SOCKET LINE`: its output, or why it failed.
pub fn vppctl(socket: &Path, line: &str) -> Result<String, String> {
    let o = Command::new(VPPCTL)
        .arg("-s")
        .arg(socket)
        .args(line.split_whitespace())
        .output()
        .map_err(|e| format!("{VPPCTL}: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    if !o.status.success() {
        return Err(format!(
            "vppctl {line}: {}{}",
            text.trim(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(text)
}

/// Run a configuration line; VPP's CLI prints nothing when a `set` succeeds, so any output
/// of one is its error. A `create` prints nothing or the new interface's name (one word).
fn configure(socket: &Path, line: &str) -> Result<(), String> {
    let out = vppctl(socket, line)?;
    let text = out.trim();
    let failed = if line.starts_with("create ") {
        text.split_whitespace().count() > 1
    } else {
        !text.is_empty()
    };
    if failed {
        return Err(format!("vpp refused '{line}': {text}"));
    }
    Ok(())
}

/// Start VPP routing between d0 and d1 with `table`'s synthetic routes if any, on the
/// veths' own MACs (which the generator addresses).
pub fn start_router(dut_cpu: usize, io: Io, table: Option<&TableFiles>) -> Result<Vpp, String> {
    let macs = (
        mac_of(DUT, "d0")?,
        mac_of(DUT, "d1")?,
        mac_of(TESTER, "t0")?,
        mac_of(TESTER, "t1")?,
    );
    Vpp::start(dut_cpu, io, Some(table), Some(macs), routed_gen_args()?)
}

impl Vpp {
    /// Start VPP in the DUT namespace over `io`: cross-connecting (`router` None) or routing
    /// (`router` Some, with the synthetic table if any). `gen_args` are the router's.
    pub fn start(
        dut_cpu: usize,
        io: Io,
        router: Option<Option<&TableFiles>>,
        router_macs: Option<(String, String, String, String)>,
        gen_args: Vec<String>,
    ) -> Result<Vpp, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let dir = std::env::temp_dir().join(format!("sluice-lab-vpp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let main_core = if dut_cpu == 0 { 1 } else { 0 };
        let conf = dir.join("startup.conf");
        std::fs::write(&conf, startup_conf(&dir, main_core, dut_cpu))
            .map_err(|e| format!("{}: {e}", conf.display()))?;
        if io == Io::Memif {
            std::fs::create_dir_all("/run/sluice").map_err(|e| format!("/run/sluice: {e}"))?;
            for k in 0..2 {
                let _ = std::fs::remove_file(memif_socket(k));
            }
        }
        let log = std::fs::File::create(dir.join("stdout.log")).map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        // nsenter execs VPP itself, so the child is VPP and a signal reaches it (`ip netns
        // exec` would leave it running behind a killed parent).
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{DUT}"))
            .arg(VPP)
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {VPP}: {e}"))?;
        let mut vpp = Vpp {
            child,
            dir,
            io,
            gen_args,
            load_s: None,
        };
        if let Err(e) = vpp.configure(router, router_macs.as_ref()) {
            let log = vpp.log();
            vpp.stop();
            return Err(format!("{e}\n{log}"));
        }
        Ok(vpp)
    }

    pub fn cli_socket(&self) -> PathBuf {
        self.dir.join("cli.sock")
    }

    /// VPP's own log and output, for an error message.
    fn log(&self) -> String {
        let mut text = String::new();
        for f in ["stdout.log", "vpp.log"] {
            if let Ok(t) = std::fs::read_to_string(self.dir.join(f)) {
                let tail: Vec<&str> = t.lines().rev().take(15).collect();
                for l in tail.into_iter().rev() {
                    text.push_str(l);
                    text.push('\n');
                }
            }
        }
        text
    }

    fn configure(
        &mut self,
        router: Option<Option<&TableFiles>>,
        macs: Option<&(String, String, String, String)>,
    ) -> Result<(), String> {
        let socket = self.cli_socket();
        let deadline = Instant::now() + Duration::from_secs(30);
        while vppctl(&socket, "show version").is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("vpp exited with {status}"));
            }
            if Instant::now() > deadline {
                return Err("vpp did not open its CLI socket within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        for k in 0..2 {
            for line in port_lines(self.io, k) {
                configure(&socket, &line)?;
            }
        }
        let routes = match (router, macs) {
            (Some(_), Some((a, b, c, d))) => Some((a.as_str(), b.as_str(), c.as_str(), d.as_str())),
            (Some(_), None) => return Err("a VPP router needs the ports' MACs".into()),
            (None, _) => None,
        };
        for line in forwarding_lines(self.io, routes) {
            configure(&socket, &line)?;
        }
        if let Some(Some(table)) = router {
            let batch = std::fs::read_to_string(&table.ip_batch)
                .map_err(|e| format!("{}: {e}", table.ip_batch.display()))?;
            let script = self.dir.join("table.vpp");
            std::fs::write(&script, table_lines(&batch)?).map_err(|e| e.to_string())?;
            let t = Instant::now();
            let out = vppctl(&socket, &format!("exec {}", script.display()))?;
            if !out.trim().is_empty() {
                return Err(format!("vpp: loading the synthetic table: {}", out.trim()));
            }
            let s = t.elapsed().as_secs_f64();
            eprintln!(
                "vpp-router: loaded {} IPv4 + {} IPv6 routes with exec in {s:.2} s",
                table.v4, table.v6
            );
            self.load_s = Some(s);
        }
        for k in 0..2 {
            configure(
                &socket,
                &format!("set interface state {} up", port_name(self.io, k)),
            )?;
        }
        if self.io == Io::Memif {
            // The generator connects to these sockets: wait until VPP listens there.
            let deadline = Instant::now() + Duration::from_secs(10);
            while !(memif_socket(0).exists() && memif_socket(1).exists()) {
                if Instant::now() > deadline {
                    return Err("vpp's memif sockets did not appear".into());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }
}

impl Dut for Vpp {
    /// A sluice `ctl` line, answered by VPP: the lab clears and reads counters through these.
    fn ctl(&self, line: &str) -> Option<String> {
        let socket = self.cli_socket();
        let (line, json) = match line.strip_suffix(" --json") {
            Some(l) => (l, true),
            None => (line, false),
        };
        let out = vppctl(&socket, line).ok()?;
        if !json {
            return Some(out);
        }
        let v = match line {
            "show runtime" => parse_runtime(&out),
            "show interface" => parse_interfaces(&out),
            _ => return None,
        };
        Some(v.to_string())
    }

    /// SIGTERM (VPP exits cleanly on it), SIGKILL after 10 s; then undo what VPP leaves on
    /// the ports (promiscuous mode, an XDP program) and remove its files.
    fn stop(&mut self) {
        signal_child(&mut self.child, "TERM", Duration::from_secs(10));
        for dev in ["d0", "d1"] {
            let _ = run("ip", &["-n", DUT, "link", "set", dev, "promisc", "off"]);
            if self.io == Io::AfXdp {
                let _ = in_ns(DUT, "ip", &["link", "set", "dev", dev, "xdp", "off"]);
            }
        }
        if self.io == Io::Memif {
            for k in 0..2 {
                let _ = std::fs::remove_file(memif_socket(k));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        // The API segment's shared memory, named by the prefix in startup.conf.
        if let Ok(rd) = std::fs::read_dir("/dev/shm") {
            for e in rd.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with("sluice-lab-vpp")
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }

    fn gen_args(&self) -> Vec<String> {
        self.gen_args.clone()
    }

    fn table_load_s(&self) -> Option<f64> {
        self.load_s
    }
}

impl Drop for Vpp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The numbers at the end of a `show runtime` node line: calls, vectors, suspends, clocks,
/// vectors/call. The name is the first word; the state may be several words.
fn runtime_node(line: &str) -> Option<Value> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 7 {
        return None;
    }
    let nums = &f[f.len() - 5..];
    let calls: u64 = nums[0].parse().ok()?;
    let vectors: u64 = nums[1].parse().ok()?;
    let clocks: f64 = nums[3].parse().ok()?;
    let vpc: f64 = nums[4].parse().ok()?;
    let state = f[1..f.len() - 5].join(" ");
    Some(json!({
        "name": f[0], "state": state, "calls": calls, "vectors": vectors,
        "clocks_per_vector": clocks, "vectors_per_call": vpc,
    }))
}

/// `show runtime` text → `{"threads": [{"thread", "name", "nodes": [...]}]}` as sluice's
/// `show runtime --json` has it (clocks per packet where a node handled packets).
pub fn parse_runtime(text: &str) -> Value {
    let mut threads: Vec<Value> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Thread ") {
            let mut f = rest.split_whitespace();
            let n: u64 = f.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            let name = f.next().unwrap_or("?");
            threads.push(json!({"thread": n, "name": name, "nodes": []}));
            continue;
        }
        let Some(t) = threads.last_mut() else {
            continue;
        };
        if let Some(node) = runtime_node(line) {
            t["nodes"].as_array_mut().expect("made above").push(node);
        }
    }
    // The main thread's nodes (its CLI, timers, the router's own ND and MLD frames) are no
    // part of the forwarding path when workers run it: keep the workers, as sluice shows.
    if threads.len() > 1 {
        threads.remove(0);
    }
    json!({ "threads": threads })
}

/// `show interface` text → `[{"name", "index", "state", "rx_packets", ...}]`, each counter
/// under its name with `_` for spaces (`rx packets` → `rx_packets`).
pub fn parse_interfaces(text: &str) -> Value {
    let mut out: Vec<Value> = Vec::new();
    let counter = |words: &[&str], entry: &mut Value| {
        if let Some((count, name)) = words.split_last() {
            if let (Ok(n), false) = (count.parse::<u64>(), name.is_empty()) {
                entry[name.join("_")] = json!(n);
            }
        }
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() || f[0] == "Name" {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            // name idx state mtu [counter words count]
            if f.len() < 4 {
                continue;
            }
            let mut entry = json!({
                "name": f[0], "index": f[1].parse::<u64>().unwrap_or(0), "state": f[2],
            });
            counter(&f[4..], &mut entry);
            out.push(entry);
        } else if let Some(entry) = out.last_mut() {
            counter(&f, entry);
        }
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNTIME: &str = "\
Thread 0 vpp_main (lcore 0)
Time 5.0, 10 sec internal node vector rate 0.00 loops/sec 1043.58
  vector rates in 0.0000e0, out 0.0000e0, drop 0.0000e0, punt 0.0000e0
             Name                 State         Calls          Vectors        Suspends         Clocks       Vectors/Call
memif-process                    event wait                0               0               1          1.07e4            0.00
unix-epoll-input                 polling               5216               0               0          2.21e5            0.00
---------------
Thread 1 vpp_wk_0 (lcore 1)
Time 5.0, 10 sec internal node vector rate 256.00 loops/sec 31250.20
  vector rates in 8.0000e6, out 8.0000e6, drop 0.0000e0, punt 0.0000e0
             Name                 State         Calls          Vectors        Suspends         Clocks       Vectors/Call
ethernet-input                   active             156250        40000000               0          2.40e1          256.00
memif-input                      polling            156250        40000000               0          7.50e1          256.00
memif2/0-output                  active             156250        40000000               0          1.00e1          256.00
";

    #[test]
    fn runtime_is_read_into_sluice_shape() {
        let v = parse_runtime(RUNTIME);
        // The workers' threads only: the main thread does not forward.
        let threads = v["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 1);
        assert_eq!(threads[0]["name"], "vpp_wk_0");
        let nodes = threads[0]["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[1]["name"], "memif-input");
        assert_eq!(nodes[1]["vectors"], 40_000_000);
        assert_eq!(nodes[1]["clocks_per_vector"], 75.0);
        // A two-word state does not shift the columns (no workers: the main thread stays).
        let main_only: String = RUNTIME.lines().take(6).map(|l| format!("{l}\n")).collect();
        let v0 = parse_runtime(&main_only);
        let main = v0["threads"][0]["nodes"].as_array().unwrap();
        assert_eq!(main[0]["state"], "event wait");
        assert_eq!(main[0]["calls"], 0);
        assert_eq!(main[1]["name"], "unix-epoll-input");
        // What the lab's report takes from it: nodes that handled packets.
        let r = crate::lab::report::RunResult::from_gen("vpp", &json!({}), Some(v), None);
        let names: Vec<&str> = r.node_clocks.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["ethernet-input", "memif-input", "memif2/0-output"],
            "{r:?}"
        );
    }

    #[test]
    fn interfaces_are_read_with_their_counters() {
        let text = "\
              Name               Idx    State  MTU (L3/IP4/IP6/MPLS)     Counter          Count
host-d0                           1      up          9000/0/0/0     rx packets               1000
                                                                    rx bytes                64000
                                                                    drops                       3
host-d1                           2      up          9000/0/0/0     tx packets                997
local0                            0     down          0/0/0/0
";
        let v = parse_interfaces(text);
        let a = v.as_array().unwrap();
        assert_eq!(a.len(), 3, "{v}");
        assert_eq!(a[0]["name"], "host-d0");
        assert_eq!(a[0]["rx_packets"], 1000);
        assert_eq!(a[0]["rx_bytes"], 64000);
        assert_eq!(a[0]["drops"], 3);
        assert_eq!(a[1]["tx_packets"], 997);
        assert_eq!(a[2]["state"], "down");
    }

    #[test]
    fn startup_conf_names_cores_plugins_and_no_huge_pages() {
        let c = startup_conf(Path::new("/tmp/x"), 0, 1);
        assert!(c.contains("cpu { main-core 0 corelist-workers 1 }"), "{c}");
        assert!(c.contains("plugin default { disable }"), "{c}");
        for p in PLUGINS {
            assert!(
                c.contains(&format!("plugin {p}_plugin.so {{ enable }}")),
                "{c}"
            );
        }
        assert!(c.contains("page-size 4k"), "{c}");
        assert!(c.contains("cli-listen /tmp/x/cli.sock"), "{c}");
        assert!(!c.contains("dpdk"), "{c}");
    }

    #[test]
    fn configuration_per_io_and_role() {
        let xc = forwarding_lines(Io::Memif, None);
        assert_eq!(
            xc,
            [
                "set interface l2 xconnect memif1/0 memif2/0",
                "set interface l2 xconnect memif2/0 memif1/0"
            ]
        );
        assert_eq!(
            port_lines(Io::AfPacket, 1),
            ["create host-interface name d1 cksum-gso-disable"]
        );
        assert!(port_lines(Io::AfXdp, 0)[0].contains("af_xdp host-if d0 name xd0"));
        let r = forwarding_lines(Io::AfPacket, Some(("m0", "m1", "t0", "t1")));
        assert!(r.contains(&"ip route add 198.19.0.0/16 via 198.51.100.2 host-d1".to_string()));
        assert!(r.contains(&"set ip neighbor host-d0 192.0.2.2 t0 static".to_string()));
        assert_eq!(
            table_lines("route replace 10.0.0.0/8 via 192.0.2.2\n").unwrap(),
            "ip route add 10.0.0.0/8 via 192.0.2.2\n"
        );
        assert!(table_lines("garbage\n").is_err());
    }
}
