//! The generator's T-Rex profiles as a receiver sees them: frames captured at the far end of a
//! veth pair have IMIX's size mix and var2's address spread.

mod common;
use common::*;
use sluice::drivers::pcap::file::read_file;
use std::collections::HashSet;

#[test]
fn imix_and_var2_as_captured() {
    if !needs_root() {
        return;
    }
    let ns = Netns::new("prof");
    ns.veth_pair("g0", "g1");
    let dir = tmpdir("prof");
    let pcap = dir.join("rx.pcap");
    // 100 IMIX cycles of 52 frames.
    let out = ns
        .exec(
            BIN,
            &[
                "gen",
                "--tx",
                "g0",
                "--rx",
                "g1",
                "--size",
                "imix",
                "--flows",
                "var2",
                "--count",
                "5200",
                "--rate",
                "20000",
                "--rx-pcap",
                pcap.to_str().unwrap(),
                "--json",
                "--quiet",
            ],
        )
        .output()
        .unwrap();
    let gen = json_output(&out);
    assert_eq!(gen["rx_packets"], 5200, "{gen}");
    assert_eq!(gen["frame_size"], "imix");
    assert_eq!(gen["flows"], "var2");

    let frames = read_file(&pcap).unwrap();
    assert_eq!(frames.len(), 5200);
    let count = |len: usize| frames.iter().filter(|f| f.data.len() == len).count();
    // T-Rex's IMIX: 60, 590 and 1514 bytes before FCS, 28:20:4.
    assert_eq!((count(60), count(590), count(1514)), (2800, 2000, 400));
    // var2: source and destination both step through their /16s.
    let srcs: HashSet<[u8; 4]> = frames
        .iter()
        .map(|f| f.data[26..30].try_into().unwrap())
        .collect();
    let dsts: HashSet<[u8; 4]> = frames
        .iter()
        .map(|f| f.data[30..34].try_into().unwrap())
        .collect();
    assert_eq!(srcs.len(), 5200);
    assert_eq!(dsts.len(), 5200);
    // Default /16s: RFC 2544's benchmarking range (T-Rex's own 16.0 and 48.0 with --src-net
    // and --dst-net).
    assert!(srcs.iter().all(|a| a[0] == 198 && a[1] == 18));
    assert!(dsts.iter().all(|a| a[0] == 198 && a[1] == 19));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn xdp_engine_sends_what_it_says() {
    if !needs_root() {
        return;
    }
    let ns = Netns::new("xdp");
    ns.veth_pair("x0", "x1");
    // XDP frames into a veth need the peer in NAPI mode.
    let o = ns
        .exec("ethtool", &["-K", "x1", "gro", "on"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = ns
        .exec(
            BIN,
            &[
                "gen", "--tx", "x0", "--rx", "x1", "--engine", "xdp", "--count", "300000",
                "--json", "--quiet",
            ],
        )
        .output()
        .unwrap();
    let gen = json_output(&out);
    assert_eq!(gen["tx_packets"], 300000, "{gen}");
    // Nothing between the two ends of a veth pair loses frames: the counter saw them all.
    assert_eq!(gen["rx_packets"], 300000, "{gen}");
    // Paced by the XDP program: 200 kpps for a second, every frame counted at the peer.
    let out = ns
        .exec(
            BIN,
            &[
                "gen",
                "--tx",
                "x0",
                "--rx",
                "x1",
                "--engine",
                "xdp",
                "--rate",
                "200000",
                "--duration",
                "1",
                "--json",
                "--quiet",
            ],
        )
        .output()
        .unwrap();
    let gen = json_output(&out);
    let pps = gen["tx_pps"].as_f64().unwrap();
    // Never faster than asked; within 10 % below, or the generator says it fell short (a
    // loaded machine can hold it back, and a test is no benchmark: what must hold is that
    // the report is honest).
    assert!(pps < 220_000.0, "{gen}");
    assert!(
        pps >= 180_000.0 || gen["rate_reached"] == false,
        "fell short without saying so: {gen}"
    );
    assert_eq!(gen["rx_packets"], gen["tx_packets"], "{gen}");
    // var2 and IMIX both ways: the program cuts each frame to its size and writes its
    // addresses; every frame reaches the other end.
    let o = ns
        .exec("ethtool", &["-K", "x0", "gro", "on"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = ns
        .exec(
            BIN,
            &[
                "gen", "--tx", "x0", "--rx", "x1", "--engine", "xdp", "--flows", "var2", "--size",
                "imix", "--bi", "--count", "100000", "--json", "--quiet",
            ],
        )
        .output()
        .unwrap();
    let gen = json_output(&out);
    assert_eq!(gen["direction"], "bi", "{gen}");
    assert_eq!(gen["tx_packets"], 200000, "{gen}");
    assert_eq!(gen["rx_packets"], 200000, "{gen}");
    // Flows other than single and var2 are refused.
    let bad = ns
        .exec(
            BIN,
            &["gen", "--tx", "x0", "--engine", "xdp", "--flows", "16"],
        )
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn testpmd_engine_sends_and_counts() {
    if !needs_root() {
        return;
    }
    let testpmd = std::process::Command::new("sh")
        .args(["-c", "command -v dpdk-testpmd"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !prerequisite(testpmd, "dpdk-testpmd (scripts/test.sh installs it)") {
        return;
    }
    let ns = Netns::new("tpmd");
    ns.veth_pair("p0", "p1");
    // The lab keeps IPv6 off its ports so that nothing but the test's frames is counted.
    for dev in ["p0", "p1"] {
        let o = ns
            .exec(
                "sysctl",
                &["-qw", &format!("net.ipv6.conf.{dev}.disable_ipv6=1")],
            )
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let out = ns
        .exec(
            BIN,
            &[
                "gen",
                "--tx",
                "p0",
                "--rx",
                "p1",
                "--engine",
                "testpmd",
                "--size",
                "128",
                "--duration",
                "1",
                "--cpu",
                "0",
                "--json",
                "--quiet",
            ],
        )
        .output()
        .unwrap();
    let gen = json_output(&out);
    assert_eq!(gen["io"], "testpmd-af_packet", "{gen}");
    let tx = gen["tx_packets"].as_u64().unwrap();
    assert!(tx > 1000, "testpmd sent almost nothing: {gen}");
    // Nothing between the two ends of a veth pair loses frames: what testpmd says it sent is
    // what the far end's counter saw.
    assert_eq!(gen["rx_packets"].as_u64(), Some(tx), "{gen}");
    assert_eq!(gen["tx_bytes"].as_u64(), Some(tx * 124), "{gen}");
    // testpmd leaves no runtime directory behind.
    let left = std::fs::read_dir("/var/run/dpdk")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("sluice-gen-"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0);
    // What txonly cannot do is refused up front, with the reason.
    for bad in [
        &["--flows", "var2"][..],
        &["--rate", "1000"],
        &["--bi"],
        &["--count", "10"],
        &["--size", "64,128"],
        &["--io", "memif", "--rx", "/tmp/x.sock"],
    ] {
        let mut args = vec!["gen", "--tx", "p0", "--rx", "p1", "--engine", "testpmd"];
        args.extend_from_slice(bad);
        if bad.contains(&"memif") {
            args = vec!["gen", "--tx", "/tmp/y.sock", "--engine", "testpmd"];
            args.extend_from_slice(bad);
        }
        let o = ns.exec(BIN, &args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "accepted: {bad:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--engine testpmd"),
            "{bad:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
