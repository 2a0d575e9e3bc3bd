//! The daemon as a user runs it: `sluice run -c FILE` and `sluice ctl`, through the binary.

mod common;
use common::{tmpdir, Daemon, BIN};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn sluice(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn pcap_config(dir: &Path) -> PathBuf {
    let input = dir.join("in.pcap");
    common::frames::one_frame_pcap(&input);
    let cfg = dir.join("d.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nhugepages = \"never\"\nbuffers = 2048\n[control]\nsocket = \"{0}/cli.sock\"\n\
             [[interface]]\nname = \"p0\"\ndriver = \"pcap\"\nrx-file = \"{0}/in.pcap\"\n\
             [[interface]]\nname = \"p1\"\ndriver = \"pcap\"\ntx-file = \"{0}/out.pcap\"\n\
             [[xconnect]]\nrx = \"p0\"\ntx = \"p1\"\n",
            dir.display()
        ),
    )
    .unwrap();
    cfg
}

fn start(cfg: &Path, sock: &Path) -> Daemon {
    Daemon::start_here(cfg, sock)
}

#[test]
fn bad_config_line_names_line_and_key() {
    let dir = tmpdir("d-cfg");
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "[dataplane]\nworkers = 1\n\n[[interface]]\nname = \"a\"\ndriver = \"af_packet\"\nmtuu = 1500\n").unwrap();
    let o = sluice(&["run", "-c", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("bad.toml:7") && e.contains("mtuu"), "{e}");

    std::fs::write(&cfg, "[[interface]]\nname = \"a\"\ndriver = \"af_packet\"\n[[xconnect]]\nrx = \"a\"\ntx = \"b\"\n").unwrap();
    let e = stderr(&sluice(&["run", "-c", cfg.to_str().unwrap()]));
    assert!(
        e.contains("bad.toml:6: key 'tx'") && e.contains("'b'"),
        "{e}"
    );

    let e = stderr(&sluice(&["run", "-c", "/nonexistent/x.toml"]));
    assert!(e.contains("/nonexistent/x.toml"), "{e}");
    let o = sluice(&["run", "--frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn missing_host_interface_is_a_clear_error_at_start() {
    let dir = tmpdir("d-missing");
    let cfg = dir.join("m.toml");
    std::fs::write(
        &cfg,
        format!(
            "[control]\nsocket = \"{}/cli.sock\"\n[[interface]]\nname = \"x0\"\ndriver = \"af_packet\"\nhost = \"sl-no-such-if\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let o = sluice(&["run", "-c", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("sl-no-such-if") && e.contains("not found"),
        "{e}"
    );
    assert!(
        !dir.join("cli.sock").exists(),
        "socket left behind after a failed start"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ctl_answers_and_rejects_bad_lines() {
    let dir = tmpdir("d-ctl");
    let cfg = pcap_config(&dir);
    let sock = dir.join("cli.sock");
    let _d = start(&cfg, &sock);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let s = sock.to_str().unwrap();

    let o = sluice(&["ctl", "-s", s, "show", "interface"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("p0") && out.contains("p1"), "{out}");

    let o = sluice(&["ctl", "-s", s, "show", "interface", "--json"]);
    let v = common::json_output(&o);
    assert_eq!(v.as_array().unwrap().len(), 2);

    // The graph: ethernet-input's next nodes by slot, and who sends to it.
    let o = sluice(&["ctl", "-s", s, "show", "graph", "ethernet-input", "--json"]);
    let g = common::json_output(&o);
    let node = &g.as_array().unwrap()[0];
    assert_eq!(node["kind"], "internal", "{g}");
    let next: Vec<&str> = node["next"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        next.contains(&"l2-xconnect") && next.contains(&"ip4-input"),
        "{g}"
    );
    assert!(
        node["previous"]
            .as_array()
            .unwrap()
            .contains(&"pcap-input".into()),
        "{g}"
    );
    let o = sluice(&["ctl", "-s", s, "show", "graph"]);
    let all = String::from_utf8_lossy(&o.stdout);
    assert!(
        all.lines()
            .any(|l| l.starts_with("error-drop") && l.contains("drop")),
        "{all}"
    );
    let o = sluice(&["ctl", "-s", s, "show", "graph", "nosuch-node"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no graph node named 'nosuch-node'"),
        "{}",
        stderr(&o)
    );

    let o = sluice(&["ctl", "-s", s, "show", "frobs"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("unknown command") && e.contains("help"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");

    // The daemon is still alive after bad input.
    assert!(sluice(&["ctl", "-s", s, "show", "runtime"])
        .status
        .success());

    // A second daemon on the same socket refuses to start and leaves the first alone.
    let o = sluice(&["run", "-c", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("another sluice"), "{}", stderr(&o));
    assert!(sluice(&["ctl", "-s", s, "show", "buffers"])
        .status
        .success());

    let o = sluice(&["ctl", "-s", &format!("{s}.nope"), "show", "int"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot connect"));
    drop(_d);
    assert!(!sock.exists(), "socket not removed on exit");
    std::fs::remove_dir_all(&dir).ok();
}

/// The vectors `node` handled on each worker since the last `clear runtime`.
fn vectors_by_worker(s: &str, node: &str) -> Vec<u64> {
    let o = sluice(&["ctl", "-s", s, "show", "runtime", "--json"]);
    common::vectors_by_worker(&common::json_output(&o), node)
}

/// Receive queues start where [[rx-placement]] puts them and move between two workers while
/// frames flow: after both of worker 0's queues go to worker 1, worker 0 receives nothing and the frames keep flowing; back again,
/// it receives. Placement errors are refused with reasons.
#[test]
fn rx_placement_moves_queues_between_workers_under_traffic() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        assert!(
            std::env::var("CI").is_err(),
            "CI machines have 2 CPUs; this one has {cpus}"
        );
        eprintln!("skipped: one CPU (two workers need two)");
        return;
    }
    let dir = tmpdir("d-placement");
    let sock = dir.join("cli.sock");
    let s = sock.to_str().unwrap();
    let cfg = dir.join("p.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 2\nworker-cores = [0, 1]\nhugepages = \"never\"\nbuffers = 16384\n\
             [control]\nsocket = \"{s}\"\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n\
             [[xconnect]]\nrx = \"n0\"\ntx = \"n1\"\n[[xconnect]]\nrx = \"n1\"\ntx = \"n0\"\n\
             [[rx-placement]]\ninterface = \"n0\"\nqueue = 0\nworker = 1\n"
        ),
    )
    .unwrap();
    let _d = start(&cfg, &sock);
    let ctl = |args: &[&str]| {
        let mut all = vec!["ctl", "-s", s];
        all.extend_from_slice(args);
        sluice(&all)
    };
    let placement = || {
        let o = ctl(&["show", "interface", "rx-placement", "--json"]);
        let v = common::json_output(&o);
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let name = h["interface"].as_str().unwrap().to_string();
                (
                    name,
                    h["queue"].as_u64().unwrap(),
                    h["worker"].as_u64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let q = |n: &str, q: u64, w: u64| (n.to_string(), q, w);
    // [[rx-placement]] put n0's queue 0 on worker 1; the rest are queue mod workers.
    assert_eq!(
        placement(),
        [q("n0", 0, 1), q("n0", 1, 1), q("n1", 0, 0), q("n1", 1, 1)]
    );
    let settle = || std::thread::sleep(Duration::from_millis(300));
    let sent = || {
        let o = ctl(&["show", "interface", "n1", "--json"]);
        let v = common::json_output(&o);
        v[0]["tx_packets"].as_u64().unwrap_or(0)
    };

    for (n, w) in [("n0", "1"), ("n1", "1")] {
        let o = ctl(&[
            "set",
            "interface",
            "rx-placement",
            n,
            "queue",
            "0",
            "worker",
            w,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(
        placement(),
        [q("n0", 0, 1), q("n0", 1, 1), q("n1", 0, 1), q("n1", 1, 1)]
    );
    settle();
    assert!(ctl(&["clear", "runtime"]).status.success());
    let before = sent();
    settle();
    let v = vectors_by_worker(s, "null-input");
    assert_eq!(v[0], 0, "worker 0 still receives: {v:?}");
    assert!(v[1] > 0, "worker 1 receives nothing: {v:?}");
    assert!(sent() > before, "frames stopped flowing");

    let o = ctl(&[
        "set",
        "interface",
        "rx-placement",
        "n0",
        "queue",
        "0",
        "worker",
        "0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    settle();
    assert!(ctl(&["clear", "runtime"]).status.success());
    settle();
    let v = vectors_by_worker(s, "null-input");
    assert!(v[0] > 0 && v[1] > 0, "both workers receive again: {v:?}");

    for (args, why) in [
        (
            &["n0", "queue", "0", "worker", "2"][..],
            "there are 2 worker(s)",
        ),
        (&["n0", "queue", "5", "worker", "0"][..], "queues 0 to 1"),
        (
            &["n9", "queue", "0", "worker", "0"][..],
            "no interface named 'n9'",
        ),
        (
            &["n0", "queue", "x", "worker", "0"][..],
            "queue 'x' is not a number",
        ),
        (&["n0", "worker", "0"][..], "expected: queue <Q> worker <W>"),
    ] {
        let mut a = vec!["set", "interface", "rx-placement"];
        a.extend_from_slice(args);
        let o = ctl(&a);
        assert!(!o.status.success(), "{args:?} was accepted");
        let e = stderr(&o);
        assert!(e.contains(why), "{args:?}: {e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `show queues` and `sluice ctl monitor --json` report each queue's packets and rate and
/// each worker's busy fraction; with every queue moved to worker 1, worker 0 goes idle and
/// worker 1 is flagged as far above the mean.
#[test]
fn show_queues_and_the_monitor_follow_the_load() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        assert!(
            std::env::var("CI").is_err(),
            "CI machines have 2 CPUs; this one has {cpus}"
        );
        eprintln!("skipped: one CPU (two workers need two)");
        return;
    }
    let dir = tmpdir("d-queues");
    let sock = dir.join("cli.sock");
    let s = sock.to_str().unwrap();
    let cfg = dir.join("q.toml");
    std::fs::write(
        &cfg,
        format!(
            "[dataplane]\nworkers = 2\nworker-cores = [0, 1]\nhugepages = \"never\"\nbuffers = 16384\n\
             [control]\nsocket = \"{s}\"\n\
             [[interface]]\nname = \"n0\"\ndriver = \"null\"\n\
             [[interface]]\nname = \"n1\"\ndriver = \"null\"\n\
             [[xconnect]]\nrx = \"n0\"\ntx = \"n1\"\n[[xconnect]]\nrx = \"n1\"\ntx = \"n0\"\n"
        ),
    )
    .unwrap();
    let _d = start(&cfg, &sock);
    let ctl = |args: &[&str]| {
        let mut all = vec!["ctl", "-s", s];
        all.extend_from_slice(args);
        sluice(&all)
    };
    let queues = || {
        let o = ctl(&["show", "queues", "--json"]);
        common::json_output(&o)
    };
    // Two sampling intervals: the rates are over a whole second of traffic.
    std::thread::sleep(Duration::from_millis(2200));
    let v = queues();
    let rows = v["queues"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{v}");
    for r in rows {
        assert!(r["packets"].as_u64().unwrap() > 0, "{r}");
        assert!(r["bytes"].as_u64().unwrap() >= 60 * r["packets"].as_u64().unwrap());
        assert!(r["pps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["worker_busy"].as_f64().unwrap() > 0.0, "{r}");
    }
    for itf in ["n0", "n1"] {
        let share: f64 = rows
            .iter()
            .filter(|r| r["interface"] == itf)
            .map(|r| r["share"].as_f64().unwrap())
            .sum();
        assert!((share - 1.0).abs() < 1e-9, "{itf}: shares sum to {share}");
    }
    let interval = v["interval_s"].as_f64().unwrap();
    assert!((0.5..2.0).contains(&interval), "{interval}");
    let workers = v["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    assert!(
        workers.iter().all(|w| w["busy"].as_f64().unwrap() > 0.0),
        "{v}"
    );

    // Every queue to worker 1: after two intervals worker 0 received nothing in the last one.
    for (n, q) in [("n0", "0"), ("n1", "0")] {
        let o = ctl(&[
            "set",
            "interface",
            "rx-placement",
            n,
            "queue",
            q,
            "worker",
            "1",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    std::thread::sleep(Duration::from_millis(2500));
    let v = queues();
    let w = v["workers"].as_array().unwrap();
    assert_eq!(w[0]["queues"], 0, "{v}");
    assert_eq!(w[0]["pps"].as_f64(), Some(0.0), "{v}");
    assert_eq!(w[0]["busy"].as_f64(), Some(0.0), "{v}");
    assert_eq!(w[1]["queues"], 4, "{v}");
    assert_eq!(w[1]["imbalanced"], true, "{v}");
    assert!(v["queues"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["worker"] == 1));
    let o = ctl(&["show", "queues"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("! = above 1.5x"), "{text}");

    // The monitor: two JSON lines a short interval apart, with the time and the queues.
    let o = ctl(&["monitor", "--json", "--interval", "0.2", "--count", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let t: Vec<f64> = lines.iter().map(|l| l["time"].as_f64().unwrap()).collect();
    assert!(t[1] - t[0] >= 0.15, "{t:?}");
    assert_eq!(lines[1]["queues"].as_array().unwrap().len(), 4);
    // Text mode into a pipe: the table, no screen clearing.
    let o = ctl(&["monitor", "--count", "1"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("sluice monitor ") && text.contains("Interface"),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "{text}");
    let o = ctl(&["monitor", "--interval", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("0.1 to 3600"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}
