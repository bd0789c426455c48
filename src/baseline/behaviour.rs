//! What a change did to the compactor's behaviour, apart from the
//! invariants: per case class, how often each side compacted and answered
//! `cannot_fit`, how much of the body a compaction kept (retention,
//! body(O)/body(H)), how many messages and iterations it kept, how long its
//! summary was, and how its estimate compares with the exact body — with
//! the cases on which the two sides differed most.
//!
//! Measured only on cases both sides answered (no fault on either side),
//! so the two columns describe the same cases. Fractions are summed in
//! parts per million, integers, so that a run's figures are the same
//! whatever order its workers finished in. Nothing here gates: these are
//! for the reviewer of the change.

use std::collections::BTreeMap;

use crate::body::body_bytes;
use crate::contract::{judge_estimate, Pressure};
use crate::generate::Case;
use crate::harness::CaseResult;
use crate::model::{head_len, iterations, Message};
use crate::report::table::Table;
use crate::subject::CompactAnswer;

/// How many cases of each class are kept as "changed most".
pub const CHANGED_MOST: usize = 3;

const PPM: u64 = 1_000_000;

/// Where a case sits against its config's trigger and ceiling: the
/// `pressure` bins of the coverage table, measured the same way (the
/// adr-0098 estimate against the trigger, the exact body against the
/// ceiling).
pub fn class_of(case: &Case) -> Pressure {
    let estimate = judge_estimate(&case.config, &case.messages);
    Pressure::of(&case.config, estimate, case.body_bytes())
}

/// What one side answered on one case, measured; in JSON its `kind` and,
/// for a compaction, what it kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// The history back as it was.
    Unchanged,
    Compacted(Kept),
    CannotFit,
    InvalidInput,
}

/// What a compaction kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    /// body(O)/body(H), in parts per million.
    pub retention_ppm: u64,
    /// Messages of O that are from H (the summary not counted).
    pub messages: u64,
    /// Iterations of O after its head.
    pub iterations: u64,
    /// Content bytes of the messages of O that are not from H.
    pub summary_bytes: u64,
}

impl Outcome {
    pub fn of(case: &Case, answer: &CompactAnswer) -> Outcome {
        match answer {
            CompactAnswer::Messages(o) if o.as_slice() == case.messages.as_slice() => {
                Outcome::Unchanged
            }
            CompactAnswer::Messages(o) => Outcome::Compacted(kept(case, o)),
            CompactAnswer::CannotFit { .. } => Outcome::CannotFit,
            CompactAnswer::InvalidInput { .. } => Outcome::InvalidInput,
        }
    }

    /// The share of the body sent on, in parts per million: all of it when
    /// unchanged, the retention when compacted, nothing for a refusal.
    pub fn sent_ppm(self) -> u64 {
        match self {
            Outcome::Unchanged => PPM,
            Outcome::Compacted(k) => k.retention_ppm,
            Outcome::CannotFit | Outcome::InvalidInput => 0,
        }
    }

    /// A few words for a report: "compacted: 41% of the bytes, 9 messages".
    pub fn describe(self) -> String {
        match self {
            Outcome::Unchanged => "unchanged".into(),
            Outcome::Compacted(k) => format!(
                "compacted to {} message(s), {} iteration(s), {:.1}% of the bytes, summary {} B",
                k.messages,
                k.iterations,
                k.retention_ppm as f64 / 1e4,
                k.summary_bytes
            ),
            Outcome::CannotFit => "cannot_fit".into(),
            Outcome::InvalidInput => "invalid_input".into(),
        }
    }
}

fn kept(case: &Case, o: &[Message]) -> Kept {
    let h = &case.messages;
    let body_h = body_bytes(&case.config, h).max(1);
    let body_o = body_bytes(&case.config, o);
    let (from_h, new): (Vec<&Message>, Vec<&Message>) = o.iter().partition(|m| h.contains(m));
    Kept {
        retention_ppm: body_o.saturating_mul(PPM) / body_h,
        messages: from_h.len() as u64,
        iterations: iterations(&o[head_len(o).min(o.len())..]).len() as u64,
        summary_bytes: new.iter().map(|m| m.content.text().len() as u64).sum(),
    }
}

/// One side's figures over a class's cases, as sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Measures {
    pub answered: u64,
    pub compacted: u64,
    pub cannot_fit: u64,
    /// Sums over the compacted cases.
    pub retention_ppm: u64,
    pub messages_kept: u64,
    pub iterations_kept: u64,
    pub summary_bytes: u64,
    /// Cases with an estimate, and Σ estimate × bytesPerToken / body(H) in ppm.
    pub estimated: u64,
    pub estimate_ppm: u64,
}

impl Measures {
    fn record(&mut self, outcome: Outcome, estimate_ppm: Option<u64>) {
        self.answered += 1;
        match outcome {
            Outcome::Compacted(k) => {
                self.compacted += 1;
                self.retention_ppm += k.retention_ppm;
                self.messages_kept += k.messages;
                self.iterations_kept += k.iterations;
                self.summary_bytes += k.summary_bytes;
            }
            Outcome::CannotFit => self.cannot_fit += 1,
            Outcome::Unchanged | Outcome::InvalidInput => {}
        }
        if let Some(e) = estimate_ppm {
            self.estimated += 1;
            self.estimate_ppm += e;
        }
    }

    fn add(&mut self, o: &Measures) {
        self.answered += o.answered;
        self.compacted += o.compacted;
        self.cannot_fit += o.cannot_fit;
        self.retention_ppm += o.retention_ppm;
        self.messages_kept += o.messages_kept;
        self.iterations_kept += o.iterations_kept;
        self.summary_bytes += o.summary_bytes;
        self.estimated += o.estimated;
        self.estimate_ppm += o.estimate_ppm;
    }

    /// The share of answered cases that were compacted.
    pub fn compaction_rate(&self) -> Option<f64> {
        ratio(self.compacted, self.answered)
    }

    pub fn cannot_fit_rate(&self) -> Option<f64> {
        ratio(self.cannot_fit, self.answered)
    }

    /// Mean body(O)/body(H) over the compacted cases.
    pub fn retention(&self) -> Option<f64> {
        ratio(self.retention_ppm, self.compacted.saturating_mul(PPM))
    }

    pub fn messages_kept(&self) -> Option<f64> {
        ratio(self.messages_kept, self.compacted)
    }

    pub fn iterations_kept(&self) -> Option<f64> {
        ratio(self.iterations_kept, self.compacted)
    }

    /// Mean summary bytes over the compacted cases.
    pub fn summary_bytes(&self) -> Option<f64> {
        ratio(self.summary_bytes, self.compacted)
    }

    /// Mean estimate × bytesPerToken / body(H): 1.0 would count every byte
    /// of the body; below it, the estimate sees less than is sent.
    pub fn estimate_vs_body(&self) -> Option<f64> {
        ratio(self.estimate_ppm, self.estimated.saturating_mul(PPM))
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// One case on which the sides differed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaseChange {
    pub case_index: u64,
    /// |Δ share of the body sent on|, in ppm: the ranking.
    pub score_ppm: u64,
    pub subject: Outcome,
    pub baseline: Outcome,
}

/// One class's figures on both sides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassDelta {
    pub subject: Measures,
    pub baseline: Measures,
    /// The cases that changed most, largest change first (ties: lowest
    /// case first), at most [`CHANGED_MOST`].
    pub changed_most: Vec<CaseChange>,
    /// Cases on which the two sides answered differently at all.
    pub changed: u64,
}

/// The behaviour deltas of a run, by class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Behaviour {
    pub classes: BTreeMap<Pressure, ClassDelta>,
}

impl Behaviour {
    /// Count a case both sides answered.
    pub fn record(&mut self, index: u64, case: &Case, subject: &CaseResult, baseline: &CaseResult) {
        let (Some(s), Some(b)) = (&subject.answer, &baseline.answer) else {
            return;
        };
        let (so, bo) = (Outcome::of(case, s), Outcome::of(case, b));
        let class = self.classes.entry(class_of(case)).or_default();
        let est = |r: &CaseResult| {
            r.estimate.map(|t| {
                t.saturating_mul(case.config.bytes_per_token)
                    .saturating_mul(PPM)
                    / subject.body.max(1)
            })
        };
        class.subject.record(so, est(subject));
        class.baseline.record(bo, est(baseline));
        if so != bo {
            class.changed += 1;
            class.offer(CaseChange {
                case_index: index,
                score_ppm: so.sent_ppm().abs_diff(bo.sent_ppm()),
                subject: so,
                baseline: bo,
            });
        }
    }

    /// Both sides' figures over every class.
    pub fn total(&self) -> (Measures, Measures) {
        let mut s = Measures::default();
        let mut b = Measures::default();
        for c in self.classes.values() {
            s.add(&c.subject);
            b.add(&c.baseline);
        }
        (s, b)
    }

    /// The classes with cases that changed, for the "changed most" lists.
    pub(crate) fn changed(&self) -> Vec<(&Pressure, &ClassDelta)> {
        let changed = |(_, d): &(&Pressure, &ClassDelta)| !d.changed_most.is_empty();
        self.classes.iter().filter(changed).collect()
    }

    /// Join another worker's or shard's figures.
    pub fn merge(&mut self, other: &Behaviour) {
        for (k, o) in &other.classes {
            let c = self.classes.entry(*k).or_default();
            c.subject.add(&o.subject);
            c.baseline.add(&o.baseline);
            c.changed += o.changed;
            for ch in &o.changed_most {
                c.offer(*ch);
            }
        }
    }
}

impl ClassDelta {
    fn offer(&mut self, change: CaseChange) {
        self.changed_most.push(change);
        self.changed_most.sort_by(|a, b| {
            b.score_ppm
                .cmp(&a.score_ppm)
                .then(a.case_index.cmp(&b.case_index))
        });
        self.changed_most.truncate(CHANGED_MOST);
    }
}

// The behaviour table, as every report form prints it.

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn num(x: f64) -> String {
    format!("{x:.1}")
}

fn ratio3(x: f64) -> String {
    format!("{x:.3}")
}

/// "61.0% → 64.0%", baseline first; "–" where a side has no figure.
fn pair(b: Option<f64>, s: Option<f64>, f: fn(f64) -> String) -> String {
    let one = |x: Option<f64>| x.map(f).unwrap_or_else(|| "–".into());
    format!("{} → {}", one(b), one(s))
}

/// The behaviour columns: name and the figure of one side.
type Column = (
    &'static str,
    fn(&Measures) -> Option<f64>,
    fn(f64) -> String,
);

const COLUMNS: [Column; 7] = [
    ("compacted", Measures::compaction_rate, pct),
    ("cannot_fit", Measures::cannot_fit_rate, pct),
    ("retention", Measures::retention, pct),
    ("messages kept", Measures::messages_kept, num),
    ("iterations kept", Measures::iterations_kept, num),
    ("summary bytes", Measures::summary_bytes, num),
    ("estimate/body", Measures::estimate_vs_body, ratio3),
];

impl Behaviour {
    /// The behaviour table, every report form's: a row per case class
    /// and one for all of them (`all` names it): class, cases answered,
    /// one "baseline → subject" cell per column.
    pub(crate) fn table(&self, all: &'static str) -> Table<'static> {
        let mut columns = vec![("class", 26, 0), ("cases", 6, 1)];
        columns.extend(COLUMNS.map(|c| (c.0, 17, 2)));
        let mut table = Table::new(columns, false);
        let mut row = |name: &str, s: &Measures, b: &Measures| {
            let mut cells = vec![name.to_owned(), s.answered.to_string()];
            cells.extend(COLUMNS.iter().map(|(_, f, fmt)| pair(f(b), f(s), *fmt)));
            table.row(cells, "");
        };
        for (c, d) in &self.classes {
            row(c.name(), &d.subject, &d.baseline);
        }
        let (ts, tb) = self.total();
        row(all, &ts, &tb);
        table
    }
}

/// One line of the cases that changed most.
pub(crate) fn change_line(c: &CaseChange) -> String {
    format!(
        "case {}: baseline {}; subject {}",
        c.case_index,
        c.baseline.describe(),
        c.subject.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::model::Message;

    fn case(messages: Vec<Message>) -> Case {
        Case {
            config: Config::default(),
            messages,
        }
    }

    #[test]
    fn outcome_measures_what_a_compaction_kept() {
        let h = vec![
            Message::system("be brief"),
            Message::user("a".repeat(2000)),
            Message::assistant("b".repeat(2000)),
            Message::user("last"),
        ];
        let c = case(h.clone());
        let o = vec![h[0].clone(), Message::system("[summary] xyz"), h[3].clone()];
        let Outcome::Compacted(k) = Outcome::of(&c, &CompactAnswer::Messages(o.clone())) else {
            panic!("a shorter history is a compaction");
        };
        assert_eq!(k.messages, 2);
        assert_eq!(k.summary_bytes, "[summary] xyz".len() as u64);
        let expect = body_bytes(&c.config, &o) * PPM / body_bytes(&c.config, &h);
        assert_eq!(k.retention_ppm, expect);
        assert!(k.retention_ppm < PPM / 5, "{k:?}");
        assert_eq!(
            Outcome::of(&c, &CompactAnswer::Messages(h)),
            Outcome::Unchanged
        );
    }

    #[test]
    fn changed_most_keeps_the_largest_changes_lowest_case_first() {
        let mut d = ClassDelta::default();
        for (i, score) in [(5, 10), (1, 900), (2, 10), (3, 900), (4, 50)] {
            d.offer(CaseChange {
                case_index: i,
                score_ppm: score,
                subject: Outcome::CannotFit,
                baseline: Outcome::Unchanged,
            });
        }
        let kept: Vec<u64> = d.changed_most.iter().map(|c| c.case_index).collect();
        assert_eq!(kept, vec![1, 3, 4]);
    }

    #[test]
    fn means_are_over_the_compacted_cases() {
        let mut m = Measures::default();
        let k = Kept {
            retention_ppm: 400_000,
            messages: 4,
            iterations: 2,
            summary_bytes: 100,
        };
        m.record(Outcome::Compacted(k), Some(900_000));
        m.record(Outcome::Unchanged, Some(700_000));
        m.record(Outcome::CannotFit, None);
        assert_eq!(m.compaction_rate(), Some(1.0 / 3.0));
        assert_eq!(m.cannot_fit_rate(), Some(1.0 / 3.0));
        assert_eq!(m.retention(), Some(0.4));
        assert_eq!(m.messages_kept(), Some(4.0));
        assert_eq!(m.summary_bytes(), Some(100.0));
        assert_eq!(m.estimate_vs_body(), Some(0.8));
        assert_eq!(Measures::default().retention(), None);
    }
}
