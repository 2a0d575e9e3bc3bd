//! A bridge domain through the XDP fast path (issue 39): the same traffic between two
//! learnt addresses with `fast-path` off and on arrives complete and byte-checked with the
//! same totals; with it on most frames are bridged in XDP; and when the destination's
//! address moves to the ingress port, the offloaded flow is stale at once: the bridge drops
//! the frames (destination behind the port they came in by), counted, as without the fast
//! path, instead of XDP sending them on to the old port.

mod common;
use common::fastpath::*;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZES: &str = "64,128,256,512,1024,1514";
const COUNT: u64 = 40_000;
/// The generator's default addresses: t0's frames come from SRC to DST.
const SRC: &str = "02:00:00:00:00:01";
const DST: &str = "02:00:00:00:00:02";

fn lab(tag: &str) -> Lab {
    napi_lab("b", tag)
}

/// d0 and d1 on af_xdp in one bridge domain, `fast-path` = `mode`.
fn config(dir: &Path, mode: &str) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("bridge.toml");
    let port = |n: &str| port(n, mode, "");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 1\nbuffers = 32768\nhugepages = \"never\"\n\
             [control]\nsocket = \"{}\"\n{}{}\
             [[bridge-domain]]\nid = 1\nmembers = [\"d0\", \"d1\"]\n",
            socket.display(),
            port("d0"),
            port("d1"),
        ),
    )
    .unwrap();
    (cfg, socket)
}

/// `count` frames t0 → t1; the generator's JSON.
fn send(l: &Lab, count: u64, sizes: &str, more: &[&str]) -> Value {
    let count = count.to_string();
    let mut args = vec![
        "gen", "--tx", "t0", "--rx", "t1", "--size", sizes, "--flows", "16", "--count", &count,
        "--rate", "50000", "--json", "--quiet",
    ];
    args.extend_from_slice(more);
    json_output(&l.tester.exec(BIN, &args).output().unwrap())
}

/// Whether `show xdp flows` has a current bridge entry from `src` to `dst` on d0.
fn offloaded(socket: &Path) -> bool {
    ctl_json(socket, "show xdp flows")["flows"]
        .as_array()
        .is_some_and(|f| {
            f.iter().any(|f| {
                f["kind"] == "bridge"
                    && f["ingress"] == "d0"
                    && f["source_mac"] == SRC
                    && f["destination_mac"] == DST
                    && f["current"] == true
            })
        })
}

/// The bridge with `fast-path` = `mode`: d0's and d1's counters and `show xdp flows`.
fn through(mode: &str) -> (Value, Value, Value) {
    let l = lab(&mode[..2]);
    let (cfg, socket) = config(&l.dir, mode);
    let mut daemon = Daemon::start(&l.dut, &cfg, &socket);
    // `--macs 1`: the destination is sent from t1 first, so the bridge learns it; then
    // t0's frames teach it the source.
    all_arrived(&send(&l, 1000, "64", &["--macs", "1"]), 1000, mode);
    if mode == "on" {
        wait_for("the offloaded bridge flow", || {
            send(&l, 100, "64", &[]);
            offloaded(&socket)
        });
    }
    ctl(&socket, "clear interfaces").unwrap();
    all_arrived(&send(&l, COUNT, SIZES, &[]), COUNT, mode);
    std::thread::sleep(Duration::from_millis(200));
    let (d0, d1) = (
        ctl_json(&socket, "show interface d0")[0].clone(),
        ctl_json(&socket, "show interface d1")[0].clone(),
    );
    assert_eq!(u(&d0["rx_packets"]), COUNT, "{mode}: {d0}");
    assert_eq!(u(&d1["tx_packets"]), COUNT, "{mode}: {d1}");
    let flows = ctl_json(&socket, "show xdp flows");
    if mode == "on" {
        a_move_takes_the_flow_back(&l, &socket);
    }
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&l.dir).ok();
    (d0, d1, flows)
}

/// The destination's address sends from t0's side: the bridge learns it moved to d0, and
/// t0's frames to it are dropped as behind their own port, counted, at once.
fn a_move_takes_the_flow_back(l: &Lab, socket: &Path) {
    let moved = ["--src-mac", DST, "--dst-mac", SRC];
    send(l, 50, "64", &moved);
    wait_for("the flow stale after the move", || !offloaded(socket));
    ctl(socket, "clear interfaces").unwrap();
    ctl(socket, "clear errors").unwrap();
    let gen = send(l, 500, "64", &[]);
    assert_eq!(u(&gen["rx_packets"]), 0, "sent on to the old port: {gen}");
    std::thread::sleep(Duration::from_millis(200));
    let d0 = ctl_json(socket, "show interface d0")[0].clone();
    assert_eq!(u(&d0["rx_packets"]), 500, "{d0}");
    let errors = ctl_json(socket, "show errors");
    let row = errors.as_array().unwrap().iter().find(|e| {
        e["node"] == "l2-fwd"
            && e["reason"]
                .as_str()
                .is_some_and(|r| r.contains("behind the interface"))
    });
    assert!(row.is_some_and(|r| u(&r["count"]) == 500), "{errors}");
}

#[test]
fn bridged_flows_in_xdp_are_forwarded_as_the_bridge_forwards_them() {
    if !needs_root() {
        return;
    }
    let (off0, off1, off_flows) = through("off");
    assert_eq!(off_flows["enabled"], false, "{off_flows}");
    let (on0, on1, on_flows) = through("on");
    for k in ["rx_packets", "rx_bytes"] {
        assert_eq!(off0[k], on0[k], "d0 {k}");
    }
    for k in ["tx_packets", "tx_bytes"] {
        assert_eq!(off1[k], on1[k], "d1 {k}");
    }
    let hits = u(&on_flows["reasons"]["forwarded in XDP"]);
    assert!(hits >= COUNT / 2, "{on_flows}");
}
