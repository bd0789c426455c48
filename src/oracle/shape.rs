//! The shape invariants: what of the input the output must keep, and how.
//! `verbatim-suffix`, `order-preserved`, `pinned-kept`,
//! `single-bounded-summary`.

use super::{Invariant, Violation};
use crate::config::Config;
use crate::model::{head_len, iterations, Message};

/// Match `output` greedily as a subsequence of `input`: for each output
/// message, the input index it matched, or `None` for a message that is not
/// (in this order) from the input.
pub(crate) fn align(input: &[Message], output: &[Message]) -> Vec<Option<usize>> {
    let mut j = 0;
    output
        .iter()
        .map(|m| {
            let found = input[j..].iter().position(|x| x == m).map(|p| p + j);
            if let Some(p) = found {
                j = p + 1;
            }
            found
        })
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
    let mut v = Violation::new(
        Invariant::VerbatimSuffix,
        format!(
            "the output's last {common} message(s) match the input's, but its last iteration (messages {}..{}) has {need}",
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
pub fn order_preserved(input: &[Message], output: &[Message]) -> Vec<Violation> {
    let aligned = align(input, output);
    aligned
        .iter()
        .enumerate()
        .filter(|(_, a)| a.is_none())
        .filter_map(|(i, _)| {
            // A message not from the input at all is a summary: judged by
            // single-bounded-summary. One that is, but out of order, is ours.
            let pos = input.iter().position(|x| *x == output[i])?;
            Some(
                Violation::new(
                    Invariant::OrderPreserved,
                    format!("output message {i} is input message {pos}, out of order"),
                )
                .message(i),
            )
        })
        .collect()
}

/// The head and every pinned message of the input are in the output, verbatim.
pub fn pinned_kept(input: &[Message], output: &[Message]) -> Vec<Violation> {
    let head = head_len(input);
    let mut out = Vec::new();
    let mut j = 0;
    for (i, m) in input.iter().enumerate() {
        if i >= head && !m.is_pinned() {
            continue;
        }
        match output[j..].iter().position(|x| x == m) {
            Some(p) => j += p + 1,
            None => out.push(
                Violation::new(
                    Invariant::PinnedKept,
                    format!(
                        "input message {i} ({}) is not in the output verbatim",
                        if i < head { "head" } else { "pinned" }
                    ),
                )
                .message(i),
            ),
        }
    }
    out
}

/// At most one message of the output is not from the input, and its
/// content is at most `summaryMaxBytes`.
pub fn single_bounded_summary(
    config: &Config,
    input: &[Message],
    output: &[Message],
) -> Vec<Violation> {
    let inv = Invariant::SingleBoundedSummary;
    let new: Vec<usize> = align(input, output)
        .iter()
        .enumerate()
        .filter(|(i, a)| a.is_none() && !input.contains(&output[*i]))
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
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
    let bound = config.summary_max_bytes as u64;
    for &i in &new {
        let len = output[i].content.text().len() as u64;
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
