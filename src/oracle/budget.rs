//! The size invariants: `body-under-ceiling`, `no-premature-compaction`,
//! `progress`, `estimate-covers-tool-calls`, `estimate-covers-images`,
//! `estimate-monotone`. The ADR's two ends — the estimator that counted
//! only `content`, the window that ignored the transport — are caught
//! here, and their sharpest case: images, ~1,600 tokens and ~1 MB of body.

use super::{body_measure, Facts, Invariant, Verdict, Violation, Yardstick};
use crate::body::body_bytes;
use crate::config::Config;
use crate::contract::{
    cannot_fit_justified, image_floor, judge_estimate, minimal_body, tool_calls_floor,
};
use crate::estimate::images::image_tokens;
use crate::model::{check_well_formed, Message};
use crate::subject::{CompactAnswer, EstimateAnswer};

/// The body is never over the ceiling; `cannot_fit` only when the minimal
/// output is itself over it; `invalid_input` only for input that is not
/// well formed.
pub fn body_under_ceiling(
    config: &Config,
    input: &[Message],
    answer: &CompactAnswer,
) -> Vec<Violation> {
    let inv = Invariant::BodyUnderCeiling;
    let ceiling = config.transport_max_body_bytes;
    match answer {
        CompactAnswer::Messages(o) => {
            let body = body_bytes(config, o);
            if body > ceiling {
                let minimal = minimal_body(config, input);
                let fix = if minimal > ceiling {
                    format!("a correct compactor answers cannot_fit: the smallest output (head + pinned + last iteration) is {minimal} bytes")
                } else {
                    format!("a correct compactor keeps fewer iterations, shortens or drops its summary and elides old images until the body fits: the smallest output (head + pinned + last iteration) is {minimal} bytes")
                };
                vec![Violation::new(
                    inv,
                    format!(
                        "the compacted body is {body} {}, {} over the ceiling {ceiling} (the input's was {} bytes); {fix}",
                        body_measure(config.wire_format),
                        body - ceiling,
                        body_bytes(config, input)
                    ),
                )
                .number("body", body)
                .number("ceiling", ceiling)
                .number("minimal", minimal)]
            } else {
                vec![]
            }
        }
        CompactAnswer::CannotFit { message } => {
            if cannot_fit_justified(config, input) {
                vec![]
            } else {
                let minimal = minimal_body(config, input);
                vec![Violation::new(
                    inv,
                    format!(
                        "answered cannot_fit ({message}), but head + pinned + last iteration is {minimal} {}, under the ceiling {ceiling}; a correct compactor returns a history that fits",
                        body_measure(config.wire_format)
                    ),
                )
                .number("minimal", minimal)
                .number("ceiling", ceiling)]
            }
        }
        CompactAnswer::InvalidInput { message } => match check_well_formed(input) {
            Err(_) => vec![],
            Ok(()) => vec![Violation::new(
                inv,
                format!("answered invalid_input ({message}) to a well-formed history: no body was produced"),
            )],
        },
    }
}

/// Under the trigger and under the ceiling, the output is the input. At an
/// exact half, where the trigger a conforming compactor computes depends on
/// its rounding (`contract::TriggerRange`), nothing is due only under the
/// lower one. "Under the trigger" is by the subject's own estimate when it
/// gives one, against the point it declared (`Facts::timed_by`).
pub fn no_premature_compaction(facts: &Facts<'_>, answer: &CompactAnswer) -> Verdict {
    let inv = Invariant::NoPrematureCompaction;
    let (estimate, body) = (facts.estimate, facts.body);
    let trigger = facts.point.low;
    let ceiling = facts.config.transport_max_body_bytes;
    if facts.maybe_due() {
        return Verdict::NotApplicable("compaction was due");
    }
    let changed_at = match answer {
        CompactAnswer::Messages(o) => match super::repeat::first_difference(facts.input, o) {
            None => return Verdict::Pass,
            Some(i) => format!(
                "changed the history at message {i} ({} → {} messages)",
                facts.input.len(),
                o.len()
            ),
        },
        other => format!("answered {}", other.describe()),
    };
    Verdict::Fail(vec![Violation::new(
        inv,
        format!(
            "nothing was due ({} {estimate} ≤ {} {trigger}, body {body} {} ≤ ceiling {ceiling}), yet the subject {changed_at}; a correct compactor returns the history unchanged",
            facts.yardstick.words(),
            point_words(facts),
            body_measure(facts.config.wire_format)
        ),
    )
    .number("estimate", estimate)
    .numbers_for_point(facts, trigger)
    .number("body", body)
    .number("ceiling", ceiling)])
}

/// "trigger" or, for a subject that declared `compactAt`, "compactAt 0.9 ×
/// trigger 100 =", to precede the point.
fn point_words(facts: &Facts<'_>) -> String {
    if facts.compact_at >= 1.0 {
        "trigger".into()
    } else {
        format!(
            "compactAt {} × trigger {} =",
            facts.compact_at,
            facts.config.trigger()
        )
    }
}

/// The bracket's figures for the point a verdict was judged against, named
/// as `point_words` names them in the prose: `trigger=P` when the point is
/// the trigger; for a subject that declared `compactAt`, `trigger=T,
/// compactAt point=P` — P is `compactAt × T`, not the trigger, and calling
/// it `trigger` sent readers to the wrong number.
trait PointNumbers {
    fn numbers_for_point(self, facts: &Facts<'_>, point: u64) -> Self;
}

impl PointNumbers for Violation {
    fn numbers_for_point(self, facts: &Facts<'_>, point: u64) -> Self {
        if facts.compact_at >= 1.0 {
            self.number("trigger", point)
        } else {
            self.number("trigger", facts.config.trigger())
                .number("compactAt point", point)
        }
    }
}

/// After a compaction (one that was due, by the point the subject declared),
/// the estimate is under the trigger, unless the output is down to head + pinned + summary + last
/// iteration. Returning the input unchanged when compaction was due is a
/// failure of progress too. The output's estimate is the subject's own
/// (`output_estimate`) when the facts are timed by it, else adr-0098's.
///
/// A `cannot_fit` answer to a history that was due is judged here too, on
/// the subject's own terms (docs/contract-notes.md note 42): by `progress`
/// the minimal output (head + pinned + last iteration) is always an
/// answer, so a refusal is right only when that output cannot be sent —
/// its body over the ceiling (SPEC §4 step 6), or its estimate over the
/// effective window, by the subject's own count when it estimates
/// (`minimal_estimate`, its answer for that output), else adr-0098's.
pub fn progress(
    facts: &Facts<'_>,
    answer: &CompactAnswer,
    output_estimate: Option<u64>,
    minimal_estimate: Option<u64>,
) -> Verdict {
    let inv = Invariant::Progress;
    if !facts.maybe_due() {
        return Verdict::NotApplicable(match answer {
            CompactAnswer::CannotFit { .. } => {
                "the subject answered cannot_fit where nothing was due (no-premature-compaction judges it)"
            }
            _ => "compaction was not due",
        });
    }
    let o = match answer {
        CompactAnswer::Messages(o) => o,
        CompactAnswer::CannotFit { message } => return refusal(facts, message, minimal_estimate),
        CompactAnswer::InvalidInput { .. } => {
            return Verdict::NotApplicable("the subject answered invalid_input")
        }
    };
    let unchanged = o == facts.input;
    let estimate = match (facts.yardstick, output_estimate) {
        _ if unchanged => facts.estimate,
        (Yardstick::Subject, Some(e)) => e,
        _ => judge_estimate(facts.config, o),
    };
    let trigger = facts.trigger.high;
    if estimate <= trigger {
        return Verdict::Pass;
    }
    let Err(why) = minimal_form(facts, o) else {
        return Verdict::Pass;
    };
    let words = facts.yardstick.words();
    let detail = if unchanged {
        format!(
            "returned the history unchanged although it was due: {words} {estimate} > trigger {trigger}; a correct compactor summarises or drops old iterations until the estimate is ≤ {trigger}, or down to head + pinned + summary + last iteration"
        )
    } else {
        format!(
            "after compaction the {words} is {estimate} tokens, over the trigger {trigger}, and the output ({} of {} messages) is not down to head + pinned + summary + last iteration: {why}; a correct compactor keeps fewer recent iterations until the estimate is ≤ {trigger} or only the last one is left",
            o.len(),
            facts.input.len()
        )
    };
    Verdict::Fail(vec![Violation::new(inv, detail)
        .number("estimate", estimate)
        .number("trigger", trigger)
        .number("input estimate", facts.estimate)])
}

/// `trims-when-due` (an extension, docs/contract-notes.md note 41): when
/// the estimate is over the point the subject compacts at — surely, under
/// any rounding a conforming compactor may use (`TriggerRange`) — and the
/// input holds a message outside its minimal output (head, pinned
/// iterations, last iteration, under the literal head, which holds the
/// other reading's), the output leaves out, elides or changes at least one
/// input message: an output that holds every input message verbatim, in
/// order, trimmed nothing. Weaker than `progress` (it asks for no estimate
/// under the trigger), so a message-count trimmer can claim it. Due by the
/// body alone is `body-under-ceiling`'s to judge.
pub fn trims_when_due(facts: &Facts<'_>, answer: &CompactAnswer) -> Verdict {
    let inv = Invariant::TrimsWhenDue;
    let Some(o) = answer.messages() else {
        return Verdict::NotApplicable("the subject answered cannot_fit");
    };
    if !facts.well_formed {
        return Verdict::NotApplicable("the input is not well formed");
    }
    let point = facts.point.high;
    if facts.estimate <= point {
        return Verdict::NotApplicable(if facts.body > facts.config.transport_max_body_bytes {
            "due by the body alone (body-under-ceiling judges it)"
        } else {
            "compaction was not due"
        });
    }
    let input = facts.input;
    let minimal: usize = crate::contract::minimal_ranges(input, facts.head.literal)
        .iter()
        .map(|r| r.len())
        .sum();
    if minimal >= input.len() {
        return Verdict::NotApplicable(
            "the input is its own minimal output (head, pinned iterations, last iteration): nothing to leave out",
        );
    }
    let mut rest = o.iter();
    if !input.iter().all(|m| rest.any(|x| x == m)) {
        return Verdict::Pass;
    }
    let droppable = input.len() - minimal;
    let added = o.len() - input.len();
    let kept = match added {
        0 => "returned the history unchanged".to_string(),
        n => format!("kept every input message verbatim and in order, adding {n}"),
    };
    Verdict::Fail(vec![Violation::new(
        inv,
        format!(
            "compaction was due ({} {} > {} {point}) and {droppable} of the input's {} messages are outside head + pinned + last iteration, yet the subject {kept}; a correct trimmer leaves out (or summarises, or elides) at least the oldest iteration that is not pinned",
            facts.yardstick.words(),
            facts.estimate,
            point_words(facts),
            input.len()
        ),
    )
    .number("estimate", facts.estimate)
    .numbers_for_point(facts, point)
    .number("droppable messages", droppable as u64)])
}

/// `progress` on a `cannot_fit` answer to a history that was due: right
/// when the minimal output (under the literal head, the larger) is over the
/// ceiling, or over the effective window by the subject's own count
/// (`own`, when it estimates and gave one; adr-0098's otherwise); wrong
/// when it fits both, since `progress` accepts that output as an answer.
fn refusal(facts: &Facts<'_>, message: &str, own: Option<u64>) -> Verdict {
    let config = facts.config;
    if !facts.well_formed {
        return Verdict::NotApplicable("the input is not well formed");
    }
    if cannot_fit_justified(config, facts.input) {
        return Verdict::Pass;
    }
    let minimal = crate::contract::minimal_output(facts.input, facts.head.literal);
    let (estimate, words) = match (facts.yardstick, own) {
        (Yardstick::Subject, Some(e)) => (e, Yardstick::Subject.words()),
        _ => (judge_estimate(config, &minimal), Yardstick::Adr0098.words()),
    };
    let window = config.effective_window();
    if estimate > window {
        return Verdict::Pass;
    }
    let body = body_bytes(config, &minimal);
    let ceiling = config.transport_max_body_bytes;
    Verdict::Fail(vec![Violation::new(
        Invariant::Progress,
        format!(
            "answered cannot_fit ({message}) to a history that was due, but its minimal output (head + pinned + last iteration, {} of {} messages) is {estimate} tokens by its {words}, within the effective window {window}, and {body} {} ≤ ceiling {ceiling}; a correct compactor returns that output (or a larger one that fits) instead of refusing",
            minimal.len(),
            facts.input.len(),
            body_measure(config.wire_format)
        ),
    )
    .number("minimal estimate", estimate)
    .number("effective window", window)
    .number("minimal body", body)
    .number("ceiling", ceiling)])
}

/// `Ok` when `o` is head + the messages of pinned iterations + at most one
/// new message + the last iteration of the input, under either reading of
/// the head (`contract::Head`); otherwise what is missing or extra, under
/// the first reading.
pub fn minimal_form(facts: &Facts<'_>, o: &[Message]) -> Result<(), String> {
    let mut first = None;
    for head in facts.head.readings() {
        match minimal_form_under(facts.input, head, o) {
            Ok(()) => return Ok(()),
            Err(why) => {
                first.get_or_insert(why);
            }
        }
    }
    Err(first.unwrap_or_default())
}

fn minimal_form_under(input: &[Message], head: usize, o: &[Message]) -> Result<(), String> {
    if let Some(k) = (0..head).find(|&k| o.get(k) != Some(&input[k])) {
        return Err(format!(
            "output message {k} is not the input's head message {k}, which it must keep"
        ));
    }
    // The minimal output's parts (contract::minimal_ranges): the head, the
    // pinned iterations, the last iteration.
    let ranges = crate::contract::minimal_ranges(input, head);
    let [_, pinned @ .., last] = &ranges[..] else {
        return if o.len() == head {
            Ok(())
        } else {
            Err(format!(
                "the input is all head ({head} messages), yet the output has {}",
                o.len()
            ))
        };
    };
    let tail = last.len();
    if o.len() < head + tail || o[o.len() - tail..] != input[last.clone()] {
        return Err(format!(
            "the output does not end with the input's last iteration (input messages {}..{})",
            last.start, last.end
        ));
    }
    let pinned: Vec<usize> = pinned.iter().cloned().flatten().collect();
    let middle = &o[head..o.len() - tail];
    let mut next_pinned = 0;
    // Output messages that are not the pinned ones, in order: one of them
    // may be the summary, whether or not it equals an input message by value.
    let mut others = Vec::new();
    for (k, m) in middle.iter().enumerate() {
        match pinned[next_pinned..].iter().position(|&i| input[i] == *m) {
            Some(p) => next_pinned += p + 1,
            None => others.push(head + k),
        }
    }
    if others.len() > 1 {
        let kept = others
            .iter()
            .find_map(|&at| input.iter().position(|x| *x == o[at]).map(|i| (at, i)));
        return Err(match kept {
            Some((at, i)) => format!(
                "it keeps input message {i} (as output message {at}), which is neither head, pinned nor part of the last iteration, besides {} other message(s)",
                others.len() - 1
            ),
            None => format!(
                "it holds {} messages not from the input (output messages {others:?}), where one summary is allowed",
                others.len()
            ),
        });
    }
    if next_pinned < pinned.len() {
        let missing: Vec<usize> = pinned[next_pinned..].to_vec();
        return Err(format!(
            "it lacks the pinned input message(s) {missing:?}, which the minimal output keeps"
        ));
    }
    Ok(())
}

/// The estimate is never below Σ tokens(JSON of toolCalls), in total and,
/// where the subject reports per-message figures, per message. The floor
/// counts every number in the shortest spelling a mainstream JSON library
/// writes it in (`contract::tool_calls_floor`): the portable numbers the
/// harness generates exactly as written.
pub fn estimate_covers_tool_calls(
    config: &Config,
    input: &[Message],
    est: &EstimateAnswer,
) -> Vec<Violation> {
    let inv = Invariant::EstimateCoversToolCalls;
    let bpt = config.bytes_per_token;
    let floors: Vec<u64> = input.iter().map(|m| tool_calls_floor(m, bpt)).collect();
    let per = est.per_message.as_deref();
    let below = below_floors(est.tokens, per, &floors).map(|(at, t, need)| {
        let v = match at {
            None => Violation::new(
                inv,
                format!("the estimate is {t} tokens, below the {need} tokens of the serialised toolCalls alone"),
            ),
            Some(i) => {
                let v = Violation::new(
                    inv,
                    format!("message {i} is estimated at {t} tokens, below the {need} tokens of its toolCalls"),
                );
                input[i].calls().iter().fold(v.message(i), |v, c| v.id(c.id.clone()))
            }
        };
        v.number("estimate", t).number("toolCalls tokens", need)
    });
    let mut out: Vec<Violation> = below.collect();
    if let Some(per) = per.filter(|p| p.len() != input.len()) {
        let (n, m) = (per.len(), input.len());
        out.push(Violation::new(
            inv,
            format!("perMessage has {n} figures for {m} messages"),
        ));
    }
    out
}

/// The estimate is never below Σ imageTokens over the input's images
/// (SPEC §3, by their pixels, in the config's wire format), in total and,
/// where the subject reports per-message figures, per message. Each
/// violation names the images: message, part, media type, pixels, bytes.
pub fn estimate_covers_images(
    config: &Config,
    input: &[Message],
    est: &EstimateAnswer,
) -> Vec<Violation> {
    let inv = Invariant::EstimateCoversImages;
    let format = config.wire_format;
    let floors: Vec<u64> = input.iter().map(|m| image_floor(m, format)).collect();
    // A perMessage of the wrong length is estimate-covers-tool-calls'
    // finding; said once, there.
    let below = below_floors(est.tokens, est.per_message.as_deref(), &floors);
    below
        .map(|(at, t, need)| {
            let v = match at {
                None => {
                    let count: usize = input.iter().map(|m| m.content.images().count()).sum();
                    let images = describe_images(input, None, format);
                    let v = Violation::new(
                        inv,
                        format!("the estimate is {t} tokens, below the {need} tokens of the history's {count} image(s) alone ({format} rule, by their pixels): {images}"),
                    );
                    let with_images = input.iter().enumerate().filter(|(_, m)| m.has_images());
                    with_images.fold(v, |v, (i, _)| v.message(i))
                }
                Some(i) => {
                    let images = describe_images(input, Some(i), format);
                    Violation::new(
                        inv,
                        format!("message {i} is estimated at {t} tokens, below the {need} tokens of its images: {images}"),
                    )
                    .message(i)
                }
            };
            v.number("estimate", t).number("image tokens", need)
        })
        .collect()
}

/// Where an estimate falls below its floors, as `(None, total, Σ floors)`
/// for the whole history and `(Some(i), figure, floor)` for each message
/// whose perMessage figure is below its own (perMessage is read only when
/// it has a figure a message). The estimate oracles' one comparison:
/// tool calls', images', real tokens'.
pub(crate) fn below_floors<'a>(
    tokens: u64,
    per: Option<&'a [u64]>,
    floors: &'a [u64],
) -> impl Iterator<Item = (Option<usize>, u64, u64)> + 'a {
    let floor: u64 = floors.iter().sum();
    let total = (tokens < floor).then_some((None, tokens, floor));
    let per = per.filter(|p| p.len() == floors.len()).unwrap_or_default();
    let pairs = per.iter().zip(floors).enumerate();
    let each = pairs.filter_map(|(i, (&t, &need))| (t < need).then_some((Some(i), t, need)));
    total.into_iter().chain(each)
}

/// "message 3 part 1 (image/png, 1920×1080, 1398104 bytes: 1534 tokens)"
/// for each image of `input` (or of message `only`), the first eight.
pub(crate) fn describe_images(
    input: &[Message],
    only: Option<usize>,
    format: crate::model::WireFormat,
) -> String {
    let mut all = Vec::new();
    for (i, m) in input.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        for (j, p) in m.content.parts().iter().enumerate() {
            if let Some(img) = p.as_image() {
                all.push(format!(
                    "message {i} part {j} ({}: {} tokens)",
                    img.describe(),
                    image_tokens(img, format)
                ));
            }
        }
    }
    let more = all.len().saturating_sub(8);
    all.truncate(8);
    let mut s = all.join(", ");
    if more > 0 {
        s.push_str(&format!(", and {more} more"));
    }
    s
}

/// Appending a message never lowers the estimate.
pub fn estimate_monotone(before: &EstimateAnswer, after: &EstimateAnswer) -> Vec<Violation> {
    if after.tokens >= before.tokens {
        return vec![];
    }
    vec![Violation::new(
        Invariant::EstimateMonotone,
        format!(
            "appending a message lowered the estimate from {} to {} tokens",
            before.tokens, after.tokens
        ),
    )
    .number("before", before.tokens)
    .number("after", after.tokens)]
}

#[cfg(test)]
mod tests {
    use super::below_floors;

    #[test]
    fn the_total_comes_first_then_each_message_below_its_floor() {
        let floors = [5, 0, 7];
        let all =
            |tokens, per: Option<&[u64]>| below_floors(tokens, per, &floors).collect::<Vec<_>>();
        assert_eq!(all(12, None), vec![]);
        assert_eq!(all(11, None), vec![(None, 11, 12)]);
        // Each message's own floor, whatever the total says.
        let per = [4, 9, 7];
        assert_eq!(all(20, Some(&per)), vec![(Some(0), 4, 5)]);
        assert_eq!(all(3, Some(&per)), vec![(None, 3, 12), (Some(0), 4, 5)]);
        // A perMessage without a figure a message is not read.
        assert_eq!(all(3, Some(&[0, 0])), vec![(None, 3, 12)]);
    }
}
