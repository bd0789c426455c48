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
mod format;
mod iteration;
mod message;
pub mod openai;
pub mod value;

pub use document::{
    parse_json, read_messages, read_messages_owned, write_messages, Document, Shape, MAX_DEPTH,
};
pub use format::WireFormat;
pub use iteration::{check_well_formed, head_len, iterations, unanswered_calls};
pub use message::{Content, Message, Role, ToolCall};
