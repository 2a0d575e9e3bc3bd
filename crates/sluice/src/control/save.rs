//! `save [FILE]`: the running configuration as a config file that `sluice run -c` starts
//! the same dataplane from.
//!
//! Each section of the file is written by its `Section` value (`config::section::SECTIONS`,
//! in the order of `docs/config.md`), from the state the dataplane holds now, not from the
//! file it started with: interfaces' admin state and addresses, sub-interfaces and BVIs,
//! cross-connects, receive-queue placement and handoff, bridge domains with their static
//! MACs and ARP entries, routing tables, the static routes of the config and the CLI, ACLs
//! and the interfaces they check. What the CLI cannot change ([dataplane], [control],
//! [metrics], [fib], [sessions], [punt], and each interface's driver keys and MTU) is written
//! as the start-up file had it. The routes of `[fib] route-file` stay in their file: the key
//! is kept, the routes are not written out one by one. This file holds the command, the
//! `State` the sections read, and the writing of the file.
//!
//! The daemon writes FILE itself (an absolute path; through a temporary file in the same
//! directory, mode 0600, renamed over FILE), so `save` works the same from `sluice ctl`,
//! `--batch` or any client of the socket, and the file lands where the daemon, which will
//! read it on its next start, sees files. Without FILE the text is the reply.

use super::cli::{Arg, Args, Command, Effect, Output};
use super::exec::Control;
use crate::config::emit::{self, Entry};
use crate::config::reference::SectionDoc;
use serde_json::json;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use toml::Value;

pub const COMMANDS: &[Command] = &[Command {
    words: &["save"],
    effect: Effect::Changes,
    syntax: "[<FILE>]",
    help: "write the running configuration as a config file for `sluice run -c` (FILE: an absolute path the daemon writes, mode 0600, replaced whole; none: print it)",
    example: "save /etc/sluice/sluice.toml",
    args: &[Arg::Optional("FILE")],
    run: save,
}];

fn save(c: &mut Control, a: &Args) -> Result<Output, String> {
    let text = running_config(c)?;
    match a.get("FILE") {
        None => Ok(Output::Shown(text.clone(), json!({ "config": text }))),
        Some(file) => {
            let path = Path::new(file);
            write_file(path, &text)?;
            Ok(Output::Shown(
                format!("saved to {file}\n"),
                json!({ "file": file, "bytes": text.len() }),
            ))
        }
    }
}

/// The running configuration as config text, checked by the config parser.
pub fn running_config(c: &Control) -> Result<String, String> {
    let state = State::gather(c);
    let text = emit::document(&header(), |sec| sec.save(&state), &notes(c))?;
    crate::config::Config::parse(&text, "the saved configuration").map_err(|e| {
        format!("the running configuration does not make a valid file (not saved): {e}")
    })?;
    Ok(text)
}

/// The comment lines at the top: what wrote the file, and when.
fn header() -> Vec<String> {
    vec![
        format!(
            "The running configuration of sluice {}, saved by `sluice ctl save` on {}.",
            env!("CARGO_PKG_VERSION"),
            utc_now()
        ),
        "`sluice run -c` on this file starts the same interfaces, bridge domains, tables, \
         routes and ACLs."
            .into(),
    ]
}

/// What the sections are written from, read once.
pub struct State<'a> {
    pub c: &'a Control,
    /// Interface names by index; `None` for a deleted one.
    pub names: Vec<Option<String>>,
}

impl State<'_> {
    pub fn gather(c: &Control) -> State<'_> {
        let names =
            c.dp.interfaces
                .list
                .iter()
                .map(|i| (!i.is_deleted()).then(|| i.name.clone()))
                .collect();
        State { c, names }
    }

    pub fn name(&self, index: u32) -> Result<&str, String> {
        self.names
            .get(index as usize)
            .and_then(Option::as_deref)
            .ok_or_else(|| format!("interface index {index} is deleted"))
    }

    /// The table of the start-up file called `name`, if it had one.
    pub fn started(&self, name: &str) -> Option<&Value> {
        self.c.started.get(name)
    }

    /// A section the CLI cannot change, as the start-up file had it; none when it had none.
    pub fn as_started(&self, sec: &SectionDoc) -> Vec<Entry> {
        match self.started(sec.name) {
            Some(Value::Table(t)) => vec![Entry::from_table(sec, t)],
            _ => Vec::new(),
        }
    }

    /// The addresses of interface `index`, as text.
    pub fn addresses(&self, index: u32) -> Vec<String> {
        let r = self.c.dp.router.lock().unwrap_or_else(|p| p.into_inner());
        r.addresses(index)
    }

    /// Sets `address` in `e` to interface `index`'s addresses, when it has any.
    pub fn set_addresses(&self, e: &mut Entry, index: u32) {
        let addrs = self.addresses(index);
        if !addrs.is_empty() {
            e.set("address", addrs);
        }
    }

    /// The live sub-interfaces (`bvi` false) or BVIs, in index order.
    pub fn soft_interfaces(&self, bvi: bool) -> Vec<crate::subif::SubIf> {
        let table = self.c.dp.subifs.load();
        let mut v: Vec<_> = table
            .all()
            .filter(|x| x.bvi == bvi && !x.interface.is_deleted())
            .cloned()
            .collect();
        v.sort_by_key(|x| x.interface.index);
        v
    }
}

pub fn s(text: &str) -> Value {
    Value::String(text.to_string())
}

pub fn int(n: impl Into<i64>) -> Value {
    Value::Integer(n.into())
}

/// A count or index as a TOML integer (they are far below 2^63).
pub fn uint(n: usize) -> Value {
    Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// An interface's admin state as a config file writes it.
pub fn state_word(up: bool) -> Value {
    s(if up { "up" } else { "down" })
}

/// What the running state has that a config file cannot hold, said at the end of the file.
fn notes(c: &Control) -> Vec<String> {
    let mut notes = Vec::new();
    let neighbors: Vec<String> =
        c.dp.router
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .neighbors()
            .into_iter()
            .filter(|n| n.static_entry)
            .map(|n| format!("  set ip neighbor {} {} {}", n.interface, n.ip, n.mac))
            .collect();
    if !neighbors.is_empty() {
        notes.push(
            "Not saved: static neighbours (a config file has no section for them); after \
             a restart, enter them again:"
                .into(),
        );
        notes.extend(neighbors);
    }
    notes
}

/// Write `text` to `path` whole or not at all: a temporary file in the same directory
/// (mode 0600), synced, then renamed over `path`. An error leaves no temporary file behind.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if !path.is_absolute() {
        return Err(format!(
            "'{}' is not an absolute path: the daemon writes the file, and its working \
             directory is not yours",
            path.display()
        ));
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(format!("'{}' names no file", path.display()));
    };
    if path.is_dir() {
        return Err(format!("{} is a directory", path.display()));
    }
    let tmp = dir.join(format!(
        ".{}.save-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Now in UTC, `2024-05-01 12:34:56 UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

/// Seconds since 1970 as a UTC date and time (the proleptic Gregorian calendar).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn write_file_is_whole_or_nothing() {
        let dir = std::env::temp_dir().join(format!("sluice-save-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.toml");
        write_file(&f, "x = 1\n").unwrap();
        write_file(&f, "x = 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "x = 2\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let e = write_file(Path::new("rel.toml"), "").unwrap_err();
        assert!(e.contains("not an absolute path"), "{e}");
        let e = write_file(&dir.join("no/such/dir.toml"), "").unwrap_err();
        assert!(e.starts_with("cannot write "), "{e}");
        let e = write_file(&dir, "").unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.toml")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
