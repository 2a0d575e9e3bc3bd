//! A grouped bar chart as SVG: one group per loadtest, one bar per DUT (the median), with a
//! whisker from the minimum to the maximum run. Plain SVG, no scripts or external files.

use std::fmt::Write as _;

/// One group of bars: (DUT, median, min, max) in the chart's unit.
pub struct Group {
    pub label: String,
    pub bars: Vec<(String, f64, f64, f64)>,
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A "nice" axis top: 1, 2 or 5 times a power of ten, at or above `max`.
fn axis_top(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&v| v >= max)
        .unwrap_or(10.0 * p)
}

pub fn svg(title: &str, groups: &[Group]) -> String {
    let mut duts: Vec<String> = Vec::new();
    for g in groups {
        for b in &g.bars {
            if !duts.contains(&b.0) {
                duts.push(b.0.clone());
            }
        }
    }
    let bar_w = 28.0;
    let group_w = bar_w * duts.len().max(1) as f64 + 40.0;
    let (left, top, plot_h) = (70.0, 50.0, 300.0);
    let width = left + group_w * groups.len().max(1) as f64 + 160.0;
    let height = top + plot_h + 70.0;
    let max = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.3.max(b.1)))
        .fold(0.0, f64::max);
    let ymax = axis_top(max);
    let y = |v: f64| top + plot_h - v / ymax * plot_h;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="25" font-size="15" font-weight="bold">{}</text>"#,
        escape(title)
    );
    for k in 0..=5 {
        let v = ymax * k as f64 / 5.0;
        let yy = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            width - 150.0,
            left - 6.0,
            yy + 4.0,
            trim(v)
        );
    }
    for (gi, g) in groups.iter().enumerate() {
        let gx = left + 20.0 + gi as f64 * group_w;
        for (di, dut) in duts.iter().enumerate() {
            let Some(b) = g.bars.iter().find(|b| &b.0 == dut) else {
                continue;
            };
            let x = gx + di as f64 * bar_w;
            let color = COLORS[di % COLORS.len()];
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{} {}: {:.3} (min {:.3}, max {:.3})</title></rect>"#,
                y(b.1),
                bar_w - 4.0,
                (top + plot_h - y(b.1)).max(0.0),
                escape(dut),
                escape(&g.label),
                b.1,
                b.2,
                b.3
            );
            let cx = x + (bar_w - 4.0) / 2.0;
            let _ = writeln!(
                s,
                r#"<path d="M{cx:.1} {:.1}V{:.1}M{:.1} {:.1}H{:.1}M{:.1} {:.1}H{:.1}" stroke="black" fill="none"/>"#,
                y(b.2),
                y(b.3),
                cx - 5.0,
                y(b.2),
                cx + 5.0,
                cx - 5.0,
                y(b.3),
                cx + 5.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            gx + bar_w * duts.len() as f64 / 2.0,
            top + plot_h + 20.0,
            escape(&g.label)
        );
    }
    let lx = width - 140.0;
    for (di, dut) in duts.iter().enumerate() {
        let ly = top + 10.0 + di as f64 * 20.0;
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            ly - 10.0,
            COLORS[di % COLORS.len()],
            lx + 18.0,
            ly,
            escape(dut)
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        top + plot_h,
        width - 150.0,
        top + plot_h
    );
    s.push_str("</svg>\n");
    s
}

fn trim(v: f64) -> String {
    let t = format!("{v:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_whiskers_and_legend() {
        let g = vec![
            Group {
                label: "64b".into(),
                bars: vec![
                    ("sluice".into(), 1.2, 1.1, 1.3),
                    ("linux-bridge".into(), 0.8, 0.7, 0.9),
                ],
            },
            Group {
                label: "var2-64b".into(),
                bars: vec![("sluice".into(), 1.0, 1.0, 1.1)],
            },
        ];
        let s = svg("Mpps <test>", &g);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<title>").count(), 3);
        assert_eq!(s.matches("<path").count(), 3);
        assert!(s.contains("Mpps &lt;test&gt;"));
        assert!(s.contains(">linux-bridge</text>"));
        assert_eq!(axis_top(1.3), 2.0);
        assert_eq!(axis_top(0.42), 0.5);
    }
}
