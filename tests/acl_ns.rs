//! An input ACL on a routed interface, as a user would check one: pings through sluice that a
//! rule denies never reach the far side and are counted; what the rules permit (and the
//! other family, and the router's own address) passes.

mod common;
use common::routed::*;
use common::*;
use std::path::Path;

/// One namespace test at a time: each runs a daemon with a busy worker on a small machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The count of `reason` at `node` in `show errors` (0 when absent).
fn error_count(socket: &Path, node: &str, reason: &str) -> u64 {
    let t = ctl(socket, "show errors").unwrap_or_default();
    t.lines()
        .filter(|l| l.contains(node) && l.contains(reason))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn input_acl_denies_what_its_rules_deny_and_counts_it() {
    if !needs_root() {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ensure_ping();
    let (left, right, dut) = routed_lab("a");
    let dir = tmpdir("acl-input");
    // What t0 sends: ICMP to t1's IPv4 address denied, ICMPv6 to the router's far address
    // denied, everything else permitted (a list without a final permit would deny the rest).
    let (cfg, socket) = router_config(
        &dir,
        &format!(
            "[[acl]]\nname = \"edge\"\nrules = [\"deny proto icmp dst {T1_V4}/32\", \
             \"deny proto icmpv6 dst {D1_V6}/128\", \"permit\", \"permit ipv6\"]\n\
             [[acl-input]]\ninterface = \"d0\"\nacl = \"edge\"\n"
        ),
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let denied = |node: &str| error_count(&socket, node, "acl: denied by a rule");

    // Permitted: the router's own address, and t1 over IPv6.
    let (ok, out) = ping(&left, &["-c", "3", "-i", "0.2", "-W", "2", D0_V4]);
    assert!(ok, "ping {D0_V4}: {out}");
    let (ok, out) = ping(&left, &["-c", "3", "-i", "0.2", "-W", "2", T1_V6]);
    assert!(ok, "ping {T1_V6} through sluice: {out}");
    assert_eq!((denied("acl-ip4-in"), denied("acl-ip6-in")), (0, 0));
    // Denied: ICMP from t0 to t1's IPv4 address, counted, never at t1.
    let before = in_echos(&right);
    let (ok, out) = ping(&left, &["-c", "4", "-i", "0.2", "-W", "1", T1_V4]);
    assert!(!ok && out.contains("0 received"), "{out}");
    assert_eq!(
        in_echos(&right).0,
        before.0,
        "a denied echo request reached t1"
    );
    let errors = || ctl(&socket, "show errors").unwrap_or_default();
    assert!(denied("acl-ip4-in") >= 4, "{}", errors());
    // Denied by the IPv6 rule: the router's far address, from t0's side only.
    let (ok, out) = ping(&left, &["-c", "3", "-i", "0.2", "-W", "1", D1_V6]);
    assert!(!ok && out.contains("0 received"), "{out}");
    assert!(denied("acl-ip6-in") >= 3, "{}", errors());
    let (ok, out) = ping(&right, &["-c", "2", "-i", "0.2", "-W", "2", D1_V6]);
    assert!(ok, "t1 has no ACL: {out}");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn acl_made_and_applied_from_the_cli_at_run_time_counts_hits_per_rule() {
    if !needs_root() {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ensure_ping();
    let (left, right, dut) = routed_lab("c");
    let dir = tmpdir("acl-cli");
    let (cfg, socket) = router_config(&dir, "");
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let pings = |n: &str| ping(&left, &["-c", n, "-i", "0.2", "-W", "1", T1_V4]);

    // No ACL yet: t1 answers.
    let (ok, out) = pings("2");
    assert!(ok, "{out}");
    // Mistakes are refused with the reason, and change nothing.
    let refused = [
        ("acl add cli permit src 300.0.0.0/8", "rule 1"),
        ("acl add cli", "no rule given"),
        ("acl add bad/name permit", "not an ACL name"),
        (
            "set acl-plugin interface d0 input acl nope",
            "no ACL named 'nope'",
        ),
        (
            "set acl-plugin interface d9 input acl nope",
            "no interface named 'd9'",
        ),
        ("acl del nope", "no ACL named 'nope'"),
    ];
    for (line, why) in refused {
        let e = ctl(&socket, line).expect_err(line);
        assert!(e.contains(why), "{line}: {e}");
    }
    // Made in two steps, then applied to d0's input.
    ctl(
        &socket,
        &format!("acl add cli deny proto icmp dst {T1_V4}/32"),
    )
    .unwrap();
    ctl(&socket, "acl add cli permit, permit ipv6").unwrap();
    let e = ctl(&socket, "set acl-plugin interface d0 sideways acl cli").unwrap_err();
    assert!(e.contains("input") && e.contains("output"), "{e}");
    ctl(&socket, "set acl-plugin interface d0 input acl cli").unwrap();
    let before = in_echos(&right);
    let (ok, out) = pings("4");
    assert!(!ok && out.contains("0 received"), "{out}");
    assert_eq!(in_echos(&right).0, before.0, "a denied echo reached t1");
    // IPv6 is permitted by the list's last rule.
    let (ok, out) = ping(&left, &["-c", "2", "-i", "0.2", "-W", "2", T1_V6]);
    assert!(ok, "{out}");
    let doc = ctl_json(&socket, "show acl cli");
    let list = &doc["acls"][0];
    assert_eq!(list["name"], "cli", "{doc}");
    assert_eq!(list["input"][0], "d0", "{doc}");
    let hits = |i: usize| list["rules"][i]["hits"].as_u64().unwrap();
    assert_eq!(hits(0), 4, "the four denied echoes: {doc}");
    assert!(hits(2) >= 2, "the IPv6 echoes (and ND): {doc}");
    assert_eq!(list["rules"][1]["rule"], "permit", "{doc}");
    let text = ctl(&socket, "show acl").unwrap();
    assert!(
        text.contains("acl cli: 3 rules") && text.contains("input of: d0"),
        "{text}"
    );
    // In use: not deleted. Taken off: t1 answers again, and then it can go.
    let e = ctl(&socket, "acl del cli").unwrap_err();
    assert!(e.contains("in use (d0 input)"), "{e}");
    ctl(&socket, "set acl-plugin interface d0 input acl cli del").unwrap();
    let (ok, out) = pings("2");
    assert!(ok, "{out}");
    ctl(&socket, "acl del cli").unwrap();
    assert_eq!(ctl_json(&socket, "show acl")["acls"], serde_json::json!([]));
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

const PYTHON: &str = "/usr/bin/python3";

/// `tcp.py connect HOST PORT` from `ns`: whether the server's answer came back.
fn tcp_connect(ns: &Netns, host: &str, port: u16) -> (bool, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acl/tcp.py");
    let o = ns
        .exec(PYTHON, &[script, "connect", host, &port.to_string(), "2"])
        .output()
        .unwrap();
    (o.status.success(), text(&o))
}

/// `tcp.py serve PORT SECONDS` in `ns`, in the background (it ends by itself).
fn tcp_serve(ns: &Netns, port: u16, seconds: u32) -> std::process::Child {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acl/tcp.py");
    let child = ns
        .exec(
            PYTHON,
            &[script, "serve", &port.to_string(), &seconds.to_string()],
        )
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    child
}

#[test]
fn permit_reflect_lets_the_replies_of_what_it_permitted_back_in() {
    if !needs_root() || !prerequisite(Path::new(PYTHON).exists(), "/usr/bin/python3") {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ensure_ping();
    let (left, right, dut) = routed_lab("s");
    let dir = tmpdir("acl-sessions");
    // t0's side may open TCP to port 8080 and ping; t1's side may open nothing over IPv4:
    // what comes back from t1 passes only as part of a session t0's side opened.
    let (cfg, socket) = router_config(
        &dir,
        "[[acl]]\nname = \"inside\"\nrules = [\"permit+reflect proto tcp dport 8080\", \
         \"permit+reflect proto icmp\", \"permit ipv6\"]\n\
         [[acl]]\nname = \"outside\"\nrules = [\"permit ipv6\"]\n\
         [[acl-input]]\ninterface = \"d0\"\nacl = \"inside\"\n\
         [[acl-input]]\ninterface = \"d1\"\nacl = \"outside\"\n\
         [sessions]\nper-worker = 4096\ntcp-transient = 30\n",
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let mut servers = vec![tcp_serve(&right, 8080, 20), tcp_serve(&right, 9090, 20)];
    // Allowed: TCP to 8080 and its replies; pings and their replies.
    let (ok, out) = tcp_connect(&left, T1_V4, 8080);
    assert!(ok && out.contains("echo hello"), "t0 -> t1:8080: {out}");
    let (ok, out) = ping(&left, &["-c", "2", "-i", "0.2", "-W", "2", T1_V4]);
    assert!(ok, "{out}");
    // Denied: another port from t0 (no rule), anything t1 opens (no session).
    let (ok, out) = tcp_connect(&left, T1_V4, 9090);
    assert!(!ok, "t0 -> t1:9090 got through: {out}");
    servers.push(tcp_serve(&left, 8080, 20));
    let (ok, out) = tcp_connect(&right, T0_V4, 8080);
    assert!(!ok, "t1 -> t0:8080 got through without a session: {out}");
    let (ok, out) = ping(&right, &["-c", "2", "-i", "0.2", "-W", "1", T0_V4]);
    assert!(!ok, "t1's pings got through without a session: {out}");
    // What the sessions and the lists say: the TCP and ICMP sessions t0 opened (closed TCP
    // sessions linger as transient), the replies they passed, t1's attempts denied.
    let doc = ctl_json(&socket, "show sessions");
    let w = &doc["workers"][0];
    assert!(w["opened"].as_u64().unwrap() >= 2, "{doc}");
    assert!(w["hits"].as_u64().unwrap() >= 4, "{doc}");
    assert_eq!(w["table_full"], 0, "{doc}");
    let sessions = doc["sessions"].as_array().unwrap();
    let tcp = sessions
        .iter()
        .find(|s| s["proto"] == 6 && s["to"] == format!("{T1_V4}:8080"))
        .unwrap_or_else(|| panic!("no session to {T1_V4}:8080: {doc}"));
    assert_eq!(tcp["state"], "transient", "closed by FINs: {tcp}");
    assert!(sessions.iter().any(|s| s["proto"] == 1), "{doc}");
    assert!(
        !sessions.iter().any(|s| s["to"] == format!("{T1_V4}:9090")),
        "a session for a denied flow: {doc}"
    );
    let outside = &ctl_json(&socket, "show acl outside")["acls"][0];
    assert!(outside["no_match"].as_u64().unwrap() >= 3, "{outside}");
    let summary = ctl(&socket, "show sessions summary").unwrap();
    assert!(
        summary.contains("worker 0: ") && summary.contains("opened"),
        "{summary}"
    );
    assert!(ctl(&socket, "show sessions all").is_err());
    for mut s in servers {
        let _ = s.kill();
        let _ = s.wait();
    }
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn output_acl_filters_what_an_interface_sends_after_routing() {
    if !needs_root() {
        return;
    }
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ensure_ping();
    let (left, right, dut) = routed_lab("o");
    let dir = tmpdir("acl-output");
    // d1 may not send echo requests to t1; everything else leaves.
    let (cfg, socket) = router_config(
        &dir,
        &format!(
            "[[acl]]\nname = \"egress\"\nrules = [\"deny proto icmp dst {T1_V4}/32 icmp-type 8\", \
             \"permit\", \"permit ipv6\"]\n\
             [[acl-output]]\ninterface = \"d1\"\nacl = \"egress\"\n"
        ),
    );
    let mut daemon = Daemon::start(&dut, &cfg, &socket);
    let denied = || error_count(&socket, "acl-ip4-out", "acl: denied by a rule");
    let before = in_echos(&right);
    let (ok, out) = ping(&left, &["-c", "3", "-i", "0.2", "-W", "1", T1_V4]);
    assert!(!ok && out.contains("0 received"), "{out}");
    assert_eq!(
        in_echos(&right).0,
        before.0,
        "an echo left d1 despite its output ACL"
    );
    assert!(
        denied() >= 3,
        "{}",
        ctl(&socket, "show errors").unwrap_or_default()
    );
    // Not filtered: the router's own address, IPv6, the other direction (t1's pings
    // leave by d0, whose output has no list; their replies leave d1 as type 0).
    let (ok, out) = ping(&left, &["-c", "2", "-i", "0.2", "-W", "2", D1_V4]);
    assert!(ok, "{out}");
    let (ok, out) = ping(&left, &["-c", "2", "-i", "0.2", "-W", "2", T1_V6]);
    assert!(ok, "{out}");
    let (ok, out) = ping(&right, &["-c", "2", "-i", "0.2", "-W", "2", T0_V4]);
    assert!(ok, "{out}");
    let list = &ctl_json(&socket, "show acl egress")["acls"][0];
    assert_eq!(list["output"][0], "d1", "{list}");
    assert!(list["rules"][0]["hits"].as_u64().unwrap() >= 3, "{list}");
    // Taken off from the CLI: the pings go through.
    ctl(&socket, "set acl-plugin interface d1 output acl egress del").unwrap();
    let (ok, out) = ping(&left, &["-c", "2", "-i", "0.2", "-W", "2", T1_V4]);
    assert!(ok, "{out}");
    let e = ctl(&socket, "set acl-plugin interface d1 output acl egress del").unwrap_err();
    assert!(e.contains("d1 output has no ACL"), "{e}");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&dir).ok();
}
