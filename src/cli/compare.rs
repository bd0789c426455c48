//! `ctxgate compare-estimators`: two or more estimators side by side
//! (SPEC §8, issue 14). Thin: the run, the table, the markdown, the JSON,
//! the picture and the gate are `ctxgate::compare`'s. The one thing done
//! here is keeping `--subject` and `--builtin` in command-line order (the
//! first is the baseline of `--fail-if-worse`), which clap's derive would
//! lose: the flags are parsed by [`Flags`], their order read from the
//! matches.

use std::path::PathBuf;

use clap::{ArgMatches, FromArgMatches};

use super::common::CliError;

/// Compare token estimators: accuracy against real tokenizers, the ADR floor, speed.
///
/// Each estimator is a protocol subject with the `estimate` op (any
/// language: `--subject CMD`) or a built-in (`--builtin NAME`: adr-0098,
/// content-only, safe-classwise, tiktoken-cl100k, tiktoken-o200k). All get
/// the same inputs: calibrate's generated content classes and images, the
/// real histories of --corpus, and generated ToolLoop histories. Per estimator
/// and set: mean and worst estimate ÷ real tokens (cl100k_base and
/// o200k_base), the share of histories below real, histories below the ADR
/// floor (the serialised toolCalls, judged as `check` does), estimate-monotone
/// violations, perMessage figures below real, and speed through the
/// protocol, with `ctxgate serve` on the same requests as the protocol's
/// own cost.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The first estimator is the baseline: --fail-if-worse exits 1 when a later
one is below real tokens more often on any set, below the ADR floor at all,
or more than --max-slowdown times slower through the protocol.
docs/estimators.md walks through a comparison.

Exit codes: 0 ok; 1 --fail-if-worse found a worse estimator, or a subject
failed during the run; 2 bad usage or bad input (fewer than two estimators,
an unknown built-in, a subject without the estimate op, an empty corpus).")]
pub struct Flags {
    /// A protocol subject whose `estimate` op is compared: one string, a
    /// program and its arguments, split as a POSIX shell splits words.
    /// Repeatable; order counts (the first is the baseline)
    #[arg(long, value_name = "CMD")]
    pub subject: Vec<String>,

    /// A built-in estimator (adr-0098, content-only, safe-classwise,
    /// tiktoken-cl100k, tiktoken-o200k). Repeatable; order counts
    #[arg(long, value_name = "NAME")]
    pub builtin: Vec<String>,

    #[command(flatten)]
    pub corpus: super::common::CorpusArg,

    /// Print one JSON object instead of the table
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,

    /// Print markdown (for a pull-request comment) instead of the table
    #[arg(long)]
    pub markdown: bool,

    /// Also draw estimate ÷ real per set, a box per estimator, to this SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Exit 1 when a later estimator is worse than the first (see below)
    #[arg(long)]
    pub fail_if_worse: bool,

    /// With --fail-if-worse: the largest accepted ratio of a later
    /// estimator's time to the first's, through the protocol
    #[arg(long, value_name = "R", default_value_t = 2.0)]
    pub max_slowdown: f64,

    /// Seed of the generated content-class samples [default: 152, i.e. 0x98]
    #[arg(long)]
    pub seed: Option<u64>,

    /// Generated samples per content class [default: 250]
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,

    /// Generated ToolLoop histories (seed 98) [default: 100]
    #[arg(long, value_name = "N")]
    pub toolloop: Option<usize>,

    /// Timed passes over the inputs; each batch's fastest round counts
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100))]
    pub rounds: usize,

    /// The bytesPerToken every estimate request's config carries
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    pub bytes_per_token: u64,

    /// Seconds a subject may take to answer one request
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,
}

/// The flags, with the estimators in command-line order.
#[derive(Debug)]
pub struct Args {
    /// `(is a subject, the value)`, in the order given.
    pub estimators: Vec<(bool, String)>,
    pub flags: Flags,
}

impl FromArgMatches for Args {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let flags = Flags::from_arg_matches(m)?;
        let mut order: Vec<(usize, bool, String)> = Vec::new();
        for (id, is_subject) in [("subject", true), ("builtin", false)] {
            if let (Some(at), Some(values)) = (m.indices_of(id), m.get_many::<String>(id)) {
                order.extend(at.zip(values).map(|(i, v)| (i, is_subject, v.clone())));
            }
        }
        order.sort_by_key(|(i, ..)| *i);
        Ok(Args {
            estimators: order.into_iter().map(|(_, s, v)| (s, v)).collect(),
            flags,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Args::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for Args {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        Flags::augment_args(cmd)
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Flags::augment_args_for_update(cmd)
    }
}

#[cfg(feature = "calibrate")]
pub fn run(args: Args) -> Result<(), CliError> {
    use ctxgate::compare::{self, EstimatorSpec, Options};
    use ctxgate::subject::{ProcessOptions, ProcessSubject};

    let flags = args.flags;
    let files = super::files::RunFiles::new().output("--plot", flags.plot.as_deref());
    flags.corpus.files(files).check()?;
    if !(flags.max_slowdown.is_finite() && flags.max_slowdown >= 1.0) {
        return Err(CliError::bad_input(format!(
            "--max-slowdown must be a ratio of at least 1, found {}",
            flags.max_slowdown
        )));
    }
    let specs = args
        .estimators
        .into_iter()
        .map(|(is_subject, value)| {
            if is_subject {
                ProcessSubject::split_command(&value)
                    .map(EstimatorSpec::Subject)
                    .map_err(CliError::bad_input)
            } else {
                Ok(EstimatorSpec::Builtin(value))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut options = Options::new(specs);
    options.corpus = flags.corpus.corpus;
    options.max_input_bytes = super::common::max_input_bytes();
    if let Some(seed) = flags.seed {
        options.inputs.seed = seed;
    }
    if let Some(n) = flags.samples {
        options.inputs.samples_per_class = n;
    }
    if let Some(n) = flags.toolloop {
        options.inputs.toolloop_histories = n;
    }
    options.rounds = flags.rounds;
    options.bytes_per_token = flags.bytes_per_token;
    options.process = ProcessOptions {
        timeout: super::common::seconds("--timeout", flags.timeout)?,
        ..ProcessOptions::default()
    };
    // This very binary is the protocol's yardstick and runs the built-ins
    // through the protocol.
    options.serve = std::env::current_exe()
        .ok()
        .map(|exe| vec![exe.display().to_string(), "serve".to_owned()]);

    let comparison = compare::compare(&options).map_err(|e| {
        if e.is_usage() {
            CliError::bad_input(e.to_string())
        } else {
            CliError::failed(e.to_string())
        }
    })?;
    super::common::show_corpus(&comparison.corpus);
    if let Some(skipped) = &comparison.images_skipped {
        errln!("ctxgate: {skipped}");
    }
    if let Some(path) = &flags.plot {
        comparison
            .write_svg(path)
            .map_err(|e| CliError::bad_input(e.to_string()))?;
    }
    let failures = compare::gate(&comparison, flags.max_slowdown);
    let enforced = flags.fail_if_worse;
    if flags.json {
        let mut json = comparison.to_json();
        json["gate"] = compare::gate::to_json(&failures, flags.max_slowdown, enforced);
        super::common::print_json(&json)?;
    } else {
        let text = if flags.markdown {
            format!(
                "{}{}",
                comparison.to_markdown(),
                compare::gate::to_markdown(&failures, flags.max_slowdown, enforced)
            )
        } else {
            format!(
                "{comparison}\n{}",
                compare::gate::to_text(&failures, flags.max_slowdown, enforced)
            )
        };
        out!("{text}");
    }
    match compare::gate::problem(&failures, &comparison) {
        Some(why) if enforced => Err(CliError::failed(why)),
        _ => Ok(()),
    }
}

#[cfg(not(feature = "calibrate"))]
pub fn run(args: Args) -> Result<(), CliError> {
    let _ = (args.estimators, args.flags);
    Err(CliError::bad_input(
        "this ctxgate was built without the `calibrate` feature (no real tokenizers to compare against)",
    )
    .with_hint("rebuild with the default features: cargo build --features calibrate"))
}
