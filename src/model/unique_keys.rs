//! JSON values read with each object's keys unique: the one parser of
//! what users hand over (histories, configs, generator configs, envelopes,
//! fixtures, reports, case lines).
//!
//! JSON leaves a repeated key undefined (RFC 8259 §4), and readers differ:
//! serde_json and Python keep the last value, others the first or both. A
//! history holding `"content"` twice would be counted with one value and
//! sent with another, so ctxgate refuses it, naming the key; `parse_json`
//! adds where it is (message index, JSON path, line and column).
//!
//! The contract: [`UniqueKeys`] reads exactly the [`Value`] serde_json
//! reads — numbers spelled as written (`arbitrary_precision`), members in
//! their order (`preserve_order`) — or the error [`DUPLICATE`] when an
//! object names a key twice. It costs what serde_json's own reading costs:
//! the check is the insertion's own lookup (an `entry`), no second pass.
//!
//! What it does not do: read serde_json's private `RawValue` marker key as
//! a raw value (serde_json's `Value` does; here it is a key like any other),
//! or read the subject protocol's answers (`subject::protocol` parses them).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

/// How the error a repeated key raises begins: `duplicate key "k"`.
pub const DUPLICATE: &str = "duplicate key ";

/// The key serde_json's reader gives a number under (`arbitrary_precision`):
/// a number arrives as a one-member map holding its text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Reads one JSON value, refusing an object that repeats a key.
#[derive(Debug, Clone, Copy, Default)]
pub struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// `bytes` as one JSON value with unique keys, and nothing after it but
/// whitespace; serde_json's own errors (line and column) otherwise.
pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = UniqueKeys.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// [`from_slice`] from a reader (read as it is parsed).
pub fn from_reader(r: impl std::io::Read) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_reader(r);
    let v = UniqueKeys.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// The key of a [`DUPLICATE`] error's text, as the error wrote it
/// (quoted and escaped).
pub fn duplicate_key(error_text: &str) -> Option<&str> {
    let rest = error_text.strip_prefix(DUPLICATE)?;
    // serde_json appends " at line L column C"; the key is quoted and
    // escaped, so its closing quote is the last one.
    let end = rest.rfind('"')?;
    Some(&rest[..=end])
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        UniqueKeys.deserialize(d)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(UniqueKeys)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let first = match map.next_key_seed(FirstKeySeed)? {
            None => return Ok(Value::Object(Map::new())),
            Some(FirstKey::Number) => {
                let text: String = map.next_value()?;
                return text
                    .parse::<Number>()
                    .map(Value::Number)
                    .map_err(de::Error::custom);
            }
            Some(FirstKey::Key(k)) => k,
        };
        let mut obj = Map::new();
        let v = map.next_value_seed(UniqueKeys)?;
        obj.insert(first, v);
        while let Some(key) = map.next_key::<String>()? {
            match obj.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(UniqueKeys)?);
                }
                Entry::Occupied(seen) => {
                    return Err(de::Error::custom(format_args!(
                        "{DUPLICATE}{:?}",
                        seen.key()
                    )))
                }
            }
        }
        Ok(Value::Object(obj))
    }
}

/// An object's first key, or the marker of a number.
enum FirstKey {
    Number,
    Key(String),
}

struct FirstKeySeed;

impl<'de> DeserializeSeed<'de> for FirstKeySeed {
    type Value = FirstKey;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FirstKey, D::Error> {
        d.deserialize_str(FirstKeyVisitor)
    }
}

struct FirstKeyVisitor;

impl<'de> Visitor<'de> for FirstKeyVisitor {
    type Value = FirstKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, s: &str) -> Result<FirstKey, E> {
        Ok(match s {
            NUMBER_TOKEN => FirstKey::Number,
            _ => FirstKey::Key(s.to_owned()),
        })
    }

    fn visit_string<E>(self, s: String) -> Result<FirstKey, E> {
        Ok(match s.as_str() {
            NUMBER_TOKEN => FirstKey::Number,
            _ => FirstKey::Key(s),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value read is serde_json's, byte for byte when written again:
    /// numbers as spelled, members in order, every kind of value.
    #[test]
    fn reads_what_serde_json_reads() {
        let texts = [
            r#"{"b": 1.50, "a": [1E+2, -0.0, 123456789012345678901234567890, true, null], "c": {"z": "é\n", "y": {}}}"#,
            r#"[]"#,
            r#""s""#,
            r#"-12"#,
            r#"[{"k": [{"k": [{}]}]}]"#,
            r#"{"$serde_json::private::Number": "7.10"}"#,
        ];
        for t in texts {
            let ours = from_slice(t.as_bytes()).unwrap();
            let theirs: Value = serde_json::from_str(t).unwrap();
            assert_eq!(ours, theirs, "{t}");
            assert_eq!(ours.to_string(), theirs.to_string(), "{t}");
            assert_eq!(from_reader(t.as_bytes()).unwrap(), theirs, "{t}");
        }
        for (i, case) in crate::generate::seeded(3, 100) {
            let text = case.to_json().to_string();
            let ours = from_slice(text.as_bytes()).unwrap();
            assert_eq!(ours.to_string(), text, "case {i}");
        }
    }

    #[test]
    fn a_repeated_key_is_an_error_naming_it_at_any_depth() {
        for (text, key) in [
            (r#"{"a": 1, "a": 2}"#, r#""a""#),
            (
                r#"[{"role": "user", "x": {"k": 1, "k\n": 2, "k": 3}}]"#,
                r#""k""#,
            ),
            (r#"{"a\"b": 1, "a\"b": 1}"#, r#""a\"b""#),
            (
                r#"{"n": 1, "$serde_json::private::Number": 1, "n": 2}"#,
                r#""n""#,
            ),
        ] {
            let e = from_slice(text.as_bytes()).unwrap_err().to_string();
            assert!(e.starts_with(DUPLICATE), "{text}: {e}");
            assert_eq!(duplicate_key(&e), Some(key), "{text}: {e}");
            let e = from_reader(text.as_bytes()).unwrap_err().to_string();
            assert_eq!(duplicate_key(&e), Some(key), "{text}: {e}");
        }
        // The same key in two objects is no repetition.
        assert!(from_slice(br#"[{"a": 1}, {"a": {"a": 1}}]"#).is_ok());
    }
}
