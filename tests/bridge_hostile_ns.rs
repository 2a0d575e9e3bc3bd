//! What a host on a bridge port cannot do. IEEE 802.1D's reserved addresses, checked against
//! Linux: the same frames
//! (to each reserved link-local group 01:80:C2:00:00:00-0F, from a multicast and from the
//! all-zero source, with ordinary frames as controls) go through a Linux bridge and through a
//! sluice bridge domain, and must come out of the same ports — and be learnt from, or not, the
//! same way. Then both with a group forwarding mask (802.1X and LLDP let through). The
//! topology is tests/bridge_ns.rs's: tester ports t0–t3, DUT ports d0–d3;
//! tests/bridge/ports.py sends and reports where each step's frames came out.

mod common;
use common::bridge::*;
use common::*;
use serde_json::{json, Value};

const ZERO: &str = "00:00:00:00:00:00";
const FLOODED: &str = "t1:1 t2:1 t3:1";

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lab(tag: &str) -> Lab {
    let (t, d, dir) = (
        format!("dt{tag}"),
        format!("dd{tag}"),
        format!("b8021d{tag}"),
    );
    Lab::new(&t, &d, 4, 1500, &dir)
}

fn group(n: u8) -> String {
    format!("01:80:c2:00:00:{n:02x}")
}

fn step(name: &str, port: &str, src: &str, dst: &str) -> Value {
    json!({ "name": name, "send": [{ "port": port, "src": src, "dst": dst }], "wait_ms": 250 })
}

/// Each step and where Linux's bridge sends its frame (the expectation sluice must meet).
fn steps() -> Vec<(Value, String, &'static str)> {
    let mut s: Vec<(Value, String, &str)> = Vec::new();
    let mut add = |name: String, port, src, dst: &str, want| {
        s.push((step(&name, port, src, dst), name, want));
    };
    add("control: unknown unicast".into(), "t0", A, B, FLOODED);
    // 01:80:c2:00:00:00 is forwarded: neither bridge runs a spanning tree.
    add(format!("to {}", group(0)), "t0", A, &group(0), FLOODED);
    for n in 1..=0x0f {
        add(format!("to {}", group(n)), "t0", A, &group(n), "");
    }
    add(
        format!("control: to {}", group(0x10)),
        "t0",
        A,
        &group(0x10),
        FLOODED,
    );
    add(
        "multicast source".into(),
        "t0",
        "01:00:5e:00:00:01",
        BROADCAST,
        "",
    );
    add("zero source".into(), "t0", ZERO, BROADCAST, "");
    add(
        "to the zero address: not learnt".into(),
        "t1",
        B,
        ZERO,
        "t0:1 t2:1 t3:1",
    );
    add("C sends to a reserved group".into(), "t2", C, &group(3), "");
    add("C was learnt from it".into(), "t0", A, C, "t2:1");
    add("D sends a PAUSE".into(), "t3", D, &group(1), "");
    add("D was not learnt from it".into(), "t0", A, D, FLOODED);
    s
}

/// With group-fwd-mask 0x4008: 802.1X (:03) and LLDP (:0e) go through, :04 still not.
fn masked_steps() -> Vec<(Value, String, &'static str)> {
    let from_t1 = "t0:1 t2:1 t3:1";
    [(3, from_t1), (0x0e, from_t1), (4, "")]
        .into_iter()
        .map(|(n, want)| {
            let name = format!("masked: to {}", group(n));
            (step(&name, "t1", B, &group(n)), name, want)
        })
        .collect()
}

/// Run `steps` from the tester; returns each step's name and where its frames came out.
fn run(lab: &Lab, steps: &[(Value, String, &str)]) -> Vec<(String, String)> {
    let list: Vec<Value> = steps.iter().map(|s| s.0.clone()).collect();
    run_steps(lab, &list)
}

fn check(who: &str, got: &[(String, String)], steps: &[(Value, String, &str)]) {
    let want: Vec<(String, String)> = steps
        .iter()
        .map(|(_, n, w)| (n.clone(), w.to_string()))
        .collect();
    assert_eq!(got, want, "{who}");
}

#[test]
fn reserved_groups_and_bad_sources_as_the_linux_bridge() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (plain, masked) = (steps(), masked_steps());

    let linux = lab("l");
    linux_bridge(&linux);
    let d = &linux.dut;
    check("linux bridge", &run(&linux, &plain), &plain);
    // Linux refuses to forward :00-:02 by the mask, as sluice does.
    let refused = d
        .exec(
            "ip",
            &[
                "link",
                "set",
                "br0",
                "type",
                "bridge",
                "group_fwd_mask",
                "1",
            ],
        )
        .output()
        .unwrap();
    assert!(!refused.status.success(), "Linux takes group_fwd_mask 1");
    d.ip(&[
        "link",
        "set",
        "br0",
        "type",
        "bridge",
        "group_fwd_mask",
        "0x4008",
    ]);
    check("linux bridge, masked", &run(&linux, &masked), &masked);
    drop(linux);

    let lab = lab("s");
    let (mut daemon, socket) = sluice_bridge(&lab);
    check("sluice", &run(&lab, &plain), &plain);
    assert!(
        ctl(&socket, "create bridge-domain 10 group-fwd-mask 1").is_err(),
        "sluice takes group-fwd-mask 1"
    );
    ctl(&socket, "create bridge-domain 10 group-fwd-mask 0x4008").unwrap();
    check("sluice, masked", &run(&lab, &masked), &masked);

    // Every frame not forwarded is a drop counted with its reason.
    let errors = ctl(&socket, "show errors").unwrap();
    let count = |reason: &str| -> u64 {
        errors
            .lines()
            .filter(|l| l.contains(reason))
            .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .sum()
    };
    assert_eq!(
        count("source is a group or all-zero address"),
        2,
        "{errors}"
    );
    // :01-:0f before the mask (:01 twice, for D's PAUSE; :03 twice, for C), :04 after it.
    assert_eq!(
        count("to a reserved link-local group"),
        15 + 2 + 1,
        "{errors}"
    );
    let fib = ctl_json(&socket, "show l2fib bd 10");
    let macs: Vec<&str> = fib
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["mac"].as_str())
        .collect();
    assert!(!macs.contains(&ZERO) && !macs.contains(&D), "{fib}");
    assert!(daemon.stop(), "clean exit");
}

#[test]
fn a_mac_flood_from_one_port_leaves_the_others_learning() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = lab("f");
    let (mut daemon, socket) = sluice_bridge(&lab);
    let bd = || ctl_json(&socket, "show bridge-domain 10 detail")["bridge_domains"][0].clone();
    // Learnt entries age by default, after Linux's 300 s.
    assert_eq!(bd()["mac_age_s"], 300, "{}", bd());
    ctl(&socket, "set interface l2 bridge d0 10 mac-limit 100").unwrap();
    let flood = json!({ "name": "MAC flood from t0", "send": [{ "port": "t0", "src": A,
        "dst": BROADCAST, "count": 300, "vary_src": true }], "wait_ms": 500 });
    let after = vec![
        (
            flood,
            "MAC flood from t0".to_string(),
            "t1:300 t2:300 t3:300",
        ),
        (
            step("B on t1", "t1", B, BROADCAST),
            "B on t1".into(),
            "t0:1 t2:1 t3:1",
        ),
        (
            step("to B: learnt", "t2", C, B),
            "to B: learnt".into(),
            "t1:1",
        ),
    ];
    check("sluice", &run(&lab, &after), &after);
    let r = bd();
    let port = |name: &str| {
        r["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["interface"] == name)
            .cloned()
            .unwrap()
    };
    let d0 = port("d0");
    assert_eq!(
        (
            d0["mac_limit"].as_u64(),
            d0["learnt_entries"].as_u64(),
            d0["over_limit"].as_u64()
        ),
        (Some(100), Some(100), Some(200)),
        "{r}"
    );
    assert_eq!(r["over_port_limit"], 200, "{r}");
    assert_eq!(port("d1")["learnt_entries"], 1, "{r}");
    let text = ctl(&socket, "show bridge-domain 10 detail").unwrap();
    assert!(text.contains("over port limit 200"), "{text}");
    assert!(daemon.stop(), "clean exit");
}
