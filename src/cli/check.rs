//! `ctxgate check`: generate histories, run the subject, check the
//! invariants, shrink each failure to a minimal history, save it as a
//! fixture, report.

use std::path::PathBuf;

use clap::{Args as ClapArgs, ValueEnum};

use super::common::CliError;
use super::subject::SubjectArgs;
use ctxgate::baseline::report::Hints;
use ctxgate::baseline::FailOn;
use ctxgate::check::{CheckOptions, Shard};
use ctxgate::oracle::InvariantSet;
use ctxgate::report::render::Outcome;
use ctxgate::report::ReplayHint;
use ctxgate::run::progress;
use ctxgate::subject::Subject;

/// Which JSON numbers the subject is sent (`model::value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Numbers {
    /// Exotic spellings (`1.50`, 2^64, `1e400`) only if the subject's hello
    /// says `"numbers": "exact"`
    Auto,
    /// Only numbers every mainstream JSON library writes back unchanged
    Portable,
    /// Also numbers that stock JSON libraries re-spell or round
    Exact,
}

#[derive(Debug, ClapArgs)]
pub struct Args {
    #[command(flatten)]
    pub subject: SubjectArgs,

    /// How many generated cases to run
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub cases: u64,

    /// Stop after this many seconds, whatever --cases says
    #[arg(long, value_name = "SECS")]
    pub time: Option<f64>,

    /// The generator's seed [default: random; always printed]
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,

    /// Comma-separated invariant names to check (SPEC §5), of those the
    /// subject claims: one it does not claim is not checked, and a warning
    /// says so (--claim judges it) [default: all the subject claims]
    #[arg(long, value_name = "LIST")]
    pub invariants: Option<String>,

    /// Also judge these invariants, which the subject does not claim: an
    /// exploration beyond its claims (the names --invariants takes,
    /// extensions included; repeat the flag or list them with commas).
    /// Every report form names them, and a failure of one is a finding
    /// beyond what the subject promises — it fails the run (exit 1) like
    /// any other, since it was asked for. A name the subject claims is
    /// checked as a claim; one it cannot be judged on (an estimate
    /// invariant of a subject without `estimate`) is bad usage (exit 2).
    /// `all` is every invariant of a default run the subject can be judged
    /// on (those it cannot are passed over in a note), and the names
    /// beside it; `--list-invariants` lists the names
    #[arg(long, value_name = "INV[,INV…]", conflicts_with = "baseline")]
    pub claim: Vec<String>,

    /// Print the built-in defective compactors (for `--defect NAME`), one
    /// a line with what each breaks, and exit
    #[arg(long)]
    pub list_defects: bool,

    /// Print the invariants `--invariants` and `--claim` take (SPEC §5's
    /// fourteen, then the extensions), one a line with what each checks
    /// and the op it is judged on, and exit
    #[arg(long)]
    pub list_invariants: bool,

    /// Folder where each failure's minimal case is saved as a fixture
    #[arg(long, value_name = "DIR", default_value = "ctxgate-failures")]
    pub save: PathBuf,

    /// Keep (and save) up to N failures of each invariant, distinct by the
    /// shape of their minimal case — its roles, pins, parts and tool-call
    /// structure, the config knobs it needs, the violation's wording
    /// (docs/reports.md). Only a failure of a class not seen before (its
    /// wording, wire format, images, pins and answer) is shrunk, at most
    /// 1 + 4×(N−1) an invariant; 1 keeps the first failure alone
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = ranged(64))]
    pub save_distinct: usize,

    /// At most this many subject runs to shrink one failure
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub shrink_runs: usize,

    /// How many subjects to run at once, each a process of its own (or an
    /// instance of the built-in reference), cases dealt to whichever is
    /// free; the same seed gives the same report whatever N is
    /// [default: the machine's available parallelism]
    #[arg(long, value_name = "N", value_parser = ranged(256))]
    pub jobs: Option<usize>,

    /// How many workers share each subject process (an external subject's
    /// requests from one batch of one case at a time each): while one
    /// judges an answer, the subject works on another's request
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = ranged(16))]
    pub lanes: usize,

    /// Run one deterministic 1/N of the seed's cases (those whose index is
    /// K-1 modulo N), for a CI matrix; `ctxgate report merge` joins the
    /// shards' JSON reports
    #[arg(long, value_name = "K/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,

    /// Run only case N of the seed (its index as a report cites it), to
    /// rerun one case with the same seed and subject
    #[arg(long, value_name = "N", conflicts_with = "shard")]
    pub case: Option<u64>,

    /// Replay every fixture under DIR (SPEC §7; e.g. suites/known-bugs)
    /// against the subject before the generated cases: a fixture that fails
    /// fails the gate like a generated case (exit 1), and its outcome is in
    /// every report form. With --shard, shard 1 runs it; with --baseline,
    /// both sides do, and only a fixture the baseline does not fail is a
    /// regression
    #[arg(long, value_name = "DIR")]
    pub with_suite: Option<PathBuf>,

    /// The gate on a change: compare with a baseline — e.g. the compactor
    /// before the change — started like --subject (one string, split as a
    /// shell splits words) and sent exactly the same cases. A failure the
    /// baseline does not share is a regression, one it shares is known, one
    /// only the baseline has is a fix; every report form says which
    #[arg(long, value_name = "CMD", conflicts_with = "transport")]
    pub baseline: Option<String>,

    /// With --baseline, what fails the gate (exit 1): `regressions`, or
    /// `any-failure` of the subject (known ones too), or `never`. A run that
    /// compared nothing fails whatever this says [default: regressions]
    #[arg(long, value_enum, value_name = "WHAT", requires = "baseline")]
    pub fail_on: Option<FailOn>,

    /// Which JSON numbers to send: `portable` ones every stock JSON library
    /// writes back unchanged, or also `exact`-preservation ones (`1.50`,
    /// 2^64, `1e400`) [default: auto, as the subject's hello claims]
    #[arg(long, value_enum, default_value_t = Numbers::Auto)]
    pub numbers: Numbers,

    /// Every case runs under this config (the generated ones are not used;
    /// the generator aims a share of its histories at its trigger and
    /// ceiling, and shrinking keeps it). For a compactor that ignores the
    /// config it is sent, give its own constants (docs/protocol.md §6)
    #[command(flatten)]
    pub reports: super::output::ReportArgs,

    #[command(flatten)]
    pub config: super::common::ConfigArgs,

    #[command(flatten)]
    pub transport: super::transport::TransportArgs,

    #[command(flatten)]
    pub sources: super::check_sources::SourceArgs,
}

/// A count flag from 1 to `max`.
fn ranged(max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=max)
}

pub fn run_check(args: Args) -> Result<(), CliError> {
    if args.list_defects {
        out!("{}", ctxgate::subject::defects::Defect::list());
        return Ok(());
    }
    if args.list_invariants {
        out!("{}", ctxgate::oracle::invariant_list());
        return Ok(());
    }
    let invariants = match &args.invariants {
        None => InvariantSet::default_run(),
        Some(list) => InvariantSet::parse_list(list).map_err(CliError::bad_input)?,
    };
    if invariants.is_empty() {
        return Err(CliError::bad_input(
            "--invariants names no invariant: a run that checks nothing cannot pass",
        )
        .with_hint("leave --invariants out to check every invariant the subject claims, or name some (`ctxgate check --list-invariants` lists them)"));
    }
    let explore = match args.claim.is_empty() {
        true => InvariantSet::empty(),
        false => InvariantSet::parse_list(&args.claim.join(","))
            .map_err(|e| CliError::bad_input(format!("--claim: {e}")))?,
    };
    if !args.claim.is_empty() && explore.is_empty() {
        return Err(CliError::bad_input(
            "--claim names no invariant: name those to judge beyond the subject's claims",
        ));
    }
    if args.cases == 0 {
        return Err(CliError::bad_input(
            "--cases 0 runs no case: a run that checks nothing cannot pass",
        ));
    }
    let time = (args.time.map(|t| super::common::seconds("--time", t))).transpose()?;
    if args.case.is_some() && args.seed.is_none() {
        return Err(CliError::bad_input(
            "--case N needs the run's --seed: a case index means nothing under a new random seed",
        )
        .with_hint("the seed is in the report's first line, and in its last"));
    }
    // Where the results go is settled before any work is done: a report
    // or a fixture that cannot be written, or that would be written over
    // one of the run's inputs, is bad usage now, not a lost run.
    let files = super::files::RunFiles::new()
        .input("--config", args.config.config.as_deref())
        .envelope(args.config.envelope.as_deref())
        .input("--gen-config", args.sources.gen_config.as_deref())
        .folder(
            "--corpus",
            args.sources.corpus.as_deref(),
            &["json", "jsonl"],
        )
        .folder("--with-suite", args.with_suite.as_deref(), &["json"])
        .command("--subject", &args.subject.words());
    args.reports.files(files).check()?;
    let reports = args.reports.open()?;
    ctxgate::fixture::check_save_dir(&args.save).map_err(|e| {
        CliError::bad_input(format!(
            "{}: cannot save fixtures there (--save): {e}",
            args.save.display()
        ))
    })?;
    let (cases, shard) = match args.case.map(Shard::alone_case) {
        Some(None) => return Err(CliError::bad_input("--case is too large")),
        Some(Some(alone)) => (alone.n, Some(alone)),
        None => (args.cases, args.shard),
    };
    // `--wire-format` alone pins the format, not the whole config.
    let pinned_format = args.config.only_wire_format();
    let fixed = match args.config.given() && pinned_format.is_none() {
        true => Some(args.config.resolve(ctxgate::WireFormat::Engine)?),
        false => None,
    };
    let live = args.transport.open(fixed.as_ref())?;
    let sources = args.sources.resolve(fixed.as_ref())?;
    // The suite is parsed before anything runs: a broken fixture is bad
    // input. Only shard 1 replays it, so only shard 1 reads it.
    let suite = match &args.with_suite {
        Some(dir) if shard.is_none_or(|s| s.k == 1) => {
            let loaded = ctxgate::suite::load(dir, super::common::max_input_bytes())?;
            super::common::show_notes(&loaded.notes);
            Some(std::sync::Arc::new(loaded.suite))
        }
        _ => None,
    };
    let mut opts = CheckOptions {
        cases,
        time,
        seed: args.seed.unwrap_or_else(ctxgate::run::random_seed),
        invariants,
        explore,
        distinct: args.save_distinct,
        save: Some(args.save.clone()),
        shrink_runs: args.shrink_runs,
        shard,
        exact_numbers: match args.numbers {
            Numbers::Auto => None,
            Numbers::Portable => Some(false),
            Numbers::Exact => Some(true),
        },
        config: fixed,
        suite,
        gen: sources.gen,
        source: sources.source,
        ..CheckOptions::default()
    };
    if let Some(f) = pinned_format {
        opts.wire_formats = ctxgate::WireFormats::of(&[f]);
        opts.gen = opts.gen.in_formats(opts.wire_formats);
    }
    let jobs = opts.workers(args.jobs);
    let subjects = args.subject.open_jobs(jobs, args.lanes)?;
    if args.subject.is_external() && !ctxgate::subject::reaper::is_subreaper() {
        errln!(
            "ctxgate: note: this system has no child subreaper, so an orphan that left the subject's process group and dropped its CTXGATE_SUBJECT variable cannot be found and killed"
        );
    }
    claims_against(&args, subjects[0].info(), &opts)?;
    let declared = subjects[0].info().wire_formats;
    if opts.wire_formats.intersect(declared).is_empty() {
        return Err(CliError::bad_input(format!(
            "--wire-format {}: the subject measures its body in {declared} only (its hello's `wireFormats`)",
            opts.wire_formats
        )));
    }
    if let Some(cmd) = &args.baseline {
        let outcome = run_gate(&args, cmd, subjects, &opts, jobs)?;
        let write_error = reports.write(args.reports.report, &outcome, "");
        return super::output::exit(&outcome, write_error, None, "");
    }
    let live_url = live.as_ref().map(|l| l.url());
    errln!(
        "{}",
        progress::banner(subjects[0].info(), None, &opts, live_url)
    );
    // The suite's fixtures keep their own configs: only the generated
    // cases, under the endpoint's ceiling, go to the live endpoint
    // (`Suite::run` hides it).
    let mut subjects: Vec<_> = match &live {
        Some(live) => subjects.into_iter().map(|s| live.wrap(s)).collect(),
        None => subjects,
    };
    let mut progress = progress::printer(opts.run_cases());
    let report = ctxgate::check::run_parallel(&mut subjects, &opts, &mut progress);
    drop(progress);
    let outcome = Outcome::Check {
        report,
        hint: args.subject.replay_hint(),
    };
    let (extra, more) = live.map_or((String::new(), None), |l| super::transport::finish(&l));
    let write_error = reports.write(args.reports.report, &outcome, &extra);
    // The report is out; the subjects get their exit grace side by side.
    ctxgate::subject::end_all(subjects);
    super::output::exit(&outcome, write_error, more, "")
}

/// What the subject claims, against what the run asks: each invariant
/// `--invariants` names but the subject does not claim is a warning (it is
/// not checked; `--claim` judges it), each `--claim` it claims already a
/// note, and a `--claim` it cannot be judged on bad usage.
fn claims_against(
    args: &Args,
    info: &ctxgate::subject::SubjectInfo,
    opts: &CheckOptions,
) -> Result<(), CliError> {
    let name = ctxgate::model::one_line(&info.name);
    for note in &info.hello_notes {
        errln!(
            "ctxgate: note: the subject \"{name}\"'s hello: {}",
            ctxgate::model::one_line(note)
        );
    }
    let claimed = info.claimed();
    // `--claim all` asks for what can be judged: the invariants it brings
    // that the subject cannot be judged on, or claims already, are passed
    // over in one note; those named are each told.
    let list = args.claim.join(",");
    let named = list
        .split(',')
        .filter(|n| n.trim() != "all")
        .collect::<Vec<_>>()
        .join(",");
    let named = InvariantSet::parse_list(&named).unwrap_or_else(|_| InvariantSet::empty());
    let mut passed_over = vec![];
    for inv in opts.explore.iter() {
        if let Some(why) = info.unjudgeable(inv) {
            if !named.contains(inv) {
                passed_over.push(format!("{inv} ({why})"));
                continue;
            }
            return Err(CliError::bad_input(format!(
                "--claim {inv}: the subject \"{name}\" cannot be judged on it: {why}"
            )));
        }
        if claimed.contains(inv) && named.contains(inv) {
            errln!("ctxgate: note: --claim {inv}: the subject \"{name}\" claims it already; it is checked as a claim");
        }
    }
    if !passed_over.is_empty() {
        errln!(
            "ctxgate: note: --claim all: the subject \"{name}\" cannot be judged on {}; they are not checked",
            passed_over.join(", ")
        );
    }
    // `--invariants all` (or none) asks for every claim, naming none.
    let named = args
        .invariants
        .as_deref()
        .filter(|list| !list.split(',').any(|n| n.trim() == "all"));
    if named.is_none() {
        return Ok(());
    }
    for inv in opts.invariants.minus(claimed).minus(opts.explore).iter() {
        let why = info.why_unclaimed(inv);
        let hint = match info.unjudgeable(inv) {
            Some(_) => "it cannot be judged on this subject".to_owned(),
            None => {
                format!("`--claim {inv}` judges it anyway, as an exploration beyond the claims")
            }
        };
        errln!(
            "ctxgate: warning: --invariants names {inv}, which the subject \"{name}\" does not claim ({why}): it is not checked; {hint}"
        );
    }
    Ok(())
}

/// `check --baseline CMD`: start the baseline like the subject (`--jobs` ×
/// `--lanes` handles, the same timeout and line cap), run the comparison
/// (`ctxgate::baseline`) with the suite first on both sides.
fn run_gate(
    args: &Args,
    cmd: &str,
    mut subjects: Vec<Box<dyn Subject + Send>>,
    opts: &CheckOptions,
    jobs: usize,
) -> Result<Outcome, CliError> {
    let mut baselines = args
        .subject
        .program(cmd)
        .open_jobs(jobs, args.lanes)
        .map_err(|f| CliError {
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
    let (subject, baseline) = (subjects[0].info(), baselines[0].info());
    errln!("{}", progress::banner(subject, Some(baseline), opts, None));
    let mut progress = progress::printer(opts.run_cases());
    let fail_on = args.fail_on.unwrap_or_default();
    let report = ctxgate::baseline::run_parallel(
        &mut subjects,
        &mut baselines,
        opts,
        fail_on,
        &mut progress,
    );
    drop(progress);
    ctxgate::subject::end_all(subjects.into_iter().chain(baselines));
    Ok(Outcome::Gate {
        report,
        hints: Hints {
            subject: args.subject.replay_hint(),
            baseline: ReplayHint::subject(cmd),
        },
    })
}
