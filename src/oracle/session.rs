//! `session-never-overflows`: the ADR's production failure, replayed. A
//! simulated ToolLoop compacts, sends, appends the next iteration and
//! repeats (the harness drives it, up to 60 iterations); no request body
//! may exceed the ceiling on any turn.

use super::{Invariant, Violation};
use crate::config::Config;

/// One turn of a simulated ToolLoop, as the harness observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionTurn {
    /// 1-based turn number.
    pub turn: usize,
    /// Messages in the history handed to the compactor on this turn.
    pub history_len: usize,
    pub outcome: TurnOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The compacted history was sent; its body in bytes.
    Sent { body: u64 },
    /// The subject answered cannot_fit; the body of the conversation's
    /// minimal output (head + pinned + the iteration just appended), in bytes.
    CannotFit { minimal: u64 },
    /// The subject answered invalid_input to a history the loop built.
    InvalidInput { message: String },
}

/// No turn sent a body over the ceiling, and no turn gave up (cannot_fit)
/// while the minimal output fitted.
pub fn session_never_overflows(config: &Config, turns: &[SessionTurn]) -> Vec<Violation> {
    let inv = Invariant::SessionNeverOverflows;
    let ceiling = config.transport_max_body_bytes;
    turns
        .iter()
        .filter_map(|t| match &t.outcome {
            TurnOutcome::Sent { body } if *body > ceiling => Some(
                Violation::new(
                    inv,
                    format!(
                        "turn {} of the ToolLoop sent a {body}-byte body ({} messages), over the ceiling",
                        t.turn, t.history_len
                    ),
                )
                .number("turn", t.turn as u64)
                .number("body", *body)
                .number("ceiling", ceiling),
            ),
            TurnOutcome::CannotFit { minimal } if *minimal <= ceiling => Some(
                Violation::new(
                    inv,
                    format!(
                        "turn {} gave up with cannot_fit although the conversation's head + pinned + last iteration is {minimal} bytes, under the ceiling",
                        t.turn
                    ),
                )
                .number("turn", t.turn as u64)
                .number("minimal", *minimal)
                .number("ceiling", ceiling),
            ),
            TurnOutcome::InvalidInput { message } => Some(
                Violation::new(
                    inv,
                    format!("turn {} answered invalid_input to the loop's own history: {message}", t.turn),
                )
                .number("turn", t.turn as u64),
            ),
            _ => None,
        })
        .collect()
}
