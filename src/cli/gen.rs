//! `ctxgate gen`: print generated cases, one `{"config", "messages"}` JSON
//! object a line (engine format), so people and other tools can see what
//! is explored; `--stats` prints the coverage of those cases instead.

use std::io::Write;
use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::common::{max_input_bytes, write_stdout, CliError};
use ctxgate::check::CheckOptions;
use ctxgate::generate::{Coverage, GenConfig};
use ctxgate::input::config::{read_gen_config, read_valid_config};
use ctxgate::run::case_at;

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The generator's seed
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,

    /// How many cases
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub cases: u64,

    /// Print the coverage statistics of the cases instead of the cases
    #[arg(long)]
    pub stats: bool,

    /// Also write, in a share of the cases, numbers that stock JSON
    /// libraries re-spell or round (`1.50`, 2^64, `1e400`), as `check`
    /// does for a subject whose hello says `"numbers": "exact"`
    /// [default: only portable numbers]
    #[arg(long)]
    pub exact_numbers: bool,

    /// Every case has exactly this config (a SPEC §2 JSON object, fields
    /// left out at their defaults): the user's production values; the
    /// boundary share of cases sits on its trigger or its ceiling
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Generator settings: a GenConfig JSON object, every field optional
    /// (`--print-gen-config` prints them all with their defaults)
    #[arg(long, value_name = "FILE")]
    pub gen_config: Option<PathBuf>,

    /// Print the default GenConfig as JSON and exit
    #[arg(long)]
    pub print_gen_config: bool,
}

pub fn run(args: Args) -> Result<(), CliError> {
    if args.print_gen_config {
        let text =
            serde_json::to_string_pretty(&GenConfig::default().to_json()).expect("serialises");
        outln!("{text}");
        return Ok(());
    }
    let mut gen = match &args.gen_config {
        Some(path) => read_gen_config(path, max_input_bytes())?,
        None => GenConfig::default(),
    };
    if !args.exact_numbers {
        gen.exotic_numbers_percent = 0;
    }
    let fixed = match &args.config {
        Some(path) => Some(read_valid_config(path, max_input_bytes())?),
        None => None,
    };
    let opts = CheckOptions {
        seed: args.seed,
        gen,
        config: fixed,
        ..CheckOptions::default()
    };
    let case_at = |i: u64| case_at(&opts, i);
    if args.stats {
        let mut coverage = Coverage::default();
        for i in 0..args.cases {
            let case = case_at(i);
            coverage.record_case(&case);
            let result = ctxgate::reference::compact(&case.config, &case.messages);
            coverage.record_answer(
                &case.messages,
                result.as_deref().ok(),
                matches!(result, Err(ctxgate::CompactError::CannotFit { .. })),
            );
        }
        out!("{coverage}");
        return Ok(());
    }
    write_stdout(|out| {
        for i in 0..args.cases {
            serde_json::to_writer(&mut *out, &case_at(i).to_json())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}
