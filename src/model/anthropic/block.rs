//! The small pieces of a content block both directions use: its object,
//! its `type`, its `text`; a text block; fields added where not yet set.

use serde_json::{Map, Value};

use super::Fields;
use crate::model::field::typed;

pub(super) fn block_object(b: &Value) -> Result<&Fields, String> {
    typed(b, Value::as_object, "expected a content block object")
}

pub(super) fn block_type(obj: &Fields) -> Option<&str> {
    obj.get("type").and_then(Value::as_str)
}

pub(super) fn read_text(v: &Value) -> Result<&str, String> {
    typed(v, Value::as_str, "`text` must be a string")
}

pub(super) fn text_block(text: &str) -> Fields {
    let mut b = Map::new();
    b.insert("type".into(), "text".into());
    b.insert("text".into(), Value::String(text.to_owned()));
    b
}

/// Add fields that are not there yet (the fields already written win).
pub(super) fn add_fields<'a>(
    to: &mut Fields,
    from: impl IntoIterator<Item = (&'a String, &'a Value)>,
) {
    for (k, v) in from {
        to.entry(k.clone()).or_insert_with(|| v.clone());
    }
}
