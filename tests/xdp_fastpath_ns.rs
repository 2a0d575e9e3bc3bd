//! The XDP fast path on veths (issue 39): the same mixed-size traffic through a
//! cross-connect with `fast-path` off and on arrives byte-identical and complete, with the
//! same totals; with it on most frames are forwarded in XDP, counted in `show interface`
//! and `show xdp flows`; a control-plane change makes the offloaded flow stale at once (a
//! downed egress drops, counted, in the graph), and the flow is offloaded again after.
//! Routed the same: the same frames (headers compared from the tester's captures) and
//! totals with it off and on, and a route change takes the offloaded flow back at once.

mod common;
use common::fastpath::*;
use common::routed::{mac_of, D0_V4, D1_V4, T0_V4, T1_V4};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn lab(tag: &str) -> Lab {
    napi_lab("f", tag)
}

/// sluice routing t0's side to t1's (198.19/16 via t1) on af_xdp, `fast-path` = `mode`.
fn router_config(dir: &Path, mode: &str) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("router.toml");
    let port = |n: &str, addr: &str| port(n, mode, &format!("address = [\"{addr}/24\"]\n"));
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nbuffers = 32768\nhugepages = \"never\"\n\
             [control]\nsocket = \"{}\"\n{}{}\
             [[route]]\nprefix = \"198.19.0.0/16\"\nvia = [\"{T1_V4}\"]\n",
            socket.display(),
            port("d0", D0_V4),
            port("d1", D1_V4),
        ),
    )
    .unwrap();
    (cfg, socket)
}

fn config(dir: &Path, fast_path: &str) -> (PathBuf, PathBuf) {
    let xconnect =
        "[[xconnect]]\nrx = \"d0\"\ntx = \"d1\"\n[[xconnect]]\nrx = \"d1\"\ntx = \"d0\"\n";
    config_with(dir, fast_path, xconnect)
}

/// d0 and d1 on af_xdp with `fast-path` = `fast_path`, switched as `forwarding` says.
fn config_with(dir: &Path, fast_path: &str, forwarding: &str) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("dut.toml");
    let port = |n: &str| port(n, fast_path, "");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nbuffers = 32768\nhugepages = \"never\"\n\
             [control]\nsocket = \"{}\"\n{}{}{forwarding}",
            socket.display(),
            port("d0"),
            port("d1"),
        ),
    )
    .unwrap();
    (cfg, socket)
}

/// Send `count` frames of mixed sizes t0 → t1; the generator's JSON.
fn send(l: &Lab, count: u64, sizes: &str) -> Value {
    send_with(l, count, sizes, &[])
}

/// The same with the generator's `more` arguments.
fn send_with(l: &Lab, count: u64, sizes: &str, more: &[&str]) -> Value {
    let count = count.to_string();
    let mut args = vec![
        "gen", "--tx", "t0", "--rx", "t1", "--size", sizes, "--flows", "16", "--count", &count,
        "--rate", "50000", "--json", "--quiet",
    ];
    args.extend_from_slice(more);
    let out = l.tester.exec(BIN, &args).output().unwrap();
    json_output(&out)
}

fn interface(socket: &Path, name: &str) -> Value {
    ctl_json(socket, &format!("show interface {name}"))[0].clone()
}

const SIZES: &str = "64,128,256,512,1024,1514";
const COUNT: u64 = 60_000;

/// Traffic through the cross-connect with `fast-path` = `mode`: d0's and d1's counters
/// and the fast path's share of the frames.
fn through(mode: &str) -> (Value, Value, Value) {
    let l = lab(&mode[..2]);
    let (cfg, socket) = config(&l.dir, mode);
    let mut daemon = Daemon::start(&l.dut, &cfg, &socket);
    // A first burst: the graph forwards it and, with the fast path on, offloads the flow.
    all_arrived(&send(&l, 1000, "64"), 1000, mode);
    if mode == "on" {
        wait_for("the offloaded flow", || {
            ctl_json(&socket, "show xdp flows")["flows"]
                .as_array()
                .is_some_and(|f| {
                    f.iter()
                        .any(|f| f["ingress"] == "d0" && f["current"] == true)
                })
        });
    }
    ctl(&socket, "clear interfaces").unwrap();
    ctl(&socket, "clear runtime").unwrap();
    let gen = send(&l, COUNT, SIZES);
    all_arrived(&gen, COUNT, mode);
    std::thread::sleep(Duration::from_millis(200));
    let (d0, d1) = (interface(&socket, "d0"), interface(&socket, "d1"));
    assert_eq!(u(&d0["rx_packets"]), COUNT, "{mode}: {d0}");
    assert_eq!(d0["rx_bytes"], gen["tx_bytes"], "{mode}: {d0} {gen}");
    assert_eq!(u(&d1["tx_packets"]), COUNT, "{mode}: {d1}");
    assert_eq!(u(&d0["drops"]), 0, "{mode}: {d0}");
    let flows = ctl_json(&socket, "show xdp flows");
    let runtime = ctl_json(&socket, "show runtime");
    if mode == "on" {
        // show runtime's xdp-fastpath row counts what never reached a worker.
        let xdp = u(&runtime["xdp_fastpath"]["packets"]);
        let graph: u64 = runtime["threads"][0]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["name"] == "af-xdp-input")
            .map(|n| u(&n["vectors"]))
            .sum();
        assert_eq!(xdp + graph, COUNT, "{runtime}");
    } else {
        assert!(runtime.get("xdp_fastpath").is_none(), "{runtime}");
    }
    if mode == "on" {
        stale_after_a_change(&l, &socket);
    }
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&l.dir).ok();
    (d0, d1, flows)
}

/// Downing d1 (a control-plane change) makes d0's offloaded flow stale at once: what d0
/// receives is the graph's again, which drops it, counted; up again, the flow is offloaded
/// anew.
fn stale_after_a_change(l: &Lab, socket: &Path) {
    ctl(socket, "set interface state d1 down").unwrap();
    ctl(socket, "clear interfaces").unwrap();
    let gen = send(l, 2000, "64");
    assert_eq!(u(&gen["rx_packets"]), 0, "a stale flow forwarded: {gen}");
    std::thread::sleep(Duration::from_millis(200));
    let (d0, d1) = (interface(socket, "d0"), interface(socket, "d1"));
    assert_eq!(u(&d0["rx_packets"]), 2000, "{d0}");
    assert_eq!(
        u(&d0["drops"]),
        2000,
        "every frame dropped and counted: {d0}"
    );
    assert_eq!(u(&d1["tx_packets"]), 0, "{d1}");
    ctl(socket, "set interface state d1 up").unwrap();
    all_arrived(&send(l, 1000, "64"), 1000, "after up");
    let offloaded = || {
        ctl_json(socket, "show xdp flows")["flows"]
            .as_array()
            .is_some_and(|f| {
                f.iter()
                    .any(|f| f["ingress"] == "d0" && f["current"] == true)
            })
    };
    wait_for("the flow offloaded again", offloaded);
    // The kernel's change, not a command: d1 loses its carrier when its peer goes down.
    let link = |n: &str| {
        ctl_json(socket, "show hardware")
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == n)
            .map(|i| i["link"].clone())
            .unwrap()
    };
    l.tester.ip(&["link", "set", "t1", "down"]);
    wait_for("d1's carrier lost", || link("d1") != "up");
    wait_for("the flow stale", || !offloaded());
    ctl(socket, "clear interfaces").unwrap();
    send(l, 500, "64");
    std::thread::sleep(Duration::from_millis(200));
    let (d0, d1) = (interface(socket, "d0"), interface(socket, "d1"));
    assert_eq!(u(&d0["rx_packets"]), 500, "{d0}");
    assert_eq!(
        u(&d1["tx_packets"]),
        0,
        "nothing sent into a dead link: {d1}"
    );
    l.tester.ip(&["link", "set", "t1", "up"]);
}

/// d0's received and d1's sent totals the same with the fast path off and on, and with it on
/// most of the measured frames never reached the worker.
fn same_totals_most_in_xdp(off: (&Value, &Value), on: (&Value, &Value), on_flows: &Value) {
    for k in ["rx_packets", "rx_bytes"] {
        assert_eq!(off.0[k], on.0[k], "{k}: {} {}", off.0, on.0);
    }
    for k in ["tx_packets", "tx_bytes"] {
        assert_eq!(off.1[k], on.1[k], "{k}: {} {}", off.1, on.1);
    }
    let hits = u(&on_flows["reasons"]["forwarded in XDP"]);
    assert!(hits >= COUNT / 2, "{on_flows}");
    let d0 = on_flows["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "d0")
        .unwrap_or_else(|| panic!("{on_flows}"));
    assert!(u(&d0["rx_packets"]) >= COUNT / 2, "{on_flows}");
}

#[test]
fn the_fast_path_forwards_what_the_graph_would_and_never_a_stale_flow() {
    if !needs_root() {
        return;
    }
    let (off0, off1, off_flows) = through("off");
    assert_eq!(off_flows["enabled"], false, "{off_flows}");
    let (on0, on1, on_flows) = through("on");
    same_totals_most_in_xdp((&off0, &off1), (&on0, &on1), &on_flows);
}

/// Whether an IPv4 header's ones' complement sum is all ones.
fn ip_checksum_ok(h: &[u8]) -> bool {
    let mut sum: u32 = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// Routed traffic with `fast-path` = `mode`: d0's and d1's counters, the distinct headers
/// that arrived (MACs, TTL, and whether the checksum is right: checked to be what a router
/// writes) and `show xdp flows`.
fn routed(mode: &str) -> (Value, Value, Vec<Vec<u8>>, Value) {
    let l = lab(&format!("r{}", &mode[..2]));
    l.tester
        .ip(&["addr", "add", &format!("{T0_V4}/24"), "dev", "t0"]);
    l.tester
        .ip(&["addr", "add", &format!("{T1_V4}/24"), "dev", "t1"]);
    l.tester.sysctl("net.ipv4.ip_forward", "0");
    let (cfg, socket) = router_config(&l.dir, mode);
    let mut daemon = Daemon::start(&l.dut, &cfg, &socket);
    let d0_mac = mac_of(&l.dut, "d0");
    let routed = ["--routed", "--dst-mac", &d0_mac];
    // First bursts resolve t1 and, with the fast path on, offload the destination (frames
    // held for ARP are not offered: more follow until one is).
    send_with(&l, 1000, "64", &routed);
    if mode == "on" {
        wait_for("the offloaded route", || {
            send_with(&l, 100, "64", &routed);
            route_offloaded(&socket)
        });
    }
    ctl(&socket, "clear interfaces").unwrap();
    let pcap = l.dir.join("rx.pcap");
    let pcap_arg = pcap.to_str().unwrap();
    let mut args = routed.to_vec();
    args.extend_from_slice(&["--verify", "all", "--rx-pcap", pcap_arg]);
    let gen = send_with(&l, COUNT, SIZES, &args);
    all_arrived(&gen, COUNT, mode);
    std::thread::sleep(Duration::from_millis(200));
    let (d0, d1) = (interface(&socket, "d0"), interface(&socket, "d1"));
    assert_eq!(u(&d0["rx_packets"]), COUNT, "{mode}: {d0}");
    assert_eq!(u(&d1["tx_packets"]), COUNT, "{mode}: {d1}");
    let mut headers: Vec<Vec<u8>> = pcap_frames(&pcap)
        .iter()
        .map(|f| {
            let sum_ok = ip_checksum_ok(&f[14..34]);
            let mut h = f[..12].to_vec();
            h.extend_from_slice(&[f[22], sum_ok as u8]);
            h
        })
        .collect();
    headers.sort();
    headers.dedup();
    // Every frame to t1's MAC from d1's, TTL 64 less one, its checksum right.
    let mut want = mac_bytes(&l.tester, "t1");
    want.extend(mac_bytes(&l.dut, "d1"));
    want.extend([63, 1]);
    assert_eq!(headers, vec![want], "{mode}: the rewrite of every frame");
    let flows = ctl_json(&socket, "show xdp flows");
    if mode == "on" {
        an_acl_takes_the_flow_back(&l, &socket, &routed);
        // A route change takes the flow back from XDP at once: without the route, nothing
        // more reaches t1.
        ctl(&socket, "ip route del 198.19.0.0/16").unwrap();
        wait_for("the route's flow stale", || !route_offloaded(&socket));
        let gen = send_with(&l, 500, "64", &routed);
        assert_eq!(u(&gen["rx_packets"]), 0, "routed without a route: {gen}");
    }
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&l.dir).ok();
    (d0, d1, headers, flows)
}

/// Whether `show xdp flows` has a current route entry.
fn route_offloaded(socket: &Path) -> bool {
    ctl_json(socket, "show xdp flows")["flows"]
        .as_array()
        .is_some_and(|f| {
            f.iter()
                .any(|f| f["kind"] == "route4" && f["current"] == true)
        })
}

/// An input ACL applied to d0 denies the offloaded flow's frames at once (the ACL is a node
/// the fast path cannot do: the flow stays in the graph while it is on); taken off, the
/// flow is forwarded and offloaded again.
fn an_acl_takes_the_flow_back(l: &Lab, socket: &Path, routed: &[&str]) {
    ctl(socket, "acl add fp deny src 198.18.0.0/16, permit").unwrap();
    ctl(socket, "set acl-plugin interface d0 input acl fp").unwrap();
    ctl(socket, "clear interfaces").unwrap();
    let gen = send_with(l, 500, "64", routed);
    assert_eq!(u(&gen["rx_packets"]), 0, "denied yet forwarded: {gen}");
    std::thread::sleep(Duration::from_millis(200));
    let d0 = interface(socket, "d0");
    assert_eq!(u(&d0["drops"]), 500, "every denied frame counted: {d0}");
    assert!(!route_offloaded(socket), "an entry past the ACL");
    ctl(socket, "set acl-plugin interface d0 input acl fp del").unwrap();
    wait_for("the route offloaded again", || {
        send_with(l, 100, "64", routed);
        route_offloaded(socket)
    });
}

#[test]
fn routed_flows_in_xdp_are_forwarded_as_the_graph_forwards_them() {
    if !needs_root() {
        return;
    }
    let (off0, off1, off_headers, _) = routed("off");
    let (on0, on1, on_headers, on_flows) = routed("on");
    assert_eq!(on_headers.len(), off_headers.len());
    same_totals_most_in_xdp((&off0, &off1), (&on0, &on1), &on_flows);
}

/// A veth whose peer is not in NAPI mode (t1 with GRO off) drops what XDP redirects into it,
/// and this kernel counts that nowhere: the fast path sees that d1's kernel sent fewer frames
/// than the program redirected to it, counts the difference, backs d1 off (its flows back to
/// the graph, which delivers them) and says so.
#[test]
fn an_egress_that_drops_redirected_frames_is_backed_off() {
    if !needs_root() {
        return;
    }
    let l = lab("bk");
    let out = l
        .tester
        .exec("ethtool", &["-K", "t1", "gro", "off"])
        .output()
        .unwrap();
    assert!(out.status.success(), "ethtool: {out:?}");
    let (cfg, socket) = config(&l.dir, "on");
    let mut daemon = Daemon::start(&l.dut, &cfg, &socket);
    let backed_off = || {
        ctl_json(&socket, "show xdp flows")["interfaces"]
            .as_array()
            .is_some_and(|i| {
                i.iter()
                    .any(|i| i["name"] == "d1" && i["backed_off"] == true)
            })
    };
    let (mut sent, mut arrived) = (0, 0);
    wait_for("d1 backed off", || {
        let gen = send(&l, 500, "64");
        sent += 500;
        arrived += u(&gen["rx_packets"]) + u(&gen["rx_ring_drops"]);
        backed_off()
    });
    let flows = ctl_json(&socket, "show xdp flows");
    let installer = &flows["installer"];
    assert!(u(&installer["egress_backoffs"]) >= 1, "{flows}");
    let counted = u(&installer["egress_lost"]);
    assert!(sent > arrived, "nothing was lost: the test proves nothing");
    assert!(
        counted > 0 && counted <= sent - arrived,
        "sluice counts what it saw lost ({counted} of {}): {flows}",
        sent - arrived
    );
    // The loss is a drop in show errors too.
    let errors = ctl_json(&socket, "show errors");
    let row = errors.as_array().unwrap().iter().find(|e| {
        e["node"] == "xdp-fastpath"
            && e["reason"]
                .as_str()
                .is_some_and(|r| r.contains("not sent by the egress"))
    });
    assert!(row.is_some_and(|r| u(&r["count"]) >= counted), "{errors}");
    // Backed off, everything arrives by the graph.
    all_arrived(&send(&l, 5000, SIZES), 5000, "backed off");
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&l.dir).ok();
}
