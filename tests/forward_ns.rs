//! Real packets through sluice between two namespaces: a tester namespace with ports t0 and
//! t1, a DUT namespace with d0 and d1 (veth pairs t0–d0, t1–d1), sluice cross-connecting
//! d0 → d1. 100 000 frames of mixed sizes, jumbo included, must all arrive byte-identical,
//! the interface counters must match what was sent, and the buffer pool must be back at its
//! idle count afterwards. 802.1Q frames keep their tags through the AF_PACKET receive ring.

mod common;
use common::*;
use std::time::Duration;

/// Receive slots per queue: 4 096 hold 160 ms at the tests' 25 kpps, so a worker kept off its
/// CPU by a loaded machine (CI saw 26 ms) loses nothing; the default 512 would hold 20 ms.
const RING: u32 = 4096;

fn dut_config(dir: &std::path::Path, workers: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("dut.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = {workers}\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"af_packet\"\nmtu = 9000\nring-size = {RING}\n\
             [[interface]]\nname = \"d1\"\ndriver = \"af_packet\"\nmtu = 9000\nring-size = {RING}\n\
             [[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n",
            socket.display()
        ),
    )
    .unwrap();
    (cfg, socket)
}

fn interface<'a>(list: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap()
}

/// The namespace tests run one at a time: on two cores, two daemons and two generators at
/// once would starve the kernel's veth queues and measure the machine, not sluice.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_mixed_sizes(workers: usize, count: u64) {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, d, fwd) = (
        format!("t{workers}"),
        format!("d{workers}"),
        format!("fwd{workers}"),
    );
    let Lab { tester, dut, dir } = Lab::new(&t, &d, 2, 9000, &fwd);
    // The DUT's own kernel must not forward copies of what sluice forwards.
    dut.sysctl("net.ipv4.ip_forward", "0");
    // sluice sets the MTU itself; start from 1500 to check it restores that.
    dut.ip(&["link", "set", "d0", "mtu", "1500"]);
    dut.ip(&["link", "set", "d1", "mtu", "1500"]);

    let (cfg, socket) = dut_config(&dir, workers);
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let hw = ctl_json(&socket, "show hardware");
    let ring = interface(&hw, "d0")["details"]["rx-ring"].to_string();
    assert!(ring.contains(&format!("{RING} frames of 16384 B")), "{hw}");
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();

    let gen = gen_json(
        &tester,
        &[
            "--tx",
            "t0",
            "--rx",
            "t1",
            "--size",
            "64,128,256,512,1024,1514,9000",
            "--flows",
            "16",
            "--count",
            &count.to_string(),
            "--rate",
            "25000",
        ],
    );
    assert_eq!(gen["tx_packets"], count, "{gen}");
    // sluice must forward every frame (checked on its counters below); the tester, on a
    // loaded machine, may miss some in its own receive ring, and counts them.
    let seen = gen["rx_packets"].as_u64().unwrap() + gen["rx_ring_drops"].as_u64().unwrap();
    if seen != count {
        let ifs = ctl(&socket, "show interface").unwrap_or_default();
        let errs = ctl(&socket, "show errors").unwrap_or_default();
        let kernel =
            String::from_utf8_lossy(&tester.ip(&["-s", "link", "show", "t1"]).stdout).into_owned();
        panic!("not every frame arrived: {gen}\n{ifs}\n{errs}\n{kernel}");
    }
    assert_eq!(gen["rx_corrupt"], 0, "byte-identical: {gen}");
    assert_eq!(gen["rx_dup"], 0, "{gen}");

    std::thread::sleep(Duration::from_millis(200));
    let ifs = ctl_json(&socket, "show interface");
    let (d0, d1) = (interface(&ifs, "d0"), interface(&ifs, "d1"));
    assert_eq!(d0["rx_packets"], count, "{d0}");
    assert_eq!(d1["tx_packets"], count, "{d1}");
    assert_eq!(d0["rx_bytes"], gen["tx_bytes"], "{d0} {gen}");
    assert_eq!(d0["rx_bytes"], d1["tx_bytes"]);
    assert_eq!(d0["drops"], 0, "{d0}");
    assert_eq!(d1["tx_errors"], 0, "{d1}");
    assert_eq!(d0["mtu"], 9000);

    let runtime = ctl_json(&socket, "show runtime");
    let forwarded: u64 = runtime["threads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["nodes"].as_array().unwrap().iter())
        .filter(|n| n["name"] == "d1-tx")
        .map(|n| n["vectors"].as_u64().unwrap())
        .sum();
    assert_eq!(forwarded, count, "{runtime}");
    // Every worker must have taken its share: fanout spreads the 16 flows over the queues.
    let per_worker = vectors_by_worker(&runtime, "d1-tx");
    assert_eq!(per_worker.len(), workers, "{runtime}");
    assert!(
        per_worker.iter().all(|&n| n > 0),
        "a worker forwarded nothing: {per_worker:?}"
    );

    let buffers = ctl_json(&socket, "show buffers");
    assert_eq!(buffers["in_use"].as_u64().unwrap(), idle, "{buffers}");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");

    assert!(daemon.stop(), "daemon did not exit cleanly");
    // MTU and promiscuous mode are restored.
    let link = String::from_utf8_lossy(&dut.ip(&["link", "show", "d0"]).stdout).into_owned();
    assert!(link.contains("mtu 1500"), "{link}");
    assert!(!link.contains("PROMISC"), "{link}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mixed_sizes_through_xconnect_one_worker() {
    if !needs_root() {
        return;
    }
    run_mixed_sizes(1, 100_000);
}

#[test]
fn two_workers_share_the_load() {
    if !needs_root() {
        return;
    }
    run_mixed_sizes(2, 20_000);
}

/// Two workers with d0 and d1 spread by flow hash ([[handoff]]): about half the frames cross
/// to the other worker through the handoff rings, yet every frame arrives, byte-identical,
/// and the generator finds no frame behind a later one of its own flow.
#[test]
fn handoff_keeps_each_flow_in_order() {
    if !needs_root() {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !prerequisite(cpus >= 2, "two CPUs (two workers)") {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Lab { tester, dut, dir } = Lab::new("tho", "dho", 2, 1500, "handoff-ns");
    dut.sysctl("net.ipv4.ip_forward", "0");
    let (cfg, socket) = dut_config(&dir, 2);
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    // The standard key: the generator's flows change their address's last byte and their
    // port's together, which the symmetric key's 16-bit period hashes all alike.
    text += "[[handoff]]\ninterface = \"d0\"\nworkers = [0, 1]\nkey = \"standard\"\n\
             [[handoff]]\ninterface = \"d1\"\nworkers = [0, 1]\nkey = \"standard\"\n";
    std::fs::write(&cfg, text).unwrap();
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let count = 20_000u64;
    let gen = gen_json(
        &tester,
        &[
            "--tx",
            "t0",
            "--rx",
            "t1",
            "--flows",
            "64",
            "--count",
            &count.to_string(),
            "--rate",
            "25000",
        ],
    );
    let seen = gen["rx_packets"].as_u64().unwrap() + gen["rx_ring_drops"].as_u64().unwrap();
    if seen != count {
        let ifs = ctl(&socket, "show interface").unwrap_or_default();
        let errs = ctl(&socket, "show errors").unwrap_or_default();
        let rt = ctl(&socket, "show runtime").unwrap_or_default();
        daemon.stop();
        let log = daemon.stderr_text();
        panic!("not every frame arrived: {gen}\n{ifs}\n{errs}\n{rt}\ndaemon: {log}");
    }
    assert_eq!(gen["rx_corrupt"], 0, "{gen}");
    assert_eq!(gen["rx_flow_reorder"], 0, "a flow was reordered: {gen}");
    let errors = ctl_json(&socket, "show errors");
    let count_of = |reason: &str| -> u64 {
        errors
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["node"] == "worker-handoff" && e["reason"].as_str().unwrap().contains(reason)
            })
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    assert!(count_of("handed off") > count / 10, "{errors}");
    // Our hash spread the flows: both workers' ethernet-input took frames.
    let runtime = ctl_json(&socket, "show runtime");
    let eth = vectors_by_worker(&runtime, "ethernet-input");
    assert!(
        eth.len() == 2 && eth.iter().all(|&n| n > count / 10),
        "{eth:?}"
    );
    assert_eq!(count_of("congestion"), 0, "{errors}");
    let buffers = ctl_json(&socket, "show buffers");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

/// 802.1Q frames through the AF_PACKET path: the kernel takes the tag off into the receive
/// slot's header, and sluice must put it back, priority and VLAN id intact, before the frame
/// crosses. Frames are crafted and captured with scapy (Debian's python3-scapy).
#[test]
fn vlan_tagged_frames_cross_with_their_tags() {
    if !needs_root() {
        return;
    }
    let scapy = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import scapy.all"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !prerequisite(scapy, "Debian's python3-scapy") {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Lab { tester, dut, dir } = Lab::new("tvl", "dvl", 2, 1500, "fwdvlan");
    dut.sysctl("net.ipv4.ip_forward", "0");
    // The capture must see the tag in the frame, not in the kernel's side data.
    let _ = tester
        .exec("ethtool", &["-K", "t1", "rxvlan", "off"])
        .output();
    let (cfg, socket) = dut_config(&dir, 1);
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let script = r#"
import sys, time
from scapy.all import AsyncSniffer, Ether, Dot1Q, IP, UDP, Raw, sendp
sniffer = AsyncSniffer(iface="t1", store=True, lfilter=lambda p: Raw in p and p[Raw].load.startswith(b"sluice-vlan"))
sniffer.start()
time.sleep(0.5)
frames = [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1Q(prio=5, vlan=100 + k)
          / IP(src="198.18.0.1", dst="198.19.0.1") / UDP(sport=1024, dport=1024)
          / Raw(b"sluice-vlan %02d" % k) for k in range(20)]
sendp(frames, iface="t0", verbose=False)
time.sleep(1.0)
got = sniffer.stop()
ok = 0
for p in got:
    k = int(p[Raw].load[-2:])
    if Dot1Q in p and p[Dot1Q].vlan == 100 + k and p[Dot1Q].prio == 5 and p[IP].dst == "198.19.0.1":
        ok += 1
print(len(got), ok)
"#;
    let out = tester
        .exec("/usr/bin/python3", &["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scapy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        counts, "20 20",
        "captured, and of those with tag, priority and VLAN id intact"
    );
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
