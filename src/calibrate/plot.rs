//! The picture of a [`Report`]: per encoding, per sample set, per
//! estimator, the distribution of estimate ÷ real as a box plot on a log
//! scale (whiskers: lowest and highest; box: quartiles; bar: median; dot:
//! mean), with the underestimate side shaded. Plain SVG written by hand:
//! a few dozen shapes need no plotting library.
//!
//! [`draw`] takes a [`Picture`], so that `compare-estimators` draws its
//! comparison with the same code ([`svg`] is the calibration's picture).

use std::fmt::Write as _;
use std::path::Path;

use super::{CalibrateError, Encoding, EstimatorStats, Report};

/// What a picture shows: panels (one per encoding) of groups (one per
/// sample set) of boxes (one per estimator, in legend order).
#[derive(Debug, Clone)]
pub struct Picture<'a> {
    pub title: String,
    /// The line under the legend: what the figures were taken on.
    pub note: String,
    /// The legend, one name per estimator.
    pub names: Vec<String>,
    pub panels: Vec<Panel<'a>>,
}

/// One panel: a title and its groups.
#[derive(Debug, Clone)]
pub struct Panel<'a> {
    pub title: String,
    pub groups: Vec<Group<'a>>,
}

/// One group: a label (the set and its size) and a box per estimator.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub label: String,
    pub boxes: Vec<&'a EstimatorStats>,
}

impl<'a> Picture<'a> {
    /// The calibration report's picture.
    pub fn of(report: &'a Report) -> Picture<'a> {
        let panels = Encoding::ALL
            .into_iter()
            .filter(|e| report.rows.iter().any(|r| r.encoding == *e))
            .map(|encoding| Panel {
                title: encoding.name().to_owned(),
                groups: report
                    .rows
                    .iter()
                    .filter(|r| r.encoding == encoding)
                    .map(|r| Group {
                        label: format!("{} ({})", r.set, r.samples),
                        boxes: r.estimators.iter().collect(),
                    })
                    .collect(),
            })
            .collect();
        Picture {
            title: "Estimate ÷ real tokens, per content class (log scale)".to_owned(),
            note: format!(
                "(content-only, adr-0098 at bytesPerToken {}; right: share below real; {} samples per class, {} real histories)",
                report.bytes_per_token, report.samples_per_class, report.histories
            ),
            names: report
                .estimator_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            panels,
        }
    }
}

const WIDTH: f64 = 980.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 870.0;
/// The x axis covers 2^LOG_MIN ..= 2^LOG_MAX.
const LOG_MIN: f64 = -2.0;
const LOG_MAX: f64 = 3.0;
const LANE: f64 = 13.0;
const GROUP_GAP: f64 = 12.0;
const COLORS: [&str; 4] = ["#8c8c8c", "#e07b00", "#1f66b5", "#2e8b57"];

fn x_of(ratio: f64) -> f64 {
    let l = if ratio > 0.0 { ratio.log2() } else { LOG_MIN };
    LEFT + (l.clamp(LOG_MIN, LOG_MAX) - LOG_MIN) / (LOG_MAX - LOG_MIN) * (RIGHT - LEFT)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The SVG text of the report's picture.
pub fn svg(report: &Report) -> String {
    draw(&Picture::of(report))
}

/// The SVG text of a picture.
pub fn draw(picture: &Picture<'_>) -> String {
    let names = &picture.names;
    let group_h = names.len() as f64 * LANE + GROUP_GAP;
    let panel_h = |p: &Panel<'_>| 30.0 + p.groups.len() as f64 * group_h + 34.0;
    let top = 92.0;
    let height = top + picture.panels.iter().map(panel_h).sum::<f64>() + 20.0;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        esc(&picture.title)
    );
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="40" fill="#444">whiskers: lowest–highest; box: quartiles; bar: median; dot: mean. Left of 1 (shaded): the estimate is below the real count.</text>"##
    );
    // Legend.
    let mut lx = LEFT;
    for (i, n) in names.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="52" width="14" height="10" fill="{}"/><text x="{}" y="61">{}</text>"#,
            COLORS[i % COLORS.len()],
            lx + 18.0,
            esc(n)
        );
        lx += 30.0 + 7.0 * n.len() as f64;
    }
    let _ = lx;
    let _ = writeln!(
        s,
        r##"<text x="{LEFT}" y="80" fill="#444">{}</text>"##,
        esc(&picture.note)
    );

    let mut y0 = top;
    for panel in &picture.panels {
        let plot_top = y0 + 30.0;
        let plot_bottom = plot_top + panel.groups.len() as f64 * group_h;
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="{}" font-size="13" font-weight="bold">{}</text>"#,
            y0 + 18.0,
            esc(&panel.title)
        );
        // Underestimate side, grid and axis.
        let x1 = x_of(1.0);
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{plot_top}" width="{}" height="{}" fill="#fdecec"/>"##,
            x1 - LEFT,
            plot_bottom - plot_top
        );
        let mut l = LOG_MIN;
        while l <= LOG_MAX {
            let x = x_of(2f64.powf(l));
            let (stroke, w) = if l == 0.0 {
                ("#c00000", 1.5)
            } else {
                ("#dddddd", 1.0)
            };
            let _ = writeln!(
                s,
                r#"<line x1="{x}" y1="{plot_top}" x2="{x}" y2="{plot_bottom}" stroke="{stroke}" stroke-width="{w}"/>"#
            );
            let label = if l < 0.0 {
                format!("1/{}", 2f64.powf(-l))
            } else {
                format!("{}", 2f64.powf(l))
            };
            let _ = writeln!(
                s,
                r##"<text x="{x}" y="{}" text-anchor="middle" fill="#444">{label}</text>"##,
                plot_bottom + 14.0
            );
            l += 1.0;
        }
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#444">estimate ÷ real (below 1/4, and 0, drawn at the left edge)</text>"##,
            (LEFT + RIGHT) / 2.0,
            plot_bottom + 28.0
        );
        for (g, group) in panel.groups.iter().enumerate() {
            let gy = plot_top + g as f64 * group_h + GROUP_GAP / 2.0;
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                LEFT - 8.0,
                gy + names.len() as f64 * LANE / 2.0 + 4.0,
                esc(&group.label)
            );
            for (i, e) in group.boxes.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let cy = gy + i as f64 * LANE + LANE / 2.0;
                let (lo, hi) = (x_of(e.worst_ratio), x_of(e.max_ratio));
                let (q1, q3) = (x_of(e.quantile(0.25)), x_of(e.quantile(0.75)));
                let med = x_of(e.quantile(0.5));
                let mean = x_of(e.mean_ratio);
                let _ = writeln!(
                    s,
                    r#"<line x1="{lo:.1}" y1="{cy}" x2="{hi:.1}" y2="{cy}" stroke="{color}" stroke-width="1.2"/><line x1="{lo:.1}" y1="{}" x2="{lo:.1}" y2="{}" stroke="{color}"/><line x1="{hi:.1}" y1="{}" x2="{hi:.1}" y2="{}" stroke="{color}"/>"#,
                    cy - 3.0,
                    cy + 3.0,
                    cy - 3.0,
                    cy + 3.0
                );
                let _ = writeln!(
                    s,
                    r#"<rect x="{q1:.1}" y="{}" width="{:.1}" height="{}" fill="{color}" fill-opacity="0.35" stroke="{color}"/><line x1="{med:.1}" y1="{}" x2="{med:.1}" y2="{}" stroke="{color}" stroke-width="2.5"/><circle cx="{mean:.1}" cy="{cy}" r="2.2" fill="white" stroke="{color}"/>"#,
                    cy - 4.5,
                    (q3 - q1).max(1.0),
                    9.0,
                    cy - 5.5,
                    cy + 5.5
                );
                let below = e.below_share * 100.0;
                let weight = if below > 0.0 { "bold" } else { "normal" };
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{}" fill="{color}" font-weight="{weight}">{}</text>"#,
                    RIGHT + 10.0,
                    cy + 4.0,
                    if below > 0.0 {
                        format!("{below:.1}% below")
                    } else {
                        "never below".to_owned()
                    }
                );
            }
        }
        y0 += panel_h(panel);
    }
    s.push_str("</svg>\n");
    s
}

/// Write the picture to `path`.
pub fn write_svg(report: &Report, path: &Path) -> Result<(), CalibrateError> {
    std::fs::write(path, svg(report)).map_err(|source| CalibrateError::Io {
        path: path.to_owned(),
        source,
    })
}
