//! What the scapy case scripts (tests/conformance/cases.py, tests/nat44/cases.py) print: one
//! JSON object a line, a case's being `{"case": NAME, "t0": [...], "t1": [...]}`, the frames
//! that came back on t0 and those that arrived on t1, normalised to strings.

use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Output;

/// What one case showed: the frames that came back on t0 and those that arrived on t1.
pub type Seen = (Vec<String>, Vec<String>);

/// The JSON lines of a script's output, after checking that it succeeded (`what` names it
/// in the failure).
pub fn json_lines(o: &Output, what: &str) -> Vec<Value> {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Case name → what it showed.
pub fn observations(lines: &[Value]) -> BTreeMap<String, Seen> {
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    lines
        .iter()
        .filter(|v| v.get("case").is_some())
        .map(|v| {
            (
                v["case"].as_str().unwrap().to_string(),
                (list(&v["t0"]), list(&v["t1"])),
            )
        })
        .collect()
}
