//! `sluice ctl monitor`: `show queues` again and again, like `top` — the screen redrawn
//! every interval on a terminal, one block after another otherwise, or one JSON line per
//! interval (`--json`) for scripts. The rates are the daemon's, over its last second.

use super::client::request;
use serde_json::Value;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The monitor's section of `docs/cli.md` (the client answers `monitor` itself).
pub const MARKDOWN: &str = "\n## Monitor (client side)\n\n\
### `monitor [--interval <S>] [--count <N>] [--json]`\n\n\
`show queues` every S seconds (default 1, 0.1 to 3600), N times (default: until interrupted): \
on a terminal the screen is redrawn like `top`, otherwise the tables follow one another; \
`--json` prints one JSON object per line (`time`, seconds since 1970, and the `show queues \
--json` fields). The rates are the daemon's, over its last second. Queues above 1.5x the mean \
of their interface's queues, and workers above 1.5x the mean of all workers, are marked `!` \
(`imbalanced` in JSON).\n\n    sluice ctl monitor --interval 2\n";

#[derive(Debug, PartialEq)]
pub struct Options {
    pub interval: Duration,
    pub count: Option<u64>,
    pub json: bool,
}

impl Options {
    /// The words after `monitor`.
    pub fn parse(words: &[String]) -> Result<Options, String> {
        let mut o = Options {
            interval: Duration::from_secs(1),
            count: None,
            json: false,
        };
        let mut it = words.iter().map(String::as_str);
        while let Some(w) = it.next() {
            match w {
                "--json" => o.json = true,
                "--interval" | "--count" => {
                    let v = it.next().ok_or(format!("{w} needs a value"))?;
                    if w == "--interval" {
                        let s: f64 = v
                            .parse()
                            .map_err(|_| format!("--interval '{v}' is not a number of seconds"))?;
                        if !(0.1..=3600.0).contains(&s) {
                            return Err(format!("--interval {v}: 0.1 to 3600 seconds"));
                        }
                        o.interval = Duration::from_secs_f64(s);
                    } else {
                        let n: u64 = v
                            .parse()
                            .map_err(|_| format!("--count '{v}' is not a count"))?;
                        if n == 0 {
                            return Err("--count 0: at least 1".into());
                        }
                        o.count = Some(n);
                    }
                }
                other => {
                    return Err(format!(
                        "unknown argument '{other}' (monitor [--interval S] [--count N] [--json])"
                    ))
                }
            }
        }
        Ok(o)
    }
}

/// Ask the daemon for `show queues` (as JSON or as text).
fn ask(socket: &Path, json: bool) -> Result<Value, String> {
    let v = request(
        socket,
        if json {
            "show queues --json"
        } else {
            "show queues"
        },
    )?;
    if v["ok"] != Value::Bool(true) {
        return Err(v["error"].as_str().unwrap_or("unknown error").to_string());
    }
    Ok(v)
}

pub fn run(socket: &Path, o: &Options) -> Result<(), String> {
    let tty = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    let mut shown = 0u64;
    let mut next = Instant::now();
    loop {
        let v = ask(socket, o.json)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let written = if o.json {
            let mut line = v.get("json").cloned().unwrap_or(Value::Null);
            if let Value::Object(m) = &mut line {
                m.insert("time".into(), now.into());
            }
            writeln!(out, "{line}")
        } else {
            let text = v.get("text").and_then(Value::as_str).unwrap_or("");
            let clear = if tty { "\x1b[H\x1b[2J" } else { "" };
            let (h, m, s) = (
                (now as u64 / 3600) % 24,
                (now as u64 / 60) % 60,
                now as u64 % 60,
            );
            writeln!(
                out,
                "{clear}sluice monitor {h:02}:{m:02}:{s:02} UTC, every {:.1} s\n{text}",
                o.interval.as_secs_f64()
            )
        };
        // A closed pipe (`| head`) ends the monitor quietly.
        if written.and_then(|_| out.flush()).is_err() {
            return Ok(());
        }
        shown += 1;
        if o.count.is_some_and(|n| shown >= n) {
            return Ok(());
        }
        next += o.interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_and_their_errors() {
        assert_eq!(
            Options::parse(&words("")).unwrap(),
            Options {
                interval: Duration::from_secs(1),
                count: None,
                json: false
            }
        );
        assert_eq!(
            Options::parse(&words("--interval 0.5 --count 3 --json")).unwrap(),
            Options {
                interval: Duration::from_millis(500),
                count: Some(3),
                json: true
            }
        );
        for (bad, why) in [
            ("--interval", "needs a value"),
            ("--interval x", "not a number"),
            ("--interval 0", "0.1 to 3600"),
            ("--count -1", "not a count"),
            ("--count 0", "at least 1"),
            ("--top", "unknown argument '--top'"),
        ] {
            let e = Options::parse(&words(bad)).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
