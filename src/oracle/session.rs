//! `session-never-overflows`: the ADR's production failure, replayed. A
//! simulated ToolLoop compacts, sends, appends the next iteration and
//! repeats (the harness drives it, up to 60 iterations); no request body
//! may exceed the ceiling on any turn.
//!
//! With a live endpoint (`check --transport`), each turn also carries what
//! the endpoint answered to the body: a refusal fails the turn too, with
//! the server's status and body, and any disagreement between ctxgate's
//! exact size verdict and the endpoint's (a body under the ceiling
//! refused, one over it accepted, a body sent with another length than
//! measured) is said in the violation, never dropped.

use super::{body_measure, Invariant, Violation};
use crate::config::Config;
use crate::model::WireFormat;
use crate::transport::{Delivery, Reception};

/// One turn of a simulated ToolLoop, as the harness observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionTurn {
    /// 1-based turn number.
    pub turn: usize,
    /// Messages in the history handed to the compactor on this turn.
    pub history_len: usize,
    pub outcome: TurnOutcome,
    /// What the live endpoint answered to the body sent on this turn
    /// (`check --transport`); `None` without one.
    pub delivery: Option<Delivery>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The compacted history was sent; its body in bytes. When that body
    /// is over the ceiling, `minimal` is the body of the conversation's
    /// minimal output (head + pinned + the iteration just appended): what
    /// tells a correct compactor's answer, a smaller body or `cannot_fit`.
    Sent { body: u64, minimal: Option<u64> },
    /// The subject answered cannot_fit; the body of the conversation's
    /// minimal output (head + pinned + the iteration just appended), in bytes.
    CannotFit { minimal: u64 },
    /// The subject answered invalid_input to a history the loop built.
    InvalidInput { message: String },
}

/// No turn sent a body over the ceiling (or one the live endpoint
/// refused), and no turn gave up (cannot_fit) while the minimal output
/// fitted.
pub fn session_never_overflows(config: &Config, turns: &[SessionTurn]) -> Vec<Violation> {
    let inv = Invariant::SessionNeverOverflows;
    let ceiling = config.transport_max_body_bytes;
    turns
        .iter()
        .filter_map(|t| match &t.outcome {
            TurnOutcome::Sent { body, minimal } => sent(t, *body, *minimal, ceiling, config.wire_format),
            TurnOutcome::CannotFit { minimal } if *minimal <= ceiling => Some(
                Violation::new(
                    inv,
                    format!(
                        "turn {} gave up with cannot_fit although the conversation's head + pinned + last iteration is {minimal} {}, under the ceiling {ceiling}",
                        t.turn,
                        body_measure(config.wire_format)
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

/// The violation of a turn that sent `body` bytes, if any: over the
/// ceiling, refused by the live endpoint, or sent with another length than
/// ctxgate measured.
fn sent(
    t: &SessionTurn,
    body: u64,
    minimal: Option<u64>,
    ceiling: u64,
    format: WireFormat,
) -> Option<Violation> {
    let d = t
        .delivery
        .as_ref()
        .filter(|d| d.answer.reception() != Reception::Unknown);
    let over = body > ceiling;
    let refused = d.is_some_and(|d| d.answer.reception() == Reception::Refused);
    let mismatch = d.is_some_and(|d| d.sent != body);
    if !over && !refused && !mismatch {
        return None;
    }
    let side = if over { "over" } else { "under" };
    let mut detail = format!(
        "turn {} of the ToolLoop sent {body} {} ({} messages), {side} the ceiling",
        t.turn,
        body_measure(format),
        t.history_len
    );
    match minimal {
        Some(m) if over && m > ceiling => detail.push_str(&format!(
            "; a correct compactor answers cannot_fit: the smallest output (the conversation's head + pinned + last iteration) is {m} bytes"
        )),
        Some(m) if over => detail.push_str(&format!(
            "; a correct compactor keeps fewer iterations, shortens or drops its summary and elides old images until the body fits: the smallest output (head + pinned + last iteration) is {m} bytes"
        )),
        _ => {}
    }
    if let Some(d) = d {
        if mismatch {
            detail.push_str(&format!(
                "; the body sent to the live endpoint was {} bytes: ctxgate's exact size and the real transport disagree",
                d.sent
            ));
        }
        match (d.answer.reception(), over) {
            (Reception::Refused, true) => {
                detail.push_str(&format!("; the live endpoint refused it too: {}", d.answer))
            }
            (Reception::Refused, false) => detail.push_str(&format!(
                "; the live endpoint refused it: {} — ctxgate's size verdict and the real transport disagree: the ceiling is above this endpoint's limit (measure it with `ctxgate probe-ceiling`)",
                d.answer
            )),
            (_, true) => detail.push_str(&format!(
                "; the live endpoint accepted it ({}) — ctxgate's size verdict and the real transport disagree: the ceiling is below this endpoint's limit",
                d.answer.label()
            )),
            _ => {}
        }
    }
    let mut v = Violation::new(Invariant::SessionNeverOverflows, detail)
        .number("turn", t.turn as u64)
        .number("body", body)
        .number("ceiling", ceiling);
    if let Some(code) = d.and_then(|d| d.answer.status()) {
        v = v.number("status", code as u64);
    }
    if let Some(d) = d.filter(|_| mismatch) {
        v = v.number("sent", d.sent);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Answer;

    fn turn(body: u64, answer: Option<Answer>) -> SessionTurn {
        SessionTurn {
            turn: 3,
            history_len: 7,
            outcome: TurnOutcome::Sent {
                body,
                minimal: None,
            },
            delivery: answer.map(|answer| Delivery { sent: body, answer }),
        }
    }

    fn status(code: u16) -> Option<Answer> {
        Some(Answer::Status {
            code,
            excerpt: "Payload Too Large".into(),
        })
    }

    fn config() -> Config {
        Config {
            transport_max_body_bytes: 102_400,
            ..Config::default()
        }
    }

    fn one(t: SessionTurn) -> Vec<Violation> {
        session_never_overflows(&config(), &[t])
    }

    #[test]
    fn the_endpoint_agreeing_adds_its_answer_or_nothing() {
        assert!(one(turn(102_400, status(200))).is_empty());
        assert!(one(turn(102_400, None)).is_empty());
        let v = one(turn(102_401, status(413)));
        assert_eq!(v.len(), 1);
        assert!(
            v[0].detail.contains(
                "over the ceiling; the live endpoint refused it too: 413 Payload Too Large"
            ),
            "{}",
            v[0]
        );
        assert!(v[0].numbers.contains(&("status".into(), 413)));
    }

    #[test]
    fn a_refusal_under_the_ceiling_is_a_failure_and_a_disagreement() {
        for answer in [
            status(413),
            status(502),
            Some(Answer::Closed {
                error: "connection reset by peer".into(),
            }),
        ] {
            let v = one(turn(90_000, answer.clone()));
            assert_eq!(v.len(), 1, "{answer:?}");
            assert!(
                v[0].detail
                    .contains("under the ceiling; the live endpoint refused it"),
                "{}",
                v[0]
            );
            assert!(v[0].detail.contains("disagree"), "{}", v[0]);
        }
    }

    #[test]
    fn an_acceptance_over_the_ceiling_is_said() {
        let v = one(turn(102_401, status(200)));
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.contains("accepted it (200)"), "{}", v[0]);
        assert!(
            v[0].detail.contains("below this endpoint's limit"),
            "{}",
            v[0]
        );
    }

    #[test]
    fn no_answer_judges_nothing_and_a_wrong_length_is_a_failure() {
        let silent = Some(Answer::NoAnswer {
            error: "nothing within the 1 s timeout".into(),
        });
        assert!(one(turn(1_000, silent)).is_empty());
        let mut t = turn(1_000, status(200));
        t.delivery.as_mut().unwrap().sent = 1_001;
        let v = one(t);
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.contains("was 1001 bytes"), "{}", v[0]);
        assert!(v[0].numbers.contains(&("sent".into(), 1_001)));
    }
}
