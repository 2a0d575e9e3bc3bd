//! The four-port bridge lab of the bridge namespace tests: tester ports t0-t3, DUT ports
//! d0-d3 (a `Lab` of four veth pairs), tests/bridge/ports.py to send crafted frames and say
//! where they came out, and the DUT as a sluice bridge domain or a Linux bridge.

use super::*;
use serde_json::Value;

pub const PYTHON: &str = "/usr/bin/python3";
const PORTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bridge/ports.py");

pub const A: &str = "02:00:00:00:00:0a";
pub const B: &str = "02:00:00:00:00:0b";
pub const C: &str = "02:00:00:00:00:0c";
pub const D: &str = "02:00:00:00:00:0d";
pub const BROADCAST: &str = "ff:ff:ff:ff:ff:ff";

/// Bridge domain 10 over d0-d3, with the defaults.
pub const BD10: &str = "[[bridge-domain]]\nid = 10\nmembers = [\"d0\", \"d1\", \"d2\", \"d3\"]\n";

/// Whether the bridge tests can run: root for the namespaces, python3 for ports.py.
pub fn prerequisites() -> bool {
    needs_root() && prerequisite(Path::new(PYTHON).exists(), PYTHON)
}

/// Run `steps` (ports.py's steps) from the tester; returns each step's name and where its
/// frames came out ("t1:1 t2:1", with the VLAN ids they carried: "t1:1[200]",
/// "t3:1[10.20]", or what ARP they were: "t0:1(reply)").
pub fn run_steps(lab: &Lab, steps: &[Value]) -> Vec<(String, String)> {
    let file = lab.dir.join("steps.json");
    std::fs::write(&file, serde_json::to_string(steps).unwrap()).unwrap();
    let out = lab
        .tester
        .exec(PYTHON, &[PORTS, "t0,t1,t2,t3", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ports.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let mut rx: Vec<String> = v["rx"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(p, n)| {
                    let list = |k: &str| -> Option<String> {
                        let t: Vec<&str> = v[k][p]
                            .as_array()?
                            .iter()
                            .filter_map(|x| x.as_str())
                            .collect();
                        Some(t.join(","))
                    };
                    match (list("tags"), list("arp")) {
                        (Some(t), _) => format!("{p}:{n}[{t}]"),
                        (None, Some(a)) => format!("{p}:{n}({a})"),
                        (None, None) => format!("{p}:{n}"),
                    }
                })
                .collect();
            rx.sort();
            (v["name"].as_str().unwrap().to_string(), rx.join(" "))
        })
        .collect()
}

/// sluice on d0-d3 with `l2` (sub-interfaces, bridge domains) after the interfaces; the
/// daemon and its control socket.
pub fn sluice_with(lab: &Lab, l2: &str) -> (Daemon, PathBuf) {
    let socket = lab.dir.join("cli.sock");
    let cfg = lab.dir.join("dut.toml");
    let mut text = format!(
        "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n",
        socket.display()
    );
    // 4 096 receive slots hold 200 ms at the tests' 20 kpps: a worker kept off its CPU by a
    // loaded machine loses nothing (the default 512 held 25 ms, and CI once lost 249 frames).
    for k in 0..4 {
        text +=
            &format!("[[interface]]\nname = \"d{k}\"\ndriver = \"af_packet\"\nring-size = 4096\n");
    }
    text += l2;
    std::fs::write(&cfg, text).unwrap();
    (Daemon::start(&lab.dut, &cfg, &socket), socket)
}

/// sluice bridging d0-d3 in bridge domain 10.
pub fn sluice_bridge(lab: &Lab) -> (Daemon, PathBuf) {
    sluice_with(lab, BD10)
}

/// The DUT a Linux bridge br0 over d0-d3.
pub fn linux_bridge(lab: &Lab) {
    let d = &lab.dut;
    d.ip(&["link", "add", "br0", "type", "bridge"]);
    for k in 0..4 {
        d.ip(&["link", "set", &format!("d{k}"), "master", "br0"]);
    }
    d.ip(&["link", "set", "br0", "up"]);
    // Ports forward at once: STP is off by default.
    std::thread::sleep(Duration::from_millis(200));
}
