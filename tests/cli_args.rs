//! The top-level command line: generated help, completion scripts, the version, and argument
//! errors as one stderr line with exit code 2. Needs no root: nothing here starts a run.

mod common;

use common::BIN;
use std::process::{Command, Output};

const SUBCOMMANDS: [&str; 9] = [
    "run",
    "ctl",
    "gen",
    "capture",
    "lab",
    "bench",
    "fib",
    "version",
    "completions",
];

fn sluice(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A bad command line: exit code 2 and exactly one line on stderr, naming the command.
fn one_line_error(args: &[&str], command: &str) -> String {
    let o = sluice(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
    assert!(e.starts_with(&format!("{command}: ")), "{args:?}: {e}");
    assert!(o.stdout.is_empty(), "{args:?}");
    e
}

#[test]
fn help_lists_every_subcommand() {
    let o = sluice(&["--help"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for sub in SUBCOMMANDS {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} missing from:\n{out}"
        );
    }
    // Without a command: the same help, on stderr, as an error.
    let o = sluice(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("Usage: sluice <COMMAND>"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn subcommand_help_is_generated() {
    let o = sluice(&["lab", "run", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Help wraps to the terminal's width: compare with the line breaks taken out.
    let out = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        out.contains("--dut") && out.contains("[default: sluice]"),
        "{out}"
    );
    for args in [
        &["lab", "bench", "--help"][..],
        &["bench", "--help"],
        &["bench", "compare", "--help"],
        &["fib", "synth", "--help"],
        &["gen", "--help"],
        &["capture", "--help"],
        &["ctl", "--help"],
        &["run", "--help"],
    ] {
        let o = sluice(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage: sluice"), "{args:?}");
    }
}

#[test]
fn version_in_both_spellings() {
    let want = format!("sluice {}\n", env!("CARGO_PKG_VERSION"));
    for args in [&["version"][..], &["--version"], &["-V"]] {
        let o = sluice(args);
        assert!(o.status.success());
        assert_eq!(stdout(&o), want, "{args:?}");
    }
}

#[test]
fn completion_scripts() {
    let o = sluice(&["completions", "bash"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let script = stdout(&o);
    assert!(script.contains("complete -F _sluice"), "{script}");
    for sub in SUBCOMMANDS {
        assert!(script.contains(&format!("sluice,{sub})")), "{sub}");
    }
    // Options of sub-subcommands are in it too.
    assert!(script.contains("--loadtest") && script.contains("--next-hops"));
    for shell in ["zsh", "fish"] {
        let o = sluice(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains("lab"), "{shell}");
    }
    one_line_error(&["completions", "tcsh"], "sluice completions");
}

#[test]
fn unknown_flags_are_one_line_errors() {
    for (args, command) in [
        (&["run", "--frob"][..], "sluice run"),
        (&["ctl", "--frob"], "sluice ctl"),
        (&["gen", "--tx", "t0", "--frob"], "sluice gen"),
        (&["capture", "-i", "lo", "--frob"], "sluice capture"),
        (&["lab", "--frob"], "sluice lab"),
        (&["lab", "run", "--frob"], "sluice lab run"),
        (&["lab", "bench", "--frob"], "sluice lab bench"),
        (&["bench", "--frob"], "sluice bench"),
        (&["bench", "compare", "--frob", "a"], "sluice bench compare"),
        (&["fib", "--frob"], "sluice fib"),
        (
            &["fib", "bench", "--routes", "x", "--frob"],
            "sluice fib bench",
        ),
        (&["version", "--frob"], "sluice version"),
        (&["completions", "--frob"], "sluice completions"),
    ] {
        let e = one_line_error(args, command);
        assert!(e.contains("unexpected argument '--frob'"), "{e}");
        assert!(e.contains(&format!("(try: {command} --help)")), "{e}");
    }
}

#[test]
fn unknown_subcommands_and_bad_values_are_one_line_errors() {
    let e = one_line_error(&["sideways"], "sluice");
    assert!(e.contains("unrecognized subcommand 'sideways'"), "{e}");
    one_line_error(&["lab", "sideways"], "sluice lab");
    one_line_error(&["fib", "sideways"], "sluice fib");
    let e = one_line_error(&["lab", "run", "--size", "3"], "sluice lab run");
    assert!(e.contains("'3'") && e.contains("64..=9018"), "{e}");
    let e = one_line_error(&["gen", "--tx", "t0", "--io", "foo"], "sluice gen");
    assert!(e.contains("af_packet, af_xdp, memif"), "{e}");
    let e = one_line_error(
        &["lab", "run", "--duration", "1", "--count", "5"],
        "sluice lab run",
    );
    assert!(e.contains("cannot be used with"), "{e}");
    let e = one_line_error(
        &["bench", "compare", "-c", "7", "a"],
        "sluice bench compare",
    );
    assert!(e.contains("-c takes 80, 90, 95, 98, 99 or 99.5"), "{e}");
    let e = one_line_error(&["gen"], "sluice gen");
    assert!(e.contains("--tx <IF>"), "{e}");
    // Checks across options keep their own messages, still one line.
    let o = sluice(&["gen", "--tx", "t0", "--bi"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim(),
        "sluice gen: --bi needs --rx (the other port) (see sluice gen --help)"
    );
}

#[test]
fn capture_errors_are_one_line_with_exit_code_2() {
    // Options clap checks.
    let e = one_line_error(&["capture", "--memory"], "sluice capture");
    assert!(e.contains("--interface <IF>"), "{e}");
    let e = one_line_error(&["capture", "-i", "lo"], "sluice capture");
    assert!(e.contains("--write") && e.contains("--memory"), "{e}");
    let e = one_line_error(
        &["capture", "-i", "lo", "-q", "1,x", "--memory"],
        "sluice capture",
    );
    assert!(e.contains("'x' is not a queue number"), "{e}");
    let e = one_line_error(
        &["capture", "-i", "lo", "-q", "3-1", "--memory"],
        "sluice capture",
    );
    assert!(e.contains("empty range"), "{e}");
    let e = one_line_error(
        &["capture", "-i", "lo", "--memory", "--merge"],
        "sluice capture",
    );
    assert!(e.contains("cannot be used with"), "{e}");
    let e = one_line_error(
        &["capture", "-i", "lo", "--memory", "-w", "x"],
        "sluice capture",
    );
    assert!(e.contains("cannot be used with"), "{e}");
    for bad in [
        &["--snaplen", "0"][..],
        &["--count", "0"],
        &["--seconds", "0"],
        &["--seconds", "soon"],
    ] {
        let mut args = vec!["capture", "-i", "lo", "--memory"];
        args.extend_from_slice(bad);
        one_line_error(&args, "sluice capture");
    }
    // Checks against the machine, before any socket is opened (so no root is needed): the
    // same one line and exit code 2.
    let e = one_line_error(
        &["capture", "-i", "sl-no-such-if", "--memory"],
        "sluice capture",
    );
    assert_eq!(
        e.trim(),
        "sluice capture: interface 'sl-no-such-if' not found"
    );
    let e = one_line_error(
        &["capture", "-i", "lo", "-q", "0,3", "--memory"],
        "sluice capture",
    );
    assert_eq!(
        e.trim(),
        "sluice capture: queue 3: lo has 1 receive queue (0)"
    );
    let e = one_line_error(
        &["capture", "-i", "lo", "-w", "/nonexistent-sluice-dir/cap"],
        "sluice capture",
    );
    assert!(
        e.contains("/nonexistent-sluice-dir/cap.q0.pcap") && e.contains("No such file"),
        "{e}"
    );
    let e = one_line_error(
        &[
            "capture",
            "-i",
            "lo",
            "-w",
            "/nonexistent-sluice-dir/cap",
            "--merge",
        ],
        "sluice capture",
    );
    assert!(e.contains("/nonexistent-sluice-dir/cap.pcap"), "{e}");
}

#[test]
fn ctl_words_stay_free_form() {
    // Words that look like options belong to the daemon's grammar; with no daemon the
    // request fails at the socket, a runtime error (1), not an argument error (2).
    let o = sluice(&[
        "ctl",
        "-s",
        "/nonexistent/sluice.sock",
        "show",
        "interface",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot connect"), "{}", stderr(&o));
    let o = sluice(&[
        "ctl",
        "-s",
        "/nonexistent/sluice.sock",
        "--json",
        "show",
        "runtime",
        "-x",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = one_line_error(&["ctl", "--batch", "show"], "sluice ctl");
    assert!(e.contains("standard input"), "{e}");
}
