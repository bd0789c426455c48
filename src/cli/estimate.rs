//! `ctxgate estimate`: tokens per message and in total (SPEC §3), the exact
//! body bytes (SPEC §2), and whether the reference would compact.

use std::io::{self, BufRead, BufReader, BufWriter, Write as _};
use std::path::Path;

use clap::builder::PossibleValuesParser;
use ctxgate::estimate::{self, table, Estimator};
use ctxgate::WireFormat;

use super::common::{print_json, write_outcome, CliError, HistoryArgs};

/// Estimate a history's tokens, per message and in total, and its exact body bytes.
///
/// Without --json: a table (index, role, tokens, preview) and a footer with
/// the total, the trigger, the effective window, the body bytes against the
/// ceiling, and whether the reference compactor would compact.
///
/// The body is measured in --wire-format if given, else in the config
/// file's `wireFormat` if it sets one, else in the format the history was
/// read in.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
--json prints one object:
  {\"estimator\", \"tokens\", \"perMessage\", \"bodyBytes\", \"trigger\", \"effectiveWindow\"}

--lines reads JSON Lines of cases, {\"config\", \"messages\"} objects (what
`ctxgate gen` prints; messages in engine format unless --format), and
prints that object for each, one a line: each case under its own config
(over the defaults), --wire-format over it. Each line is one input under
--max-input-bytes: a longer one is refused, naming its line.

Exit codes: 0 ok; 2 bad usage or bad input (the message names the file,
the message index and the problem).")]
pub struct Args {
    /// The estimator: `adr-0098` counts content and the JSON of tool calls
    /// (the reference's); `content-only` counts content alone (before ADR 0098).
    #[arg(long, value_name = "NAME", default_value = "adr-0098",
          value_parser = PossibleValuesParser::new(estimate::NAMES))]
    pub estimator: String,

    /// Print the figures as one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,

    /// The input is JSON Lines of cases (`ctxgate gen`'s output): print
    /// the --json object of each, one a line. One process for thousands of
    /// cases, so other implementations of the body can be compared with
    /// this one cheaply (python/ci.sh does).
    #[arg(long, conflicts_with_all = ["config", "context_window", "threshold",
          "transport_max_body_bytes", "bytes_per_token", "keep_recent",
          "summary_max_bytes", "envelope"])]
    pub lines: bool,

    // Last: its config flags open a help heading of their own, which
    // would take in any flag declared after them.
    #[command(flatten)]
    pub history: HistoryArgs,
}

pub fn run(args: Args) -> Result<(), CliError> {
    let estimator = estimate::by_name(&args.estimator).ok_or_else(|| {
        CliError::bad_input(format!(
            "unknown estimator {:?} ({})",
            args.estimator,
            estimate::NAMES.join(", ")
        ))
    })?;
    if args.lines {
        return run_lines(&args, estimator.as_ref());
    }
    let input = args.history.load()?;
    let config = &input.config;
    let msgs = &input.doc.messages;
    if args.json {
        return print_json(&table::figures(estimator.as_ref(), config, msgs));
    }
    out!("{}", table::table(estimator.as_ref(), config, msgs));
    Ok(())
}

/// `--lines`: one `{"config", "messages"}` case a line in, its figures out.
/// Errors name the file and the line (then the message and the problem).
fn run_lines(args: &Args, estimator: &dyn Estimator) -> Result<(), CliError> {
    let (name, mut reader): (String, Box<dyn BufRead>) = match args.history.input.as_deref() {
        Some(path) if path != Path::new("-") => {
            let name = path.display().to_string();
            let file =
                ctxgate::input::open_regular(path, "the cases").map_err(|e| e.in_file(&name))?;
            (name, Box::new(BufReader::new(file)))
        }
        _ => ("stdin".to_owned(), Box::new(BufReader::new(io::stdin()))),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let cap = super::common::max_input_bytes();
    let mut line = Vec::new();
    for n in 1.. {
        // Each case is one input under the cap, as a `serve` request line
        // is: a stream of thousands of cases is fine, a line over the cap
        // is refused before it is read whole.
        let at = format!("{name}, line {n}");
        let read = ctxgate::input::read_line_capped(&mut reader, &mut line, "the case", cap);
        if !read.map_err(|e| e.in_file(&at))? {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Engine unless --format says otherwise: what `gen` prints, and no
        // guessing per line (a line's fields could hint at another format).
        let format = args.history.format.unwrap_or(WireFormat::Engine);
        let (mut config, doc) =
            ctxgate::input::read_case(&line, format).map_err(|e| e.in_file(&at))?;
        if let Some(format) = args.history.config.wire_format {
            config.wire_format = format;
        }
        let written =
            serde_json::to_writer(&mut out, &table::figures(estimator, &config, &doc.messages))
                .map_err(io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
        write_outcome(written)?;
    }
    write_outcome(out.flush())
}
