//! What a subject answers (SPEC §6): the data the harness collects and the
//! oracles judge. It lives here, where it is made; an oracle takes it as
//! input and never asks a subject for it.

use crate::model::Message;

/// What a subject answered to `compact`: a history, or one of the two
/// error kinds the protocol accepts as answers (SPEC §6).
#[derive(Debug, Clone, PartialEq)]
pub enum CompactAnswer {
    Messages(Vec<Message>),
    CannotFit { message: String },
    InvalidInput { message: String },
}

impl CompactAnswer {
    pub fn messages(&self) -> Option<&[Message]> {
        match self {
            CompactAnswer::Messages(m) => Some(m),
            _ => None,
        }
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        match self {
            CompactAnswer::Messages(m) => format!("{} messages", m.len()),
            CompactAnswer::CannotFit { message } => format!("cannot_fit: {message}"),
            CompactAnswer::InvalidInput { message } => format!("invalid_input: {message}"),
        }
    }
}

/// A subject's estimate of a history, in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EstimateAnswer {
    pub tokens: u64,
    /// One figure per message, in order, when the subject gives them.
    pub per_message: Option<Vec<u64>>,
}

/// What a subject answered to `estimate`: figures, or `invalid_input` (the
/// one error that is an answer to `estimate`: right for an ill-formed
/// history, a finding against the subject for a well-formed one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EstimateReply {
    Tokens(EstimateAnswer),
    InvalidInput { message: String },
}

impl EstimateReply {
    pub fn tokens(&self) -> Option<&EstimateAnswer> {
        match self {
            EstimateReply::Tokens(e) => Some(e),
            EstimateReply::InvalidInput { .. } => None,
        }
    }
}

impl From<EstimateAnswer> for EstimateReply {
    fn from(e: EstimateAnswer) -> Self {
        EstimateReply::Tokens(e)
    }
}
