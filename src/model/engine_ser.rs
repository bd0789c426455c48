//! Engine JSON written straight into a byte buffer (issue 13): the bytes
//! `serde_json` writes for [`MessagesJson`](super::engine::MessagesJson),
//! without its serializer, and with strings escaped eight bytes at a time.
//! Every request of the protocol and every answer of `ctxgate serve` is
//! mostly history text, so this is where a case's bytes are written.

use serde_json::Value;

use super::parts::{ImageSource, Part, IMAGE_FIELDS, TEXT_FIELDS};
use super::{Content, Message, ToolCall};

/// The engine JSON array of `msgs`, appended to `out`.
pub fn write_messages(out: &mut Vec<u8>, msgs: &[Message]) {
    write_array(out, msgs, write_message);
}

/// `[a,b,…]`, each item written by `write`.
fn write_array<T>(out: &mut Vec<u8>, items: &[T], write: impl Fn(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (k, item) in items.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// The engine JSON object of `m`: named fields first, then `extra` in
/// order, as [`message_to_value`](super::engine::message_to_value) has them.
pub fn write_message(out: &mut Vec<u8>, m: &Message) {
    out.extend_from_slice(b"{\"role\":");
    write_str(out, m.role.as_str());
    match &m.content {
        Content::Absent => {}
        Content::Null => out.extend_from_slice(b",\"content\":null"),
        Content::Text(t) => {
            out.extend_from_slice(b",\"content\":");
            write_str(out, t);
        }
        Content::Parts(parts) => {
            out.extend_from_slice(b",\"content\":");
            write_array(out, parts, write_part);
        }
    }
    if let Some(calls) = &m.tool_calls {
        out.extend_from_slice(b",\"toolCalls\":");
        write_array(out, calls, write_call);
    }
    if let Some(id) = &m.tool_call_id {
        out.extend_from_slice(b",\"toolCallId\":");
        write_str(out, id);
    }
    if let Some(p) = m.pinned {
        out.extend_from_slice(if p {
            b",\"pinned\":true"
        } else {
            b",\"pinned\":false"
        });
    }
    write_extra(out, &m.extra, &super::engine::MESSAGE_FIELDS);
    out.push(b'}');
}

/// One engine part, as `model::parts::part_to_value` has it. An image's
/// base64 is copied as it is when it needs no escaping (it never does).
fn write_part(out: &mut Vec<u8>, p: &Part) {
    match p {
        Part::Text(t) => {
            out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
            write_str(out, &t.text);
            write_extra(out, &t.extra, &TEXT_FIELDS);
            out.push(b'}');
        }
        Part::Image(i) => {
            out.extend_from_slice(b"{\"type\":\"image\"");
            match &i.source {
                ImageSource::Inline(d) => {
                    out.extend_from_slice(b",\"mediaType\":");
                    write_str(out, d.media_type());
                    out.extend_from_slice(b",\"data\":");
                    if d.data_escapes() == 0 {
                        out.reserve(d.data().len() + 2);
                        out.push(b'"');
                        out.extend_from_slice(d.data().as_bytes());
                        out.push(b'"');
                    } else {
                        write_str(out, d.data());
                    }
                }
                ImageSource::Url(u) => {
                    out.extend_from_slice(b",\"url\":");
                    write_str(out, u);
                }
            }
            write_extra(out, &i.extra, &IMAGE_FIELDS);
            out.push(b'}');
        }
        Part::Other(v) => write_value(out, v),
    }
}

fn write_call(out: &mut Vec<u8>, c: &ToolCall) {
    out.extend_from_slice(b"{\"id\":");
    write_str(out, &c.id);
    out.extend_from_slice(b",\"name\":");
    write_str(out, &c.name);
    out.extend_from_slice(b",\"arguments\":");
    write_value(out, &c.arguments);
    write_extra(out, &c.extra, &super::engine::CALL_FIELDS);
    out.push(b'}');
}

/// Whether [`write_message`] writes `a` and `b` as the same bytes: the
/// same fields spelled alike, objects' members in the same order, numbers
/// with the same digits. Stricter than `==`, which is equality of JSON
/// values (SPEC §5): `1.0` and `1`, or `{"a":1,"b":2}` and
/// `{"b":2,"a":1}`, are equal but not written alike.
pub fn written_alike(a: &Message, b: &Message) -> bool {
    a.role == b.role
        && content_alike(&a.content, &b.content)
        && a.tool_call_id == b.tool_call_id
        && a.pinned == b.pinned
        && match (&a.tool_calls, &b.tool_calls) {
            (None, None) => true,
            (Some(x), Some(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| call_written_alike(p, q))
            }
            _ => false,
        }
        && members_alike(&a.extra, &b.extra)
}

fn content_alike(a: &Content, b: &Content) -> bool {
    match (a, b) {
        (Content::Parts(x), Content::Parts(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| part_alike(p, q))
        }
        _ => a == b,
    }
}

fn part_alike(a: &Part, b: &Part) -> bool {
    match (a, b) {
        (Part::Text(x), Part::Text(y)) => x.text == y.text && members_alike(&x.extra, &y.extra),
        (Part::Image(x), Part::Image(y)) => {
            let source = match (&x.source, &y.source) {
                (ImageSource::Inline(p), ImageSource::Inline(q)) => {
                    std::sync::Arc::ptr_eq(p, q) || p == q
                }
                (ImageSource::Url(p), ImageSource::Url(q)) => p == q,
                _ => false,
            };
            source && members_alike(&x.extra, &y.extra)
        }
        (Part::Other(x), Part::Other(y)) => value_alike(x, y),
        _ => false,
    }
}

fn call_written_alike(a: &ToolCall, b: &ToolCall) -> bool {
    a.id == b.id
        && a.name == b.name
        && (std::sync::Arc::ptr_eq(&a.arguments, &b.arguments)
            || value_alike(&a.arguments, &b.arguments))
        && members_alike(&a.extra, &b.extra)
}

/// The same members in the same order, written alike.
pub fn members_alike(
    a: &serde_json::Map<String, Value>,
    b: &serde_json::Map<String, Value>,
) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((k, v), (l, w))| k == l && value_alike(v, w))
}

/// Whether [`write_value`] writes `a` and `b` alike.
fn value_alike(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| value_alike(p, q))
        }
        (Value::Object(x), Value::Object(y)) => members_alike(x, y),
        // Numbers compare by their digits (`arbitrary_precision`), which
        // are what is written; strings, booleans and null by value.
        _ => a == b,
    }
}

/// `,"key":value` for each field of `extra` but the `named` ones (written
/// already), in order.
fn write_extra(out: &mut Vec<u8>, extra: &serde_json::Map<String, Value>, named: &[&str]) {
    for (k, v) in extra.iter().filter(|(k, _)| !named.contains(&k.as_str())) {
        out.push(b',');
        write_str(out, k);
        out.push(b':');
        write_value(out, v);
    }
}

/// `v` as compact JSON, as `serde_json::to_writer` writes it (numbers keep
/// their digits: `arbitrary_precision`).
pub fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.as_str().as_bytes()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => write_array(out, items, write_value),
        Value::Object(map) => {
            out.push(b'{');
            for (k, (key, item)) in map.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// `s` as a JSON string, escaped as serde_json escapes it: `"` and `\`,
/// the short escapes `\b \t \n \f \r`, other control bytes as `\u00xx`;
/// nothing else. The bytes to escape are found 32 at a time where the CPU
/// has AVX2, else eight at a time.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    #[cfg(target_arch = "x86_64")]
    let start = if b.len() >= 32 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { write_runs_avx2(out, b) }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let start = 0;
    write_runs(out, b, start);
    out.push(b'"');
}

/// Write `b[start..]` escaped, eight bytes at a time; `start` is not in
/// the middle of a UTF-8 sequence.
fn write_runs(out: &mut Vec<u8>, b: &[u8], mut start: usize) {
    let mut i = start;
    while i < b.len() {
        let at = match b.get(i..i + 8) {
            Some(chunk) => {
                let found = specials(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
                if found == 0 {
                    i += 8;
                    continue;
                }
                i + (found.trailing_zeros() / 8) as usize
            }
            None => match b[i..].iter().position(|&c| escape(c).is_some()) {
                Some(k) => i + k,
                None => break,
            },
        };
        out.extend_from_slice(&b[start..at]);
        out.extend_from_slice(escape(b[at]).expect("a special byte").as_bytes());
        start = at + 1;
        i = at + 1;
    }
    out.extend_from_slice(&b[start..]);
}

/// Write the whole 32-byte blocks of `b` escaped; where the rest starts
/// (after the last byte written, which is never inside a UTF-8 sequence:
/// the bytes escaped are ASCII).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn write_runs_avx2(out: &mut Vec<u8>, b: &[u8]) -> usize {
    use std::arch::x86_64::*;
    let space = _mm256_set1_epi8(0x1f);
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let mut start = 0;
    let mut i = 0;
    while i + 32 <= b.len() {
        // SAFETY: b[i..i + 32] is in bounds (the loop's condition); an
        // unaligned load reads nothing else.
        let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(i) as *const __m256i) };
        let control = _mm256_cmpeq_epi8(_mm256_max_epu8(v, space), space);
        let special = _mm256_or_si256(
            control,
            _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
        );
        let mut mask = _mm256_movemask_epi8(special) as u32;
        while mask != 0 {
            let at = i + mask.trailing_zeros() as usize;
            out.extend_from_slice(&b[start..at]);
            out.extend_from_slice(escape(b[at]).expect("a special byte").as_bytes());
            start = at + 1;
            mask &= mask - 1;
        }
        i += 32;
    }
    out.extend_from_slice(&b[start..i]);
    i
}

/// The high bit of each of the eight bytes of `x` that is below 0x20, `"`
/// or `\` — exact up to the lowest one (a borrow only runs upwards), which
/// is all that is asked of it.
fn specials(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |y: u64| y.wrapping_sub(ONES) & !y & HIGH;
    let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    below_space | zero_in(x ^ (ONES * b'"' as u64)) | zero_in(x ^ (ONES * b'\\' as u64))
}

/// The escape serde_json writes for byte `c`, if it writes one.
fn escape(c: u8) -> Option<&'static str> {
    const CONTROL: [&str; 32] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011",
        "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019",
        "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
    ];
    match c {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0..=0x1f => Some(CONTROL[c as usize]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::engine::MessagesJson;

    /// Every byte value in every position of an eight-byte chunk, and
    /// across chunk ends: the same text as serde_json's.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = Vec::new();
        for c in (0u8..0x80)
            .map(char::from)
            .chain(['é', '中', '\u{7f}', '😀'])
        {
            for at in 0..17 {
                let mut t: String = "abcdefghijklmnopq"[..at].to_string();
                t.push(c);
                t.push_str("xyz");
                texts.push(t);
            }
        }
        texts.push(String::new());
        texts.push("\"\\\n\t\u{1}".repeat(9));
        texts.push("é\"中\\😀\n".repeat(40));
        for t in &texts {
            let mut ours = Vec::new();
            write_str(&mut ours, t);
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(t).unwrap(),
                "{t:?}"
            );
        }
    }

    /// Generated histories (every content class, extra fields, numbers of
    /// every spelling the generator makes): byte for byte serde_json's.
    #[test]
    fn histories_are_written_as_serde_json_writes_them() {
        for (index, case) in crate::generate::seeded(7, 400) {
            let mut ours = Vec::new();
            write_messages(&mut ours, &case.messages);
            let theirs = serde_json::to_vec(&MessagesJson(&case.messages)).unwrap();
            assert!(ours == theirs, "case {index} differs");
        }
    }
}
