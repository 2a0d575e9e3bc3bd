//! `sluice ctl`: sends one command line to the daemon's control socket and prints the answer,
//! or with `--batch` every line of its standard input over one connection (route loads,
//! update storms: thousands of commands a second). `CtlArgs` declares its options for clap.
//! `sluice ctl help --markdown` and `help --schema` are answered here, from the client's own
//! copy of the command table, so the references (`docs/cli.md`, `docs/api-schema.json`) need
//! no daemon.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// `sluice ctl`: the words after the options are one command line for the daemon, in its own
/// grammar (control::cli), so they are taken as they come.
#[derive(clap::Args, Debug, Clone)]
pub struct CtlArgs {
    /// The daemon's control socket (default: $SLUICE_SOCKET, else the configuration's default)
    #[arg(short, long, value_name = "SOCKET")]
    socket: Option<String>,
    /// Send every line of standard input, over one connection
    #[arg(long)]
    batch: bool,
    /// Ask for the reply as JSON (as --json among the command's words does)
    #[arg(long, conflicts_with = "batch")]
    json: bool,
    /// The command, e.g. `show interface` (try: sluice ctl help; `help --markdown` prints
    /// every command's grammar, help and example without a daemon)
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        required_unless_present = "batch"
    )]
    words: Vec<String>,
}

/// Send `line` to the daemon at `socket`; returns the decoded reply object.
pub fn request(socket: &Path, line: &str) -> Result<Value, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot connect to {}: {e} (is 'sluice run' going? pick the socket with -s)",
            socket.display()
        )
    })?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    // A daemon that refuses the connection (too many clients) may close before the line is
    // sent: its reason is still there to read.
    let sent = s
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| s.shutdown(Shutdown::Write)); // it answers every line until we close
    let mut buf = Vec::new();
    let received = s.read_to_end(&mut buf);
    if let Ok(v) = serde_json::from_slice(&buf) {
        return Ok(v);
    }
    sent.map_err(|e| format!("send: {e}"))?;
    received.map_err(|e| format!("receive: {e}"))?;
    serde_json::from_slice(&buf).map_err(|e| format!("bad reply from daemon: {e}"))
}

/// Run one command and return its text (or JSON text), or the daemon's error.
pub fn run_command(socket: &Path, line: &str) -> Result<String, String> {
    let v = request(socket, line)?;
    if v["ok"] == Value::Bool(true) {
        if let Some(t) = v.get("text").and_then(Value::as_str) {
            return Ok(t.to_string());
        }
        let j = v.get("json").cloned().unwrap_or(Value::Null);
        return Ok(serde_json::to_string_pretty(&j).unwrap_or_default() + "\n");
    }
    Err(v["error"].as_str().unwrap_or("unknown error").to_string())
}

/// Send every command line of `input` over one connection; print text replies, and errors
/// with their line numbers. Returns (commands, failed).
pub fn batch(socket: &Path, input: impl BufRead) -> Result<(usize, usize), String> {
    let s = UnixStream::connect(socket)
        .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
    let lines: Vec<(usize, String)> = input
        .lines()
        .map_while(Result::ok)
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut w = s.try_clone().map_err(|e| e.to_string())?;
    let text: Vec<String> = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    // A writer thread, so that replies are read while commands are still being sent
    // (both directions filling up would deadlock).
    let writer = std::thread::spawn(move || {
        for t in text {
            if w.write_all(t.as_bytes()).is_err() {
                break;
            }
        }
        let _ = w.shutdown(Shutdown::Write);
    });
    let mut failed = 0;
    let mut replies = BufReader::new(&s).lines();
    for (n, _) in &lines {
        let reply = match replies.next() {
            Some(Ok(r)) => r,
            _ => return Err(format!("the daemon stopped answering at line {n}")),
        };
        let v: Value =
            serde_json::from_str(&reply).map_err(|e| format!("bad reply from daemon: {e}"))?;
        if v["ok"] == Value::Bool(true) {
            if let Some(t) = v.get("text").and_then(Value::as_str) {
                print!("{t}");
            } else if let Some(j) = v.get("json") {
                println!("{j}");
            }
        } else {
            failed += 1;
            eprintln!(
                "line {n}: {}",
                v["error"].as_str().unwrap_or("unknown error")
            );
        }
    }
    let _ = writer.join();
    Ok((lines.len(), failed))
}

/// `sluice ctl watch [KIND ...]`: send the line, then print each event as one JSON line
/// until the daemon closes the connection (or this process is ended).
pub fn watch(socket: &Path, line: &str, out: &mut impl Write) -> Result<(), String> {
    let mut s = UnixStream::connect(socket)
        .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
    // The write side stays open: closing it ends the stream.
    s.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut lines = BufReader::new(&s).lines();
    let first = match lines.next() {
        Some(Ok(l)) => l,
        Some(Err(e)) => return Err(format!("receive: {e}")),
        None => return Err("the daemon closed the connection".into()),
    };
    let v: Value =
        serde_json::from_str(&first).map_err(|e| format!("bad reply from daemon: {e}"))?;
    if v["ok"] != Value::Bool(true) {
        return Err(v["error"].as_str().unwrap_or("unknown error").to_string());
    }
    eprint!("{}", v["text"].as_str().unwrap_or(""));
    for l in lines {
        let l = l.map_err(|e| format!("receive: {e}"))?;
        writeln!(out, "{l}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("write: {e}"))?;
    }
    Ok(())
}

/// Whether `words` ask for the command reference, which the client prints from its own
/// copy of the command table: no daemon is needed to write `docs/cli.md`.
fn wants_markdown(words: &[String]) -> bool {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(words.as_slice(), ["help" | "?", "--markdown"])
}

/// Whether `words` ask for the typed requests' schema (`docs/api-schema.json`), which the
/// client prints from its own copy of the command table, as the reference.
fn wants_schema(words: &[String]) -> bool {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(words.as_slice(), ["help" | "?", "--schema"])
}

/// `apply FILE` and `diff FILE` with a relative FILE: made absolute here, against the
/// client's working directory (the daemon reads FILE, and refuses a relative path: its own
/// working directory is not the client's).
fn absolute_file(words: &mut [String], cwd: &Path) {
    let typed: Vec<&str> = words.iter().map(String::as_str).collect();
    let Ok((command, n)) = super::cli::find(&typed) else {
        return;
    };
    if !matches!(command.words, ["apply"] | ["diff"]) {
        return;
    }
    let file = words[n..]
        .iter_mut()
        .find(|w| *w != "dry-run" && !w.starts_with("--"));
    if let Some(f) = file {
        if Path::new(f.as_str()).is_relative() {
            *f = cwd.join(f.as_str()).display().to_string();
        }
    }
}

pub fn main(args: CtlArgs) -> i32 {
    if wants_markdown(&args.words) {
        print!("{}", super::cli::markdown());
        print!("{}", super::monitor::MARKDOWN);
        print!("{}", super::watch::markdown());
        return 0;
    }
    if wants_schema(&args.words) {
        print!("{}", super::schema::text());
        return 0;
    }
    let socket = args.socket.unwrap_or_else(|| {
        std::env::var("SLUICE_SOCKET").unwrap_or_else(|_| crate::config::DEFAULT_SOCKET.to_string())
    });
    if args.words.first().map(String::as_str) == Some("monitor") {
        let mut rest = args.words[1..].to_vec();
        if args.json {
            rest.push("--json".into());
        }
        return match super::monitor::Options::parse(&rest) {
            Ok(o) => match super::monitor::run(Path::new(&socket), &o) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("sluice ctl monitor: {e}");
                    1
                }
            },
            Err(e) => {
                eprintln!("sluice ctl monitor: {e}");
                2
            }
        };
    }
    if args.words.first().map(String::as_str) == Some(super::watch::WORD) && !args.batch {
        return match watch(
            Path::new(&socket),
            &args.words.join(" "),
            &mut std::io::stdout(),
        ) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("sluice ctl watch: {e}");
                1
            }
        };
    }
    let batch_mode = args.batch;
    let mut words = args.words;
    if args.json && !words.is_empty() {
        words.push("--json".into());
    }
    if batch_mode {
        if !words.is_empty() {
            eprintln!("sluice ctl: --batch reads commands from standard input, not arguments");
            return 2;
        }
        return match batch(Path::new(&socket), std::io::stdin().lock()) {
            Ok((n, 0)) => {
                eprintln!("sluice ctl: {n} commands");
                0
            }
            Ok((n, failed)) => {
                eprintln!("sluice ctl: {n} commands, {failed} failed");
                1
            }
            Err(e) => {
                eprintln!("sluice ctl: {e}");
                1
            }
        };
    }
    if let Ok(cwd) = std::env::current_dir() {
        absolute_file(&mut words, &cwd);
    }
    match run_command(Path::new(&socket), &words.join(" ")) {
        Ok(out) => {
            print!("{out}");
            0
        }
        Err(e) => {
            eprintln!("sluice ctl: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_and_diff_files_are_made_absolute() {
        let cwd = Path::new("/srv/cfg");
        let made = |line: &str| {
            let mut w: Vec<String> = line.split(' ').map(String::from).collect();
            absolute_file(&mut w, cwd);
            w.join(" ")
        };
        assert_eq!(made("apply new.toml"), "apply /srv/cfg/new.toml");
        assert_eq!(
            made("apply dry-run ../a.toml"),
            "apply dry-run /srv/cfg/../a.toml"
        );
        assert_eq!(made("app a.toml dry-run"), "app /srv/cfg/a.toml dry-run");
        assert_eq!(made("diff a.toml --json"), "diff /srv/cfg/a.toml --json");
        assert_eq!(made("diff /etc/a.toml"), "diff /etc/a.toml");
        // Other commands' words are theirs.
        assert_eq!(made("save a.toml"), "save a.toml");
        assert_eq!(made("show acl a.toml"), "show acl a.toml");
        assert_eq!(made("apply"), "apply");
    }

    #[test]
    fn help_markdown_is_answered_by_the_client() {
        let w = |s: &str| -> Vec<String> { s.split(' ').map(String::from).collect() };
        assert!(wants_markdown(&w("help --markdown")));
        assert!(wants_markdown(&w("? --markdown")));
        for other in [
            "help",
            "show interface",
            "help --markdown extra",
            "--markdown",
            "help --schema",
        ] {
            assert!(!wants_markdown(&w(other)), "{other}");
        }
        assert!(wants_schema(&w("help --schema")));
        for other in ["help", "help --markdown", "help --schema x", "--schema"] {
            assert!(!wants_schema(&w(other)), "{other}");
        }
    }
}
