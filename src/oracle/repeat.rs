//! `deterministic` and `idempotent`: what a second run must give.

use super::{Invariant, Violation};
use crate::model::Message;
use crate::subject::CompactAnswer;

/// The same input twice gives the same output (or the same error kind).
pub fn deterministic(first: &CompactAnswer, second: &CompactAnswer) -> Vec<Violation> {
    let inv = Invariant::Deterministic;
    match (first, second) {
        (CompactAnswer::Messages(a), CompactAnswer::Messages(b)) => differ(inv, a, b, |i| {
            format!(
                "two runs on the same input differ at output message {i} ({} vs {} messages)",
                a.len(),
                b.len()
            )
        }),
        (CompactAnswer::CannotFit { .. }, CompactAnswer::CannotFit { .. })
        | (CompactAnswer::InvalidInput { .. }, CompactAnswer::InvalidInput { .. }) => vec![],
        (a, b) => vec![Violation::new(
            inv,
            format!(
                "two runs on the same input answered {} and then {}",
                a.describe(),
                b.describe()
            ),
        )],
    }
}

/// Compacting the output again returns it unchanged.
pub fn idempotent(output: &[Message], again: &CompactAnswer) -> Vec<Violation> {
    let inv = Invariant::Idempotent;
    match again {
        CompactAnswer::Messages(b) => differ(inv, output, b, |i| {
            format!(
                "compacting the output again changed it at message {i} ({} messages became {})",
                output.len(),
                b.len()
            )
        }),
        other => vec![Violation::new(
            inv,
            format!("compacting the output again answered {}", other.describe()),
        )],
    }
}

/// A violation at the first message where `a` and `b` differ, if they do,
/// `detail` saying it of that index.
fn differ(
    inv: Invariant,
    a: &[Message],
    b: &[Message],
    detail: impl FnOnce(usize) -> String,
) -> Vec<Violation> {
    first_difference(a, b)
        .map(|i| Violation::new(inv, detail(i)).message(i))
        .into_iter()
        .collect()
}

/// Index of the first message where `a` and `b` differ, if they do.
pub(crate) fn first_difference(a: &[Message], b: &[Message]) -> Option<usize> {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    (common < a.len().max(b.len())).then_some(common)
}
