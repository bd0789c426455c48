//! The contract's shared definitions: one home for each concept that the
//! reference, the oracles, the generator and the CLI all use, so that they
//! cannot drift apart.
//!
//! - **Compaction due** (SPEC §4 step 1): the estimate over the trigger or
//!   the body over the ceiling — [`due`], [`compaction_due`].
//! - **The trigger a conforming compactor may compute** ([`TriggerRange`]):
//!   SPEC §2's `round` takes halves away from zero; Python's `round()`
//!   takes them to even. The two differ only when `threshold ×
//!   effectiveWindow` is exactly `n + ½`, and there ctxgate accepts either
//!   `n` or `n + 1`.
//! - **The head** (SPEC §4 step 2): the leading run of `system` messages,
//!   which a ToolLoop compactor reads as stopping before the summary of an
//!   earlier turn ([`Head`]). Both readings are accepted: an oracle never
//!   fails a subject for following one of them.
//! - **The minimal output** (SPEC §4 step 6, §5 `body-under-ceiling` and
//!   `progress`): head + pinned iterations + the last iteration, no summary
//!   — [`minimal_ranges`], [`minimal_output`].
//! - **The estimate floor** (SPEC §5 `estimate-covers-tool-calls`): tokens
//!   of the serialised toolCalls, with every number in the shortest
//!   spelling a mainstream JSON library writes it in ([`tool_calls_floor`]);
//!   and for `estimate-covers-images`, the images' tokens by their pixels
//!   in the config's wire format ([`image_floor`]).
//! - **Elision** (SPEC §4 step 4): an output message that is an input
//!   message with some image parts each replaced by one short text part
//!   ([`is_elision_of`]); where images may be elided ([`elidable`]).
//!
//! What it does not do: compact (`reference`), judge (`oracle`) or measure
//! bodies (`body`); it only says what the words of the contract mean.

use std::ops::{Range, RangeInclusive};

use crate::body::{self, body_bytes};
use crate::config::Config;
use crate::estimate::{tokens_for_bytes, Adr0098, Estimator};
use crate::model::{head_len, iterations, Message, Role};

/// Marks the content of a summary the reference wrote: a `system` message
/// whose content starts with it is a summary of an earlier compaction, not
/// part of the head (docs/contract-notes.md, note 1).
pub const SUMMARY_PREFIX: &str = "[ctxgate summary]";

/// A summary the reference wrote on an earlier turn.
pub fn is_summary(m: &Message) -> bool {
    m.role == Role::System && m.content.text().starts_with(SUMMARY_PREFIX)
}

/// Which of its two budgets a history is over (SPEC §4 step 1): the
/// estimate over the trigger, the body over the ceiling. The coverage
/// table's pressure row, the gate's case classes and `estimate`'s "would
/// compact" line are this. Ordered as [`Pressure::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pressure {
    pub over_ceiling: bool,
    pub over_trigger: bool,
}

impl Pressure {
    /// Under both, over the trigger only, over the ceiling only, over both.
    pub const ALL: [Pressure; 4] = [
        Pressure::new(false, false),
        Pressure::new(true, false),
        Pressure::new(false, true),
        Pressure::new(true, true),
    ];

    /// Their names, as the coverage table and the gate's behaviour table
    /// label them.
    pub const NAMES: [&'static str; 4] = [
        "under trigger and ceiling",
        "over trigger only",
        "over ceiling only",
        "over both",
    ];

    const fn new(over_trigger: bool, over_ceiling: bool) -> Pressure {
        Pressure {
            over_ceiling,
            over_trigger,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self.index()]
    }

    pub fn of(config: &Config, estimate: u64, body: u64) -> Pressure {
        Pressure {
            over_trigger: estimate > config.trigger(),
            over_ceiling: body > config.transport_max_body_bytes,
        }
    }

    /// Compaction is due: over either budget.
    pub fn due(self) -> bool {
        self.over_trigger || self.over_ceiling
    }

    /// 0 under both, 1 over the trigger only, 2 over the ceiling only, 3
    /// over both.
    pub fn index(self) -> usize {
        self.over_trigger as usize + 2 * self.over_ceiling as usize
    }
}

/// Compaction is due: the estimate is over the trigger or the body over
/// the ceiling (SPEC §4 step 1). Every caller brings its own figures: the
/// reference its estimator's, the oracles the harness's yardsticks.
pub fn due(config: &Config, estimate: u64, body: u64) -> bool {
    Pressure::of(config, estimate, body).due()
}

/// [`due`], measuring the body only when the estimate leaves it open.
pub fn due_with(config: &Config, estimate: u64, body: impl FnOnce() -> u64) -> bool {
    estimate > config.trigger() || body() > config.transport_max_body_bytes
}

/// The harness's estimate of a history: the `adr-0098` estimator (SPEC §3).
pub fn judge_estimate(config: &Config, msgs: &[Message]) -> u64 {
    Adr0098.tokens(&mut msgs.iter(), config)
}

/// [`due`] with the harness's yardsticks: the adr-0098 estimate and the
/// exact body.
pub fn compaction_due(config: &Config, msgs: &[Message]) -> bool {
    due(
        config,
        judge_estimate(config, msgs),
        body_bytes(config, msgs),
    )
}

/// The triggers a conforming compactor may compute for a config: SPEC's
/// `round(threshold × effectiveWindow)`, half away from zero, and, at an
/// exact half, the neighbour that rounding half to even gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerRange {
    pub low: u64,
    pub high: u64,
}

impl TriggerRange {
    pub fn of(config: &Config) -> TriggerRange {
        let x = config.threshold * config.effective_window() as f64;
        let spec = config.trigger();
        if x.fract() == 0.5 {
            TriggerRange {
                low: x.floor() as u64,
                high: x.ceil() as u64,
            }
        } else {
            TriggerRange {
                low: spec,
                high: spec,
            }
        }
    }

    /// The point a subject that declares `compactAt` (hello, SPEC §6;
    /// docs/contract-notes.md note 31) compacts at: `compact_at × trigger`,
    /// rounded down at the low end and up at the high end, so that every
    /// rounding a subject may apply to its own point is inside. A
    /// `compact_at` of 1 is the trigger itself.
    pub fn scaled(self, compact_at: f64) -> TriggerRange {
        if compact_at >= 1.0 {
            return self;
        }
        TriggerRange {
            low: (compact_at * self.low as f64).floor() as u64,
            high: (compact_at * self.high as f64).ceil() as u64,
        }
    }

    pub fn range(self) -> RangeInclusive<u64> {
        self.low..=self.high
    }

    /// Nothing is due under any trigger a conforming compactor may use.
    pub fn nothing_due(self, config: &Config, estimate: u64, body: u64) -> bool {
        estimate <= self.low && body <= config.transport_max_body_bytes
    }

    /// Due under some trigger a conforming compactor may use.
    pub fn maybe_due(self, config: &Config, estimate: u64, body: u64) -> bool {
        !self.nothing_due(config, estimate, body)
    }
}

/// The head of a history, in SPEC §4's two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The leading run of `system` messages (SPEC §4 step 2, literally).
    pub literal: usize,
    /// The same run, stopped before the first summary of an earlier turn
    /// ([`is_summary`]): what the reference keeps, so that the summary it
    /// carried into the next turn of a ToolLoop is folded into the next one
    /// instead of piling up (docs/contract-notes.md, note 1). Equal to
    /// `literal` when the head holds no such summary.
    pub kept: usize,
}

impl Head {
    pub fn of(msgs: &[Message]) -> Head {
        let literal = head_len(msgs);
        let kept = msgs[..literal]
            .iter()
            .position(is_summary)
            .unwrap_or(literal);
        Head { literal, kept }
    }

    /// The two readings, each once: `[kept]` or `[kept, literal]`.
    pub fn readings(self) -> impl Iterator<Item = usize> {
        std::iter::once(self.kept).chain((self.literal != self.kept).then_some(self.literal))
    }
}

/// The index ranges of the minimal output under a head of `head`
/// messages: the head, each pinned iteration after it, and the last
/// iteration (SPEC §4 step 6), in order.
pub fn minimal_ranges(msgs: &[Message], head: usize) -> Vec<Range<usize>> {
    let iters: Vec<Range<usize>> = iterations(&msgs[head..])
        .into_iter()
        .map(|r| r.start + head..r.end + head)
        .collect();
    let mut out = Vec::with_capacity(iters.len().min(8) + 2);
    out.push(0..head);
    if let Some((last, rest)) = iters.split_last() {
        out.extend(
            rest.iter()
                .filter(|r| msgs[(*r).clone()].iter().any(Message::is_pinned))
                .cloned(),
        );
        out.push(last.clone());
    }
    out
}

/// The minimal output under a head of `head` messages.
pub fn minimal_output(msgs: &[Message], head: usize) -> Vec<Message> {
    minimal_ranges(msgs, head)
        .into_iter()
        .flat_map(|r| msgs[r].iter().cloned())
        .collect()
}

/// The largest minimal output a conforming compactor may compute (the
/// literal head's, which holds the other): `cannot_fit` is justified when
/// this is over the ceiling.
pub fn minimal_body(config: &Config, msgs: &[Message]) -> u64 {
    body_bytes(config, &minimal_output(msgs, Head::of(msgs).literal))
}

/// `cannot_fit` is a justified answer for `msgs`: even the minimal output
/// is over the ceiling.
pub fn cannot_fit_justified(config: &Config, msgs: &[Message]) -> bool {
    minimal_body(config, msgs) > config.transport_max_body_bytes
}

/// The estimate floor of one message: tokens of its serialised
/// `toolCalls` (0 without calls), every number counted in the shortest
/// spelling a mainstream JSON library gives it — exactly its own spelling
/// for the portable numbers the harness generates, so the floor is the
/// ADR's; for a fixture's `1.50` the floor counts `1.5`, what Python and
/// JavaScript write, so that no subject falls under it for its library's
/// number formatting alone.
pub fn tool_calls_floor(m: &Message, bytes_per_token: u64) -> u64 {
    match m.tool_calls.as_deref() {
        Some(calls) if !calls.is_empty() => {
            tokens_for_bytes(body::tool_calls_floor_size(calls), bytes_per_token)
        }
        _ => 0,
    }
}

/// The `estimate-covers-images` floor of one message: Σ SPEC §3 image
/// tokens over its images, in `format` (0 without images).
pub fn image_floor(m: &Message, format: crate::model::WireFormat) -> u64 {
    crate::estimate::images::content_image_tokens(&m.content, format)
}

/// Whether `out` is `orig` with some image parts (at least one) each
/// replaced by one text part of at most 200 bytes, and nothing else
/// changed (SPEC §4 step 4, §5 `single-bounded-summary`).
pub fn is_elision_of(out: &Message, orig: &Message) -> bool {
    let (a, b) = (out.content.parts(), orig.content.parts());
    if a.len() != b.len() || b.is_empty() || !orig.has_images() {
        return false;
    }
    let mut elided = 0;
    for (p, q) in a.iter().zip(b) {
        if p == q {
            continue;
        }
        if !p.is_elision_of(q) {
            return false;
        }
        elided += 1;
    }
    elided > 0 && same_but_content(out, orig)
}

/// Every field equal but `content` (wire hints aside, as in `Message`'s
/// equality).
pub(crate) fn same_but_content(a: &Message, b: &Message) -> bool {
    a.role == b.role
        && a.tool_call_id == b.tool_call_id
        && a.pinned == b.pinned
        && a.tool_calls == b.tool_calls
        && crate::model::value::same_members(&a.extra, &b.extra)
}

/// The input messages whose images a compactor may elide (SPEC §4 step
/// 4): outside the head, the last iteration and pinned iterations, under a
/// head of `head` messages. `true` at index `i` when message `i` may be
/// elided.
pub fn elidable(msgs: &[Message], head: usize) -> Vec<bool> {
    let mut out = vec![false; msgs.len()];
    let iters = iterations(&msgs[head..]);
    let Some((_, rest)) = iters.split_last() else {
        return out;
    };
    for r in rest {
        let r = r.start + head..r.end + head;
        if !msgs[r.clone()].iter().any(Message::is_pinned) {
            for i in r {
                out[i] = msgs[i].has_images();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;
    use serde_json::json;

    /// The bins are listed, named and sorted in one order: the coverage
    /// row and the gate's behaviour table (a BTreeMap) both rely on it.
    #[test]
    fn pressure_bins_index_name_and_sort_in_one_order() {
        for (i, p) in Pressure::ALL.into_iter().enumerate() {
            assert_eq!(p.index(), i);
            assert_eq!(p.name(), Pressure::NAMES[i]);
        }
        assert!(Pressure::ALL.windows(2).all(|w| w[0] < w[1]));
        let config = Config::default();
        let over_trigger = Pressure::of(&config, config.trigger() + 1, 0);
        assert_eq!(over_trigger.name(), "over trigger only");
    }

    #[test]
    fn trigger_ties_admit_both_roundings() {
        let c = Config {
            context_window: 25,
            threshold: 0.5,
            ..Config::default()
        };
        assert_eq!(c.trigger(), 13);
        assert_eq!(TriggerRange::of(&c), TriggerRange { low: 12, high: 13 });
        assert!(TriggerRange::of(&c).nothing_due(&c, 12, 0));
        assert!(TriggerRange::of(&c).maybe_due(&c, 13, 0));
        let d = Config::default();
        assert_eq!(TriggerRange::of(&d).range(), 89_600..=89_600);
    }

    #[test]
    fn a_declared_point_scales_the_trigger_outwards() {
        let t = TriggerRange { low: 12, high: 13 };
        assert_eq!(t.scaled(1.0), t);
        assert_eq!(t.scaled(0.9), TriggerRange { low: 10, high: 12 });
        let d = TriggerRange::of(&Config::default());
        assert_eq!(d.scaled(0.9).range(), 80_640..=80_640);
    }

    #[test]
    fn the_head_stops_before_an_earlier_summary_in_one_reading() {
        let msgs = [
            Message::system("You are the QA gate."),
            Message::system(format!("{SUMMARY_PREFIX} 4 earlier messages")),
            Message::user("go"),
        ];
        let head = Head::of(&msgs);
        assert_eq!(
            head,
            Head {
                literal: 2,
                kept: 1
            }
        );
        assert_eq!(head.readings().collect::<Vec<_>>(), [1, 2]);
        let plain = Head::of(&msgs[..1]);
        assert_eq!(plain.readings().collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn minimal_output_is_head_pinned_and_last() {
        let call = |id: &str| ToolCall::new(id, "read_file", json!({}));
        let msgs = vec![
            Message::system("s"),
            Message::user("old").pinned(),
            Message::user("older"),
            Message::assistant_calls("", vec![call("a")]),
            Message::tool("a", "1"),
        ];
        assert_eq!(minimal_ranges(&msgs, 1), [0..1, 1..2, 3..5]);
        let out = minimal_output(&msgs, 1);
        assert_eq!(out.len(), 4);
        assert_eq!(out[1], msgs[1]);
    }

    #[test]
    fn the_floor_counts_the_shortest_spelling() {
        let spelled: serde_json::Value = serde_json::from_str(r#"{"x": 1.50}"#).unwrap();
        let m = Message::assistant_calls("", vec![ToolCall::new("c", "f", spelled)]);
        let exact = crate::estimate::tool_call_tokens(&m, 1);
        assert_eq!(tool_calls_floor(&m, 1), exact - 1);
        let portable =
            Message::assistant_calls("", vec![ToolCall::new("c", "f", json!({"x": 1.5}))]);
        assert_eq!(tool_calls_floor(&portable, 1), exact - 1);
        assert_eq!(crate::estimate::tool_call_tokens(&portable, 1), exact - 1);
    }
}
