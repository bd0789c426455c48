//! JSON values and documents, sized to a budget: the corpus's records,
//! tool-call arguments and extra fields. Numbers are integers or short
//! decimals, which every JSON library prints back the same way.

use serde_json::{Map, Number, Value};

use super::edges::{pieces, CJK_PUNCT, CJK_WORDS, EMOJI, ESCAPES, IDENTS, OTHER_SCRIPTS, WORDS};
use super::{text, ContentClass};
use crate::generate::rng::SplitMix64;
use crate::model::truncate_utf8;

/// Write a JSON value of roughly `budget` bytes, at most `depth` levels
/// deep, indented by `indent` spaces when pretty.
pub(super) fn write_json(
    rng: &mut SplitMix64,
    out: &mut String,
    depth: usize,
    budget: usize,
    indent: Option<usize>,
) {
    if depth == 0 || budget < 24 {
        return write_scalar(rng, out, budget);
    }
    let start = out.len();
    let object = rng.chance(65);
    out.push(if object { '{' } else { '[' });
    let mut first = true;
    while out.len() - start < budget {
        if !first {
            out.push(',');
        }
        first = false;
        if let Some(i) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', i + 2));
        }
        if object {
            out.push('"');
            out.push_str(&json_key(rng));
            out.push_str(if indent.is_some() { "\": " } else { "\":" });
        }
        let used = out.len() - start;
        let child = (budget - used.min(budget)).min(budget / 2 + 8);
        write_json(rng, out, depth - 1, child, indent.map(|i| i + 2));
    }
    if let Some(i) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', i));
    }
    out.push(if object { '}' } else { ']' });
}

fn write_scalar(rng: &mut SplitMix64, out: &mut String, budget: usize) {
    use std::fmt::Write;
    match rng.below(8) {
        0 => out.push_str("null"),
        1 => out.push_str(if rng.chance(50) { "true" } else { "false" }),
        2 => {
            let _ = write!(out, "{}", rng.range(0, 100_000) as i64 - 1_000);
        }
        3 => {
            let _ = write!(out, "{}", decimal(rng.range(1, 99_999), 100));
        }
        _ => {
            let n = rng.range(0, budget.clamp(1, 80) as u64) as usize;
            if rng.chance(85) {
                out.push('"');
                let end = out.len() + n;
                while out.len() < end {
                    out.push_str(rng.pick::<&str>(WORDS));
                    out.push(' ');
                }
                out.truncate(out.trim_end().len());
                out.push('"');
            } else {
                // Written directly, not sliced from the corpus: this also
                // writes the corpus's JSON records.
                let mut s = String::new();
                match rng.below(4) {
                    0 => pieces(rng, &mut s, n, CJK_WORDS, CJK_PUNCT),
                    1 => pieces(rng, &mut s, n, OTHER_SCRIPTS, &[" "]),
                    2 => pieces(rng, &mut s, n, EMOJI, &[" "]),
                    _ => pieces(rng, &mut s, n, ESCAPES, &[" "]),
                }
                let s = truncate_utf8(s.trim_end(), n);
                out.push_str(&serde_json::to_string(s).expect("strings serialise"));
            }
        }
    }
}

/// A JSON value of roughly `budget` bytes, nested at most `depth` levels.
/// Numbers are integers or short decimals, which print the same in every
/// language's JSON library.
pub fn value(rng: &mut SplitMix64, depth: usize, budget: u64) -> Value {
    sized_value(rng, depth, budget).0
}

/// [`value`] and its serialised size.
fn sized_value(rng: &mut SplitMix64, depth: usize, budget: u64) -> (Value, u64) {
    if depth == 0 || budget < 24 {
        let v = scalar(rng, budget);
        let size = crate::body::value_size(&v);
        return (v, size);
    }
    let mut used = 2u64;
    let mut n = 0u64;
    let v = if rng.chance(65) {
        let mut obj = Map::new();
        while used < budget {
            let key = json_key(rng);
            let (v, size) = sized_value(rng, depth - 1, (budget - used).min(budget / 2 + 8));
            used += key.len() as u64 + 3 + size;
            n += 1;
            obj.insert(key, v);
        }
        Value::Object(obj)
    } else {
        let mut arr = Vec::new();
        while used < budget {
            let (v, size) = sized_value(rng, depth - 1, (budget - used).min(budget / 2 + 8));
            used += size;
            n += 1;
            arr.push(v);
        }
        Value::Array(arr)
    };
    (v, used + n.saturating_sub(1))
}

pub fn json_key(rng: &mut SplitMix64) -> String {
    match rng.below(4) {
        0 => format!("{}_{}", rng.pick(IDENTS), rng.pick(WORDS)),
        1 => {
            let w = *rng.pick(WORDS);
            format!(
                "{}{}{}",
                rng.pick(IDENTS),
                w[..1].to_ascii_uppercase(),
                &w[1..]
            )
        }
        _ => (*rng.pick(IDENTS)).to_owned(),
    }
}

/// A short decimal such as 0.7 or 12.25: portable (`model::value`), so
/// written back byte for byte by every mainstream JSON library.
pub fn short_decimal(rng: &mut SplitMix64) -> Value {
    decimal(rng.range(1, 99_999), 100)
}

/// `units / scale` as a portable JSON number: an integer when it is one
/// (`5`, never `5.0`), else the shortest round-trip decimal (`653.5`, never
/// `653.50`). `scale` is at most 100, so a fraction is at least 0.01.
pub fn decimal(units: u64, scale: u64) -> Value {
    if units.is_multiple_of(scale) {
        return Value::from(units / scale);
    }
    let n = Number::from_f64(units as f64 / scale as f64).expect("finite");
    debug_assert!(crate::model::value::is_portable(&n), "{n}");
    Value::Number(n)
}

pub fn scalar(rng: &mut SplitMix64, budget: u64) -> Value {
    match rng.below(8) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => Value::from(rng.range(0, 100_000) as i64 - 1_000),
        3 => short_decimal(rng),
        _ => {
            let n = rng.range(0, budget.clamp(1, 80)) as usize;
            let class = if rng.chance(85) {
                ContentClass::Prose
            } else {
                *rng.pick(&ContentClass::ALL[3..])
            };
            Value::String(text(rng, class, n).trim_end().to_owned())
        }
    }
}
