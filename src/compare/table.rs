//! The comparison for people: the terminal table (`Display`) and the
//! markdown of a PR comment ([`Comparison::to_markdown`]). Both mark the
//! better value of each row (`*`, or bold in markdown) and give every later
//! estimator's difference to the first: in percent for ratios and speeds,
//! in percentage points for shares.
//!
//! "Better": a mean estimate ÷ real closer to 1; a worst (lowest) ratio
//! that is not an underestimate, else the highest; fewer histories below
//! real, below the floor, or breaking monotonicity; more estimates a second.

use std::fmt::{self, Write as _};
use std::time::Duration;

use super::report::{rates, Comparison, SetResult};
use super::secs;
use super::stats::SetStats;
use crate::calibrate::Encoding;

/// How a row's values rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rank {
    /// Closest to 1 (in ratio terms) wins.
    NearOne,
    /// Not below 1 wins; then the lowest; below 1, the highest.
    Worst,
    Lower,
    Higher,
}

impl Rank {
    /// A key to maximise; NaN (no data) never wins.
    fn key(self, x: f64) -> (f64, f64) {
        if x.is_nan() {
            return (f64::NEG_INFINITY, 0.0);
        }
        match self {
            Rank::NearOne => (-(x.max(1e-12).ln().abs()), 0.0),
            Rank::Worst if x >= 1.0 => (1.0, -x),
            Rank::Worst => (0.0, x),
            Rank::Lower => (-x, 0.0),
            Rank::Higher => (x, 0.0),
        }
    }
}

/// The index of the single best value, if one is strictly best.
fn best(rank: Rank, values: &[f64]) -> Option<usize> {
    let keys: Vec<(f64, f64)> = values.iter().map(|&x| rank.key(x)).collect();
    let top = keys
        .iter()
        .copied()
        .fold((f64::NEG_INFINITY, f64::NEG_INFINITY), |a, b| {
            if b.partial_cmp(&a) == Some(std::cmp::Ordering::Greater) {
                b
            } else {
                a
            }
        });
    let winners: Vec<usize> = (0..keys.len()).filter(|&i| keys[i] == top).collect();
    match winners.as_slice() {
        [one] if top.0 > f64::NEG_INFINITY => Some(*one),
        _ => None,
    }
}

/// How a value is written and its difference to the first.
#[derive(Debug, Clone, Copy)]
enum Form {
    Ratio,
    Share,
    Count,
    Rate,
}

fn value(form: Form, x: f64) -> String {
    if x.is_nan() {
        return "-".to_owned();
    }
    match form {
        Form::Ratio => format!("{x:.2}"),
        Form::Share => format!("{:.1}%", x * 100.0),
        Form::Count => format!("{x:.0}"),
        Form::Rate => grouped(x),
    }
}

fn diff(form: Form, x: f64, first: f64) -> String {
    if x.is_nan() || first.is_nan() {
        return String::new();
    }
    match form {
        Form::Share => format!("{:+.1}pt", (x - first) * 100.0),
        Form::Count => format!("{:+.0}", x - first),
        Form::Ratio | Form::Rate if first == 0.0 => {
            if x == 0.0 {
                "+0%".to_owned()
            } else {
                "new".to_owned()
            }
        }
        Form::Ratio | Form::Rate => format!("{:+.0}%", (x / first - 1.0) * 100.0),
    }
}

/// A number with thousands separators, no decimals (one under 100).
fn grouped(x: f64) -> String {
    if x < 100.0 {
        return format!("{x:.1}");
    }
    crate::model::text::group(x.round() as u64)
}

/// The cells of one row: each value, the winner marked, later ones with
/// their difference to the first. `bold` writes markdown.
fn cells(rank: Rank, form: Form, values: &[f64], bold: bool) -> Vec<String> {
    let win = best(rank, values);
    values
        .iter()
        .enumerate()
        .map(|(k, &x)| {
            let mut v = value(form, x);
            if win == Some(k) {
                v = if bold {
                    format!("**{v}**")
                } else {
                    format!("{v}*")
                };
            }
            if k > 0 {
                let d = diff(form, x, values[0]);
                if !d.is_empty() {
                    let _ = write!(v, " {d}");
                }
            }
            v
        })
        .collect()
}

/// One metric of a set, per estimator.
struct Metric {
    name: &'static str,
    rank: Rank,
    form: Form,
    get: fn(&SetStats, usize) -> f64,
}

const RATIO_METRICS: [Metric; 3] = [
    Metric {
        name: "mean",
        rank: Rank::NearOne,
        form: Form::Ratio,
        get: |s, e| s.ratios[e].mean_ratio,
    },
    Metric {
        name: "worst",
        rank: Rank::Worst,
        form: Form::Ratio,
        get: |s, e| s.ratios[e].worst_ratio,
    },
    Metric {
        name: "below real",
        rank: Rank::Lower,
        form: Form::Share,
        get: |s, e| s.ratios[e].below_share,
    },
];

const CHECK_METRICS: [Metric; 3] = [
    Metric {
        name: "below floor",
        rank: Rank::Lower,
        form: Form::Count,
        get: |s, _| s.below_floor as f64,
    },
    Metric {
        name: "monotone",
        rank: Rank::Lower,
        form: Form::Count,
        get: |s, _| s.monotone_violations as f64,
    },
    Metric {
        name: "msgs below real",
        rank: Rank::Lower,
        form: Form::Share,
        get: |s, e| {
            s.per_message
                .as_ref()
                .filter(|p| p.messages > 0)
                .map_or(f64::NAN, |p| p.below_real_share[e])
        },
    },
];

fn values(set: &SetResult, m: &Metric, e: usize) -> Vec<f64> {
    set.estimators.iter().map(|(s, _)| (m.get)(s, e)).collect()
}

/// A table both outputs print: a header of column groups (a metric over
/// its estimator columns), column names, and rows of cells.
struct Table {
    groups: Vec<String>,
    names: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Terminal text: columns padded to their widest cell.
    fn text(&self, f: &mut impl fmt::Write) -> fmt::Result {
        let head = [self.groups.clone(), self.names.clone()];
        let all: Vec<&Vec<String>> = head.iter().chain(&self.rows).collect();
        let cols = all.iter().map(|r| r.len()).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                all.iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in all {
            if row.iter().all(String::is_empty) {
                continue;
            }
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                let pad = " ".repeat(widths[c] - cell.chars().count());
                if c == 0 {
                    let _ = write!(line, "{cell}{pad}");
                } else {
                    let _ = write!(line, "  {pad}{cell}");
                }
            }
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }

    /// GitHub markdown: a group's name joins each of its column names.
    fn markdown(&self, f: &mut impl fmt::Write) -> fmt::Result {
        let mut group = String::new();
        let head: Vec<String> = self
            .names
            .iter()
            .enumerate()
            .map(|(c, name)| {
                if let Some(g) = self.groups.get(c).filter(|g| !g.is_empty()) {
                    group = g.clone();
                }
                if group.is_empty() || c < 2 {
                    name.clone()
                } else {
                    format!("{group} {name}")
                }
            })
            .collect();
        writeln!(f, "| {} |", head.join(" | "))?;
        writeln!(f, "|---|{}", "---:|".repeat(head.len().saturating_sub(1)))?;
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
            writeln!(f, "| {} |", cells.join(" | "))?;
        }
        Ok(())
    }
}

/// A table under its title; the note follows the title, outside markdown's
/// bold.
struct Section {
    title: String,
    note: String,
    table: Table,
}

impl Section {
    fn new(title: impl Into<String>, table: Table) -> Section {
        Section {
            title: title.into(),
            note: String::new(),
            table,
        }
    }
}

/// Sets as rows, a column group per metric, a column per estimator.
fn metric_table(
    labels: &[&str],
    metrics: &[Metric],
    sets: &[SetResult],
    e: usize,
    bold: bool,
) -> Table {
    let mut groups = vec![String::new(), String::new()];
    let mut names = vec!["set".to_owned(), "n".to_owned()];
    for m in metrics {
        for (k, l) in labels.iter().enumerate() {
            groups.push(if k == 0 {
                m.name.to_owned()
            } else {
                String::new()
            });
            names.push((*l).to_owned());
        }
    }
    let rows = sets
        .iter()
        .map(|set| {
            let mut row = vec![set.name.clone(), set.histories.to_string()];
            for m in metrics {
                row.extend(cells(m.rank, m.form, &values(set, m, e), bold));
            }
            row
        })
        .collect();
    Table {
        groups,
        names,
        rows,
    }
}

/// Estimates a second of each estimator through the protocol, for a set.
fn protocol_rates(set: &SetResult) -> Vec<f64> {
    set.estimators
        .iter()
        .map(|(_, sp)| {
            sp.protocol
                .map_or(f64::NAN, |d| rates(d, set.requests, set.bytes).0)
        })
        .collect()
}

impl Comparison {
    fn header(&self, f: &mut impl fmt::Write) -> fmt::Result {
        let (requests, bytes) = self.totals();
        writeln!(
            f,
            "compare-estimators: {} estimators on {} sets ({} estimate requests, {:.1} MB of history JSON a pass); bytesPerToken {}; {:.1} s",
            self.estimators.len(),
            self.sets.len(),
            requests,
            bytes as f64 / 1e6,
            self.bytes_per_token,
            secs(self.elapsed)
        )?;
        writeln!(
            f,
            "inputs: {} samples per content class (seed {}), {} images, {} real histories ({}), {} generated ToolLoop histories (seed {})",
            self.inputs.samples_per_class,
            self.inputs.seed,
            self.sets.iter().map(|s| s.images.len()).sum::<usize>(),
            self.real_histories(),
            self.corpus.dir.as_deref().unwrap_or("no corpus"),
            self.inputs.toolloop_histories,
            self.inputs.toolloop_seed
        )?;
        for skipped in [&self.corpus.skipped, &self.images_skipped]
            .into_iter()
            .flatten()
        {
            writeln!(f, "{skipped}")?;
        }
        writeln!(
            f,
            "real tokens: tiktoken on each message's content + toolCalls JSON (what adr-0098 counts)"
        )
    }

    /// The speed table: per set, then over all sets; the estimator's own
    /// cost; in process for built-ins.
    fn speed_table(&self, bold: bool) -> Table {
        let labels: Vec<&str> = self.estimators.iter().map(|e| e.label).collect();
        let mut names = vec![
            "set".to_owned(),
            "requests".to_owned(),
            "MB".to_owned(),
            "ctxgate serve".to_owned(),
        ];
        names.extend(labels.iter().map(|l| (*l).to_owned()));
        let mut rows: Vec<Vec<String>> = self
            .sets
            .iter()
            .map(|set| {
                let serve = set
                    .serve
                    .map_or(f64::NAN, |d| rates(d, set.requests, set.bytes).0);
                let mut row = vec![
                    set.name.clone(),
                    set.requests.to_string(),
                    format!("{:.2}", set.bytes as f64 / 1e6),
                    value(Form::Rate, serve),
                ];
                row.extend(cells(Rank::Higher, Form::Rate, &protocol_rates(set), bold));
                row
            })
            .collect();
        let (requests, bytes) = self.totals();
        let per_s = |t: Option<Duration>| t.map_or(f64::NAN, |d| rates(d, requests, bytes).0);
        let mb_s = |t: Option<Duration>| t.map_or(f64::NAN, |d| rates(d, requests, bytes).1);
        let blank = || vec![String::new(), String::new()];
        let n = labels.len();

        // ctxgate serve's rate over all sets, then each estimator's.
        let rate_cells = |rate: &dyn Fn(Option<Duration>) -> f64| {
            let protocol: Vec<f64> = (0..n).map(|k| rate(self.protocol_time(k))).collect();
            let mut cells = cells(Rank::Higher, Form::Rate, &protocol, bold);
            cells.insert(0, value(Form::Rate, rate(self.serve_time())));
            cells
        };

        let mut all = vec!["all sets, estimates/s".to_owned(), requests.to_string()];
        all.push(format!("{:.2}", bytes as f64 / 1e6));
        all.extend(rate_cells(&per_s));
        rows.push(all);

        let mut mb = vec!["all sets, MB/s".to_owned()];
        mb.extend(blank());
        mb.extend(rate_cells(&mb_s));
        rows.push(mb);

        let mut own = vec!["own cost (protocol − serve), s".to_owned()];
        own.extend(blank());
        own.push(String::new());
        own.extend((0..n).map(|k| {
            self.own_time(k)
                .map_or("-".to_owned(), |d| format!("{:.3}", secs(d)))
        }));
        rows.push(own);

        let in_process: Vec<f64> = (0..n).map(|k| per_s(self.in_process_time(k))).collect();
        if in_process.iter().any(|x| !x.is_nan()) {
            let mut row = vec!["in process, estimates/s".to_owned()];
            row.extend(blank());
            row.push(String::new());
            row.extend(in_process.iter().map(|&x| value(Form::Rate, x)));
            rows.push(row);
        }
        Table {
            groups: Vec::new(),
            names,
            rows,
        }
    }

    fn speed_title(&self) -> String {
        let mut t = format!(
            "speed through the protocol, estimates/s (each batch's best of {} rounds; ctxgate serve answers the same requests: the protocol's own cost)",
            self.rounds
        );
        if self.serve.is_none() {
            t.push_str(" — no serve command: built-ins timed in process only, the protocol's cost not measured");
        }
        t
    }

    /// `--markdown`: the same figures as the table, for a PR comment.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = self.write_markdown(&mut s);
        s
    }

    fn write_markdown(&self, f: &mut String) -> fmt::Result {
        writeln!(f, "### Estimator comparison (ctxgate compare-estimators)\n")?;
        let mut head = String::new();
        self.header(&mut head)?;
        for line in head.lines() {
            writeln!(f, "{line}  ")?;
        }
        writeln!(f)?;
        writeln!(f, "| | estimator | given as |")?;
        writeln!(f, "|---|---|---|")?;
        for e in &self.estimators {
            writeln!(
                f,
                "| {} | {} | {} `{}` |",
                e.label,
                e.title().replace('|', "\\|"),
                e.kind(),
                e.spec.shown().replace('|', "\\|")
            )?;
        }
        for s in self.sections(true) {
            writeln!(f, "\n**{}**{}\n", s.title, s.note)?;
            s.table.markdown(f)?;
        }
        Ok(())
    }

    /// The tables after the header, in order, each with its title; `bold`
    /// writes markdown.
    fn sections(&self, bold: bool) -> Vec<Section> {
        let labels: Vec<&str> = self.estimators.iter().map(|e| e.label).collect();
        let better = if bold { "bold:" } else { "*" };
        let mut out: Vec<Section> = Encoding::ALL
            .into_iter()
            .enumerate()
            .map(|(e, encoding)| Section {
                title: format!("estimate ÷ real tokens per history, {}", encoding.name()),
                note: format!(
                    " ({better} the better; after a later estimator's value: its difference to {})",
                    labels[0]
                ),
                table: metric_table(&labels, &RATIO_METRICS, &self.sets, e, bold),
            })
            .collect();
        out.push(Section::new(
            CHECKS_TITLE,
            metric_table(&labels, &CHECK_METRICS, &self.sets, 0, bold),
        ));
        if let Some(t) = self.images_table() {
            out.push(Section::new(IMAGES_TITLE, t));
        }
        out.push(Section::new(self.speed_title(), self.speed_table(bold)));
        out
    }

    /// The `images` set, per image: its base64 bytes, SPEC §3's tokens
    /// under each provider's rule, and each estimator's estimate of the
    /// history that holds only it; a last row of totals. `None` without
    /// the set.
    fn images_table(&self) -> Option<Table> {
        let set = self.sets.iter().find(|s| !s.images.is_empty())?;
        let labels: Vec<&str> = self.estimators.iter().map(|e| e.label).collect();
        let mut names: Vec<String> = ["image", "base64 B", "anthropic", "openai"]
            .map(str::to_owned)
            .to_vec();
        names.extend(labels.iter().map(|l| (*l).to_owned()));
        let mut groups = vec![String::new(); 2];
        groups.push("SPEC §3 tokens".to_owned());
        groups.push(String::new());
        groups.push("estimate, tokens".to_owned());
        groups.extend(std::iter::repeat_n(String::new(), labels.len() - 1));
        let answers: Vec<&Vec<u64>> = set.estimators.iter().map(|(st, _)| &st.estimates).collect();
        let mut rows: Vec<Vec<String>> = set
            .images
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let kind = x.media_type.trim_start_matches("image/");
                let (w, h) = x.pixels.unwrap_or_default();
                let mut row = vec![
                    format!("{kind} {w}×{h}"),
                    x.payload_bytes.to_string(),
                    x.anthropic_tokens.to_string(),
                    x.openai_tokens.to_string(),
                ];
                row.extend(
                    answers
                        .iter()
                        .map(|a| a.get(i).map_or("-".to_owned(), u64::to_string)),
                );
                row
            })
            .collect();
        let sum =
            |g: fn(&crate::calibrate::ImageFigures) -> u64| set.images.iter().map(g).sum::<u64>();
        let mut total = vec![
            format!("total ({})", set.images.len()),
            sum(|x| x.payload_bytes).to_string(),
            sum(|x| x.anthropic_tokens).to_string(),
            sum(|x| x.openai_tokens).to_string(),
        ];
        total.extend(set.estimators.iter().map(|(st, _)| st.tokens.to_string()));
        rows.push(total);
        Some(Table {
            groups,
            names,
            rows,
        })
    }
}

const IMAGES_TITLE: &str = "images: tokens per image (SPEC §3, by pixels, per provider) and each estimator's estimate of a history holding only that image; base64 B is what the image adds to the body";

const CHECKS_TITLE: &str = "histories below the toolCalls floor (estimate-covers-tool-calls, in total or at a message), estimate-monotone violations, perMessage figures below real (cl100k_base)";

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.header(f)?;
        writeln!(f)?;
        for e in &self.estimators {
            writeln!(f, "  {}  {}", e.label, e.describe())?;
        }
        for s in self.sections(false) {
            writeln!(f, "\n{}{}", s.title, s.note)?;
            s.table.text(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_better_value_is_the_single_best() {
        assert_eq!(best(Rank::NearOne, &[1.17, 0.93]), Some(1));
        assert_eq!(best(Rank::NearOne, &[0.5, 2.0]), None);
        assert_eq!(best(Rank::Worst, &[0.59, 0.0]), Some(0));
        assert_eq!(best(Rank::Worst, &[1.5, 1.1]), Some(1));
        assert_eq!(best(Rank::Worst, &[0.99, 1.8]), Some(1));
        assert_eq!(best(Rank::Lower, &[0.016, 0.016]), None);
        assert_eq!(best(Rank::Lower, &[f64::NAN, 0.2]), Some(1));
        assert_eq!(best(Rank::Higher, &[f64::NAN, f64::NAN]), None);
    }

    #[test]
    fn cells_mark_the_winner_and_give_differences() {
        let text = |rank, form, values: [f64; 2]| cells(rank, form, &values, false);
        assert_eq!(
            text(Rank::Lower, Form::Share, [0.98, 1.0]),
            ["98.0%*", "100.0% +2.0pt"]
        );
        assert_eq!(
            text(Rank::Higher, Form::Rate, [1000.0, 2500.0]),
            ["1,000", "2,500* +150%"]
        );
        assert_eq!(
            text(Rank::Lower, Form::Count, [0.0, 250.0]),
            ["0*", "250 +250"]
        );
        assert_eq!(
            cells(Rank::NearOne, Form::Ratio, &[0.85, 0.0], true),
            ["**0.85**", "0.00 -100%"]
        );
    }
}
