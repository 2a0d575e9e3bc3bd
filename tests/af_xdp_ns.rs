//! The af_xdp driver on veths: 100 000 mixed-size frames through sluice between two
//! namespaces in native and in generic XDP mode (each that the kernel allows; the test says
//! which ran), byte-identical, counters matching, buffers back to idle, MTU restored and no
//! XDP program left behind — also after the daemon is killed. A leftover sluice program
//! attached the old way is replaced; somebody else's program is refused with a clear error.

mod common;
use common::*;
use sluice::drivers::af_xdp::{netlink, program};
use sluice::sys::bpf;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// One namespace test at a time: two daemons and generators at once would starve 2 cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lab(tag: &str) -> Lab {
    let (t, d, dir) = (format!("xt{tag}"), format!("xd{tag}"), format!("xdp{tag}"));
    // Native XDP on a veth needs the peer's MTU within a page.
    let l = Lab::new(&t, &d, 2, 1500, &dir);
    l.dut.sysctl("net.ipv4.ip_forward", "0");
    // sluice sets the MTU itself; start elsewhere to check it restores this one.
    l.dut.ip(&["link", "set", "d0", "mtu", "1400"]);
    l
}

fn config(dir: &Path, xdp_mode: &str) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("dut.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nbuffers = 65536\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"af_xdp\"\nmtu = 1500\nxdp-mode = \"{xdp_mode}\"\nring-size = 8192\n\
             [[interface]]\nname = \"d1\"\ndriver = \"af_xdp\"\nmtu = 1500\nxdp-mode = \"{xdp_mode}\"\nring-size = 8192\n\
             [[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n",
            socket.display()
        ),
    )
    .unwrap();
    (cfg, socket)
}

/// Start the daemon, or return its error output if it exits first.
fn try_start(ns: &Netns, cfg: &Path, socket: &Path) -> Result<Daemon, String> {
    let child = ns
        .exec(BIN, &["run", "-c", cfg.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut d = Daemon { child };
    let deadline = Instant::now() + Duration::from_secs(15);
    while !socket.exists() || ctl(socket, "show version").is_err() {
        if let Ok(Some(_)) = d.child.try_wait() {
            let mut err = String::new();
            use std::io::Read;
            d.child.stderr.take().unwrap().read_to_string(&mut err).ok();
            return Err(err);
        }
        assert!(Instant::now() < deadline, "daemon did not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(d)
}

fn link(ns: &Netns, dev: &str) -> String {
    String::from_utf8_lossy(&ns.ip(&["link", "show", dev]).stdout).into_owned()
}

fn interface<'a>(list: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap()
}

/// Run 100 000 frames through in `mode`; false when the kernel refused that mode.
fn mixed_sizes(mode: &str) -> bool {
    let l = lab(&mode[..3]);
    let (cfg, socket) = config(&l.dir, mode);
    let mut daemon = match try_start(&l.dut, &cfg, &socket) {
        Ok(d) => d,
        Err(e) => {
            assert!(
                e.contains("refused") && e.contains(mode),
                "a refusal must say what was refused: {e}"
            );
            eprintln!("af_xdp {mode} mode not available here: {e}");
            return false;
        }
    };
    let hw = ctl_json(&socket, "show hardware");
    let d0 = &interface(&hw, "d0")["details"];
    assert_eq!(d0["xdp-mode"], mode, "{hw}");
    let socket_mode = d0["socket-mode"].as_str().unwrap().to_string();
    assert!(
        ["copy", "zero-copy"].contains(&socket_mode.as_str()),
        "{hw}"
    );
    assert!(
        link(&l.dut, "d0").contains("sluice_xsk"),
        "program attached"
    );
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();

    let count = 100_000u64;
    let gen = gen_mixed_sizes(&l.tester, ("t0", "t1"), count, 50000);
    // The DUT must forward everything; the tester, on a loaded machine, may miss frames in
    // its own receive ring, and says how many.
    let seen = gen["rx_packets"].as_u64().unwrap() + gen["rx_ring_drops"].as_u64().unwrap();
    if seen != count {
        let ifs = ctl(&socket, "show interface").unwrap_or_default();
        let errs = ctl(&socket, "show errors").unwrap_or_default();
        panic!("{mode}: not every frame arrived: {gen}\n{ifs}\n{errs}");
    }
    assert_eq!(gen["rx_corrupt"], 0, "byte-identical: {gen}");
    assert_eq!(gen["rx_dup"], 0, "{gen}");

    std::thread::sleep(Duration::from_millis(200));
    let ifs = ctl_json(&socket, "show interface");
    let (d0, d1) = (interface(&ifs, "d0"), interface(&ifs, "d1"));
    assert_eq!(d0["rx_packets"], count, "{d0}");
    assert_eq!(d0["rx_bytes"], gen["tx_bytes"], "{d0} {gen}");
    assert_eq!(d1["tx_packets"], count, "{d1}");
    assert_eq!(d0["rx_miss"], 0, "{d0}");
    assert_eq!(d1["tx_errors"], 0, "{d1}");
    // Buffers the rings hold are counted as the drivers'; none is lost.
    let buffers = ctl_json(&socket, "show buffers");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");
    assert_eq!(buffers["in_frames"], 0, "{buffers}");
    let held = buffers["in_drivers"].as_u64().unwrap();
    // Every buffer in use is a driver's: fill rings stocked, and sent frames until their
    // completion is reaped (at the next transmit) — never more than the four rings hold.
    assert_eq!(buffers["in_use"].as_u64().unwrap(), held, "{buffers}");
    assert!(
        held <= 4 * 8192 && idle <= 2 * 8192,
        "{buffers} idle {idle}"
    );

    assert!(daemon.stop(), "daemon did not exit cleanly");
    let d0 = link(&l.dut, "d0");
    assert!(!d0.contains("prog/xdp"), "program detached on exit: {d0}");
    assert!(d0.contains("mtu 1400"), "MTU restored: {d0}");
    eprintln!("af_xdp {mode} mode ({socket_mode} sockets): {count} frames through, intact");
    std::fs::remove_dir_all(&l.dir).ok();
    true
}

#[test]
fn mixed_sizes_native_and_generic() {
    if !needs_root() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let native = mixed_sizes("native");
    let generic = mixed_sizes("generic");
    assert!(native || generic, "neither XDP mode ran");
    // Generic XDP works on every interface; only native may be missing.
    assert!(generic, "generic XDP must always work");
}

/// Inside `ns` (on a thread of its own, which setns moves), attach an XDP program named
/// `name` the old way (netlink), as a run that died without a link would have left it.
fn attach_by_netlink(ns: &Netns, dev: &str, name: &'static str) {
    let path = format!("/var/run/netns/{}", ns.name);
    let dev = dev.to_string();
    std::thread::spawn(move || {
        let f = std::fs::File::open(&path).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: setns on this thread only, with a namespace file we hold open.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
        let ifindex = sluice::drivers::af_packet::netdev::index(&dev).unwrap();
        let map = bpf::map_create(bpf::MapKind::XskMap, 4, 4, 1).unwrap();
        let prog = bpf::load_xdp_program(&program::redirect_program(map.raw_fd()), name).unwrap();
        netlink::set_xdp_fd(ifindex, prog.as_raw_fd(), program::XDP_FLAGS_SKB_MODE).unwrap();
        let state = netlink::xdp_state(ifindex).unwrap();
        assert_eq!(state.attached, netlink::Attached::Generic);
        assert!(state.prog_id > 0);
    })
    .join()
    .unwrap();
}

/// Remove whatever generic program netlink attached to `dev`.
fn detach_by_netlink(ns: &Netns, dev: &str) {
    let path = format!("/var/run/netns/{}", ns.name);
    let dev = dev.to_string();
    std::thread::spawn(move || {
        let f = std::fs::File::open(&path).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: setns on this thread only, with a namespace file we hold open.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
        let ifindex = sluice::drivers::af_packet::netdev::index(&dev).unwrap();
        netlink::set_xdp_fd(ifindex, -1, program::XDP_FLAGS_SKB_MODE).unwrap();
    })
    .join()
    .unwrap();
}

#[test]
fn no_program_left_behind() {
    if !needs_root() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let l = lab("kill");
    let (cfg, socket) = config(&l.dir, "generic");

    // A killed daemon: the kernel closes its link and the program goes with it.
    let mut d = try_start(&l.dut, &cfg, &socket).unwrap();
    assert!(link(&l.dut, "d1").contains("sluice_xsk"));
    d.child.kill().unwrap();
    d.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while link(&l.dut, "d1").contains("prog/xdp") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !link(&l.dut, "d1").contains("prog/xdp"),
        "{}",
        link(&l.dut, "d1")
    );
    std::fs::remove_file(&socket).ok();

    // A leftover sluice program attached by netlink is found and replaced.
    attach_by_netlink(&l.dut, "d0", program::PROGRAM_NAME);
    assert!(link(&l.dut, "d0").contains("sluice_xsk"));
    let mut d = try_start(&l.dut, &cfg, &socket).unwrap();
    let hw = ctl_json(&socket, "show hardware d0");
    let note = hw[0]["details"]["xdp-program"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(note.contains("leftover"), "{hw}");
    assert!(d.stop());
    assert!(
        !link(&l.dut, "d0").contains("prog/xdp"),
        "{}",
        link(&l.dut, "d0")
    );

    // Somebody else's program is not touched: the daemon refuses with its name.
    attach_by_netlink(&l.dut, "d0", "other_prog");
    let err = match try_start(&l.dut, &cfg, &socket) {
        Ok(_) => panic!("started over another program"),
        Err(e) => e,
    };
    assert!(
        err.contains("other_prog") && err.contains("xdp off"),
        "{err}"
    );
    assert!(link(&l.dut, "d0").contains("other_prog"));
    detach_by_netlink(&l.dut, "d0");

    // A forced mode the kernel refuses is a clear error, and nothing is left attached.
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "xdp-mode = \"generic\"\n",
        "xdp-mode = \"generic\"\nsocket-mode = \"zero-copy\"\n",
    );
    std::fs::write(&cfg, text).unwrap();
    match try_start(&l.dut, &cfg, &socket) {
        Ok(_) => eprintln!("this kernel gave a veth zero-copy AF_XDP sockets"),
        Err(e) => assert!(e.contains("zero-copy"), "{e}"),
    }
    assert!(
        !link(&l.dut, "d0").contains("prog/xdp"),
        "{}",
        link(&l.dut, "d0")
    );
    std::fs::remove_dir_all(&l.dir).ok();
}

/// A veth pair with two queues each way.
fn veth_two_queues(na: &Netns, a: &str, nb: &Netns, b: &str) {
    sh(
        "ip",
        &[
            "link",
            "add",
            a,
            "numrxqueues",
            "2",
            "numtxqueues",
            "2",
            "netns",
            &na.name,
            "type",
            "veth",
            "peer",
            "name",
            b,
            "numrxqueues",
            "2",
            "numtxqueues",
            "2",
            "netns",
            &nb.name,
        ],
    );
    for (ns, dev) in [(na, a), (nb, b)] {
        ns.sysctl(&format!("net.ipv6.conf.{dev}.disable_ipv6"), "1");
        ns.ip(&["link", "set", dev, "mtu", "1500", "up"]);
    }
}

#[test]
fn one_socket_per_queue_one_queue_per_worker() {
    if !needs_root()
        || !prerequisite(
            std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2,
            "two CPUs",
        )
    {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tester = Netns::new("xtmq");
    let dut = Netns::new("xdmq");
    veth_two_queues(&tester, "t0", &dut, "d0");
    veth_two_queues(&tester, "t1", &dut, "d1");
    dut.sysctl("net.ipv4.ip_forward", "0");
    let dir = tmpdir("xdpmq");
    let (cfg, socket) = config(&dir, "native");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("workers = 1", "workers = 2");
    std::fs::write(&cfg, text).unwrap();
    let mut d = try_start(&dut, &cfg, &socket).unwrap_or_else(|e| panic!("{e}"));
    let hw = ctl_json(&socket, "show hardware d0");
    assert_eq!(hw[0]["rx_queues"], 2, "{hw}");
    // A packet socket sends on the queue of its CPU, and a veth delivers on the same queue
    // number: a sender pinned to CPU c reaches queue c, which worker c polls.
    for cpu in ["0", "1"] {
        let gen = gen_json(
            &tester,
            &[
                "--tx", "t0", "--rx", "t1", "--flows", "64", "--count", "20000", "--rate", "50000",
                "--cpu", cpu,
            ],
        );
        assert_eq!(gen["rx_packets"], 20000, "{gen}");
    }
    let runtime = ctl_json(&socket, "show runtime");
    let per_worker: Vec<u64> = runtime["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| {
            t["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["name"] == "af-xdp-input")
                .map(|n| n["vectors"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(per_worker, vec![20000, 20000], "{runtime}");
    assert!(d.stop());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn generator_on_af_xdp_ports() {
    if !needs_root() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let l = lab("gen");
    let (cfg, socket) = config(&l.dir, "native");
    let mut d = try_start(&l.dut, &cfg, &socket).unwrap_or_else(|e| panic!("{e}"));
    let gen = gen_json(
        &l.tester,
        &[
            "--io",
            "af_xdp",
            "--tx",
            "t0",
            "--rx",
            "t1",
            "--size",
            "64,512,1514",
            "--flows",
            "var2",
            "--count",
            "20000",
            "--rate",
            "20000",
            "--bi",
        ],
    );
    assert_eq!(gen["io"], "af_xdp", "{gen}");
    assert_eq!(gen["tx_packets"], 40000, "{gen}");
    let seen = gen["rx_packets"].as_u64().unwrap() + gen["rx_ring_drops"].as_u64().unwrap();
    assert_eq!(
        seen, 40000,
        "received or counted as the tester's own drops: {gen}"
    );
    assert_eq!(gen["rx_corrupt"], 0, "{gen}");
    // The generator's own XDP programs are gone with it.
    assert!(
        !link(&l.tester, "t0").contains("prog/xdp"),
        "{}",
        link(&l.tester, "t0")
    );
    // Jumbo frames do not fit an AF_XDP buffer: a clear error, before anything is sent.
    let out = l
        .tester
        .exec(
            BIN,
            &["gen", "--io", "af_xdp", "--tx", "t0", "--size", "9018"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too large"));
    assert!(d.stop());
    std::fs::remove_dir_all(&l.dir).ok();
}

/// `driver = "auto"` takes AF_XDP where it can and says so; an MTU AF_XDP cannot carry makes
/// it take AF_PACKET, with the reason in `show hardware`; frames cross the mixed pair, the
/// AF_XDP side busy-polling.
#[test]
fn auto_driver_prefers_af_xdp_and_falls_back_to_af_packet() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !needs_root() {
        return;
    }
    let l = lab("aut");
    let socket = l.dir.join("cli.sock");
    let cfg = l.dir.join("dut.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nbuffers = 65536\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"auto\"\nmtu = 1500\nbusy-poll = 50\n\
             [[interface]]\nname = \"d1\"\ndriver = \"auto\"\nmtu = 9000\n\
             [[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n",
            socket.display()
        ),
    )
    .unwrap();
    let mut daemon = try_start(&l.dut, &cfg, &socket).unwrap_or_else(|e| panic!("start: {e}"));
    let hw = ctl_json(&socket, "show hardware");
    let (d0, d1) = (interface(&hw, "d0"), interface(&hw, "d1"));
    assert_eq!(d0["driver"], "af_xdp", "{hw}");
    assert_eq!(d0["details"]["auto"], "chose af_xdp", "{hw}");
    // Preferred busy polling: the worker runs d0's NAPI poll itself, and frames still flow.
    let busy = d0["details"]["busy-poll"].as_str().unwrap();
    assert!(busy.starts_with("preferred, 50 us"), "{busy}");
    assert_eq!(d1["driver"], "af_packet", "{hw}");
    let why = d1["details"]["auto"].as_str().unwrap();
    assert!(
        why.starts_with("chose af_packet: af_xdp refused: MTU 9000"),
        "{why}"
    );
    let text = ctl(&socket, "show hardware").unwrap();
    assert!(
        text.contains("driver af_xdp") && text.contains("chose af_packet"),
        "{text}"
    );

    let count = 5_000u64;
    let n = count.to_string();
    let gen = gen_json(
        &l.tester,
        &[
            "--tx", "t0", "--rx", "t1", "--size", "64,1514", "--count", &n, "--rate", "20000",
        ],
    );
    let seen = gen["rx_packets"].as_u64().unwrap() + gen["rx_ring_drops"].as_u64().unwrap();
    assert_eq!(seen, count, "af_xdp in, af_packet out: {gen}");
    assert_eq!(gen["rx_corrupt"], 0, "{gen}");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&l.dir).ok();
}
