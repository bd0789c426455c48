//! `ctxgate serve`: speak the subject protocol (SPEC §6) on stdin and
//! stdout as the reference compactor.

use std::io;

use clap::Args as ClapArgs;

use super::common::Failure;
use ctxgate::subject::defects::Defect;
use ctxgate::subject::{InProcess, Subject};

#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Serve one of the mutation suite's defective compactors instead of
    /// the reference (for testing ctxgate itself)
    #[arg(long, value_name = "NAME", hide = true)]
    pub defect: Option<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let mut subject: Box<dyn Subject> = match &args.defect {
        None => Box::new(InProcess::reference()),
        Some(name) => Box::new(
            Defect::parse(name)
                .ok_or_else(|| Failure::bad_input(format!("unknown defect {name:?}")))?
                .subject(),
        ),
    };
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    let cap = usize::try_from(super::common::max_input_bytes()).unwrap_or(usize::MAX);
    super::common::write_outcome(ctxgate::subject::serve(
        subject.as_mut(),
        stdin,
        stdout,
        cap,
    ))
}
