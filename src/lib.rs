//! # ctxgate
//!
//! A property-based conformance and fuzz harness for LLM context
//! compactors, built on ADR 0098: a compactor must trigger before the
//! request body overflows the real transport limit, count tool-call
//! arguments, and never cut an assistant message from its tool results.
//!
//! The pieces, and how data flows between them:
//!
//! ```text
//! model (histories, 3 wire formats) ── body (exact size) ── estimate
//!        │                                                     │
//!        └──────────────► reference (ADR 0098, hardened) ◄─────┘
//! ```
//!
//! - [`model`]: messages, tool calls, iterations, well-formedness, the
//!   `engine`, `openai` and `anthropic` wire formats (SPEC §1).
//! - [`config`]: the compactor configuration and its derived trigger (SPEC §2).
//! - [`body`]: the exact serialised size of a request body (SPEC §2).
//! - [`estimate`]: the `content-only` and `adr-0098` estimators (SPEC §3).
//! - `calibrate` (cargo feature `calibrate`, on by default): the estimators
//!   against the real cl100k/o200k tokenizers, per content class and over
//!   real histories; the `safe-classwise` estimator it calibrated is in `estimate`.
//! - [`reference`]: the reference compactor (SPEC §4).
//! - [`error`]: bad input as a value that names file, message and problem.

pub mod body;
#[cfg(feature = "calibrate")]
pub mod calibrate;
pub mod check;
pub mod config;
pub mod contract;
pub mod error;
pub mod estimate;
pub mod fixture;
pub mod fuzzing;
pub mod generate;
pub mod harness;
pub mod invariant;
pub mod model;
pub mod oracle;
pub mod reference;
pub mod report;
pub mod subject;

pub use config::Config;
pub use error::InputError;
pub use model::{Content, Document, Message, Role, ToolCall, WireFormat};
pub use reference::{compact, CompactError};
