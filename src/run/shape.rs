//! The shapes of a check's failures, for keeping several distinct ones of
//! an invariant (`check --save-distinct N`) without shrinking every one.
//!
//! Shrinking costs up to `--shrink-runs` subject runs, so a run does not
//! shrink every failure: it sorts each failing case of an invariant into a
//! *class* before shrinking, cheaply, and shrinks only the first case of a
//! class (`class`). What it keeps are shrunk cases whose *shape* differs
//! ([`shape`]): two failures of one invariant are the same finding when
//! their minimal cases have the same shape.
//!
//! - The **class** of an unshrunk failure: the violation's wording with
//!   its figures and quoted names blanked (`wording`), the wire format,
//!   whether the history holds content parts, whether it pins a message,
//!   and what the subject answered (unchanged, compacted, cannot_fit,
//!   nothing).
//! - The **shape** of a shrunk failure: the structure its minimal history
//!   holds — a head, a user message, tool calls, parallel calls, an empty
//!   `toolCalls`, ids reused across iterations, results out of call order,
//!   a pending call, a pinned message of each role, images, other content
//!   parts — not its length or its texts, which shrinking leaves wherever
//!   it stops; the config knobs still off their simplest value once
//!   shrinking is done (a wire format other than engine, `keepRecent>1`,
//!   `bytesPerToken≠4`, `summaryMaxBytes>0`, an envelope): those the
//!   failure needs; and the violation's wording. For example
//!   `head, tool calls, parallel calls, keepRecent>1 | output message # is
//!   a tool result for call "…", but no assistant message of its iteration
//!   makes that call`.

use std::collections::HashSet;

use crate::config::Config;
use crate::harness::CaseResult;
use crate::model::{iterations, unanswered_calls, Message, Part, Role, WireFormat};
use crate::oracle::{Invariant, Violation};
use crate::subject::CompactAnswer;

/// How many of an invariant's failures a run shrinks, each the first of
/// its class, to keep `distinct` of distinct shapes: one for the first,
/// and up to four for each more (classes that shrink to a shape already
/// kept cost a shrink each).
pub fn classes_to_shrink(distinct: usize) -> usize {
    1 + 4 * distinct.saturating_sub(1)
}

/// The most bytes of a violation's wording a class or shape keeps: a
/// violation that quotes a long text cannot make one large.
const WORDING_BYTES: usize = 240;

/// The class of a failure of `inv` on an unshrunk case (see the module's
/// doc): cases of one class are taken to shrink alike, and only the first
/// of each is shrunk.
pub(crate) fn class(
    messages: &[Message],
    config: &Config,
    result: &CaseResult,
    inv: Invariant,
) -> String {
    let said = result
        .violations()
        .find(|v| v.invariant == inv)
        .map_or(String::new(), |v| wording(&v.detail));
    let answered = match &result.answer {
        None => "no answer",
        Some(CompactAnswer::CannotFit { .. }) => "cannot_fit",
        Some(_) if result.compacted => "compacted",
        Some(_) => "unchanged",
    };
    let parts = messages.iter().any(|m| !m.content.parts().is_empty());
    let pinned = messages.iter().any(|m| m.pinned == Some(true));
    format!(
        "{} | {answered} | parts {parts} | pinned {pinned} | {said}",
        config.wire_format
    )
}

/// The shape of a failure's minimal case (see the module's doc): the
/// features of its history, the knobs it needs, and what the violation
/// says.
pub fn shape(config: &Config, messages: &[Message], violation: &Violation) -> String {
    let mut features = history_features(messages);
    features.extend(knobs(config));
    let features = match features.is_empty() {
        true => "plain".to_owned(),
        false => features.join(", "),
    };
    format!("{features} | {}", wording(&violation.detail))
}

/// What a minimal history holds that a failure may need, in a fixed
/// order: not its length or its texts, which shrinking leaves wherever it
/// stops, but the structure a compactor trips on.
fn history_features(msgs: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |yes: bool, what: &str| {
        if yes {
            out.push(what.to_owned());
        }
    };
    add(msgs.is_empty(), "no message");
    add(msgs.first().is_some_and(|m| m.role == Role::System), "head");
    add(msgs.iter().any(|m| m.role == Role::User), "user");
    let calls = |m: &Message| m.tool_calls.as_ref().map_or(0, Vec::len);
    add(msgs.iter().any(|m| calls(m) > 0), "tool calls");
    add(msgs.iter().any(|m| calls(m) > 1), "parallel calls");
    add(
        msgs.iter()
            .any(|m| m.tool_calls.as_ref().is_some_and(Vec::is_empty)),
        "toolCalls: []",
    );
    let iters = iterations(msgs);
    let mut seen: HashSet<&str> = HashSet::new();
    let reused = iters.iter().any(|r| {
        let ids: HashSet<&str> = msgs[r.start]
            .calls()
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let again = ids.iter().any(|id| seen.contains(id));
        seen.extend(ids);
        again
    });
    add(reused, "ids reused");
    let out_of_order = iters.iter().any(|r| {
        let order: Vec<&str> = msgs[r.start]
            .calls()
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let answered = msgs[r.start + 1..r.end].iter().filter_map(|m| {
            let id = m.tool_call_id.as_deref()?;
            order.iter().position(|c| *c == id)
        });
        let answered: Vec<usize> = answered.collect();
        answered.windows(2).any(|w| w[0] > w[1])
    });
    add(out_of_order, "results out of call order");
    let pending = iters
        .last()
        .is_some_and(|r| !unanswered_calls(msgs, r.clone()).is_empty());
    add(pending, "pending call");
    for role in Role::ALL {
        let pinned = msgs
            .iter()
            .any(|m| m.role == role && m.pinned == Some(true));
        add(pinned, &format!("pinned {}", role.as_str()));
    }
    let parts = msgs.iter().flat_map(|m| m.content.parts());
    let (mut images, mut others) = (false, false);
    for p in parts {
        match p {
            Part::Image(_) => images = true,
            Part::Text(_) | Part::Other(_) => others = true,
        }
    }
    add(images, "images");
    add(others, "content parts");
    out
}

/// The config's knobs still off their simplest value: those the shrinker
/// could not move (`generate::shrink`'s config candidates), but the
/// threshold, which it keeps wherever moving it would move the trigger.
fn knobs(c: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if c.wire_format != WireFormat::Engine {
        out.push(format!("wireFormat {}", c.wire_format));
    }
    if c.keep_recent > 1 {
        out.push("keepRecent>1".to_owned());
    }
    if c.bytes_per_token != 4 {
        out.push("bytesPerToken≠4".to_owned());
    }
    if c.summary_max_bytes > 0 {
        out.push("summaryMaxBytes>0".to_owned());
    }
    if !c.envelope.is_empty() {
        out.push("envelope".to_owned());
    }
    out
}

/// What a violation says, without what differs from case to case: each
/// run of digits is `#`, each quoted string (a tool-call id, a name, as
/// Rust's `{:?}` quotes them) is `"…"`, on one line, at most
/// [`WORDING_BYTES`] bytes.
pub(crate) fn wording(detail: &str) -> String {
    let mut out = String::with_capacity(detail.len().min(WORDING_BYTES));
    let mut chars = detail.chars().peekable();
    while let Some(c) = chars.next() {
        if out.len() >= WORDING_BYTES {
            out.push('…');
            break;
        }
        match c {
            '0'..='9' => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                out.push('#');
            }
            '"' => {
                // To the closing quote; `\"` and `\\` inside are escapes.
                while let Some(q) = chars.next() {
                    match q {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push_str("\"…\"");
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    #[test]
    fn wording_blanks_figures_and_quoted_names_only() {
        assert_eq!(
            wording(r#"output message 12 answers call "toolu_0\"1" a second time"#),
            r#"output message # answers call "…" a second time"#
        );
        assert_eq!(wording("estimate 20 > trigger 0"), "estimate # > trigger #");
        assert_eq!(wording("a\nb"), "a b");
        let long = wording(&"x".repeat(10_000));
        assert!(
            long.len() <= WORDING_BYTES + '…'.len_utf8(),
            "{}",
            long.len()
        );
    }

    #[test]
    fn a_shape_names_the_structure_a_case_needs_not_its_length() {
        let call = |id: &str| ToolCall::new(id, "f", serde_json::json!({}));
        let assistant = |ids: &[&str]| {
            let mut a = Message::new(Role::Assistant, "");
            a.tool_calls = Some(ids.iter().map(|id| call(id)).collect());
            a
        };
        let result = |id: &str| {
            let mut m = Message::new(Role::Tool, "");
            m.tool_call_id = Some(id.into());
            m
        };
        let mut user = Message::user("u");
        user.pinned = Some(true);
        let v = Violation::new(Invariant::ToolPairing, "call \"x9\" answered 2 times");
        let simplest = Config {
            keep_recent: 1,
            summary_max_bytes: 0,
            threshold: 0.55,
            ..Config::default()
        };
        let one = vec![assistant(&["a"]), result("a")];
        let two = [one.clone(), vec![assistant(&["b"]), result("b")]].concat();
        // Two iterations or one: the same shape.
        assert_eq!(shape(&simplest, &one, &v), shape(&simplest, &two, &v));
        assert_eq!(
            shape(&simplest, &one, &v),
            "tool calls | call \"…\" answered # times"
        );
        let tangled = vec![
            user,
            assistant(&["x", "y"]),
            result("y"),
            result("x"),
            assistant(&["x", "z"]),
            result("x"),
        ];
        let mut other = simplest.clone();
        other.keep_recent = 3;
        other.wire_format = WireFormat::Openai;
        assert_eq!(
            shape(&other, &tangled, &v),
            "user, tool calls, parallel calls, ids reused, results out of call order, pending call, pinned user, wireFormat openai, keepRecent>1 | call \"…\" answered # times"
        );
        assert_eq!(
            shape(&simplest, &[], &v),
            "no message | call \"…\" answered # times"
        );
    }
}
