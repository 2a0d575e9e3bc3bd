//! Issue 38's proof with real traffic: sluice cross-connects d0 → d1 (veth pairs to a
//! tester namespace, t0–d0 and t1–d1) while a generator sends a steady flow t0 → t1, and
//! `ctl apply` of a file that changes one route, one ACL rule and one bridge member on other
//! (pcap) interfaces runs in the middle of it. The flow loses nothing: what t0 sent (its
//! kernel counter), what d0 received and d1 sent (sluice's) and what t1 received (kernel)
//! are all the count sent; and the changed entries are changed, the others not.

mod common;
use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

const COUNT: u64 = 25_000;

fn config(dir: &Path) -> std::path::PathBuf {
    let cfg = dir.join("dut.toml");
    let pcap = |name: &str| {
        format!(
            "[[interface]]\nname = \"{name}\"\ndriver = \"pcap\"\ntx-file = \"{}/{name}.pcap\"\n",
            dir.display()
        )
    };
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nhugepages = \"never\"\n[control]\nsocket = \"{}/cli.sock\"\n\
             [[interface]]\nname = \"d0\"\ndriver = \"af_packet\"\nring-size = 4096\n\
             [[interface]]\nname = \"d1\"\ndriver = \"af_packet\"\nring-size = 4096\n\
             {}address = [\"192.0.2.1/24\"]\n{}{}\
             [[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n\
             [[bridge-domain]]\nid = 10\nmembers = [\"p1\"]\n\
             [[route]]\nprefix = \"172.16.0.0/12\"\nvia = [\"192.0.2.2\"]\n\
             [[acl]]\nname = \"edge\"\nrules = [\"deny proto icmp\", \"permit\"]\n\
             [[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n",
            dir.display(),
            pcap("p0"),
            pcap("p1"),
            pcap("p2"),
        ),
    )
    .unwrap();
    cfg
}

/// A kernel counter of a device in a namespace.
fn counter(ns: &Netns, dev: &str, name: &str) -> u64 {
    let out = ns
        .exec("cat", &[&format!("/sys/class/net/{dev}/statistics/{name}")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn sluice_counter(socket: &Path, itf: &str, key: &str) -> u64 {
    let v = ctl_json(socket, &format!("show interface {itf}"));
    let v = if v.is_array() { v[0].clone() } else { v };
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn apply_changes_a_route_an_acl_rule_and_a_bridge_member_while_a_flow_loses_nothing() {
    if !needs_root() {
        return;
    }
    let Lab { tester, dut, dir } = Lab::new("apt", "apd", 2, 1500, "apply-ns");
    dut.sysctl("net.ipv4.ip_forward", "0");
    let cfg = config(&dir);
    let socket = dir.join("cli.sock");
    let _daemon = Daemon::start(&dut, &cfg, &socket);

    let start = dir.join("start-saved.toml");
    ctl(&socket, &format!("save {}", start.display())).unwrap();
    let text = std::fs::read_to_string(&start).unwrap();
    let changed = edit(&text, "via = [\"192.0.2.2\"]", "via = [\"192.0.2.3\"]");
    let changed = edit(
        &changed,
        "rules = [\"deny proto icmp\", \"permit\"]",
        "rules = [\"deny proto icmp\", \"deny proto udp dport 53\", \"permit\"]",
    );
    let changed = edit(&changed, "members = [\"p1\"]", "members = [\"p1\", \"p2\"]");
    let file = dir.join("changed.toml");
    std::fs::write(&file, &changed).unwrap();
    let (entries, d) = diff_entries(&socket, &file);
    assert_eq!(
        entries,
        [
            "bridge-domain id=10",
            "route prefix=172.16.0.0/12 table=0",
            "acl name=edge"
        ],
        "{d}"
    );

    let (t0_tx, t1_rx) = (
        counter(&tester, "t0", "tx_packets"),
        counter(&tester, "t1", "rx_packets"),
    );
    let gen = gen_command(
        &tester,
        &[
            "--tx",
            "t0",
            "--rx",
            "t1",
            "--size",
            "64,512,1514",
            "--count",
            &COUNT.to_string(),
            "--rate",
            "5000",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Apply once the flow runs through sluice.
    let deadline = Instant::now() + Duration::from_secs(20);
    while sluice_counter(&socket, "d1", "tx_packets") == 0 {
        assert!(Instant::now() < deadline, "the flow did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = ctl(&socket, &format!("apply {}", file.display())).unwrap();
    let through = sluice_counter(&socket, "d1", "tx_packets");
    assert!(out.contains("applied:\n"), "{out}");
    let gen = gen.wait_with_output().unwrap();
    let gen = json_output(&gen);
    // The apply ran while the flow was under way.
    assert!(
        through < COUNT,
        "d1 had sent {through} of {COUNT} after the apply"
    );

    assert_eq!(gen["tx_packets"], COUNT, "{gen}");
    std::thread::sleep(Duration::from_millis(200));
    let sent = counter(&tester, "t0", "tx_packets") - t0_tx;
    let received = counter(&tester, "t1", "rx_packets") - t1_rx;
    assert_eq!(sent, COUNT, "t0 sent");
    assert_eq!(received, COUNT, "t1 received: {gen}");
    assert_eq!(sluice_counter(&socket, "d0", "rx_packets"), COUNT);
    assert_eq!(sluice_counter(&socket, "d1", "tx_packets"), COUNT);
    assert_eq!(sluice_counter(&socket, "d0", "drops"), 0);
    assert_eq!(sluice_counter(&socket, "d1", "tx_errors"), 0);
    assert_eq!(gen["rx_corrupt"], 0, "{gen}");

    // The three entries changed, and the running state is now the file.
    let fib = ctl(&socket, "show ip fib 172.16.0.0/12").unwrap();
    assert!(
        fib.contains("192.0.2.3") && !fib.contains("192.0.2.2 "),
        "{fib}"
    );
    let acl = ctl(&socket, "show acl edge").unwrap();
    assert!(acl.contains("deny proto udp dport 53"), "{acl}");
    let bd = ctl(&socket, "show bridge-domain 10 detail").unwrap();
    assert!(bd.contains("p2"), "{bd}");
    assert_eq!(
        ctl(&socket, &format!("diff {}", file.display())).unwrap(),
        "no change\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}
