//! Routing to hosts on L2 segments. A bridge domain's routed interface (BVI): hosts A and B on one bridged LAN (d0, d1 in
//! bridge domain 10, bvi10 192.0.2.1/24 and 2001:db8:a::1/64), a far host F behind a routed
//! port (d2). Each host has a namespace of its own, so only sluice can carry packets between
//! them. A pings F through the BVI in both families, B through the bridge, and the BVI itself;
//! ARP and ND cross the bridge to reach the BVI and come back from it.

mod common;
use common::*;

const PYTHON: &str = "/usr/bin/python3";
const L3SUB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bridge/l3sub.py");
use std::path::PathBuf;
use std::process::Command;

fn ensure_ping() {
    if Command::new("ping").arg("-V").output().is_ok() {
        return;
    }
    let ok = Command::new("apt-get")
        .args(["install", "-y", "-qq", "iputils-ping"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "ping is missing and apt-get cannot install iputils-ping"
    );
}

/// A host port with both families, no duplicate address detection, and default routes via
/// `gw4`/`gw6`.
fn host(ns: &Netns, dev: &str, v4: &str, v6: &str, gw4: &str, gw6: &str) {
    for (k, v) in [
        ("accept_ra", "0"),
        ("accept_dad", "0"),
        ("disable_ipv6", "0"),
    ] {
        ns.sysctl(&format!("net.ipv6.conf.{dev}.{k}"), v);
    }
    ns.ip(&["addr", "add", v4, "dev", dev]);
    ns.ip(&["addr", "add", v6, "dev", dev, "nodad"]);
    ns.ip(&["route", "add", "default", "via", gw4]);
    ns.ip(&["-6", "route", "add", "default", "via", gw6]);
}

fn ping(ns: &Netns, args: &[&str]) -> (bool, String) {
    let o = ns.exec("ping", args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

fn config(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("dut.toml");
    let mut text = format!(
        "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n",
        socket.display()
    );
    for k in 0..3 {
        text += &format!("[[interface]]\nname = \"d{k}\"\ndriver = \"af_packet\"\n");
    }
    text += "address = [\"198.51.100.1/24\", \"2001:db8:f::1/64\"]\n\
             [[bridge-domain]]\nid = 10\nmembers = [\"d0\", \"d1\"]\n\
             [[bvi]]\ninstance = 10\nbridge-domain = 10\n\
             address = [\"192.0.2.1/24\", \"2001:db8:a::1/64\"]\n";
    std::fs::write(&cfg, text).unwrap();
    (cfg, socket)
}

#[test]
fn hosts_on_a_bridge_are_routed_through_its_bvi() {
    if !needs_root() {
        return;
    }
    ensure_ping();
    let a = Netns::new("bvia");
    let b = Netns::new("bvib");
    let f = Netns::new("bvif");
    let dut = Netns::new("bvid");
    veth(&a, "t0", &dut, "d0", 1500);
    veth(&b, "t1", &dut, "d1", 1500);
    veth(&f, "t2", &dut, "d2", 1500);
    host(
        &a,
        "t0",
        "192.0.2.2/24",
        "2001:db8:a::2/64",
        "192.0.2.1",
        "2001:db8:a::1",
    );
    host(
        &b,
        "t1",
        "192.0.2.3/24",
        "2001:db8:a::3/64",
        "192.0.2.1",
        "2001:db8:a::1",
    );
    host(
        &f,
        "t2",
        "198.51.100.2/24",
        "2001:db8:f::2/64",
        "198.51.100.1",
        "2001:db8:f::1",
    );
    dut.sysctl("net.ipv4.ip_forward", "0");
    let dir = tmpdir("bvi");
    let (cfg, socket) = config(&dir);
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();

    for (from, what, args) in [
        (
            &a,
            "the BVI",
            vec!["-c", "3", "-i", "0.2", "-W", "2", "192.0.2.1"],
        ),
        (
            &a,
            "B across the bridge",
            vec!["-c", "3", "-i", "0.2", "-W", "2", "192.0.2.3"],
        ),
        (
            &a,
            "F through the BVI",
            vec!["-c", "3", "-i", "0.2", "-W", "2", "198.51.100.2"],
        ),
        (
            &f,
            "A from the far side",
            vec!["-c", "3", "-i", "0.2", "-W", "2", "192.0.2.2"],
        ),
        (
            &a,
            "F over IPv6",
            vec!["-6", "-c", "3", "-i", "0.2", "-W", "2", "2001:db8:f::2"],
        ),
        (
            &b,
            "the BVI over IPv6",
            vec!["-6", "-c", "3", "-i", "0.2", "-W", "2", "2001:db8:a::1"],
        ),
    ] {
        let (ok, out) = ping(from, &args);
        if !ok {
            let errors = ctl(&socket, "show errors").unwrap_or_default();
            let ifs = ctl(&socket, "show interface").unwrap_or_default();
            panic!("ping {what}: {out}\n{errors}\n{ifs}");
        }
    }
    let bvi = &ctl_json(&socket, "show interface bvi10")[0];
    assert!(bvi["rx_packets"].as_u64().unwrap() >= 12, "{bvi}");
    assert!(bvi["tx_packets"].as_u64().unwrap() >= 12, "{bvi}");
    let bd = &ctl_json(&socket, "show bridge-domain 10 detail")["bridge_domains"][0];
    let members = bd["members"].as_array().unwrap();
    assert!(members.iter().any(|m| m["interface"] == "bvi10"), "{bd}");
    // The BVI's MAC is a static entry; the hosts were learnt.
    let fib = ctl_json(&socket, "show l2fib bd 10");
    assert!(
        fib.as_array()
            .unwrap()
            .iter()
            .any(|e| e["interface"] == "bvi10" && e["static"] == true),
        "{fib}"
    );
    for (line, want) in [
        ("set interface l2 bridge bvi10 10", "is a BVI"),
        ("set interface l2 bridge d2 10 bvi", "not a BVI"),
        ("bvi create instance 10", "exists already"),
        ("bvi delete d0", "not a BVI"),
        ("bvi delete bvi10", "set interface l3"),
    ] {
        let e = ctl(&socket, line).expect_err(line);
        assert!(e.contains(want), "{line}: {e}");
    }
    // Made at run time too: a second domain with its own BVI answers at once.
    ctl(&socket, "set interface l3 d1").unwrap();
    ctl(&socket, "create bridge-domain 20").unwrap();
    ctl(&socket, "set interface l2 bridge d1 20").unwrap();
    ctl(&socket, "bvi create instance 20").unwrap();
    ctl(&socket, "set interface l2 bridge bvi20 20 bvi").unwrap();
    ctl(&socket, "set interface ip address bvi20 203.0.113.1/24").unwrap();
    b.ip(&["addr", "add", "203.0.113.3/24", "dev", "t1"]);
    let (ok, out) = ping(&b, &["-c", "3", "-i", "0.2", "-W", "2", "203.0.113.1"]);
    assert!(ok, "ping bvi20: {out}");

    std::thread::sleep(std::time::Duration::from_millis(200));
    let in_use = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    assert_eq!(in_use, idle, "every buffer back in the pool");
    assert!(daemon.stop(), "clean exit");
}

/// An L3 sub-interface: d0.100 routes 192.0.2.0/24 on VLAN 100, d1 routes to a far host. The
/// host on VLAN 100 is raw frames (tests/bridge/l3sub.py: the kernels here have no 802.1Q
/// devices): sluice answers its tagged ARP, resolves it with tagged ARP, and routes its tagged
/// pings, to itself and to the far host, with the replies tagged 100.
#[test]
fn an_l3_sub_interface_routes_tagged_traffic() {
    if !needs_root() || !prerequisite(std::path::Path::new(PYTHON).exists(), PYTHON) {
        return;
    }
    ensure_ping();
    let h = Netns::new("l3sh");
    let f = Netns::new("l3sf");
    let dut = Netns::new("l3sd");
    veth(&h, "t0", &dut, "d0", 1500);
    veth(&f, "t2", &dut, "d1", 1500);
    host(
        &f,
        "t2",
        "198.51.100.2/24",
        "2001:db8:f::2/64",
        "198.51.100.1",
        "2001:db8:f::1",
    );
    dut.sysctl("net.ipv4.ip_forward", "0");
    let dir = tmpdir("l3sub");
    let socket = dir.join("cli.sock");
    let cfg = dir.join("dut.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"af_packet\"\n\
             [[interface]]\nname = \"d1\"\ndriver = \"af_packet\"\n\
             address = [\"198.51.100.1/24\"]\n\
             [[subinterface]]\nparent = \"d0\"\nid = 100\ndot1q = 100\n\
             address = [\"192.0.2.1/24\"]\n",
            socket.display()
        ),
    )
    .unwrap();
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let o = h
        .exec(
            PYTHON,
            &[L3SUB, "t0", "100", "192.0.2.2", "192.0.2.1", "198.51.100.2"],
        )
        .output()
        .unwrap();
    let got = common::json_output(&o);
    let errors = ctl(&socket, "show errors").unwrap_or_default();
    assert_eq!(
        got["arp"]["vlans"],
        serde_json::json!([100]),
        "{got}\n{errors}"
    );
    assert_eq!(
        got["ping_router"]["vlans"],
        serde_json::json!([100]),
        "{got}\n{errors}"
    );
    assert_eq!(
        got["ping_far"]["vlans"],
        serde_json::json!([100]),
        "{got}\n{errors}"
    );
    let sub = &ctl_json(&socket, "show interface d0.100")[0];
    assert!(sub["rx_packets"].as_u64().unwrap() >= 3, "{sub}");
    assert!(sub["tx_packets"].as_u64().unwrap() >= 3, "{sub}");
    assert!(daemon.stop(), "clean exit");
}
