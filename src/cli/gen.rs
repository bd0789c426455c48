//! `ctxgate gen`: print generated cases, one `{"config", "messages"}` JSON
//! object a line (engine format), so people and other tools can see what
//! is explored — and round-trip them through their own message types (the
//! Python and npm packages' round-trip helpers read these lines); `--stats`
//! prints the coverage of those cases instead.

use std::io::Write;
use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::common::{max_input_bytes, write_stdout, CliError};
use ctxgate::check::CheckOptions;
use ctxgate::generate::{Coverage, GenConfig};
use ctxgate::input::config::{read_gen_config, read_valid_config};
use ctxgate::run::{case_at, text_only as text_only_case};
use ctxgate::subject::protocol::push_line_safe;

#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Output: one case a line, a JSON object {\"config\", \"messages\"} (engine
format), each line ended by \\n alone. Inside strings, U+0085, U+2028 and
U+2029 are written as the escapes \\u0085, \\u2028 and \\u2029 (the same
JSON value), as every control character is, so that each line stays one line
for any reader, Python's str.splitlines() included. A subject's requests are
written the same way.")]
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

    /// Print the cases as a subject whose hello says `"contentParts":
    /// false` is sent them: a case with images is drawn again without
    /// them (the same index, as `check` does), so no content parts are left
    #[arg(long)]
    pub text_only: bool,
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
    let text_only = args.text_only;
    let case_at = |i: u64| {
        let case = case_at(&opts, i);
        match text_only {
            // Generated cases only here: a redrawn case always comes back.
            true => text_only_case(&opts, &opts.gen, i, case).expect("a generated case"),
            false => case,
        }
    };
    if args.stats {
        let mut coverage = Coverage::default();
        if opts.config.is_some() {
            coverage.pin_config();
        }
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
    let mut line = Vec::new();
    let mut safe = Vec::new();
    write_stdout(|out| {
        for i in 0..args.cases {
            line.clear();
            safe.clear();
            serde_json::to_writer(&mut line, &case_at(i).to_json())?;
            push_line_safe(&mut safe, &line);
            safe.push(b'\n');
            out.write_all(&safe)?;
        }
        Ok(())
    })
}
