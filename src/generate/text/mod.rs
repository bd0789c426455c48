//! Content classes and the text of each (issue 3, item 2; issue 15): the
//! one vocabulary and the one text generator of the crate — the
//! generator's histories, `calibrate`'s samples and the benches' inputs
//! are all written here.
//!
//! Seven classes, each chosen because compactors or estimators get it
//! wrong in its own way: English prose (the easy case, where 4 bytes a
//! token was measured), code (quotes, braces, backslashes), JSON (tool
//! results and arguments are mostly JSON), CJK (three bytes a character,
//! dense in tokens), other scripts (Cyrillic, Arabic, Devanagari, Latin with
//! diacritics: bytes ≠ characters), emoji (astral plane: four bytes, two
//! UTF-16 units, ZWJ sequences) and escape-heavy text (quotes, backslashes,
//! newlines, control characters: each grows when the body is serialised).
//!
//! [`pieces`] writes the pieces of each class (calibrate's samples are
//! pieces joined to a length). [`text`] makes a text of one class of an
//! exact byte length: slices, at offsets a [`SplitMix64`] picks, of a
//! corpus per class written once from a fixed seed out of those pieces
//! mixed with edge tokens (NUL, DEL, U+2028, `</script>`, keycaps, …;
//! JSON texts are arrays of whole corpus records, so they stay valid).
//! [`classify`] tells, after the fact, which classes a text shows, so
//! coverage measures what the cases hold rather than what the generator
//! meant to put there.
//!
//! Here: [`text`] and the corpus it slices. The classes and [`classify`]
//! are in `class`; the edge tokens and their writers in `edges`; JSON
//! values and documents in `json`.

mod class;
mod edges;
mod json;
pub mod pieces;

use serde_json::{Map, Value};

use super::rng::SplitMix64;
use crate::model::truncate_utf8;
use edges::edges;
use json::write_json;

pub use class::{classify, ContentClass};
pub(crate) use edges::WORDS;
pub use json::{decimal, json_key, scalar, short_decimal, value};

/// A text of `class` of exactly `n` bytes (a JSON text is a valid JSON
/// document padded with spaces, when `n` allows one).
///
/// The bytes are slices, at offsets the PRNG picks, of a corpus per class
/// written once from a fixed seed (the same on every platform): copying
/// is ten times faster than writing word by word, and the mean case holds
/// tens of KB of text.
pub fn text(rng: &mut SplitMix64, class: ContentClass, n: usize) -> String {
    // Images carry no text of their own: a text asked of them is prose.
    let class = if class.is_text() {
        class
    } else {
        ContentClass::Prose
    };
    let corpus = corpus();
    if class == ContentClass::Json {
        return json_text(rng, corpus, n);
    }
    let src = corpus.text[class as usize].as_str();
    let mut s = String::with_capacity(n);
    while s.len() < n {
        let start = floor_char(src, rng.below(src.len() as u64) as usize);
        let end = floor_char(src, (start + n - s.len()).min(src.len()));
        if end == start {
            break; // the rest is shorter than the next char: `fit` pads
        }
        s.push_str(&src[start..end]);
    }
    fit(s, n)
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Per-class text to slice from, and JSON records to fill arrays with.
struct Corpus {
    /// Indexed like [`ContentClass::ALL`]; the `Json` entry is unused.
    text: [String; 7],
    /// Compact and pretty (indented for an array member) JSON records.
    records: [Vec<String>; 2],
    /// The compact records as values, with their sizes, for arguments.
    values: Vec<(Value, u64)>,
}

/// Bytes of corpus per class: larger than most texts, so that slices of
/// one text rarely repeat each other.
const CORPUS_BYTES: usize = 96 * 1024;
const RECORDS: usize = 768;

fn corpus() -> &'static Corpus {
    static CORPUS: std::sync::OnceLock<Corpus> = std::sync::OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut pr = pieces::Rng::new(0x0098_C0DE);
        let text = ContentClass::ALL.map(|class| {
            let mut s = String::with_capacity(CORPUS_BYTES + 4_096);
            if class == ContentClass::Json {
                return s;
            }
            let mut mode = 0;
            while s.len() < CORPUS_BYTES {
                if !s.is_empty() {
                    s.push_str(pieces::separator(class));
                }
                // A third of the corpus is edge tokens; the rest pieces.
                if pr.chance(0.33) {
                    let end = s.len() + 256;
                    edges(class, pr.inner(), &mut s, end);
                } else {
                    s.push_str(&pieces::piece(class, mode, &mut pr));
                    mode += 1;
                }
            }
            s
        });
        let mut rng = SplitMix64::new(0x0098_C0DF);
        let records: [Vec<String>; 2] = [None, Some(2)].map(|indent| {
            (0..RECORDS)
                .map(|_| {
                    let budget = {
                        let bits = rng.range(3, 11);
                        rng.range(1 << (bits - 1), (1 << bits) - 1) as usize
                    };
                    let mut r = String::new();
                    write_json(&mut rng, &mut r, 4, budget, indent);
                    r
                })
                .collect()
        });
        let values = records[0]
            .iter()
            .map(|r| {
                let v: Value = serde_json::from_str(r).expect("the corpus writes valid JSON");
                (v, r.len() as u64)
            })
            .collect();
        Corpus {
            text,
            records,
            values,
        }
    })
}

/// Nested JSON values deep at most this; [`bulk_value`] wraps them once.
const RECORD_DEPTH: usize = 4;

/// An object of roughly `budget` bytes, at most `depth` deep, for large
/// arguments: corpus records under fresh keys (built from scratch when
/// `depth` is too small for the records).
pub fn bulk_value(rng: &mut SplitMix64, depth: usize, budget: u64) -> Value {
    if depth <= RECORD_DEPTH {
        return value(rng, depth, budget);
    }
    let pool = &corpus().values;
    let mut obj = Map::new();
    let mut used = 2;
    while used < budget {
        let (v, size) = rng.pick(pool);
        let key = json_key(rng);
        used += key.len() as u64 + 4 + size;
        obj.insert(key, v.clone());
    }
    Value::Object(obj)
}

/// `word` with its first letter upper-cased, at the end of `s`.
fn push_capitalised(s: &mut String, word: &str) {
    let mut cs = word.chars();
    if let Some(c) = cs.next() {
        s.extend(c.to_uppercase());
        s.push_str(cs.as_str());
    }
}

/// Cut on a char boundary and pad with spaces to exactly `n` bytes.
fn fit(mut s: String, n: usize) -> String {
    let cut = truncate_utf8(&s, n).len();
    s.truncate(cut);
    while s.len() < n {
        s.push(' ');
    }
    s
}

/// A JSON document of exactly `n` bytes: records picked at random are
/// added to an array while they fit, then spaces pad it (JSON allows
/// trailing whitespace).
fn json_text(rng: &mut SplitMix64, corpus: &Corpus, n: usize) -> String {
    if n < 2 {
        return fit(String::from("0"), n);
    }
    let pretty = rng.chance(30);
    let records = &corpus.records[pretty as usize];
    let (sep, close) = if pretty { (",\n  ", "\n]") } else { (",", "]") };
    let mut doc = String::with_capacity(n);
    doc.push('[');
    let mut misses = 0;
    while misses < 6 {
        let r = rng.pick(records);
        let first = doc.len() == 1;
        let lead = if first && pretty {
            "\n  "
        } else if first {
            ""
        } else {
            sep
        };
        if doc.len() + lead.len() + r.len() + close.len() <= n {
            doc.push_str(lead);
            doc.push_str(r);
            misses = 0;
        } else {
            misses += 1;
        }
    }
    doc.push_str(if doc.len() > 1 { close } else { "]" });
    fit(doc, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_have_exact_sizes_and_their_class() {
        let mut rng = SplitMix64::new(1);
        for class in ContentClass::ALL {
            for n in [0, 1, 2, 7, 100, 1_000, 5_000] {
                let t = text(&mut rng, class, n);
                assert_eq!(t.len(), n, "{class:?} {n}");
                if n >= 1_000 {
                    let bits = classify(&t);
                    assert!(bits & (1 << class as u8) != 0, "{class:?}: {bits:b} {t:?}");
                }
            }
        }
    }

    #[test]
    fn json_texts_parse_and_numbers_are_short() {
        fn numbers(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Number(n) => out.push(n.to_string()),
                Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
                Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
                _ => {}
            }
        }
        let mut rng = SplitMix64::new(9);
        let mut all = Vec::new();
        for n in [2usize, 30, 500, 3_000, 20_000] {
            let t = text(&mut rng, ContentClass::Json, n);
            let v: Value = serde_json::from_str(&t).unwrap_or_else(|e| panic!("{e}: {t}"));
            numbers(&v, &mut all);
            numbers(&value(&mut rng, 6, n as u64), &mut all);
        }
        assert!(all.len() > 100);
        for n in all {
            assert!(!n.contains(['e', 'E']), "{n}");
            assert!(n.split_once('.').is_none_or(|(_, f)| f.len() <= 2), "{n}");
        }
    }
}
