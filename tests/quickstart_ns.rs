//! docs/quickstart.md, run as a reader would run it, so that the quick start cannot rot.
//!
//! Every line of every ```` ```sh ```` block runs in order through `sh -c`, with this build's
//! `sluice` first on the PATH and a scratch directory as the working directory; a
//! ```` ```toml file=NAME ```` block is written there as NAME first. A line ending in `&` is
//! started in the background (the test then waits for the control socket to answer), `kill
//! %N` stops the Nth background line and requires a clean exit, and a line starting with `!`
//! must fail (sh's own negation). Each line must succeed. The page's namespaces are removed
//! at the end whether the test passed or not, and a line that could touch anything outside
//! them (a command other than `ip netns ...`, `ip -n NS ...`, `sluice ctl ...`, `sluice run
//! ... --check` and `kill %N`) fails the test before anything runs.

mod common;
use common::routed::ensure_ping;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The socket the page's daemon serves: the configuration's default.
const SOCKET: &str = "/run/sluice/cli.sock";

/// What the page asks the test to do, line by line.
#[derive(Debug, PartialEq)]
enum Step {
    /// Write a file (a ```toml file=NAME block).
    File { name: String, text: String },
    /// Run a line: (line number in the page, the line).
    Run(usize, String),
}

/// The steps of `page`, in order.
fn steps(page: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut block: Option<(String, Vec<(usize, &str)>)> = None;
    for (i, line) in page.lines().enumerate() {
        let n = i + 1;
        match (&mut block, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => block = Some((info.trim().to_string(), Vec::new())),
            (Some((info, lines)), Some(_)) => {
                if info == "sh" {
                    out.extend(
                        lines
                            .iter()
                            .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
                            .map(|(n, l)| Step::Run(*n, l.trim().to_string())),
                    );
                } else if let Some(name) = info.strip_prefix("toml file=") {
                    let text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
                    out.push(Step::File {
                        name: name.trim().to_string(),
                        text,
                    });
                }
                block = None;
            }
            (Some((_, lines)), None) => lines.push((n, line)),
            (None, None) => {}
        }
    }
    assert!(block.is_none(), "an unclosed code block");
    out
}

/// Why `line` may not run here, if it could reach beyond the page's namespaces.
fn outside(line: &str) -> Option<&'static str> {
    let l = line.strip_prefix("! ").unwrap_or(line);
    let l = l.strip_suffix(" &").unwrap_or(l);
    let words: Vec<&str> = l.split_whitespace().collect();
    let allowed = match words.as_slice() {
        ["ip", "netns", "add" | "del", _] => true,
        ["ip", "netns", "exec", _, ..] => true,
        ["ip", "-n", _, ..] => true,
        ["sluice", "ctl", ..] => true,
        ["sluice", "run", rest @ ..] => rest.contains(&"--check"),
        ["kill", job] => job.starts_with('%'),
        _ => false,
    };
    if [";", "|", "`", "$(", ">", "<", "&&"]
        .iter()
        .any(|s| l.contains(s))
    {
        return Some("it chains commands or redirects");
    }
    (!allowed).then_some("it is not an `ip netns`, `ip -n`, `sluice ctl` or checking line")
}

/// The namespaces the page adds, removed when dropped; background lines stopped first.
struct Cleanup {
    namespaces: Vec<String>,
    jobs: Vec<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for j in &mut self.jobs {
            if let Ok(None) = j.try_wait() {
                let _ = j.kill();
                let _ = j.wait();
            }
        }
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// `sh -c LINE` in `dir` with this build's sluice first on the PATH.
fn shell(dir: &Path, line: &str) -> Command {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.arg("-c").arg(line).current_dir(dir).env("PATH", path);
    c.env_remove("SLUICE_SOCKET");
    c
}

fn daemon_answers() -> bool {
    Command::new(BIN)
        .args(["ctl", "-s", SOCKET, "show", "version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_quick_start_runs_as_written() {
    if !needs_root() {
        return;
    }
    let page_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/quickstart.md");
    let page = std::fs::read_to_string(&page_path).unwrap();
    let steps = steps(&page);
    let runs: Vec<(usize, &str)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Run(n, l) => Some((*n, l.as_str())),
            Step::File { .. } => None,
        })
        .collect();
    // The page must still be a quick start: a daemon, commands to it, traffic through it.
    let count = |p: &str| runs.iter().filter(|(_, l)| l.contains(p)).count();
    assert!(count("sluice run -c") >= 2, "no daemon started: {runs:?}");
    assert!(count("sluice ctl ") >= 5, "{runs:?}");
    assert!(count(" ping ") >= 4, "{runs:?}");
    for (n, line) in &runs {
        if let Some(why) = outside(line) {
            panic!("docs/quickstart.md:{n}: `{line}` may not run in this test: {why}");
        }
    }
    ensure_ping();
    // The page's daemon takes the default socket: another daemon there is in the way.
    if !prerequisite(
        !daemon_answers(),
        "no sluice daemon serving /run/sluice/cli.sock (the quick start's daemon uses it)",
    ) {
        return;
    }
    let namespaces: Vec<String> = runs
        .iter()
        .filter_map(|(_, l)| l.strip_prefix("ip netns add "))
        .map(|ns| ns.trim().to_string())
        .collect();
    assert!(namespaces.len() >= 2, "{namespaces:?}");
    let mut cleanup = Cleanup {
        namespaces,
        jobs: Vec::new(),
    };
    // Leftovers of an interrupted run.
    for ns in &cleanup.namespaces {
        let _ = Command::new("ip").args(["netns", "del", ns]).output();
    }
    let dir: PathBuf = tmpdir("quickstart");
    for step in &steps {
        let (n, line) = match step {
            Step::File { name, text } => {
                std::fs::write(dir.join(name), text).unwrap();
                continue;
            }
            Step::Run(n, line) => (*n, line.as_str()),
        };
        let at = format!("docs/quickstart.md:{n}: `{line}`");
        if let Some(job) = line.strip_suffix('&') {
            let child = shell(&dir, &format!("exec {job}"))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            cleanup.jobs.push(child);
            let child = cleanup.jobs.last_mut().unwrap();
            let deadline = Instant::now() + Duration::from_secs(15);
            while !daemon_answers() {
                if let Ok(Some(status)) = child.try_wait() {
                    let mut err = String::new();
                    use std::io::Read;
                    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                    panic!("{at} exited with {status}: {err}");
                }
                assert!(Instant::now() < deadline, "{at}: no answer on {SOCKET}");
                std::thread::sleep(Duration::from_millis(50));
            }
        } else if let Some(job) = line.strip_prefix("kill %") {
            let i: usize = job.trim().parse().unwrap();
            let child = cleanup
                .jobs
                .get_mut(i - 1)
                .unwrap_or_else(|| panic!("{at}: no background line {i}"));
            sh("kill", &["-TERM", &child.id().to_string()]);
            let deadline = Instant::now() + Duration::from_secs(10);
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                assert!(Instant::now() < deadline, "{at}: still running");
                std::thread::sleep(Duration::from_millis(50));
            };
            assert!(status.success(), "{at}: the daemon exited with {status}");
            assert!(!Path::new(SOCKET).exists(), "{at}: {SOCKET} left behind");
        } else {
            let o = shell(&dir, line).output().unwrap();
            assert!(
                o.status.success(),
                "{at} failed ({}):\n{}{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    drop(cleanup);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_page_is_read_as_documented() {
    let page = "intro\n```sh not-run\ncargo build\n```\n```toml file=r.toml\n[dataplane]\n\
                workers = 1\n```\n```sh\nip netns add x\n\n# a comment\nsluice ctl show \
                interface\n```\n```text\nsluice ctl frob\n```\n";
    assert_eq!(
        steps(page),
        [
            Step::File {
                name: "r.toml".into(),
                text: "[dataplane]\nworkers = 1\n".into()
            },
            Step::Run(10, "ip netns add x".into()),
            Step::Run(13, "sluice ctl show interface".into()),
        ]
    );
    for ok in [
        "ip netns add qs-a",
        "ip -n qs-a addr add 192.0.2.2/24 dev t0",
        "ip netns exec qs-router sluice run -c router.toml &",
        "! ip netns exec qs-a ping -c 1 203.0.113.1",
        "sluice run -c router.toml --check",
        "sluice ctl show ip fib",
        "kill %1",
    ] {
        assert_eq!(outside(ok), None, "{ok}");
    }
    for bad in [
        "sluice run -c router.toml &",
        "ip link add x type veth",
        "ping 192.0.2.1",
        "sluice ctl show int; rm -rf /tmp/x",
        "ip -n qs-a addr show > /tmp/out",
        "kill 1",
    ] {
        assert!(outside(bad).is_some(), "{bad}");
    }
}
