//! `ctxgate check --baseline CMD`: start the baseline like the subject
//! (`--jobs` × `--lanes` handles, the same timeout and line cap), run the
//! comparison (`ctxgate::baseline`), print the report, and exit as the
//! gate says (`--fail-on`).

use super::check::{progress_printer, write_also, AlsoReports, Args, FailOnArg, ReportKind};
use super::common::Failure;
use super::subject::SubjectArgs;
use ctxgate::baseline::report::{self, Hints};
use ctxgate::baseline::{BaselineReport, FailOn};
use ctxgate::check::CheckOptions;
use ctxgate::report::ReplayHint;
use ctxgate::subject::Subject;

pub fn run(
    args: &Args,
    cmd: &str,
    mut subjects: Vec<Box<dyn Subject + Send>>,
    opts: &CheckOptions,
    jobs: usize,
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
    let mut baselines = Vec::with_capacity(subjects.len());
    for _ in 0..jobs {
        baselines.extend(side.open_lanes(args.lanes).map_err(|f| Failure {
            message: format!(
                "--baseline: {}",
                f.message.replacen("subject", "baseline", 1)
            ),
            ..f
        })?);
    }
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
    let rendered = render(&r, &hints, args.report);
    let mut write_error = write_also(also, |kind| render(&r, &hints, kind));
    match (&args.out, out_file) {
        (Some(path), Some(file)) => {
            if let Err(e) = file.write(&rendered) {
                write_error = Some(format!("{}: cannot write the report: {e}", path.display()));
            }
            print!("{}", report::human(&r, &hints));
        }
        _ => print!("{rendered}"),
    }
    if let Some(e) = &write_error {
        eprintln!("ctxgate: ERROR: {e}");
    }
    let why = r.gate_failures();
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

pub(super) fn render(r: &BaselineReport, hints: &Hints, kind: ReportKind) -> String {
    match kind {
        ReportKind::Human => report::human(r, hints),
        ReportKind::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&report::to_json(r, hints)).expect("serialises")
        ),
        ReportKind::Junit => report::junit(r, hints),
        ReportKind::Markdown => report::markdown(r, hints),
    }
}
