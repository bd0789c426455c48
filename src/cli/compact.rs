//! `ctxgate compact`: compact one history with the reference compactor
//! (SPEC §4) and print the result in the input's shape and format.

use std::io::{self, IsTerminal, Write};

use ctxgate::body::body_bytes;
use ctxgate::estimate::{Adr0098, Estimator};
use ctxgate::{CompactError, Config, Message};

use super::common::{group, write_stdout, CliError, HistoryArgs};

/// Compact one history with the reference compactor (ADR 0098, hardened).
///
/// Prints the result on stdout as compact JSON, in the input's shape (an
/// array, or the object with its other fields kept) and wire format. A
/// history under the trigger and under the ceiling comes back unchanged.
///
/// The body is measured in --wire-format if given, else in the config
/// file's `wireFormat` if it sets one, else in the format the history was
/// read in.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit codes:
  0  the compacted history is on stdout
  1  cannot_fit: even the head, the pinned messages and the last iteration,
     with no summary, are over transportMaxBodyBytes (the bytes needed and
     the ceiling are on stderr; nothing on stdout)
  2  bad usage or bad input (the message names the file, the message index
     and the problem)")]
pub struct Args {
    /// Print a summary line on stderr (messages, body bytes, ceiling) even
    /// when stderr is not a terminal.
    #[arg(short, long)]
    pub verbose: bool,

    // Last: its config flags open a help heading of their own, which
    // would take in any flag declared after them.
    #[command(flatten)]
    pub history: HistoryArgs,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let input = args.history.load()?;
    let config = &input.config;
    let before = &input.doc.messages;
    let reference = ctxgate::reference::Reference::default();
    let after = match reference.compact_cow(config, before) {
        Ok(after) => after,
        Err(e @ CompactError::CannotFit { needed, .. }) => {
            return Err(CliError::failed(format!("{}: {e}", input.name)).with_hint(format!(
                "raise --transport-max-body-bytes to at least {needed}, or shorten the last iteration"
            )));
        }
        Err(CompactError::InvalidInput(e)) => return Err(e.in_file(input.name).into()),
    };
    if args.verbose || io::stderr().is_terminal() {
        let line = summary_line(config, before, &after);
        errln!("ctxgate: {line}");
    }
    write_stdout(|out| {
        input.doc.write_with(&after, &mut *out)?;
        out.write_all(b"\n")
    })
}

/// Messages, body bytes and estimate before → after, with the ceiling and trigger.
fn summary_line(config: &Config, before: &[Message], after: &[Message]) -> String {
    let bytes = |m: &[Message]| group(body_bytes(config, m));
    let tokens = |m: &[Message]| group(Adr0098.tokens(&mut m.iter(), config));
    let limits = format!(
        "ceiling {} bytes ({}), trigger {} tokens",
        group(config.transport_max_body_bytes),
        config.wire_format,
        group(config.trigger())
    );
    if before == after {
        format!(
            "unchanged: {} messages, body {} bytes, estimate {} tokens; {limits}",
            before.len(),
            bytes(before),
            tokens(before)
        )
    } else {
        format!(
            "compacted {} → {} messages, body {} → {} bytes, estimate {} → {} tokens; {limits}",
            before.len(),
            after.len(),
            bytes(before),
            bytes(after),
            tokens(before),
            tokens(after)
        )
    }
}
