//! `sluice bench graph`: the dataplane on null interfaces, through the binary. Rates are
//! not judged here (benchmarks measure, tests check): only that every worker count asked
//! for was run, moved frames, and was reported in the documented JSON shape.

use std::process::Command;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

#[test]
fn reports_each_worker_count_in_json() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counts: Vec<usize> = (1..=cpus.min(2)).collect();
    let list: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
    let out = Command::new(BIN)
        .args(["bench", "graph", "--seconds", "0.3", "--json", "--workers"])
        .arg(list.join(","))
        .output()
        .unwrap();
    let doc = common::json_output(&out);
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), counts.len(), "{doc}");
    for (r, &w) in results.iter().zip(&counts) {
        assert_eq!(r["workers"].as_u64(), Some(w as u64), "{doc}");
        let pps = r["pps"].as_f64().expect("pps");
        // Half a million frames a second is far below what one worker makes of null
        // interfaces; zero would mean nothing moved.
        assert!(pps > 500_000.0, "{w} workers: {pps} frames/s: {doc}");
        let (locks, waits) = (
            r["free_list_locks"].as_u64(),
            r["free_list_contended"].as_u64(),
        );
        assert!(locks.is_some() && waits <= locks, "{doc}");
    }
}

#[test]
fn refuses_more_workers_than_cpus_and_bad_seconds() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let too_many = (cpus + 1).to_string();
    let out = Command::new(BIN)
        .args(["bench", "graph", "--seconds", "0.1", "--workers", &too_many])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("each worker needs one"), "{stderr}");
    let out = Command::new(BIN)
        .args(["bench", "graph", "--seconds", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seconds 0"));
}
