//! `ctxgate gen`: print generated cases, one `{"config", "messages"}` JSON
//! object a line (engine format), so people and other tools can see what
//! is explored; `--stats` prints the coverage of those cases instead.

use std::io::Write;

use clap::Args as ClapArgs;

use super::common::{write_outcome, Failure};
use ctxgate::generate::{case_from_seed, Coverage, GenConfig};

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
}

pub fn run(args: Args) -> Result<(), Failure> {
    let mut gen = GenConfig::default();
    if !args.exact_numbers {
        gen.exotic_numbers_percent = 0;
    }
    if args.stats {
        let mut coverage = Coverage::default();
        for i in 0..args.cases {
            let case = case_from_seed(args.seed, i, &gen);
            coverage.record_case(&case);
            let result = ctxgate::reference::compact(&case.config, &case.messages);
            coverage.record_result(
                result.as_ref().is_ok_and(|o| *o != case.messages),
                matches!(result, Err(ctxgate::CompactError::CannotFit { .. })),
            );
        }
        print!("{coverage}");
        return Ok(());
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = (|| {
        for i in 0..args.cases {
            let case = case_from_seed(args.seed, i, &gen);
            serde_json::to_writer(&mut out, &case.to_json())?;
            out.write_all(b"\n")?;
        }
        out.flush()
    })();
    write_outcome(written)
}
