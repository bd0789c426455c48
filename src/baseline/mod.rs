//! `ctxgate check --baseline`, as a library: the gate on a change. Two
//! subjects — the compactor before the change (the baseline) and after it
//! (the subject) — get exactly the same cases, and each invariant's
//! verdicts are compared case by case:
//!
//! - a **regression**: the subject fails an invariant on a case on which
//!   the baseline does not (it held, did not apply, or is not claimed by
//!   the baseline: a failure the baseline does not share is the change's);
//! - a **known** failure: both fail it on the same case — reported, and not
//!   failing the gate unless [`FailOn::AnyFailure`];
//! - a **fix**: the baseline failed it, the subject holds.
//!
//! Subject faults are regressions when the baseline answered the same case,
//! known when it faulted too. A baseline fault is reported and never
//! counted against the subject: a case on which the baseline faulted is not
//! compared. Each regression is shrunk on "the baseline does not fail, the
//! subject fails" (`check::shrink_failing`, the shrinker `check` uses) and
//! kept as a fixture. Beside the verdicts, [`behaviour`] measures what the
//! change did to compaction, per case class.
//!
//! A run that compared nothing does not pass, whatever [`FailOn`] says: no
//! case run, or the baseline faulted on every one, or an invariant never
//! judged by both sides on one case (SPEC §8).
//!
//! A fixture suite (`--with-suite`) is compared the same way, fixture by
//! fixture ([`suite`]).
//!
//! What it does not do: start subjects (the CLI does, with `--jobs` and
//! `--lanes` for each side), or render reports ([`report`]).

pub mod behaviour;
pub mod json;
mod judge;
pub mod merge;
pub mod report;
pub mod suite;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::{Failure, FaultRecord, Shard, Tally};
use crate::oracle::{Invariant, InvariantSet, Verdict, Violation};
use crate::subject::{Fault, SubjectInfo};

pub use behaviour::Behaviour;
pub use judge::{run, run_parallel};

/// What fails the gate (exit 1): `--fail-on`. A run that compared
/// nothing fails whatever it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FailOn {
    /// A regression: an invariant or a fault the baseline does not share
    #[default]
    Regressions,
    /// Any failure of the subject, known ones too
    AnyFailure,
    /// Nothing the subject did
    Never,
}

impl FailOn {
    pub fn name(self) -> &'static str {
        match self {
            FailOn::Regressions => "regressions",
            FailOn::AnyFailure => "any-failure",
            FailOn::Never => "never",
        }
    }
}

/// One invariant on both sides, over the compared cases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvariantDelta {
    pub regressed: u64,
    pub known: u64,
    pub fixed: u64,
    /// Cases on which both sides judged it (pass or fail), or the subject
    /// did where the baseline does not check it.
    pub compared: u64,
    pub subject: Tally,
    /// `None`: the baseline does not check this invariant (not claimed).
    #[serde(default)]
    pub baseline: Option<Tally>,
}

/// A regression, shrunk: the failure on the subject's side (its fixture,
/// violation and replay), and what the baseline did on the shrunk case.
#[derive(Debug, Clone)]
pub struct Regression {
    pub failure: Failure,
    /// "held", "not applicable: …" or "does not check it".
    pub baseline: String,
}

/// A failure both sides share (known), or one the subject fixed: the first
/// case, the count, and the violations there (in JSON, these fields).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Shared {
    pub invariant: Invariant,
    #[serde(rename = "case")]
    pub case_index: u64,
    pub count: u64,
    /// The subject's violation (for a fix: `None`, it held).
    pub subject: Option<Violation>,
    pub baseline: Violation,
}

/// A subject fault kind: its first case (shrunk, when it is a regression),
/// how many cases were new (the baseline answered) and how many shared.
#[derive(Debug, Clone)]
pub struct SubjectFault {
    pub record: FaultRecord,
    pub new: u64,
    pub shared: u64,
}

/// A baseline fault kind: reported, never the subject's (in JSON, the
/// fault's fields, `case` and `count`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaselineFault {
    #[serde(flatten)]
    pub fault: Fault,
    #[serde(rename = "case")]
    pub case_index: u64,
    pub count: u64,
}

/// Everything a baseline comparison found.
#[derive(Debug, Clone)]
pub struct BaselineReport {
    pub subject: SubjectInfo,
    pub baseline: SubjectInfo,
    pub seed: u64,
    pub shard: Option<Shard>,
    /// Cases run (on both sides).
    pub cases: u64,
    /// Cases not compared: the baseline faulted.
    pub baseline_faulted: u64,
    /// Subject failures on those cases (counted by `any-failure`).
    pub uncompared_failures: u64,
    /// Its time, images not sent, formats re-aimed, formats measured (a
    /// side that takes text only or does not measure a format is why).
    pub run: crate::run::RunFacts,
    /// The invariants checked on the subject; the baseline's are those of
    /// them it claims.
    pub checked: InvariantSet,
    pub invariants: BTreeMap<Invariant, InvariantDelta>,
    pub regressions: Vec<Regression>,
    pub known: Vec<Shared>,
    pub fixes: Vec<Shared>,
    pub subject_faults: Vec<SubjectFault>,
    pub baseline_faults: Vec<BaselineFault>,
    pub behaviour: Behaviour,
    pub fail_on: FailOn,
    /// The suite replayed on both sides before the cases
    /// (`CheckOptions::suite`).
    pub suite: Option<suite::SuiteGate>,
}

impl BaselineReport {
    /// Cases compared (the baseline answered them).
    pub fn compared(&self) -> u64 {
        self.cases - self.baseline_faulted
    }

    /// Subject fault kinds with at least one case the baseline answered.
    pub fn fault_regressions(&self) -> impl Iterator<Item = &SubjectFault> {
        self.subject_faults.iter().filter(|f| f.new > 0)
    }

    /// Why the run compared too little to pass, one line per reason; empty
    /// when it compared enough.
    pub fn not_compared(&self) -> Vec<String> {
        if self.checked.is_empty() {
            return vec![format!(
                "no invariant was checked: the subject {:?} claims none of those asked for",
                self.subject.name
            )];
        }
        if self.cases == 0 {
            return vec![if self.run.stopped_by_time {
                "no case ran: the time budget ended before the first case".into()
            } else {
                "no case ran".into()
            }];
        }
        if self.compared() == 0 {
            return vec![format!(
                "no case was compared: the baseline faulted on all {} case(s)",
                self.cases
            )];
        }
        // One case rerun (`check --case N`) compares what that case
        // exercises on both sides.
        let one_case = self.shard.is_some_and(|s| s.one_case);
        if one_case && self.invariants.values().any(|d| d.compared > 0) {
            return Vec::new();
        }
        self.invariants
            .iter()
            .filter(|(_, d)| d.compared == 0)
            .map(|(inv, d)| {
                let mut why = format!(
                    "{inv} was never judged on both sides of one case in {} compared case(s): the subject: {}",
                    self.compared(),
                    reasons_or_judged(&d.subject)
                );
                if let Some(b) = &d.baseline {
                    why.push_str(&format!("; the baseline: {}", reasons_or_judged(b)));
                }
                why
            })
            .collect()
    }

    /// Why the gate fails under its [`FailOn`], one line per reason; empty
    /// when it passes.
    pub fn gate_failures(&self) -> Vec<String> {
        let mut why = Vec::new();
        let regressions = self.regressions.len() + self.fault_regressions().count();
        if self.fail_on != FailOn::Never && regressions > 0 {
            why.push(format!(
                "{} regression(s): {}",
                regressions,
                self.regressions
                    .iter()
                    .map(|r| r.failure.invariant.name().to_owned())
                    .chain(
                        self.fault_regressions()
                            .map(|f| format!("fault {}", f.record.fault.kind.name()))
                    )
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.fail_on == FailOn::AnyFailure {
            let shared_faults: u64 = self.subject_faults.iter().map(|f| f.shared).sum();
            if !self.known.is_empty() || shared_faults > 0 {
                why.push(format!(
                    "{} known failure(s) shared with the baseline, {} shared fault case(s) (--fail-on any-failure)",
                    self.known.len(),
                    shared_faults
                ));
            }
            if self.uncompared_failures > 0 {
                why.push(format!(
                    "{} subject failure(s) on cases the baseline faulted on (--fail-on any-failure)",
                    self.uncompared_failures
                ));
            }
        }
        why.extend(self.not_compared());
        why
    }

    /// The gate passes.
    pub fn ok(&self) -> bool {
        self.gate_failures().is_empty()
    }
}

fn reasons_or_judged(t: &Tally) -> String {
    if t.exercised() {
        format!(
            "judged {} time(s), never with the other side",
            t.pass + t.fail
        )
    } else if t.reasons.is_empty() {
        "never judged".into()
    } else {
        format!("not applicable: {}", t.reasons_line())
    }
}

/// What one invariant's verdicts on one case amount to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Both judged it (or the subject alone, where the baseline does not
    /// check it), and neither failed.
    Held,
    Regressed,
    Known,
    Fixed,
    /// Not judged on both sides.
    NotCompared,
}

/// Classify one invariant on one case from the two verdicts; `None` for
/// the baseline: it does not check this invariant.
pub fn classify(subject: Option<&Verdict>, baseline: Option<Option<&Verdict>>) -> Change {
    let judged = |v: Option<&Verdict>| matches!(v, Some(Verdict::Pass | Verdict::Fail(_)));
    let fails = |v: Option<&Verdict>| matches!(v, Some(Verdict::Fail(_)));
    match baseline {
        None if fails(subject) => Change::Regressed,
        None if judged(subject) => Change::Held,
        None => Change::NotCompared,
        Some(b) => match (fails(subject), fails(b)) {
            (true, true) => Change::Known,
            (true, false) => Change::Regressed,
            (false, true) if matches!(subject, Some(Verdict::Pass)) => Change::Fixed,
            _ if judged(subject) && judged(b) => Change::Held,
            _ => Change::NotCompared,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail() -> Verdict {
        Verdict::Fail(vec![Violation::new(Invariant::PinnedKept, "dropped")])
    }

    #[test]
    fn verdict_pairs_classify_as_the_module_doc_says() {
        let na = Verdict::NotApplicable("compaction was not due");
        let (p, f) = (Verdict::Pass, fail());
        assert_eq!(classify(Some(&f), Some(Some(&p))), Change::Regressed);
        assert_eq!(classify(Some(&f), Some(Some(&na))), Change::Regressed);
        assert_eq!(classify(Some(&f), None), Change::Regressed);
        assert_eq!(classify(Some(&f), Some(Some(&f))), Change::Known);
        assert_eq!(classify(Some(&p), Some(Some(&f))), Change::Fixed);
        assert_eq!(classify(Some(&na), Some(Some(&f))), Change::NotCompared);
        assert_eq!(classify(Some(&p), Some(Some(&p))), Change::Held);
        assert_eq!(classify(Some(&p), Some(Some(&na))), Change::NotCompared);
        assert_eq!(classify(Some(&p), None), Change::Held);
        assert_eq!(classify(None, Some(Some(&p))), Change::NotCompared);
    }
}
