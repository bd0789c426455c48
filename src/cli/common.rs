//! What the commands share: the history argument (`FILE` or `-` for
//! stdin, `--format`), the config flags (`--config` and one flag per SPEC §2
//! field, flags winning), and failures with SPEC §8's exit codes.
//!
//! Bad input is reported through the library's [`InputError`], which names
//! the file (`-` for stdin), the message index and the problem; this module
//! only adds the file name.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde_json::Value;

use ctxgate::{Config, Document, InputError, WireFormat};

/// Exit code 1: an invariant failed, a subject fault, or `cannot_fit`.
pub const EXIT_FAILED: u8 = 1;
/// Exit code 2: bad usage or bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Why a command did not succeed, with its exit code (SPEC §8).
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
    /// What the user might do about it, printed on a line of its own.
    pub hint: Option<String>,
}

impl CliError {
    fn new(code: u8, message: impl Into<String>) -> Self {
        CliError {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// Exit 1: the input was fine, the outcome is a failure.
    pub fn failed(message: impl Into<String>) -> Self {
        CliError::new(EXIT_FAILED, message)
    }

    /// Exit 2: bad usage or bad input.
    pub fn bad_input(message: impl Into<String>) -> Self {
        CliError::new(EXIT_BAD_INPUT, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Print on stderr and give the exit code. A message names files,
    /// subjects and reports, text from outside: a line of it that is not
    /// its first is indented under it (it cannot pass for a line of its
    /// own), and [`err`] guards the whole.
    pub fn report(&self) -> ExitCode {
        let indented = |text: &str| text.trim_end_matches('\n').replace('\n', "\n  ");
        let mut text = format!("error: {}\n", indented(&self.message));
        if let Some(hint) = &self.hint {
            text += &format!("hint: {}\n", indented(hint));
        }
        err(format_args!("{text}"));
        ExitCode::from(self.code)
    }
}

impl From<InputError> for CliError {
    fn from(e: InputError) -> Self {
        CliError::bad_input(e.to_string())
    }
}

/// The longest duration a flag takes: a week.
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A duration flag in seconds: positive, finite and at most a week.
pub fn seconds(flag: &str, value: f64) -> Result<std::time::Duration, CliError> {
    if !(value > 0.0 && value <= MAX_SECONDS) {
        return Err(CliError::bad_input(format!(
            "{flag} must be a number of seconds above 0 and at most {MAX_SECONDS} (a week), found {value:?}"
        )));
    }
    Ok(std::time::Duration::from_secs_f64(value))
}

/// `--format` and `--wire-format`: one of the three wire formats.
pub fn format_parser() -> impl TypedValueParser<Value = WireFormat> {
    PossibleValuesParser::new(WireFormat::ALL.map(WireFormat::as_str))
        .try_map(|s| s.parse::<WireFormat>())
}

/// The history a command reads, and the config it is measured under.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The history: a JSON array of messages, or an object with a `messages`
    /// field (and `system` for anthropic), whose other fields are kept.
    /// `-` or nothing: read stdin.
    #[arg(value_name = "FILE|-")]
    pub input: Option<PathBuf>,

    /// The history's wire format [default: detected from its fields]
    #[arg(long, value_name = "F", value_parser = format_parser())]
    pub format: Option<WireFormat>,

    #[command(flatten)]
    pub config: ConfigArgs,
}

/// A history as read: the name used in messages (the path, or `-`), the
/// document, and the config (`ConfigArgs::resolve` in the history's format).
pub struct Loaded {
    pub name: String,
    pub doc: Document,
    pub config: Config,
}

impl HistoryArgs {
    /// Read and parse the history, then resolve the config; errors name
    /// the file, the message and the problem.
    pub fn load(&self) -> Result<Loaded, CliError> {
        let path = self.input.as_deref().unwrap_or(Path::new("-"));
        if self.input.is_none() && io::stdin().is_terminal() {
            return Err(CliError::bad_input(
                "no history given: pass a FILE, or pipe one on stdin (`-`)",
            ));
        }
        let doc = ctxgate::input::read_history(path, self.format, max_input_bytes())?;
        let name = path.display().to_string();
        // A fixture ctxgate saved carries the config of its case: that is
        // the base, as `replay` takes it, unless `--config` names another.
        let own = match &doc.shape {
            ctxgate::model::Shape::Object(fields) if fields.contains_key("ctxgate") => {
                fields.get("config").filter(|c| c.is_object())
            }
            _ => None,
        };
        if own.is_some() && self.config.config.is_none() {
            errln!(
                "ctxgate: the config is the fixture's own (its `config`); --config FILE replaces it, and field flags change it"
            );
        }
        let config = self
            .config
            .resolve_over(doc.format, own.map(|c| (name.as_str(), c)))?;
        Ok(Loaded { name, doc, config })
    }
}

static MAX_INPUT_BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Set the cap on one input (`--max-input-bytes`), once, at start.
pub fn set_max_input_bytes(cap: u64) -> Result<(), CliError> {
    if cap == 0 {
        return Err(CliError::bad_input("--max-input-bytes must be at least 1"));
    }
    let _ = MAX_INPUT_BYTES.set(cap);
    Ok(())
}

/// What a folder walk followed or skipped, one `ctxgate: …` line each on
/// stderr: nothing is skipped silently.
pub fn show_notes(notes: &[ctxgate::input::Note]) {
    for note in notes {
        errln!("ctxgate: {}", ctxgate::model::one_line(&note.to_string()));
    }
}

/// `--corpus` of `calibrate` and `compare-estimators`.
#[derive(Debug, clap::Args)]
pub struct CorpusArg {
    /// The folder of real histories (*.json, searched recursively)
    /// [default: ../shared/data/real-histories, from the current directory
    /// or $CARGO_MANIFEST_DIR; when there is none, the real-histories set
    /// is skipped, with a line that says so]
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
}

/// What reading the corpus followed or skipped, and why there was none.
#[cfg(feature = "calibrate")]
pub fn show_corpus(read: &ctxgate::calibrate::CorpusRead) {
    show_notes(&read.notes);
    if let Some(skipped) = &read.skipped {
        errln!("ctxgate: {skipped}");
    }
}

/// The cap on one input, in bytes (`ctxgate::input`).
pub fn max_input_bytes() -> u64 {
    *MAX_INPUT_BYTES.get_or_init(|| ctxgate::input::DEFAULT_MAX_INPUT_BYTES)
}

/// A help line for a config field: its meaning and the library's default.
fn field_help(field: &str, meaning: &str) -> String {
    let default = Config::default().to_value();
    match default.get(field) {
        Some(v) => format!("`{field}`: {meaning} [config default: {v}]"),
        None => format!("`{field}`: {meaning}"),
    }
}

/// The compactor configuration (SPEC §2): a file and one flag per field.
#[derive(Debug, Default, Clone, clap::Args)]
#[command(next_help_heading = "Configuration (SPEC §2; each flag overrides --config)")]
pub struct ConfigArgs {
    /// A config file: a JSON object with the SPEC §2 fields in camelCase;
    /// fields it leaves out keep their defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    #[arg(long, value_name = "TOKENS", help = field_help("contextWindow", "tokens the model accepts"))]
    pub context_window: Option<u64>,

    #[arg(long, value_name = "FRACTION", help = field_help("threshold", "compaction trigger, a fraction of the effective window, in (0, 1]"))]
    pub threshold: Option<f64>,

    #[arg(long, value_name = "BYTES", help = field_help("transportMaxBodyBytes", "the real ceiling of the request body (Express's implicit default is 102400)"))]
    pub transport_max_body_bytes: Option<u64>,

    #[arg(long, value_name = "N", help = field_help("bytesPerToken", "the approximate tokenizer's heuristic"))]
    pub bytes_per_token: Option<u64>,

    #[arg(long, value_name = "N", help = field_help("keepRecent", "iterations kept verbatim after the summary, when they fit"))]
    pub keep_recent: Option<usize>,

    #[arg(long, value_name = "BYTES", help = field_help("summaryMaxBytes", "bound on the summary message's content"))]
    pub summary_max_bytes: Option<usize>,

    /// `wireFormat`: the format in which the body is serialised and measured.
    /// Precedence: this flag, else the config file's `wireFormat` if it sets
    /// one, else the format the history was read in.
    #[arg(long, value_name = "F", value_parser = format_parser())]
    pub wire_format: Option<WireFormat>,

    /// `envelope`: the request body's other fields (`model`, `tools`, …), a
    /// JSON object given inline or as a FILE; the body is this object with
    /// `messages` added. [config default: {}]
    #[arg(long, value_name = "FILE|JSON")]
    pub envelope: Option<String>,
}

impl ConfigArgs {
    /// `--config` or any field's flag was given.
    pub fn given(&self) -> bool {
        let flags = [
            self.config.is_some(),
            self.wire_format.is_some(),
            self.envelope.is_some(),
        ];
        flags.contains(&true) || self.set_fields(&mut Config::default())
    }

    /// Set the fields whose flags were given; whether there was one.
    fn set_fields(&self, config: &mut Config) -> bool {
        fn set<T: Copy>(field: &mut T, flag: Option<T>) -> bool {
            flag.map(|v| *field = v).is_some()
        }
        [
            set(&mut config.context_window, self.context_window),
            set(&mut config.threshold, self.threshold),
            set(
                &mut config.transport_max_body_bytes,
                self.transport_max_body_bytes,
            ),
            set(&mut config.bytes_per_token, self.bytes_per_token),
            set(&mut config.keep_recent, self.keep_recent),
            set(&mut config.summary_max_bytes, self.summary_max_bytes),
        ]
        .contains(&true)
    }

    /// `--wire-format F` given without any other config flag or file: for
    /// `check`, a pin of the format alone, the other fields still drawn.
    pub fn only_wire_format(&self) -> Option<WireFormat> {
        let rest = ConfigArgs {
            wire_format: None,
            ..self.clone()
        };
        self.wire_format.filter(|_| !rest.given())
    }

    /// The config: defaults, then the `--config` file, then the flags. The
    /// body is measured in `--wire-format`, else the file's `wireFormat`,
    /// else `input_format` (the history's own).
    pub fn resolve(&self, input_format: WireFormat) -> Result<Config, CliError> {
        self.resolve_over(input_format, None)
    }

    /// [`ConfigArgs::resolve`], with `own` — a fixture's config, and the
    /// file it is in — in place of the defaults when no `--config` file is
    /// given.
    pub fn resolve_over(
        &self,
        input_format: WireFormat,
        own: Option<(&str, &Value)>,
    ) -> Result<Config, CliError> {
        let (mut config, file_sets_wire_format) = match (&self.config, own) {
            (Some(path), _) => {
                let file = ctxgate::input::config::read_config(path, max_input_bytes())?;
                (file.config, file.sets_wire_format)
            }
            (None, Some((name, value))) => {
                let sets_wire_format = value.get("wireFormat").is_some();
                let config = Config::from_value(value.clone())
                    .map_err(|e| e.in_file(format!("{name} (its `config`)")))?;
                (config, sets_wire_format)
            }
            (None, None) => (Config::default(), false),
        };
        self.set_fields(&mut config);
        config.wire_format = match (self.wire_format, file_sets_wire_format) {
            (Some(f), _) => f,
            (None, true) => config.wire_format,
            (None, false) => input_format,
        };
        if let Some(arg) = &self.envelope {
            config.envelope = ctxgate::input::config::read_envelope(arg, max_input_bytes())?;
        }
        config.validate()?;
        Ok(config)
    }
}

/// Print a JSON value, compact, on one line of stdout. A closed pipe
/// (`| head`) is not an error.
pub fn print_json(value: &Value) -> Result<(), CliError> {
    write_stdout(|out| {
        serde_json::to_writer(&mut *out, value)?;
        out.write_all(b"\n")
    })
}

/// Write to stdout, buffered, through `write`, and flush; what a failed
/// write comes to is [`write_outcome`]'s.
pub fn write_stdout(
    write: impl FnOnce(&mut io::BufWriter<io::StdoutLock<'static>>) -> io::Result<()>,
) -> Result<(), CliError> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    write_outcome(write(&mut out).and_then(|()| out.flush()))
}

/// Write to stdout ([`write_outcome`]) through the terminal's guard
/// ([`for_log`](ctxgate::model::text::for_log): no control character, no
/// line that begins a CI workflow command, whatever a writer forgot to
/// escape); on an error, end the process. Every human report and message
/// on stdout goes this way (`out!`, `outln!`).
pub fn out(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let text = ctxgate::model::text::for_log(&text);
    let mut stdout = io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(failure) = write_outcome(written) {
        failure.report();
        std::process::exit(failure.code.into());
    }
}

/// Write to stderr through the terminal's guard, as [`out`] does to
/// stdout; a stderr that cannot be written is not an error. Every line
/// the CLI prints on stderr goes this way (`errln!`, [`CliError::report`]).
pub fn err(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let text = ctxgate::model::text::for_log(&text);
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// What a write to stdout came to. A reader that went away (`ctxgate … |
/// head`) ends the process at once with 141, the status of a process a
/// SIGPIPE ended (ctxgate ignores SIGPIPE, as Rust programs do, so that a
/// subject that dies cannot take it down): not 0, which would pass a gate
/// whose report nobody read to the end; any other write error is exit 1.
pub fn write_outcome(result: io::Result<()>) -> Result<(), CliError> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => Err(CliError::failed(format!("cannot write to stdout: {e}"))),
        Ok(()) => Ok(()),
    }
}

pub use ctxgate::model::text::group;
