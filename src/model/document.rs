//! A history document as users hand it to us (SPEC §8): a JSON array of
//! messages, or an object with a `messages` field (and a top-level `system`
//! for `anthropic`) whose other fields are kept and written back.

use serde_json::{Map, Value};

use super::streamed::{self, Streamed};
use super::{anthropic, check_well_formed, engine, openai, unique_keys, Message, WireFormat};
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
    ///
    /// Each message is read as it is parsed (`model::streamed`): the
    /// document is never in memory as a whole JSON tree. Where that gives
    /// up — an error, or a format settled after the messages — the whole
    /// tree is read ([`Document::parse_whole`]), for the precise error.
    pub fn parse(bytes: &[u8], format: Option<WireFormat>) -> Result<Document, InputError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        match streamed::read(&mut de, format) {
            Streamed::Read(doc) => Ok(doc),
            Streamed::IllFormed(e) => Err(e),
            Streamed::Again => Document::parse_whole(bytes, format),
        }
    }

    /// [`Document::parse`] through the whole JSON tree ([`parse_json`],
    /// then [`Document::from_value`]): the reading errors are reported by.
    pub fn parse_whole(bytes: &[u8], format: Option<WireFormat>) -> Result<Document, InputError> {
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
/// UTF-8 (with the byte offset), syntax errors, over-deep nesting and a
/// key an object names twice ([`unique_keys`]), with line, column and,
/// where it can be found, the message index.
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
    if let Some(problem) = byte_order_mark(bytes) {
        return Err(InputError::new(InputErrorKind::Utf8, problem));
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
    unique_keys::from_slice(bytes).map_err(|e| json_error(bytes, &e))
}

/// What is wrong with input that starts with a byte-order mark, as
/// Windows editors and PowerShell write files: JSON text is UTF-8 without
/// one (RFC 8259 §8.1), and the parser's own "expected value at line 1
/// column 1" does not say so.
pub(crate) fn byte_order_mark(bytes: &[u8]) -> Option<String> {
    match bytes {
        [0xEF, 0xBB, 0xBF, ..] => Some(
            "starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON text may not begin with \
             (RFC 8259 §8.1): write it as UTF-8 without one"
                .into(),
        ),
        [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] => Some(
            "is UTF-16 (it starts with the byte-order mark FF FE or FE FF): JSON input must \
             be UTF-8"
                .into(),
        ),
        _ => None,
    }
}

/// serde_json's error reading `bytes` — a syntax error, nesting past
/// [`MAX_DEPTH`], a repeated key ([`unique_keys`]) — as an input error
/// that says where: line, column, the message index when it is inside
/// one, and for a repeated key the JSON path of its object.
pub(crate) fn json_error(bytes: &[u8], e: &serde_json::Error) -> InputError {
    let offset = byte_offset(bytes, e.line(), e.column());
    let what = e.to_string();
    let (kind, problem) = if let Some(key) = unique_keys::duplicate_key(&what) {
        let frames = frames_at(bytes, offset);
        let path = path_of(bytes, &frames[..frames.len().saturating_sub(1)]);
        let object = match path.as_str() {
            "" => "the top-level object".to_owned(),
            p => format!("`{p}`"),
        };
        (
            InputErrorKind::DuplicateKey,
            format!(
                "duplicate key {key} in {object} at line {}, column {} (a key may appear once in a JSON object: readers differ on which value counts)",
                e.line(),
                e.column()
            ),
        )
    } else if what.starts_with("recursion limit exceeded") {
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
fn message_index_at(bytes: &[u8], offset: usize) -> Option<usize> {
    let frames = frames_at(bytes, offset);
    match frames.as_slice() {
        [Frame::Array { index }, ..] => Some(*index),
        [Frame::Object {
            key: Some((s, e)), ..
        }, Frame::Array { index }, ..]
            if &bytes[*s..*e] == b"messages" =>
        {
            Some(*index)
        }
        _ => None,
    }
}

/// One container open at a point of a JSON text: an object (the span of
/// the key read last in it, and whether a key comes next) or an array
/// (the index of the element being read).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Frame {
    Object {
        key: Option<(usize, usize)>,
        expect_key: bool,
    },
    Array {
        index: usize,
    },
}

/// The containers open at byte `offset` of `bytes`, outermost first. A
/// light scan, for errors only: strings are skipped, brackets counted.
fn frames_at(bytes: &[u8], offset: usize) -> Vec<Frame> {
    let mut stack = Vec::new();
    let (mut in_string, mut escaped, mut start) = (false, false, 0);
    for (pos, &b) in bytes.iter().enumerate().take(offset) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                if let Some(Frame::Object {
                    key,
                    expect_key: true,
                }) = stack.last_mut()
                {
                    *key = Some((start, pos));
                }
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                start = pos + 1;
            }
            b'{' => stack.push(Frame::Object {
                key: None,
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array { index }) => *index += 1,
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                None => {}
            },
            _ => {}
        }
    }
    // A key cut at `offset` (an error raised on it) is the key of its object.
    if in_string {
        if let Some(Frame::Object {
            key,
            expect_key: true,
        }) = stack.last_mut()
        {
            *key = Some((start, offset.min(bytes.len())));
        }
    }
    stack
}

/// The JSON path `frames` lead to: `messages[3].content`, keys that are
/// not plain names quoted and escaped (`x["a b"]`); empty at the top.
fn path_of(bytes: &[u8], frames: &[Frame]) -> String {
    let mut path = String::new();
    for f in frames {
        match *f {
            Frame::Array { index } => path.push_str(&format!("[{index}]")),
            Frame::Object {
                key: Some((s, e)), ..
            } => {
                // The key as written is escaped JSON: decoded when whole.
                let key = match bytes.get(s.wrapping_sub(1)..e + 1) {
                    Some(quoted) => serde_json::from_slice::<String>(quoted).ok(),
                    None => None,
                }
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes[s..e]).into_owned());
                let plain = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                match (plain, path.is_empty()) {
                    (true, true) => path.push_str(&key),
                    (true, false) => {
                        path.push('.');
                        path.push_str(&key);
                    }
                    (false, _) => path.push_str(&format!("[{key:?}]")),
                }
            }
            Frame::Object { key: None, .. } => path.push_str("{}"),
        }
    }
    path
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
