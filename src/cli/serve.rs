//! `ctxgate serve`: speak the subject protocol (SPEC §6) on stdin and
//! stdout as the reference compactor.

use std::io;

use clap::Args as ClapArgs;

use super::common::CliError;
use ctxgate::subject::defects::Defect;
use ctxgate::subject::{InProcess, Subject};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The reference's estimator, for `estimate` and for deciding when to
    /// compact (adr-0098, content-only, safe-classwise, tiktoken-cl100k,
    /// tiktoken-o200k) [default: adr-0098]
    #[arg(long, value_name = "NAME", conflicts_with = "defect")]
    pub estimator: Option<String>,

    /// Serve one of the mutation suite's defective compactors instead of
    /// the reference (for testing ctxgate itself)
    #[arg(long, value_name = "NAME", hide = true)]
    pub defect: Option<String>,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let mut subject: Box<dyn Subject> = match (&args.defect, &args.estimator) {
        (None, None) => Box::new(InProcess::reference()),
        (None, Some(name)) => Box::new(InProcess::reference_with(
            ctxgate::estimate::by_name(name).ok_or_else(|| {
                CliError::bad_input(format!(
                    "unknown estimator {name:?}; the estimators are: {}",
                    ctxgate::estimate::NAMES.join(", ")
                ))
            })?,
        )),
        (Some(name), _) => Box::new(
            Defect::parse(name)
                .ok_or_else(|| CliError::bad_input(format!("unknown defect {name:?}")))?
                .subject(),
        ),
    };
    let stdin = io::stdin().lock();
    // Serve writes its answers in batches of whole lines: no buffer
    // (stdout's own writes a batch that ends a line straight through).
    let stdout = io::stdout().lock();
    let cap = usize::try_from(super::common::max_input_bytes()).unwrap_or(usize::MAX);
    super::common::write_outcome(ctxgate::subject::serve(
        subject.as_mut(),
        stdin,
        stdout,
        cap,
    ))
}
