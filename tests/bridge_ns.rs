//! Bridging real frames, checked against Linux: a tester namespace with ports t0–t3, a DUT
//! namespace with d0–d3 (veth pairs tK–dK), the DUT a sluice bridge domain or a Linux bridge
//! over d0–d3. tests/bridge/ports.py sends crafted frames and reports on which ports each
//! step's frames came out. The learning steps must come out the same from both bridges; the
//! sluice-only steps (static entries, split horizon, the MAC limit, ageing) check sluice's
//! counters and that every flood copy went back to the pool.

mod common;
use common::bridge::*;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lab(tag: &str) -> Lab {
    let (t, d, dir) = (
        format!("bt{tag}"),
        format!("bd{tag}"),
        format!("bridge{tag}"),
    );
    Lab::new(&t, &d, 4, 1500, &dir)
}

fn send(port: &str, src: &str, dst: &str) -> Value {
    json!({ "port": port, "src": src, "dst": dst })
}

fn send_tagged(port: &str, vlans: &[u16], src: &str, dst: &str) -> Value {
    json!({ "port": port, "src": src, "dst": dst, "vlan": vlans })
}

fn step(name: &str, sends: Vec<Value>) -> Value {
    json!({ "name": name, "send": sends, "wait_ms": 300 })
}

/// Learning as both bridges do it: (step, where its frames must come out).
fn learning_steps() -> (Vec<Value>, Vec<(&'static str, &'static str)>) {
    let steps = vec![
        step("unknown unicast floods", vec![send("t0", A, B)]),
        step("the reply goes to the learnt port", vec![send("t1", B, A)]),
        step("now both are known", vec![send("t0", A, B)]),
        step("broadcast floods", vec![send("t2", C, BROADCAST)]),
        step("to the port it came from: dropped", vec![send("t1", B, B)]),
        step("A moves to t3", vec![send("t3", A, B)]),
        step("B to A follows the move", vec![send("t1", B, A)]),
        step("C was learnt from the broadcast", vec![send("t0", A, C)]),
    ];
    let want = vec![
        ("unknown unicast floods", "t1:1 t2:1 t3:1"),
        ("the reply goes to the learnt port", "t0:1"),
        ("now both are known", "t1:1"),
        ("broadcast floods", "t0:1 t1:1 t3:1"),
        ("to the port it came from: dropped", ""),
        ("A moves to t3", "t1:1"),
        ("B to A follows the move", "t3:1"),
        ("C was learnt from the broadcast", "t2:1"),
    ];
    (steps, want)
}

fn assert_steps(who: &str, got: &[(String, String)], want: &[(&str, &str)]) {
    let got: Vec<(&str, &str)> = got.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(got, want, "{who}");
}

#[test]
fn learning_floods_and_moves_as_a_linux_bridge_does() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (steps, want) = learning_steps();

    let linux = lab("l");
    linux_bridge(&linux);
    assert_steps("linux bridge", &run_steps(&linux, &steps), &want);
    drop(linux);

    let lab = lab("s");
    let (mut daemon, socket) = sluice_bridge(&lab);
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    assert_steps("sluice", &run_steps(&lab, &steps), &want);

    let fib = ctl_json(&socket, "show l2fib bd 10");
    let entries: Vec<(String, String)> = fib
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let (m, i) = (&e["mac"], &e["interface"]);
            (m.as_str().unwrap().into(), i.as_str().unwrap().into())
        })
        .collect();
    // A moved to t3 and back to t0 in the last step.
    let want_fib: Vec<(String, String)> = [(A, "d0"), (B, "d1"), (C, "d2")]
        .iter()
        .map(|(m, i)| (m.to_string(), i.to_string()))
        .collect();
    assert_eq!(entries, want_fib, "{fib}");
    let bd = &ctl_json(&socket, "show bridge-domain 10 detail")["bridge_domains"][0];
    assert_eq!(
        (bd["learnt"].as_u64(), bd["moves"].as_u64()),
        (Some(3), Some(2)),
        "{bd}"
    );
    let errors = ctl(&socket, "show errors").unwrap();
    assert!(
        errors.contains("destination is behind the interface the frame came in by"),
        "{errors}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let in_use = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    assert_eq!(in_use, idle, "every flood copy back in the pool");
    assert!(daemon.stop(), "clean exit");
}

#[test]
fn static_entries_split_horizon_mac_limit_and_ageing() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab("x");
    let (mut daemon, socket) = sluice_bridge(&lab);
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    let cli = |line: &str| ctl(&socket, line).unwrap_or_else(|e| panic!("{line}: {e}"));

    // A static entry: frames to D go to t2 only, and D sending from t3 does not move it.
    cli(&format!("l2fib add {D} 10 d2 static"));
    let got = run_steps(
        &lab,
        &[
            step("to the static entry", vec![send("t0", A, D)]),
            step("D seen elsewhere", vec![send("t3", D, A)]),
            step("still to the static entry", vec![send("t1", B, D)]),
        ],
    );
    assert_steps(
        "static",
        &got,
        &[
            ("to the static entry", "t2:1"),
            ("D seen elsewhere", "t0:1"),
            ("still to the static entry", "t2:1"),
        ],
    );

    // d2 and d3 in one split-horizon group: nothing passes between them.
    cli("set interface l2 bridge d2 10 shg 1");
    cli("set interface l2 bridge d3 10 shg 1");
    let got = run_steps(
        &lab,
        &[
            step(
                "broadcast from a group member",
                vec![send("t2", C, BROADCAST)],
            ),
            step(
                "broadcast from outside the group",
                vec![send("t0", A, BROADCAST)],
            ),
        ],
    );
    assert_steps(
        "split horizon",
        &got,
        &[
            ("broadcast from a group member", "t0:1 t1:1"),
            ("broadcast from outside the group", "t1:1 t2:1 t3:1"),
        ],
    );

    // ARP termination: a request for an address the domain knows is answered on the port it
    // came in by and flooded nowhere; one for an unknown address is flooded as usual.
    cli("create bridge-domain 10 arp-term on");
    cli("set bridge-domain arp entry 10 192.0.2.9 02:00:00:00:00:09");
    let arp = |target: &str| json!({ "port": "t0", "src": A, "arp_target": target });
    let got = run_steps(
        &lab,
        &[
            step("ARP for a known address", vec![arp("192.0.2.9")]),
            step("ARP for another", vec![arp("192.0.2.77")]),
        ],
    );
    assert_steps(
        "arp-term",
        &got,
        &[
            (
                "ARP for a known address",
                "t0:1(reply 192.0.2.9 02:00:00:00:00:09)",
            ),
            (
                "ARP for another",
                "t1:1(request) t2:1(request) t3:1(request)",
            ),
        ],
    );
    let errors = ctl(&socket, "show errors").unwrap();
    assert!(
        errors.contains("ARP requests answered by the bridge domain"),
        "{errors}"
    );
    cli("set bridge-domain arp entry del 10 192.0.2.9");
    cli("create bridge-domain 10 arp-term off");

    // A MAC flood beyond the limit: 50 learnt, the other 150 counted, never stored.
    cli("create bridge-domain 10 mac-limit 50");
    cli("clear l2fib");
    let before = &ctl_json(&socket, "show bridge-domain 10")["bridge_domains"][0];
    let over_before = before["over_limit"].as_u64().unwrap();
    let flood = json!({ "name": "MAC flood", "send": [{ "port": "t0", "src": A,
        "dst": BROADCAST, "count": 200, "vary_src": true }], "wait_ms": 500 });
    let got = run_steps(&lab, &[flood]);
    assert_eq!(
        got[0].1, "t1:200 t2:200 t3:200",
        "every flood copy delivered"
    );
    let after = &ctl_json(&socket, "show bridge-domain 10")["bridge_domains"][0];
    assert_eq!(after["learnt_entries"], 50, "{after}");
    assert_eq!(
        after["over_limit"].as_u64().unwrap() - over_before,
        150,
        "{after}"
    );

    // Ageing: A learnt, then silent for longer than the age, is forgotten and flooded to.
    cli("create bridge-domain 10 mac-age 2s mac-limit 1000");
    cli("clear l2fib");
    run_steps(&lab, &[step("learn A", vec![send("t0", A, BROADCAST)])]);
    let has_a = || {
        ctl_json(&socket, "show l2fib bd 10")
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["mac"] == A)
    };
    assert!(has_a(), "A learnt");
    std::thread::sleep(Duration::from_millis(4500));
    assert!(!has_a(), "A aged out");
    let bd = &ctl_json(&socket, "show bridge-domain 10 detail")["bridge_domains"][0];
    assert!(bd["aged"].as_u64().unwrap() >= 1, "{bd}");
    let got = run_steps(&lab, &[step("to A again", vec![send("t1", B, A)])]);
    assert_eq!(got[0].1, "t0:1 t2:1 t3:1", "unknown again: flooded");

    std::thread::sleep(Duration::from_millis(200));
    let in_use = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    assert_eq!(in_use, idle, "every flood copy back in the pool");
    assert!(daemon.stop(), "clean exit");
}

/// VLANs into one bridge: tagged 100 on d0, tagged 200 on d1, untagged on d2, QinQ 10/20 on
/// d3 (802.1ad outer), as sub-interfaces in a bridge domain. Frames come out retagged for the
/// port they leave by; tags no sub-interface takes are dropped. (The same topology with Linux
/// VLAN devices in a bridge would be the reference, but these machines' kernels are built
/// without 802.1Q support: `ip link add ... type vlan` answers "Unknown device type". The
/// expectations are what 802.1Q and 802.1ad say such a bridge does.)
#[test]
fn vlan_sub_interfaces_bridge_with_retagging_and_qinq() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let steps = vec![
        step(
            "tagged 100 floods, retagged per port",
            vec![send_tagged("t0", &[100], A, BROADCAST)],
        ),
        step(
            "untagged reply to A goes out tagged 100",
            vec![send("t2", C, A)],
        ),
        step("QinQ to A", vec![send_tagged("t3", &[10, 20], D, A)]),
        step(
            "A to D gets both tags",
            vec![send_tagged("t0", &[100], A, D)],
        ),
        step(
            "200 to C leaves untagged",
            vec![send_tagged("t1", &[200], B, C)],
        ),
        step(
            "a VLAN nobody takes",
            vec![send_tagged("t0", &[300], A, BROADCAST)],
        ),
        step("untagged on d0: no mode", vec![send("t0", A, BROADCAST)]),
    ];
    let want = vec![
        (
            "tagged 100 floods, retagged per port",
            "t1:1[200] t2:1 t3:1[10.20]",
        ),
        ("untagged reply to A goes out tagged 100", "t0:1[100]"),
        ("QinQ to A", "t0:1[100]"),
        ("A to D gets both tags", "t3:1[10.20]"),
        ("200 to C leaves untagged", "t2:1"),
        ("a VLAN nobody takes", ""),
        ("untagged on d0: no mode", ""),
    ];

    let lab = lab("sv");
    let (mut daemon, socket) = sluice_with(
        &lab,
        "[[subinterface]]\nparent = \"d0\"\nid = 100\ndot1q = 100\n\
         [[subinterface]]\nparent = \"d1\"\nid = 200\ndot1q = 200\n\
         [[subinterface]]\nparent = \"d3\"\nid = 1020\nouter-dot1ad = 10\ninner-dot1q = 20\n\
         [[bridge-domain]]\nid = 10\nmembers = [\"d0.100\", \"d1.200\", \"d2\", \"d3.1020\"]\n",
    );
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    assert_steps("sluice sub-interfaces", &run_steps(&lab, &steps), &want);
    let errors = ctl(&socket, "show errors").unwrap();
    assert!(
        errors.contains("no sub-interface for the frame's VLAN tags"),
        "{errors}"
    );
    let ifs = ctl_json(&socket, "show interface d0.100");
    assert_eq!(ifs[0]["rx_packets"], 2, "{ifs}");
    assert_eq!(ifs[0]["tx_packets"], 2, "{ifs}");

    // Created and deleted while frames arrive: the tagged frames are dropped and counted
    // while it is gone, and forwarded again once it is back.
    ctl(&socket, "set interface l3 d0.100").unwrap();
    ctl(&socket, "delete sub-interface d0.100").unwrap();
    let gone = run_steps(
        &lab,
        &[step(
            "while d0.100 is gone",
            vec![send_tagged("t0", &[100], A, BROADCAST)],
        )],
    );
    assert_eq!(gone[0].1, "");
    ctl(&socket, "create sub-interface d0 100 dot1q 100").unwrap();
    ctl(&socket, "set interface l2 bridge d0.100 10").unwrap();
    let back = run_steps(
        &lab,
        &[step(
            "d0.100 back",
            vec![send_tagged("t0", &[100], A, BROADCAST)],
        )],
    );
    assert_eq!(back[0].1, "t1:1[200] t2:1 t3:1[10.20]");
    let names: Vec<String> = ctl_json(&socket, "show interface")
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names.iter().filter(|n| *n == "d0.100").count(),
        1,
        "{names:?}"
    );
    for (line, want) in [
        (
            "create sub-interface d0 101 dot1q 100",
            "already takes dot1q 100",
        ),
        ("create sub-interface d0.100 5", "is a sub-interface"),
        ("create sub-interface d0 5 dot1q 4095", "not a VLAN id"),
        ("delete sub-interface d0", "hardware interface"),
        ("delete sub-interface d0.100", "set interface l3"),
    ] {
        let e = ctl(&socket, line).expect_err(line);
        assert!(e.contains(want), "{line}: {e}");
    }
    std::thread::sleep(Duration::from_millis(200));
    let in_use = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    assert_eq!(in_use, idle, "every buffer back in the pool");
    assert!(daemon.stop(), "clean exit");
}

#[test]
fn bad_bridge_commands_are_refused_with_reasons() {
    if !needs_root() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab("e");
    let (_daemon, socket) = sluice_bridge(&lab);
    for (line, want) in [
        ("set interface l2 bridge d0 99", "no bridge domain 99"),
        (
            "set interface l2 bridge d0 10 shg 300",
            "not a split-horizon group",
        ),
        (
            "create bridge-domain 10 learn maybe",
            "learn takes on or off",
        ),
        ("create bridge-domain 10 mac-age 1h", "is not an age"),
        ("create bridge-domain 10 del", "has members"),
        (
            "l2fib add 01:00:5e:00:00:01 10 d0",
            "group or all-zero address",
        ),
        ("l2fib add zz 10 d0", "not a MAC address"),
        (
            "l2fib del 02:00:00:00:00:99 10",
            "is not in bridge domain 10",
        ),
        ("show l2fib bd x", "not a bridge domain id"),
        ("show bridge-domain 11", "no bridge domain 11"),
    ] {
        let e = ctl(&socket, line).expect_err(line);
        assert!(e.contains(want), "{line}: {e}");
    }
    // Out of the bridge and back: the domain can go once it is empty.
    for k in 0..4 {
        ctl(&socket, &format!("set interface l3 d{k}")).unwrap();
    }
    ctl(&socket, "create bridge-domain 10 del").unwrap();
    let all = ctl_json(&socket, "show bridge-domain");
    assert_eq!(all["bridge_domains"], json!([]), "{all}");
}

/// Sub-interfaces made and deleted while tagged traffic runs through others on the same
/// parent: the classifier tables are replaced under the workers' feet, and not one frame of
/// the running traffic is lost, corrupted or left in a buffer.
#[test]
fn sub_interfaces_come_and_go_under_traffic() {
    if !needs_root() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab("st");
    let (mut daemon, socket) = sluice_with(
        &lab,
        "[[subinterface]]\nparent = \"d0\"\nid = 100\ndot1q = 100\n\
         [[subinterface]]\nparent = \"d1\"\nid = 100\ndot1q = 100\n\
         [[xconnect]]\nrx = \"d0.100\"\ntx = \"d1.100\"\n",
    );
    let idle = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    let count = 40_000u64;
    let tester = &lab.tester;
    let churn = {
        let socket = socket.clone();
        std::thread::spawn(move || {
            let mut cycles = 0;
            // Until the generator is done; at most 2 000 cycles.
            while cycles < 2000 && !socket.with_extension("done").exists() {
                for line in [
                    "create sub-interface d0 200 dot1q 200",
                    "create sub-interface d0 300 dot1ad 300 inner-dot1q 7",
                    "set interface l2 xconnect d0.200 d1",
                    "set interface l3 d0.200",
                    "delete sub-interface d0.200",
                    "delete sub-interface d0.300",
                ] {
                    ctl(&socket, line).unwrap_or_else(|e| panic!("{line}: {e}"));
                }
                cycles += 1;
            }
            cycles
        })
    };
    let gen = gen_json(
        tester,
        &[
            "--tx",
            "t0",
            "--rx",
            "t1",
            "--vlan",
            "100",
            "--count",
            &count.to_string(),
            "--rate",
            "20000",
            "--verify",
            "all",
        ],
    );
    std::fs::write(socket.with_extension("done"), "").unwrap();
    let cycles = churn.join().unwrap();
    assert!(
        cycles >= 5,
        "only {cycles} create/delete cycles ran during the traffic"
    );
    assert_eq!(gen["tx_packets"], count, "{gen}");
    assert_eq!(
        gen["rx_packets"].as_u64().unwrap() + gen["rx_ring_drops"].as_u64().unwrap(),
        count,
        "{gen}"
    );
    assert_eq!(gen["rx_corrupt"], 0, "{gen}");
    let sub = &ctl_json(&socket, "show interface d0.100")[0];
    assert_eq!(sub["rx_packets"], count, "{sub}");
    assert_eq!(sub["drops"], 0, "{sub}");
    std::thread::sleep(Duration::from_millis(200));
    let in_use = ctl_json(&socket, "show buffers")["in_use"]
        .as_u64()
        .unwrap();
    assert_eq!(in_use, idle, "every buffer back in the pool");
    assert!(daemon.stop(), "clean exit");
}
