//! pcap in → ethernet-input → l2-xconnect → interface-output → pcap out, through the real
//! dataplane with its worker thread: the output file must be byte-identical to the input, the
//! counters must agree, malformed frames must be dropped with their named counters, and the
//! buffer pool must be back at its idle count afterwards.

mod common;
use common::frames::{frame, write_pcap};
use common::tmpdir;
use sluice::config::Config;
use sluice::control::exec::{Control, Reply};
use sluice::dataplane::Dataplane;
use sluice::drivers::pcap::file::Writer;
use std::path::Path;
use std::time::{Duration, Instant};

fn config(dir: &Path, input: &Path, output: &Path) -> Config {
    config_with(dir, input, output, false)
}

fn config_with(dir: &Path, input: &Path, output: &Path, looping: bool) -> Config {
    let text = format!(
        r#"
[dataplane]
workers = 1
buffers = 4096
hugepages = "never"
[control]
socket = "{dir}/cli.sock"
[[interface]]
name = "p0"
driver = "pcap"
rx-file = "{input}"
loop = {looping}
[[interface]]
name = "p1"
driver = "pcap"
tx-file = "{output}"
[[xconnect]]
rx = "p0"
tx = "p1"
"#,
        dir = dir.display(),
        input = input.display(),
        output = output.display()
    );
    Config::parse(&text, "test.toml").unwrap()
}

fn json(c: &mut Control, cmd: &str) -> serde_json::Value {
    match c.handle_line(&format!("{cmd} --json")).unwrap() {
        Reply::Json(v) => v,
        Reply::Text(t) => panic!("expected JSON from {cmd}, got {t}"),
    }
}

fn iface(c: &mut Control, name: &str) -> serde_json::Value {
    json(c, &format!("show interface {name}"))[0].clone()
}

/// Run the dataplane until the replay is done and `expect_out + expect_drops` packets are
/// accounted for; returns the control plane for inspection.
fn run_until_done(cfg: &Config, accounted: u64) -> Control {
    let dp = Dataplane::start(cfg).unwrap();
    let mut c = Control::new(dp);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let p0 = iface(&mut c, "p0");
        let p1 = iface(&mut c, "p1");
        let done = p1["tx_packets"].as_u64().unwrap() + p0["drops"].as_u64().unwrap();
        if c.dp.replays_done() && done >= accounted {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replay did not finish: p0 {p0} p1 {p1}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    c
}

#[test]
fn pcap_through_xconnect_is_byte_identical() {
    let dir = tmpdir("xc");
    let (input, output) = (dir.join("in.pcap"), dir.join("out.pcap"));
    // Mixed sizes, jumbo frames included (chained buffers), more than a frame's worth.
    let sizes = [60usize, 64, 128, 512, 1000, 1514, 2048, 2049, 4000, 9000];
    let frames: Vec<Vec<u8>> = (0..1000u32)
        .map(|i| frame(sizes[i as usize % sizes.len()], i))
        .collect();
    write_pcap(&input, &frames);
    let cfg = config(&dir, &input, &output);
    let mut c = run_until_done(&cfg, frames.len() as u64);

    let p0 = iface(&mut c, "p0");
    let p1 = iface(&mut c, "p1");
    let bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    assert_eq!(p0["rx_packets"], frames.len() as u64);
    assert_eq!(p0["rx_bytes"], bytes);
    assert_eq!(p1["tx_packets"], frames.len() as u64);
    assert_eq!(p1["tx_bytes"], bytes);
    assert_eq!(p0["drops"], 0);

    let rt = json(&mut c, "show runtime");
    let nodes = rt["threads"][0]["nodes"].as_array().unwrap();
    let vectors = |name: &str| {
        nodes.iter().find(|n| n["name"] == name).unwrap()["vectors"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(vectors("pcap-input"), 1000);
    assert_eq!(vectors("ethernet-input"), 1000);
    assert_eq!(vectors("l2-xconnect"), 1000);
    assert_eq!(vectors("p1-tx"), 1000);

    let buffers = json(&mut c, "show buffers");
    assert_eq!(buffers["in_use"], 0, "{buffers}");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");
    c.dp.stop();
    let a = std::fs::read(&input).unwrap();
    let b = std::fs::read(&output).unwrap();
    assert_eq!(a.len(), b.len());
    assert!(a == b, "output pcap differs from input");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn malformed_frames_are_dropped_with_named_counters() {
    let dir = tmpdir("bad");
    let (input, output) = (dir.join("in.pcap"), dir.join("out.pcap"));
    let mut tagged = frame(64, 7);
    tagged[12..14].copy_from_slice(&[0x81, 0x00]);
    tagged.truncate(16);
    let frames = vec![
        frame(64, 1),  // good
        frame(10, 2),  // shorter than the header
        frame(0, 3),   // empty
        frame(42, 4),  // short: cross-connected, padded to 60
        tagged,        // VLAN tag cut short
        frame(100, 5), // good
    ];
    write_pcap(&input, &frames);
    // A record whose capture was cut (caplen < len): the device gave us part of a frame.
    let mut bytes = std::fs::read(&input).unwrap();
    let mut w = Writer::new(Vec::new()).unwrap();
    w.write(0, &frame(80, 9)).unwrap();
    let mut rec = w.into_inner()[24..].to_vec();
    rec[12..16].copy_from_slice(&200u32.to_le_bytes());
    bytes.extend_from_slice(&rec);
    std::fs::write(&input, bytes).unwrap();

    let cfg = config(&dir, &input, &output);
    let mut c = run_until_done(&cfg, 7);
    let errors = json(&mut c, "show errors");
    let count = |node: &str, reason: &str| -> u64 {
        errors
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["node"] == node && e["reason"].as_str().unwrap().contains(reason))
            .map(|e| e["count"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(
        count("ethernet-input", "shorter than the ethernet header"),
        2,
        "{errors}"
    );
    assert_eq!(count("ethernet-input", "truncated VLAN"), 1, "{errors}");
    assert_eq!(
        count("pcap-input", "truncated by the device"),
        1,
        "{errors}"
    );
    let p0 = iface(&mut c, "p0");
    let p1 = iface(&mut c, "p1");
    assert_eq!(p1["tx_packets"], 3);
    assert_eq!(p0["drops"], 4);
    // Every packet is accounted for: rx = tx + drops.
    assert_eq!(p0["rx_packets"], 7);
    let text = match c.handle_line("show errors").unwrap() {
        Reply::Text(t) => t,
        Reply::Json(_) => unreachable!(),
    };
    assert!(text.contains("truncated VLAN tag"), "{text}");
    // The short frame went out padded with zeros to the Ethernet minimum.
    let out = std::fs::read(&output).unwrap();
    let short = frame(42, 4);
    let mut padded = short.clone();
    padded.resize(60, 0);
    assert!(
        out.windows(60).any(|w| w == padded.as_slice()),
        "no padded copy of the 42-byte frame in the output"
    );
    assert_eq!(json(&mut c, "show buffers")["in_use"], 0);
    c.dp.stop();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cli_commands_and_errors() {
    let dir = tmpdir("cli");
    let (input, output) = (dir.join("in.pcap"), dir.join("out.pcap"));
    write_pcap(&input, &[frame(64, 1)]);
    let cfg = config(&dir, &input, &output);
    let mut c = run_until_done(&cfg, 1);
    for bad in [
        "show frobs",
        "set interface state p9 up",
        "trace add nowhere 5",
        "trace add ethernet-input 5",
        "set interface l2 xconnect p0 p7",
    ] {
        let e = c
            .handle_line(bad)
            .err()
            .unwrap_or_else(|| panic!("'{bad}' was accepted"));
        assert!(!e.contains('\n'), "{e}");
    }
    let e = c.handle_line("show t").err().unwrap_or_default();
    assert!(
        e.contains("ambiguous") && e.contains("threads, trace"),
        "{e}"
    );
    // A change answers with empty text, even when JSON is asked for.
    match c.handle_line("set interface state p1 down --json") {
        Ok(Reply::Text(t)) => assert!(t.is_empty(), "{t}"),
        _ => panic!("set interface state --json did not answer with empty text"),
    }
    assert_eq!(iface(&mut c, "p1")["state"], "down");
    for good in [
        "show runtime",
        "show threads",
        "show buffers",
        "show trace",
        "clear runtime",
        "clear interfaces",
        "clear errors",
        "clear trace",
        "help",
        "trace add pcap-input 3",
    ] {
        assert!(c.handle_line(good).is_ok(), "{good}");
    }
    assert_eq!(iface(&mut c, "p0")["rx_packets"], 0, "clear interfaces");
    // The workers run at the configured scheduler weight (lowering nice needs root; others
    // keep theirs and the daemon says so).
    let threads = json(&mut c, "show threads");
    let worker = threads
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "workers")
        .unwrap()
        .clone();
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root {
        assert_eq!(
            worker["nice"],
            sluice::config::DEFAULT_WORKER_NICE,
            "{threads}"
        );
    }
    assert!(worker["nice"].is_i64(), "{threads}");
    c.dp.stop();

    // Trace: a looping replay, so there are packets after the trace is armed.
    let dp = Dataplane::start(&config_with(&dir, &input, &output, true)).unwrap();
    let mut c = Control::new(dp);
    assert!(c.handle_line("trace add pcap-input 1").is_ok());
    let deadline = Instant::now() + Duration::from_secs(10);
    let trace = loop {
        let t = match c.handle_line("show trace").unwrap() {
            Reply::Text(t) => t,
            Reply::Json(_) => unreachable!(),
        };
        if t.contains("p1-tx") || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    for node in [
        "pcap-input",
        "ethernet-input",
        "l2-xconnect",
        "interface-output",
        "p1-tx",
    ] {
        assert!(
            trace.contains(&format!("{node}: ")),
            "{node} missing from trace:\n{trace}"
        );
    }
    let rt = match c.handle_line("show runtime").unwrap() {
        Reply::Text(t) => t,
        Reply::Json(_) => unreachable!(),
    };
    assert!(
        rt.contains("Vectors/Call") && rt.contains("sluice_wk_0"),
        "{rt}"
    );
    c.dp.stop();
    std::fs::remove_dir_all(&dir).ok();
}

/// `pcap trace`: received, sent and dropped packets captured into a file while a looping
/// replay runs, stopping at max; then only what one interface sends.
#[test]
fn pcap_trace_captures_rx_tx_and_drops_to_a_file() {
    let dir = tmpdir("pcaptrace");
    let (input, output) = (dir.join("in.pcap"), dir.join("out.pcap"));
    let mut frames: Vec<Vec<u8>> = (0..9u32).map(|i| frame(64 + i as usize, i)).collect();
    frames.push(frame(10, 99)); // shorter than a header: dropped by ethernet-input
    write_pcap(&input, &frames);
    let cfg = config_with(&dir, &input, &output, true);
    let dp = Dataplane::start(&cfg).unwrap();
    let mut c = Control::new(dp);
    let wait_full = |c: &mut Control| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = json(c, "pcap trace status");
            if s["full"] == true {
                return s;
            }
            assert!(Instant::now() < deadline, "capture never filled: {s}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let file = dir.join("all.pcap");
    c.handle_line(&format!(
        "pcap trace rx tx drop max 600 file {}",
        file.display()
    ))
    .unwrap();
    let Err(e) = c.handle_line("pcap trace rx max 5") else {
        panic!("a second capture started");
    };
    assert!(e.contains("running"), "{e}");
    let s = wait_full(&mut c);
    assert_eq!(s["captured"], 600, "{s}");
    assert_eq!(s["what"], serde_json::json!(["rx", "tx", "drop"]));
    let off = json(&mut c, "pcap trace off");
    assert_eq!(off["packets"], 600, "{off}");
    let recs = sluice::drivers::pcap::file::read_file(&file).unwrap();
    assert_eq!(recs.len(), 600);
    for r in &recs {
        assert!(frames.contains(&r.data), "a captured packet was never sent");
    }
    // The short frame is captured twice a round (received, then dropped); each good one
    // twice (received, sent): every kind shows up. The capture may start in the middle of a
    // pass, after its input node ran, and a pass may hold a vector of 256 (the replay loops):
    // 600 packets reach past that pass's sends into the next pass's receives and drops.
    let short = recs.iter().filter(|r| r.data.len() == 10).count();
    assert!(short > 0 && short < 600, "{short} short frames of 600");

    // Only what p1 sends: good frames only, cut at 20 bytes.
    let file = dir.join("p1.pcap");
    c.handle_line(&format!(
        "pcap trace tx max 25 intfc p1 snaplen 20 file {}",
        file.display()
    ))
    .unwrap();
    wait_full(&mut c);
    c.handle_line("pcap trace off").unwrap();
    let recs = sluice::drivers::pcap::file::read_file(&file).unwrap();
    assert_eq!(recs.len(), 25);
    for r in &recs {
        assert_eq!(r.data.len(), 20);
        assert!(r.orig_len >= 64, "{}", r.orig_len);
        assert!(frames
            .iter()
            .any(|f| f.len() == r.orig_len as usize && f[..20] == r.data[..]));
    }
    for (line, why) in [
        ("pcap trace off", "no capture is running"),
        ("pcap trace max 5", "rx, tx and/or drop"),
        ("pcap trace rx max 0", "max 0"),
        ("pcap trace rx max x", "not a number"),
        ("pcap trace rx intfc p9", "no interface named 'p9'"),
        ("pcap trace rx snaplen 0", "at least 1 byte"),
        ("pcap trace rx sideways", "unknown word 'sideways'"),
    ] {
        let Err(e) = c.handle_line(line) else {
            panic!("{line}: accepted");
        };
        assert!(e.contains(why), "{line}: {e}");
    }
    assert_eq!(json(&mut c, "pcap trace status")["running"], false);
    c.dp.stop();
    std::fs::remove_dir_all(&dir).ok();
}
