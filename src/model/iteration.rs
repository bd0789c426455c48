//! Iterations and well-formedness (SPEC §1.2).
//!
//! An iteration is an assistant message with a non-empty `toolCalls`
//! together with the consecutive `tool` messages right after it that answer
//! its calls; every other message is an iteration of its own. Pairing is
//! judged per iteration, never by a global id lookup: models that reuse
//! `call_0` on every turn are well formed.

use std::collections::HashSet;
use std::ops::Range;

use super::{Message, Role};
use crate::error::{InputError, InputErrorKind};

/// The iterations of `msgs`, as index ranges covering every message in order.
pub fn iterations(msgs: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        let start = i;
        i += 1;
        if msgs[start].opens_iteration() {
            let calls = msgs[start].calls();
            // A set of the ids once a turn has more calls than a scan of
            // them is cheap: a turn of 100,000 calls and their results
            // was quadratic (minutes).
            let ids: HashSet<&str> = match calls.len() > 16 {
                true => calls.iter().map(|c| c.id.as_str()).collect(),
                false => HashSet::new(),
            };
            let answers = |id: &str| match ids.is_empty() {
                true => calls.iter().any(|c| c.id == id),
                false => ids.contains(id),
            };
            while i < msgs.len()
                && msgs[i].role == Role::Tool
                && msgs[i].tool_call_id.as_deref().is_some_and(answers)
            {
                i += 1;
            }
        }
        out.push(start..i);
    }
    out
}

/// Length of the head: the leading run of `system` messages (SPEC §4 step 2).
pub fn head_len(msgs: &[Message]) -> usize {
    msgs.iter().take_while(|m| m.role == Role::System).count()
}

/// Calls of the iteration `range` that no tool message in it answers.
pub fn unanswered_calls(msgs: &[Message], range: Range<usize>) -> Vec<&str> {
    let first = &msgs[range.start];
    let answered: HashSet<&str> = msgs[range.clone()]
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    first
        .calls()
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| !answered.contains(id))
        .collect()
}

/// Check that `msgs` is well formed: every tool message answers a call of
/// its own iteration, no call is answered twice, no assistant message makes
/// two calls with one id, and only the last iteration leaves calls
/// unanswered. The error names the message index, the id and the problem.
pub fn check_well_formed(msgs: &[Message]) -> Result<(), InputError> {
    let iters = iterations(msgs);
    let last = iters.len().saturating_sub(1);
    for (n, range) in iters.iter().enumerate() {
        let first = &msgs[range.start];
        if first.role == Role::Tool {
            let id = first.tool_call_id.as_deref().unwrap_or("");
            return Err(InputError::at(
                InputErrorKind::IllFormed,
                range.start,
                orphan_problem(msgs, range.start, id),
            ));
        }
        if !first.opens_iteration() {
            continue;
        }
        let mut ids = HashSet::new();
        for call in first.calls() {
            if !ids.insert(call.id.as_str()) {
                return Err(InputError::at(
                    InputErrorKind::IllFormed,
                    range.start,
                    format!(
                        "the assistant message makes two calls with id {:?}",
                        call.id
                    ),
                ));
            }
        }
        let mut answered = HashSet::new();
        for i in range.clone().skip(1) {
            let id = msgs[i].tool_call_id.as_deref().unwrap_or("");
            if !answered.insert(id) {
                return Err(InputError::at(
                InputErrorKind::IllFormed,
                    i,
                    format!("call {id:?} is answered twice (first answer earlier in the same iteration)"),
                ));
            }
        }
        if n != last {
            if let Some(id) = unanswered_calls(msgs, range.clone()).first() {
                return Err(InputError::at(
                InputErrorKind::IllFormed,
                    range.start,
                    format!(
                        "call {id:?} is never answered, and only the last iteration may leave calls pending"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Why the tool message at `i` is an orphan, as precisely as we can say.
fn orphan_problem(msgs: &[Message], i: usize, id: &str) -> String {
    let opener = msgs[..i].iter().rposition(|m| m.role != Role::Tool);
    match opener.map(|j| (j, &msgs[j])) {
        Some((j, m)) if m.opens_iteration() && m.calls().iter().any(|c| c.id == id) => format!(
            "tool message answers call {id:?} a second time (message {j} makes it; it is already answered)"
        ),
        Some((j, m)) if m.opens_iteration() => format!(
            "tool message answers call {id:?}, which the assistant message of its iteration (message {j}) does not make"
        ),
        _ => format!(
            "tool message answers call {id:?}, but no assistant message with tool calls stands right before it"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    /// A turn of `n` calls answered in reverse order, then a stray result
    /// and a user message: the turn is one iteration whatever `n` (a scan
    /// of the ids under 17 calls, a set above), and the stray one its own.
    #[test]
    fn a_turn_is_one_iteration_with_few_calls_or_many() {
        for n in [1, 3, 16, 17, 200] {
            let calls: Vec<ToolCall> = (0..n)
                .map(|i| ToolCall::new(format!("c{i}"), "read", serde_json::json!({})))
                .collect();
            let mut msgs = vec![Message::user("go"), Message::assistant_calls("", calls)];
            msgs.extend((0..n).rev().map(|i| Message::tool(format!("c{i}"), "r")));
            msgs.push(Message::tool("other", "stray"));
            msgs.push(Message::user("next"));
            let it = iterations(&msgs);
            assert_eq!(it, vec![0..1, 1..n + 2, n + 2..n + 3, n + 3..n + 4], "{n}");
            assert!(unanswered_calls(&msgs, it[1].clone()).is_empty());
        }
    }
}
