//! Worker handoff through the real dataplane with two workers: a pcap file of many UDP flows
//! is read by one worker and spread over both by flow hash; every frame leaves (or is counted
//! as a congestion drop), each flow's frames leave in the order they came, both workers
//! forward, and every buffer is back in the pool afterwards. Also the handoff commands.

mod common;

use sluice::config::Config;
use sluice::control::exec::{Control, Reply};
use sluice::dataplane::Dataplane;
use sluice::drivers::pcap::file::{read_file, Writer};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const FLOWS: u32 = 61;
const FRAMES: u32 = 30_000;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-handoff-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Frame `seq`: IPv4/UDP of flow seq % FLOWS (its source port), the flow and the sequence
/// number in the payload.
fn frame(seq: u32) -> Vec<u8> {
    let flow = seq % FLOWS;
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 36, 0, 0, 0, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 1, 1]);
    f.extend_from_slice(&(1000 + flow as u16).to_be_bytes());
    f.extend_from_slice(&[0x30, 0x39, 0, 16, 0, 0]);
    f.extend_from_slice(&flow.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(60, 0);
    f
}

fn config(dir: &Path, input: &Path, output: &Path, handoff: &str) -> Config {
    let text = format!(
        r#"
[dataplane]
workers = 2
buffers = 16384
hugepages = "never"
[control]
socket = "{dir}/cli.sock"
[[interface]]
name = "p0"
driver = "pcap"
rx-file = "{input}"
[[interface]]
name = "p1"
driver = "pcap"
tx-file = "{output}"
[[xconnect]]
rx = "p0"
tx = "p1"
{handoff}
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

fn error_count(c: &mut Control, node: &str, reason: &str) -> u64 {
    json(c, "show errors")
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["node"] == node && e["reason"].as_str().unwrap().contains(reason))
        .map(|e| e["count"].as_u64().unwrap())
        .sum()
}

/// Vectors of `node` on each worker.
fn vectors(c: &mut Control, node: &str) -> Vec<u64> {
    common::vectors_by_worker(&json(c, "show runtime"), node)
}

#[test]
fn handoff_spreads_flows_keeps_their_order_and_accounts_for_every_buffer() {
    let dir = tmpdir("order");
    let (input, output) = (dir.join("in.pcap"), dir.join("out.pcap"));
    let mut w = Writer::create(&input).unwrap();
    for seq in 0..FRAMES {
        w.write(1_700_000_000_000_000_000 + seq as u64 * 1000, &frame(seq))
            .unwrap();
    }
    w.flush().unwrap();
    let cfg = config(
        &dir,
        &input,
        &output,
        "[[handoff]]\ninterface = \"p0\"\nworkers = [0, 1]\n",
    );
    let dp = Dataplane::start(&cfg).unwrap();
    let mut c = Control::new(dp);
    let deadline = Instant::now() + Duration::from_secs(30);
    let (sent, congested) = loop {
        let sent = json(&mut c, "show interface p1")[0]["tx_packets"]
            .as_u64()
            .unwrap();
        let congested = error_count(&mut c, "worker-handoff", "congestion drop");
        if c.dp.replays_done() && sent + congested >= FRAMES as u64 {
            break (sent, congested);
        }
        assert!(
            Instant::now() < deadline,
            "not done: {sent} sent, {congested} congestion drops"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(sent + congested, FRAMES as u64);
    assert!(
        congested < FRAMES as u64 / 2,
        "{congested} congestion drops"
    );
    let handed = error_count(&mut c, "worker-handoff", "handed off");
    assert!(handed > 0, "nothing handed off");
    let eth = vectors(&mut c, "ethernet-input");
    assert!(eth[0] > 0 && eth[1] > 0, "both workers forward: {eth:?}");
    assert_eq!(eth[0] + eth[1], sent, "{eth:?}");
    assert_eq!(vectors(&mut c, "handoff-input").iter().sum::<u64>(), handed);
    // Let the pool settle, then every buffer is free again.
    std::thread::sleep(Duration::from_millis(200));
    let buffers = json(&mut c, "show buffers");
    assert_eq!(buffers["in_use"], 0, "{buffers}");
    assert_eq!(buffers["unaccounted"], 0, "{buffers}");
    c.dp.stop();

    // Every frame out is one sent in, and each flow's frames are in order.
    let mut last: HashMap<u32, u32> = HashMap::new();
    let mut out = 0u64;
    for rec in read_file(&output).unwrap() {
        let data = &rec.data[..];
        let flow = u32::from_be_bytes(data[42..46].try_into().unwrap());
        let seq = u32::from_be_bytes(data[46..50].try_into().unwrap());
        assert_eq!(data, frame(seq), "frame {seq} changed");
        if let Some(&prev) = last.get(&flow) {
            assert!(seq > prev, "flow {flow}: {seq} after {prev}");
        }
        last.insert(flow, seq);
        out += 1;
    }
    assert_eq!(out, sent);
    assert_eq!(last.len(), FLOWS as usize);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn handoff_commands_set_show_and_refuse() {
    let dir = tmpdir("cli");
    let (input, output) = (dir.join("in.pcap"), dir.join("out.pcap"));
    let mut w = Writer::create(&input).unwrap();
    w.write(0, &frame(0)).unwrap();
    w.flush().unwrap();
    let dp = Dataplane::start(&config(&dir, &input, &output, "")).unwrap();
    let mut c = Control::new(dp);
    assert_eq!(
        json(&mut c, "show interface handoff"),
        serde_json::json!([])
    );
    c.handle_line("set interface handoff p0 workers 1,0 key standard")
        .unwrap();
    assert_eq!(
        json(&mut c, "show interface handoff"),
        serde_json::json!([{"interface": "p0", "key": "standard", "workers": [1, 0]}])
    );
    for (line, why) in [
        (
            "set interface handoff p0 workers 0-2",
            "there are 2 worker(s)",
        ),
        ("set interface handoff p0 workers 1,1", "named twice"),
        ("set interface handoff p0 workers x", "not a number"),
        ("set interface handoff p0 workers 0 key crc", "key 'crc'"),
        ("set interface handoff p0 spread", "expected: workers"),
        ("set interface handoff p9 off", "no interface named 'p9'"),
    ] {
        let Err(e) = c.handle_line(line) else {
            panic!("{line}: accepted");
        };
        assert!(e.contains(why), "{line}: {e}");
    }
    c.handle_line("set interface handoff p0 off").unwrap();
    assert_eq!(
        json(&mut c, "show interface handoff"),
        serde_json::json!([])
    );
    c.dp.stop();
    std::fs::remove_dir_all(&dir).ok();
}
