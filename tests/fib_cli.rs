//! `sluice fib` as a user runs it, through the binary: synth | lookup round trip, and errors.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

fn tmpfile(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sluice-fib-{tag}-{}", std::process::id()))
}

fn sluice(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn lookup(routes: &str, input: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(["fib", "lookup", "--routes", routes])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command may exit before reading (bad route file): a broken pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn fib_synth_then_lookup_finds_every_route() {
    let file = tmpfile("synth");
    let f = file.to_str().unwrap();
    let o = sluice(&[
        "fib", "synth", "--v4", "3000", "--v6", "1000", "--seed", "5", "--out", f,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Same seed, same table, on stdout.
    let again = sluice(&[
        "fib", "synth", "--v4", "3000", "--v6", "1000", "--seed", "5",
    ]);
    let table = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text(&again.stdout), table);
    let routes: Vec<(&str, &str)> = table
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once(' ').unwrap())
        .collect();
    assert_eq!(routes.len(), 4000);
    // Each route's own network address must resolve to a route at least as long (the table
    // may hold a more-specific at the same address) whose next hop the file gives it.
    let input: String = routes
        .iter()
        .map(|(p, _)| format!("{}\n", p.split('/').next().unwrap()))
        .collect();
    let o = lookup(f, &format!("{input}192.0.2.1\n\n::1\n"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), routes.len() + 2);
    let by_prefix: std::collections::HashMap<&str, &str> = routes.iter().copied().collect();
    for ((p, _), line) in routes.iter().zip(&lines) {
        let w: Vec<&str> = line.split(' ').collect();
        assert_eq!(w.len(), 3, "{line}");
        assert_eq!(w[0], p.split('/').next().unwrap());
        let got_len: u8 = w[1].split('/').nth(1).unwrap().parse().unwrap();
        let want_len: u8 = p.split('/').nth(1).unwrap().parse().unwrap();
        assert!(got_len >= want_len, "{line} for {p}");
        assert_eq!(by_prefix[w[1]], w[2], "{line}");
    }
    // Documentation addresses are not in a synthetic table.
    assert_eq!(lines[routes.len()], "192.0.2.1 none");
    assert_eq!(lines[routes.len() + 1], "::1 none");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn fib_lookup_longest_match_on_ip_route_text() {
    let file = tmpfile("iproute");
    std::fs::write(
        &file,
        "default via 192.168.1.1 dev eth0 proto dhcp metric 100\n\
         10.0.0.0/8 via 10.255.0.1 dev eth1\n\
         10.1.0.0/16 dev eth2 proto kernel scope link src 10.1.0.5\n\
         10.1.2.3 via 10.1.0.1 dev eth2\n\
         2001:db8::/32 via fe80::1 dev eth0\n",
    )
    .unwrap();
    let o = lookup(
        file.to_str().unwrap(),
        "10.1.2.3\n10.1.2.4\n10.2.0.1\n8.8.8.8\n2001:db8::5\n2001:db9::1\nnot-an-ip\n",
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stdout),
        "10.1.2.3 10.1.2.3/32 10.1.0.1\n10.1.2.4 10.1.0.0/16 eth2\n10.2.0.1 10.0.0.0/8 10.255.0.1\n\
         8.8.8.8 0.0.0.0/0 192.168.1.1\n2001:db8::5 2001:db8::/32 fe80::1\n2001:db9::1 none\n"
    );
    assert!(text(&o.stderr).contains("stdin:7: bad address 'not-an-ip'"));
    let _ = std::fs::remove_file(&file);
}

#[test]
fn fib_cli_errors() {
    let o = sluice(&["fib", "synth", "--v4", "many"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("invalid value 'many' for '--v4 <N>'"));
    let o = sluice(&["fib", "synth", "--v4", "10", "--long", "60"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--long must be 0 to 50 (percent)"));
    let o = sluice(&["fib", "lookup"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("required arguments were not provided: --routes <FILE>"));
    let o = sluice(&["fib", "bench", "--routes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("a value is required for '--routes <FILE>'"));
    let o = sluice(&["fib", "frob"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unrecognized subcommand 'frob'"));
    let o = sluice(&["fib", "synth", "--v4", "1", "--bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unexpected argument '--bogus'"));
    let o = sluice(&["fib"]);
    assert_eq!(o.status.code(), Some(2));
    let o = sluice(&["fib", "--help"]);
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("Usage: sluice fib <COMMAND>"));
    // A bad route file names the file and line.
    let file = tmpfile("bad");
    std::fs::write(&file, "10.0.0.0/8 192.0.2.1\n10.0.0.0/40 192.0.2.1\n").unwrap();
    let f = file.to_str().unwrap();
    let o = lookup(f, "10.0.0.1\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains(&format!("{f}:2: prefix length 40 too long")),
        "{}",
        text(&o.stderr)
    );
    let o = sluice(&["fib", "bench", "--routes", "/nonexistent/routes"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("/nonexistent/routes: "));
    let _ = std::fs::remove_file(&file);
}

#[test]
fn fib_bench_command_reports_every_figure() {
    let file = tmpfile("bench");
    let f = file.to_str().unwrap();
    let o = sluice(&[
        "fib", "synth", "--v4", "2000", "--v6", "500", "--long", "5", "--out", f,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = sluice(&["fib", "bench", "--routes", f, "--seconds", "0.05"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let line = |start: &str| -> &str {
        out.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line '{start}' in:\n{out}"))
    };
    // 5 % of the 2 000 synthetic routes.
    assert!(
        line("routes: ").starts_with("routes: 2000 IPv4 (100 longer than /24), 500 IPv6 ("),
        "{out}"
    );
    // One copy of a trie per family, and the previous FIB beside it.
    let memory = line("poptrie (the dataplane's FIB), one copy");
    assert!(memory.contains("an empty FIB"), "{memory}");
    assert!(
        line("dir24 (the previous FIB)").contains("each held twice"),
        "{out}"
    );
    // Both FIBs give the same answers on every set.
    let differ: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("answers differ"))
        .collect();
    assert_eq!(differ.len(), 8, "{out}");
    assert!(
        differ.iter().all(|l| l.contains(" 0 answers differ")),
        "{out}"
    );
    for family in ["IPv4", "IPv6"] {
        // Every figure names what it measures; the hit sets always find a route.
        assert!(line(&format!("{family} hit ")).contains("100.0 % matched  a route of the table"));
        assert!(line(&format!("{family} hot ")).contains("again and again"));
        assert!(line(&format!("{family} announced ")).contains("uniform over the announced space"));
        assert!(line(&format!("{family} uniform ")).contains("uniform over all 2^"));
    }
    // Nearly all of 2^128 is outside the table.
    assert!(line("IPv6 uniform ").contains(" 0.0 % matched"), "{out}");
    assert!(line("updates ").contains("route changes/s"));

    // The same figures as one JSON document.
    let o = sluice(&["fib", "bench", "--routes", f, "--seconds", "0.02", "--json"]);
    let doc = common::json_output(&o);
    assert_eq!(doc["v4"]["routes"], 2000, "{doc}");
    assert_eq!(doc["v4"]["longer_than_24"], 100, "{doc}");
    assert_eq!(doc["v6"]["routes"], 500, "{doc}");
    for family in ["v4", "v6"] {
        assert!(doc[family]["memory_bytes"].as_u64().unwrap() > 0, "{doc}");
        for set in ["hit", "hot", "announced", "uniform"] {
            let rate = doc[family]["lookups_per_s"][set].as_f64().unwrap_or(0.0);
            assert!(rate > 0.0, "{family} {set}: {doc}");
        }
        // The names for two of the sets.
        let rates = &doc[family]["lookups_per_s"];
        assert_eq!(rates["hitting"], rates["hit"], "{doc}");
        assert_eq!(rates["random"], rates["uniform"], "{doc}");
        assert!(
            doc[family]["route_table_bytes"].as_u64().unwrap() > 0,
            "{doc}"
        );
    }
    assert!(doc["route_table_bytes"].as_u64().unwrap() > 0, "{doc}");
    assert!(doc["updates_per_s"].as_f64().unwrap() > 0.0, "{doc}");
    // At least 20 000 deletes and re-adds, and for at least the figure's time.
    assert!(doc["update_changes"].as_u64().unwrap() >= 40_000, "{doc}");
    assert!(doc["update_seconds"].as_f64().unwrap() >= 0.02, "{doc}");
    assert!(
        doc["lookups_per_s_during_updates"].as_f64().unwrap() > 0.0,
        "{doc}"
    );
    assert_eq!(doc["fib"], "poptrie", "{doc}");
    // An empty FIB (both families) costs at most 64 KiB.
    assert!(
        doc["empty_fib_bytes"].as_u64().unwrap() <= 64 << 10,
        "{doc}"
    );
    for family in ["v4", "v6"] {
        assert_eq!(doc[family]["copies"], 1, "{doc}");
        assert_eq!(doc["dir24"][family]["copies"], 2, "{doc}");
        let (new, old) = (
            doc[family]["memory_bytes"].as_u64().unwrap(),
            doc["dir24"][family]["memory_bytes"].as_u64().unwrap(),
        );
        assert!(new < old, "{family}: {new} vs {old}");
    }
    assert_eq!(doc["dir24"]["answers_differing"], 0, "{doc}");
    // --fib picks one.
    let o = sluice(&[
        "fib",
        "bench",
        "--routes",
        f,
        "--seconds",
        "0.02",
        "--json",
        "--fib",
        "dir24",
    ]);
    let doc = common::json_output(&o);
    assert!(
        doc.get("v4").is_none()
            && doc["dir24"]["v4"]["lookups_per_s"]["hit"].as_f64().unwrap() > 0.0,
        "{doc}"
    );
    let o = sluice(&["fib", "bench", "--routes", f, "--fib", "frob"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_file(&file);
}
