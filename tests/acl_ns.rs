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
