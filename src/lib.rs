#![doc = include_str!("../docs/architecture.md")]
//!
//! ## The modules
//!
//! - [`model`]: messages, tool calls, iterations, well-formedness, the
//!   `engine`, `openai` and `anthropic` wire formats (SPEC §1); content
//!   parts and images, their pixels read from their headers
//!   ([`model::parts`], SPEC §1.4); JSON values as the contract compares
//!   and spells them ([`model::value`]).
//! - [`config`]: the compactor configuration and its derived trigger (SPEC §2).
//! - [`body`]: the exact serialised size of a request body (SPEC §2).
//! - [`estimate`]: the `content-only` and `adr-0098` estimators (SPEC §3),
//!   an image's tokens by its pixels ([`estimate::images`]).
//! - [`contract`]: compaction due, the trigger's rounding, the head in its
//!   two readings, the minimal output, the estimate floor — used by the
//!   reference, the oracles, the generator and the CLI alike.
//! - [`reference`](mod@reference): the reference compactor (SPEC §4).
//! - [`invariant`]: the fourteen names of SPEC §5, and sets of them.
//! - [`generate`]: cases (configs and histories), shrinking, coverage; one
//!   [`generate::GenConfig`] (serde, `--gen-config`), one content-class
//!   vocabulary and text generator ([`generate::text`]) for generate,
//!   calibrate and benches; cases under a given config (`--config`).
//! - [`corpus`]: real histories as seeds (`check --corpus`), sent as
//!   ToolLoop sessions under ceilings around their sizes, and mutated.
//! - [`subject`]: compactors under test and what they answer (SPEC §6).
//! - [`oracle`]: one checker per invariant; verdicts pass, fail or not
//!   applicable, with the reason.
//! - [`harness`], [`check`]: one case end to end; a whole run, with
//!   shrinking, fixtures and the rule that a run which checked nothing fails.
//! - [`baseline`]: the gate on a change (`check --baseline`): the same cases
//!   to the compactor before and after, regressions apart from known
//!   failures and fixes, behaviour deltas per case class; a suite's
//!   fixtures judged the same way on both sides (`baseline::suite`).
//! - [`fixture`], [`report`]: SPEC §7 files and their replay; human, JSON and
//!   JUnit reports. [`suite`]: a folder of fixtures replayed as part of a
//!   gate (`check --with-suite`).
//! - `calibrate` (cargo feature `calibrate`, on by default): the estimators
//!   against the real cl100k/o200k tokenizers, per content class and over
//!   real histories; the `safe-classwise` estimator it calibrated is in `estimate`.
//! - `compare` (with `calibrate`): two or more estimators — any subject's
//!   `estimate` op, or built-ins — side by side on the same inputs:
//!   accuracy against real tokens, the toolCalls floor, speed.
//! - [`testing`]: ctxgate for a compactor written in Rust — wrap it as a
//!   subject, check one case in a proptest property or a fuzz target, or
//!   run a whole check in process.
//! - [`transport`]: the real HTTP end — an endpoint's body limit measured
//!   to the byte (`probe-ceiling`), and a subject whose ToolLoop bodies also
//!   go to a live endpoint (`check --transport`); loopback only, unless
//!   allowed.
//! - `agent` (cargo feature `agent`, on by default): ctxgate plays the
//!   model for an agent as it ships (`ctxgate agent`, SPEC §9) — a loopback
//!   endpoint in three dialects, generated ToolLoops played through the
//!   agent's own tools, nine invariants judged on every request's bytes.
//! - [`error`]: bad input as a value that names file, message and problem.

#[cfg(feature = "agent")]
pub mod agent;
pub mod baseline;
pub mod body;
#[cfg(feature = "calibrate")]
pub mod calibrate;
pub mod check;
#[cfg(feature = "calibrate")]
pub mod compare;
pub mod config;
pub mod contract;
pub mod corpus;
pub mod error;
pub mod estimate;
pub mod fixture;
pub mod fuzzing;
pub mod generate;
pub mod harness;
pub mod input;
pub mod invariant;
pub mod model;
pub mod oracle;
pub mod reference;
pub mod report;
pub mod run;
pub mod subject;
pub mod suite;
pub mod testing;
pub mod transport;

pub use config::Config;
pub use error::InputError;
pub use model::{Content, Document, Message, Role, ToolCall, WireFormat, WireFormats};
pub use reference::{compact, CompactError};
