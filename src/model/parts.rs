//! Content parts and images (SPEC §1.4), in the canonical (engine) model.
//!
//! A message's `content` may be an array of *parts*: text, images, and
//! parts of any other kind, which are kept verbatim. Engine parts:
//!
//! ```json
//! {"type": "text", "text": "…"}
//! {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo…"}
//! {"type": "image", "url": "https://example.com/shot.png"}
//! ```
//!
//! Fields of a text or image part other than the named ones (`detail`,
//! `cache_control`, …) are kept in the part's `extra`, verbatim and in
//! order, and count in the body; a named field wins over an `extra` entry
//! of the same name, as on messages.
//!
//! The contract of this module:
//!
//! - **An image's payload is shared, never copied**: [`ImageData`] sits
//!   behind an `Arc`, so a history copied on every ToolLoop turn, or by
//!   every candidate a compactor tries, copies pointers, not megabytes.
//! - **Its pixel size comes from its header** (PNG, JPEG, GIF, WebP), read
//!   once when the image is made, through a lazy base64 reader that decodes
//!   only the bytes the header parser asks for (`imagesize`; no image
//!   decoding). A header that cannot be read (a remote URL, an unknown or
//!   broken header, data that is not base64) leaves the size unknown, and
//!   the estimators charge the most the format allows (SPEC §3).
//! - **Its serialised size is known without a scan**: the extra bytes JSON
//!   escaping adds to the data are counted once, when the image is made
//!   (0 for base64, whose alphabet has nothing to escape), so the exact
//!   body size of an image-heavy history costs O(1) per image.
//! - **Bad parts are bad input**: a text part whose `text` is not a string,
//!   an image with neither `data` nor `url`, a `data` that is not a string,
//!   are [`InputErrorKind::Part`](crate::error::InputErrorKind::Part)
//!   errors naming the part; a part of an unknown `type` is not an error,
//!   it is kept as it is ([`Part::Other`]) — except Anthropic's `tool_use`
//!   and `tool_result` blocks, which would hide calls and results
//!   (`anthropic_tool_block`).
//!
//! What it does not do: say what an image costs in tokens (that is
//! SPEC §3's rule, `estimate::image_tokens`), or how the other wire formats
//! spell parts (`model::openai`, `model::anthropic`).

use std::fmt;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::field::{expect, into_string, own_fields};
use super::value::same_members;
use crate::error::json_type;

/// One part of a `content` array.
#[derive(Debug, Clone)]
pub enum Part {
    /// `{"type": "text", "text": …}`.
    Text(TextPart),
    /// `{"type": "image", …}`: inline (`mediaType` + `data`) or remote (`url`).
    Image(Image),
    /// Any other part, kept verbatim (documents, audio, `thinking`, …).
    Other(Value),
}

/// A text part: its text and its other fields.
#[derive(Debug, Clone, Default)]
pub struct TextPart {
    pub text: String,
    /// Fields other than `type` and `text`, in order.
    pub extra: Map<String, Value>,
}

/// An image part.
#[derive(Debug, Clone)]
pub struct Image {
    pub source: ImageSource,
    /// Fields other than `type`, `mediaType`, `data` and `url`, in order
    /// (`detail`, which the `openai` format carries inside `image_url`, is
    /// one of them).
    pub extra: Map<String, Value>,
    /// What a non-engine wire format needs to write this part back as it
    /// was read (`image_url`'s or `source`'s other fields). Not part of the
    /// engine form, not counted in its size.
    pub wire: Option<Box<Value>>,
}

/// Where an image's bytes are.
#[derive(Debug, Clone)]
pub enum ImageSource {
    /// In the request, as base64: the bulk of a screenshot-heavy body.
    Inline(Arc<ImageData>),
    /// At a URL the provider fetches: a few bytes of body, its pixels
    /// unknown to the harness.
    Url(String),
}

/// An inline image's media type and base64 data, with what is known of
/// them once: the pixel size from the header and the JSON escaping the
/// data needs. Shared behind an `Arc` (see the module docs).
pub struct ImageData {
    media_type: String,
    data: String,
    /// Extra bytes JSON escaping adds to `data` (0 for valid base64).
    escapes: u64,
    /// Width and height from the header, when it can be read.
    pixels: Option<(u32, u32)>,
}

impl ImageData {
    /// An inline image: its header is read and its escaping counted now.
    pub fn new(media_type: impl Into<String>, data: impl Into<String>) -> Arc<ImageData> {
        let data = data.into();
        let escapes = super::json_size::string_size(&data) - data.len() as u64 - 2;
        let pixels = read_pixels(&data);
        Arc::new(ImageData {
            media_type: media_type.into(),
            data,
            escapes,
            pixels,
        })
    }

    /// The media type as written (`image/png`).
    pub fn media_type(&self) -> &str {
        &self.media_type
    }

    /// The base64 data as written.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// Width and height, from the header; `None` when it cannot be read.
    pub fn pixels(&self) -> Option<(u32, u32)> {
        self.pixels
    }

    /// Serialised size of the data as a JSON string, quotes included.
    pub fn data_json_size(&self) -> u64 {
        self.data.len() as u64 + self.escapes + 2
    }

    /// Extra bytes JSON escaping adds to the data (0 for base64).
    pub fn data_escapes(&self) -> u64 {
        self.escapes
    }
}

impl fmt::Debug for ImageData {
    /// Never the data itself: a screenshot is a megabyte of base64.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImageData")
            .field("media_type", &self.media_type)
            .field("bytes", &self.data.len())
            .field("pixels", &self.pixels)
            .finish()
    }
}

impl PartialEq for ImageData {
    fn eq(&self, other: &ImageData) -> bool {
        self.media_type == other.media_type && self.data == other.data
    }
}

impl Image {
    /// An inline image with no other fields.
    pub fn inline(media_type: impl Into<String>, data: impl Into<String>) -> Image {
        Image {
            source: ImageSource::Inline(ImageData::new(media_type, data)),
            extra: Map::new(),
            wire: None,
        }
    }

    /// A remote image.
    pub fn url(url: impl Into<String>) -> Image {
        Image {
            source: ImageSource::Url(url.into()),
            extra: Map::new(),
            wire: None,
        }
    }

    /// The inline data, if the image is inline.
    pub fn data(&self) -> Option<&ImageData> {
        match &self.source {
            ImageSource::Inline(d) => Some(d),
            ImageSource::Url(_) => None,
        }
    }

    /// Width and height, when the header can be read (never for a URL).
    pub fn pixels(&self) -> Option<(u32, u32)> {
        self.data().and_then(ImageData::pixels)
    }

    /// The media type: as declared for an inline image, `remote` for a URL.
    pub fn media_type(&self) -> &str {
        match &self.source {
            ImageSource::Inline(d) => d.media_type(),
            ImageSource::Url(_) => "remote",
        }
    }

    /// Bytes of payload the image puts in the body: its base64 data, or
    /// its URL.
    pub fn payload_bytes(&self) -> u64 {
        match &self.source {
            ImageSource::Inline(d) => d.data().len() as u64,
            ImageSource::Url(u) => u.len() as u64,
        }
    }

    /// `detail` (an `openai` field, `auto` | `low` | `high`), when set.
    pub fn detail(&self) -> Option<&str> {
        self.extra.get("detail").and_then(Value::as_str)
    }

    /// A description for people and violation messages: `image/png,
    /// 1920×1080, 2764816 bytes` (`?×?` when the size is unknown).
    pub fn describe(&self) -> String {
        let pixels = match self.pixels() {
            Some((w, h)) => format!("{w}×{h}"),
            None => "?×?".into(),
        };
        let media = super::truncate_utf8(self.media_type(), 64);
        format!("{media}, {pixels}, {} bytes", self.payload_bytes())
    }

    /// The text that replaces this image when it is elided (SPEC §4 step
    /// 4): `[image elided: M, W×H, N bytes]`, at most
    /// [`ELISION_MAX_BYTES`].
    pub fn elision_text(&self) -> String {
        let text = format!("[image elided: {}]", self.describe());
        super::truncate_utf8(&text, ELISION_MAX_BYTES).to_owned()
    }

    /// The text part that replaces this image when it is elided.
    pub fn elided(&self) -> Part {
        Part::Text(TextPart {
            text: self.elision_text(),
            extra: Map::new(),
        })
    }
}

/// The most bytes an elided image's text part may hold (SPEC §4 step 4).
pub const ELISION_MAX_BYTES: usize = 200;

impl PartialEq for Image {
    fn eq(&self, other: &Image) -> bool {
        let source = match (&self.source, &other.source) {
            (ImageSource::Inline(a), ImageSource::Inline(b)) => Arc::ptr_eq(a, b) || a == b,
            (ImageSource::Url(a), ImageSource::Url(b)) => a == b,
            _ => false,
        };
        source && same_members(&self.extra, &other.extra)
    }
}

impl PartialEq for TextPart {
    fn eq(&self, other: &TextPart) -> bool {
        self.text == other.text && same_members(&self.extra, &other.extra)
    }
}

/// Equality by JSON value (SPEC §5), wire hints ignored.
impl PartialEq for Part {
    fn eq(&self, other: &Part) -> bool {
        match (self, other) {
            (Part::Text(a), Part::Text(b)) => a == b,
            (Part::Image(a), Part::Image(b)) => a == b,
            (Part::Other(a), Part::Other(b)) => super::value::same_value(a, b),
            _ => false,
        }
    }
}

impl Part {
    /// A text part with no other fields.
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text(TextPart {
            text: text.into(),
            extra: Map::new(),
        })
    }

    pub fn as_image(&self) -> Option<&Image> {
        match self {
            Part::Image(i) => Some(i),
            _ => None,
        }
    }

    /// Whether `self` could be `original` elided: `original` is an image
    /// and `self` a text part of at most [`ELISION_MAX_BYTES`] (SPEC §5
    /// `single-bounded-summary`; its words are not prescribed).
    pub fn is_elision_of(&self, original: &Part) -> bool {
        matches!(original, Part::Image(_))
            && matches!(self, Part::Text(t) if t.text.len() <= ELISION_MAX_BYTES)
    }
}

/// The fields the engine format names on a text part.
pub const TEXT_FIELDS: [&str; 2] = ["type", "text"];
/// The fields the engine format names on an image part.
pub const IMAGE_FIELDS: [&str; 4] = ["type", "mediaType", "data", "url"];

// ------------------------------------------------------------ engine JSON

/// Read one engine part. Errors say what is wrong with it; the caller
/// adds where it is (`content[j]`, the message index).
pub fn part_from_value(v: Value) -> Result<Part, String> {
    let Value::Object(mut obj) = v else {
        return Err(format!(
            "expected a part object ({{\"type\": …}}), found {}",
            json_type(&v)
        ));
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("text") => {
            let text = expect(
                obj.shift_remove("text"),
                into_string,
                "a text part's `text` must be a string",
                "a text part has no `text`",
            )?;
            obj.shift_remove("type");
            Ok(Part::Text(TextPart { text, extra: obj }))
        }
        Some("image") => {
            obj.shift_remove("type");
            let data = obj.shift_remove("data");
            let media = obj.shift_remove("mediaType");
            let url = obj.shift_remove("url");
            let source = match (data, media, url) {
                (Some(Value::String(data)), Some(Value::String(m)), None) => {
                    ImageSource::Inline(ImageData::new(m, data))
                }
                (None, None, Some(Value::String(u))) => ImageSource::Url(u),
                (Some(_), _, Some(_)) => {
                    return Err("an image part has both `data` and `url` (one or the other)".into())
                }
                (Some(Value::String(_)), None, None) => {
                    return Err("an inline image part has `data` but no `mediaType`".into())
                }
                (Some(Value::String(_)), Some(other), None) => {
                    return Err(format!(
                        "an image part's `mediaType` must be a string, found {}",
                        json_type(&other)
                    ))
                }
                (Some(other), _, None) => {
                    return Err(format!(
                        "an image part's `data` must be a base64 string, found {}",
                        json_type(&other)
                    ))
                }
                (None, _, Some(other)) if !other.is_string() => {
                    return Err(format!(
                        "an image part's `url` must be a string, found {}",
                        json_type(&other)
                    ))
                }
                (None, Some(_), Some(_)) => {
                    return Err("a remote image part (`url`) has a `mediaType` too".into())
                }
                _ => {
                    return Err(
                        "an image part needs `mediaType` and `data` (inline) or `url` (remote)"
                            .into(),
                    )
                }
            };
            Ok(Part::Image(Image {
                source,
                extra: obj,
                wire: None,
            }))
        }
        _ => match anthropic_tool_block(&obj, "engine") {
            Some(problem) => Err(problem),
            None => Ok(Part::Other(Value::Object(obj))),
        },
    }
}

/// The problem with a part that is one of Anthropic's tool blocks
/// (`tool_use`, `tool_result`) in a history read as `format` (engine or
/// openai), `None` for any other part. Other parts of a type the format
/// does not name are kept verbatim (SPEC §1.4), but these hold calls and
/// results, which those formats carry in `toolCalls`/`tool_calls` and
/// `tool` messages: kept as opaque parts, they hid every call from every
/// invariant (an Anthropic history read with `--format openai`, or as a
/// fixture's engine messages, held where it fails).
pub(crate) fn anthropic_tool_block(obj: &Map<String, Value>, format: &str) -> Option<String> {
    match obj.get("type").and_then(Value::as_str) {
        Some(kind @ ("tool_use" | "tool_result")) => Some(format!(
            "an Anthropic `{kind}` block in an {format} history: pass --format anthropic (in a fixture, `\"format\": \"anthropic\"`)"
        )),
        _ => None,
    }
}

/// Read an engine `content` array.
pub fn parts_from_values(arr: Vec<Value>) -> Result<Vec<Part>, String> {
    arr.into_iter()
        .enumerate()
        .map(|(j, v)| part_from_value(v).map_err(|p| format!("content[{j}]: {p}")))
        .collect()
}

/// The engine JSON of a part: named fields first, then `extra` in order.
pub fn part_to_value(p: &Part) -> Value {
    match p {
        Part::Text(t) => {
            let mut o = Map::new();
            o.insert("type".into(), "text".into());
            o.insert("text".into(), Value::String(t.text.clone()));
            add_own(&mut o, &t.extra, &TEXT_FIELDS);
            Value::Object(o)
        }
        Part::Image(i) => {
            let mut o = Map::new();
            o.insert("type".into(), "image".into());
            match &i.source {
                ImageSource::Inline(d) => {
                    o.insert("mediaType".into(), Value::String(d.media_type.clone()));
                    o.insert("data".into(), Value::String(d.data.clone()));
                }
                ImageSource::Url(u) => {
                    o.insert("url".into(), Value::String(u.clone()));
                }
            }
            add_own(&mut o, &i.extra, &IMAGE_FIELDS);
            Value::Object(o)
        }
        Part::Other(v) => v.clone(),
    }
}

fn add_own(o: &mut Map<String, Value>, extra: &Map<String, Value>, named: &[&str]) {
    for (k, v) in own_fields(extra, named) {
        o.insert(k.clone(), v.clone());
    }
}

/// The engine JSON of a part, serialised directly (the same text as
/// [`part_to_value`]), without copying an image's data into a `Value`.
pub struct PartJson<'a>(pub &'a Part);

impl serde::Serialize for PartJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.0 {
            Part::Text(t) => {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", &t.text)?;
                for (k, v) in own_fields(&t.extra, &TEXT_FIELDS) {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Part::Image(i) => {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("type", "image")?;
                match &i.source {
                    ImageSource::Inline(d) => {
                        map.serialize_entry("mediaType", &d.media_type)?;
                        map.serialize_entry("data", &d.data)?;
                    }
                    ImageSource::Url(u) => map.serialize_entry("url", u)?,
                }
                for (k, v) in own_fields(&i.extra, &IMAGE_FIELDS) {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Part::Other(v) => serde::Serialize::serialize(v, s),
        }
    }
}

// ------------------------------------------------------------- data URLs

/// `data:M;base64,DATA` → `(M, DATA)`; `None` when `url` is not a data URL.
/// A URL that starts with `data:` but is not base64 is an error (the
/// `openai` format's inline images are base64 data URLs).
pub fn split_data_url(url: &str) -> Result<Option<(&str, &str)>, String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Ok(None);
    };
    match rest.find(";base64,") {
        Some(at) => Ok(Some((&rest[..at], &rest[at + 8..]))),
        None => Err(format!(
            "a data URL must read `data:<media type>;base64,<data>`, found {:?}",
            super::truncate_utf8(url, 48)
        )),
    }
}

// ----------------------------------------------------------- pixel sizes

/// Width and height from the header of base64 `data`, if it is a PNG,
/// JPEG, GIF or WebP whose header can be read.
pub fn read_pixels(data: &str) -> Option<(u32, u32)> {
    let reader = std::io::BufReader::with_capacity(768, Base64Reader::new(data.as_bytes()));
    let size = imagesize::reader_size(reader).ok()?;
    let (w, h) = (
        u32::try_from(size.width).ok()?,
        u32::try_from(size.height).ok()?,
    );
    (w > 0 && h > 0).then_some((w, h))
}

/// A reader over the bytes that base64 text stands for, decoding only what
/// is read: a seek is free, a read decodes its quads. Standard and URL-safe
/// alphabets; padding ends the data; any other character is an error.
struct Base64Reader<'a> {
    text: &'a [u8],
    pos: u64,
}

impl<'a> Base64Reader<'a> {
    fn new(text: &'a [u8]) -> Self {
        Base64Reader { text, pos: 0 }
    }

    /// The bytes quad `q` (four characters) stands for: one to three.
    fn quad(&self, q: usize) -> std::io::Result<([u8; 3], usize)> {
        let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not base64");
        let start = q * 4;
        let chars = self
            .text
            .get(start..(start + 4).min(self.text.len()))
            .unwrap_or(&[]);
        let mut sextets = [0u8; 4];
        let mut n = 0;
        for &c in chars {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' | b'-' => 62,
                b'/' | b'_' => 63,
                b'=' => break,
                _ => return Err(bad()),
            };
            sextets[n] = v;
            n += 1;
        }
        let bytes = [
            sextets[0] << 2 | sextets[1] >> 4,
            sextets[1] << 4 | sextets[2] >> 2,
            sextets[2] << 6 | sextets[3],
        ];
        Ok((bytes, n.saturating_sub(1)))
    }
}

impl Read for Base64Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut written = 0;
        while written < buf.len() {
            let q = (self.pos / 3) as usize;
            let (bytes, n) = self.quad(q)?;
            let at = (self.pos % 3) as usize;
            if at >= n {
                break;
            }
            let take = (n - at).min(buf.len() - written);
            buf[written..written + take].copy_from_slice(&bytes[at..at + take]);
            written += take;
            self.pos += take as u64;
        }
        Ok(written)
    }
}

impl Seek for Base64Reader<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let len = self.text.len() as i64 / 4 * 3;
        let target = match to {
            SeekFrom::Start(n) => n as i64,
            SeekFrom::Current(d) => self.pos as i64 + d,
            SeekFrom::End(d) => len + d,
        };
        if target < 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start",
            ));
        }
        self.pos = target as u64;
        Ok(self.pos)
    }
}

/// Unused by `imagesize` through `BufReader`, which brings its own buffer;
/// here so the reader could be handed over bare.
impl BufRead for Base64Reader<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(&[])
    }
    fn consume(&mut self, _amt: usize) {}
}

/// Base64 of `bytes` (standard alphabet, padded): for the generator and
/// tests, which write real headers.
pub fn base64_encode(bytes: &[u8], out: &mut String) {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.reserve(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(bytes: &[u8]) -> String {
        let mut s = String::new();
        base64_encode(bytes, &mut s);
        s
    }

    #[test]
    fn base64_round_trips_through_the_lazy_reader() {
        for n in 0..40usize {
            let bytes: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(37)).collect();
            let text = b64(&bytes);
            let mut r = Base64Reader::new(text.as_bytes());
            let mut back = Vec::new();
            r.read_to_end(&mut back).unwrap();
            assert_eq!(back, bytes, "{n}");
            if n > 5 {
                r.seek(SeekFrom::Start(4)).unwrap();
                let mut two = [0u8; 2];
                r.read_exact(&mut two).unwrap();
                assert_eq!(two, bytes[4..6]);
            }
        }
    }

    #[test]
    fn headers_give_pixels_and_broken_ones_none() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(1920u32.to_be_bytes());
        png.extend(1080u32.to_be_bytes());
        png.extend([8, 6, 0, 0, 0, 1, 2, 3, 4]);
        png.extend(std::iter::repeat_n(7u8, 300));
        assert_eq!(read_pixels(&b64(&png)), Some((1920, 1080)));
        assert_eq!(read_pixels("not base64 at all!"), None);
        assert_eq!(read_pixels(&b64(b"GIF89a")), None, "too short");
        assert_eq!(read_pixels(&b64(&[0u8; 64])), None, "unknown header");
    }

    #[test]
    fn engine_parts_read_and_write_back_and_bad_ones_are_named() {
        let v = json!([
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo=", "detail": "low"},
            {"type": "image", "url": "https://example.com/a.png"},
            {"type": "document", "source": {"x": 1}},
        ]);
        let parts = parts_from_values(v.as_array().unwrap().clone()).unwrap();
        assert!(matches!(&parts[1], Part::Image(i) if i.detail() == Some("low")));
        assert!(matches!(&parts[3], Part::Other(_)));
        let back: Vec<Value> = parts.iter().map(part_to_value).collect();
        assert_eq!(Value::Array(back.clone()), v);
        let direct: Vec<Value> = parts
            .iter()
            .map(|p| serde_json::to_value(PartJson(p)).unwrap())
            .collect();
        assert_eq!(direct, back);
        for (bad, says) in [
            (json!({"type": "text", "text": 3}), "must be a string"),
            (json!({"type": "image"}), "needs `mediaType`"),
            (json!({"type": "image", "data": "AAAA"}), "no `mediaType`"),
            (
                json!({"type": "image", "data": 4, "mediaType": "image/png"}),
                "base64 string",
            ),
            (json!({"type": "image", "url": "u", "data": "AAAA"}), "both"),
            (json!("text"), "part object"),
        ] {
            let e = parts_from_values(vec![bad.clone()]).unwrap_err();
            assert!(e.contains("content[0]") && e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn data_urls_split_and_bad_ones_say_so() {
        assert_eq!(
            split_data_url("data:image/png;base64,AAAA").unwrap(),
            Some(("image/png", "AAAA"))
        );
        assert_eq!(split_data_url("https://x/y.png").unwrap(), None);
        assert!(split_data_url("data:image/png,rawbytes")
            .unwrap_err()
            .contains("base64"));
    }

    #[test]
    fn an_elided_image_says_what_it_was_within_200_bytes() {
        let img = Image::inline("image/png", "AAAA");
        assert_eq!(
            img.elision_text(),
            "[image elided: image/png, ?×?, 4 bytes]"
        );
        let long = Image::inline("x".repeat(500), "AAAA");
        assert!(long.elision_text().len() <= ELISION_MAX_BYTES);
        assert!(long.elided().is_elision_of(&Part::Image(long.clone())));
    }
}
