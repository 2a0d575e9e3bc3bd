//! `sluice ctl`: sends one command line to the daemon's control socket and prints the answer.

use serde_json::Value;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

const USAGE: &str = "usage: sluice ctl [-s SOCKET] COMMAND... (try: sluice ctl help)";

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
    s.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut buf = String::new();
    s.read_to_string(&mut buf)
        .map_err(|e| format!("receive: {e}"))?;
    serde_json::from_str(&buf).map_err(|e| format!("bad reply from daemon: {e}"))
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

pub fn main(args: &[String]) -> i32 {
    let mut socket = std::env::var("SLUICE_SOCKET")
        .unwrap_or_else(|_| crate::config::DEFAULT_SOCKET.to_string());
    let mut words: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-s" | "--socket" => match it.next() {
                Some(p) => socket = p.clone(),
                None => {
                    eprintln!("sluice ctl: -s needs a socket path\n{USAGE}");
                    return 2;
                }
            },
            "-h" | "--help" if words.is_empty() => {
                println!("{USAGE}");
                return 0;
            }
            w => words.push(w),
        }
    }
    if words.is_empty() {
        eprintln!("{USAGE}");
        return 2;
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
