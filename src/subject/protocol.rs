//! Subject protocol v1 (SPEC §6): the JSON Lines codec shared by the
//! external-process subject (the harness's side) and `ctxgate serve` (the
//! subject's side).
//!
//! ```text
//! → {"op":"hello","protocol":1}
//! ← {"op":"hello","protocol":1,"name":…,"version":…,"ops":["compact","estimate"],
//!    "format":"engine","invariants":[…]}
//! → {"op":"compact","id":7,"config":{…},"messages":[…]}
//! ← {"id":7,"messages":[…]}   or   {"id":7,"error":{"kind":"cannot_fit","message":…}}
//! → {"op":"estimate","id":8,"config":{…},"messages":[…]}
//! ← {"id":8,"tokens":31337,"perMessage":[12,0,8190]}
//! ```
//!
//! Messages travel in the subject's declared format; for `anthropic`,
//! requests and answers also carry the top-level `system`.

use serde_json::{json, Map, Value};

use super::{CompactAnswer, EstimateAnswer, EstimateReply, Fault, FaultKind, SubjectInfo};
use crate::config::Config;
use crate::error::json_type;
use crate::invariant::InvariantSet;
use crate::model::{read_messages, write_messages, Message, WireFormat};

pub const PROTOCOL_VERSION: u64 = 1;

/// Subject-provided text made safe for a terminal and for one line of a
/// report: control characters (newlines included), DEL, C1 controls and
/// bidirectional overrides become `\u{…}` escapes, so that a subject can
/// neither drive the terminal nor forge report lines.
pub fn one_line(s: &str) -> String {
    escape_controls(s, false)
}

/// [`one_line`] for multi-line text (stderr): newlines and tabs are kept.
pub fn lines(s: &str) -> String {
    escape_controls(s, true)
}

fn escape_controls(s: &str, keep_lines: bool) -> String {
    let unsafe_char = |c: char| {
        let u = c as u32;
        (u < 0x20 && !(keep_lines && (c == '\n' || c == '\t')))
            || (0x7f..=0x9f).contains(&u)
            || (0x202a..=0x202e).contains(&u)
            || (0x2066..=0x2069).contains(&u)
    };
    if !s.chars().any(unsafe_char) {
        return s.to_owned();
    }
    s.chars()
        .map(|c| {
            if unsafe_char(c) {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The hello request.
pub fn hello_request() -> Value {
    json!({"op": "hello", "protocol": PROTOCOL_VERSION})
}

/// The subject's hello, from its info.
pub fn hello_answer(info: &SubjectInfo) -> Value {
    let mut ops = vec!["compact"];
    if info.estimates {
        ops.push("estimate");
    }
    let mut v = json!({
        "op": "hello",
        "protocol": PROTOCOL_VERSION,
        "name": info.name,
        "version": info.version,
        "ops": ops,
        "format": info.format.as_str(),
    });
    if let Some(set) = info.invariants {
        v["invariants"] = json!(set.names());
    }
    if info.exact_numbers {
        v["numbers"] = json!("exact");
    }
    v
}

/// Read a subject's hello.
pub fn parse_hello(v: &Value) -> Result<SubjectInfo, Fault> {
    let bad = |p: String| Fault::new(FaultKind::Protocol, format!("hello: {p}"));
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("expected an object, found {}", json_type(v))))?;
    if obj.get("op").and_then(Value::as_str) != Some("hello") {
        return Err(bad("the first answer must have \"op\":\"hello\"".into()));
    }
    match obj.get("protocol") {
        Some(v) if v.as_u64() == Some(PROTOCOL_VERSION) => {}
        Some(v) => {
            return Err(bad(format!(
                "protocol {} is not supported (this harness speaks 1)",
                one_line(&v.to_string())
            )))
        }
        None => return Err(bad("no `protocol` (this harness speaks 1)".into())),
    }
    let text = |k: &str| one_line(obj.get(k).and_then(Value::as_str).unwrap_or(""));
    let mut info = SubjectInfo::new(text("name"), text("version"));
    if info.name.is_empty() {
        info.name = "unnamed subject".into();
    }
    let ops: Vec<&str> = match obj.get("ops") {
        None => vec!["compact"],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(other) => {
            return Err(bad(format!(
                "`ops` must be an array, found {}",
                json_type(other)
            )))
        }
    };
    if !ops.contains(&"compact") {
        return Err(bad("`ops` must include \"compact\"".into()));
    }
    info.estimates = ops.contains(&"estimate");
    if let Some(f) = obj.get("format") {
        let name = f.as_str().unwrap_or("");
        info.format = WireFormat::parse(name).ok_or_else(|| bad(format!("unknown format {f}")))?;
    }
    if let Some(list) = obj.get("invariants") {
        let names = list
            .as_array()
            .ok_or_else(|| bad("`invariants` must be an array of names".into()))?
            .iter()
            .map(|n| n.as_str().unwrap_or("?"))
            .collect::<Vec<_>>()
            .join(",");
        info.invariants = Some(InvariantSet::parse_list(&names).map_err(bad)?);
    }
    info.exact_numbers = match obj.get("numbers") {
        None => false,
        Some(Value::String(s)) if s == "portable" => false,
        Some(Value::String(s)) if s == "exact" => true,
        Some(other) => {
            return Err(bad(format!(
                "`numbers` must be \"exact\" or \"portable\", found {other}"
            )))
        }
    };
    Ok(info)
}

/// A `compact` or `estimate` request in `format`.
pub fn request(op: &str, id: u64, config: &Config, msgs: &[Message], format: WireFormat) -> Value {
    let mut obj = Map::new();
    obj.insert("op".into(), op.into());
    obj.insert("id".into(), id.into());
    obj.insert("config".into(), config.to_value());
    put_messages(&mut obj, format, msgs);
    Value::Object(obj)
}

fn put_messages(obj: &mut Map<String, Value>, format: WireFormat, msgs: &[Message]) {
    let (system, arr) = write_messages(format, msgs);
    if let Some(system) = system {
        obj.insert("system".into(), system);
    }
    obj.insert("messages".into(), Value::Array(arr));
}

/// Read the messages (and `system`, for anthropic) of a request or answer.
pub fn take_messages(obj: &Map<String, Value>, format: WireFormat) -> Result<Vec<Message>, String> {
    let raw = match obj.get("messages") {
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(format!(
                "`messages` must be an array, found {}",
                json_type(other)
            ))
        }
        None => return Err("no `messages`".into()),
    };
    let system = if format == WireFormat::Anthropic {
        obj.get("system")
    } else {
        None
    };
    read_messages(format, system, raw).map_err(|e| e.to_string())
}

/// An answer to `compact`.
pub fn compact_answer(id: &Value, answer: &CompactAnswer, format: WireFormat) -> Value {
    let mut obj = Map::new();
    obj.insert("id".into(), id.clone());
    match answer {
        CompactAnswer::Messages(msgs) => put_messages(&mut obj, format, msgs),
        CompactAnswer::CannotFit { message } => {
            obj.insert(
                "error".into(),
                json!({"kind": "cannot_fit", "message": message}),
            );
        }
        CompactAnswer::InvalidInput { message } => {
            obj.insert(
                "error".into(),
                json!({"kind": "invalid_input", "message": message}),
            );
        }
    }
    Value::Object(obj)
}

/// An answer to `estimate`.
pub fn estimate_answer(id: &Value, reply: &EstimateReply) -> Value {
    match reply {
        EstimateReply::Tokens(e) => {
            let mut v = json!({"id": id, "tokens": e.tokens});
            if let Some(per) = &e.per_message {
                v["perMessage"] = json!(per);
            }
            v
        }
        EstimateReply::InvalidInput { message } => error_answer(id, "invalid_input", message),
    }
}

/// An error answer.
pub fn error_answer(id: &Value, kind: &str, message: &str) -> Value {
    json!({"id": id, "error": {"kind": kind, "message": message}})
}

/// Read the `error` of an answer, if it has one: `Ok(Some(answer))` for the
/// two kinds that are answers, a fault for any other kind.
pub fn parse_error(obj: &Map<String, Value>) -> Result<Option<CompactAnswer>, Fault> {
    let Some(err) = obj.get("error") else {
        return Ok(None);
    };
    let kind = err.get("kind").and_then(Value::as_str).unwrap_or("");
    let message = one_line(err.get("message").and_then(Value::as_str).unwrap_or(""));
    match kind {
        "cannot_fit" => Ok(Some(CompactAnswer::CannotFit { message })),
        "invalid_input" => Ok(Some(CompactAnswer::InvalidInput { message })),
        other => Err(Fault::new(
            FaultKind::UnknownErrorKind,
            format!(
                "error of kind {} (only cannot_fit and invalid_input are answers): {message}",
                one_line(&format!("{other:?}"))
            ),
        )),
    }
}

/// Read an answer to `compact`.
pub fn parse_compact_answer(
    obj: &Map<String, Value>,
    format: WireFormat,
) -> Result<CompactAnswer, Fault> {
    if let Some(answer) = parse_error(obj)? {
        return Ok(answer);
    }
    take_messages(obj, format)
        .map(CompactAnswer::Messages)
        .map_err(|p| {
            Fault::new(
                FaultKind::Protocol,
                format!("the answer's messages do not parse: {p}"),
            )
        })
}

/// Read an answer to `estimate`: figures, or `invalid_input` (an answer,
/// judged by the estimate invariants); `cannot_fit` means nothing for an
/// estimate and is a `protocol` fault, like any malformed answer.
pub fn parse_estimate_answer(obj: &Map<String, Value>) -> Result<EstimateReply, Fault> {
    match parse_error(obj)? {
        Some(CompactAnswer::InvalidInput { message }) => {
            return Ok(EstimateReply::InvalidInput { message })
        }
        Some(answer) => {
            return Err(Fault::new(
                FaultKind::Protocol,
                format!("estimate answered with an error: {}", answer.describe()),
            ))
        }
        None => {}
    }
    let bad = |p: &str| Fault::new(FaultKind::Protocol, format!("estimate answer: {p}"));
    let tokens = obj
        .get("tokens")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("`tokens` must be a non-negative integer"))?;
    let per_message = match obj.get("perMessage") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|t| {
                    t.as_u64()
                        .ok_or_else(|| bad("`perMessage` must hold non-negative integers"))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err(bad("`perMessage` must be an array")),
    };
    Ok(EstimateReply::Tokens(EstimateAnswer {
        tokens,
        per_message,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_of_another_protocol_says_which_in_words() {
        let f = parse_hello(&json!({"op": "hello", "protocol": 2})).unwrap_err();
        assert_eq!(f.kind, FaultKind::Protocol);
        assert_eq!(
            f.detail,
            "hello: protocol 2 is not supported (this harness speaks 1)"
        );
        let f = parse_hello(&json!({"op": "hello"})).unwrap_err();
        assert!(f.detail.contains("no `protocol`"), "{}", f.detail);
    }

    #[test]
    fn subject_text_loses_its_control_characters() {
        assert_eq!(one_line("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\u{a}c");
        assert_eq!(lines("x\ny\t\u{7}"), "x\ny\t\\u{7}");
        assert_eq!(one_line("plain é 🦀"), "plain é 🦀");
        assert_eq!(one_line("\u{202e}gnp.exe"), "\\u{202e}gnp.exe");
    }
}
