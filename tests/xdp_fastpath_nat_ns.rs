//! NAT44 through the XDP fast path (issues 36 and 39): the generator's flows from t0 through
//! sluice's NAT to t1, whose far side answers every frame. With `fast-path` off and on the
//! same frames arrive both ways (their headers, addresses and ports compared from the
//! tester's captures, their checksums checked), with the same totals; with it on most
//! frames of both directions are translated in XDP, the sessions stay alive while only XDP
//! carries their frames, and a session that expires takes its entries with it.

mod common;
use common::fastpath::*;
use common::routed::{mac_of, D0_V4, D1_V4, T0_V4, T1_V4};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const POOL: &str = "198.51.100.128-198.51.100.131";
const COUNT: u64 = 40_000;
const SIZES: &str = "64,128,512,1514";
/// The UDP timeout: above the 4 s below which sessions stay in the graph.
const UDP_TIMEOUT: u64 = 5;

fn lab(tag: &str) -> Lab {
    let l = napi_lab("n", tag);
    l.tester
        .ip(&["addr", "add", &format!("{T0_V4}/24"), "dev", "t0"]);
    l.tester
        .ip(&["addr", "add", &format!("{T1_V4}/24"), "dev", "t1"]);
    l.tester.sysctl("net.ipv4.ip_forward", "0");
    l
}

/// sluice routing 198.18/16 (inside, by t0) and 198.19/16 (outside, by t1), translating
/// what leaves by d1 to the pool, on af_xdp with `fast-path` = `mode`. Two workers, so that
/// replies received by the worker that does not own their session are handed to the one
/// that does (and offered by it).
fn nat_config(dir: &Path, mode: &str) -> (PathBuf, PathBuf) {
    let socket = dir.join("cli.sock");
    let cfg = dir.join("nat.toml");
    let port = |n: &str, addr: &str| port(n, mode, &format!("address = [\"{addr}/24\"]\n"));
    let (lo, hi) = POOL.split_once('-').unwrap();
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 2\nbuffers = 32768\nhugepages = \"never\"\n\
             [control]\nsocket = \"{}\"\n{}{}\
             [[route]]\nprefix = \"198.19.0.0/16\"\nvia = [\"{T1_V4}\"]\n\
             [[route]]\nprefix = \"198.18.0.0/16\"\nvia = [\"{T0_V4}\"]\n\
             [[rx-placement]]\ninterface = \"d0\"\nqueue = 0\nworker = 0\n\
             [[rx-placement]]\ninterface = \"d1\"\nqueue = 0\nworker = 1\n\
             [nat44]\naddresses = [\"{lo}-{hi}\"]\nudp-timeout = {UDP_TIMEOUT}\n\
             [[nat44-interface]]\ninterface = \"d0\"\nrole = \"inside\"\n\
             [[nat44-interface]]\ninterface = \"d1\"\nrole = \"outside\"\n",
            socket.display(),
            port("d0", D0_V4),
            port("d1", D1_V4),
        ),
    )
    .unwrap();
    (cfg, socket)
}

/// `count` frames t0 → t1 through the NAT at `rate`, each answered; the generator's JSON.
fn send(l: &Lab, count: u64, (sizes, rate): (&str, u64), more: &[&str]) -> Value {
    let (d0, d1) = (mac_of(&l.dut, "d0"), mac_of(&l.dut, "d1"));
    let (count, rate) = (count.to_string(), rate.to_string());
    let mut args = vec![
        "gen",
        "--tx",
        "t0",
        "--rx",
        "t1",
        "--routed",
        "--dst-mac",
        &d0,
        "--dst-mac-reverse",
        &d1,
        "--reply",
        "--translated",
        "--size",
        sizes,
        "--flows",
        "16",
        "--count",
        &count,
        "--rate",
        &rate,
        "--json",
        "--quiet",
    ];
    args.extend_from_slice(more);
    json_output(&l.tester.exec(BIN, &args).output().unwrap())
}

/// Every frame and every answer arrived, intact (to the generator's receive ring: a frame
/// t1's ring had no room for is not answered, so the answers are those t1 sent).
fn both_ways(gen: &Value, count: u64, what: &str) {
    let answers = u(&gen["reverse"]["tx_packets"]);
    for (dir, sent) in [("forward", count), ("reverse", answers)] {
        let d = &gen[dir];
        let seen = u(&d["rx_packets"]) + u(&d["rx_ring_drops"]);
        assert_eq!(seen, sent, "{what}: {dir}: not every frame arrived: {gen}");
        assert_eq!(d["rx_corrupt"], 0, "{what}: {dir}: {gen}");
    }
    let answered = u(&gen["forward"]["rx_packets"]);
    assert_eq!(
        answers, answered,
        "{what}: t1 answered each frame it took: {gen}"
    );
}

/// The current NAT entries `show xdp flows` lists.
fn nat_entries(socket: &Path) -> usize {
    ctl_json(socket, "show xdp flows")["flows"]
        .as_array()
        .map_or(0, |f| {
            f.iter()
                .filter(|f| f["kind"] == "nat4" && f["current"] == true)
                .count()
        })
}

/// Whether the ones' complement sum of `words` (with `more` added) is all ones.
fn sums_to_ones(bytes: &[u8], more: u32) -> bool {
    let mut sum: u32 = more;
    for w in bytes.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// What must be alike in a frame t1 received, whichever path translated it: whether it is
/// to t1's MAC from d1's (`macs`), the TTL, the addresses and ports, and whether both
/// checksums are right.
fn header(f: &[u8], macs: &[u8]) -> Vec<u8> {
    let ip = &f[14..34];
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    let udp = &f[34..14 + total];
    let mut pseudo = 17u32 + udp.len() as u32;
    for w in f[26..34].chunks(2) {
        pseudo += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    let udp_ok = udp[6..8] == [0, 0] || sums_to_ones(udp, pseudo);
    let mut h = vec![(f[..12] == *macs) as u8];
    h.extend_from_slice(&[f[22], sums_to_ones(ip, 0) as u8, udp_ok as u8]);
    h.extend_from_slice(&f[26..38]);
    h
}

/// The NAT with `fast-path` = `mode`: the distinct headers t1 received, d0's and d1's
/// counters, `show xdp flows`.
fn through(mode: &str) -> (Vec<Vec<u8>>, Value, Value, Value) {
    let l = lab(&mode[..2]);
    let (cfg, socket) = nat_config(&l.dir, mode);
    let mut daemon = Daemon::start(&l.dut, &cfg, &socket);
    // First bursts resolve the next hops, open the sessions and, with the fast path on,
    // offload both directions of each (frames held for ARP are not offered: more follow).
    send(&l, 500, ("64", 20_000), &[]);
    if mode == "on" {
        wait_for("both directions of every session offloaded", || {
            send(&l, 200, ("64", 20_000), &[]);
            nat_entries(&socket) == 32
        });
        // Replies d1's worker received for d0's worker's sessions went there, and were
        // offloaded all the same.
        let errors = ctl_json(&socket, "show errors");
        let handed = errors.as_array().unwrap().iter().any(|e| {
            e["reason"]
                .as_str()
                .is_some_and(|r| r.contains("handed to the worker owning"))
                && u(&e["count"]) > 0
        });
        assert!(handed, "no reply was handed to another worker: {errors}");
    }
    ctl(&socket, "clear interfaces").unwrap();
    let pcap = l.dir.join("rx.pcap");
    let args = ["--rx-pcap", pcap.to_str().unwrap()];
    let gen = send(&l, COUNT, (SIZES, 50_000), &args);
    both_ways(&gen, COUNT, mode);
    std::thread::sleep(Duration::from_millis(200));
    let ifs = (
        ctl_json(&socket, "show interface d0")[0].clone(),
        ctl_json(&socket, "show interface d1")[0].clone(),
    );
    // Frames in from t0 and out to t1, answers in from t1 and out to t0.
    let answers = u(&gen["reverse"]["tx_packets"]);
    for (i, what, (rx, tx)) in [
        (&ifs.0, "d0", (COUNT, answers)),
        (&ifs.1, "d1", (answers, COUNT)),
    ] {
        assert_eq!(u(&i["rx_packets"]), rx, "{mode}: {what}: {i}");
        assert_eq!(u(&i["tx_packets"]), tx, "{mode}: {what}: {i}");
        assert_eq!(u(&i["drops"]), 0, "{mode}: {what}: {i}");
    }
    let macs = [mac_bytes(&l.tester, "t1"), mac_bytes(&l.dut, "d1")].concat();
    let frames = pcap_frames(&pcap);
    let mut headers: Vec<Vec<u8>> = frames.iter().map(|f| header(f, &macs)).collect();
    headers.sort();
    headers.dedup();
    let flows = ctl_json(&socket, "show xdp flows");
    if mode == "on" {
        sessions_live_while_xdp_carries_them(&l, &socket);
        first_frames_offer_their_sessions(&l, &socket);
    }
    assert!(daemon.stop(), "daemon did not exit cleanly");
    std::fs::remove_dir_all(&l.dir).ok();
    (headers, ifs.0, ifs.1, flows)
}

/// With every session gone, one frame of each of the 16 flows (and its answer) puts both
/// directions of each new session into XDP: the session's first frame offers it, its reply
/// with it, and the reply's own first frame, which the graph sees before the installer has
/// put it in, is not offered again.
fn first_frames_offer_their_sessions(l: &Lab, socket: &Path) {
    let installed = || u(&ctl_json(socket, "show xdp flows")["installer"]["installed"]);
    let before = installed();
    both_ways(&send(l, 16, ("64", 1_000), &[]), 16, "one frame a flow");
    wait_for("both directions of the 16 new sessions offloaded", || {
        nat_entries(socket) == 32
    });
    assert_eq!(installed() - before, 32, "each direction installed once");
}

/// Frames that only XDP carries for longer than the UDP timeout keep their sessions (the
/// same sessions: none opened again); stopped, the sessions expire and their entries go.
fn sessions_live_while_xdp_carries_them(l: &Lab, socket: &Path) {
    let created = || -> u64 {
        let summary = ctl_json(socket, "show nat44 summary");
        summary["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| u(&w["created"]))
            .sum()
    };
    let before = created();
    let xdp = || u(&ctl_json(socket, "show xdp flows")["reasons"]["forwarded in XDP"]);
    let (hits, start) = (xdp(), Instant::now());
    let n = 2 * UDP_TIMEOUT * 500;
    both_ways(&send(l, n, ("64", 500), &[]), n, "through the timeout");
    assert!(start.elapsed() > Duration::from_secs(UDP_TIMEOUT + 1));
    assert!(xdp() - hits >= n, "the frames were XDP's");
    assert_eq!(
        created(),
        before,
        "a session expired under XDP's frames and opened again"
    );
    let summary = ctl_json(socket, "show nat44 summary");
    assert_eq!(u(&summary["sessions"]), 16, "{summary}");
    // No more frames: the sessions expire, and withdraw their entries before the fast
    // path's own idle time (30 s) would.
    wait_for("the sessions expired", || {
        u(&ctl_json(socket, "show nat44 summary")["sessions"]) == 0
    });
    wait_for("their entries withdrawn", || nat_entries(socket) == 0);
    let installer = &ctl_json(socket, "show xdp flows")["installer"];
    assert_eq!(u(&installer["nat_withdrawn"]), 32, "{installer}");
}

#[test]
fn nat_sessions_in_xdp_are_translated_as_the_graph_translates_them() {
    if !needs_root() {
        return;
    }
    let (off, off0, off1, _) = through("off");
    let (on, on0, on1, flows) = through("on");
    // 16 flows, each one header: translated alike, checksums right.
    assert_eq!(off.len(), 16, "{off:?}");
    let right = |h: &Vec<u8>| h[0] == 1 && h[1] == 63 && h[2] == 1 && h[3] == 1;
    assert!(off.iter().all(right), "{off:?}");
    assert_eq!(on, off, "the frames t1 received");
    for k in ["rx_bytes", "tx_bytes"] {
        assert_eq!(off0[k], on0[k], "d0 {k}");
        assert_eq!(off1[k], on1[k], "d1 {k}");
    }
    let hits = u(&flows["reasons"]["forwarded in XDP"]);
    assert!(hits >= COUNT, "both directions mostly in XDP: {flows}");
}
