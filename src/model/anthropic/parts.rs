//! Content parts (SPEC §1.4): an array content that holds an image is
//! read as engine parts, one per block, and parts are written back as
//! blocks.

use serde_json::Value;

use super::block::{add_fields, block_object, block_type, read_text, text_block};
use super::{Fields, NS, PART_ERROR};
use crate::error::json_type;
use crate::model::parts::{Image, ImageData, ImageSource, Part, TextPart};

/// An `image` block (whatever its source: a bad one is an error, an
/// unknown one a block kept verbatim).
pub(super) fn is_image_block(b: &Value) -> bool {
    b.get("type").and_then(Value::as_str) == Some("image")
}

/// The key, inside an image's `wire` value, of the source's other fields.
const SOURCE: &str = "source";

/// One block of an array content that holds images, as an engine part.
pub(super) fn block_to_part(b: &Value) -> Result<Part, String> {
    let obj = block_object(b)?;
    let rest = |skip: &[&str]| -> Fields {
        obj.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    match block_type(obj) {
        Some("text") => Ok(Part::Text(TextPart {
            text: read_text(obj.get("text").ok_or("text block has no `text`")?)?.to_owned(),
            extra: rest(&["type", "text"]),
        })),
        Some("image") => {
            let bad = |p: &str| format!("{PART_ERROR}an image block's {p}");
            let source = match obj.get("source") {
                Some(Value::Object(s)) => s,
                Some(other) => {
                    return Err(bad(&format!(
                        "`source` must be an object, found {}",
                        json_type(other)
                    )))
                }
                None => return Err(bad("`source` is missing")),
            };
            let str_field = |k: &str| match source.get(k) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(bad(&format!(
                    "`source.{k}` must be a string, found {}",
                    json_type(other)
                ))),
                None => Err(bad(&format!("`source` has no `{k}`"))),
            };
            let (image_source, named): (ImageSource, &[&str]) =
                match source.get("type").and_then(Value::as_str) {
                    Some("base64") => (
                        ImageSource::Inline(ImageData::new(
                            str_field("media_type")?,
                            str_field("data")?,
                        )),
                        &["type", "media_type", "data"],
                    ),
                    Some("url") => (ImageSource::Url(str_field("url")?), &["type", "url"]),
                    // `file` (the Files API) and others: kept as they are.
                    _ => return Ok(Part::Other(b.clone())),
                };
            let others: Fields = source
                .iter()
                .filter(|(k, _)| !named.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let wire = (!others.is_empty()).then(|| {
                let mut h = Fields::new();
                h.insert(SOURCE.into(), Value::Object(others));
                let mut w = Fields::new();
                w.insert(NS.into(), Value::Object(h));
                Box::new(Value::Object(w))
            });
            Ok(Part::Image(Image {
                source: image_source,
                extra: rest(&["type", "source"]),
                wire,
            }))
        }
        // Calls and results are messages of their own in the model, never
        // parts: one here (inside a `tool_result`'s content) would be
        // written as an opaque part no other format reads back.
        Some(kind @ ("tool_use" | "tool_result")) => Err(format!(
            "a `{kind}` block among content blocks (a `tool_result`'s content is text and images)"
        )),
        _ => Ok(Part::Other(b.clone())),
    }
}

/// A part as an anthropic block (what this format's reader reads back as that part).
pub fn part_block(p: &Part) -> Value {
    match p {
        Part::Text(t) => {
            let mut b = text_block(&t.text);
            add_fields(&mut b, t.extra.iter());
            Value::Object(b)
        }
        Part::Image(i) => {
            let mut source = Fields::new();
            match &i.source {
                ImageSource::Inline(d) => {
                    source.insert("type".into(), "base64".into());
                    source.insert("media_type".into(), Value::String(d.media_type().into()));
                    source.insert("data".into(), Value::String(d.data().into()));
                }
                ImageSource::Url(u) => {
                    source.insert("type".into(), "url".into());
                    source.insert("url".into(), Value::String(u.clone()));
                }
            }
            add_fields(&mut source, source_hint(i).into_iter().flatten());
            let mut b = Fields::new();
            b.insert("type".into(), "image".into());
            b.insert("source".into(), Value::Object(source));
            add_fields(&mut b, i.extra.iter());
            Value::Object(b)
        }
        Part::Other(v) => v.clone(),
    }
}

/// The source's other fields, as read from this format.
fn source_hint(i: &Image) -> Option<&Fields> {
    i.wire.as_deref()?.get(NS)?.get(SOURCE)?.as_object()
}

/// Serialised size of [`part_block`]`(p)`, without copying an image's data.
pub fn part_block_size(p: &Part) -> u64 {
    use crate::model::json_size::{add_sizes, object_size_of, string_size, value_size};
    match p {
        Part::Image(i) => {
            let mut source: Vec<(&str, u64)> = match &i.source {
                ImageSource::Inline(d) => vec![
                    ("type", string_size("base64")),
                    ("media_type", string_size(d.media_type())),
                    ("data", d.data_json_size()),
                ],
                ImageSource::Url(u) => vec![("type", string_size("url")), ("url", string_size(u))],
            };
            add_sizes(&mut source, source_hint(i).into_iter().flatten());
            let mut b: Vec<(&str, u64)> = vec![
                ("type", string_size("image")),
                ("source", object_size_of(source.into_iter())),
            ];
            add_sizes(&mut b, &i.extra);
            object_size_of(b.into_iter())
        }
        other => value_size(&part_block(other)),
    }
}

/// Blocks of parts, keyed by the positions the message read had (`at`),
/// or in order after everything that has one.
pub(super) fn part_blocks(parts: &[Part], at: Option<&Vec<Value>>) -> Vec<(usize, Value)> {
    parts
        .iter()
        .enumerate()
        .map(|(n, p)| {
            let key = at
                .filter(|a| a.len() == parts.len())
                .and_then(|a| a.get(n))
                .and_then(Value::as_u64)
                .and_then(|k| usize::try_from(k).ok())
                .unwrap_or(usize::MAX);
            (key, part_block(p))
        })
        .collect()
}
