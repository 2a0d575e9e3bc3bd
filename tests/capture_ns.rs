//! `sluice capture` on a veth with four receive queues, between two namespaces the tests make
//! and remove. A veth puts what its peer sends on transmit queue K on its own receive queue
//! K, and the peer's XPS map (`queues/tx-K/xps_cpus`) chooses the transmit queue: giving every
//! CPU to tx-K alone sends everything to queue K, giving every CPU to all four spreads the
//! flows by their hash. The tests build their frames themselves (each names its queue, flow
//! and sequence number), send them with `tests/capture/replay.py`, and read the pcap files
//! back frame by frame.

mod common;
use common::*;
use sluice::drivers::pcap::file::{read_file, Record, Writer};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PYTHON: &str = "/usr/bin/python3";
const REPLAY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/capture/replay.py");
const QUEUES: u32 = 4;

/// One at a time: two captures and their senders at once on two cores measure the machine.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A veth with QUEUES queues each way: `cap` (the capturing end) in one namespace, `send`
/// in the other; IPv6 off, so nothing but the tests' frames crosses it.
struct Pair {
    cap_ns: Netns,
    send_ns: Netns,
    cap: String,
    send: String,
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let cap_ns = Netns::new(&format!("{tag}c"));
        let send_ns = Netns::new(&format!("{tag}s"));
        let id = std::process::id() % 100_000;
        let (cap, send) = (format!("cq{tag}{id}a"), format!("cq{tag}{id}b"));
        let n = QUEUES.to_string();
        sh(
            "ip",
            &[
                "link",
                "add",
                "name",
                &cap,
                "numtxqueues",
                &n,
                "numrxqueues",
                &n,
                "type",
                "veth",
                "peer",
                "name",
                &send,
                "numtxqueues",
                &n,
                "numrxqueues",
                &n,
            ],
        );
        sh("ip", &["link", "set", &cap, "netns", &cap_ns.name]);
        sh("ip", &["link", "set", &send, "netns", &send_ns.name]);
        for (ns, dev) in [(&cap_ns, &cap), (&send_ns, &send)] {
            ns.sysctl(&format!("net.ipv6.conf.{dev}.disable_ipv6"), "1");
            ns.ip(&["link", "set", dev, "up"]);
        }
        Pair {
            cap_ns,
            send_ns,
            cap,
            send,
        }
    }

    /// Every CPU transmits on the queues in `queues` only (by flow hash when several).
    fn steer(&self, queues: &[u32]) {
        let all = cpu_mask();
        for q in 0..QUEUES {
            let mask = if queues.contains(&q) {
                all.as_str()
            } else {
                "0"
            };
            let file = format!("/sys/class/net/{}/queues/tx-{q}/xps_cpus", self.send);
            let o = self
                .send_ns
                .exec("sh", &["-c", &format!("echo {mask} > {file}")])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{file}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }

    /// Send `frames` in order from the sending end.
    fn send(&self, dir: &Path, name: &str, frames: &[Vec<u8>]) {
        let file = dir.join(format!("{name}.send.pcap"));
        let mut w = Writer::create(&file).unwrap();
        for f in frames {
            w.write(0, f).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let o = self
            .send_ns
            .exec(PYTHON, &[REPLAY, file.to_str().unwrap(), &self.send])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "replay: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            frames.len().to_string()
        );
    }

    /// Start `sluice capture -i CAP ARGS` and wait until it says its rings are bound.
    fn capture(&self, args: &[&str]) -> Capture {
        let mut all = vec!["capture", "-i", self.cap.as_str()];
        all.extend_from_slice(args);
        let mut child = self
            .cap_ns
            .exec(BIN, &all)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = String::new();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("capturing on") => break,
                Some(Ok(l)) => said += &l,
                _ => panic!("capture {all:?} exited before capturing: {said}"),
            }
        }
        // Keep draining stderr, so the child never blocks on it.
        std::thread::spawn(move || lines.for_each(drop));
        Capture { child: Some(child) }
    }
}

/// A running `sluice capture`, killed if a test fails before it stops.
struct Capture {
    child: Option<Child>,
}

impl Capture {
    /// Wait (at most 30 s) for the capture to stop by itself; its JSON summary.
    fn finish(mut self) -> serde_json::Value {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("capture did not stop");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        common::json_output(&out)
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        sh("kill", &[sig, &pid]);
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// All online CPUs, as an xps_cpus mask (32-bit hex words, comma-separated, high first).
fn cpu_mask() -> String {
    let cpus = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(
            std::fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .and_then(|s| s.trim().rsplit(['-', ',']).next()?.parse::<usize>().ok())
                .map_or(1, |last| last + 1),
        );
    let mut words = vec![0u32; cpus.div_ceil(32)];
    for c in 0..cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    words
        .iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A frame that names its group (the queue it is steered to), flow and sequence number:
/// IPv4/UDP from 10.GROUP.FLOW.1 port 1000+FLOW, payload [group, flow, seq (2 bytes)],
/// padded to a length that varies with the sequence number (60-315 bytes).
fn frame(group: u8, flow: u8, seq: u16) -> Vec<u8> {
    let len = 60 + (seq as usize * 37) % 256;
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (len - 14) as u16;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, group, flow, 1]);
    f[30..34].copy_from_slice(&[10, 255, 0, 1]);
    let sum = f[14..34]
        .chunks(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]) as u32)
        .sum::<u32>();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    f[24..26].copy_from_slice(&sum.to_be_bytes());
    f[34..36].copy_from_slice(&(1000 + flow as u16).to_be_bytes());
    f[36..38].copy_from_slice(&9u16.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f[42] = group;
    f[43] = flow;
    f[44..46].copy_from_slice(&seq.to_be_bytes());
    f
}

/// `flows` flows of `per_flow` frames for `group`, interleaved (flow 0 seq 0, flow 1 seq 0..).
fn group_frames(group: u8, flows: u8, per_flow: u16) -> Vec<Vec<u8>> {
    (0..per_flow)
        .flat_map(|s| (0..flows).map(move |f| frame(group, f, s)))
        .collect()
}

/// (group, flow, seq) of a test frame.
fn label(data: &[u8]) -> (u8, u8, u16) {
    (data[42], data[43], u16::from_be_bytes([data[44], data[45]]))
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

/// Each flow's frames in a file come in sequence order.
fn assert_flows_in_order(records: &[Record], file: &Path) {
    let mut last: BTreeMap<(u8, u8), u16> = BTreeMap::new();
    for r in records {
        let (g, f, s) = label(&r.data);
        if let Some(prev) = last.insert((g, f), s) {
            assert!(
                s > prev,
                "{}: flow {g}/{f} seq {s} after {prev}",
                file.display()
            );
        }
    }
}

/// tcpdump reads the file and finds `count` packets in it.
fn assert_tcpdump_reads(file: &Path, count: usize) {
    let o = Command::new("tcpdump")
        .args(["-nn", "-r", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "tcpdump -r {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        count,
        "{}",
        file.display()
    );
}

fn prerequisites() -> bool {
    needs_root()
        && prerequisite(Path::new(PYTHON).exists(), PYTHON)
        && prerequisite(
            Command::new("tcpdump").arg("--version").output().is_ok(),
            "tcpdump, to check the files are readable",
        )
        && prerequisite(
            Path::new("/sys/class/net/lo/queues/tx-0/xps_cpus").exists(),
            "XPS (CONFIG_XPS), to steer frames to a queue",
        )
}

fn queue_file(prefix: &Path, q: u32) -> PathBuf {
    PathBuf::from(format!("{}.q{q}.pcap", prefix.display()))
}

#[test]
fn every_queue_goes_to_its_own_file_and_every_frame_is_kept() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pair = Pair::new("e");
    let dir = tmpdir("capture-each");
    let prefix = dir.join("cap");
    let (flows, per_flow) = (8u8, 50u16);
    let total = QUEUES as usize * flows as usize * per_flow as usize;
    let cap = pair.capture(&[
        "-q",
        "all",
        "-w",
        prefix.to_str().unwrap(),
        "--count",
        &total.to_string(),
        "--seconds",
        "60",
        "--json",
    ]);
    for q in 0..QUEUES {
        pair.steer(&[q]);
        pair.send(
            &dir,
            &format!("g{q}"),
            &group_frames(q as u8, flows, per_flow),
        );
    }
    let summary = cap.finish();
    assert_eq!(summary["total"]["packets"], total, "{summary}");
    assert_eq!(summary["stopped_by"], "count", "{summary}");
    assert_eq!(summary["driver"], "veth");
    assert_eq!(summary["rx_queues"], QUEUES);
    for q in 0..QUEUES {
        let file = queue_file(&prefix, q);
        let records = read_file(&file).unwrap();
        // The queue separation: every frame in file K was steered to queue K, and all of
        // them are there, byte for byte, each flow in the order sent.
        let sent = group_frames(q as u8, flows, per_flow);
        let got: Vec<Vec<u8>> = records.iter().map(|r| r.data.clone()).collect();
        assert_eq!(got.len(), sent.len(), "{}", file.display());
        assert_eq!(sorted(got), sorted(sent), "{}", file.display());
        assert_flows_in_order(&records, &file);
        assert!(records.iter().all(|r| r.orig_len as usize == r.data.len()));
        let stats = &summary["queues"][q as usize];
        assert_eq!(stats["queue"], q);
        assert_eq!(stats["packets"], records.len(), "{summary}");
        let bytes: usize = records.iter().map(|r| r.data.len()).sum();
        assert_eq!(stats["bytes"], bytes, "{summary}");
        assert_eq!(stats["drops"], 0, "{summary}");
        assert_tcpdump_reads(&file, records.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hashed_flows_spread_over_files_each_flow_in_one() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pair = Pair::new("h");
    let dir = tmpdir("capture-hash");
    let prefix = dir.join("cap");
    pair.steer(&[0, 1, 2, 3]);
    let (flows, per_flow) = (64u8, 20u16);
    let sent = group_frames(9, flows, per_flow);
    let cap = pair.capture(&[
        "-w",
        prefix.to_str().unwrap(),
        "--count",
        &sent.len().to_string(),
        "--json",
    ]);
    pair.send(&dir, "hash", &sent);
    let summary = cap.finish();
    let mut union = Vec::new();
    let mut file_of_flow: BTreeMap<u8, u32> = BTreeMap::new();
    let mut busy = 0;
    for q in 0..QUEUES {
        let file = queue_file(&prefix, q);
        let records = read_file(&file).unwrap();
        assert_eq!(
            summary["queues"][q as usize]["packets"],
            records.len(),
            "{summary}"
        );
        busy += usize::from(!records.is_empty());
        assert_flows_in_order(&records, &file);
        for r in &records {
            let (_, flow, _) = label(&r.data);
            let first = *file_of_flow.entry(flow).or_insert(q);
            assert_eq!(first, q, "flow {flow} in queue {first} and {q}");
        }
        union.extend(records.into_iter().map(|r| r.data));
    }
    assert_eq!(sorted(union), sorted(sent));
    assert!(
        busy > 1,
        "64 flows hashed over 4 queues all landed in one: {summary}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_subset_of_queues_merged_in_time_order_and_cut_to_the_snaplen() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pair = Pair::new("m");
    let dir = tmpdir("capture-merge");
    let prefix = dir.join("merged.pcap");
    let (flows, per_flow) = (4u8, 30u16);
    let kept: Vec<Vec<u8>> = [1u8, 3]
        .iter()
        .flat_map(|&g| group_frames(g, flows, per_flow))
        .collect();
    let cap = pair.capture(&[
        "-q",
        "1,3",
        "-w",
        prefix.to_str().unwrap(),
        "--merge",
        "--snaplen",
        "64",
        "--count",
        &kept.len().to_string(),
        "--json",
    ]);
    // Queue 2 is not captured: its frames, sent between the others, must not appear.
    for q in [1, 2, 3] {
        pair.steer(&[q]);
        pair.send(
            &dir,
            &format!("m{q}"),
            &group_frames(q as u8, flows, per_flow),
        );
    }
    let summary = cap.finish();
    assert_eq!(summary["queues"].as_array().unwrap().len(), 2, "{summary}");
    assert_eq!(summary["files"], serde_json::json!([prefix]), "{summary}");
    let records = read_file(&prefix).unwrap();
    assert_eq!(records.len(), kept.len());
    assert!(records
        .windows(2)
        .all(|w| w[0].timestamp_ns <= w[1].timestamp_ns));
    let cut: Vec<Vec<u8>> = kept.iter().map(|f| f[..f.len().min(64)].to_vec()).collect();
    let got: Vec<Vec<u8>> = records.iter().map(|r| r.data.clone()).collect();
    assert_eq!(sorted(got), sorted(cut));
    let wire: Vec<u32> = {
        let mut v: Vec<u32> = records.iter().map(|r| r.orig_len).collect();
        v.sort();
        v
    };
    let mut want: Vec<u32> = kept.iter().map(|f| f.len() as u32).collect();
    want.sort();
    assert_eq!(wire, want, "wire lengths survive the cut");
    for q in 0..QUEUES {
        assert!(
            !queue_file(&dir.join("merged"), q).exists(),
            "the parts are removed"
        );
    }
    assert_tcpdump_reads(&prefix, records.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn memory_mode_stops_after_seconds_and_sigterm_flushes_the_files() {
    if !prerequisites() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pair = Pair::new("s");
    let dir = tmpdir("capture-stop");
    pair.steer(&[0, 1, 2, 3]);
    let sent = group_frames(5, 16, 25);

    let cap = pair.capture(&["--memory", "--seconds", "2", "--json"]);
    pair.send(&dir, "mem", &sent);
    let summary = cap.finish();
    assert_eq!(summary["stopped_by"], "seconds", "{summary}");
    assert_eq!(summary["total"]["packets"], sent.len(), "{summary}");
    assert_eq!(summary["files"], serde_json::json!([]), "{summary}");
    assert!(summary["seconds"].as_f64().unwrap() >= 2.0, "{summary}");

    let prefix = dir.join("term");
    let cap = pair.capture(&["-w", prefix.to_str().unwrap(), "--json"]);
    pair.send(&dir, "term", &sent);
    // Let the rings hand their last block over (they do within a few ms).
    std::thread::sleep(Duration::from_millis(300));
    cap.signal("-TERM");
    let summary = cap.finish();
    assert_eq!(summary["stopped_by"], "signal", "{summary}");
    let mut union = Vec::new();
    for q in 0..QUEUES {
        union.extend(
            read_file(&queue_file(&prefix, q))
                .unwrap()
                .into_iter()
                .map(|r| r.data),
        );
    }
    assert_eq!(sorted(union), sorted(sent));
    let _ = std::fs::remove_dir_all(&dir);
}
