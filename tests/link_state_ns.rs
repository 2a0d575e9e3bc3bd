//! The host devices under af_packet interfaces change while sluice runs: a peer goes down
//! (no carrier), a device is set down, a device is deleted and later created again under
//! its name. sluice must show each state within a second (from rtnetlink notifications),
//! count what it could not send to a deleted device as drops with their reason, keep
//! forwarding on its other interfaces with every buffer accounted for, and take the
//! recreated device back into use (af_packet reopens its sockets; af_xdp says plainly that
//! it does not and the device stays deleted until a restart).
//!
//! Tester namespace: t0, t1, t2; DUT namespace: d0, d1, d2 (veth pairs ti–di). sluice
//! cross-connects d0 ↔ d1 and d2 → d1.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn config(dir: &Path, driver: &str, workers: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("dut.toml");
    let mut text = format!(
        "[dataplane]\nworkers = {workers}\nbuffers = 32768\nhugepages = \"never\"\n\
         [control]\nsocket = \"{}\"\n",
        socket.display()
    );
    for d in ["d0", "d1", "d2"] {
        text += &format!("[[interface]]\nname = \"{d}\"\ndriver = \"{driver}\"\n");
        if driver == "af_xdp" {
            text += "xdp-mode = \"generic\"\n";
        }
    }
    for (rx, tx) in [("d0", "d1"), ("d1", "d0"), ("d2", "d1")] {
        text += &format!("[[xconnect]]\nrx = \"{rx}\"\ntx = \"{tx}\"\n");
    }
    std::fs::write(&cfg, text).unwrap();
    (cfg, socket)
}

fn interface(socket: &Path, name: &str) -> Value {
    ctl_json(socket, "show interface")
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap()
        .clone()
}

/// Wait until `name`'s link reads `want`; fail if that takes longer than `within`.
fn expect_link(socket: &Path, name: &str, want: &str, within: Duration) -> Value {
    let start = Instant::now();
    loop {
        let i = interface(socket, name);
        if i["link"] == want {
            return i;
        }
        assert!(
            start.elapsed() < within,
            "{name}: link not {want} after {within:?}: {i}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `sluice gen` in the tester namespace; returns its JSON summary.
fn gen(tester: &Netns, args: &[&str]) -> Value {
    gen_json(tester, args)
}

/// Frames the tester's receiver saw, its own ring's misses included (the loaded machine's
/// tester may miss some; sluice's side is checked on its own counters).
fn seen(g: &Value) -> u64 {
    g["rx_packets"].as_u64().unwrap() + g["rx_ring_drops"].as_u64().unwrap()
}

/// One namespace test at a time: two daemons and generators at once would starve 2 cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn af_packet_link_states_deletion_and_reattach() {
    if !needs_root() {
        return;
    }
    scenario("af_packet", 1);
}

/// Two workers: two rx rings in a fanout group, which must be rebuilt on the new device.
#[test]
fn af_packet_two_workers_reattach_with_fanout() {
    if !needs_root() {
        return;
    }
    scenario("af_packet", 2);
}

#[test]
fn af_xdp_link_states_and_deletion() {
    if !needs_root() {
        return;
    }
    scenario("af_xdp", 1);
}

fn scenario(driver: &str, workers: usize) {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tag = format!("{}{workers}", &driver[3..4]);
    let tester = Netns::new(&format!("lt{tag}"));
    let dut = Netns::new(&format!("ld{tag}"));
    for i in 0..3 {
        veth(&tester, &format!("t{i}"), &dut, &format!("d{i}"), 1500);
    }
    dut.sysctl("net.ipv4.ip_forward", "0");
    let dir = tmpdir(&format!("linkstate{tag}"));
    let (cfg, socket) = config(&dir, driver, workers);
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    let second = Duration::from_secs(1);

    for d in ["d0", "d1", "d2"] {
        let i = interface(&socket, d);
        assert_eq!(
            (&i["state"], &i["admin"], &i["link"]),
            (&Value::from("up"), &Value::from("up"), &Value::from("up")),
            "{i}"
        );
        assert_eq!(i["link_changes"], 0, "{i}");
    }

    // The peer goes down: d2 is up but has no carrier.
    tester.ip(&["link", "set", "t2", "down"]);
    let d2 = expect_link(&socket, "d2", "lower-down", second);
    assert_eq!(d2["state"], "lower-down", "{d2}");
    assert_eq!(d2["admin"], "up", "{d2}");
    assert_eq!(d2["link_changes"], 1, "{d2}");
    // What sluice sends to d2 meanwhile is dropped at once, counted with its reason.
    ctl(&socket, "set interface l2 xconnect d1 d2").unwrap();
    gen(
        &tester,
        &["--tx", "t1", "--count", "500", "--rate", "20000"],
    );
    std::thread::sleep(Duration::from_millis(200));
    let d2 = interface(&socket, "d2");
    assert_eq!(d2["tx_dropped_link_down"], 500, "{d2}");
    assert_eq!(d2["tx_errors"], 500, "{d2}");
    assert_eq!(d2["tx_packets"], 0, "{d2}");
    tester.ip(&["link", "set", "t2", "up"]);
    expect_link(&socket, "d2", "up", second);

    // The device itself set down, then up again.
    dut.ip(&["link", "set", "d2", "down"]);
    let d2 = expect_link(&socket, "d2", "down", second);
    assert_eq!(d2["state"], "no-link", "{d2}");
    dut.ip(&["link", "set", "d2", "up"]);
    let d2 = expect_link(&socket, "d2", "up", second);
    assert_eq!(d2["link_changes"], 4, "{d2}");

    // Deleted (its peer t2 goes with it).
    dut.ip(&["link", "del", "d2"]);
    let d2 = expect_link(&socket, "d2", "deleted", second);
    assert_eq!(d2["state"], "deleted", "{d2}");
    // The kernel closes a device before it unregisters it: up → down → deleted.
    assert_eq!(d2["link_changes"], 6, "{d2}");
    gen(
        &tester,
        &["--tx", "t1", "--count", "300", "--rate", "20000"],
    );
    std::thread::sleep(Duration::from_millis(200));
    let d2 = interface(&socket, "d2");
    assert_eq!(d2["tx_dropped_no_device"], 300, "{d2}");
    assert_eq!(d2["tx_errors"], 800, "{d2}");
    let errors = ctl(&socket, "show errors").unwrap();
    assert!(errors.contains("d2-tx"), "{errors}");
    // The tx node names the reason; the counts of every worker add up to the drops.
    let named: u64 = ctl_json(&socket, "show errors")
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["node"] == "d2-tx" && e["reason"] == "link down or device gone")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(named, 800, "{errors}");

    // The daemon lives on and still forwards d0 ↔ d1, every frame.
    ctl(&socket, "set interface l2 xconnect d1 d0").unwrap();
    let before = (interface(&socket, "d0"), interface(&socket, "d1"));
    let g = gen(
        &tester,
        &[
            "--tx", "t0", "--rx", "t1", "--bi", "--count", "5000", "--rate", "10000", "--flows",
            "8",
        ],
    );
    let sent = g["tx_packets"].as_u64().unwrap();
    assert!(sent >= 5000, "{g}");
    assert_eq!(seen(&g), sent, "{g}");
    assert_eq!(g["rx_corrupt"], 0, "{g}");
    std::thread::sleep(Duration::from_millis(200));
    let (d0, d1) = (interface(&socket, "d0"), interface(&socket, "d1"));
    let delta = |a: &Value, b: &Value, k: &str| a[k].as_u64().unwrap() - b[k].as_u64().unwrap();
    let (rx0, rx1) = (
        delta(&d0, &before.0, "rx_packets"),
        delta(&d1, &before.1, "rx_packets"),
    );
    assert!(rx0 > 0 && rx1 > 0, "both directions: {d0} {d1}");
    assert_eq!(rx0 + rx1, sent, "{d0} {d1}");
    assert_eq!(delta(&d1, &before.1, "tx_packets"), rx0, "{d1}");
    assert_eq!(delta(&d0, &before.0, "tx_packets"), rx1, "{d0}");
    let buffers = ctl_json(&socket, "show buffers");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");
    let in_use = buffers["in_use"].as_u64().unwrap();
    if driver == "af_xdp" {
        // Fill rings are topped up in batches of 64, so each may be short of full by less;
        // and the last transmit bursts' buffers wait in the completion rings until the next
        // burst reaps them (counted in `in_drivers`, so `unaccounted` stays 0).
        assert!(in_use.abs_diff(idle) < 3 * 64, "{idle} {buffers}");
    } else {
        assert_eq!(in_use, idle, "{buffers}");
    }

    // The device comes back under its name.
    veth(&tester, "t2", &dut, "d2", 1500);
    if driver == "af_xdp" {
        // af_xdp does not reattach: the device stays deleted, and sluice says why.
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let d2 = interface(&socket, "d2");
            assert_eq!(d2["link"], "deleted", "{d2}");
            let note = d2["details"]["link-note"].as_str().unwrap_or_default();
            if note.contains("restart") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no note about the new device: {d2}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    } else {
        // af_packet reopens its sockets on it.
        let d2 = expect_link(&socket, "d2", "up", Duration::from_secs(2));
        assert_eq!(d2["state"], "up", "{d2}");
        let note = d2["details"]["link-note"].as_str().unwrap_or_default();
        assert!(note.contains("reattached"), "{d2}");
        // d2 → d1 works again, and so does d1 → d2.
        ctl(&socket, "set interface l2 xconnect d1 d2").unwrap();
        let g = gen(
            &tester,
            &[
                "--tx", "t2", "--rx", "t1", "--bi", "--count", "2000", "--rate", "10000",
                "--flows", "8",
            ],
        );
        let sent = g["tx_packets"].as_u64().unwrap();
        assert_eq!(seen(&g), sent, "{g}");
        std::thread::sleep(Duration::from_millis(200));
        let d2 = interface(&socket, "d2");
        let (tx2, rx2) = (
            d2["tx_packets"].as_u64().unwrap(),
            d2["rx_packets"].as_u64().unwrap(),
        );
        assert!(tx2 > 0 && rx2 > 0, "both directions: {d2}");
        assert_eq!(tx2 + rx2, sent, "{d2}");
    }
    let buffers = ctl_json(&socket, "show buffers");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");

    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
