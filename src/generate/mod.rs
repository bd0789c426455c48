//! Generators: configs and histories for the properties, the fuzz targets
//! and `ctxgate gen`, with history-aware shrinking and coverage statistics
//! (issue 3, items 2, 3 and 7).
//!
//! The contract:
//!
//! - **One generation core**, [`gen_case`], serves `arbitrary`
//!   ([`Case`]'s and [`GenConfig`]'s `Arbitrary` impls), proptest
//!   ([`cases`]) and seeds ([`case_from_seed`], [`gen_lines`]). The fuzzer's
//!   bytes choose the *shape* (counts, classes, sizes, flags); a small PRNG
//!   seeded from the first eight bytes writes the bulk text, so a few
//!   hundred bytes make a realistic history.
//! - **Valid by construction.** Every config passes `Config::validate`;
//!   every history passes `model::check_well_formed` (SPEC §1.2) unless
//!   [`GenConfig::allow_ill_formed`] opts in.
//! - **Swarm testing.** [`GenConfig`] holds maxima and shares; each case
//!   draws its own limits under them.
//! - **Boundary seeking.** A share of cases (`boundary_percent`, 25 by
//!   default) is sized after generation so that the adr-0098 estimate is on
//!   the trigger or ±1 token, or the body on the ceiling or ±1 byte.
//! - **A given config** ([`case_for_config`], `--config`): every case has
//!   exactly it; the boundary share is aimed at *its* trigger and ceiling
//!   by growing or trimming the history (`aim`), not by moving the config.
//! - **Shrinking understands histories** ([`shrink_candidates`],
//!   [`shrink`]): whole iterations, one parallel call with its result,
//!   pins, texts, arguments, the envelope and the config, and every
//!   candidate of a well-formed case is well formed.
//! - **Coverage** ([`Coverage`]) says what a run's cases held, and
//!   [`Coverage::missing`] what they never reached.
//!
//! What it does not do: run subjects or judge outputs (that is the
//! oracles' job), or write fixtures.
//!
//! The figures for `GenConfig::default()` (2,000 seeds; `tests/generate.rs`
//! checks them):
//!
//! - without images (88% of the cases, each the very case the generator
//!   made before images existed): mean body about 45 KB (37–52 KB from run
//!   to run), median about 9.5 KB, 29 messages on average; about 0.6–1% of
//!   cases are over 1 MiB (long histories with results at the 32 KiB cap)
//!   and 3% run past 60 iterations;
//! - with images (`images_percent`, 12%): a few screenshots to a
//!   computer-use run of two dozen, mean body about 4 MB, which brings the
//!   mean of all cases to about 0.5 MB;
//! - about 25% of cases sit on a boundary (estimate within ±1 token of the
//!   trigger, or body within ±1 byte of the ceiling); the estimate equals
//!   the trigger in about 6.5% of cases, the body equals the ceiling in
//!   about 7%;
//! - on the reference, about 38% of cases come back unchanged, 45% are
//!   compacted and 17% answer `cannot_fit`.
//!
//! On one core (release build) generation runs at about 15,000 default
//! cases a second, and generation plus the reference at about 9,000.

mod aim;
pub mod coverage;
mod gen_config;
mod history;
pub mod images;
mod rng;
mod shrink;
mod strategy;
pub mod text;

use std::sync::OnceLock;

use serde_json::{Map, Value};

pub use coverage::Coverage;
pub use gen_config::GenConfig;
pub(crate) use history::set_trigger;
pub use history::{gen_case, gen_case_for, TOOL_RESULT_CAP};
pub use rng::{mix, SplitMix64};
pub use shrink::{shrink, shrink_candidates, shrink_with_limit, MAX_SHRINK_CALLS};
pub use strategy::{cases, CaseStrategy, CaseTree};
pub use text::{classify, ContentClass};

use crate::body;
use crate::config::Config;
use crate::error::{json_type, InputError};
use crate::estimate::{Adr0098, Estimator};
use crate::model::{anthropic, check_well_formed, engine, Message};

/// Generate `anthropic` cases once `model::anthropic::write_messages`
/// writes something (it is a placeholder until then); set to false to
/// leave the format out even then.
pub const ANTHROPIC: bool = true;

/// Whether generated cases may use the `anthropic` wire format.
pub fn anthropic_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    ANTHROPIC
        && *READY.get_or_init(|| {
            !anthropic::write_messages(&[Message::user("probe")])
                .1
                .is_empty()
        })
}

/// One generated case: a config and a history, in the canonical model.
///
/// `Debug` prints the case's JSON line, which `ctxgate gen` prints and
/// [`Case::from_json`] reads back.
#[derive(Clone, PartialEq)]
pub struct Case {
    pub config: Config,
    pub messages: Vec<Message>,
}

impl Case {
    /// `{"config": {...}, "messages": [...]}`, messages in the engine format.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("config".into(), self.config.to_value());
        obj.insert(
            "messages".into(),
            Value::Array(engine::write_messages(&self.messages)),
        );
        Value::Object(obj)
    }

    /// Read `{"config": {...}, "messages": [...]}` (engine format). A
    /// missing `config` is the default config; other fields are ignored,
    /// so a SPEC §7 fixture reads as its case. The config must validate;
    /// the history is *not* checked for well-formedness (an ill-formed
    /// case is a case too): see [`Case::is_well_formed`].
    pub fn from_json(v: &Value) -> Result<Case, InputError> {
        let obj = v.as_object().ok_or_else(|| {
            InputError::shape(format!(
                "a case is an object with `config` and `messages`, found {}",
                json_type(v)
            ))
        })?;
        let config = match obj.get("config") {
            Some(c) => Config::from_value(c.clone())?,
            None => Config::default(),
        };
        let messages = match obj.get("messages") {
            Some(Value::Array(arr)) => engine::read_messages(arr)?,
            Some(other) => {
                return Err(InputError::shape(format!(
                    "`messages` must be an array, found {}",
                    json_type(other)
                )))
            }
            None => return Err(InputError::shape("a case needs a `messages` array")),
        };
        Ok(Case { config, messages })
    }

    /// The exact body size under the case's config (SPEC §2).
    pub fn body_bytes(&self) -> u64 {
        body::body_bytes(&self.config, &self.messages)
    }

    /// The adr-0098 estimate of the history, in tokens (SPEC §3).
    pub fn estimate(&self) -> u64 {
        Adr0098.tokens(&mut self.messages.iter(), &self.config)
    }

    /// SPEC §1.2 well-formedness of the history.
    pub fn is_well_formed(&self) -> bool {
        check_well_formed(&self.messages).is_ok()
    }
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// A swarm [`GenConfig`] (random maxima), then [`gen_case`] under it.
impl<'a> arbitrary::Arbitrary<'a> for Case {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let g = GenConfig::arbitrary(u)?;
        gen_case(u, &g)
    }
}

/// The case number `index` of the run seeded `seed`: deterministic, the
/// same on every platform. What `ctxgate check` and `ctxgate gen` run.
pub fn case_from_seed(seed: u64, index: u64, g: &GenConfig) -> Case {
    let bytes = rng::mix(seed, index).to_le_bytes();
    let mut u = arbitrary::Unstructured::new(&bytes);
    gen_case(&mut u, g).expect("generation from a seed cannot run out of input")
}

/// The first `n` cases of the run seeded `seed` under the default
/// generator, each with its index: what a test walks.
pub fn seeded(seed: u64, n: u64) -> impl Iterator<Item = (u64, Case)> {
    let g = GenConfig::default();
    (0..n).map(move |i| (i, case_from_seed(seed, i, &g)))
}

/// [`case_from_seed`] under one given config (`--config`): the case has
/// exactly `config`, and a boundary case sits on its trigger or ceiling.
pub fn case_for_config(seed: u64, index: u64, g: &GenConfig, config: &Config) -> Case {
    let bytes = rng::mix(seed, index).to_le_bytes();
    let mut u = arbitrary::Unstructured::new(&bytes);
    gen_case_for(&mut u, g, config).expect("generation from a seed cannot run out of input")
}

/// `cases` JSON lines, `{"config": …, "messages": […]}`, for `ctxgate gen`.
pub fn gen_lines(seed: u64, cases: u64, g: &GenConfig) -> impl Iterator<Item = String> {
    let g = g.clone();
    (0..cases).map(move |i| case_from_seed(seed, i, &g).to_json().to_string())
}
