//! `ctxgate check --baseline CMD`: start the baseline like the subject
//! (`--jobs` × `--lanes` handles, the same timeout and line cap), run the
//! comparison (`ctxgate::baseline`), print the report, and exit as the
//! gate says (`--fail-on`).

use super::check::{
    progress_printer, with_suite_parts, write_also, AlsoReports, Args, FailOnArg, ReportKind,
    SuiteParts,
};
use super::common::Failure;
use super::subject::SubjectArgs;
use ctxgate::baseline::report::{self, Hints};
use ctxgate::baseline::suite::SuiteGate;
use ctxgate::baseline::{BaselineReport, FailOn};
use ctxgate::check::CheckOptions;
use ctxgate::fixture::Fixture;
use ctxgate::report::ReplayHint;
use ctxgate::subject::Subject;

pub fn run(
    args: &Args,
    cmd: &str,
    mut subjects: Vec<Box<dyn Subject + Send>>,
    opts: &CheckOptions,
    (jobs, suite): (usize, Option<SuiteFixtures<'_>>),
    out_file: Option<super::common::ReportFile>,
    also: AlsoReports,
) -> Result<(), Failure> {
    let side = SubjectArgs {
        subject: Some(cmd.to_owned()),
        timeout: args.subject.timeout,
        max_line_bytes: args.subject.max_line_bytes,
        defect: None,
        estimator: None,
        command: Vec::new(),
    };
    let mut baselines = side.open_jobs(jobs, args.lanes).map_err(|f| Failure {
        message: format!(
            "--baseline: {}",
            f.message.replacen("subject", "baseline", 1)
        ),
        ..f
    })?;
    // An in-process subject is one handle per job; the baseline has
    // lanes: one more in-process subject per lane, so each lane has a worker.
    while subjects.len() < baselines.len() && !args.subject.is_external() {
        subjects.push(args.subject.open()?);
    }
    let workers = subjects.len().min(baselines.len());
    subjects.truncate(workers);
    baselines.truncate(workers);
    let fail_on = match args.fail_on {
        None | Some(FailOnArg::Regressions) => FailOn::Regressions,
        Some(FailOnArg::AnyFailure) => FailOn::AnyFailure,
        Some(FailOnArg::Never) => FailOn::Never,
    };
    eprintln!(
        "ctxgate check: subject {} {} against baseline {} {}, seed {}, up to {} cases{}",
        subjects[0].info().name,
        subjects[0].info().version,
        baselines[0].info().name,
        baselines[0].info().version,
        opts.seed,
        opts.cases,
        opts.time
            .map(|t| format!(" or {:.0} s", t.as_secs_f64()))
            .unwrap_or_default()
    );
    // The suite first, on both sides, fixture by fixture.
    let suite = suite.map(|(dir, fixtures)| {
        eprintln!(
            "ctxgate check: the suite {} first, on both sides ({} fixture(s))",
            dir.display(),
            fixtures.len()
        );
        let subject = ctxgate::suite::run(subjects[0].as_mut(), dir, fixtures.clone());
        let baseline = ctxgate::suite::run(baselines[0].as_mut(), dir, fixtures);
        SuiteGate::new(subject, baseline).expect("both sides ran the same fixtures")
    });
    let mut progress = progress_printer(opts.cases);
    let r = ctxgate::baseline::run_parallel(
        &mut subjects,
        &mut baselines,
        opts,
        fail_on,
        &mut progress,
    );
    drop(progress);
    let hints = Hints {
        subject: ReplayHint {
            subject: args.subject.shown(),
        },
        baseline: ReplayHint {
            subject: Some(cmd.to_owned()),
        },
    };
    let render_as = |kind| render(&r, suite.as_ref(), &hints, kind);
    let rendered = render_as(args.report);
    let mut write_error = write_also(also, render_as);
    match (&args.out, out_file) {
        (Some(path), Some(file)) => {
            if let Err(e) = file.write(&rendered) {
                write_error = Some(format!("{}: cannot write the report: {e}", path.display()));
            }
            print!("{}", render_as(ReportKind::Human));
        }
        _ => print!("{rendered}"),
    }
    if let Some(e) = &write_error {
        eprintln!("ctxgate: ERROR: {e}");
    }
    let why = gate_failures(&r, suite.as_ref());
    if why.is_empty() {
        return match write_error {
            Some(e) => Err(Failure::bad_input(e)),
            None => Ok(()),
        };
    }
    Err(Failure::failed(format!(
        "{} (seed {})",
        why.join("; "),
        r.seed
    )))
}

/// The suite a gate replays: its folder and its fixtures, parsed.
pub(super) type SuiteFixtures<'a> = (&'a std::path::PathBuf, Vec<(std::path::PathBuf, Fixture)>);

/// Why the gate fails: the suite's reasons, then the generated cases'.
pub(super) fn gate_failures(r: &BaselineReport, suite: Option<&SuiteGate>) -> Vec<String> {
    let mut why: Vec<String> = suite.map(|s| s.problems(r.fail_on)).unwrap_or_default();
    why.extend(r.gate_failures());
    why
}

/// The gate's report in the form asked for, with the suite's comparison in
/// it when there is one: the human and Markdown forms open with it, the
/// JSON report gains a `suite` member, JUnit a `<testsuite>` of its own.
pub(super) fn render(
    r: &BaselineReport,
    suite: Option<&SuiteGate>,
    hints: &Hints,
    kind: ReportKind,
) -> String {
    let json = || report::to_json(r, hints);
    let rendered = match kind {
        ReportKind::Human => report::human(r, hints),
        ReportKind::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&json()).expect("serialises")
        ),
        ReportKind::Junit => report::junit(r, hints),
        ReportKind::Markdown => report::markdown(r, hints),
    };
    match suite {
        None => rendered,
        Some(s) => {
            let parts = SuiteParts {
                human: s.human(),
                markdown: s.markdown(),
                json: s.to_json(),
                junit: s.junit_testsuite(r.fail_on),
                problems: s.problems(r.fail_on),
            };
            with_suite_parts(rendered, json, kind, &parts)
        }
    }
}
