//! `--profile`: where the DUT's CPU spends its time during each measured run. `perf record`
//! samples that CPU (cpu-clock, a software event: these machines have no hardware counters)
//! with DWARF call graphs, so every DUT is profiled alike — sluice's worker, the kernel's NAPI
//! threads and softirqs, testpmd, VPP. The samples are folded and drawn as an interactive SVG
//! flame graph with inferno, and the functions that take the most samples are listed beside
//! sluice's own clocks per node. `sluice lab flamediff` draws the difference of two folded
//! profiles (two DUTs, or two builds).

use inferno::collapse::perf::{Folder, Options as FoldOptions};
use inferno::collapse::Collapse;
use inferno::flamegraph::{self, Options as GraphOptions};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Samples per second: often enough for a 5 s run to show every node, rarely enough that
/// the sampling costs the DUT nothing measurable (under 0.1 % of a CPU).
const FREQUENCY: &str = "999";

/// Bytes of user stack copied per sample for DWARF unwinding (Rust release builds keep no
/// frame pointers).
const STACK_BYTES: &str = "16384";

/// Functions listed per profile.
pub const TOP: usize = 10;

/// Why profiling cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    let ok = Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (!ok).then(|| "perf is not installed (apt-get install linux-perf)".to_string())
}

/// A function's share of a profile's CPU time, where it was the innermost frame. (Each
/// cpu-clock sample weighs its period, so counts are nanoseconds of CPU time.)
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopFunction {
    pub name: String,
    /// Kernel code (the frame was annotated `_[k]`).
    pub kernel: bool,
    pub cpu_ns: u64,
    pub share: f64,
}

/// What one run's profile holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    pub svg: PathBuf,
    pub folded: PathBuf,
    /// CPU time sampled, in nanoseconds.
    pub cpu_ns: u64,
    pub top: Vec<TopFunction>,
    /// CPU time whose innermost frame has no symbol (a stripped binary, JIT code).
    pub unresolved_ns: u64,
}

/// A `perf record` running on the DUT's CPU.
pub struct Recording {
    child: Child,
    data: PathBuf,
    cpu: usize,
}

/// Start sampling `cpu` into `data`.
pub fn start(cpu: usize, data: &Path) -> Result<Recording, String> {
    if let Some(why) = unavailable() {
        return Err(why);
    }
    let child = Command::new("perf")
        .args([
            "record",
            "-q",
            "-C",
            &cpu.to_string(),
            "-e",
            "cpu-clock",
            "-F",
        ])
        .arg(FREQUENCY)
        .args(["--call-graph", &format!("dwarf,{STACK_BYTES}"), "-o"])
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start perf: {e}"))?;
    // perf needs a moment to open its events on the CPU before the run starts.
    std::thread::sleep(Duration::from_millis(300));
    Ok(Recording {
        child,
        data: data.to_path_buf(),
        cpu,
    })
}

impl Recording {
    /// Stop sampling; fold the samples into `stem.folded` and draw `stem.svg`.
    pub fn finish(mut self, stem: &Path, title: &str) -> Result<Profile, String> {
        // perf writes its file when interrupted, as after Ctrl-C.
        super::dut::stop_child(&mut self.child, Duration::from_secs(20));
        // --no-inline: resolving inlined frames runs addr2line over every sampled binary,
        // minutes for a large one (a compiler that shared the CPU); a frame's own function
        // is enough to read the graph.
        let script = Command::new("perf")
            .args(["script", "--no-inline", "-i"])
            .arg(&self.data)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("perf script: {e}"))?;
        let _ = std::fs::remove_file(&self.data);
        if !script.status.success() {
            return Err(format!("perf script failed on CPU {}'s samples", self.cpu));
        }
        let folded = fold(&script.stdout)?;
        let folded_path = stem.with_extension("folded");
        std::fs::write(&folded_path, &folded)
            .map_err(|e| format!("{}: {e}", folded_path.display()))?;
        let svg = stem.with_extension("svg");
        draw(&folded, title, &svg)?;
        let (cpu_ns, top, unresolved_ns) = top_functions(&folded, TOP);
        Ok(Profile {
            svg,
            folded: folded_path,
            cpu_ns,
            top,
            unresolved_ns,
        })
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `perf script` output folded into one line per distinct stack: the thread's name first,
/// kernel frames marked `_[k]`.
pub fn fold(script: &[u8]) -> Result<String, String> {
    let mut opts = FoldOptions::default();
    opts.annotate_kernel = true;
    let mut out = Vec::new();
    Folder::from(opts)
        .collapse(script, &mut out)
        .map_err(|e| format!("folding the samples: {e}"))?;
    String::from_utf8(out).map_err(|e| format!("folding the samples: {e}"))
}

/// Draw folded stacks (one count per line, or two for a difference) as an SVG flame graph.
pub fn draw(folded: &str, title: &str, svg: &Path) -> Result<(), String> {
    let mut opts = GraphOptions::default();
    opts.title = title.to_string();
    opts.count_name = "ns of CPU".into();
    let file = std::fs::File::create(svg).map_err(|e| format!("{}: {e}", svg.display()))?;
    let lines: Vec<&str> = folded.lines().collect();
    if lines.is_empty() {
        return Err("no samples to draw".into());
    }
    flamegraph::from_lines(&mut opts, lines, std::io::BufWriter::new(file))
        .map_err(|e| format!("drawing {}: {e}", svg.display()))
}

/// Total CPU time, the `n` innermost functions with the most of it, and the time whose
/// innermost frame has no symbol.
pub fn top_functions(folded: &str, n: usize) -> (u64, Vec<TopFunction>, u64) {
    let mut by_leaf: HashMap<&str, u64> = HashMap::new();
    let mut total = 0;
    for line in folded.lines() {
        let Some((stack, count)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(count) = count.parse::<u64>() else {
            continue;
        };
        total += count;
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        *by_leaf.entry(leaf).or_default() += count;
    }
    let unresolved = by_leaf
        .iter()
        .filter(|(f, _)| unresolved_frame(f))
        .map(|(_, c)| c)
        .sum();
    let mut v: Vec<(&str, u64)> = by_leaf.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let top = v
        .into_iter()
        .take(n)
        .map(|(f, c)| TopFunction {
            name: f.trim_end_matches("_[k]").to_string(),
            kernel: f.ends_with("_[k]"),
            cpu_ns: c,
            share: c as f64 / total.max(1) as f64,
        })
        .collect();
    (total, top, unresolved)
}

fn unresolved_frame(f: &str) -> bool {
    f.contains("[unknown]") || f.starts_with("0x") || f.chars().all(|c| c.is_ascii_hexdigit())
}

/// `sluice lab flamediff BEFORE AFTER OUT`: the difference of two folded profiles as a
/// flame graph (red: more samples in AFTER, blue: fewer), each normalised to the same total.
pub fn flamediff(before: &Path, after: &Path, out: &Path) -> Result<String, String> {
    let diff = difference(before, after)?;
    let title = format!(
        "{} -> {}",
        before.file_name().unwrap_or_default().to_string_lossy(),
        after.file_name().unwrap_or_default().to_string_lossy()
    );
    draw(&diff, &title, out)?;
    Ok(diff)
}

/// Folded stacks with two counts each (before, after), normalised as `flamediff` draws them.
pub fn difference(before: &Path, after: &Path) -> Result<String, String> {
    let open = |p: &Path| {
        std::fs::File::open(p)
            .map(std::io::BufReader::new)
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let opts = inferno::differential::Options {
        normalize: true,
        ..Default::default()
    };
    let mut out = Vec::new();
    inferno::differential::from_readers(opts, open(before)?, open(after)?, &mut out)
        .map_err(|e| format!("comparing the profiles: {e}"))?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// `stem` for run `dut`'s next profile in `dir`: flame-DUT-N with the first unused N.
pub fn next_stem(dir: &Path, dut: &str) -> PathBuf {
    (1..)
        .map(|n| dir.join(format!("flame-{dut}-{n}")))
        .find(|p| !p.with_extension("svg").exists())
        .expect("an unused name")
}

/// The report's lines for one DUT's profile: its top functions by share of CPU time.
pub fn report_lines(dut: &str, p: &Profile) -> String {
    use std::fmt::Write;
    let mut s = format!(
        "\n{dut}: top functions on the DUT's CPU (median run, {:.2} s sampled; innermost frame; \
         [k] kernel) - {}\n",
        p.cpu_ns as f64 / 1e9,
        p.svg.display()
    );
    for f in &p.top {
        let _ = writeln!(
            s,
            "  {:>5.1}%  {}{}",
            f.share * 100.0,
            f.name,
            if f.kernel { " [k]" } else { "" }
        );
    }
    if p.unresolved_ns * 5 > p.cpu_ns {
        let _ = writeln!(
            s,
            "  {:.0}% of the time has no symbol: build with debug information \
             (sluice's release profile keeps it: debug = 1)",
            p.unresolved_ns as f64 * 100.0 / p.cpu_ns.max(1) as f64
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDED: &str = "sluice_wk_0;Graph::run;TxNode::process;sendto;veth_xmit_[k] 30\n\
                          sluice_wk_0;Graph::run;EthernetInput::process 10\n\
                          napi/d0-12;veth_poll_[k];veth_xdp_rcv_[k] 50\n\
                          napi/d0-12;veth_poll_[k];veth_xmit_[k] 5\n\
                          sluice_wk_0;[unknown] 5\n";

    #[test]
    fn top_functions_by_innermost_frame() {
        let (total, top, unresolved) = top_functions(FOLDED, 3);
        assert_eq!((total, unresolved), (100, 5));
        assert_eq!(top[0].name, "veth_xdp_rcv");
        assert!(top[0].kernel);
        assert_eq!((top[0].cpu_ns, top[0].share), (50, 0.5));
        // veth_xmit leaves from two stacks add up.
        assert_eq!((top[1].name.as_str(), top[1].cpu_ns), ("veth_xmit", 35));
        assert_eq!(top[2].name, "EthernetInput::process");
        assert!(!top[2].kernel);
    }

    #[test]
    fn a_profile_against_itself_differs_nowhere() {
        let dir = std::env::temp_dir().join(format!("sluice-flamediff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.folded");
        std::fs::write(&a, FOLDED).unwrap();
        let diff = flamediff(&a, &a, &dir.join("d.svg")).unwrap();
        assert_eq!(diff.lines().count(), 5);
        for line in diff.lines() {
            let mut n = line.rsplit(' ');
            let (after, before) = (n.next().unwrap(), n.next().unwrap());
            assert_eq!(before, after, "{line}");
        }
        let svg = std::fs::read_to_string(dir.join("d.svg")).unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains("veth_xdp_rcv"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
