//! `sluice bench compare A B ...`: ministat's report for benchmark results — a distribution
//! plot, a summary line per data set, and Student's t verdict of each set against the first.

use crate::stats::{compare, verdict_text, Summary, CONFIDENCE_LEVELS};
use std::fmt::Write as _;
use std::path::Path;

/// Plot symbols per data set, in order; where sets share a column the plot shows '*'.
const SYMBOLS: [char; 7] = ['x', '+', '*', '%', '#', '@', 'O'];
/// Width of the plot between its borders.
const PLOT_WIDTH: usize = 74;

/// `sluice bench compare`: ministat's report of two or more data sets.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Confidence level of the t test, in percent: 80, 90, 95, 98, 99 or 99.5
    #[arg(short = 'c', value_name = "LEVEL", default_value = "95", value_parser = confidence_arg)]
    confidence: f64,
    /// Width of the plot, 20 to 400
    #[arg(short = 'w', value_name = "WIDTH", default_value_t = PLOT_WIDTH, value_parser = width_arg)]
    width: usize,
    /// Each a bench JSON file (its rx_pps values) or text with one number per line
    #[arg(value_name = "FILE", required = true)]
    files: Vec<String>,
}

fn confidence_arg(v: &str) -> Result<f64, String> {
    v.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|c| CONFIDENCE_LEVELS.contains(c))
        .ok_or_else(|| "-c takes 80, 90, 95, 98, 99 or 99.5".into())
}

fn width_arg(v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|w| (20..=400).contains(w))
        .ok_or_else(|| "-w takes a width from 20 to 400".into())
}

/// Read the values of one data set: a JSON document (every `rx_pps` found in it, in order)
/// or text with a number at the start of each line ('#' starts a comment).
pub fn read_values(path: &Path) -> Result<Vec<f64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
        let mut out = Vec::new();
        collect_key(&v, "rx_pps", &mut out);
        if out.is_empty() {
            return Err(format!("{}: no rx_pps values in this JSON", path.display()));
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(word) = line.split_whitespace().next() else {
            continue;
        };
        let x: f64 = word
            .parse()
            .map_err(|_| format!("{}:{}: '{word}' is not a number", path.display(), n + 1))?;
        out.push(x);
    }
    if out.is_empty() {
        return Err(format!("{}: no numbers", path.display()));
    }
    Ok(out)
}

/// Values of `key` anywhere in `v`, depth first. A run's trials are skipped when the run has
/// a value of its own, so each run counts once.
fn collect_key(v: &serde_json::Value, key: &str, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(x) = m.get(key).and_then(|x| x.as_f64()) {
                out.push(x);
                return;
            }
            for (_, child) in m {
                collect_key(child, key, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|c| collect_key(c, key, out)),
        _ => {}
    }
}

/// The distribution plot: one column per value bucket, symbols stacked upwards; then one line
/// per set with its mean ± one standard deviation (`|___A___|`, `M` at the median).
pub fn plot(sets: &[Vec<f64>], width: usize) -> String {
    let all = sets.iter().flatten().copied();
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let span = if hi > lo { hi - lo } else { 1.0 };
    let col = |x: f64| {
        (((x - lo) / span) * (width - 1) as f64)
            .round()
            .clamp(0.0, (width - 1) as f64) as usize
    };
    // counts[c][k]: points of set k in column c. A row shows a set's symbol where only that
    // set reaches it, and '*' where several do.
    let mut counts = vec![vec![0usize; sets.len()]; width];
    for (k, set) in sets.iter().enumerate() {
        for &x in set {
            counts[col(x)][k] += 1;
        }
    }
    let rows = counts.iter().flatten().copied().max().unwrap_or(0);
    let border = format!("+{}+\n", "-".repeat(width));
    let mut s = border.clone();
    for r in (0..rows).rev() {
        let line: String = counts
            .iter()
            .map(|c| {
                let mut reaching = c.iter().enumerate().filter(|(_, &n)| n > r);
                match (reaching.next(), reaching.next()) {
                    (Some((k, _)), None) => SYMBOLS[k % SYMBOLS.len()],
                    (Some(_), Some(_)) => '*',
                    _ => ' ',
                }
            })
            .collect();
        let _ = writeln!(s, "|{line}|");
    }
    for set in sets {
        let Some(sum) = Summary::of(set) else {
            continue;
        };
        let mut line = vec![' '; width];
        let (a, b) = (col(sum.mean - sum.stddev), col(sum.mean + sum.stddev));
        for c in line.iter_mut().take(b + 1).skip(a) {
            *c = '_';
        }
        line[a] = '|';
        line[b] = '|';
        line[col(sum.median)] = 'M';
        line[col(sum.mean)] = 'A';
        let _ = writeln!(s, "|{}|", line.into_iter().collect::<String>());
    }
    s.push_str(&border);
    s
}

/// The whole report for named data sets.
pub fn report(
    names: &[String],
    sets: &[Vec<f64>],
    confidence: f64,
    width: usize,
) -> Result<String, String> {
    let mut s = String::new();
    for (k, n) in names.iter().enumerate() {
        let _ = writeln!(s, "{} {n}", SYMBOLS[k % SYMBOLS.len()]);
    }
    s.push_str(&plot(sets, width));
    let _ = writeln!(
        s,
        "    N           Min           Max        Median           Avg        Stddev"
    );
    let summaries: Vec<Summary> = sets
        .iter()
        .map(|v| Summary::of(v).ok_or("empty data set".to_string()))
        .collect::<Result<_, _>>()?;
    for (k, m) in summaries.iter().enumerate() {
        let _ = writeln!(
            s,
            "{} {:3} {:>13} {:>13} {:>13} {:>13} {:>13}",
            SYMBOLS[k % SYMBOLS.len()],
            m.n,
            g8(m.min),
            g8(m.max),
            g8(m.median),
            g8(m.mean),
            g8(m.stddev)
        );
        if k > 0 {
            let c = compare(&summaries[0], m, confidence)?;
            s.push_str(&verdict_text(&c));
        }
    }
    Ok(s)
}

/// `%.8g`: eight significant digits, trailing zeros dropped.
fn g8(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-4..8).contains(&exp) {
        return format!("{x:.7e}");
    }
    let decimals = (7 - exp).max(0) as usize;
    let t = format!("{x:.decimals$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// `sluice bench compare ...`
pub fn main(args: CompareArgs) -> i32 {
    let CompareArgs {
        confidence,
        width,
        files,
    } = args;
    let mut sets = Vec::new();
    for f in &files {
        match read_values(Path::new(f)) {
            Ok(v) => sets.push(v),
            Err(e) => {
                eprintln!("sluice bench compare: {e}");
                return 1;
            }
        }
    }
    match report(&files, &sets, confidence, width) {
        Ok(r) => {
            print!("{r}");
            0
        }
        Err(e) => {
            eprintln!("sluice bench compare: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_has_summary_and_verdict() {
        let a = vec![1.0, 2.0, 3.0, 4.0, 5.0];
        let b = vec![3.0, 4.0, 5.0, 6.0, 7.5];
        let r = report(&["a".into(), "b".into()], &[a, b], 80.0, 74).unwrap();
        assert!(
            r.contains(
                "x   5             1             5             3             3     1.5811388"
            ),
            "{r}"
        );
        assert!(
            r.contains("Difference at 80.0% confidence\n\t2.1 +/- 1.47183"),
            "{r}"
        );
        assert!(r.lines().all(|l| l.chars().count() <= 76), "{r}");
    }

    #[test]
    fn plot_marks_each_set_and_overlap() {
        let p = plot(&[vec![1.0, 2.0], vec![2.0, 3.0]], 20);
        let first_row = p.lines().nth(1).unwrap();
        assert!(
            first_row.starts_with("|x") && first_row.ends_with("+|"),
            "{p}"
        );
        assert_eq!(first_row.matches('*').count(), 1, "{p}");
        assert!(p.contains('*'), "{p}");
        assert!(p.contains('A'));
    }

    #[test]
    fn reads_plain_and_json() {
        let dir = std::env::temp_dir().join(format!("sluice-cmp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("p.txt");
        std::fs::write(&plain, "# rates\n1.5\n2.5 extra\n\n3\n").unwrap();
        assert_eq!(read_values(&plain).unwrap(), vec![1.5, 2.5, 3.0]);
        let json = dir.join("r.json");
        std::fs::write(
            &json,
            r#"{"runs":[{"rx_pps":10,"trials":[{"rx_pps":1}]},{"rx_pps":12}]}"#,
        )
        .unwrap();
        assert_eq!(read_values(&json).unwrap(), vec![10.0, 12.0]);
        std::fs::write(&plain, "1\nabc\n").unwrap();
        assert!(read_values(&plain).unwrap_err().contains(":2: 'abc'"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
