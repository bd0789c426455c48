//! What the compactor answered, against what it was sent: each output
//! message is kept verbatim (from input message i), changed (from input
//! message i, with the JSON paths that changed, old → new), or new; each
//! input message not in the output is dropped. A failure report shows it,
//! so that the cause of a verdict — a field the compactor dropped, a result
//! it cut — is on the page, not only the invariant's words.

use serde_json::{json, Value};

use crate::model::{engine, one_line, truncate_utf8, Message};
use crate::subject::CompactAnswer;

/// How many changed paths a changed message lists.
const PATHS: usize = 4;
/// How many bytes of a value a changed path shows.
const SHOW: usize = 60;

/// One line of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Output messages `out` are input messages `input`, verbatim (runs).
    Kept { out: (usize, usize), input: usize },
    /// Output message `out` is input message `input` with these paths
    /// changed: (path, old, new).
    Changed {
        out: usize,
        input: usize,
        paths: Vec<(String, String, String)>,
    },
    /// Output message `out` is in no input message.
    New { out: usize, role: String },
    /// Input message `input` is in no output message.
    Dropped { input: usize, role: String },
}

/// The diff of `output` against `input`: output messages matched in
/// order to input messages that are equal (kept), else to the next unused
/// input message of the same role (changed), else new.
pub fn diff(input: &[Message], output: &[Message]) -> Vec<Entry> {
    let input: Vec<Value> = input.iter().map(engine::message_to_value).collect();
    let output: Vec<Value> = output.iter().map(engine::message_to_value).collect();
    let mut used = vec![false; input.len()];
    let mut next = 0;
    let mut entries: Vec<Entry> = Vec::new();
    for (j, m) in output.iter().enumerate() {
        let same = (next..input.len()).find(|&i| !used[i] && input[i] == *m);
        if let Some(i) = same {
            used[i] = true;
            next = i + 1;
            match entries.last_mut() {
                Some(Entry::Kept { out, input }) if out.1 + 1 == j && *input + j - out.0 == i => {
                    out.1 = j
                }
                _ => entries.push(Entry::Kept {
                    out: (j, j),
                    input: i,
                }),
            }
            continue;
        }
        let like = (next..input.len()).find(|&i| !used[i] && input[i]["role"] == m["role"]);
        match like {
            Some(i) => {
                used[i] = true;
                next = i + 1;
                let mut paths = Vec::new();
                changed_paths(&input[i], m, String::new(), &mut paths);
                entries.push(Entry::Changed {
                    out: j,
                    input: i,
                    paths,
                });
            }
            None => entries.push(Entry::New {
                out: j,
                role: role(m),
            }),
        }
    }
    for (i, m) in input.iter().enumerate() {
        if !used[i] {
            entries.push(Entry::Dropped {
                input: i,
                role: role(m),
            });
        }
    }
    entries
}

fn role(m: &Value) -> String {
    m["role"].as_str().unwrap_or("?").to_owned()
}

/// The JSON paths at which `new` differs from `old` (`/content`,
/// `/toolCalls/0/arguments/path`, `/annotations` dropped as `absent`).
fn changed_paths(old: &Value, new: &Value, at: String, out: &mut Vec<(String, String, String)>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let path = format!("{at}/{k}");
                match b.get(k) {
                    Some(w) => changed_paths(v, w, path, out),
                    None => out.push((path, shown(v), "absent".into())),
                }
            }
            for (k, w) in b {
                if !a.contains_key(k) {
                    out.push((format!("{at}/{k}"), "absent".into(), shown(w)));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                changed_paths(v, w, format!("{at}/{i}"), out);
            }
        }
        _ if old != new => out.push((
            if at.is_empty() { "/".into() } else { at },
            shown(old),
            shown(new),
        )),
        _ => {}
    }
}

fn shown(v: &Value) -> String {
    let text = one_line(&v.to_string());
    if text.len() <= SHOW {
        return text;
    }
    format!("{}… ({} bytes)", truncate_utf8(&text, SHOW), text.len())
}

/// The answer and its diff, one line each, for the human and Markdown
/// reports.
pub fn answer_lines(input: &[Message], answer: &CompactAnswer) -> Vec<String> {
    let output = match answer {
        CompactAnswer::Messages(m) => m,
        CompactAnswer::CannotFit { message } => {
            return vec![format!("answered cannot_fit: {}", one_line(message))]
        }
        CompactAnswer::InvalidInput { message } => {
            return vec![format!("answered invalid_input: {}", one_line(message))]
        }
    };
    let mut lines = vec![format!(
        "answered {} message(s) for the {} sent:",
        output.len(),
        input.len()
    )];
    for e in diff(input, output) {
        lines.push(match e {
            Entry::Kept { out: (a, b), input } if a == b => {
                format!("  [{a}] kept verbatim: input [{input}]")
            }
            Entry::Kept { out: (a, b), input } => format!(
                "  [{a}–{b}] kept verbatim: input [{input}–{}]",
                input + b - a
            ),
            Entry::Changed { out, input, paths } => {
                let mut shown: Vec<String> = paths
                    .iter()
                    .take(PATHS)
                    .map(|(p, old, new)| format!("{p}: {old} → {new}"))
                    .collect();
                if paths.len() > PATHS {
                    shown.push(format!("… {} more path(s)", paths.len() - PATHS));
                }
                format!(
                    "  [{out}] changed from input [{input}]: {}",
                    shown.join("; ")
                )
            }
            Entry::New { out, role } => format!("  [{out}] new ({role})"),
            Entry::Dropped { input, role } => format!("  input [{input}] dropped ({role})"),
        });
    }
    lines
}

/// The answer as the JSON report writes it: `kind`, and `messages` with
/// `diff`, or `message`.
pub fn answer_json(input: &[Message], answer: &CompactAnswer) -> Value {
    match answer {
        CompactAnswer::Messages(m) => json!({
            "kind": "messages",
            "messages": engine::write_messages(m),
            "diff": answer_lines(input, answer).split_off(1),
        }),
        CompactAnswer::CannotFit { message } => json!({"kind": "cannot_fit", "message": message}),
        CompactAnswer::InvalidInput { message } => {
            json!({"kind": "invalid_input", "message": message})
        }
    }
}

/// What [`answer_json`] wrote (`report merge` reads it back).
pub fn answer_from_json(v: &Value) -> Option<CompactAnswer> {
    let message = || v["message"].as_str().unwrap_or("").to_owned();
    match v["kind"].as_str()? {
        "messages" => {
            let msgs = v["messages"].as_array()?;
            let read: Result<Vec<Message>, _> = msgs
                .iter()
                .enumerate()
                .map(|(i, m)| engine::message_from_value(m, i))
                .collect();
            Some(CompactAnswer::Messages(read.ok()?))
        }
        "cannot_fit" => Some(CompactAnswer::CannotFit { message: message() }),
        "invalid_input" => Some(CompactAnswer::InvalidInput { message: message() }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    #[test]
    fn kept_changed_new_and_dropped_are_told_apart() {
        let input = vec![
            Message::system("sys"),
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        let output = vec![
            Message::system("sys"),
            Message::system("[summary] a b"),
            Message::user("C"),
        ];
        let lines = answer_lines(&input, &CompactAnswer::Messages(output));
        let text = lines.join("\n");
        assert!(text.contains("[0] kept verbatim: input [0]"), "{text}");
        assert!(text.contains("[1] new (system)"), "{text}");
        assert!(
            text.contains("[2] changed from input [1]: /content: \"a\" → \"C\""),
            "{text}"
        );
        assert!(text.contains("input [2] dropped (assistant)"), "{text}");
        assert!(text.contains("input [3] dropped (user)"), "{text}");
    }

    #[test]
    fn a_dropped_field_is_named_by_its_path() {
        let mut m = Message::user("x");
        let with: Message = {
            let mut v = engine::message_to_value(&m);
            v["annotations"] = json!([{"k": 1}]);
            engine::message_from_value(&v, 0).unwrap()
        };
        m.content = with.content.clone();
        let lines = answer_lines(
            std::slice::from_ref(&with),
            &CompactAnswer::Messages(vec![m]),
        );
        assert!(
            lines[1].contains("/annotations: [{\"k\":1}] → absent"),
            "{lines:?}"
        );
    }
}
