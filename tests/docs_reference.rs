//! The generated references in `docs/` are what the binary prints today: `docs/cli.md` and
//! `docs/api-schema.json` from the command table (`sluice ctl help --markdown` and
//! `sluice ctl help --schema`, no daemon needed) and `docs/config.md` from the config types
//! (`sluice run --print-config-reference`). A change to a command or a
//! config key that is not regenerated fails here, with the command that regenerates it.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sluice");

/// What `sluice ARGS` prints; it must succeed on its own, with no daemon and no root.
fn generated(args: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .env_remove("SLUICE_SOCKET")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "sluice {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The first line where `a` and `b` differ, for the failure message.
fn first_difference(a: &str, b: &str) -> String {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return "none (line endings?)".into(),
            (x, y) if x != y => {
                return format!("line {n}: in the file {x:?}, generated {y:?}");
            }
            _ => {}
        }
    }
    unreachable!()
}

fn check(file: &str, args: &[&str]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let want = generated(args);
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{file} is not what `sluice {}` prints now (first difference: {}). Regenerate it: \
         cargo run -- {} > {file}",
        args.join(" "),
        first_difference(&have, &want),
        args.join(" ")
    );
}

#[test]
fn cli_reference_is_generated_from_the_command_table() {
    check("docs/cli.md", &["ctl", "help", "--markdown"]);
}

#[test]
fn api_schema_is_generated_from_the_command_table() {
    check("docs/api-schema.json", &["ctl", "help", "--schema"]);
}

#[test]
fn config_reference_is_generated_from_the_config_types() {
    check("docs/config.md", &["run", "--print-config-reference"]);
}

#[test]
fn the_references_need_no_daemon_and_cover_every_area() {
    // A socket that cannot exist: the client must answer without connecting.
    let cli = generated(&["ctl", "-s", "/nonexistent/cli.sock", "help", "--markdown"]);
    for heading in ["## Interfaces", "## Routing", "### `ip route add "] {
        assert!(cli.contains(heading), "{heading}");
    }
    let schema = generated(&["ctl", "-s", "/nonexistent/cli.sock", "help", "--schema"]);
    let schema: serde_json::Value = serde_json::from_str(&schema).unwrap();
    let titles: Vec<&str> = schema["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["title"].as_str())
        .collect();
    for command in [
        "show interface",
        "ip route add",
        "set interface state",
        "save",
    ] {
        assert!(titles.contains(&command), "{command}");
    }
    let config = generated(&["run", "--print-config-reference"]);
    for heading in ["## `[dataplane]`", "## `[[interface]]`", "| `route-file` |"] {
        assert!(config.contains(heading), "{heading}");
    }
    // Without the flag, run still wants a config file.
    let o = Command::new(BIN).arg("run").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
