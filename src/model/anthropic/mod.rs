//! The `anthropic` wire format (SPEC §1.3): Anthropic Messages.
//!
//! `system` is a top-level field (a string, or an array of text blocks);
//! `messages` are `user` or `assistant` turns whose `content` is a string or
//! an array of blocks: `text`, assistant `tool_use {id, name, input}`, user
//! `tool_result {tool_use_id, content, is_error?}`, and any other block type
//! (`image`, `thinking`, `document`, …), which is kept as it is.
//!
//! # Mapping to the engine model
//!
//! | anthropic | engine |
//! |---|---|
//! | `system: "…"` | one leading `system` message |
//! | `system: [text blocks]` | one leading `system` message per block; a block's other fields (`cache_control`) are the message's `extra` |
//! | assistant message | one `assistant` message: its text blocks, concatenated, are `content`; its `tool_use` blocks are `toolCalls` (`input` is `arguments`; a block's other fields are the call's `extra`) |
//! | user message, string content | one `user` message |
//! | user message, array content | one `tool` message per `tool_result` block, in block order (the block's other fields, `is_error` among them, are its `extra`), then one `user` message holding the other blocks, if there are any (or if there are no blocks at all) |
//! | message fields other than `role`, `content` | `extra` of the message (of the `user` part, for a split user message) |
//! | `pinned` on a message | `pinned` of every engine message read from it |
//!
//! Text blocks are concatenated with no separator, so `content` has exactly
//! the bytes the model sees as text — unless the blocks hold an image.
//!
//! # Images (SPEC §1.4)
//!
//! A user message's (or a `tool_result`'s) array content that holds an
//! `image` block — `{"type": "image", "source": {"type": "base64",
//! "media_type", "data"}}` or `{"source": {"type": "url", "url"}}` — is
//! read as engine *parts*, one per block: text blocks as text parts (their
//! other fields, `cache_control` among them, in the part's `extra`), image
//! blocks as images (the source's other fields in the image's hint), any
//! other block as a part kept verbatim. An image block with another source
//! type (`file`) is kept verbatim too: its pixels cannot be read. Array
//! content without an image is read as before, its text joined. An array with no text block gives
//! `content: null`. Tool results come first in the engine even where a user
//! message puts text before them: the engine needs them right after their
//! calls (SPEC §1.2).
//!
//! # Writing back without loss
//!
//! What the engine model cannot hold is kept in the hidden `wire` hints of
//! [`Message`] and [`ToolCall`](crate::model::ToolCall), under an `"anthropic"` key: the block
//! layout of array content (text blocks as templates holding their byte
//! length in place of their text; non-text blocks verbatim; `null` marking
//! where a `tool_use` goes), the place of each `tool_result` block in its
//! message, which engine messages came from one user message (`group`,
//! `part`), the shape of `system`, and fields whose names the engine
//! reserves. Writing a message read from this format gives back the same
//! JSON value. Writing a message whose text changed since it was read falls
//! back to one text block where the first one was.
//!
//! # Writing other histories
//!
//! - The leading run of `system` messages becomes the top-level `system`: a
//!   string when there is one plain message, else an array of text blocks.
//! - Consecutive `tool` messages become one user message of `tool_result`
//!   blocks (what the API requires); a `user` message joins them only where
//!   the message it was read from held both.
//! - An assistant message with calls gets array content: a text block (when
//!   its content is not empty), then one `tool_use` block per call.
//! - A `system` message after the head (a compactor's summary placed after
//!   pinned messages) has no place in this format: it is written as a `user`
//!   message with one text block. Its text, order and fields are kept; its
//!   role is not, so reading it back gives a `user` message.
//! - An empty history with `system: null` or `system: []` writes no `system`
//!   (there is no message to remember it by).
//!
//! # Layout
//!
//! `read` turns messages and their blocks into engine messages, `write`
//! assembles engine messages back into anthropic ones, and `parts` holds
//! the blocks of content parts both ways. The hints they share are here.

mod block;
mod parts;
mod read;
mod write;

pub use parts::{part_block, part_block_size};

use serde_json::{Map, Value};

use super::{head_len, Message};
use crate::error::{InputError, InputErrorKind};
use read::{read_message, read_system};
use write::{write_system, Writer};

/// Marks, inside this module's error texts, a problem with a content part
/// (an image block without a source…): such an error is
/// [`InputErrorKind::Part`], the rest [`InputErrorKind::Shape`]. Removed
/// before a person sees the text.
const PART_ERROR: &str = "\u{1}part\u{1}";

/// A message's reading error, with its kind.
fn read_error(i: usize, p: String) -> InputError {
    match p.find(PART_ERROR) {
        Some(_) => InputError::at(InputErrorKind::Part, i, p.replacen(PART_ERROR, "", 1)),
        None => InputError::shape_at(i, p),
    }
}

/// The key of this format's hints inside a `wire` value.
const NS: &str = "anthropic";

type Fields = Map<String, Value>;

/// Read an anthropic history: the top-level `system` (if the document has
/// one) and the `messages` array.
pub fn read_messages(system: Option<&Value>, raw: &[Value]) -> Result<Vec<Message>, InputError> {
    let head = read_head(system)?;
    let mut out = Vec::new();
    for (i, v) in raw.iter().enumerate() {
        read_message_into(v, i, &mut out)?;
    }
    Ok(put_head(system, head, out))
}

/// Read `messages[i]` into one or more engine messages, appended to `out`:
/// a history read one message at a time, as it is parsed. [`with_system`]
/// puts the top-level `system` before them when all are read.
pub fn read_message_into(v: &Value, i: usize, out: &mut Vec<Message>) -> Result<(), InputError> {
    read_message(v, i, out).map_err(|p| read_error(i, p))
}

/// The messages `msgs` read one at a time, with the top-level `system`
/// (if the document has one) read and put before them: what
/// [`read_messages`] gives for the whole document.
pub fn with_system(system: Option<&Value>, msgs: Vec<Message>) -> Result<Vec<Message>, InputError> {
    let head = read_head(system)?;
    Ok(put_head(system, head, msgs))
}

fn read_head(system: Option<&Value>) -> Result<Vec<Message>, InputError> {
    system.map_or(Ok(Vec::new()), read_system)
}

/// `head` (the messages of `system`) before `out`; `system: null` or `[]`
/// reads as no message, and the first message remembers it.
fn put_head(system: Option<&Value>, head: Vec<Message>, mut out: Vec<Message>) -> Vec<Message> {
    let empty_system = system.filter(|_| head.is_empty()).cloned();
    let first = head.len();
    out.splice(0..0, head);
    if let (Some(v), Some(m)) = (empty_system, out.get_mut(first)) {
        let mut h = hint(&m.wire).cloned().unwrap_or_default();
        h.insert("emptySystem".into(), v);
        m.wire = wrap(h);
    }
    out
}

/// Write a history: the top-level `system` (`None` when there is nothing to
/// put there) and the `messages` array.
pub fn write_messages(msgs: &[Message]) -> (Option<Value>, Vec<Value>) {
    let head = head_len(msgs);
    let system = write_system(&msgs[..head], msgs.first());
    let mut w = Writer::default();
    for m in &msgs[head..] {
        w.push(m);
    }
    (system, w.finish())
}

// ------------------------------------------------------------------ hints

fn hint(wire: &Option<Box<Value>>) -> Option<&Fields> {
    wire.as_deref()?.get(NS)?.as_object()
}

fn wrap(h: Fields) -> Option<Box<Value>> {
    if h.is_empty() {
        return None;
    }
    let mut outer = Map::new();
    outer.insert(NS.into(), Value::Object(h));
    Some(Box::new(Value::Object(outer)))
}

fn merge_hint(wire: Option<Box<Value>>, more: Fields) -> Option<Box<Value>> {
    let mut h = hint(&wire).cloned().unwrap_or_default();
    h.extend(more);
    wrap(h)
}

/// Insert a map of fields into a hint when it is not empty.
fn put(h: &mut Fields, key: &str, fields: Fields) {
    if !fields.is_empty() {
        h.insert(key.into(), Value::Object(fields));
    }
}

fn hint_usize(h: Option<&Fields>, key: &str) -> Option<usize> {
    h?.get(key)?.as_u64().and_then(|n| usize::try_from(n).ok())
}

fn hint_fields<'a>(h: Option<&'a Fields>, key: &str) -> Option<&'a Fields> {
    h?.get(key)?.as_object()
}
