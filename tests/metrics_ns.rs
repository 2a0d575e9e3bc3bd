//! The Prometheus endpoint of a real daemon: sluice routes between two testers in network
//! namespaces with `[metrics] listen` set; pings cross it; a plain TCP client (bash's
//! /dev/tcp, inside the DUT's namespace, whose loopback the daemon listens on) scrapes
//! `GET /metrics` before and after, and the interface and node counters grew by the traffic.
//! `promtool check metrics` (Debian's prometheus package) accepts the scrape; a sub-interface
//! made at run time appears in the next scrape; a stalled client does not delay the stop.

mod common;
use common::routed::*;
use common::*;
use std::collections::HashMap;
use std::process::{Command, Stdio};

const PORT: u16 = 9482;

/// An HTTP exchange with the daemon from inside `ns`: `request` sent as is, the whole answer
/// back (the server closes the connection after answering).
fn http(ns: &Netns, request: &str) -> String {
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{PORT} && printf '%s' \"$1\" >&3 && timeout 10 cat <&3"
    );
    let o = ns
        .exec("bash", &["-c", &script, "http", request])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `GET /metrics`: the status line and headers, and the body.
fn scrape(ns: &Netns) -> (String, String) {
    let answer = http(ns, "GET /metrics HTTP/1.1\r\nHost: sluice\r\n\r\n");
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end: {answer}"));
    (head.to_string(), body.to_string())
}

/// Samples by series (`name{labels}`) → value.
fn samples(body: &str) -> HashMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse().unwrap())
        })
        .collect()
}

fn value(s: &HashMap<String, f64>, series: &str) -> f64 {
    *s.get(series)
        .unwrap_or_else(|| panic!("no {series} in the scrape"))
}

fn promtool_check(body: &str) -> (bool, String) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    (o.status.success(), text(&o))
}

#[test]
fn scrape_reflects_traffic_and_passes_promtool() {
    if !needs_root() {
        return;
    }
    let has_promtool = Command::new("promtool").arg("--version").output().is_ok();
    if !prerequisite(has_promtool, "promtool (Debian package prometheus)") {
        return;
    }
    ensure_ping();
    let (left, _right, dut) = routed_lab("mx");
    let dir = tmpdir("metrics");
    let extra = format!("[metrics]\nlisten = \"127.0.0.1:{PORT}\"\n");
    let (cfg, socket) = router_config(&dir, &extra);
    let mut daemon = Daemon::start(&dut, &cfg, &socket);

    let (head, body) = scrape(&dut);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    let before = samples(&body);
    for series in [
        "interfaces_rx_packets_total{interface=\"d0\"}",
        "interfaces_tx_bytes_total{interface=\"d1\"}",
        "interfaces_drops_total{interface=\"d0\"}",
        "nodes_calls_total{node=\"ip4-lookup\"}",
        "nodes_clocks_total{node=\"ip4-lookup\"}",
        "buffer_pools_used{pool=\"default\"}",
        "sys_num_worker_threads",
    ] {
        value(&before, series);
    }
    assert!(
        before
            .keys()
            .any(|k| k.starts_with("err_total{node=\"ip4-input\",error=")),
        "{body}"
    );
    assert_eq!(value(&before, "sys_num_worker_threads"), 1.0);
    assert!(value(&before, "buffer_pools_buffers{pool=\"default\"}") > 0.0);

    let (ok, out) = ping(&left, &["-c", "5", "-i", "0.2", "-W", "2", T1_V4]);
    assert!(ok, "ping {T1_V4} through sluice: {out}");

    let (_, body) = scrape(&dut);
    let after = samples(&body);
    let grew = |series: &str| value(&after, series) - value(&before, series);
    // Five echo requests in on d0 and out on d1, five replies the other way (plus ARP).
    for series in [
        "interfaces_rx_packets_total{interface=\"d0\"}",
        "interfaces_tx_packets_total{interface=\"d1\"}",
        "interfaces_rx_packets_total{interface=\"d1\"}",
        "interfaces_tx_packets_total{interface=\"d0\"}",
        "nodes_vectors_total{node=\"ip4-lookup\"}",
    ] {
        assert!(
            grew(series) >= 5.0,
            "{series} grew {}:\n{body}",
            grew(series)
        );
    }
    assert!(grew("interfaces_rx_bytes_total{interface=\"d0\"}") >= 5.0 * 98.0);
    assert!(grew("nodes_calls_total{node=\"ip4-lookup\"}") >= 1.0);
    assert!(grew("nodes_clocks_total{node=\"ip4-lookup\"}") > 0.0);
    // The same numbers the control socket shows.
    let shown = ctl_json(&socket, "show interface d0");
    let rx = shown[0]["rx_packets"].as_f64().unwrap();
    assert!(
        (rx - value(&after, "interfaces_rx_packets_total{interface=\"d0\"}")).abs() <= 2.0,
        "show interface says {rx}:\n{body}"
    );

    let (ok, out) = promtool_check(&body);
    assert!(ok, "promtool check metrics: {out}\n{body}");

    // A sub-interface made at run time is scraped from then on, and not after its deletion.
    let sub = "interfaces_rx_packets_total{interface=\"d0.100\"}";
    ctl(&socket, "create sub-interface d0 100").unwrap();
    assert_eq!(value(&samples(&scrape(&dut).1), sub), 0.0);
    ctl(&socket, "delete sub-interface d0.100").unwrap();
    assert!(!samples(&scrape(&dut).1).contains_key(sub));

    // Only GET (and HEAD) of /metrics.
    let a = http(&dut, "GET / HTTP/1.1\r\n\r\n");
    assert!(a.starts_with("HTTP/1.1 404 "), "{a}");
    let a = http(&dut, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert!(
        a.starts_with("HTTP/1.1 405 ") && a.contains("Allow: GET, HEAD"),
        "{a}"
    );
    let a = http(&dut, "HEAD /metrics HTTP/1.1\r\n\r\n");
    assert!(
        a.starts_with("HTTP/1.1 200 ") && a.ends_with("\r\n\r\n"),
        "{a}"
    );

    // A client that connects and says nothing does not keep the daemon from stopping.
    let mut stalled = dut
        .exec(
            "bash",
            &[
                "-c",
                &format!("exec 3<>/dev/tcp/127.0.0.1/{PORT} && sleep 20"),
            ],
        )
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let t0 = std::time::Instant::now();
    assert!(daemon.stop(), "daemon did not exit cleanly");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        t0.elapsed()
    );
    let _ = stalled.kill();
    let _ = stalled.wait();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_public_listen_address_is_a_config_error() {
    let dir = tmpdir("metrics-cfg");
    let cfg = dir.join("m.toml");
    std::fs::write(
        &cfg,
        "[dataplane]\nworkers = 1\n\n[metrics]\nlisten = \"0.0.0.0:9482\"\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["run", "--check", "-c", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("m.toml:5: key 'listen': '0.0.0.0:9482' is not a loopback address"),
        "{err}"
    );
    std::fs::write(
        &cfg,
        "[metrics]\nlisten = \"0.0.0.0:9482\"\nallow-remote = true\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["run", "--check", "-c", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::remove_dir_all(&dir).ok();
}
