//! The shape invariants: what of the input the output must keep, and how.
//! `verbatim-suffix`, `order-preserved`, `pinned-kept`,
//! `single-bounded-summary`.
//!
//! "From the input" is equality by JSON value, so a summary may equal an
//! input message (an empty summary at `summaryMaxBytes: 0` is the very
//! value of an empty system prompt). The oracles then look for an
//! alignment: "the output without its summary is a subsequence of the
//! input" holds if *some* choice of at most one output message as the
//! summary makes it hold.
//!
//! **Elision** (SPEC §4 step 4): an output message that is an input
//! message with some image parts each replaced by one text part of at most
//! 200 bytes stands for that input message in `order-preserved`; it is
//! not new in `single-bounded-summary` when the input message may be
//! elided (outside the head, the last iteration and pinned iterations) —
//! and a violation of its own, naming the image, when it may not.
//! `verbatim-suffix` and `pinned-kept` want the images kept: an elided
//! image there is named in the violation.

use super::{Invariant, Violation};
use crate::config::Config;
use crate::contract::{elidable, is_elision_of, same_but_content, Head};
use crate::model::{iterations, Message, Part};

/// An output message stands for input message `x`: it is `x`, or `x`
/// with some images elided.
fn stands_for(out: &Message, x: &Message) -> bool {
    out == x || is_elision_of(out, x)
}

/// The image parts of `orig` that `out` replaced, described: "part 1
/// (image/png, 1920×1080, 1398104 bytes)".
fn elided_parts(out: &Message, orig: &Message) -> String {
    let list: Vec<String> = out
        .content
        .parts()
        .iter()
        .zip(orig.content.parts())
        .enumerate()
        .filter(|(_, (p, q))| p != q)
        .filter_map(|(j, (_, q))| q.as_image().map(|i| format!("part {j} ({})", i.describe())))
        .collect();
    list.join(", ")
}

/// `None` where greedy matching failed.
const FAILED: usize = usize::MAX;

/// Greedy earliest matching of `output` into `input`: `ends[i]` is the
/// input position right after the match of `output[i - 1]` (`ends[0] = 0`),
/// or [`FAILED`] from the first output message that has no match on. Greedy
/// earliest is optimal for "is a prefix of `output` a subsequence".
fn prefix_ends(input: &[Message], output: &[Message]) -> Vec<usize> {
    let mut ends = Vec::with_capacity(output.len() + 1);
    ends.push(0);
    let mut j = 0;
    for m in output {
        if j == FAILED {
            ends.push(FAILED);
            continue;
        }
        j = match input[j..].iter().position(|x| stands_for(m, x)) {
            Some(p) => j + p + 1,
            None => FAILED,
        };
        ends.push(j);
    }
    ends
}

/// Greedy latest matching from the right: `starts[i]` is the input
/// position of the match of `output[i]` when `output[i..]` is matched as
/// late as possible (`starts[len] = input.len()`), or [`FAILED`].
fn suffix_starts(input: &[Message], output: &[Message]) -> Vec<usize> {
    let mut starts = vec![FAILED; output.len() + 1];
    starts[output.len()] = input.len();
    for i in (0..output.len()).rev() {
        let limit = starts[i + 1];
        if limit == FAILED {
            break;
        }
        starts[i] = input[..limit]
            .iter()
            .rposition(|x| stands_for(&output[i], x))
            .unwrap_or(FAILED);
    }
    starts
}

/// How `output` aligns with `input` as a subsequence with at most one
/// message left out (the summary).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Alignment {
    /// The whole output is a subsequence of the input.
    Whole,
    /// Without output message `k`, it is.
    Without(usize),
    /// No choice of one message makes it one: output message `at` is the
    /// first that cannot be matched in order.
    None { at: usize },
}

fn align(input: &[Message], output: &[Message]) -> Alignment {
    let ends = prefix_ends(input, output);
    if ends[output.len()] != FAILED {
        return Alignment::Whole;
    }
    let starts = suffix_starts(input, output);
    // Without output[k]: output[..k] ends at ends[k], output[k+1..] starts at starts[k+1].
    for k in 0..output.len() {
        if summary_like(&output[k])
            && ends[k] != FAILED
            && starts[k + 1] != FAILED
            && ends[k] <= starts[k + 1]
        {
            return Alignment::Without(k);
        }
    }
    let at = ends.iter().position(|&e| e == FAILED).map_or(0, |p| p - 1);
    Alignment::None { at }
}

/// A message that could be a summary: text, neither a tool result nor a
/// message that makes calls (SPEC §4's summary is a `system` message;
/// other compactors write theirs as `user` or `assistant` text).
fn summary_like(m: &Message) -> bool {
    m.role != crate::model::Role::Tool && m.calls().is_empty()
}

/// Output messages that stand for no input message at all (neither equal
/// to one nor an elision of one): new messages.
fn new_messages(input: &[Message], output: &[Message]) -> Vec<usize> {
    (0..output.len())
        .filter(|&i| !input.iter().any(|x| stands_for(&output[i], x)))
        .collect()
}

/// The output ends with a verbatim suffix of the input that starts at an
/// iteration boundary and holds at least the input's last iteration.
pub fn verbatim_suffix(input: &[Message], output: &[Message]) -> Vec<Violation> {
    let Some(last) = iterations(input).pop() else {
        return vec![];
    };
    let need = last.len();
    let common = input
        .iter()
        .rev()
        .zip(output.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    if common >= need {
        return vec![];
    }
    // The first message of the last iteration (from its end) that differs:
    // when it is that message with images elided, name them.
    let elided = input
        .iter()
        .rev()
        .zip(output.iter().rev())
        .enumerate()
        .skip(common)
        .take(1)
        .find(|(_, (a, b))| is_elision_of(b, a))
        .map(|(k, (a, b))| {
            format!(
                "; input message {} of the last iteration had its images elided: {}",
                input.len() - 1 - k,
                elided_parts(b, a)
            )
        })
        .unwrap_or_default();
    let mut v = Violation::new(
        Invariant::VerbatimSuffix,
        format!(
            "the output's last {common} message(s) match the input's, but its last iteration (input messages {}..{}) has {need}{elided}",
            last.start, last.end
        ),
    )
    .message(last.start)
    .number("common suffix", common as u64)
    .number("last iteration", need as u64);
    for c in input[last.start].calls() {
        v = v.id(c.id.clone());
    }
    vec![v]
}

/// The output without its summary message is a subsequence of the input.
/// New messages (equal to no input message) are summaries, judged by
/// `single-bounded-summary`; without any, one output message may still be
/// the summary that happens to equal an input message.
pub fn order_preserved(input: &[Message], output: &[Message]) -> Vec<Violation> {
    let new = new_messages(input, output);
    let (rest, index): (Vec<Message>, Vec<usize>) = (0..output.len())
        .filter(|i| !new.contains(i))
        .map(|i| (output[i].clone(), i))
        .unzip();
    let at = match align(input, &rest) {
        Alignment::Whole => return vec![],
        Alignment::Without(_) if new.is_empty() => return vec![],
        Alignment::Without(_) => prefix_ends(input, &rest)
            .iter()
            .position(|&e| e == FAILED)
            .map_or(0, |p| p - 1),
        Alignment::None { at } => at,
    };
    let i = index[at];
    let pos = input
        .iter()
        .position(|x| stands_for(&output[i], x))
        .unwrap_or(0);
    let before = at
        .checked_sub(1)
        .map(|b| {
            let e = prefix_ends(input, &rest[..at])[at];
            format!(
                ", after output message {} matched input message {}",
                index[b],
                e - 1
            )
        })
        .unwrap_or_default();
    vec![Violation::new(
        Invariant::OrderPreserved,
        format!("output message {i} is input message {pos}, out of order or repeated{before}"),
    )
    .message(i)]
}

/// The head and every pinned message of the input are in the output,
/// verbatim and in order. The head is read as the reference keeps it
/// (`contract::Head::kept`): an earlier summary in the leading system run
/// may be folded into the new one.
pub fn pinned_kept(input: &[Message], output: &[Message]) -> Vec<Violation> {
    let head = Head::of(input).kept;
    let mut out = Vec::new();
    let mut j = 0;
    for (i, m) in input.iter().enumerate() {
        if i >= head && !m.is_pinned() {
            continue;
        }
        match output[j..].iter().position(|x| x == m) {
            Some(p) => j += p + 1,
            None => {
                let elided = output
                    .iter()
                    .find(|o| is_elision_of(o, m))
                    .map(|o| format!(": its images were elided, {}", elided_parts(o, m)))
                    .unwrap_or_default();
                out.push(
                    Violation::new(
                        Invariant::PinnedKept,
                        format!(
                            "input message {i} ({}) is not in the output verbatim{}{elided}",
                            if i < head { "head" } else { "pinned" },
                            if output.contains(m) {
                                " and in order"
                            } else {
                                ""
                            }
                        ),
                    )
                    .message(i),
                )
            }
        }
    }
    out
}

/// At most one message of the output is neither from the input nor an
/// elision of an input message that may be elided, and its content is at
/// most `summaryMaxBytes` (its text, and the JSON of any part that is not
/// text: a summary that re-embeds images is not bounded). An elision of a
/// message of the head, the last iteration or a pinned iteration is a
/// violation of its own, naming the images.
pub fn single_bounded_summary(
    config: &Config,
    input: &[Message],
    output: &[Message],
) -> Vec<Violation> {
    let inv = Invariant::SingleBoundedSummary;
    let may = elidable(input, Head::of(input).kept);
    let mut out = Vec::new();
    let mut new = Vec::new();
    for (i, o) in output.iter().enumerate() {
        if input.contains(o) {
            continue;
        }
        let origins: Vec<usize> = (0..input.len())
            .filter(|&k| is_elision_of(o, &input[k]))
            .collect();
        match origins.iter().find(|&&k| may[k]) {
            Some(_) => continue,
            None if !origins.is_empty() => {
                let k = origins[0];
                out.push(
                    Violation::new(
                        inv,
                        format!(
                            "output message {i} is input message {k} with images elided ({}), but message {k} is in the head, the last iteration or a pinned iteration, whose images are never elided",
                            elided_parts(o, &input[k])
                        ),
                    )
                    .message(i),
                );
            }
            None => new.push(i),
        }
    }
    if new.len() > 1 {
        let mut v = Violation::new(
            inv,
            format!("{} output messages are not from the input", new.len()),
        );
        for &i in &new {
            v = v.message(i);
        }
        out.push(v);
    }
    // A new message that is an input message with images but other parts
    // or text: an elision gone wrong (a part dropped, text changed). Named,
    // with the images it no longer holds.
    for &i in &new {
        let o = &output[i];
        if let Some(k) = (0..input.len()).find(|&k| {
            input[k].has_images() && same_but_content(o, &input[k]) && o.content != input[k].content
        }) {
            let gone: Vec<String> = input[k]
                .content
                .parts()
                .iter()
                .enumerate()
                .filter(|(_, p)| p.as_image().is_some() && !o.content.parts().contains(p))
                .map(|(j, p)| {
                    format!(
                        "part {j} ({})",
                        p.as_image().map(|i| i.describe()).unwrap_or_default()
                    )
                })
                .collect();
            if !gone.is_empty() {
                out.push(
                    Violation::new(
                        inv,
                        format!(
                            "output message {i} is input message {k} without its image(s) {}, but not as an elision: each image part must become one text part of at most 200 bytes, and nothing else change",
                            gone.join(", ")
                        ),
                    )
                    .message(i),
                );
            }
        }
    }
    let bound = config.summary_max_bytes as u64;
    for &i in &new {
        let len = content_bytes(&output[i]);
        if len > bound {
            out.push(
                Violation::new(
                    inv,
                    format!("output message {i} is new and its content is {len} bytes, over summaryMaxBytes"),
                )
                .message(i)
                .number("content", len)
                .number("summaryMaxBytes", bound),
            );
        }
    }
    out
}

/// The bytes of a content, for the summary's bound: its text, and the
/// engine JSON of each part that is not text (an image re-embedded in a
/// summary weighs its base64).
fn content_bytes(m: &Message) -> u64 {
    m.content.text_len() as u64
        + m.content
            .parts()
            .iter()
            .filter(|p| !matches!(p, Part::Text(_)))
            .map(crate::body::part_size)
            .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(texts: &[&str]) -> Vec<Message> {
        texts.iter().map(|t| Message::user(*t)).collect()
    }

    #[test]
    fn alignment_finds_the_summary_that_equals_an_input_message() {
        let input = [Message::system(""), Message::user("a"), Message::user("b")];
        // [system "", summary "", last]: the greedy match takes the summary
        // for the head and fails; leaving the second one out aligns.
        let output = [Message::system(""), Message::system(""), Message::user("b")];
        assert_eq!(align(&input, &output), Alignment::Without(0));
        assert!(order_preserved(&input, &output).is_empty());
        assert!(single_bounded_summary(&Config::default(), &input, &output).is_empty());
    }

    #[test]
    fn a_reordering_is_found_whatever_is_left_out() {
        let input = users(&["a", "b", "c"]);
        let output = users(&["c", "b", "a"]);
        assert_eq!(align(&input, &output), Alignment::None { at: 1 });
        let v = order_preserved(&input, &output);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].messages, [1]);
        // One swap is one summary's worth of leeway only when nothing is new.
        assert!(order_preserved(&input, &users(&["b", "a", "c"])).is_empty());
        let mut with_new = users(&["b", "a", "c"]);
        with_new.insert(0, Message::system("summary"));
        assert_eq!(order_preserved(&input, &with_new).len(), 1);
    }

    #[test]
    fn a_repeated_message_is_out_of_order() {
        let input = users(&["a", "b"]);
        let output = users(&["a", "a", "a", "b"]);
        let v = order_preserved(&input, &output);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("repeated"), "{}", v[0].detail);
    }
}
