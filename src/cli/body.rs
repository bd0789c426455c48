//! `ctxgate body`: the exact request body (SPEC §2) of a history, as
//! ctxgate serialises and measures it, so that a compactor's author can
//! diff their own body measurer against it.

use std::io::Write as _;

use ctxgate::body::{body_bytes, write_body};

use super::common::{write_stdout, CliError, HistoryArgs};

/// Print the exact request body of a history: the config's envelope with
/// `messages` (and, for anthropic, `system`) in the wire format.
///
/// stdout gets the body — compact JSON, the very bytes `body-under-ceiling`,
/// `session-never-overflows` and `estimate`'s bodyBytes measure — then one
/// newline, which is not part of the body. stderr gets its size and format.
///
/// The body is in --wire-format if given, else the config file's
/// `wireFormat` if it sets one, else the format the history was read in.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Example: ctxgate body --wire-format anthropic history.json > body.json
  then compare with your own serialiser, e.g. `cmp body.json mine.json`
  (print yours without a trailing newline, or strip ours: `head -c -1`).

Exit codes: 0 ok; 2 bad usage or bad input (the message names the file,
the message index and the problem).")]
pub struct Args {
    #[command(flatten)]
    pub history: HistoryArgs,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let input = args.history.load()?;
    let config = &input.config;
    let msgs = &input.doc.messages;
    // Written as it is made (`body::write_body`): the body of a big
    // history is never held whole; its size is what was written.
    let mut size = 0;
    write_stdout(|out| {
        size = write_body(config, msgs, &mut *out)?;
        out.write_all(b"\n")
    })?;
    errln!(
        "ctxgate body: {size} bytes of {} body (ceiling {})",
        config.wire_format,
        config.transport_max_body_bytes
    );
    let measured = body_bytes(config, msgs);
    if measured != size {
        // Never expected: body_bytes counts what this serialisation writes.
        errln!(
            "ctxgate body: warning: ctxgate's size count says {measured} bytes for this body; please report this history"
        );
    }
    Ok(())
}
