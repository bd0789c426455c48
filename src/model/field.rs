//! The fields of a JSON object: one read as the JSON type a reader wants
//! (its value, or the error every reader gives when it is absent or of
//! another type; the caller adds where the field is: the block, the
//! message), and the extra entries a writer writes beside its own fields.

use std::borrow::Borrow;
use std::fmt::Display;

use serde_json::{Map, Value};

use crate::error::json_type;

/// `field` as `pick` takes it (`Value::as_str`, [`into_string`]…); else
/// `missing` when it is absent, or "{wrong}, found {its JSON type}" when
/// `pick` does not take it.
pub(crate) fn expect<V: Borrow<Value>, T>(
    field: Option<V>,
    pick: impl FnOnce(V) -> Option<T>,
    wrong: impl Display,
    missing: impl Display,
) -> Result<T, String> {
    typed(field.ok_or_else(|| missing.to_string())?, pick, wrong)
}

/// A present field's value as `pick` takes it, else "{wrong}, found {its
/// JSON type}": `typed(v, Value::as_bool, "`pinned` must be a boolean")`.
pub(crate) fn typed<V: Borrow<Value>, T>(
    v: V,
    pick: impl FnOnce(V) -> Option<T>,
    wrong: impl Display,
) -> Result<T, String> {
    let found = json_type(v.borrow());
    pick(v).ok_or_else(|| format!("{wrong}, found {found}"))
}

/// A string, moved out of its value.
pub(crate) fn into_string(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// An array, moved out of its value.
pub(crate) fn into_array(v: Value) -> Option<Vec<Value>> {
    match v {
        Value::Array(a) => Some(a),
        _ => None,
    }
}

/// The entries of `extra` a writer writes: those whose names its format
/// does not reserve for fields of its own (`names`: the engine's
/// `MESSAGE_FIELDS` or `CALL_FIELDS`, a part's fields).
pub(crate) fn own_fields<'a>(
    extra: &'a Map<String, Value>,
    names: &'a [&'a str],
) -> impl Iterator<Item = (&'a String, &'a Value)> + 'a {
    extra
        .iter()
        .filter(move |(k, _)| !names.contains(&k.as_str()))
}
