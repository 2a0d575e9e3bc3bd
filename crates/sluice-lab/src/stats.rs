//! Statistics for benchmark runs, in the manner of ministat: per-sample summary (N, min, max,
//! median, mean, standard deviation) and Student's t comparison of two samples with a pooled
//! standard deviation.

/// Confidence levels ministat offers (`-c`).
pub const CONFIDENCE_LEVELS: [f64; 6] = [80.0, 90.0, 95.0, 98.0, 99.0, 99.5];

/// Summary of one sample.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for one value.
    pub stddev: f64,
}

impl Summary {
    /// Summarise `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let var = if n > 1 {
            v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Summary {
            n,
            min: v[0],
            max: v[n - 1],
            median,
            mean,
            stddev: var.sqrt(),
        })
    }
}

/// The outcome of comparing sample B against sample A.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub confidence: f64,
    /// Whether the difference of the means exceeds its confidence interval.
    pub significant: bool,
    /// mean(B) - mean(A).
    pub difference: f64,
    /// Half-width of the confidence interval of the difference.
    pub interval: f64,
    /// The difference and interval as percent of mean(A).
    pub difference_pct: f64,
    pub interval_pct: f64,
    pub pooled_stddev: f64,
    pub t: f64,
}

/// Compare two samples at `confidence` percent (one of `CONFIDENCE_LEVELS`). Needs at least
/// two values in each sample.
pub fn compare(a: &Summary, b: &Summary, confidence: f64) -> Result<Comparison, String> {
    if a.n < 2 || b.n < 2 {
        return Err("each sample needs at least two values to compare".into());
    }
    if !CONFIDENCE_LEVELS.contains(&confidence) {
        return Err(format!(
            "confidence must be one of 80, 90, 95, 98, 99, 99.5, not {confidence}"
        ));
    }
    let df = a.n + b.n - 2;
    let pooled = (((a.n - 1) as f64 * a.stddev * a.stddev
        + (b.n - 1) as f64 * b.stddev * b.stddev)
        / df as f64)
        .sqrt();
    let t = t_table_value(confidence, df);
    let interval = t * pooled * (1.0 / a.n as f64 + 1.0 / b.n as f64).sqrt();
    let difference = b.mean - a.mean;
    Ok(Comparison {
        confidence,
        significant: difference.abs() > interval,
        difference,
        interval,
        difference_pct: difference * 100.0 / a.mean,
        interval_pct: interval * 100.0 / a.mean,
        pooled_stddev: pooled,
        t,
    })
}

/// Two-sided critical value of Student's t for `df` degrees of freedom, rounded to three
/// decimals as printed t tables (and ministat's) give it; above 100 degrees of freedom the
/// normal limit is used, as those tables do.
///
/// ministat labels its last column 99.5 % but holds the two-sided 99.8 % values there (for one
/// degree of freedom it has 318.313, the 0.999 quantile). We follow it so that results compare
/// with ministat's; the 99.5 level is therefore slightly stricter than its name.
pub fn t_table_value(confidence: f64, df: usize) -> f64 {
    let two_sided = if confidence == 99.5 { 99.8 } else { confidence };
    let p = 1.0 - (1.0 - two_sided / 100.0) / 2.0;
    let q = if df > 100 {
        normal_quantile(p)
    } else {
        t_quantile(p, df as f64)
    };
    (q * 1000.0).round() / 1000.0
}

/// Quantile of Student's t distribution by bisection on its CDF.
fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1000.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// CDF of Student's t for t >= 0: 1 - I_x(df/2, 1/2) / 2 with x = df / (df + t²).
fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    1.0 - 0.5 * incomplete_beta(x, df / 2.0, 0.5)
}

/// Quantile of the standard normal distribution by bisection on erf.
fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 10.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if 0.5 * (1.0 + erf(mid / std::f64::consts::SQRT_2)) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// erf by its Taylor series (converges well for the arguments used here, |x| < 7).
fn erf(x: f64) -> f64 {
    let mut sum = 0.0f64;
    let mut term = x;
    let mut n = 0.0;
    while term.abs() > 1e-17 * sum.abs().max(1e-300) && n < 500.0 {
        sum += term / (2.0 * n + 1.0);
        n += 1.0;
        term *= -x * x / n;
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

/// ln Γ(x) by the Lanczos approximation (g = 7, nine coefficients).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta function I_x(a, b), by its continued fraction (modified
/// Lentz), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) where that converges faster.
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(1.0 - x, b, a);
    }
    let tiny = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut f = d;
    for m in 1..500 {
        let m = m as f64;
        // Even step.
        let num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 + num * d;
        d = if d.abs() < tiny { 1.0 / tiny } else { 1.0 / d };
        c = 1.0 + num / c;
        if c.abs() < tiny {
            c = tiny;
        }
        f *= c * d;
        // Odd step.
        let num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 + num * d;
        d = if d.abs() < tiny { 1.0 / tiny } else { 1.0 / d };
        c = 1.0 + num / c;
        if c.abs() < tiny {
            c = tiny;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * f / a
}

/// C's `%g` with six significant digits, as ministat prints its comparison.
pub fn fmt_g(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return format!("{x}");
    }
    let exp = x.abs().log10().floor() as i32;
    // Round to six significant digits first: that can carry into the next power of ten.
    let rounded: f64 = format!("{x:.5e}").parse().unwrap_or(x);
    let exp = if rounded.abs() >= 10f64.powi(exp + 1) {
        exp + 1
    } else {
        exp
    };
    if !(-4..6).contains(&exp) {
        let s = format!("{rounded:.5e}");
        let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mant = trim_zeros(mant);
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    trim_zeros(&format!("{rounded:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// ministat's verdict lines for a comparison.
pub fn verdict_text(c: &Comparison) -> String {
    if !c.significant {
        return format!("No difference proven at {:.1}% confidence\n", c.confidence);
    }
    format!(
        "Difference at {:.1}% confidence\n\t{} +/- {}\n\t{}% +/- {}%\n\t(Student's t, pooled s = {})\n",
        c.confidence,
        fmt_g(c.difference),
        fmt_g(c.interval),
        fmt_g(c.difference_pct),
        fmt_g(c.interval_pct),
        fmt_g(c.pooled_stddev)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_small_sample() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(
            (s.n, s.min, s.max, s.median, s.mean),
            (5, 1.0, 5.0, 3.0, 3.0)
        );
        assert!((s.stddev - 1.581_138_8).abs() < 1e-7);
        assert_eq!(Summary::of(&[2.0, 4.0]).unwrap().median, 3.0);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn t_values_match_printed_tables() {
        // Two-sided critical values found in any t table.
        assert_eq!(t_table_value(95.0, 1), 12.706);
        assert_eq!(t_table_value(95.0, 8), 2.306);
        assert_eq!(t_table_value(99.0, 4), 4.604);
        assert_eq!(t_table_value(80.0, 10), 1.372);
        assert_eq!(t_table_value(98.0, 30), 2.457);
        // ministat's "99.5" column: the two-sided 99.8 % value.
        assert_eq!(t_table_value(99.5, 1), 318.309);
        assert_eq!(t_table_value(95.0, 1000), 1.960);
    }

    #[test]
    fn g_format_like_c() {
        assert_eq!(fmt_g(2.1), "2.1");
        assert_eq!(fmt_g(1.471_826_3), "1.47183");
        assert_eq!(fmt_g(70.0), "70");
        assert_eq!(fmt_g(49.060_99), "49.061");
        assert_eq!(fmt_g(1_234_567.0), "1.23457e+06");
        assert_eq!(fmt_g(0.000_012_5), "1.25e-05");
        assert_eq!(fmt_g(-0.5), "-0.5");
        assert_eq!(fmt_g(999_999.7), "1e+06");
    }

    #[test]
    fn comparison_needs_two_values_and_a_known_level() {
        let a = Summary::of(&[1.0]).unwrap();
        let b = Summary::of(&[1.0, 2.0]).unwrap();
        assert!(compare(&a, &b, 95.0).is_err());
        assert!(compare(&b, &b, 97.0).is_err());
    }
}
