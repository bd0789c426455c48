//! The script a case plays (SPEC §9): a generated ToolLoop turned into the
//! model's side of a conversation. Each iteration of the generated history
//! that makes tool calls is one model turn; each call reads a file that
//! ctxgate writes into the workspace, holding that call's result from the
//! history — so ctxgate knows every result's content. The task is the
//! history's first user message, the final answer its last assistant
//! text.
//!
//! A script is a function of a [`Case`] and the case's summary sizes, so
//! shrinking the case (fewer iterations, fewer parallel calls, shorter
//! results) shrinks the script, and the summary sizes stay put.

use serde::{Deserialize, Serialize};

use crate::generate::{text, Case, ContentClass, SplitMix64};
use crate::model::{iterations, truncate_utf8, Content, Role};

/// The longest task ctxgate hands over, in bytes (it travels in argv and
/// the environment).
pub const MAX_TASK_BYTES: usize = 8 * 1024;

/// The model's side of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    /// The task the agent is started with.
    pub task: String,
    /// The model turns that call tools, in order.
    pub turns: Vec<ScriptTurn>,
    /// The final answer, after which the agent is done.
    #[serde(rename = "final")]
    pub final_answer: String,
    /// The size of each summary the model writes when asked, in order
    /// (then again from the start): a percent of what the summary request
    /// allows (`max_tokens`, or 4,096 tokens when it says nothing), over
    /// 100 now and then, as real models overshoot.
    pub summaries: Vec<u32>,
}

/// One model turn that calls tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptTurn {
    /// What the model says before its calls (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    pub calls: Vec<ScriptCall>,
}

/// One call: its id, the workspace file it reads, and that file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptCall {
    pub id: String,
    pub file: String,
    pub content: String,
}

/// Grow a generated case so that its conversation reaches the agent's
/// trigger as often as agent mode needs: a generated history sits around
/// the trigger only in its boundary share, and an agent adds its own
/// system prompt and tool definitions besides. Each case draws how far
/// its results reach, as a multiple of the trigger's bytes (the trigger in
/// tokens × `bytesPerToken`, or the ceiling when that is lower): a fifth
/// under it (0.2–0.8×), three tenths around it (0.8–1.2×), half past it
/// (1.2–3×); results are grown by fresh text, round-robin, to that total.
/// A case whose results already reach it is left as generated.
pub fn grow(case: &mut Case, seed: u64) {
    let config = &case.config;
    let trigger_bytes = (config.trigger() * config.bytes_per_token)
        .min(config.transport_max_body_bytes)
        .max(1);
    let mut rng = SplitMix64::new(seed);
    let reach = match rng.below(10) {
        0 | 1 => rng.range(20, 80),
        2..=4 => rng.range(80, 120),
        _ => rng.range(120, 300),
    };
    let target = (trigger_bytes * reach / 100) as usize;
    let results: Vec<usize> = (0..case.messages.len())
        .filter(|&i| case.messages[i].role == Role::Tool)
        .collect();
    let total = |msgs: &[crate::model::Message]| -> usize {
        results.iter().map(|&i| msgs[i].content.text_len()).sum()
    };
    if results.is_empty() {
        return;
    }
    let mut have = total(&case.messages);
    let mut k = 0;
    while have < target {
        let i = results[k % results.len()];
        let class = *rng.pick(&ContentClass::ALL);
        let n = (target - have).min(8 * 1024);
        let more = text::text(&mut rng, class, n);
        let m = &mut case.messages[i];
        let mut grown = m.content.text().into_owned();
        grown.push('\n');
        grown.push_str(&more);
        have += more.len() + 1;
        m.content = Content::Text(grown);
        k += 1;
    }
}

impl Script {
    /// The script of `case`, with `summaries` as its summary sizes.
    pub fn from_case(case: &Case, summaries: Vec<u32>) -> Script {
        let msgs = &case.messages;
        let task = msgs
            .iter()
            .find(|m| m.role == Role::User && !m.content.text().trim().is_empty())
            .map(|m| clean(&m.content.text()))
            .unwrap_or_default();
        let task = format!(
            "Task: {}",
            truncate_utf8(task.trim(), MAX_TASK_BYTES - "Task: ".len())
        );
        let mut turns = Vec::new();
        for range in iterations(msgs) {
            let opener = &msgs[range.start];
            if !opener.opens_iteration() {
                continue;
            }
            let t = turns.len();
            let results = &msgs[range.start + 1..range.end];
            let calls: Vec<ScriptCall> = opener
                .calls()
                .iter()
                .filter_map(|c| {
                    results
                        .iter()
                        .find(|r| r.tool_call_id.as_deref() == Some(c.id.as_str()))
                })
                .enumerate()
                .map(|(i, result)| ScriptCall {
                    id: format!("call_{t}_{i}"),
                    file: format!("t{t:03}-{i}.txt"),
                    content: clean(&result.content.text()),
                })
                .collect();
            if calls.is_empty() {
                continue;
            }
            turns.push(ScriptTurn {
                text: match &opener.content {
                    Content::Text(s) => clean(s),
                    _ => String::new(),
                },
                calls,
            });
        }
        let final_answer = msgs
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.calls().is_empty())
            .map(|m| clean(&m.content.text()))
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "Done: every file was read.".into());
        Script {
            task,
            turns,
            final_answer,
            summaries,
        }
    }

    /// Summary sizes for the case numbered by `seed`: a few, mostly under
    /// what a summary request allows, one in four over it.
    pub fn summary_sizes(seed: u64) -> Vec<u32> {
        let mut rng = SplitMix64::new(seed);
        (0..4)
            .map(|_| {
                if rng.chance(25) {
                    rng.range(101, 160) as u32
                } else {
                    rng.range(10, 90) as u32
                }
            })
            .collect()
    }

    /// Every call of the script, with its turn.
    pub fn calls(&self) -> impl Iterator<Item = (usize, &ScriptCall)> {
        self.turns
            .iter()
            .enumerate()
            .flat_map(|(t, turn)| turn.calls.iter().map(move |c| (t, c)))
    }

    /// Requests a case may take: four a model turn, the final answer
    /// counted (SPEC §9, `finishes`).
    pub fn request_budget(&self) -> usize {
        4 * (self.turns.len() + 1)
    }

    /// The number of parallel calls of the widest turn.
    pub fn widest_turn(&self) -> usize {
        self.turns.iter().map(|t| t.calls.len()).max().unwrap_or(0)
    }
}

/// Text as a file or an argument carries it: no NUL (a file with one is
/// "binary" to many tools, and no environment variable can hold one).
fn clean(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ToolCall};
    use serde_json::json;

    fn case(messages: Vec<Message>) -> Case {
        Case {
            config: Default::default(),
            messages,
        }
    }

    #[test]
    fn each_calling_iteration_is_a_turn_and_each_answered_call_a_file() {
        let c = case(vec![
            Message::system("sys"),
            Message::user("fix \0the bug"),
            Message::assistant_calls(
                "looking",
                vec![
                    ToolCall::new("a", "read", json!({})),
                    ToolCall::new("b", "read", json!({})),
                ],
            ),
            Message::tool("a", "A-content"),
            Message::tool("b", "B-content"),
            Message::assistant("thinking"),
            Message::assistant_calls("", vec![ToolCall::new("a", "read", json!({}))]),
            Message::tool("a", "again"),
            Message::assistant_calls("", vec![ToolCall::new("p", "read", json!({}))]),
            Message::assistant("all done"),
        ]);
        let s = Script::from_case(&c, vec![50]);
        assert_eq!(s.task, "Task: fix the bug");
        assert_eq!(s.turns.len(), 2, "the pending call makes no turn");
        assert_eq!(s.turns[0].text, "looking");
        let files: Vec<_> = s.calls().map(|(t, c)| (t, c.file.as_str())).collect();
        assert_eq!(
            files,
            [(0, "t000-0.txt"), (0, "t000-1.txt"), (1, "t001-0.txt")]
        );
        assert_eq!(s.turns[1].calls[0].content, "again");
        assert_eq!(s.turns[1].calls[0].id, "call_1_0");
        assert_eq!(s.final_answer, "all done");
        assert_eq!(s.request_budget(), 12);
    }

    #[test]
    fn a_script_reads_back_as_it_was_written() {
        let c = crate::generate::case_from_seed(7, 3, &Default::default());
        let s = Script::from_case(&c, Script::summary_sizes(9));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(serde_json::from_value::<Script>(v).unwrap(), s);
    }
}
