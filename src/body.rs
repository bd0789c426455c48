//! The exact size of a request body (SPEC §2).
//!
//! The body is the compact JSON serialisation of the envelope with
//! `messages` added, in the configured wire format: no insignificant
//! whitespace, non-ASCII unescaped, escapes only for `"`, `\` and control
//! characters (short forms `\n \r \t \b \f`, `\u00XX` for the rest). That is
//! exactly what `serde_json::to_vec` writes, and these functions return its
//! length byte for byte — without building the string.

use std::io::{self, Write};

use serde_json::{Map, Value};

use crate::config::Config;
use crate::model::json_size::{
    byte_specials, commas, const_string_size, lanes_sum, object_size, value_size_by, ObjectSize,
};
pub use crate::model::json_size::{string_size, string_size_scalar, string_size_swar, value_size};
use crate::model::parts::{self, ImageSource, Part};
use crate::model::value::shortest_spelling_len;
use crate::model::{engine, openai, Content, Message, Role, ToolCall, WireFormat};

/// Size of one message in the engine format.
pub fn message_size(m: &Message) -> u64 {
    const ROLE: u64 = const_string_size("role");
    const CONTENT: u64 = const_string_size("content");
    const TOOL_CALLS: u64 = const_string_size("toolCalls");
    const TOOL_CALL_ID: u64 = const_string_size("toolCallId");
    const PINNED: u64 = const_string_size("pinned");
    let mut object = ObjectSize::default();
    object.entry(ROLE, role_size(m.role));
    object.optional(CONTENT, content_size(&m.content));
    object.optional(TOOL_CALLS, m.tool_calls.as_deref().map(tool_calls_size));
    object.optional(TOOL_CALL_ID, m.tool_call_id.as_deref().map(string_size));
    object.optional(PINNED, m.pinned.map(bool_size));
    for (k, v) in &m.extra {
        if !engine::MESSAGE_FIELDS.contains(&k.as_str()) {
            object.named(k, value_size(v));
        }
    }
    object.size()
}

/// Size of a role's name as a JSON string.
fn role_size(role: Role) -> u64 {
    match role {
        Role::System => const { const_string_size(Role::System.as_str()) },
        Role::User => const { const_string_size(Role::User.as_str()) },
        Role::Assistant => const { const_string_size(Role::Assistant.as_str()) },
        Role::Tool => const { const_string_size(Role::Tool.as_str()) },
    }
}

fn bool_size(b: bool) -> u64 {
    if b {
        4
    } else {
        5
    }
}

/// Size of `content` in the engine format, `None` when it is absent.
fn content_size(c: &Content) -> Option<u64> {
    match c {
        Content::Absent => None,
        Content::Null => Some(4),
        Content::Text(s) => Some(string_size(s)),
        Content::Parts(parts) => Some(array_size(parts.iter().map(part_size))),
    }
}

/// Size of a JSON array from its items' sizes.
fn array_size(items: impl Iterator<Item = u64>) -> u64 {
    let (mut n, mut total) = (0usize, 2u64);
    for s in items {
        total += s;
        n += 1;
    }
    total + commas(n)
}

/// Size of one engine part (`model::parts::part_to_value`). An image's
/// data is not scanned: its escaping was counted when it was read.
pub fn part_size(p: &Part) -> u64 {
    match p {
        Part::Text(t) => with_own(
            &[
                ("type", string_size("text")),
                ("text", string_size(&t.text)),
            ],
            &t.extra,
            &parts::TEXT_FIELDS,
        ),
        Part::Image(i) => {
            let source = match &i.source {
                ImageSource::Inline(d) => [
                    ("mediaType", Some(string_size(d.media_type()))),
                    ("data", Some(d.data_json_size())),
                ],
                ImageSource::Url(u) => [("url", Some(string_size(u))), ("", None)],
            };
            let named = std::iter::once(("type", string_size("image")))
                .chain(source.into_iter().filter_map(|(k, s)| s.map(|s| (k, s))));
            object_size(named.chain(own_sizes(&i.extra, &parts::IMAGE_FIELDS)))
        }
        Part::Other(v) => value_size(v),
    }
}

/// `(key, size)` of each `extra` entry the format does not name.
fn own_sizes<'a>(
    extra: &'a Map<String, Value>,
    named: &'a [&'a str],
) -> impl Iterator<Item = (&'a str, u64)> + 'a {
    crate::model::field::own_fields(extra, named).map(|(k, v)| (k.as_str(), value_size(v)))
}

/// Size of an object of `named` fields then the `extra` entries not named.
fn with_own(named: &[(&str, u64)], extra: &Map<String, Value>, names: &[&str]) -> u64 {
    object_size(named.iter().copied().chain(own_sizes(extra, names)))
}

/// Size of the engine JSON of a `toolCalls` array: what ADR 0098's estimator counts.
pub fn tool_calls_size(calls: &[ToolCall]) -> u64 {
    2 + calls
        .iter()
        .map(|c| tool_call_size(c, value_size))
        .sum::<u64>()
        + commas(calls.len())
}

/// [`tool_calls_size`] with every number in the shortest spelling a
/// mainstream JSON library writes it in (`model::value::shortest_spelling_len`):
/// the estimate floor of `contract::tool_calls_floor`. Equal to
/// [`tool_calls_size`] when every number is portable.
pub fn tool_calls_floor_size(calls: &[ToolCall]) -> u64 {
    let shortest = |v: &Value| value_size_by(v, &shortest_spelling_len);
    2 + calls
        .iter()
        .map(|c| tool_call_size(c, shortest))
        .sum::<u64>()
        + commas(calls.len())
}

fn tool_call_size(c: &ToolCall, value: impl Fn(&Value) -> u64) -> u64 {
    const ID: u64 = const_string_size("id");
    const NAME: u64 = const_string_size("name");
    const ARGUMENTS: u64 = const_string_size("arguments");
    let mut object = ObjectSize::default();
    object.entry(ID, string_size(&c.id));
    object.entry(NAME, string_size(&c.name));
    object.entry(ARGUMENTS, value(&c.arguments));
    for (k, v) in &c.extra {
        if !engine::CALL_FIELDS.contains(&k.as_str()) {
            object.named(k, value(v));
        }
    }
    object.size()
}

/// Size of one message in the openai format: what
/// `openai::write_messages` writes for it, measured without writing (the
/// choices are the writer's own: [`openai::arguments_out`],
/// [`openai::call_type`], [`openai::function_extra`]). A tool message's
/// images are written in a `user` message of their own after its run of
/// results: that message and its comma count here, with the tool message
/// they came from, so that the body is still the sum of its messages.
pub fn openai_message_size(m: &Message) -> u64 {
    match openai::split_tool_images(m) {
        Some((tool, user)) => openai_one_size(&tool) + 1 + openai_one_size(&user),
        None => openai_one_size(m),
    }
}

fn openai_one_size(m: &Message) -> u64 {
    let calls = m
        .tool_calls
        .as_deref()
        .map(|calls| 2 + calls.iter().map(openai_call_size).sum::<u64>() + commas(calls.len()));
    let named = [
        ("role", Some(string_size(m.role.as_str()))),
        ("content", openai_content_size(&m.content)),
        ("tool_calls", calls),
        ("tool_call_id", m.tool_call_id.as_deref().map(string_size)),
        ("pinned", m.pinned.map(|p| if p { 4 } else { 5 })),
    ];
    with_extra(&named, &m.extra)
}

/// Size of `content` in the openai format, `None` when it is absent.
fn openai_content_size(c: &Content) -> Option<u64> {
    match c {
        Content::Parts(parts) => Some(array_size(parts.iter().map(openai::part_size))),
        other => content_size(other),
    }
}

fn openai_call_size(c: &ToolCall) -> u64 {
    let arguments = match openai::arguments_out(c) {
        openai::ArgumentsOut::Value(v) => value_size(v),
        openai::ArgumentsOut::Text(text) => string_size(text),
        openai::ArgumentsOut::Serialised(v) => json_text_string_size(v),
    };
    let function = [
        ("name", Some(string_size(&c.name))),
        ("arguments", Some(arguments)),
    ];
    let function = match openai::function_extra(c) {
        Some(extra) => with_extra(&function, extra),
        None => object_size(function.iter().map(|(k, s)| (*k, s.unwrap_or(0)))),
    };
    let kind = match openai::call_type(c) {
        openai::CallType::Absent => None,
        openai::CallType::Read(t) => Some(value_size(t)),
        openai::CallType::Function => Some(string_size("function")),
    };
    let named = [
        ("id", Some(string_size(&c.id))),
        ("type", kind),
        ("function", Some(function)),
    ];
    with_extra(&named, &c.extra)
}

/// Size of an object written as the present `named` fields, then the
/// entries of `extra` whose keys are not among them (the writers'
/// `entry(..).or_insert(..)`).
fn with_extra(named: &[(&str, Option<u64>)], extra: &Map<String, Value>) -> u64 {
    let present = || named.iter().filter_map(|(k, s)| s.map(|s| (*k, s)));
    let taken = |k: &str| present().any(|(n, _)| n == k);
    let extra = extra
        .iter()
        .filter(|(k, _)| !taken(k))
        .map(|(k, v)| (k.as_str(), value_size(v)));
    object_size(present().chain(extra))
}

/// Serialised size of a JSON string holding the compact JSON text of `v`
/// (`serde_json::to_vec(&v.to_string()).len()`), without writing the text:
/// the text's length, plus one escape per `"` and `\\` in it, plus the quotes.
pub fn json_text_string_size(v: &Value) -> u64 {
    let (len, specials) = size_and_specials(v);
    len + specials + 2
}

/// The compact serialisation's length, and how many `"` and `\\` it holds.
fn size_and_specials(v: &Value) -> (u64, u64) {
    let string = |s: &str| (string_size(s), 2 + specials(s.as_bytes()));
    match v {
        Value::String(s) => string(s),
        Value::Array(a) => {
            let (mut len, mut sp) = (2 + commas(a.len()), 0);
            for x in a {
                let (l, s) = size_and_specials(x);
                len += l;
                sp += s;
            }
            (len, sp)
        }
        Value::Object(o) => {
            let (mut len, mut sp) = (2 + commas(o.len()), 0);
            for (k, x) in o {
                let (kl, ks) = string(k);
                let (l, s) = size_and_specials(x);
                len += kl + 1 + l;
                sp += ks + s;
            }
            (len, sp)
        }
        scalar => (value_size(scalar), 0),
    }
}

/// Σ [`byte_specials`] over `bytes`.
fn specials(bytes: &[u8]) -> u64 {
    if bytes.len() < 16 {
        return bytes.iter().map(|&b| byte_specials(b) as u64).sum();
    }
    lanes_sum::<true>(bytes)
}

/// Size of one message in `format`. For `anthropic`, where a message's
/// shape depends on its neighbours, use [`body_bytes`] instead.
pub fn message_size_in(format: WireFormat, m: &Message) -> u64 {
    match format {
        WireFormat::Engine => message_size(m),
        WireFormat::Openai => openai_message_size(m),
        WireFormat::Anthropic => {
            let (_, msgs) = crate::model::anthropic::write_messages(std::slice::from_ref(m));
            msgs.iter().map(value_size).sum()
        }
    }
}

/// The body size under `config` (engine or openai format, where each
/// message's size is independent of its neighbours) of a `messages` array
/// of `count` messages whose sizes sum to `messages_total`: what
/// [`body_bytes`] returns, from per-message sizes kept by the caller
/// (`estimate::Incremental`). `None` for the anthropic format.
pub fn body_bytes_from_sizes(config: &Config, messages_total: u64, count: usize) -> Option<u64> {
    match config.wire_format {
        WireFormat::Engine | WireFormat::Openai => Some(envelope_size(
            &config.envelope,
            None,
            2 + messages_total + commas(count),
        )),
        WireFormat::Anthropic => None,
    }
}

/// The exact byte size of the request body for `msgs` under `config`.
pub fn body_bytes<'a, I>(config: &Config, msgs: I) -> u64
where
    I: IntoIterator<Item = &'a Message>,
{
    match config.wire_format {
        WireFormat::Engine | WireFormat::Openai => {
            let mut n = 0usize;
            let mut array = 2;
            for m in msgs {
                array += message_size_in(config.wire_format, m);
                n += 1;
            }
            envelope_size(&config.envelope, None, array + commas(n))
        }
        WireFormat::Anthropic => {
            let owned: Vec<Message> = msgs.into_iter().cloned().collect();
            let (system, arr) = crate::model::anthropic::write_messages(&owned);
            let array = 2 + arr.iter().map(value_size).sum::<u64>() + commas(arr.len());
            envelope_size(&config.envelope, system.as_ref().map(value_size), array)
        }
    }
}

/// Size of the envelope with `messages` (of size `messages_size`) and, for
/// anthropic, a top-level `system` added or replaced.
fn envelope_size(
    envelope: &Map<String, Value>,
    system_size: Option<u64>,
    messages_size: u64,
) -> u64 {
    let own = envelope
        .iter()
        .filter(|(k, _)| *k != "messages" && !(system_size.is_some() && *k == "system"))
        .map(|(k, v)| (k.as_str(), value_size(v)));
    let added = system_size
        .map(|s| ("system", s))
        .into_iter()
        .chain(std::iter::once(("messages", messages_size)));
    object_size(own.chain(added))
}

/// The request body itself, as a JSON value: what [`body_bytes`] measures.
pub fn body_value(config: &Config, msgs: &[Message]) -> Value {
    let (system, arr) = crate::model::document::write_messages(config.wire_format, msgs);
    let mut obj = config.envelope.clone();
    if let Some(system) = system {
        obj.insert("system".into(), system);
    }
    obj.insert("messages".into(), Value::Array(arr));
    Value::Object(obj)
}

/// Write the request body — [`body_value`], byte for byte as
/// `serde_json::to_vec` writes it — to `out`, and return its length. In
/// the engine format, and in openai where no tool message holds images
/// (whose images move after their run of results), one message at a time:
/// the body of a big history is never built as a JSON tree or in a buffer.
pub fn write_body(config: &Config, msgs: &[Message], out: impl Write) -> io::Result<u64> {
    let mut out = Counted { inner: out, n: 0 };
    let one_at_a_time = match config.wire_format {
        WireFormat::Engine => true,
        WireFormat::Openai => !openai::has_tool_images(msgs),
        WireFormat::Anthropic => false,
    };
    if !one_at_a_time {
        serde_json::to_writer(&mut out, &body_value(config, msgs))?;
        return Ok(out.n);
    }
    let mut buf = Vec::new();
    let mut messages = |out: &mut Counted<_>| -> io::Result<()> {
        out.write_all(b"[")?;
        for (i, m) in msgs.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            match config.wire_format {
                WireFormat::Engine => {
                    buf.clear();
                    crate::model::engine_ser::write_message(&mut buf, m);
                    out.write_all(&buf)?;
                }
                _ => serde_json::to_writer(&mut *out, &openai::message_to_value(m))?,
            }
        }
        out.write_all(b"]")
    };
    // The envelope's fields in order, `messages` in its place if it has
    // one (as `body_value`'s insert keeps it), else last.
    out.write_all(b"{")?;
    let mut wrote = false;
    for (i, (k, v)) in config.envelope.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, k)?;
        out.write_all(b":")?;
        if k == "messages" {
            messages(&mut out)?;
            wrote = true;
        } else {
            serde_json::to_writer(&mut out, v)?;
        }
    }
    if !wrote {
        if !config.envelope.is_empty() {
            out.write_all(b",")?;
        }
        out.write_all(b"\"messages\":")?;
        messages(&mut out)?;
    }
    out.write_all(b"}")?;
    Ok(out.n)
}

/// A writer that counts what it passes on.
struct Counted<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_sizes_match_serde_json() {
        for s in [
            "",
            "a",
            "\"\\",
            "\n\r\t\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f}",
            "héllo 世界 🦀",
            "</script>",
        ] {
            assert_eq!(
                string_size(s),
                serde_json::to_vec(&s).unwrap().len() as u64,
                "{s:?}"
            );
        }
    }

    /// The SWAR scan against serde_json and the scalar table on strings
    /// that put every escaped byte (and its neighbours) at every offset of
    /// a word, with multibyte text around.
    #[test]
    fn swar_string_sizes_match_serde_json_at_every_offset() {
        let pool: Vec<char> = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain(['é', '世', '🦀', '\u{80}', '\u{7ff}', '\u{ffff}'])
            .collect();
        let mut rng = crate::generate::SplitMix64::new(0x5eed);
        for len in (0..80usize).chain([1535, 1536, 1537, 1600, 3100]) {
            for _ in 0..40 {
                let s: String = (0..len).map(|_| *rng.pick(&pool)).collect();
                let want = serde_json::to_vec(&s).unwrap().len() as u64;
                assert_eq!(string_size(&s), want, "{s:?}");
                assert_eq!(string_size_scalar(&s), want, "{s:?}");
                assert_eq!(string_size_swar(&s), want, "{s:?}");
            }
        }
        // Every byte value at every offset of a 16-byte run.
        for b in 0u8..0x80 {
            for at in 0..16 {
                let mut v = vec![b'a'; 17];
                v[at] = b;
                let s = String::from_utf8(v).unwrap();
                let want = serde_json::to_vec(&s).unwrap().len() as u64;
                assert_eq!(string_size(&s), want, "{s:?}");
                assert_eq!(string_size_swar(&s), want, "{s:?}");
            }
        }
        // Runs long enough to fill the lanes: every byte the worst case.
        for b in 0u8..0x80 {
            for len in [64 * 48 - 1, 64 * 48, 64 * 48 * 3 + 17, 64 * 48 + 63] {
                let s = String::from_utf8(vec![b; len]).unwrap();
                let want = serde_json::to_vec(&s).unwrap().len() as u64;
                assert_eq!(string_size(&s), want, "{b:#x} × {len}");
                assert_eq!(string_size_swar(&s), want, "{b:#x} × {len}");
            }
        }
    }

    /// `body_bytes` equals `serde_json::to_vec(&body_value(..)).len()` on
    /// generated cases of every wire format and content class.
    #[test]
    fn body_bytes_match_serde_json_on_generated_cases() {
        for (i, case) in crate::generate::seeded(7, 300) {
            let want = serde_json::to_vec(&body_value(&case.config, &case.messages))
                .unwrap()
                .len() as u64;
            assert_eq!(body_bytes(&case.config, &case.messages), want, "case {i}");
        }
    }

    /// `write_body` writes `body_value`'s bytes exactly (what `ctxgate
    /// body` prints; its figure is their count) on generated cases in every
    /// format, with envelopes that hold `messages` or `system` fields of
    /// their own, and an openai history whose tool results hold images.
    #[test]
    fn the_written_body_is_body_value_byte_for_byte() {
        let envelopes = [
            Map::new(),
            json!({"model": "m", "n": 1.50, "s": "é\u{1}"})
                .as_object()
                .unwrap()
                .clone(),
            json!({"messages": [1], "model": "m", "system": "s"})
                .as_object()
                .unwrap()
                .clone(),
        ];
        let mut tool_images = 0;
        for (i, case) in crate::generate::seeded(17, 200) {
            for format in WireFormat::ALL {
                let envelope = envelopes[i as usize % envelopes.len()].clone();
                let config = Config {
                    wire_format: format,
                    envelope,
                    ..case.config.clone()
                };
                let want = serde_json::to_vec(&body_value(&config, &case.messages)).unwrap();
                let mut got = Vec::new();
                let n = write_body(&config, &case.messages, &mut got).unwrap();
                assert_eq!(got, want, "case {i}, {format}");
                assert_eq!(n, want.len() as u64, "case {i}, {format}");
                assert_eq!(n, body_bytes(&config, &case.messages), "case {i}, {format}");
                tool_images += usize::from(openai::has_tool_images(&case.messages));
            }
        }
        assert!(tool_images > 0);
    }

    /// The openai size without writing equals the size of what the writer
    /// writes: on generated messages, and on calls carrying every hint the
    /// openai reader leaves (text as read, text that no longer matches,
    /// arguments read as a value, `type` absent / odd, `function` extras, a
    /// call `extra` named like a written field).
    #[test]
    fn openai_sizes_match_the_writer() {
        // A tool message with images is written as two messages (its
        // images move to a user message): both, and the comma between.
        let written = |m: &Message| {
            let values = openai::write_messages(std::slice::from_ref(m));
            let n = values.len() as u64;
            values
                .iter()
                .map(|v| serde_json::to_vec(v).unwrap().len() as u64)
                .sum::<u64>()
                + n.saturating_sub(1)
        };
        for (i, case) in crate::generate::seeded(11, 200) {
            for m in case.messages {
                assert_eq!(openai_message_size(&m), written(&m), "case {i}: {m:?}");
            }
        }
        let raw = json!([
            {"role": "assistant", "content": null, "type": "x", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{ \"k\" : [1, 2.50] }"}},
                {"id": "b", "function": {"name": "f", "arguments": "not json \"quoted\" \\ \n", "strict": true}},
                {"id": "c", "type": null, "function": {"name": "f", "arguments": {"k": "v\u{1}"}}, "index": 0},
                {"id": "d", "type": "function", "function": {"name": "f", "arguments": "\"a JSON string\""}}
            ]},
            {"role": "tool", "tool_call_id": "a", "content": "r", "name": "f"}
        ]);
        let mut msgs = openai::read_messages(raw.as_array().unwrap()).unwrap();
        for m in &msgs {
            assert_eq!(openai_message_size(m), written(m), "{m:?}");
        }
        // Arguments changed since they were read: the text no longer matches.
        let call = &mut msgs[0].tool_calls.as_mut().unwrap()[0];
        call.arguments = std::sync::Arc::new(json!({"k": ["\"", "\\", "\u{1f}", "é"]}));
        call.extra.insert("function".into(), json!("shadowed"));
        call.extra.insert("type".into(), json!("shadowed"));
        msgs[0].extra.insert("tool_calls".into(), json!("shadowed"));
        msgs[0].extra.insert("refusal".into(), json!(null));
        assert_eq!(openai_message_size(&msgs[0]), written(&msgs[0]));
    }

    #[test]
    fn json_text_string_sizes_match_serde_json() {
        for v in [
            json!({"a\"b": ["\\", "\n\u{1}", 1.5, null, true, {}], "é": "世\"界"}),
            json!("plain"),
            json!([]),
            json!(12),
            json!("x".repeat(40) + "\"\\\u{7}" + &"y".repeat(40)),
        ] {
            let want = serde_json::to_vec(&v.to_string()).unwrap().len() as u64;
            assert_eq!(json_text_string_size(&v), want, "{v}");
        }
    }

    #[test]
    fn value_sizes_match_serde_json() {
        let v = json!({"a": [1, -2.5, 1e10, true, false, null, {"b": "c\n"}], "": {}, "x": []});
        assert_eq!(value_size(&v), serde_json::to_vec(&v).unwrap().len() as u64);
        let big: Value =
            serde_json::from_str("[1.10, 123456789012345678901234567890, -0.0, 1E+2]").unwrap();
        assert_eq!(
            value_size(&big),
            serde_json::to_vec(&big).unwrap().len() as u64
        );
    }
}
