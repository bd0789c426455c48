//! The history model (SPEC §1): messages, tool calls, the three wire
//! formats and iterations.
//!
//! The engine format is canonical: every history is held as `Vec<Message>`
//! whatever format it was read from. `openai` and `anthropic` read into it
//! and write from it; each keeps, in hidden `wire` hints, what it needs to
//! write itself back without loss.

pub mod anthropic;
pub(crate) mod document;
pub mod engine;
pub mod engine_de;
pub mod engine_ser;
pub(crate) mod field;
mod format;
mod iteration;
pub mod json_size;
mod message;
pub mod openai;
pub mod parts;
pub mod streamed;
pub mod text;
pub mod unique_keys;
pub mod value;

pub use document::{
    parse_json, parse_json_expecting, read_messages, read_messages_owned, write_messages, Document,
    Shape, MAX_DEPTH,
};
pub use format::{evidence, Detection, Detector, WireFormat, WireFormats};
pub use iteration::{check_well_formed, head_len, iterations, unanswered_calls};
pub use message::{Content, Message, Role, ToolCall};
pub use parts::{Image, ImageData, ImageSource, Part, TextPart};
pub use text::{one_line, truncate_utf8};

/// The history as the engine format carries it: without the spellings a
/// wire-format reader kept (`Message::wire`, `ToolCall::wire`: an `openai`
/// call's `arguments` string as written, `{"a": 1}` with its spaces), which
/// engine messages cannot carry. A subject sent them in that format
/// measures the compact form, so the history is measured that way too —
/// else every such body is a few bytes apart from the subject's, and a
/// ceiling placed between the two fails a correct subject by those bytes.
pub fn forget_spellings(msgs: &mut [Message]) {
    for m in msgs {
        m.wire = None;
        for c in m.tool_calls.iter_mut().flatten() {
            c.wire = None;
        }
        if let Content::Parts(parts) = &mut m.content {
            for p in parts {
                if let Part::Image(i) = p {
                    i.wire = None;
                }
            }
        }
    }
}

/// Whether any message of `msgs` keeps a spelling ([`forget_spellings`]).
pub fn has_spellings(msgs: &[Message]) -> bool {
    msgs.iter().any(|m| {
        m.wire.is_some()
            || m.tool_calls.iter().flatten().any(|c| c.wire.is_some())
            || m.content.images().any(|i| i.wire.is_some())
    })
}
