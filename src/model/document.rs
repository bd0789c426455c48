//! A history document as users hand it to us (SPEC §8): a JSON array of
//! messages, or an object with a `messages` field (and a top-level `system`
//! for `anthropic`) whose other fields are kept and written back.

use serde_json::{Map, Value};

use super::{anthropic, check_well_formed, engine, openai, Message, WireFormat};
use crate::error::{json_type, InputError, InputErrorKind};

/// serde_json's nesting limit, which bounds what we parse (no stack overflow).
pub const MAX_DEPTH: usize = 128;

/// The outer shape of a document, kept so that output has the input's shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A bare JSON array of messages.
    Array,
    /// An object; these are its fields other than `messages` (and, for
    /// `anthropic`, other than `system`), in order.
    Object(Map<String, Value>),
}

/// A parsed, well-formed history and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub shape: Shape,
    pub format: WireFormat,
    pub messages: Vec<Message>,
}

impl Document {
    /// Parse bytes as a history document. `format` overrides detection.
    /// Errors name the message index and the problem; the caller adds the file.
    pub fn parse(bytes: &[u8], format: Option<WireFormat>) -> Result<Document, InputError> {
        let value = parse_json(bytes)?;
        Document::from_value(value, format)
    }

    /// Read a document from a JSON value (checks well-formedness too).
    pub fn from_value(value: Value, format: Option<WireFormat>) -> Result<Document, InputError> {
        let (shape, raw, system) = match value {
            Value::Array(arr) => (Shape::Array, arr, None),
            Value::Object(mut obj) => {
                let raw = match obj.shift_remove("messages") {
                    Some(Value::Array(arr)) => arr,
                    Some(other) => {
                        return Err(InputError::shape(format!(
                            "`messages` must be an array of messages, found {}",
                            json_type(&other)
                        )))
                    }
                    None => {
                        return Err(InputError::shape(
                            "expected a JSON array of messages or an object with a `messages` field; this object has no `messages`",
                        ))
                    }
                };
                // `system` at the top level belongs to the anthropic format
                // (unless the format, given or hinted, is another: then it is
                // an envelope field like any other, kept).
                let hinted = obj
                    .get("format")
                    .and_then(Value::as_str)
                    .and_then(WireFormat::parse);
                let is_anthropic = match format.or(hinted) {
                    Some(f) => f == WireFormat::Anthropic,
                    None => obj.contains_key("system"),
                };
                let system = if is_anthropic {
                    obj.shift_remove("system")
                } else {
                    None
                };
                (Shape::Object(obj), raw, system)
            }
            other => {
                return Err(InputError::shape(format!(
                "expected a JSON array of messages or an object with a `messages` field, found {}",
                json_type(&other)
            )))
            }
        };
        let hinted = match &shape {
            Shape::Object(obj) => obj
                .get("format")
                .and_then(Value::as_str)
                .and_then(WireFormat::parse),
            Shape::Array => None,
        };
        let format = format
            .or(hinted)
            .unwrap_or_else(|| WireFormat::detect(&raw, system.is_some()));
        let messages = read_messages_owned(format, system.as_ref(), raw)?;
        check_well_formed(&messages)?;
        Ok(Document {
            shape,
            format,
            messages,
        })
    }

    /// The document with `messages` in place of its own, in its own format and shape.
    pub fn to_value_with(&self, messages: &[Message]) -> Value {
        let (system, msgs) = write_messages(self.format, messages);
        match &self.shape {
            Shape::Array => Value::Array(msgs),
            Shape::Object(obj) => {
                let mut out = obj.clone();
                if let Some(system) = system {
                    out.insert("system".into(), system);
                }
                out.insert("messages".into(), Value::Array(msgs));
                Value::Object(out)
            }
        }
    }

    pub fn to_value(&self) -> Value {
        self.to_value_with(&self.messages)
    }

    /// Write [`Document::to_value_with`] as compact JSON to `out`, one
    /// message at a time (in the engine and openai formats): a big history
    /// is never built a second time as a JSON tree.
    pub fn write_with(
        &self,
        messages: &[Message],
        mut out: impl std::io::Write,
    ) -> std::io::Result<()> {
        let one: fn(&Message) -> Value = match self.format {
            WireFormat::Engine => engine::message_to_value,
            WireFormat::Openai if !openai::has_tool_images(messages) => openai::message_to_value,
            WireFormat::Openai | WireFormat::Anthropic => {
                return serde_json::to_writer(out, &self.to_value_with(messages))
                    .map_err(Into::into)
            }
        };
        if let Shape::Object(obj) = &self.shape {
            out.write_all(b"{")?;
            for (k, v) in obj {
                serde_json::to_writer(&mut out, k)?;
                out.write_all(b":")?;
                serde_json::to_writer(&mut out, v)?;
                out.write_all(b",")?;
            }
            out.write_all(b"\"messages\":")?;
        }
        out.write_all(b"[")?;
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, &one(m))?;
        }
        out.write_all(b"]")?;
        if matches!(self.shape, Shape::Object(_)) {
            out.write_all(b"}")?;
        }
        Ok(())
    }
}

/// Read messages in `format`; for anthropic, `system` is the top-level field.
pub fn read_messages(
    format: WireFormat,
    system: Option<&Value>,
    raw: &[Value],
) -> Result<Vec<Message>, InputError> {
    let read = match format {
        WireFormat::Engine => engine::read_messages(raw),
        WireFormat::Openai => openai::read_messages(raw),
        WireFormat::Anthropic => anthropic::read_messages(system, raw),
    };
    read.map_err(|e| match e.message.and_then(|i| raw.get(i)) {
        Some(v) => showing(e, v),
        None => e,
    })
}

/// `e`, with the message `v` it is about as written: what a history or
/// an answer held, beside what is wrong with it.
fn showing(e: InputError, v: &Value) -> InputError {
    e.written(|| super::text::excerpt(v))
}

/// [`read_messages`], consuming the raw array: in the engine and openai
/// formats each raw message is dropped as soon as it is read, so that a
/// big history is never in memory twice over.
pub fn read_messages_owned(
    format: WireFormat,
    system: Option<&Value>,
    raw: Vec<Value>,
) -> Result<Vec<Message>, InputError> {
    let mut out = Vec::with_capacity(raw.len());
    match format {
        WireFormat::Engine => {
            for (i, v) in raw.into_iter().enumerate() {
                let read = engine::message_from_value(&v, i);
                out.push(read.map_err(|e| showing(e.at_message(i), &v))?);
            }
        }
        WireFormat::Openai => {
            for (i, v) in raw.into_iter().enumerate() {
                let read = openai::message_from_value(&v);
                out.push(read.map_err(|e| showing(e.at_message(i), &v))?);
            }
        }
        WireFormat::Anthropic => return read_messages(format, system, &raw),
    }
    Ok(out)
}

/// Write messages in `format`: the top-level `system` (anthropic only) and the message array.
pub fn write_messages(format: WireFormat, msgs: &[Message]) -> (Option<Value>, Vec<Value>) {
    match format {
        WireFormat::Engine => (None, engine::write_messages(msgs)),
        WireFormat::Openai => (None, openai::write_messages(msgs)),
        WireFormat::Anthropic => anthropic::write_messages(msgs),
    }
}

/// Parse JSON text with errors a user can act on: empty input, invalid
/// UTF-8 (with the byte offset), syntax errors and over-deep nesting (with
/// line, column and, where it can be found, the message index).
pub fn parse_json(bytes: &[u8]) -> Result<Value, InputError> {
    parse_json_expecting(
        bytes,
        "a JSON array of messages or an object with a `messages` field",
    )
}

/// [`parse_json`] of a document that is not a history: an empty one is
/// reported as not being `expected` (say, "a ctxgate fixture, a JSON
/// object").
pub fn parse_json_expecting(bytes: &[u8], expected: &str) -> Result<Value, InputError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(InputError::new(
            InputErrorKind::Empty,
            format!("empty input: expected {expected}"),
        ));
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        let mut err = InputError::new(
            InputErrorKind::Utf8,
            format!(
                "not valid UTF-8 at byte {} (JSON input must be UTF-8)",
                e.valid_up_to()
            ),
        );
        err.message = message_index_at(bytes, e.valid_up_to());
        return Err(err);
    }
    serde_json::from_slice(bytes).map_err(|e| {
        let offset = byte_offset(bytes, e.line(), e.column());
        let what = e.to_string();
        let (kind, problem) = if what.starts_with("recursion limit exceeded") {
            (
                InputErrorKind::TooDeep,
                format!(
                    "JSON nested deeper than {MAX_DEPTH} levels at line {}, column {}",
                    e.line(),
                    e.column()
                ),
            )
        } else if e.is_eof() {
            (InputErrorKind::Syntax, format!("truncated JSON: {what}"))
        } else {
            (InputErrorKind::Syntax, format!("malformed JSON: {what}"))
        };
        let mut err = InputError::new(kind, problem);
        err.message = message_index_at(bytes, offset);
        err
    })
}

fn byte_offset(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(p) => start += p + 1,
            None => break,
        }
    }
    (start + column.saturating_sub(1)).min(bytes.len())
}

/// Which element of the messages array (the top-level array, or the
/// `messages` array of the top-level object) contains byte `offset`.
/// A light scan: strings are skipped, brackets counted.
fn message_index_at(bytes: &[u8], offset: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut array_depth = None; // depth inside the messages array
    let mut index = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut last_key_at_depth1: Option<(usize, usize)> = None;
    let mut string_start = 0;
    for (pos, &b) in bytes.iter().enumerate().take(offset) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                if depth == 1 && array_depth.is_none() {
                    last_key_at_depth1 = Some((string_start, pos));
                }
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                string_start = pos + 1;
            }
            b'[' | b'{' => {
                depth += 1;
                let opens_messages = b == b'['
                    && array_depth.is_none()
                    && (depth == 1
                        || (depth == 2
                            && last_key_at_depth1
                                .is_some_and(|(s, e)| &bytes[s..e] == b"messages")));
                if opens_messages {
                    array_depth = Some(depth);
                }
            }
            b']' | b'}' => {
                if array_depth == Some(depth) {
                    array_depth = None;
                }
                depth = depth.saturating_sub(1);
            }
            b',' if array_depth == Some(depth) => index += 1,
            _ => {}
        }
    }
    array_depth.map(|_| index)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message that does not read is shown as written, on one line and
    /// cut, in every format, whether the array is read or consumed: what a
    /// history or a subject's answer held, beside what is wrong with it.
    #[test]
    fn a_message_that_does_not_read_is_shown_as_written() {
        let long = "x".repeat(1000);
        let raw = |bad: Value| vec![serde_json::json!({"role": "user", "content": "hi"}), bad];
        for format in WireFormat::ALL {
            let bad = serde_json::json!({"rol": "user", "content": long});
            let errors = [
                read_messages(format, None, &raw(bad.clone())).unwrap_err(),
                read_messages_owned(format, None, raw(bad)).unwrap_err(),
            ];
            for e in errors {
                assert_eq!(e.message, Some(1), "{format}: {e}");
                let written = e.written.as_deref().unwrap_or_default();
                assert!(
                    written.starts_with(r#"{"rol":"user","content":"xxx"#),
                    "{format}: {e}"
                );
                assert_eq!(
                    written.chars().count(),
                    crate::model::text::EXCERPT_CHARS,
                    "{format}: {e}"
                );
                assert!(e.to_string().contains("; as written: {"), "{format}: {e}");
            }
        }
    }

    #[test]
    fn message_index_is_found_in_arrays_and_objects() {
        let text = br#"[{"role":"user","content":"a"},{"role":"user","content":x}]"#;
        let err = parse_json(text).unwrap_err();
        assert_eq!(err.message, Some(1), "{err}");
        let text =
            br#"{"model":"m","messages":[{"role":"user"},{"role":"user"},{"content":[1,2,}]}"#;
        let err = parse_json(text).unwrap_err();
        assert_eq!(err.message, Some(2), "{err}");
    }

    #[test]
    fn invalid_utf8_names_the_message() {
        let mut text = br#"[{"role":"user","content":"a"},{"role":"user","content":""#.to_vec();
        text.extend_from_slice(&[0xff, 0xfe]);
        text.extend_from_slice(br#""}]"#);
        let err = parse_json(&text).unwrap_err();
        assert_eq!(err.message, Some(1), "{err}");
        assert!(err.problem.contains("UTF-8"));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let mut text = String::from(
            r#"[{"role":"user","content":"a"},{"role":"assistant","toolCalls":[{"id":"c","name":"n","arguments":"#,
        );
        text.push_str(&"[".repeat(100_000));
        let err = parse_json(text.as_bytes()).unwrap_err();
        assert!(err.problem.contains("nested deeper"), "{err}");
        assert_eq!(err.message, Some(1));
    }
}
