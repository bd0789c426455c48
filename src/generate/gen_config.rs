//! [`GenConfig`]: what the generators may produce, one documented default
//! per knob.
//!
//! Swarm testing, as in wasm-smith's `Config`: the knobs are *maxima* and
//! *shares*; each case then draws its own limits under them (a case may
//! have three iterations of tiny results, the next sixty iterations at the
//! 32 KiB cap), so that rare shapes show up without making every case big.
//! `GenConfig::default()` keeps the mean case at a few tens of KB (see
//! `generate`'s module docs for the figures); the `Arbitrary` impl draws
//! random maxima inside each knob's documented range, which is what the
//! fuzz targets use.
//!
//! As JSON (`check --gen-config FILE`, `gen --gen-config FILE`; `ctxgate gen
//! --print-gen-config` prints the defaults): an object with the fields below
//! in camelCase, every one optional (a missing field keeps its default), an
//! unknown field an error ([`GenConfig::from_json`]).

use arbitrary::{Arbitrary, Unstructured};
use serde::{Deserialize, Serialize};

use super::text::ContentClass;
use crate::error::{InputError, InputErrorKind};
use crate::model::{WireFormat, WireFormats};

/// The documented range of each size knob (the percents are 0–100).
const RANGES: [(&str, u64, u64); 12] = [
    ("maxImages", 1, 120),
    ("maxImageBytes", 1_024, 20_971_520),
    ("maxIterations", 0, 200),
    ("maxParallelCalls", 0, 16),
    ("maxToolResultBytes", 0, 262_144),
    ("maxArgumentBytes", 2, 65_536),
    ("maxJsonDepth", 1, 40),
    ("maxTextBytes", 0, 65_536),
    ("maxEnvelopeBytes", 2, 131_072),
    ("maxHead", 0, 3),
    ("maxSummaryBytes", 0, 65_536),
    ("maxAimedBodyBytes", 1_024, 1 << 30),
];

/// The knobs that are percents of the cases, whole numbers 0–100.
const PERCENTS: [&str; 14] = [
    "pinnedPercent",
    "pendingPercent",
    "reusedIdsPercent",
    "extraFieldsPercent",
    "boundaryPercent",
    "realConfigPercent",
    "tinyConfigPercent",
    "openaiPercent",
    "anthropicPercent",
    "illFormedPercent",
    "exoticNumbersPercent",
    "imagesPercent",
    "screenshotRunPercent",
    "remoteImagePercent",
];

/// What is wrong with a gen-config serde refused, naming the field, as a
/// config file's errors do (`config::field_problem`): serde's own message
/// for `"imagesPercent": 1e400`, `12.5` or `-1` was "invalid number",
/// naming neither the field nor what it takes.
fn field_problem(value: &serde_json::Value, whole: serde_json::Error) -> String {
    let Some(fields) = value.as_object() else {
        return whole.to_string();
    };
    for (k, v) in fields {
        let one = serde_json::Value::Object(serde_json::Map::from_iter([(k.clone(), v.clone())]));
        let Err(e) = serde_json::from_value::<GenConfig>(one) else {
            continue;
        };
        return match (v, GenConfig::range_of(k)) {
            (serde_json::Value::Number(n), Some((lo, hi))) => {
                let what = match PERCENTS.contains(&k.as_str()) {
                    true => "is a percent, a whole number",
                    false => "must be a whole number",
                };
                format!("`{k}` {what} from {lo} to {hi}, found {n}")
            }
            _ if e.to_string().starts_with("unknown field") => e.to_string(),
            _ => format!("`{k}`: {e}"),
        };
    }
    whole.to_string()
}

/// What the generators may produce. Every field has a documented default
/// and a documented range (the range the `Arbitrary` impl draws from).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct GenConfig {
    /// Most iterations (SPEC §1.2) after the head of one history. Each
    /// case draws its own count, mostly 2–30, rarely past 60 (ADR 0098's
    /// gate runs up to 60). Default 90; range 0–200.
    pub max_iterations: usize,
    /// Most parallel calls in one assistant message; 0 makes histories
    /// without tool calls. Default 8; range 0–16.
    pub max_parallel_calls: usize,
    /// Largest tool result, in bytes. The default passes RN-150's 32 KiB
    /// individual cap, which a share of results hits exactly.
    /// Default 40,000; range 0–262,144.
    pub max_tool_result_bytes: usize,
    /// Largest tool-call `arguments`, in bytes of JSON. Default 16,384;
    /// range 2–65,536.
    pub max_argument_bytes: usize,
    /// Deepest nesting of generated JSON (arguments, envelope, extra
    /// fields), well under serde_json's limit of 128 with the message
    /// around it. Default 20; range 1–40.
    pub max_json_depth: usize,
    /// Largest text of a system, user or assistant message, in bytes.
    /// Default 8,192; range 0–65,536.
    pub max_text_bytes: usize,
    /// Largest envelope (tool schemas, model, session id), in bytes.
    /// Default 40,000; range 2–131,072.
    pub max_envelope_bytes: usize,
    /// Most `system` messages in the head. Default 3; range 0–3.
    pub max_head: usize,
    /// Largest `summaryMaxBytes`. Default 8,192; range 0–65,536.
    pub max_summary_bytes: usize,
    /// The content classes texts are drawn from; each case uses a random
    /// non-empty subset of the text classes. `images` (not a text class)
    /// turns image cases on: `images_percent` of the cases carry
    /// screenshots (`generate::images`). Default: all eight; range: any
    /// non-empty subset. In JSON, by name: `prose`, `code`, `json`, `cjk`,
    /// `multilingual`, `emoji`, `escapes`, `images`.
    pub content_classes: Vec<ContentClass>,
    /// Percent of cases with images (when `contentClasses` has `images`):
    /// screenshots pasted in user messages, in tool results, or one per
    /// turn as a computer-use loop sends them. Kept moderate so that every
    /// invariant gets ample cases without images too, and the default run
    /// its speed: an image case's body is megabytes, and a subject behind
    /// the protocol parses each ToolLoop turn of it (at 12% and 24 images
    /// a case, python-minimal ran 6× slower than without images; at 8% and
    /// 8, 2.8×). Default 8; range 0–100.
    pub images_percent: u8,
    /// Most images in one case (a computer-use run of screenshots stops
    /// there). Default 8, enough to put a run of screenshots over every
    /// ceiling the generator draws; range 1–120 (earendil-works/pi#5369's
    /// session held 99: raise it to test such sessions).
    pub max_images: usize,
    /// Largest image file, in bytes before base64 (which is 4/3 of it in
    /// the body). Payloads run from a few KB (icons) up to this; 1% of the
    /// images sit at it. Default 5,242,880 (Anthropic's per-image limit,
    /// 5 MB); range 1,024–20,971,520 (OpenAI's 20 MB).
    pub max_image_bytes: usize,
    /// Percent of image cases shaped as a computer-use loop: one
    /// screenshot of the same screen in every tool iteration's first
    /// result. Default 35; range 0–100.
    pub screenshot_run_percent: u8,
    /// Percent of images given as a remote URL instead of inline base64
    /// (a few bytes of body, pixels unknown). Default 10; range 0–100.
    pub remote_image_percent: u8,
    /// Percent of cases with pinned messages (any role, head included,
    /// and some `pinned: false`). Default 20; range 0–100.
    pub pinned_percent: u8,
    /// Percent of cases whose last iteration is pending (calls left
    /// unanswered). Default 15; range 0–100.
    pub pending_percent: u8,
    /// Percent of cases that reuse call ids across iterations (`call_0`
    /// every turn). Default 25; range 0–100.
    pub reused_ids_percent: u8,
    /// Percent of cases with unknown extra fields on messages and calls.
    /// Default 20; range 0–100.
    pub extra_fields_percent: u8,
    /// Percent of cases sized after generation so that the adr-0098
    /// estimate is on the trigger (or ±1 token), or the body on the
    /// ceiling (or ±1 byte), or both. Default 25; range 0–100.
    pub boundary_percent: u8,
    /// Percent of cases with ADR 0098's real values (128,000 tokens,
    /// 8 MiB or Express's 102,400 bytes, threshold 0.7). Default 25.
    pub real_config_percent: u8,
    /// Percent of cases with a tiny config (a ceiling of a few hundred
    /// bytes, a window of tens of tokens). Default 15. The rest are sized
    /// relative to their history (ceiling and window ¼× to 4× of it).
    pub tiny_config_percent: u8,
    /// Percent of cases measured in the `openai` wire format. Default 25.
    pub openai_percent: u8,
    /// Percent of cases in the `anthropic` wire format, once that format
    /// is implemented (see `generate::ANTHROPIC`). Default 10.
    pub anthropic_percent: u8,
    /// Explicit opt-in to ill-formed histories: orphan tool results,
    /// duplicate answers, calls left unanswered mid-history, duplicate call
    /// ids. Default false (every history is well formed, SPEC §1.2).
    pub allow_ill_formed: bool,
    /// Percent of cases made ill formed when `allow_ill_formed` is set.
    /// Default 50; range 0–100.
    pub ill_formed_percent: u8,
    /// Largest body a case is grown to when it is aimed at a fixed
    /// config's ceiling (`--config`), in bytes: a ceiling above it gets no
    /// case on it (its trigger's cases are aimed at still), so the
    /// generator's memory and time do not grow with the ceiling. A
    /// compactor's ceiling above it is checked by every case under it, not
    /// at the byte. Default 67,108,864 (64 MiB, twice Anthropic's 32 MB
    /// request limit); range 1,024–1,073,741,824.
    pub max_aimed_body_bytes: u64,
    /// Percent of cases whose JSON numbers (tool-call arguments, extra
    /// fields, the envelope) include spellings that stock JSON libraries
    /// re-write or round: `1.50`, `12.0`, `1e5`, `-0`, 2^64, `1e400`,
    /// `0.00001` (`model::value`). Every other number generated is
    /// portable. `check` sends these only to subjects whose hello says
    /// `"numbers": "exact"` (or with `--numbers exact`), and sets the
    /// share to 0 for the rest. Default 10; range 0–100.
    pub exotic_numbers_percent: u8,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_iterations: 90,
            max_parallel_calls: 8,
            max_tool_result_bytes: 40_000,
            max_argument_bytes: 16_384,
            max_json_depth: 20,
            max_text_bytes: 8_192,
            max_envelope_bytes: 40_000,
            max_head: 3,
            max_summary_bytes: 8_192,
            content_classes: ContentClass::EVERY.to_vec(),
            images_percent: 8,
            max_images: 8,
            max_image_bytes: 5_242_880,
            screenshot_run_percent: 35,
            remote_image_percent: 10,
            pinned_percent: 20,
            pending_percent: 15,
            reused_ids_percent: 25,
            extra_fields_percent: 20,
            boundary_percent: 25,
            real_config_percent: 25,
            tiny_config_percent: 15,
            openai_percent: 25,
            anthropic_percent: 10,
            allow_ill_formed: false,
            ill_formed_percent: 50,
            exotic_numbers_percent: 10,
            max_aimed_body_bytes: 64 << 20,
        }
    }
}

impl GenConfig {
    /// Read a `GenConfig` from JSON: every field optional, unknown fields
    /// and values out of their documented range are errors.
    pub fn from_json(bytes: &[u8]) -> Result<GenConfig, InputError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(InputError::new(
                InputErrorKind::Empty,
                "gen-config: empty file: expected a JSON object of GenConfig fields",
            ));
        }
        // Not straight into the struct: a derived struct also reads from an
        // array, by position, and `[1,2]` would be read as two fields.
        let value = crate::model::parse_json_expecting(bytes, "a JSON object of GenConfig fields")
            .map_err(|mut e| {
                // A gen-config has no messages: an index means nothing here.
                e.message = None;
                e.problem = format!("gen-config: {}", e.problem);
                e
            })?;
        if !value.is_object() {
            return Err(InputError::new(
                InputErrorKind::Config,
                format!(
                    "gen-config: {}, expected a JSON object of GenConfig fields (`ctxgate gen --print-gen-config` prints one)",
                    crate::error::json_type(&value)
                ),
            ));
        }
        let g: GenConfig = serde_json::from_value(value.clone()).map_err(|e| {
            InputError::new(
                InputErrorKind::Config,
                format!("gen-config: {}", field_problem(&value, e)),
            )
        })?;
        g.validate()?;
        // Images asked for in so many words, and turned off by the class
        // list: a run with none, where the file says some.
        let says_images = value
            .get("imagesPercent")
            .is_some_and(|p| p.as_u64() != Some(0));
        if says_images && value.get("contentClasses").is_some() && !g.images_on() {
            return Err(InputError::new(
                InputErrorKind::Config,
                "gen-config: `imagesPercent` asks for image cases, but `contentClasses` leaves out `images`, so none would be made: add \"images\" to `contentClasses`, or drop `imagesPercent`",
            ));
        }
        Ok(g)
    }

    /// A numeric field's documented range, `None` for another field.
    pub fn range_of(field: &str) -> Option<(u64, u64)> {
        RANGES
            .iter()
            .find(|(name, _, _)| *name == field)
            .map(|&(_, lo, hi)| (lo, hi))
            .or_else(|| PERCENTS.contains(&field).then_some((0, 100)))
    }

    /// The defaults, as the JSON [`GenConfig::from_json`] reads.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a GenConfig serialises")
    }

    /// Check each knob against its documented range.
    pub fn validate(&self) -> Result<(), InputError> {
        let bad = |p: String| {
            Err(InputError::new(
                InputErrorKind::Config,
                format!("gen-config: {p}"),
            ))
        };
        let sizes: [(&str, usize); 11] = [
            ("maxImages", self.max_images),
            ("maxImageBytes", self.max_image_bytes),
            ("maxIterations", self.max_iterations),
            ("maxParallelCalls", self.max_parallel_calls),
            ("maxToolResultBytes", self.max_tool_result_bytes),
            ("maxArgumentBytes", self.max_argument_bytes),
            ("maxJsonDepth", self.max_json_depth),
            ("maxTextBytes", self.max_text_bytes),
            ("maxEnvelopeBytes", self.max_envelope_bytes),
            ("maxHead", self.max_head),
            ("maxSummaryBytes", self.max_summary_bytes),
        ];
        for (name, v) in sizes {
            let (lo, hi) = GenConfig::range_of(name).expect("a size has a range");
            if !(lo..=hi).contains(&(v as u64)) {
                return bad(format!("`{name}` must be from {lo} to {hi}, found {v}"));
            }
        }
        let percents = [
            ("pinnedPercent", self.pinned_percent),
            ("pendingPercent", self.pending_percent),
            ("reusedIdsPercent", self.reused_ids_percent),
            ("extraFieldsPercent", self.extra_fields_percent),
            ("boundaryPercent", self.boundary_percent),
            ("realConfigPercent", self.real_config_percent),
            ("tinyConfigPercent", self.tiny_config_percent),
            ("openaiPercent", self.openai_percent),
            ("anthropicPercent", self.anthropic_percent),
            ("illFormedPercent", self.ill_formed_percent),
            ("exoticNumbersPercent", self.exotic_numbers_percent),
            ("imagesPercent", self.images_percent),
            ("screenshotRunPercent", self.screenshot_run_percent),
            ("remoteImagePercent", self.remote_image_percent),
        ];
        for (name, v) in percents {
            if v > 100 {
                return bad(format!(
                    "`{name}` is a percent, a whole number from 0 to 100, found {v}"
                ));
            }
        }
        if self.real_config_percent as u32 + self.tiny_config_percent as u32 > 100 {
            return bad("`realConfigPercent` + `tinyConfigPercent` must be at most 100".into());
        }
        if self.openai_percent as u32 + self.anthropic_percent as u32 > 100 {
            return bad("`openaiPercent` + `anthropicPercent` must be at most 100".into());
        }
        if self.content_classes.is_empty() {
            return bad("`contentClasses` must name at least one class".into());
        }
        let (lo, hi) = GenConfig::range_of("maxAimedBodyBytes").expect("a size has a range");
        if !(lo..=hi).contains(&self.max_aimed_body_bytes) {
            return bad(format!(
                "`maxAimedBodyBytes` must be from 1024 to 1073741824, found {}",
                self.max_aimed_body_bytes
            ));
        }
        Ok(())
    }

    /// Whether cases may carry images: `images` among the content classes
    /// and a non-zero share.
    pub fn images_on(&self) -> bool {
        self.images_percent > 0 && self.content_classes.contains(&ContentClass::Images)
    }

    /// These settings without images (for a subject that takes text only).
    pub fn without_images(&self) -> GenConfig {
        GenConfig {
            images_percent: 0,
            ..self.clone()
        }
    }

    /// These settings with cases drawn in `formats` only (a subject's hello
    /// `wireFormats`, `check --wire-format`): the shares of the formats
    /// left out go to those kept, in proportion (an even split when the
    /// kept ones have no share). An empty set leaves the shares as they are.
    pub fn in_formats(&self, formats: WireFormats) -> GenConfig {
        if formats.is_empty() {
            return self.clone();
        }
        let openai = self.openai_percent as u32;
        let anthropic = self.anthropic_percent as u32;
        let shares = [100u32.saturating_sub(openai + anthropic), openai, anthropic];
        let kept: Vec<u32> = WireFormat::ALL
            .iter()
            .zip(shares)
            .map(|(f, share)| if formats.contains(*f) { share } else { 0 })
            .collect();
        let total: u32 = kept.iter().sum();
        let share = |i: usize| -> u8 {
            let s = match total {
                0 => {
                    100 * formats.contains(WireFormat::ALL[i]) as u32
                        / formats.iter().count() as u32
                }
                t => 100 * kept[i] / t,
            };
            s as u8
        };
        // The engine takes what the other two leave (the generator's draw).
        GenConfig {
            openai_percent: share(1),
            anthropic_percent: if formats.contains(WireFormat::Engine) {
                share(2)
            } else {
                100 - share(1)
            },
            ..self.clone()
        }
    }

    /// A config that makes only well-formed histories of at most
    /// `iterations` iterations, otherwise the defaults.
    pub fn with_max_iterations(iterations: usize) -> Self {
        GenConfig {
            max_iterations: iterations,
            ..GenConfig::default()
        }
    }
}

/// Random maxima inside each knob's documented range. Never opts into
/// ill-formed histories: that stays an explicit choice.
impl<'a> Arbitrary<'a> for GenConfig {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let percent = |u: &mut Unstructured<'a>| u.int_in_range(0..=100u8);
        let mut classes: Vec<ContentClass> = ContentClass::ALL
            .into_iter()
            .filter(|_| u.arbitrary::<bool>().unwrap_or(true))
            .collect();
        if classes.is_empty() {
            classes = ContentClass::ALL.to_vec();
        }
        let (real, tiny) = (percent(u)?, percent(u)?);
        let (openai, anthropic) = (percent(u)?, percent(u)?);
        let g = GenConfig {
            max_iterations: u.int_in_range(0..=200)?,
            max_parallel_calls: u.int_in_range(0..=16)?,
            max_tool_result_bytes: u.int_in_range(0..=262_144)?,
            max_argument_bytes: u.int_in_range(2..=65_536)?,
            max_json_depth: u.int_in_range(1..=40)?,
            max_text_bytes: u.int_in_range(0..=65_536)?,
            max_envelope_bytes: u.int_in_range(2..=131_072)?,
            max_head: u.int_in_range(0..=3)?,
            max_summary_bytes: u.int_in_range(0..=65_536)?,
            content_classes: classes,
            pinned_percent: percent(u)?,
            pending_percent: percent(u)?,
            reused_ids_percent: percent(u)?,
            extra_fields_percent: percent(u)?,
            boundary_percent: percent(u)?,
            real_config_percent: real,
            tiny_config_percent: tiny.min(100 - real),
            openai_percent: openai,
            anthropic_percent: anthropic.min(100 - openai),
            allow_ill_formed: false,
            ill_formed_percent: percent(u)?,
            exotic_numbers_percent: percent(u)?,
            max_aimed_body_bytes: u.int_in_range(1024..=1 << 30)?,
            ..GenConfig::default()
        };
        // Images last, so that the draws above are what they were before
        // images existed; their payloads small, so that a fuzzer's case
        // stays fast.
        let mut g = g;
        if u.arbitrary::<bool>().unwrap_or(false) {
            g.content_classes.push(ContentClass::Images);
        }
        g.images_percent = percent(u)?;
        g.max_images = u.int_in_range(1..=120)?;
        g.max_image_bytes = u.int_in_range(1_024..=262_144)?;
        g.screenshot_run_percent = percent(u)?;
        g.remote_image_percent = percent(u)?;
        Ok(g)
    }
}
