//! A report in the form asked for — human, Markdown, JUnit or JSON — with
//! the suite's outcome in it when the run replayed one (`--with-suite`):
//! the human and Markdown forms open with the suite's section, the JSON
//! report gains a `suite` member, JUnit a `<testsuite>` of its own (one
//! `<testcase>` per fixture) beside the run's. One home for the four forms
//! of a check and of a baseline gate, used by `check` and `report merge`.

use serde_json::Value;

use super::ReplayHint;
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

/// What a run comes to: a check's report or a baseline gate's, with the
/// suite's outcome when it replayed one and the flags its replay lines
/// carry. `check` builds it from a run, `report merge` from shards.
pub enum Outcome {
    Check {
        report: CheckReport,
        suite: Option<SuiteReport>,
        hint: ReplayHint,
    },
    Gate {
        report: BaselineReport,
        suite: Option<SuiteGate>,
        hints: Hints,
    },
}

impl Outcome {
    /// The report in `kind`, with the suite's outcome in it if there is one.
    pub fn render(&self, kind: ReportKind) -> String {
        use crate::baseline::report as gate;
        match self {
            Outcome::Check {
                report: r,
                suite,
                hint,
            } => Forms {
                human: &|| super::human(r, hint),
                json: &|| super::to_json(r, hint),
                junit: &|| super::junit(r, hint),
                markdown: &|| super::markdown(r, hint),
            }
            .render(
                kind,
                suite.as_ref().map(|s| SuiteParts {
                    human: s.human(),
                    markdown: s.markdown(),
                    json: s.to_json(),
                    junit: s.junit_testsuite(),
                    problems: s.problem().into_iter().collect(),
                }),
            ),
            Outcome::Gate {
                report: r,
                suite,
                hints,
            } => Forms {
                human: &|| gate::human(r, hints),
                json: &|| gate::to_json(r, hints),
                junit: &|| gate::junit(r, hints),
                markdown: &|| gate::markdown(r, hints),
            }
            .render(
                kind,
                suite.as_ref().map(|s| SuiteParts {
                    human: s.human(),
                    markdown: s.markdown(),
                    json: s.to_json(),
                    junit: s.junit_testsuite(r.fail_on),
                    problems: s.problems(r.fail_on),
                }),
            ),
        }
    }

    /// Why the run fails: the suite's reasons first, then the generated
    /// cases' (failures and faults, then what was never checked, or the
    /// gate's regressions); empty when it held.
    pub fn problems(&self) -> Vec<String> {
        match self {
            Outcome::Check {
                report: r, suite, ..
            } => {
                let mut why: Vec<String> = suite.iter().filter_map(|s| s.problem()).collect();
                if !r.failures.is_empty() || !r.faults.is_empty() {
                    why.push(format!(
                        "{} invariant(s) failed, {} subject fault kind(s)",
                        r.failures.len(),
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
            Outcome::Gate {
                report: r, suite, ..
            } => {
                let mut why: Vec<String> =
                    suite.iter().flat_map(|s| s.problems(r.fail_on)).collect();
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

/// A run's report in each form, rendered on demand.
struct Forms<'a> {
    human: &'a dyn Fn() -> String,
    json: &'a dyn Fn() -> Value,
    junit: &'a dyn Fn() -> String,
    markdown: &'a dyn Fn() -> String,
}

impl Forms<'_> {
    /// The report in `kind`, with the suite's parts in it if there are any.
    fn render(&self, kind: ReportKind, suite: Option<SuiteParts>) -> String {
        let rendered = match kind {
            ReportKind::Human => (self.human)(),
            ReportKind::Json => pretty(&(self.json)()),
            ReportKind::Junit => (self.junit)(),
            ReportKind::Markdown => (self.markdown)(),
        };
        match suite {
            None => rendered,
            Some(parts) => with_suite(rendered, self.json, kind, &parts),
        }
    }
}

fn pretty(v: &Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(v).expect("serialises"))
}

/// A suite's outcome in each report form, and why it fails the run.
struct SuiteParts {
    human: String,
    markdown: String,
    json: Value,
    junit: String,
    problems: Vec<String>,
}

/// `rendered`, a run's report in `kind` (`json`: the same as a value), with
/// its suite's parts in it.
fn with_suite(
    rendered: String,
    json: &dyn Fn() -> Value,
    kind: ReportKind,
    suite: &SuiteParts,
) -> String {
    match kind {
        ReportKind::Human => format!(
            "{}{}",
            suite.human,
            with_suite_verdict(rendered, kind, &suite.problems)
        ),
        ReportKind::Markdown => format!(
            "{}{}",
            suite.markdown,
            with_suite_verdict(rendered, kind, &suite.problems)
        ),
        ReportKind::Json => {
            let mut v = json();
            if let Value::Object(o) = &mut v {
                o.insert("suite".into(), suite.json.clone());
                if !suite.problems.is_empty() {
                    o.insert("ok".into(), false.into());
                }
            }
            pretty(&v)
        }
        ReportKind::Junit => match rendered.rfind("</testsuites>") {
            Some(at) => format!("{}{}{}", &rendered[..at], suite.junit, &rendered[at..]),
            None => rendered,
        },
    }
}

/// A report whose suite failed says so where its verdict is: the human
/// form's last line and the Markdown form's head line, which otherwise
/// speak of the generated cases alone (a run whose suite failed must not
/// end on "OK").
fn with_suite_verdict(rendered: String, kind: ReportKind, problems: &[String]) -> String {
    if problems.is_empty() {
        return rendered;
    }
    let why = problems.join("; ");
    match kind {
        ReportKind::Human => {
            let body = rendered.trim_end_matches('\n');
            let (before, last) = body.rsplit_once('\n').unwrap_or(("", body));
            format!("{before}\nFAILED: {why}; the generated cases: {last}\n")
        }
        ReportKind::Markdown => {
            let (head, rest) = rendered.split_once('\n').unwrap_or((&rendered, ""));
            let head = match head.rsplit_once(" — ") {
                Some((title, mark)) if mark.starts_with('❌') => {
                    format!("{title} — {mark}; {why}")
                }
                Some((title, mark)) => format!("{title} — ❌ {why} (the generated cases: {mark})"),
                None => format!("{head} — ❌ {why}"),
            };
            format!("{head}\n{rest}")
        }
        ReportKind::Json | ReportKind::Junit => rendered,
    }
}
