//! The control socket: a Unix stream socket (mode 0600) that takes one command line per
//! connection and answers with one JSON object: `{"ok":true,"text":...}`,
//! `{"ok":true,"json":...}` or `{"ok":false,"error":...}`.

use super::exec::{Control, Reply};
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Longest command line accepted.
const MAX_LINE: u64 = 4096;

/// A bound control socket; the file is removed when this is dropped.
pub struct ControlSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl ControlSocket {
    /// Bind `path`, replacing a stale socket file but never a live one.
    pub fn bind(path: &Path) -> Result<ControlSocket, String> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
        }
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(format!(
                    "another sluice is serving {} (stop it, or set [control] socket)",
                    path.display()
                ));
            }
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot remove stale {}: {e}", path.display()))?;
        }
        let listener = UnixListener::bind(path)
            .map_err(|e| format!("cannot bind control socket {}: {e}", path.display()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("cannot chmod {}: {e}", path.display()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("control socket: {e}"))?;
        Ok(ControlSocket {
            listener,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Answer commands until `stop` is set.
    pub fn serve(&self, control: &mut Control, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if let Err(e) = answer(control, stream) {
                        eprintln!("sluice: control connection: {e}");
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    eprintln!("sluice: control socket accept: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Answer every command line of one connection, one JSON reply line each, until the client
/// closes its side (`sluice ctl` sends one line; `sluice ctl --batch` many).
fn answer(control: &mut Control, stream: UnixStream) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(&stream);
    loop {
        let mut line = String::new();
        let n = reader.by_ref().take(MAX_LINE).read_line(&mut line)?;
        if n == 0 {
            return Ok(());
        }
        let reply = if n as u64 >= MAX_LINE && !line.ends_with('\n') {
            json!({"ok": false, "error": format!("command longer than {MAX_LINE} bytes")})
        } else {
            match control.handle_line(line.trim()) {
                Ok(Reply::Text(t)) => json!({"ok": true, "text": t}),
                Ok(Reply::Json(v)) => json!({"ok": true, "json": v}),
                Err(e) => json!({"ok": false, "error": e}),
            }
        };
        let mut out = serde_json::to_vec(&reply)?;
        out.push(b'\n');
        (&stream).write_all(&out)?;
        if n as u64 >= MAX_LINE && !line.ends_with('\n') {
            // The rest of an over-long line is not a command.
            return Ok(());
        }
    }
}
