//! A report in the form asked for — human, Markdown, JUnit or JSON — with
//! the suite's outcome in it when the run replayed one (`--with-suite`):
//! the human and Markdown forms open with the suite's section, the JSON
//! report gains a `suite` member, JUnit a `<testsuite>` of its own (one
//! `<testcase>` per fixture) beside the run's. One home for the four forms
//! of a check and of a baseline gate, used by `check` and `report merge`.

use serde_json::Value;

use super::{junit, ReplayHint};
use crate::baseline::report::Hints;
use crate::baseline::suite::SuiteGate;
use crate::baseline::BaselineReport;
use crate::check::CheckReport;
use crate::suite::SuiteReport;

/// A report's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportKind {
    Human,
    Json,
    Junit,
    /// For $GITHUB_STEP_SUMMARY or a pull-request comment
    Markdown,
}

/// What a run comes to: a check's report or a baseline gate's (with the
/// suite's outcome when it replayed one), and the flags its replay lines
/// carry. `check` builds it from a run, `report merge` from shards.
pub enum Outcome {
    Check {
        report: CheckReport,
        hint: ReplayHint,
    },
    Gate {
        report: BaselineReport,
        hints: Hints,
    },
}

impl Outcome {
    /// The report in `kind`, with the suite's outcome in it if there is one.
    pub fn render(&self, kind: ReportKind) -> String {
        use crate::baseline::report as gate;
        match self {
            Outcome::Check { report: r, hint } => Forms {
                human: &|p| super::human_with_suite(r, hint, p),
                json: &|| super::to_json(r, hint),
                junit: &|| super::junit(r, hint),
                markdown: &|p| super::markdown_with_suite(r, hint, p),
            }
            .render(kind, r.suite.as_ref().map(SuiteParts::of_run)),
            Outcome::Gate { report: r, hints } => Forms {
                human: &|p| gate::human_with_suite(r, hints, p),
                json: &|| crate::baseline::json::to_json(r, hints),
                junit: &|| gate::junit(r, hints),
                markdown: &|p| gate::markdown_with_suite(r, hints, p),
            }
            .render(kind, r.suite.as_ref().map(|s| SuiteParts::of_gate(s, r))),
        }
    }

    /// Why the run fails: the suite's reasons first, then the generated
    /// cases' (failures and faults, then what was never checked, or the
    /// gate's regressions); empty when it held.
    pub fn problems(&self) -> Vec<String> {
        match self {
            Outcome::Check { report: r, .. } => {
                let mut why: Vec<String> = r.suite.iter().filter_map(|s| s.problem()).collect();
                if !r.failures.is_empty() || !r.faults.is_empty() {
                    why.push(format!(
                        "{} invariant(s) failed, {} subject fault kind(s)",
                        r.broken().len(),
                        r.faults.len()
                    ));
                }
                let unchecked = r.not_checked().len();
                if unchecked > 0 {
                    why.push(format!(
                        "{unchecked} thing(s) were never checked (see NOT CHECKED above)"
                    ));
                }
                why
            }
            Outcome::Gate { report: r, .. } => {
                let mut why: Vec<String> =
                    r.suite.iter().flat_map(|s| s.problems(r.fail_on)).collect();
                why.extend(r.gate_failures());
                why
            }
        }
    }

    /// The run's seed.
    pub fn seed(&self) -> u64 {
        match self {
            Outcome::Check { report, .. } => report.seed,
            Outcome::Gate { report, .. } => report.seed,
        }
    }

    /// "run" or "gate", as a message names it.
    pub fn what(&self) -> &'static str {
        match self {
            Outcome::Check { .. } => "run",
            Outcome::Gate { .. } => "gate",
        }
    }
}

/// A run's report in each form, rendered on demand; the human and
/// Markdown forms are told the suite's problems, to say them in their
/// verdict.
struct Forms<'a> {
    human: &'a dyn Fn(&[String]) -> String,
    json: &'a dyn Fn() -> Value,
    junit: &'a dyn Fn() -> junit::Suite,
    markdown: &'a dyn Fn(&[String]) -> String,
}

impl Forms<'_> {
    /// The report in `kind`, with the suite's parts in it if there are
    /// any: its section first in the human and Markdown forms, a `suite`
    /// member in the JSON, a `<testsuite>` of its own in JUnit.
    fn render(&self, kind: ReportKind, suite: Option<SuiteParts>) -> String {
        let problems = suite.as_ref().map_or(&[][..], |s| &s.problems[..]);
        let (before, rendered) = match kind {
            ReportKind::Human => (suite.as_ref().map(|s| &s.human), (self.human)(problems)),
            ReportKind::Markdown => (
                suite.as_ref().map(|s| &s.markdown),
                (self.markdown)(problems),
            ),
            ReportKind::Json => {
                let mut v = (self.json)();
                if let (Value::Object(o), Some(s)) = (&mut v, &suite) {
                    o.insert("suite".into(), s.json.clone());
                    if !s.problems.is_empty() {
                        o.insert("ok".into(), false.into());
                    }
                }
                (None, format!("{}\n", super::json::pretty(&v)))
            }
            ReportKind::Junit => {
                let suites: Vec<_> = std::iter::once((self.junit)())
                    .chain(suite.map(|s| s.junit))
                    .collect();
                (None, junit::document(&suites))
            }
        };
        let text = format!("{}{rendered}", before.map_or("", |s| s.as_str()));
        // The human form is read in terminals and CI logs, and so may the
        // Markdown be: each is guarded as a whole, whatever a writer
        // forgot to escape (the JSON and JUnit writers' output is safe as
        // written, `json::pretty` and `junit::document`).
        match kind {
            ReportKind::Human | ReportKind::Markdown => {
                crate::model::text::for_log(&text).into_owned()
            }
            ReportKind::Json | ReportKind::Junit => text,
        }
    }
}

/// A suite's outcome in each report form, and why it fails the run.
struct SuiteParts {
    human: String,
    markdown: String,
    json: Value,
    junit: junit::Suite,
    problems: Vec<String>,
}

impl SuiteParts {
    fn of_run(s: &SuiteReport) -> SuiteParts {
        SuiteParts {
            human: s.human(),
            markdown: s.markdown(),
            json: s.to_json(),
            junit: s.junit_testsuite(),
            problems: s.problem().into_iter().collect(),
        }
    }

    /// The suite of a gate, judged under the gate's `--fail-on`.
    fn of_gate(s: &SuiteGate, gate: &BaselineReport) -> SuiteParts {
        SuiteParts {
            human: s.human(),
            markdown: s.markdown(),
            json: s.to_json(),
            junit: s.junit_testsuite(gate.fail_on),
            problems: s.problems(gate.fail_on),
        }
    }
}
