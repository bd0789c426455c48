//! A fixture suite run as part of a gate (`ctxgate check --with-suite DIR`,
//! SPEC §8): every SPEC §7 fixture under a folder — `suites/known-bugs/`,
//! the real compactor bugs, or a project's own — replayed against the
//! subject before the generated cases, each counted as held, failed
//! (an invariant failed, or the subject faulted) or skipped (nothing could
//! be judged), like regex's test suite counts its cases.
//!
//! The contract of a suite run: it passes when no fixture failed and at
//! least one held; a suite of which nothing was judged has checked nothing
//! and does not pass. How its results appear in each report form is
//! [`SuiteReport`]'s business; `check` adds them to its own (the CLI). This
//! module neither generates nor shrinks: a suite's fixtures are already
//! minimal, and are replayed as they are.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::InputError;
use crate::fixture::{collect, replay_claiming, Fixture, Replayed};
use crate::model::one_line;
use crate::oracle::{InvariantSet, Violation};
use crate::report::{junit, md};
use crate::subject::Subject;

/// A suite report's JSON (`held`, `failed`, `skipped` are written for the
/// reader and counted again from the fixtures when read back).
#[derive(serde::Serialize, serde::Deserialize)]
struct SuiteJson {
    source: String,
    #[serde(skip_deserializing)]
    held: usize,
    #[serde(skip_deserializing)]
    failed: usize,
    #[serde(skip_deserializing)]
    skipped: usize,
    fixtures: Vec<CaseJson>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CaseJson {
    path: String,
    name: String,
    see: String,
    #[serde(flatten)]
    outcome: OutcomeJson,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
enum OutcomeJson {
    Held { judged: usize },
    Failed { violations: Vec<Violation> },
    Fault { fault: crate::subject::Fault },
    Skipped { why: String },
}

/// One fixture of a suite and what replaying it gave.
#[derive(Debug, Clone)]
pub struct SuiteCase {
    pub path: PathBuf,
    /// The fixture's `name` and `see` (SPEC §7): what the reports show of it.
    pub name: String,
    pub see: String,
    pub outcome: Replayed,
}

/// What a suite run gave, fixture by fixture, in path order.
#[derive(Debug, Clone)]
pub struct SuiteReport {
    /// The folder (or file) the suite was read from, as given.
    pub source: PathBuf,
    pub cases: Vec<SuiteCase>,
}

/// A suite to replay: the folder (or file) it was read from, as given,
/// and its fixtures, parsed. A run replays it first when
/// `CheckOptions::suite` holds it (`check --with-suite DIR`).
#[derive(Debug, Clone)]
pub struct Suite {
    pub dir: PathBuf,
    pub fixtures: Vec<(PathBuf, Fixture)>,
}

/// A suite, and what reading its folder followed or skipped
/// ([`mod@crate::input::walk`]).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub suite: Suite,
    pub notes: Vec<crate::input::Note>,
}

/// Every fixture under `dir`, parsed before any is run: a file that does
/// not parse is bad input (the error names it), and so is a folder with no
/// fixture at all, since a suite of nothing cannot be a gate.
pub fn load(dir: &Path, cap: u64) -> Result<Loaded, InputError> {
    let walked = collect(&[dir.to_path_buf()])?;
    if walked.files.is_empty() {
        return Err(InputError::new(
            crate::error::InputErrorKind::Io,
            "no fixture files (*.json) in the suite",
        )
        .in_file(dir.display().to_string()));
    }
    let (fixtures, agents) = crate::fixture::load_compactor_fixtures(walked.files, cap)?;
    let mut notes = walked.notes;
    notes.extend(agents.into_iter().map(crate::input::Note::agent_fixture));
    if fixtures.is_empty() {
        return Err(InputError::new(
            crate::error::InputErrorKind::Io,
            "no compactor fixture in the suite (its agent fixtures are for `ctxgate agent replay`)",
        )
        .in_file(dir.display().to_string()));
    }
    let suite = Suite {
        dir: dir.to_path_buf(),
        fixtures,
    };
    Ok(Loaded { suite, notes })
}

/// Replay each fixture against `subject`, in order.
pub fn run(
    subject: &mut dyn Subject,
    source: &Path,
    fixtures: Vec<(PathBuf, Fixture)>,
) -> SuiteReport {
    run_claiming(subject, source, fixtures, InvariantSet::empty())
}

/// [`run`], judging the invariants of `explore` too where the subject
/// does not claim them ([`replay_claiming`]).
pub fn run_claiming(
    subject: &mut dyn Subject,
    source: &Path,
    fixtures: Vec<(PathBuf, Fixture)>,
    explore: InvariantSet,
) -> SuiteReport {
    let cases = fixtures
        .into_iter()
        .map(|(path, fixture)| {
            let (outcome, _) = replay_claiming(subject, &fixture, explore);
            SuiteCase {
                path,
                name: fixture.name,
                see: fixture.see,
                outcome,
            }
        })
        .collect();
    SuiteReport {
        source: source.to_path_buf(),
        cases,
    }
}

impl Suite {
    /// Replay the suite against `subject`, as a run does before its
    /// generated cases. A fixture keeps its own config, ceiling included,
    /// so none of its bodies goes to the subject's live endpoint
    /// (`check --transport`): that endpoint's ceiling is the run's.
    /// `explore`: the run's `--claim`, judged on the fixtures too.
    pub fn run(&self, subject: &mut dyn Subject, explore: InvariantSet) -> SuiteReport {
        let hold = |subject: &mut dyn Subject, held| {
            if let Some(t) = subject.transport() {
                t.hold(held);
            }
        };
        hold(subject, true);
        let report = run_claiming(subject, &self.dir, self.fixtures.clone(), explore);
        hold(subject, false);
        report
    }
}

impl SuiteCase {
    /// The fixture's lines in a human report: `ok`, `FAIL` or `FAULT` (with
    /// the fixture's `see` when `see`, then what failed) or `SKIP`.
    pub fn human(&self, see: bool) -> String {
        // A fixture's file name and fields are text from outside.
        let shown = one_line(&self.path.display().to_string());
        let see = match see {
            true => format!("\n  see: {}", one_line(&self.see)),
            false => String::new(),
        };
        match &self.outcome {
            Replayed::Held { judged } => format!("ok    {shown} ({judged} invariant(s) held)\n"),
            Replayed::Failed(violations) => {
                let mut out = format!("FAIL  {shown}{see}\n");
                for line in crate::oracle::violation_lines(violations) {
                    let _ = writeln!(out, "  {line}");
                }
                out
            }
            Replayed::Fault(fault) => format!(
                "FAULT {shown}{see}\n  {}\n",
                fault.to_string().replace('\n', "\n  ")
            ),
            Replayed::Skipped { why } => {
                format!("SKIP  {shown}: nothing judged: {}\n", one_line(why))
            }
        }
    }
}

impl SuiteReport {
    fn count(&self, f: impl Fn(&Replayed) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.outcome)).count()
    }

    pub fn held(&self) -> usize {
        self.count(|o| matches!(o, Replayed::Held { .. }))
    }

    /// Fixtures that failed an invariant or on which the subject faulted.
    pub fn failed(&self) -> usize {
        self.count(Replayed::reproduces)
    }

    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Replayed::Skipped { .. }))
    }

    /// No fixture failed, and at least one was judged.
    pub fn ok(&self) -> bool {
        self.failed() == 0 && self.held() > 0
    }

    /// Why the suite did not pass, or `None` when it did.
    pub fn problem(&self) -> Option<String> {
        if self.failed() > 0 {
            Some(format!(
                "{} of {} suite fixture(s) failed ({})",
                self.failed(),
                self.cases.len(),
                self.shown_source()
            ))
        } else if self.held() == 0 {
            Some(format!(
                "nothing in the suite {} was judged: all {} fixture(s) were skipped",
                self.shown_source(),
                self.cases.len()
            ))
        } else {
            None
        }
    }

    /// Why `replay` of these fixtures against `subject` fails, or `None`
    /// when it passes: a fixture failed, or none was judged; with
    /// `--expect-failures`, a fixture on which no invariant was judged to
    /// fail — one that held, was skipped, or on which the subject faulted
    /// (a crash, a timeout, a library that raised: nothing of the fixture
    /// was judged, so it does not show that the bug is still there).
    pub fn replay_problem(&self, subject: &str, expect_failures: bool) -> Option<String> {
        let (failed, n) = (self.failed(), self.cases.len());
        let subject = one_line(subject);
        if expect_failures {
            let unexpected: Vec<String> = (self.cases.iter())
                .filter_map(|c| {
                    let why = match &c.outcome {
                        Replayed::Failed(_) => return None,
                        Replayed::Held { .. } => "it held".to_owned(),
                        Replayed::Skipped { .. } => "nothing was judged".to_owned(),
                        Replayed::Fault(f) => format!(
                            "the subject faulted ({}), so nothing was judged",
                            f.kind.name()
                        ),
                    };
                    Some(format!(
                        "{} ({why})",
                        one_line(&c.path.display().to_string())
                    ))
                })
                .collect();
            return (!unexpected.is_empty()).then(|| {
                format!(
                    "{} of {n} fixture(s) were not seen to fail against {subject} (expected to): {}",
                    unexpected.len(),
                    unexpected.join(", ")
                )
            });
        }
        if failed > 0 {
            Some(format!(
                "{failed} of {n} fixture(s) failed against {subject}"
            ))
        } else if self.held() == 0 {
            let skipped = self.skipped();
            Some(format!(
                "nothing was judged: all {skipped} fixture(s) were skipped against {subject}"
            ))
        } else {
            None
        }
    }

    /// One line per fixture, then the tally: the section `check` prints
    /// before its own report.
    pub fn human(&self) -> String {
        let mut out = format!("suite {}\n", self.shown_source());
        for c in &self.cases {
            out += &c.human(true);
        }
        let _ = writeln!(
            out,
            "suite: {} held, {} failed, {} skipped\n",
            self.held(),
            self.failed(),
            self.skipped()
        );
        out
    }

    /// `{"source", "held", "failed", "skipped", "fixtures": [{"path",
    /// "name", "see", "outcome", "judged"|"violations"|"fault"|"why"}]}`.
    pub fn to_json(&self) -> Value {
        let case = |c: &SuiteCase| CaseJson {
            path: c.path.display().to_string(),
            name: c.name.clone(),
            see: c.see.clone(),
            outcome: match c.outcome.clone() {
                Replayed::Held { judged } => OutcomeJson::Held { judged },
                Replayed::Failed(violations) => OutcomeJson::Failed { violations },
                Replayed::Fault(fault) => OutcomeJson::Fault { fault },
                Replayed::Skipped { why } => OutcomeJson::Skipped { why },
            },
        };
        let json = SuiteJson {
            source: self.source.display().to_string(),
            held: self.held(),
            failed: self.failed(),
            skipped: self.skipped(),
            fixtures: self.cases.iter().map(case).collect(),
        };
        serde_json::to_value(json).expect("a report is JSON")
    }

    /// The report [`to_json`](Self::to_json) wrote (`report merge` reads
    /// the suite's outcome back from shard 1's report).
    pub fn from_json(v: &Value) -> Result<SuiteReport, String> {
        let json: SuiteJson = crate::input::from_value(v)?;
        let case = |c: CaseJson| SuiteCase {
            path: PathBuf::from(c.path),
            name: c.name,
            see: c.see,
            outcome: match c.outcome {
                OutcomeJson::Held { judged } => Replayed::Held { judged },
                OutcomeJson::Failed { violations } => Replayed::Failed(violations),
                OutcomeJson::Fault { fault } => Replayed::Fault(fault),
                OutcomeJson::Skipped { why } => Replayed::Skipped { why },
            },
        };
        Ok(SuiteReport {
            source: PathBuf::from(json.source),
            cases: json.fixtures.into_iter().map(case).collect(),
        })
    }

    /// A JUnit `<testsuite>`, one `<testcase>` per fixture: a failure or
    /// fault is a `<failure>`, a skip a `<skipped>`.
    pub fn junit_testsuite(&self) -> junit::Suite {
        let cases = self.cases.iter().map(|c| {
            let case = junit::Case::new("ctxgate.suite", &c.path.display().to_string());
            match &c.outcome {
                Replayed::Held { .. } => case,
                Replayed::Failed(vs) => {
                    let first = vs.first();
                    let body = crate::oracle::violation_lines(vs).join("\n");
                    case.failed(
                        first.map_or("failed", |v| v.invariant.name()),
                        &first.map(|v| v.detail.clone()).unwrap_or_default(),
                        &format!("see: {}\n{body}", c.see),
                    )
                }
                Replayed::Fault(f) => {
                    case.failed("fault", &f.detail, &format!("see: {}\n{f}", c.see))
                }
                Replayed::Skipped { why } => junit::Case {
                    skipped: Some(why.clone()),
                    ..case
                },
            }
        });
        junit::Suite {
            name: format!("ctxgate suite {}", self.source.display()),
            seconds: None,
            cases: cases.collect(),
        }
    }

    /// The folder the suite was read from, on one line.
    fn shown_source(&self) -> String {
        one_line(&self.source.display().to_string())
    }

    /// A Markdown section: the tally, then a row per fixture that did not
    /// hold, each field escaped (`report::md`).
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "### Suite {}\n\n{} held, {} failed, {} skipped\n",
            md(&self.source.display().to_string()),
            self.held(),
            self.failed(),
            self.skipped()
        );
        let rows: Vec<&SuiteCase> = self
            .cases
            .iter()
            .filter(|c| !matches!(c.outcome, Replayed::Held { .. }))
            .collect();
        if !rows.is_empty() {
            out.push_str("\n| fixture | outcome | see |\n|---|---|---|\n");
            for c in rows {
                let outcome = match &c.outcome {
                    Replayed::Failed(vs) => vs
                        .iter()
                        .map(|v| v.invariant.name())
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect::<Vec<_>>()
                        .join(", "),
                    Replayed::Fault(f) => format!("fault ({})", f.kind.name()),
                    Replayed::Skipped { .. } => "skipped".into(),
                    Replayed::Held { .. } => unreachable!("filtered out"),
                };
                let _ = writeln!(out, "| {} | {outcome} | {} |", md(&c.name), md(&c.see));
            }
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::model::Message;
    use crate::oracle::InvariantSet;
    use crate::subject::InProcess;

    fn fixture(messages: Vec<Message>, invariants: &str) -> Fixture {
        Fixture::new(
            Config::default(),
            messages,
            InvariantSet::parse_list(invariants).unwrap(),
            "a test",
        )
    }

    fn report_of(outcomes: Vec<Replayed>) -> SuiteReport {
        let cases = outcomes
            .into_iter()
            .enumerate()
            .map(|(i, outcome)| SuiteCase {
                path: PathBuf::from(format!("f{i}.json")),
                name: String::new(),
                see: String::new(),
                outcome,
            });
        SuiteReport {
            source: PathBuf::from("suite"),
            cases: cases.collect(),
        }
    }

    #[test]
    fn replay_fails_on_a_failure_on_nothing_judged_and_on_an_expected_failure_that_held() {
        let failed = Replayed::Failed(vec![Violation::new(
            crate::oracle::Invariant::ToolPairing,
            "orphan",
        )]);
        let skipped = || Replayed::Skipped { why: "w".into() };
        let held = || Replayed::Held { judged: 1 };

        let one_failed = report_of(vec![held(), failed.clone()]);
        let why = one_failed.replay_problem("ref", false).unwrap();
        assert_eq!(why, "1 of 2 fixture(s) failed against ref");
        assert_eq!(
            one_failed.replay_problem("ref", true).unwrap(),
            "1 of 2 fixture(s) were not seen to fail against ref (expected to): f0.json (it held)"
        );
        // A fault judges nothing: an adapter that crashes, hangs or whose
        // library raised does not show the bug is still there.
        for kind in [
            crate::subject::FaultKind::Crash,
            crate::subject::FaultKind::Timeout,
            crate::subject::FaultKind::LibraryError,
        ] {
            let name = kind.name();
            let faulted = Replayed::Fault(crate::subject::Fault::new(kind, "x"));
            let why = report_of(vec![failed.clone(), faulted])
                .replay_problem("ref", true)
                .unwrap();
            assert!(
                why.contains(&format!("f1.json (the subject faulted ({name})")),
                "{why}"
            );
        }

        let none_judged = report_of(vec![skipped(), skipped()]);
        let why = none_judged.replay_problem("ref", false).unwrap();
        assert_eq!(
            why,
            "nothing was judged: all 2 fixture(s) were skipped against ref"
        );
        // Skipped is not failing either: an expected failure that was skipped fails.
        assert!(none_judged
            .replay_problem("ref", true)
            .unwrap()
            .contains("f0.json (nothing was judged), f1.json (nothing was judged)"));

        assert_eq!(
            report_of(vec![held(), skipped()]).replay_problem("ref", false),
            None
        );
        assert_eq!(report_of(vec![failed]).replay_problem("ref", true), None);
    }

    #[test]
    fn the_reference_holds_a_small_suite_and_the_report_counts_it() {
        let fixtures = vec![
            (
                PathBuf::from("a.json"),
                fixture(
                    vec![Message::system("s"), Message::user("hi")],
                    "tool-pairing,pinned-kept",
                ),
            ),
            (
                PathBuf::from("b.json"),
                fixture(vec![Message::user("hi")], "no-premature-compaction"),
            ),
        ];
        let mut subject = InProcess::reference();
        let report = run(&mut subject, Path::new("suite"), fixtures);
        assert_eq!(
            (report.held(), report.failed(), report.skipped()),
            (2, 0, 0)
        );
        assert!(report.ok());
        assert_eq!(report.problem(), None);
        assert!(report
            .human()
            .contains("suite: 2 held, 0 failed, 0 skipped"));
        assert_eq!(report.to_json()["fixtures"][1]["outcome"], "held");
        assert!(report
            .junit_testsuite()
            .to_string()
            .contains("tests=\"2\" skipped=\"0\" errors=\"0\" failures=\"0\""));
    }

    #[test]
    fn a_suite_that_judged_nothing_does_not_pass() {
        let report = SuiteReport {
            source: PathBuf::from("s"),
            cases: vec![SuiteCase {
                path: PathBuf::from("x.json"),
                name: "x".into(),
                see: "a test".into(),
                outcome: Replayed::Skipped {
                    why: "claims none".into(),
                },
            }],
        };
        assert!(!report.ok());
        assert!(report.problem().unwrap().contains("nothing in the suite"));
        assert!(report
            .junit_testsuite()
            .to_string()
            .contains("<skipped message=\"claims none\"/>"));
    }
}
