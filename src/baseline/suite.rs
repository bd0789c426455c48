//! A fixture suite in the gate on a change (`check --baseline CMD
//! --with-suite DIR`): every fixture is replayed against both sides, and
//! each is judged as the generated cases are — a fixture the subject fails
//! and the baseline does not is a **regression**; one both fail is
//! **known**; one only the baseline fails is **fixed**. A fixture on which
//! the baseline faulted is not compared (its failure is counted by
//! `--fail-on any-failure` only), as a generated case is not. A suite of
//! which the subject judged nothing has checked nothing and fails the gate
//! whatever `--fail-on` says, as a plain run's suite does.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::FailOn;
use crate::fixture::Replayed;
use crate::model::one_line;
use crate::report::{junit, md};
use crate::suite::{SuiteCase, SuiteReport};

/// Both sides' runs of one suite, fixture by fixture in the same order.
#[derive(Debug, Clone)]
pub struct SuiteGate {
    pub subject: SuiteReport,
    pub baseline: SuiteReport,
}

/// What a fixture is to the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Held,
    Regressed,
    Known,
    Fixed,
    /// The subject failed it; the baseline faulted, so nothing to compare.
    NotCompared,
    Skipped,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Held => "held",
            Class::Regressed => "regressed",
            Class::Known => "known",
            Class::Fixed => "fixed",
            Class::NotCompared => "not compared",
            Class::Skipped => "skipped",
        }
    }
}

impl SuiteGate {
    /// Both sides' reports; `None` unless they are of the same fixtures.
    pub fn new(subject: SuiteReport, baseline: SuiteReport) -> Option<SuiteGate> {
        let same = subject.cases.len() == baseline.cases.len()
            && subject
                .cases
                .iter()
                .zip(&baseline.cases)
                .all(|(s, b)| s.path == b.path);
        same.then_some(SuiteGate { subject, baseline })
    }

    fn class(s: &SuiteCase, b: &SuiteCase) -> Class {
        match (&s.outcome, &b.outcome) {
            // The baseline faulted: nothing to compare the subject with,
            // whatever the subject did (held included: it is no fix).
            (_, Replayed::Fault(_)) => Class::NotCompared,
            (o, b) if o.reproduces() && b.reproduces() => Class::Known,
            (o, _) if o.reproduces() => Class::Regressed,
            (Replayed::Held { .. }, b) if b.reproduces() => Class::Fixed,
            (Replayed::Held { .. }, _) => Class::Held,
            (_, _) => Class::Skipped,
        }
    }

    /// A fixture the subject fails that is not a regression: known, or not
    /// compared (what `--fail-on any-failure` fails on).
    fn fails_the_subject(s: &SuiteCase, class: Class) -> bool {
        match class {
            Class::Known => true,
            Class::NotCompared => s.outcome.reproduces(),
            _ => false,
        }
    }

    /// Each fixture (the subject's side), the baseline's, and its class.
    pub fn rows(&self) -> impl Iterator<Item = (&SuiteCase, &SuiteCase, Class)> {
        self.subject
            .cases
            .iter()
            .zip(&self.baseline.cases)
            .map(|(s, b)| (s, b, Self::class(s, b)))
    }

    pub fn count(&self, class: Class) -> usize {
        self.rows().filter(|(_, _, c)| *c == class).count()
    }

    /// Why the suite fails the gate under `fail_on`, one line a reason.
    pub fn problems(&self, fail_on: FailOn) -> Vec<String> {
        let source = self.shown_source();
        let mut why = Vec::new();
        let regressed = self.count(Class::Regressed);
        if fail_on != FailOn::Never && regressed > 0 {
            why.push(format!("{regressed} suite fixture(s) regressed ({source})"));
        }
        let shared = self
            .rows()
            .filter(|(s, _, c)| Self::fails_the_subject(s, *c))
            .count();
        if fail_on == FailOn::AnyFailure && shared > 0 {
            why.push(format!(
                "{shared} suite fixture(s) the subject fails, known or not compared ({source}, --fail-on any-failure)"
            ));
        }
        if self.subject.held() == 0 && self.subject.failed() == 0 {
            why.push(format!(
                "nothing in the suite {source} was judged: all {} fixture(s) were skipped",
                self.subject.cases.len()
            ));
        }
        why
    }

    fn tally(&self) -> String {
        format!(
            "{} held, {} regressed, {} known, {} fixed, {} not compared, {} skipped",
            self.count(Class::Held),
            self.count(Class::Regressed),
            self.count(Class::Known),
            self.count(Class::Fixed),
            self.count(Class::NotCompared),
            self.count(Class::Skipped)
        )
    }

    /// One line per fixture, then the tally: the section the gate prints
    /// before its own report.
    pub fn human(&self) -> String {
        let mut out = format!(
            "suite {}, the subject against the baseline\n",
            self.shown_source()
        );
        for (s, b, class) in self.rows() {
            // A fixture's file name and fields are text from outside.
            let shown = one_line(&s.path.display().to_string());
            match class {
                Class::Held => {
                    let _ = writeln!(out, "ok         {shown}");
                }
                Class::Skipped => {
                    let why = match &s.outcome {
                        Replayed::Skipped { why } => why.as_str(),
                        _ => "",
                    };
                    let why = one_line(why);
                    let _ = writeln!(out, "SKIP       {shown}: nothing judged: {why}");
                }
                Class::Fixed => {
                    let _ = writeln!(
                        out,
                        "fixed      {shown} (the baseline: {})",
                        one_line(&outcome_line(&b.outcome))
                    );
                }
                Class::Regressed | Class::Known | Class::NotCompared => {
                    let tag = match class {
                        Class::Regressed => "REGRESSED ",
                        Class::Known => "known     ",
                        _ => "uncompared",
                    };
                    let _ = writeln!(out, "{tag} {shown}\n  see: {}", one_line(&s.see));
                    for line in outcome_lines(&s.outcome) {
                        let _ = writeln!(out, "  {}", one_line(&line));
                    }
                    let baseline = one_line(&outcome_line(&b.outcome));
                    let _ = writeln!(out, "  the baseline: {baseline}");
                }
            }
        }
        let _ = writeln!(out, "suite: {}\n", self.tally());
        out
    }

    /// `{"source", "regressed", "known", "fixed", "notCompared"` (paths)`,
    /// "subject", "baseline"` (each side's suite report)`}`.
    pub fn to_json(&self) -> Value {
        let paths = |class: Class| -> Vec<String> {
            self.rows()
                .filter(|(_, _, c)| *c == class)
                .map(|(s, _, _)| s.path.display().to_string())
                .collect()
        };
        json!({
            "source": self.subject.source.display().to_string(),
            "regressed": paths(Class::Regressed),
            "known": paths(Class::Known),
            "fixed": paths(Class::Fixed),
            "notCompared": paths(Class::NotCompared),
            "subject": self.subject.to_json(),
            "baseline": self.baseline.to_json(),
        })
    }

    /// What [`to_json`](Self::to_json) wrote (`report merge` reads it
    /// back from shard 1's report).
    pub fn from_json(v: &Value) -> Result<SuiteGate, String> {
        let side = |k: &str| {
            SuiteReport::from_json(v.get(k).ok_or(format!("no `{k}`"))?)
                .map_err(|e| format!("`{k}`: {e}"))
        };
        SuiteGate::new(side("subject")?, side("baseline")?)
            .ok_or_else(|| "the two sides ran different fixtures".into())
    }

    /// A JUnit `<testsuite>`, one `<testcase>` per fixture: a regression
    /// is a `<failure>`, and so is a known or uncompared one under
    /// `--fail-on any-failure` (else noted in `<system-out>`); a skip is
    /// `<skipped>`.
    pub fn junit_testsuite(&self, fail_on: FailOn) -> junit::Suite {
        let cases = self.rows().map(|(s, b, class)| {
            let case = junit::Case::new("ctxgate.suite", &s.path.display().to_string());
            let body = || {
                format!(
                    "see: {}\n{}\nthe baseline: {}",
                    s.see,
                    outcome_lines(&s.outcome).join("\n"),
                    outcome_line(&b.outcome)
                )
            };
            let failing = class == Class::Regressed
                || (fail_on == FailOn::AnyFailure && Self::fails_the_subject(s, class));
            match class {
                _ if failing => case.failed(class.name(), &outcome_line(&s.outcome), &body()),
                Class::Known | Class::NotCompared | Class::Fixed => junit::Case {
                    out: Some(format!("{}: {}", class.name(), body())),
                    ..case
                },
                Class::Skipped => junit::Case {
                    skipped: Some(match &s.outcome {
                        Replayed::Skipped { why } => why.clone(),
                        _ => String::new(),
                    }),
                    ..case
                },
                _ => case,
            }
        });
        junit::Suite {
            name: format!(
                "ctxgate suite {} (against the baseline)",
                self.subject.source.display()
            ),
            seconds: None,
            cases: cases.collect(),
        }
    }

    /// The folder the suite was read from, on one line.
    fn shown_source(&self) -> String {
        one_line(&self.subject.source.display().to_string())
    }

    /// A Markdown section: the tally, then a row per fixture that did not
    /// hold, each field escaped (`md`).
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "### Suite {}, against the baseline\n\n{}\n",
            md(&self.subject.source.display().to_string()),
            self.tally()
        );
        let rows: Vec<_> = self.rows().filter(|(_, _, c)| *c != Class::Held).collect();
        if !rows.is_empty() {
            out.push_str(
                "\n| fixture | the gate | the subject | the baseline |\n|---|---|---|---|\n",
            );
            for (s, b, class) in rows {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    md(&s.name),
                    class.name(),
                    md(&outcome_line(&s.outcome)),
                    md(&outcome_line(&b.outcome))
                );
            }
        }
        out.push('\n');
        out
    }
}

/// A replay's outcome in a few words.
fn outcome_line(o: &Replayed) -> String {
    match o {
        Replayed::Held { judged } => format!("held ({judged} invariant(s))"),
        Replayed::Failed(vs) => {
            let mut names: Vec<&str> = vs.iter().map(|v| v.invariant.name()).collect();
            names.dedup();
            format!("fails {}", names.join(", "))
        }
        Replayed::Fault(f) => format!("fault ({})", f.kind.name()),
        Replayed::Skipped { why } => format!("nothing judged: {why}"),
    }
}

/// A failed or faulted replay, line by line.
fn outcome_lines(o: &Replayed) -> Vec<String> {
    match o {
        Replayed::Failed(vs) => crate::oracle::violation_lines(vs),
        Replayed::Fault(f) => f.to_string().lines().map(str::to_owned).collect(),
        other => vec![outcome_line(other)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::{Invariant, Violation};
    use std::path::PathBuf;

    fn case(path: &str, outcome: Replayed) -> SuiteCase {
        SuiteCase {
            path: PathBuf::from(path),
            name: path.into(),
            see: "a test".into(),
            outcome,
        }
    }

    fn failed() -> Replayed {
        Replayed::Failed(vec![Violation::new(Invariant::ToolPairing, "an orphan")])
    }

    fn held() -> Replayed {
        Replayed::Held { judged: 1 }
    }

    fn fault() -> Replayed {
        Replayed::Fault(crate::subject::Fault::new(
            crate::subject::FaultKind::Crash,
            "gone",
        ))
    }

    fn gate(rows: Vec<(Replayed, Replayed)>) -> SuiteGate {
        let side = |pick: fn(&(Replayed, Replayed)) -> &Replayed| SuiteReport {
            source: PathBuf::from("suite"),
            cases: rows
                .iter()
                .enumerate()
                .map(|(k, r)| case(&format!("f{k}.json"), pick(r).clone()))
                .collect(),
        };
        SuiteGate::new(side(|r| &r.0), side(|r| &r.1)).unwrap()
    }

    /// Each pair of outcomes is the class the generated cases' rules give
    /// it, and `--fail-on` decides which of them fail the gate.
    #[test]
    fn fixtures_are_judged_as_generated_cases_are() {
        let skipped = || Replayed::Skipped {
            why: "none claimed".into(),
        };
        let g = gate(vec![
            (held(), held()),
            (failed(), held()),
            (fault(), held()),
            (failed(), failed()),
            (held(), failed()),
            (failed(), fault()),
            (skipped(), failed()),
            // The baseline faulted: not compared, whatever the subject did
            // (issue 25: a subject that held was counted "fixed").
            (held(), fault()),
        ]);
        let classes: Vec<Class> = g.rows().map(|(_, _, c)| c).collect();
        use Class::*;
        assert_eq!(
            classes,
            [
                Held,
                Regressed,
                Regressed,
                Known,
                Fixed,
                NotCompared,
                Skipped,
                NotCompared
            ]
        );
        assert_eq!(g.problems(FailOn::Regressions).len(), 1);
        assert!(g.problems(FailOn::Regressions)[0].starts_with("2 suite fixture(s) regressed"));
        assert_eq!(g.problems(FailOn::AnyFailure).len(), 2);
        assert!(g.problems(FailOn::Never).is_empty());
        let junit = g.junit_testsuite(FailOn::Regressions).to_string();
        assert!(junit.contains("failures=\"2\""), "{junit}");
        assert!(g
            .junit_testsuite(FailOn::AnyFailure)
            .to_string()
            .contains("failures=\"4\""));
        assert!(g.human().contains("REGRESSED  f1.json"), "{}", g.human());
        // Read back as written.
        let again = SuiteGate::from_json(&g.to_json()).unwrap();
        assert_eq!(again.to_json(), g.to_json());
        assert_eq!(g.to_json()["regressed"], json!(["f1.json", "f2.json"]));
    }

    /// A suite the subject judged nothing of fails the gate, `never` too;
    /// one the subject fails only where the baseline does passes it.
    #[test]
    fn a_suite_that_judged_nothing_fails_and_known_failures_pass() {
        let skipped = || Replayed::Skipped {
            why: "none claimed".into(),
        };
        let g = gate(vec![(skipped(), held())]);
        assert!(g.problems(FailOn::Never)[0].contains("nothing in the suite"));
        let g = gate(vec![(failed(), failed()), (held(), held())]);
        assert!(g.problems(FailOn::Regressions).is_empty());
        assert!(!g.problems(FailOn::AnyFailure).is_empty());
    }
}
