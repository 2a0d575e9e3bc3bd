//! The change log: one line on the daemon's standard error (where it logs everything else)
//! for each change made to the running router, saying where it came from, what was asked
//! and how it ended. The control socket logs every command that changes state
//! (`Effect::Changes`) here, whether it ran or was refused by its handler; `ctl apply` logs
//! what it changes through the same function, so the log has one form.
//!
//! ```text
//! sluice: change: cli.sock: set interface state n0 down: ok
//! sluice: change: cli.sock: {"version":1,"command":"ip route add",...}: error: no interface ...
//! ```

/// The log line for one change: `source` (the socket's file name, `apply FILE`...), `what`
/// (the command line, or the typed request as compact JSON) and its outcome.
pub fn line(source: &str, what: &str, outcome: Result<(), &str>) -> String {
    let result = match outcome {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("error: {}", one_line(e)),
    };
    format!(
        "sluice: change: {}: {}: {result}",
        one_line(source),
        one_line(what)
    )
}

/// Write the log line for one change.
pub fn log(source: &str, what: &str, outcome: Result<(), &str>) {
    eprintln!("{}", line(source, what, outcome));
}

/// `s` with control characters escaped, so that one change is always one line.
fn one_line(s: &str) -> String {
    s.chars()
        .flat_map(|c| -> Box<dyn Iterator<Item = char>> {
            if c.is_control() {
                Box::new(c.escape_default())
            } else {
                Box::new(std::iter::once(c))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_change_with_its_outcome() {
        assert_eq!(
            line("cli.sock", "set interface state n0 down", Ok(())),
            "sluice: change: cli.sock: set interface state n0 down: ok"
        );
        assert_eq!(
            line("cli.sock", "ip route add x", Err("bad prefix 'x'\nsecond")),
            "sluice: change: cli.sock: ip route add x: error: bad prefix 'x'\\nsecond"
        );
        assert!(!line("a\rb", "c\u{1b}d", Ok(())).contains(['\r', '\u{1b}']));
    }
}
