//! Errors as values with names (STYLE habit 7).
//!
//! `InputError` is bad input: what a user gave us is not a history, a config
//! or a fixture. It names the file, the message index and the problem, and
//! maps to exit code 2. Compaction outcomes (`cannot_fit`) live with the
//! reference compactor; subject faults live with the subjects.

use std::fmt;

/// What kind of bad input: what a test (or a caller) matches on; the
/// `problem` text is for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputErrorKind {
    /// Nothing there: an empty file or stdin.
    Empty,
    /// The input could not be read (no such file, a folder that cannot be
    /// listed, an I/O error).
    Io,
    /// Over the cap on one input (`input::DEFAULT_MAX_INPUT_BYTES`).
    TooLarge,
    /// Not valid UTF-8.
    Utf8,
    /// Not JSON: malformed or truncated text.
    Syntax,
    /// JSON nested deeper than `model::MAX_DEPTH`.
    TooDeep,
    /// A JSON object that names a key twice (`model::unique_keys`): which
    /// value counts is not defined, so what is counted and what is sent
    /// could differ.
    DuplicateKey,
    /// JSON, but not a history or a message of one: a wrong type, a missing
    /// field, an unknown role, a field on a role that cannot carry it.
    Shape,
    /// A content part that is not SPEC §1.4's: a text part without a string
    /// `text`, an image with neither `data` nor `url`, a data URL that is
    /// not base64, an Anthropic `tool_use`/`tool_result` block in an engine
    /// or openai history. (A part of another unknown `type` is no error: it
    /// is kept.)
    Part,
    /// Messages that do not make a well-formed history (SPEC §1.2): a tool
    /// result with no call to answer, a call answered twice, …
    IllFormed,
    /// A config that is not SPEC §2's: an unknown field, a value out of range.
    Config,
    /// A fixture that is not SPEC §7's.
    Fixture,
    /// An agent fixture (`"op": "agent"`, SPEC §9) where a compactor's was
    /// read: `ctxgate agent replay` plays it.
    AgentFixture,
}

impl InputErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            InputErrorKind::Empty => "empty",
            InputErrorKind::Io => "io",
            InputErrorKind::TooLarge => "too-large",
            InputErrorKind::Utf8 => "utf8",
            InputErrorKind::Syntax => "syntax",
            InputErrorKind::TooDeep => "too-deep",
            InputErrorKind::DuplicateKey => "duplicate-key",
            InputErrorKind::Shape => "shape",
            InputErrorKind::Part => "part",
            InputErrorKind::IllFormed => "ill-formed",
            InputErrorKind::Config => "config",
            InputErrorKind::Fixture => "fixture",
            InputErrorKind::AgentFixture => "agent-fixture",
        }
    }
}

/// Bad input, located as precisely as we can: file, message index, problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub kind: InputErrorKind,
    /// The file (or `-` for stdin) the input came from, when known.
    pub file: Option<String>,
    /// Index of the offending message in the history, when there is one.
    pub message: Option<usize>,
    /// What is wrong, in words a user can act on.
    pub problem: String,
    /// The offending message as it was written, on one line and cut: what
    /// a history or a subject's answer held, beside what is wrong with it.
    pub written: Option<String>,
}

impl InputError {
    pub fn new(kind: InputErrorKind, problem: impl Into<String>) -> Self {
        InputError {
            kind,
            file: None,
            message: None,
            problem: problem.into(),
            written: None,
        }
    }

    /// A problem with message `index`.
    pub fn at(kind: InputErrorKind, index: usize, problem: impl Into<String>) -> Self {
        InputError {
            kind,
            file: None,
            message: Some(index),
            problem: problem.into(),
            written: None,
        }
    }

    /// A message that is not one of a history's ([`InputErrorKind::Shape`]).
    pub fn shape(problem: impl Into<String>) -> Self {
        InputError::new(InputErrorKind::Shape, problem)
    }

    /// [`InputError::shape`] at message `index`.
    pub fn shape_at(index: usize, problem: impl Into<String>) -> Self {
        InputError::at(InputErrorKind::Shape, index, problem)
    }

    /// Attach the file name (keeps one already attached).
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into());
        }
        self
    }

    /// Attach the offending message as written (keeps one already attached).
    pub fn written(mut self, excerpt: impl FnOnce() -> String) -> Self {
        if self.written.is_none() {
            self.written = Some(excerpt());
        }
        self
    }

    /// Attach a message index when the error has none yet.
    pub fn at_message(mut self, index: usize) -> Self {
        if self.message.is_none() {
            self.message = Some(index);
        }
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            // A file's name is the user's or a folder's: on one line.
            write!(f, "{}: ", crate::model::one_line(file))?;
        }
        if let Some(i) = self.message {
            write!(f, "message {i}: ")?;
        }
        f.write_str(&self.problem)?;
        if let Some(written) = &self.written {
            write!(f, "; as written: {written}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InputError {}

/// Describe a JSON value's type in words, for error messages.
pub fn json_type(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
