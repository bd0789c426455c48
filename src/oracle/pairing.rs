//! `tool-pairing`: the provider's tool-use protocol survives compaction.
//! The bug that LangChain, LiteLLM, llama-index, the OpenAI Agents SDK and
//! pydantic-ai have all shipped: a cut through an iteration leaves a tool
//! result whose call was summarised away.

use std::collections::HashSet;

use super::{Invariant, Violation};
use crate::model::{iterations, unanswered_calls, Message, Role};

/// Every tool message of `output` answers a call of its own iteration, no
/// call is answered twice, and every call is answered, except in a last
/// iteration that was already pending in `input`.
pub fn tool_pairing(input: &[Message], output: &[Message]) -> Vec<Violation> {
    let inv = Invariant::ToolPairing;
    let mut out = Vec::new();
    let input_pending = iterations(input)
        .last()
        .is_some_and(|r| !unanswered_calls(input, r.clone()).is_empty());
    let iters = iterations(output);
    for (n, range) in iters.iter().enumerate() {
        let first = &output[range.start];
        if first.role == Role::Tool {
            let id = first.tool_call_id.clone().unwrap_or_default();
            out.push(
                Violation::new(
                    inv,
                    format!("output message {} is a tool result for call {id:?}, but no assistant message of its iteration makes that call", range.start),
                )
                .message(range.start)
                .id(id),
            );
            continue;
        }
        let mut answered = HashSet::new();
        for i in range.clone().skip(1) {
            let id = output[i].tool_call_id.as_deref().unwrap_or("");
            if !answered.insert(id) {
                out.push(
                    Violation::new(
                        inv,
                        format!("output message {i} answers call {id:?} a second time"),
                    )
                    .message(i)
                    .id(id),
                );
            }
        }
        let missing = if first.opens_iteration() {
            unanswered_calls(output, range.clone())
        } else {
            Vec::new()
        };
        let is_last = n + 1 == iters.len();
        let excused = missing.is_empty() || (is_last && input_pending);
        if !excused {
            let mut v = Violation::new(
                inv,
                format!(
                    "output message {} makes {} call(s) that no tool message answers{}",
                    range.start,
                    missing.len(),
                    if is_last {
                        " (the input's last iteration was not pending)"
                    } else {
                        ""
                    }
                ),
            )
            .message(range.start);
            for id in missing {
                v = v.id(id);
            }
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "read_file", json!({}))
    }

    #[test]
    fn orphan_after_a_cut_is_caught() {
        let input = vec![
            Message::user("go"),
            Message::assistant_calls("", vec![call("a"), call("b")]),
            Message::tool("a", "1"),
            Message::tool("b", "2"),
        ];
        assert!(tool_pairing(&input, &input).is_empty());
        let cut = vec![Message::system("summary"), Message::tool("b", "2")];
        let v = tool_pairing(&input, &cut);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].ids, ["b"]);
        let dropped_result = input[..3].to_vec();
        assert_eq!(tool_pairing(&input, &dropped_result)[0].ids, ["b"]);
    }

    #[test]
    fn pending_last_iteration_is_allowed_only_if_it_was_pending() {
        let input = vec![
            Message::user("go"),
            Message::assistant_calls("", vec![call("a")]),
        ];
        assert!(tool_pairing(&input, &input).is_empty());
    }
}
