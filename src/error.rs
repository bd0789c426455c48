//! Errors as values with names (STYLE habit 7).
//!
//! `InputError` is bad input: what a user gave us is not a history, a config
//! or a fixture. It names the file, the message index and the problem, and
//! maps to exit code 2. Compaction outcomes (`cannot_fit`) live with the
//! reference compactor; subject faults live with the subjects.

use std::fmt;

/// Bad input, located as precisely as we can: file, message index, problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file (or `-` for stdin) the input came from, when known.
    pub file: Option<String>,
    /// Index of the offending message in the history, when there is one.
    pub message: Option<usize>,
    /// What is wrong, in words a user can act on.
    pub problem: String,
}

impl InputError {
    pub fn new(problem: impl Into<String>) -> Self {
        InputError {
            file: None,
            message: None,
            problem: problem.into(),
        }
    }

    /// A problem with message `index`.
    pub fn at(index: usize, problem: impl Into<String>) -> Self {
        InputError {
            file: None,
            message: Some(index),
            problem: problem.into(),
        }
    }

    /// Attach the file name (keeps one already attached).
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        if self.file.is_none() {
            self.file = Some(file.into());
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
            write!(f, "{file}: ")?;
        }
        if let Some(i) = self.message {
            write!(f, "message {i}: ")?;
        }
        f.write_str(&self.problem)
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
