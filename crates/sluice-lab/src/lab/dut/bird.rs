//! BIRD 2 as the lab router's control plane (`sluice lab run --control bird`): BIRD runs in
//! the DUT namespace, its static protocols announce the synthetic table's routes via the
//! tester's ports, and its kernel protocols export them into Linux's main table, through the
//! taps sluice mirrors d0 and d1 with (`[[lcp]]`). sluice learns them from the kernel over
//! netlink. The lab measures how long each step takes, for an announcement and a withdrawal.

use crate::lab::netns::DUT;
use crate::lab::table::TableFiles;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running BIRD.
pub struct Bird {
    child: Child,
    socket: PathBuf,
    pid_file: PathBuf,
}

/// The configuration: the device protocol (BIRD sees the taps and their addresses), a
/// kernel protocol per family that exports everything into the main table and imports
/// nothing, and a static protocol per family holding the table's routes.
fn config(dir: &Path) -> String {
    format!(
        "log \"{log}\" {{ warning, error, fatal }};\n\
         router id 192.0.2.1;\n\
         protocol device {{ scan time 10; }}\n\
         protocol kernel kernel4 {{ ipv4 {{ import none; export all; }}; scan time 3600; }}\n\
         protocol kernel kernel6 {{ ipv6 {{ import none; export all; }}; scan time 3600; }}\n\
         include \"{r4}\";\n\
         include \"{r6}\";\n",
        log = dir.join("bird.log").display(),
        r4 = dir.join("routes4.conf").display(),
        r6 = dir.join("routes6.conf").display(),
    )
}

/// BIRD's static protocols, static4 and static6, from the route file's `PREFIX NEXTHOP`
/// lines (BIRD takes `include` between blocks, not inside one).
fn static_routes(route_file: &Path) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(route_file)
        .map_err(|e| format!("{}: {e}", route_file.display()))?;
    let mut v4 = String::from("protocol static static4 {\n  ipv4;\n");
    let mut v6 = String::from("protocol static static6 {\n  ipv6;\n");
    for line in text.lines() {
        let Some((prefix, hop)) = line.split_once(' ') else {
            continue;
        };
        let out = if prefix.contains(':') {
            &mut v6
        } else {
            &mut v4
        };
        let _ = writeln!(out, "  route {prefix} via {hop};");
    }
    v4.push_str("}\n");
    v6.push_str("}\n");
    Ok((v4, v6))
}

impl Bird {
    /// Write the configuration for `table` into `dir` and start BIRD in the DUT namespace.
    pub fn start(dir: &Path, table: &TableFiles) -> Result<Bird, String> {
        if Command::new("bird").arg("--version").output().is_err() {
            return Err("bird is not installed (apt-get install bird2)".into());
        }
        let (v4, v6) = static_routes(&table.route_file)?;
        for (name, text) in [
            ("routes4.conf", v4),
            ("routes6.conf", v6),
            ("bird.conf", config(dir)),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let socket = dir.join("bird.ctl");
        let pid_file = dir.join("bird.pid");
        let child = Command::new("ip")
            .args(["netns", "exec", DUT, "bird", "-f", "-c"])
            .arg(dir.join("bird.conf"))
            .arg("-s")
            .arg(&socket)
            .arg("-P")
            .arg(&pid_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start bird: {e}"))?;
        let mut bird = Bird {
            child,
            socket,
            pid_file,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while bird.birdc("show status").is_err() {
            if bird.child.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(dir.join("bird.log")).unwrap_or_default();
                bird.stop();
                return Err(format!("bird did not come up: {}", log.trim()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(bird)
    }

    /// One birdc command's output.
    pub fn birdc(&self, line: &str) -> Result<String, String> {
        let mut args = vec!["-s".to_string(), self.socket.display().to_string()];
        args.extend(line.split_whitespace().map(String::from));
        let o = Command::new("birdc")
            .args(&args)
            .output()
            .map_err(|e| format!("birdc: {e}"))?;
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        if !o.status.success() || out.contains("Unable to connect") {
            return Err(format!("birdc {line}: {}", out.trim()));
        }
        Ok(out)
    }

    /// Routes protocol `name` has exported (its channel's "Routes: I imported, E exported").
    pub fn exported(&self, name: &str) -> Option<u64> {
        let out = self.birdc(&format!("show protocols all {name}")).ok()?;
        exported_count(&out)
    }

    pub fn stop(&mut self) {
        if let Some(pid) = std::fs::read_to_string(&self.pid_file)
            .ok()
            .filter(|p| !p.trim().is_empty())
        {
            let _ = Command::new("kill").args(["-TERM", pid.trim()]).status();
        }
        super::stop_child(&mut self.child, Duration::from_secs(5));
    }
}

impl Drop for Bird {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The exported count of `show protocols all` output.
fn exported_count(out: &str) -> Option<u64> {
    out.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("Routes:")?;
        rest.split(',')
            .find_map(|part| part.trim().strip_suffix(" exported"))?
            .trim()
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_exported_count_and_writes_static_routes() {
        let out = "kernel4    Kernel     master4    up     10:00:00.000\n  Channel ipv4\n    \
                   State:          UP\n    Routes:         0 imported, 1000000 exported, 0 preferred\n";
        assert_eq!(exported_count(out), Some(1_000_000));
        assert_eq!(exported_count("nothing"), None);
        let dir = std::env::temp_dir().join(format!("sluice-bird-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("routes.txt");
        std::fs::write(
            &f,
            "1.0.0.0/24 198.51.100.2\n2001:db8:99::/48 2001:db8:1::2\n",
        )
        .unwrap();
        let (v4, v6) = static_routes(&f).unwrap();
        assert_eq!(
            v4,
            "protocol static static4 {\n  ipv4;\n  route 1.0.0.0/24 via 198.51.100.2;\n}\n"
        );
        assert!(v6.contains("  route 2001:db8:99::/48 via 2001:db8:1::2;\n"));
        assert!(config(&dir).contains("export all"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
