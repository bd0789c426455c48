//! Agent mode (SPEC §9): ctxgate plays the model for an agent as it ships
//! and judges every request the agent sends.
//!
//! Data flows one way, as in Jepsen's Maelstrom: every message between the
//! agent and its model passes through ctxgate, which records it; the
//! judges run afterwards over the record.
//!
//! ```text
//! generate ──► script ──► endpoint ◄──► agent ──► trace ──► judges ──► (shrink by re-running) ──► fixture ──► report
//!  (a Case)   (model     (answers,     (CMD, its    (requests   (nine agent
//!              turns)     records)      own tools)    as bytes)   invariants)
//! ```
//!
//! - [`script`]: a generated ToolLoop as the model's side: each iteration
//!   that calls tools is a turn whose calls read files ctxgate writes into
//!   the workspace, so every result's content is known.
//! - [`dialect`]: the edge — requests read into engine messages through
//!   `model`'s wire formats, turns rendered as each provider answers
//!   (JSON, or the SSE events its SDKs parse).
//! - [`gateway`]: the `413` each gateway answers a body over its limit with.
//! - [`tools`]: which advertised tool reads a file, and its arguments.
//! - [`play`]: one case's model — records each request and answers it;
//!   [`endpoint`]: the loopback HTTP server (axum) around it.
//! - [`case`]: one case end to end — its folder, endpoint, process group
//!   and deadline, cleaned up when it returns; [`driver`]: the driven form,
//!   where a test plays each case with an agent in its own process.
//! - [`conversation`], [`judge`]: the conversation rebuilt from the
//!   requests, and the nine judges, pure functions of a trace.
//! - [`run`](mod@run): cases, confirmation by re-running, shrinking
//!   (`run::shrink`'s budget rule), fixtures ([`fixture`]) and the report
//!   ([`report`], four forms through `report`'s writers).
//!
//! What it does not do: reach any address but loopback, or write outside
//! the run's folder and `--save`.

pub mod case;
pub mod conversation;
pub mod dialect;
pub mod driver;
pub mod endpoint;
pub mod fixture;
pub mod gateway;
pub mod image_file;
pub mod invariants;
pub mod judge;
pub mod play;
pub mod probe;
pub mod report;
pub mod run;
pub mod script;
pub mod settings;
pub mod tools;
pub mod trace;

pub use dialect::Dialect;
pub use fixture::AgentFixture;
pub use gateway::Gateway;
pub use invariants::AgentInvariant;
pub use run::{AgentOptions, AgentReport};
pub use script::Script;
pub use settings::Settings;
