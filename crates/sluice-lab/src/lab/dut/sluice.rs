//! sluice as a lab DUT: cross-connecting d0 and d1 (`sluice`, and `sluice-af_xdp` on AF_XDP
//! ports whatever the generator uses), bridging them (`sluice-bridge`, a learning bridge
//! domain as `linux-bridge` is) or routing between them (`sluice-router`, its own ARP, with
//! the synthetic table when there is one). It runs as `sluice run` in the DUT namespace
//! and answers the lab's `ctl` lines on its control socket.

use super::{routed_gen_args, stop_child, tester_addresses, Dut, DutSpec, ANY_IO};
use crate::gen::port::Io;
use crate::lab::netns::DUT;
use crate::lab::plan;
use crate::lab::table::TableFiles;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `sluice`: cross-connecting d0 and d1 with its default driver (`auto`: AF_XDP where the
/// veths allow it).
pub const XCONNECT_DUT: DutSpec = DutSpec {
    takes_vlans: true,
    io: ANY_IO,
    ..DutSpec::new("sluice", |s| {
        let how = Forwarding::Xconnect(s.vlans);
        Ok(Box::new(start(s.dut_cpu, (s.io, None, None), how)?))
    })
};

/// `sluice-af_xdp`: AF_XDP ports on the veths, whatever the generator uses.
pub const AF_XDP_DUT: DutSpec = DutSpec {
    takes_vlans: true,
    ..DutSpec::new("sluice-af_xdp", |s| {
        let how = Forwarding::Xconnect(s.vlans);
        Ok(Box::new(start(s.dut_cpu, (Io::AfXdp, None, None), how)?))
    })
};

/// `sluice-af_packet`: AF_PACKET ports on the veths, to compare it with the default in one
/// run.
pub const AF_PACKET_DUT: DutSpec = DutSpec {
    takes_vlans: true,
    ..DutSpec::new("sluice-af_packet", |s| {
        let how = Forwarding::Xconnect(s.vlans);
        let ports = (s.io, Some("af_packet"), None);
        Ok(Box::new(start(s.dut_cpu, ports, how)?))
    })
};

/// `sluice-bridge`: one learning bridge domain of d0 and d1, as linux-bridge is.
pub const BRIDGE_DUT: DutSpec = DutSpec {
    bridges: true,
    takes_vlans: true,
    io: ANY_IO,
    ..DutSpec::new("sluice-bridge", |s| {
        let how = Forwarding::Bridge(s.vlans);
        Ok(Box::new(start(s.dut_cpu, (s.io, None, None), how)?))
    })
};

/// `sluice-router`: routing between d0 and d1 (addresses, static routes, its own ARP); the
/// routers' next hops are the tester's veths, which a memif never reaches.
pub const ROUTER_DUT: DutSpec = DutSpec {
    routes: true,
    filters: true,
    takes_vrfs: true,
    ..DutSpec::new("sluice-router", |s| {
        let opts = (s.acl, s.vrfs, s.bird);
        Ok(Box::new(start_router(
            s.dut_cpu,
            (s.io, None),
            s.table,
            opts,
        )?))
    })
};

/// What sluice does between d0 and d1.
#[derive(Clone, Copy, Debug)]
pub enum Forwarding<'a> {
    /// d0 and d1 cross-connected; with VLAN ids, their sub-interfaces of those tags are.
    Xconnect(&'a [u16]),
    /// One learning bridge domain of d0 and d1 (or of their sub-interfaces of `vlans`).
    Bridge(&'a [u16]),
    /// Routing, with the synthetic table if there is one, filtering what it receives with
    /// the lab's ACL of that many non-matching deny rules if asked, for that many tenants
    /// (VRFs on VLAN sub-interfaces) if asked.
    Router(Option<&'a TableFiles>, Option<super::LabAcl>, Option<u16>),
}

/// A running sluice.
pub struct Sluice {
    child: Child,
    socket: PathBuf,
    dir: PathBuf,
    /// As a router: what the generator must be told (router MACs, routed frames); the
    /// tester's ports then hold addresses until the DUT stops.
    gen_args: Vec<String>,
    /// Seconds from start until its FIB held the synthetic table (with BIRD: from BIRD's
    /// start).
    load_s: Option<f64>,
    /// With BIRD: BIRD itself, and the figures of its announcement and withdrawal.
    bird: Option<super::bird::Bird>,
    convergence: Option<Value>,
}

/// The parts of sluice's config that make it a router between d0 and d1: the plan's
/// addresses for each port, then a static route per traffic direction, the synthetic
/// table's route file when there is one, and the lab's input ACL on both ports.
pub fn router_parts(
    table: Option<&TableFiles>,
    acl: Option<super::LabAcl>,
    vrfs: Option<u16>,
) -> (String, String, String) {
    let addresses = |v4: &str, v6: &str| format!("address = [\"{v4}\", \"{v6}\"]\n");
    let mut tail = String::new();
    for (prefix, via) in [
        (plan::TO_T1, plan::T1_V4),
        (plan::TO_T0, plan::T0_V4),
        (plan::TO_T1_V6, plan::T1_V6),
        (plan::TO_T0_V6, plan::T0_V6),
    ] {
        tail.push_str(&format!(
            "[[route]]\nprefix = \"{prefix}\"\nvia = [\"{via}\"]\n"
        ));
    }
    // Tenant k: sub-interfaces d0.V and d1.V (V = VRF_VLAN + k) in table k + 1, with the
    // ports' own addresses and routes: every tenant looks the same, only its table differs.
    for k in 0..vrfs.unwrap_or(0) {
        let (vid, id) = (super::VRF_VLAN + k, k + 1);
        for (port, v4, v6) in [
            ("d0", plan::D0_V4, plan::D0_V6),
            ("d1", plan::D1_V4, plan::D1_V6),
        ] {
            tail.push_str(&format!(
                "[[subinterface]]\nparent = \"{port}\"\nid = {vid}\ndot1q = {vid}\n\
                 exact-match = true\n{}",
                addresses(v4, v6)
            ));
        }
        tail.push_str(&format!(
            "[[ip-table]]\nid = {id}\ninterfaces = [\"d0.{vid}\", \"d1.{vid}\"]\n"
        ));
        for (prefix, via) in [(plan::TO_T1, plan::T1_V4), (plan::TO_T0, plan::T0_V4)] {
            tail.push_str(&format!(
                "[[route]]\nprefix = \"{prefix}\"\ntable = {id}\nvia = [\"{via}\"]\n"
            ));
        }
    }
    if let Some(t) = table {
        tail.push_str(&format!(
            "[fib]\nroute-file = \"{}\"\n",
            t.route_file.display()
        ));
    }
    if let Some(acl) = acl {
        let mut rules: Vec<String> = super::lab_deny_sources(acl.rules)
            .map(|a| format!("\"deny src {a}/32\""))
            .collect();
        let last = if acl.stateful {
            "permit+reflect"
        } else {
            "permit"
        };
        rules.extend([format!("\"{last}\""), "\"permit ipv6\"".to_string()]);
        if acl.stateful {
            tail.push_str(&format!("[sessions]\nper-worker = {}\n", acl.sessions));
        }
        tail.push_str(&format!(
            "[[acl]]\nname = \"lab\"\nrules = [{}]\n",
            rules.join(", ")
        ));
        for port in ["d0", "d1"] {
            tail.push_str(&format!(
                "[[acl-input]]\ninterface = \"{port}\"\nacl = \"lab\"\n"
            ));
        }
    }
    (
        addresses(plan::D0_V4, plan::D0_V6),
        addresses(plan::D1_V4, plan::D1_V6),
        tail,
    )
}

/// Start sluice routing between d0 and d1, with `table`'s synthetic routes if any.
pub fn start_router(
    dut_cpu: usize,
    (io, forced): (Io, Option<&'static str>),
    table: Option<&TableFiles>,
    (acl, vrfs, bird): (Option<super::LabAcl>, Option<u16>, bool),
) -> Result<Sluice, String> {
    let gen_args = routed_gen_args()?;
    let tester_macs = (
        super::mac_of(crate::lab::TESTER, "t0")?,
        super::mac_of(crate::lab::TESTER, "t1")?,
    );
    tester_addresses(true).inspect_err(|_| {
        let _ = tester_addresses(false);
    })?;
    if bird {
        // The taps take the ports' IPv6 addresses too.
        for key in ["disable_ipv6=0", "accept_dad=0"] {
            crate::lab::netns::in_ns(
                DUT,
                "sysctl",
                &["-qw", &format!("net.ipv6.conf.default.{key}")],
            )?;
        }
    }
    let t = Instant::now();
    let loaded = if bird { None } else { table };
    let how = Forwarding::Router(loaded, acl, vrfs);
    let mut dut = match start(dut_cpu, (io, forced, None), how) {
        Ok(d) => d,
        Err(e) => {
            let _ = tester_addresses(false);
            return Err(e);
        }
    };
    dut.gen_args = gen_args;
    if let Some(n) = vrfs {
        // The tester's kernel has no 802.1Q devices to answer ARP on the tenants' VLANs:
        // each tenant's neighbours are set by hand, with the tester ports' real MACs.
        let lines: Vec<String> = (0..n)
            .flat_map(|k| {
                let vid = super::VRF_VLAN + k;
                [
                    format!("set ip neighbor d0.{vid} {} {}", plan::T0_V4, tester_macs.0),
                    format!("set ip neighbor d1.{vid} {} {}", plan::T1_V4, tester_macs.1),
                ]
            })
            .collect();
        for line in &lines {
            dut.ctl(line)
                .ok_or_else(|| format!("sluice-router refused '{line}'"))?;
        }
    }
    if let (true, Some(table)) = (bird, table) {
        for line in [
            "lcp create d0 host-if tap-d0",
            "lcp create d1 host-if tap-d1",
        ] {
            dut.ctl(line)
                .ok_or_else(|| format!("sluice-router refused '{line}'"))?;
        }
        let (bird, figures) = bird_convergence(&dut, table)?;
        dut.load_s = figures["announce"]["sluice_s"].as_f64();
        dut.convergence = Some(figures);
        dut.bird = Some(bird);
    } else if let Some(table) = table {
        let want = (table.v4 + table.v6) as u64;
        let s = wait_for_fib(&dut_socket(), want, t)?;
        eprintln!(
            "sluice-router: FIB holds {} IPv4 + {} IPv6 synthetic routes {s:.2} s after start",
            table.v4, table.v6
        );
        dut.load_s = Some(s);
    }
    Ok(dut)
}

/// sluice's FIB route counts, (IPv4, IPv6), all tables' sources included.
fn fib_counts(socket: &std::path::Path) -> Result<(u64, u64), String> {
    let reply = ::sluice::control::client::run_command(socket, "show ip fib summary --json")?;
    let v: Value = serde_json::from_str(&reply).map_err(|e| format!("fib summary: {e}"))?;
    match (v["v4_routes"].as_u64(), v["v6_routes"].as_u64()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(format!("no route counts in show ip fib summary: {v}")),
    }
}

/// Start BIRD announcing `table`, and time, from BIRD's start, until its kernel protocols
/// count every route exported (BIRD counts a route as it hands it on, which at start-up is
/// before its first sync with the kernel writes it: not the time the kernel has them) and
/// until sluice's FIB holds them all; then withdraw them all
/// (the static protocols disabled) and time it again, and announce them again (the run's
/// traffic needs them, and it is a second figure).
fn bird_convergence(
    dut: &Sluice,
    table: &TableFiles,
) -> Result<(super::bird::Bird, Value), String> {
    let socket = dut_socket();
    let base = fib_counts(&socket)?;
    let (n4, n6) = (table.v4 as u64, table.v6 as u64);
    let full = (base.0 + n4, base.1 + n6);
    let t = Instant::now();
    let bird = super::bird::Bird::start(&dut.dir, table)?;
    let announce = converge(&bird, &socket, (n4, n6), full, t)?;
    let t = Instant::now();
    for p in ["static4", "static6"] {
        bird.birdc(&format!("disable {p}"))?;
    }
    let withdraw = converge(&bird, &socket, (0, 0), base, t)?;
    let t = Instant::now();
    for p in ["static4", "static6"] {
        bird.birdc(&format!("enable {p}"))?;
    }
    let again = converge(&bird, &socket, (n4, n6), full, t)?;
    let say = |what: &str, f: &Value| {
        eprintln!(
            "sluice-router with BIRD: {what} {} IPv4 + {} IPv6 routes: BIRD's kernel protocols counted them exported after {:.2} s, sluice's FIB held them after {:.2} s",
            n4, n6, f["bird_exported_s"].as_f64().unwrap_or(f64::NAN), f["sluice_s"].as_f64().unwrap_or(f64::NAN)
        )
    };
    say("announced", &announce);
    say("withdrew", &withdraw);
    say("announced again", &again);
    Ok((
        bird,
        serde_json::json!({
            "v4_routes": n4, "v6_routes": n6,
            "announce": announce, "withdraw": withdraw, "announce_again": again,
        }),
    ))
}

/// Wait until BIRD's kernel protocols count `exported` routes exported and sluice's FIB
/// holds `fib` routes (IPv4, IPv6); seconds since `since` of each.
fn converge(
    bird: &super::bird::Bird,
    socket: &std::path::Path,
    exported: (u64, u64),
    fib: (u64, u64),
    since: Instant,
) -> Result<Value, String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    let (mut exported_s, mut sluice_s) = (None, None);
    let mut last_bird = Instant::now() - Duration::from_secs(1);
    loop {
        if exported_s.is_none() && last_bird.elapsed() >= Duration::from_millis(100) {
            last_bird = Instant::now();
            let e = (bird.exported("kernel4"), bird.exported("kernel6"));
            if e == (Some(exported.0), Some(exported.1)) {
                exported_s = Some(since.elapsed().as_secs_f64());
            }
        }
        if sluice_s.is_none() && fib_counts(socket)? == fib {
            sluice_s = Some(since.elapsed().as_secs_f64());
        }
        if let (Some(k), Some(s)) = (exported_s, sluice_s) {
            return Ok(serde_json::json!({"bird_exported_s": k, "sluice_s": s}));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "BIRD's routes did not converge: exported by BIRD after {exported_s:?} s, sluice's FIB {:?} (want {fib:?})",
                fib_counts(socket)?
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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
        let reply = ::sluice::control::client::run_command(socket, "show ip fib summary --json")?;
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

/// The driver of sluice's ports: on the veths, `auto` (AF_XDP where it can run, which is
/// sluice's best path) unless a DUT kind asks for one; memif ports are memif.
pub fn port_driver(io: Io, forced: Option<&'static str>) -> &'static str {
    match (io, forced) {
        (Io::Memif, _) => "memif",
        (Io::DpdkNull, _) => "dpdk",
        (_, Some(d)) => d,
        (Io::AfXdp, None) => "af_xdp",
        (Io::AfPacket, None) => "auto",
    }
}

/// sluice's config on d0 and d1, forwarding as `how` says; `driver` as `port_driver` gives
/// it.
pub fn sluice_config(
    dut_cpu: usize,
    (io, driver, null_frame): (Io, &str, Option<usize>),
    how: Forwarding<'_>,
    socket: &std::path::Path,
) -> String {
    let main_core = if dut_cpu == 0 { 1 } else { 0 };
    let (driver, fast_path) = match driver {
        super::sluice_xdp::FAST_PATH => ("af_xdp", "fast-path = \"on\"\n"),
        d => (d, ""),
    };
    // memif ports listen where the generator connects; the others attach to the veths.
    let port = |k: usize| match io {
        Io::Memif => format!(
            "socket = \"{}\"\nrole = \"server\"\n",
            crate::lab::memif_socket(k).display()
        ),
        _ if driver == "dpdk" => super::sluice_dpdk::devargs(io, k, null_frame),
        // No MTU: the port keeps the veth's, which the lab set for this run.
        _ => format!("host = \"d{k}\"\n{fast_path}"),
    };
    let (extra0, extra1, tail) = match how {
        Forwarding::Xconnect(vlans) => {
            let (subs, p0, p1) = vlan_ports(vlans);
            (
                String::new(),
                String::new(),
                format!(
                    "{subs}[[xconnect]]\nrx = \"{p0}\"\ntx = \"{p1}\"\n\
                     [[xconnect]]\nrx = \"{p1}\"\ntx = \"{p0}\"\n"
                ),
            )
        }
        Forwarding::Bridge(vlans) => {
            let (subs, p0, p1) = vlan_ports(vlans);
            (
                String::new(),
                String::new(),
                format!("{subs}[[bridge-domain]]\nid = 1\nmembers = [\"{p0}\", \"{p1}\"]\n"),
            )
        }
        Forwarding::Router(table, acl, vrfs) => router_parts(table, acl, vrfs),
    };
    let tail = tail + &super::sluice_dpdk::section(driver, io);
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

/// The ports traffic tagged `vlans` (none, one 802.1Q id, or 802.1ad outer and 802.1Q inner)
/// arrives on: d0 and d1 themselves, or sub-interfaces of theirs taking those tags (`[[sub
/// interface]]` lines, and the two names).
fn vlan_ports(vlans: &[u16]) -> (String, String, String) {
    let tags = match vlans {
        [] => return (String::new(), "d0".into(), "d1".into()),
        [v] => format!("dot1q = {v}\nexact-match = true\n"),
        [o, i, ..] => format!("outer-dot1ad = {o}\ninner-dot1q = {i}\n"),
    };
    let subs = ["d0", "d1"]
        .iter()
        .map(|p| {
            format!(
                "[[subinterface]]\nparent = \"{p}\"\nid = {}\n{tags}",
                vlans[0]
            )
        })
        .collect();
    (subs, format!("d0.{}", vlans[0]), format!("d1.{}", vlans[0]))
}

/// Start sluice on d0 and d1, forwarding as `how` says; `forced` names the veth ports' driver
/// instead of `auto`.
pub fn start(
    dut_cpu: usize,
    (io, forced, null_frame): (Io, Option<&'static str>, Option<usize>),
    how: Forwarding<'_>,
) -> Result<Sluice, String> {
    let dir = std::env::temp_dir().join(format!("sluice-lab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let socket = dut_socket();
    let cfg = dir.join("dut.toml");
    let ports = (io, port_driver(io, forced), null_frame);
    let text = sluice_config(dut_cpu, ports, how, &socket);
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
    let mut dut = Sluice {
        child,
        socket: socket.clone(),
        dir: dir.clone(),
        gen_args: Vec::new(),
        load_s: None,
        bird: None,
        convergence: None,
    };
    // A full table may be read before the control socket opens.
    let deadline = Instant::now()
        + Duration::from_secs(if matches!(how, Forwarding::Router(Some(_), _, _)) {
            300
        } else {
            10
        });
    loop {
        if ::sluice::control::client::run_command(&socket, "show version").is_ok() {
            dut.say_drivers();
            return Ok(dut);
        }
        let exited = dut.child.try_wait().ok().flatten().is_some();
        if exited || Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("dut.log")).unwrap_or_default();
            dut.stop();
            return Err(format!("sluice did not come up in {DUT}: {}", log.trim()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Sluice {
    /// Which driver each port runs, and under `auto` why: a figure names its path.
    fn say_drivers(&self) {
        let Some(Value::Array(hw)) = self.ctl_json("show hardware") else {
            return;
        };
        // Sub-interfaces (a thousand with --vrfs 1000) are counted, not listed.
        let subs = hw.iter().filter(|i| i["driver"] == "sub-interface").count();
        let mut ports: Vec<String> = hw
            .iter()
            .filter(|i| i["driver"] != "sub-interface")
            .map(|i| {
                let why = i["details"]["auto"]
                    .as_str()
                    .map(|w| format!(" (auto: {w})"));
                format!(
                    "{} {}{}",
                    i["name"].as_str().unwrap_or("?"),
                    i["driver"].as_str().unwrap_or("?"),
                    why.unwrap_or_default()
                )
            })
            .collect();
        if subs > 0 {
            ports.push(format!("{subs} sub-interfaces"));
        }
        eprintln!("sluice's ports: {}", ports.join(", "));
    }
}

impl Dut for Sluice {
    fn ctl(&self, line: &str) -> Option<String> {
        ::sluice::control::client::run_command(&self.socket, line).ok()
    }

    fn gen_args(&self) -> Vec<String> {
        self.gen_args.clone()
    }

    fn table_load_s(&self) -> Option<f64> {
        self.load_s
    }

    fn convergence(&self) -> Option<Value> {
        self.convergence.clone()
    }

    /// SIGINT (SIGKILL after 5 s), then a router's tester addresses go.
    fn stop(&mut self) {
        // BIRD first: its routes leave the kernel while sluice still runs.
        if let Some(mut b) = self.bird.take() {
            b.stop();
        }
        stop_child(&mut self.child, Duration::from_secs(5));
        let _ = std::fs::remove_dir_all(&self.dir);
        if !self.gen_args.is_empty() {
            let _ = tester_addresses(false);
            self.gen_args.clear();
        }
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config sluice-router gets is one sluice accepts (CPU numbers left out: they
    /// depend on the machine).
    fn acl(rules: u32, stateful: bool) -> super::super::LabAcl {
        super::super::LabAcl {
            rules,
            stateful,
            sessions: 200_000,
        }
    }

    #[test]
    fn router_config_is_valid() {
        let table = TableFiles {
            spec: crate::lab::table::FULL,
            route_file: "/tmp/table.txt".into(),
            ip_batch: "/tmp/batch.txt".into(),
            v4: 1,
            v6: 1,
        };
        let cases = [
            (Forwarding::Xconnect(&[]), 0),
            (Forwarding::Xconnect(&[100]), 0),
            (Forwarding::Bridge(&[]), 0),
            (Forwarding::Bridge(&[10, 20]), 0),
            // Each direction's IPv4 and IPv6 routes, and each tenant's IPv4 ones.
            (Forwarding::Router(None, None, None), 4),
            (Forwarding::Router(Some(&table), None, None), 4),
            (Forwarding::Router(None, Some(acl(0, false)), None), 4),
            (Forwarding::Router(None, Some(acl(1000, false)), None), 4),
            (Forwarding::Router(None, Some(acl(10, true)), None), 4),
            (Forwarding::Router(None, None, Some(3)), 4 + 3 * 2),
        ];
        for (how, routes) in cases {
            let text: String =
                sluice_config(1, (Io::AfPacket, "auto", None), how, "/tmp/s.sock".as_ref())
                    .lines()
                    .filter(|l| !l.starts_with("worker-cores") && !l.starts_with("main-core"))
                    .map(|l| format!("{l}\n"))
                    .collect();
            let cfg = ::sluice::config::Config::parse(&text, "lab")
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(cfg.routes.len(), routes, "{text}");
            assert_eq!(cfg.interfaces.len(), 2);
            assert_eq!(
                cfg.fib.route_file.is_some(),
                matches!(how, Forwarding::Router(Some(_), _, _)),
                "{text}"
            );
            // The lab's ACL: N deny rules and the two permits, on both ports.
            if let Forwarding::Router(_, Some(a), _) = how {
                let rules = &cfg.acls[0].rules;
                assert_eq!(rules.len(), a.rules as usize + 2, "{text}");
                assert_eq!(cfg.acl_inputs.len(), 2, "{text}");
                let reflect = rules
                    .iter()
                    .any(|r| r.action == ::sluice::acl::Action::PermitReflect);
                assert_eq!(reflect, a.stateful, "{text}");
                if a.stateful {
                    assert_eq!(cfg.sessions.per_worker, a.sessions, "{text}");
                }
            } else {
                assert!(cfg.acls.is_empty() && cfg.acl_inputs.is_empty(), "{text}");
            }
            assert_eq!(
                cfg.bridge_domains.len(),
                matches!(how, Forwarding::Bridge(_)) as usize
            );
            let tagged = matches!(how, Forwarding::Xconnect([_]) | Forwarding::Bridge([_, _]));
            // With N tenants: a sub-interface of each port and a table per tenant, each
            // tenant's routes in its table.
            let tenants = match how {
                Forwarding::Router(_, _, Some(n)) => n as usize,
                _ => 0,
            };
            assert_eq!(
                cfg.subinterfaces.len(),
                2 * tagged as usize + 2 * tenants,
                "{text}"
            );
            assert_eq!(cfg.tables.len(), tenants, "{text}");
            for (k, t) in cfg.tables.iter().enumerate() {
                let vid = super::super::VRF_VLAN as usize + k;
                assert_eq!(t.interfaces, [format!("d0.{vid}"), format!("d1.{vid}")]);
                assert_eq!(cfg.routes.iter().filter(|r| r.table == t.id).count(), 2);
            }
            let want = if matches!(how, Forwarding::Router(..)) {
                2
            } else {
                0
            };
            for i in &cfg.interfaces {
                assert_eq!(i.address.len(), want, "{text}");
            }
        }
    }

    /// sluice-dpdk on the veths through net_af_xdp gets the rings of sluice's own af_xdp
    /// driver, which it is compared with.
    #[test]
    fn dpdk_over_af_xdp_has_the_af_xdp_drivers_rings() {
        let text: String = sluice_config(
            1,
            (Io::AfXdp, "dpdk", None),
            Forwarding::Xconnect(&[]),
            "/tmp/s.sock".as_ref(),
        )
        .lines()
        .filter(|l| !l.starts_with("worker-cores") && !l.starts_with("main-core"))
        .map(|l| format!("{l}\n"))
        .collect();
        let cfg =
            ::sluice::config::Config::parse(&text, "lab").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let ring = ::sluice::drivers::af_xdp::DEFAULT_RING_SIZE as u16;
        assert_eq!((cfg.dpdk.rx_desc, cfg.dpdk.tx_desc), (ring, ring), "{text}");
        let other = sluice_config(
            1,
            (Io::DpdkNull, "dpdk", None),
            Forwarding::Xconnect(&[]),
            "/tmp/s.sock".as_ref(),
        );
        assert!(!other.contains("[dpdk]"), "{other}");
    }
}
