//! `ctxgate estimate`: tokens per message and in total (SPEC §3), the exact
//! body bytes (SPEC §2), and whether the reference would compact.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, BufWriter, Write as _};
use std::path::Path;

use clap::builder::PossibleValuesParser;
use serde_json::json;

use ctxgate::body::body_bytes;
use ctxgate::estimate::{self, Adr0098, Estimator};
use ctxgate::{Config, Document, Message, Role, WireFormat};

use super::common::{group, print_json, write_outcome, ConfigArgs, Failure, HistoryArgs};

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
(over the defaults), --wire-format over it.

Exit codes: 0 ok; 2 bad usage or bad input (the message names the file,
the message index and the problem).")]
pub struct Args {
    #[command(flatten)]
    pub history: HistoryArgs,

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

    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let estimator = estimate::by_name(&args.estimator).ok_or_else(|| {
        Failure::bad_input(format!(
            "unknown estimator {:?} ({})",
            args.estimator,
            estimate::NAMES.join(", ")
        ))
    })?;
    if args.lines {
        return run_lines(&args, estimator.as_ref());
    }
    let input = args.history.load()?;
    let config = args.config.resolve(input.doc.format)?;
    let msgs = &input.doc.messages;
    if args.json {
        return print_json(&figures(estimator.as_ref(), &config, msgs));
    }
    let (per_message, tokens) = estimator.per_message(msgs, &config);
    let body = body_bytes(&config, msgs);
    let report = Report {
        config: &config,
        msgs,
        estimator: estimator.name(),
        per_message: &per_message,
        tokens,
        body,
    };
    let written = io::stdout().lock().write_all(report.render().as_bytes());
    write_outcome(written)
}

/// The `--json` object: the estimate, the exact body, the trigger.
fn figures(estimator: &dyn Estimator, config: &Config, msgs: &[Message]) -> serde_json::Value {
    let (per_message, tokens) = estimator.per_message(msgs, config);
    json!({
        "estimator": estimator.name(),
        "tokens": tokens,
        "perMessage": per_message,
        "bodyBytes": body_bytes(config, msgs),
        "trigger": config.trigger(),
        "effectiveWindow": config.effective_window(),
    })
}

/// `--lines`: one `{"config", "messages"}` case a line in, its figures out.
/// Errors name the file and the line (then the message and the problem).
fn run_lines(args: &Args, estimator: &dyn Estimator) -> Result<(), Failure> {
    let (name, reader): (String, Box<dyn BufRead>) = match args.history.input.as_deref() {
        Some(path) if path != Path::new("-") => {
            let name = path.display().to_string();
            let file =
                ctxgate::input::open_regular(path, "the cases").map_err(|e| e.in_file(&name))?;
            (name, Box::new(BufReader::new(file)))
        }
        _ => ("stdin".to_owned(), Box::new(BufReader::new(io::stdin()))),
    };
    let mut out = BufWriter::new(io::stdout().lock());
    for (n, line) in reader.split(b'\n').enumerate() {
        let at = format!("{name}, line {}", n + 1);
        let line = line.map_err(|e| Failure::bad_input(format!("{at}: cannot read: {e}")))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let case = |e: ctxgate::InputError| Failure::from(e.in_file(&at));
        let mut value = ctxgate::model::parse_json(&line).map_err(case)?;
        let raw_config = match value.as_object_mut() {
            Some(obj) => obj.shift_remove("config"),
            None => {
                return Err(Failure::bad_input(format!(
                    "{at}: expected a {{\"config\", \"messages\"}} object, found {}",
                    ctxgate::error::json_type(&value)
                )))
            }
        };
        // Engine unless --format says otherwise: what `gen` prints, and no
        // guessing per line (a line's fields could hint at another format).
        let format = args.history.format.unwrap_or(WireFormat::Engine);
        let doc = Document::from_value(value, Some(format)).map_err(case)?;
        let mut config = match raw_config {
            Some(c) => Config::from_value(c).map_err(case)?,
            None => Config::default(),
        };
        if let Some(format) = args.config.wire_format {
            config.wire_format = format;
        }
        let written = serde_json::to_writer(&mut out, &figures(estimator, &config, &doc.messages))
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        write_outcome(written)?;
    }
    write_outcome(out.flush())
}

/// The human-readable table and footer.
struct Report<'a> {
    config: &'a Config,
    msgs: &'a [Message],
    estimator: &'a str,
    per_message: &'a [u64],
    tokens: u64,
    body: u64,
}

/// Width of the preview column, in characters.
const PREVIEW_CHARS: usize = 64;

impl Report<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        let index_w = self.msgs.len().saturating_sub(1).to_string().len().max(1);
        let tokens_w = group(self.tokens).len().max("tokens".len());
        let _ = writeln!(
            out,
            "{:>index_w$}  {:<9}  {:>tokens_w$}  preview",
            "#", "role", "tokens"
        );
        for (i, (m, t)) in self.msgs.iter().zip(self.per_message).enumerate() {
            let role = if m.is_pinned() {
                format!("{}*", m.role)
            } else {
                m.role.to_string()
            };
            let _ = writeln!(
                out,
                "{i:>index_w$}  {role:<9}  {:>tokens_w$}  {}",
                group(*t),
                preview(m)
            );
        }
        if self.msgs.iter().any(Message::is_pinned) {
            out.push_str("(* pinned)\n");
        }
        self.footer(&mut out);
        out
    }

    fn footer(&self, out: &mut String) {
        let c = self.config;
        let ceiling = c.transport_max_body_bytes;
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "total             {} tokens ({}), {} messages",
            group(self.tokens),
            self.estimator,
            self.msgs.len()
        );
        let _ = writeln!(
            out,
            "trigger           {} tokens = round({} × effective window)",
            group(c.trigger()),
            c.threshold
        );
        let _ = writeln!(
            out,
            "effective window  {} tokens = min(contextWindow {}, {} bytes / {} bytes per token)",
            group(c.effective_window()),
            group(c.context_window),
            group(ceiling),
            c.bytes_per_token
        );
        let verdict = if self.body > ceiling {
            format!("OVER by {}", group(self.body - ceiling))
        } else {
            format!("{} to spare", group(ceiling - self.body))
        };
        let _ = writeln!(
            out,
            "body              {} bytes ({}) vs ceiling {}: {verdict}",
            group(self.body),
            c.wire_format,
            group(ceiling)
        );
        // SPEC §4 step 1, with the reference's own estimator.
        let reference_tokens = Adr0098.tokens(&mut self.msgs.iter(), c);
        let pressure = ctxgate::contract::Pressure::of(c, reference_tokens, self.body);
        let mut why = Vec::new();
        if pressure.over_trigger {
            why.push("the estimate is over the trigger");
        }
        if pressure.over_ceiling {
            why.push("the body is over the ceiling");
        }
        let answer = if why.is_empty() {
            "no: the estimate is within the trigger and the body within the ceiling".to_owned()
        } else {
            format!("yes: {}", why.join(" and "))
        };
        let note = if self.estimator == Adr0098.name() {
            String::new()
        } else {
            format!(
                " (the reference estimates with {}: {} tokens)",
                Adr0098.name(),
                group(reference_tokens)
            )
        };
        let _ = writeln!(out, "would compact     {answer}{note}");
    }
}

/// A one-line preview: the text, the calls made (`→`) or the call answered (`←`).
fn preview(m: &Message) -> String {
    let mut text = String::new();
    if m.role == Role::Tool {
        let _ = write!(text, "← {}: ", m.tool_call_id.as_deref().unwrap_or(""));
    }
    text.push_str(&m.content.text());
    for call in m.calls() {
        if !text.is_empty() {
            text.push(' ');
        }
        let _ = write!(text, "→ {}({})", call.name, call.arguments);
    }
    one_line(&text, PREVIEW_CHARS)
}

/// Whitespace runs collapsed to one space, control characters dropped,
/// cut to `max` characters with an ellipsis.
fn one_line(text: &str, max: usize) -> String {
    let mut chars = text.split_whitespace().enumerate().flat_map(|(i, word)| {
        (i > 0)
            .then_some(' ')
            .into_iter()
            .chain(word.chars().filter(|c| !c.is_control()))
    });
    let mut out: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        out.pop();
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_one_bounded_line() {
        assert_eq!(one_line("  a\n\n b\tc ", 10), "a b c");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("abcd", 4), "abcd");
        assert_eq!(one_line("", 4), "");
        assert_eq!(one_line("日本語テキスト", 3), "日本…");
    }
}
