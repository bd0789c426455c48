//! `ctxgate calibrate`: the estimators against real BPE tokenizers, per
//! content class and over real histories (SPEC §8, issue 7). Thin: the
//! run, the table, the JSON and the picture are `ctxgate::calibrate`'s.
//! Built without the `calibrate` feature, the command says so and exits 2.

use std::path::PathBuf;

use super::common::CliError;

/// Compare the estimators with the real cl100k_base and o200k_base tokenizers.
///
/// Per content class (English prose, code, JSON arguments, CJK,
/// multilingual, emoji, escape-heavy: generated, seeded) and over the real
/// histories: mean and worst estimate ÷ real, the share of samples where
/// the estimate is below the real count, and the bytesPerToken under which
/// adr-0098 covers 99% and 100% of them. Then the images set: per image
/// (icons to 4K screenshots), its base64 bytes, SPEC §3's tokens per
/// provider, and each estimator's tokens.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Real tokens count what adr-0098 counts: each message's content plus the
JSON of its toolCalls. docs/calibration.md explains the numbers.

Exit codes: 0 ok; 2 bad usage, an unreadable corpus, or a build without
the `calibrate` feature.")]
pub struct Args {
    /// Print the report as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Also draw the distribution of estimate ÷ real, per class, to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    #[command(flatten)]
    pub corpus: super::common::CorpusArg,

    /// Seed of the generated samples [default: 152, i.e. 0x98].
    #[arg(long)]
    pub seed: Option<u64>,

    /// Generated samples per content class [default: 250].
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,

    /// bytesPerToken of the content-only and adr-0098 estimates [default: 4].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub bytes_per_token: Option<u64>,
}

#[cfg(feature = "calibrate")]
pub fn run(args: Args) -> Result<(), CliError> {
    use ctxgate::calibrate::{self, CalibrateError, Options};

    let files = super::files::RunFiles::new().output("--plot", args.plot.as_deref());
    args.corpus.files(files).check()?;
    let defaults = Options::default();
    let options = Options {
        corpus: args.corpus.corpus,
        seed: args.seed.unwrap_or(defaults.seed),
        samples_per_class: args.samples.unwrap_or(defaults.samples_per_class),
        bytes_per_token: args.bytes_per_token.unwrap_or(defaults.bytes_per_token),
        max_input_bytes: super::common::max_input_bytes(),
    };
    let failure = |e: CalibrateError| CliError::bad_input(e.to_string());
    let report = calibrate::calibrate(&options).map_err(failure)?;
    super::common::show_corpus(&report.corpus);
    if let Some(path) = &args.plot {
        calibrate::write_svg(&report, path).map_err(failure)?;
    }
    if args.json {
        return super::common::print_json(&report.to_json());
    }
    outln!("{report}");
    Ok(())
}

#[cfg(not(feature = "calibrate"))]
pub fn run(_args: Args) -> Result<(), CliError> {
    Err(CliError::bad_input(
        "this ctxgate was built without the `calibrate` feature (no real tokenizers)",
    )
    .with_hint("rebuild with the default features: cargo build --features calibrate"))
}
