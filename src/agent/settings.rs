//! The agent's settings (SPEC §9): SPEC §2's config — the window,
//! threshold and ceiling the agent was configured with — and two fields of
//! agent mode's own, read from the same `--config` file:
//!
//! - `toolOutputMaxBytes` (default: none): the agent shortens a tool result longer
//!   than this (`results-delivered` then asks for that many bytes of it,
//!   as one piece);
//! - `earlyTolerance` [0.25]: how much earlier than the trigger the agent
//!   may compact (`no-premature-compaction`).

use serde_json::{Map, Value};

use crate::config::Config;
use crate::error::{json_type, InputError, InputErrorKind};

/// The agent's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub config: Config,
    pub tool_output_max_bytes: Option<u64>,
    pub early_tolerance: f64,
}

/// `earlyTolerance`'s default.
pub const DEFAULT_EARLY_TOLERANCE: f64 = 0.25;

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            config: Config::default(),
            tool_output_max_bytes: None,
            early_tolerance: DEFAULT_EARLY_TOLERANCE,
        }
    }
}

impl Settings {
    /// Read the settings from a config object: the two agent fields taken
    /// out, the rest SPEC §2's config (unknown fields are errors there).
    pub fn from_object(mut obj: Map<String, Value>) -> Result<Settings, InputError> {
        let bad = |p: String| InputError::new(InputErrorKind::Config, format!("config: {p}"));
        let tool_output_max_bytes = match obj.remove("toolOutputMaxBytes") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                bad(format!(
                    "`toolOutputMaxBytes` must be a whole number of bytes above 0, found {}",
                    crate::model::text::excerpt(&v)
                ))
            })?),
        };
        let early_tolerance = match obj.remove("earlyTolerance") {
            None => DEFAULT_EARLY_TOLERANCE,
            Some(v) => v
                .as_f64()
                .filter(|t| (0.0..1.0).contains(t))
                .ok_or_else(|| {
                    bad(format!(
                        "`earlyTolerance` must be a number in [0, 1), found {}",
                        match &v {
                            Value::Number(n) => n.to_string(),
                            other => json_type(other).to_string(),
                        }
                    ))
                })?,
        };
        // Unknown fields are named here, against all ten agent fields: the
        // config's own error would list its eight and call the agent's
        // two unknown.
        use crate::config::{AGENT_FIELDS, FIELDS};
        let known: Vec<&str> = FIELDS.iter().chain(&AGENT_FIELDS).copied().collect();
        if let Some(k) = obj.keys().find(|k| !known.contains(&k.as_str())) {
            let shown = crate::model::one_line(crate::model::truncate_utf8(k, 64));
            let hint = crate::model::text::closest(k, &known)
                .map(|m| format!("did you mean `{m}`? "))
                .unwrap_or_default();
            return Err(bad(format!(
                "unknown field `{shown}`: {hint}an agent's config fields are {}",
                known
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let config = Config::from_value(Value::Object(obj))?;
        config.validate()?;
        Ok(Settings {
            config,
            tool_output_max_bytes,
            early_tolerance,
        })
    }

    /// The settings as a config object: SPEC §2's fields and the agent's.
    pub fn to_value(&self) -> Value {
        let mut v = self.config.to_value();
        if let Value::Object(obj) = &mut v {
            if let Some(n) = self.tool_output_max_bytes {
                obj.insert("toolOutputMaxBytes".into(), n.into());
            }
            obj.insert("earlyTolerance".into(), self.early_tolerance.into());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Result<Settings, InputError> {
        Settings::from_object(v.as_object().unwrap().clone())
    }

    #[test]
    fn the_agent_fields_are_read_beside_the_config() {
        let s = read(
            json!({"contextWindow": 32000, "toolOutputMaxBytes": 2000, "earlyTolerance": 0.1}),
        )
        .unwrap();
        assert_eq!(s.config.context_window, 32000);
        assert_eq!(s.tool_output_max_bytes, Some(2000));
        assert_eq!(s.early_tolerance, 0.1);
        assert_eq!(
            read(s.to_value().as_object().unwrap().clone().into()).unwrap(),
            s
        );
    }

    #[test]
    fn bad_agent_fields_and_unknown_fields_are_errors() {
        for (v, says) in [
            (
                json!({"earlyTolerence": 0.1}),
                "did you mean `earlyTolerance`?",
            ),
            (
                json!({"contextwindow": 1000}),
                "did you mean `contextWindow`?",
            ),
            (json!({"zzz": 1}), "`toolOutputMaxBytes`, `earlyTolerance`"),
            (json!({"earlyTolerance": 1.5}), "earlyTolerance"),
            (json!({"earlyTolerance": "x"}), "found a string"),
            (json!({"toolOutputMaxBytes": -1}), "toolOutputMaxBytes"),
            (json!({"toolOutputMaxBytes": 0}), "toolOutputMaxBytes"),
            (json!({"contextWindw": 1}), "contextWindw"),
        ] {
            let e = read(v.clone()).unwrap_err().to_string();
            assert!(e.contains(says), "{v}: {e}");
        }
    }
}
