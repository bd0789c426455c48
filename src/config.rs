//! The compactor configuration (SPEC §2): JSON, camelCase, the ADR's names.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{InputError, InputErrorKind};
use crate::model::WireFormat;

/// Express's implicit JSON body limit, the ceiling ADR 0098 hit in production.
pub const EXPRESS_DEFAULT_LIMIT: u64 = 102_400;

/// SPEC §2. Every field has the ADR's default. Two configs are equal when
/// their fields are, the envelope by JSON value (`model::value`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// Tokens the model accepts (128,000 for the ADR's five gate/dev agents).
    pub context_window: u64,
    /// Compaction trigger, as a fraction of the effective window, in (0, 1].
    pub threshold: f64,
    /// The real ceiling of the request body in bytes (8 MiB engine default).
    pub transport_max_body_bytes: u64,
    /// The approximate tokenizer's heuristic; the one shared constant.
    pub bytes_per_token: u64,
    /// Iterations kept verbatim after the summary, when they fit.
    pub keep_recent: usize,
    /// Bound on the summary message's content, in bytes.
    pub summary_max_bytes: usize,
    /// The format in which the body is serialised and measured.
    pub wire_format: WireFormat,
    /// The request body's other fields; the body is this object plus `messages`.
    pub envelope: Map<String, Value>,
}

impl PartialEq for Config {
    fn eq(&self, other: &Config) -> bool {
        self.context_window == other.context_window
            && self.threshold == other.threshold
            && self.transport_max_body_bytes == other.transport_max_body_bytes
            && self.bytes_per_token == other.bytes_per_token
            && self.keep_recent == other.keep_recent
            && self.summary_max_bytes == other.summary_max_bytes
            && self.wire_format == other.wire_format
            && crate::model::value::same_members(&self.envelope, &other.envelope)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            context_window: 128_000,
            threshold: 0.7,
            transport_max_body_bytes: 8 * 1024 * 1024,
            bytes_per_token: 4,
            keep_recent: 2,
            summary_max_bytes: 4096,
            wire_format: WireFormat::Engine,
            envelope: Map::new(),
        }
    }
}

impl Config {
    /// `min(contextWindow, floor(transportMaxBodyBytes / bytesPerToken))`, in tokens.
    pub fn effective_window(&self) -> u64 {
        self.context_window.min(self.ceiling_window())
    }

    /// The ceiling's arm of the effective window: `floor(transportMaxBodyBytes
    /// / bytesPerToken)`, in tokens.
    pub fn ceiling_window(&self) -> u64 {
        self.transport_max_body_bytes / self.bytes_per_token.max(1)
    }

    /// The body ceiling, not the model's window, sets the effective window
    /// (ADR 0098's case: `contextWindow` above what the transport carries).
    pub fn window_set_by_ceiling(&self) -> bool {
        self.ceiling_window() < self.context_window
    }

    /// `round(threshold * effectiveWindow)`, in tokens.
    pub fn trigger(&self) -> u64 {
        (self.threshold * self.effective_window() as f64).round() as u64
    }

    /// Check the values the contract's formulas need.
    pub fn validate(&self) -> Result<(), InputError> {
        let bad = |p: String| {
            Err(InputError::new(
                InputErrorKind::Config,
                format!("config: {p}"),
            ))
        };
        if self.context_window == 0 {
            return bad("`contextWindow` must be at least 1".into());
        }
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return bad(format!(
                "`threshold` must be in (0, 1], found {}",
                self.threshold
            ));
        }
        if self.bytes_per_token == 0 {
            return bad("`bytesPerToken` must be at least 1".into());
        }
        if self.transport_max_body_bytes == 0 {
            return bad("`transportMaxBodyBytes` must be at least 1".into());
        }
        if self.keep_recent == 0 {
            return bad(
                "`keepRecent` must be at least 1 (the last iteration is always kept)".into(),
            );
        }
        Ok(())
    }

    /// Read a config from JSON; unknown fields and wrong types are errors.
    pub fn from_json(bytes: &[u8]) -> Result<Config, InputError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(InputError::new(
                InputErrorKind::Empty,
                "config: empty file: expected a JSON object of SPEC §2 fields",
            ));
        }
        let value = crate::model::parse_json(bytes).map_err(|mut e| {
            // A config has no messages: the index the history parser found means nothing here.
            e.message = None;
            e.problem = format!("config: {}", e.problem);
            e
        })?;
        Config::from_value(value)
    }

    pub fn from_value(value: Value) -> Result<Config, InputError> {
        Config::from_value_ref(&value)
    }

    /// [`Config::from_value`] from a borrowed value.
    pub fn from_value_ref(value: &Value) -> Result<Config, InputError> {
        // Not left to serde: a derived struct also reads from an array, by position.
        if !value.is_object() {
            return Err(InputError::new(
                InputErrorKind::Config,
                format!(
                    "config: expected a JSON object of SPEC §2 fields, found {}",
                    crate::error::json_type(value)
                ),
            ));
        }
        // An unknown field named with the one it likely misspells, as a
        // fixture's is (serde would list the fields, no more).
        let obj = value.as_object().into_iter().flatten();
        if let Some((k, _)) = obj.into_iter().find(|(k, _)| !FIELDS.contains(&k.as_str())) {
            let shown = crate::model::one_line(crate::model::truncate_utf8(k, 64));
            let hint = crate::model::text::closest(k, &FIELDS)
                .map(|m| format!("did you mean `{m}`? "))
                .unwrap_or_default();
            let agent = match AGENT_FIELDS.contains(&k.as_str()) {
                true => {
                    format!(" (`{k}` is a setting of agent mode, read by `ctxgate agent --config`)")
                }
                false => String::new(),
            };
            return Err(InputError::new(
                InputErrorKind::Config,
                format!(
                    "config: unknown field `{shown}`: {hint}the config's fields are {}{agent}",
                    FIELDS.map(|f| format!("`{f}`")).join(", ")
                ),
            ));
        }
        let mut config = Config::deserialize(value).map_err(|e| {
            InputError::new(
                InputErrorKind::Config,
                format!("config: {}", field_problem(value, e)),
            )
        })?;
        // The envelope verbatim: deserialising a Value through serde loses
        // some spellings (`-0` comes back `0`), and the envelope counts in
        // the body as written.
        if let Some(Value::Object(envelope)) = value.get("envelope") {
            config.envelope = envelope.clone();
        }
        config.validate()?;
        Ok(config)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a config always serialises")
    }
}

/// The fields that hold a whole number (u64 / usize).
const WHOLE_NUMBERS: [&str; 5] = [
    "contextWindow",
    "transportMaxBodyBytes",
    "bytesPerToken",
    "keepRecent",
    "summaryMaxBytes",
];

/// SPEC §2's config fields, as a config object spells them.
pub const FIELDS: [&str; 8] = [
    "contextWindow",
    "threshold",
    "transportMaxBodyBytes",
    "bytesPerToken",
    "keepRecent",
    "summaryMaxBytes",
    "wireFormat",
    "envelope",
];

/// The fields agent mode's config adds to these (`agent::settings`).
pub const AGENT_FIELDS: [&str; 2] = ["toolOutputMaxBytes", "earlyTolerance"];

/// serde's type error in JSON's words: `invalid type: string "big",
/// expected u64` says `found string "big", expected a whole number`.
/// Only serde's own words change: what was found is quoted as written.
fn plain_types(message: &str) -> String {
    let Some(rest) = message.strip_prefix("invalid type: ") else {
        return message.to_owned();
    };
    let Some((found, expected)) = rest.rsplit_once(", expected ") else {
        return message.to_owned();
    };
    let found = match found {
        "sequence" => "array",
        "map" => "object",
        other => other,
    };
    let expected = match expected {
        "u64" | "usize" => "a whole number".to_owned(),
        "f64" => "a number".to_owned(),
        other => other
            .replace("a map", "an object")
            .replace(" or map", " or object"),
    };
    format!("found {found}, expected {expected}")
}

/// What is wrong with a config value serde refused, naming the field:
/// serde's own message says what it expected, not where.
fn field_problem(value: &Value, whole: serde_json::Error) -> String {
    let Value::Object(fields) = value else {
        return whole.to_string();
    };
    for (k, v) in fields {
        let one = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
        if let Err(e) = serde_json::from_value::<Config>(one) {
            return match v {
                Value::Number(n) if WHOLE_NUMBERS.contains(&k.as_str()) => {
                    // `32000.0` and `1e5` are whole in value: say that the
                    // spelling is what is refused (a JSON writer that
                    // writes floats writes them so).
                    let spelling = match n.as_f64() {
                        Some(f) if f.fract() == 0.0 && f >= 0.0 && f <= u64::MAX as f64 => {
                            " written in digits only (no fraction, no exponent)"
                        }
                        _ => "",
                    };
                    format!(
                        "`{k}` must be a whole number{spelling} from 0 to {}, found {n}",
                        u64::MAX
                    )
                }
                _ if e.to_string().starts_with("unknown field") => {
                    let hint = match AGENT_FIELDS.contains(&k.as_str()) {
                        true => format!(
                            " (`{k}` is a setting of agent mode, read by `ctxgate agent --config`)"
                        ),
                        false => String::new(),
                    };
                    format!("{e}{hint}")
                }
                _ => format!("`{k}`: {}", plain_types(&e.to_string())),
            };
        }
    }
    whole.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lists_every_field_a_config_writes() {
        let written: Vec<String> = match Config::default().to_value() {
            Value::Object(m) => m.keys().cloned().collect(),
            other => panic!("{other}"),
        };
        let mut listed: Vec<String> = FIELDS.iter().map(|f| f.to_string()).collect();
        let mut written = written;
        written.sort();
        listed.sort();
        assert_eq!(written, listed);
    }

    #[test]
    fn a_refused_value_names_its_field() {
        let problem = |json: &str| Config::from_json(json.as_bytes()).unwrap_err().problem;
        assert_eq!(
            problem(r#"{"threshold": 0.5, "contextWindow": "big"}"#),
            r#"config: `contextWindow`: found string "big", expected a whole number"#
        );
        assert_eq!(
            problem(r#"{"threshold": "x"}"#),
            r#"config: `threshold`: found string "x", expected a number"#
        );
        // A value is quoted as written, whatever words it holds.
        assert_eq!(
            problem(r#"{"keepRecent": "sequence, expected map"}"#),
            r#"config: `keepRecent`: found string "sequence, expected map", expected a whole number"#
        );
        assert_eq!(
            problem(r#"{"envelope": [1]}"#),
            "config: `envelope`: found array, expected an object"
        );
        assert!(problem(r#"{"toolOutputMaxBytes": 100}"#).ends_with(
            "(`toolOutputMaxBytes` is a setting of agent mode, read by `ctxgate agent --config`)"
        ));
        assert_eq!(
            problem(r#"{"transportMaxBodyBytes": 1e30}"#),
            "config: `transportMaxBodyBytes` must be a whole number from 0 to 18446744073709551615, found 1e+30"
        );
        assert_eq!(
            problem(r#"{"contextWindow": 32000.0}"#),
            "config: `contextWindow` must be a whole number written in digits only (no fraction, no exponent) from 0 to 18446744073709551615, found 32000.0"
        );
        assert_eq!(
            problem(r#"{"contextWindow": 0.5}"#),
            "config: `contextWindow` must be a whole number from 0 to 18446744073709551615, found 0.5"
        );
        assert_eq!(
            problem(r#"{"keepRecent": -1}"#),
            "config: `keepRecent` must be a whole number from 0 to 18446744073709551615, found -1"
        );
        assert!(problem(r#"{"wireFormat": "xml"}"#)
            .starts_with("config: `wireFormat`: unknown variant `xml`"));
        assert!(
            problem(r#"{"contextWindw": 5}"#).starts_with("config: unknown field `contextWindw`")
        );
        assert_eq!(
            problem("[1]"),
            "config: expected a JSON object of SPEC §2 fields, found an array"
        );
    }

    #[test]
    fn the_envelope_is_kept_as_written() {
        for t in ["-0", "1.50", "1e400", "18446744073709551616", "1.0", "-0.0"] {
            let c =
                Config::from_json(format!(r#"{{"envelope": {{"t": {t}}}}}"#).as_bytes()).unwrap();
            let written: Value = serde_json::from_str(t).unwrap();
            assert_eq!(c.envelope["t"].to_string(), written.to_string(), "{t}");
            assert_eq!(
                Config::from_value(c.to_value()).unwrap().envelope["t"].to_string(),
                written.to_string(),
                "{t} through to_value"
            );
        }
    }

    #[test]
    fn adr_numbers() {
        let c = Config::default();
        assert_eq!(c.effective_window(), 128_000);
        assert_eq!(c.trigger(), 89_600);
        let express = Config {
            transport_max_body_bytes: EXPRESS_DEFAULT_LIMIT,
            ..Config::default()
        };
        assert_eq!(express.effective_window(), 25_600);
        assert_eq!(express.trigger(), 17_920);
    }

    #[test]
    fn unknown_fields_and_bad_values_are_errors() {
        assert!(Config::from_json(br#"{"contextWindo": 5}"#).is_err());
        assert!(Config::from_json(br#"{"threshold": 0}"#).is_err());
        assert!(Config::from_json(br#"{"bytesPerToken": 0}"#).is_err());
        let c = Config::from_json(br#"{"threshold": 0.5, "wireFormat": "openai"}"#).unwrap();
        assert_eq!(c.wire_format, WireFormat::Openai);
        assert_eq!(c.context_window, 128_000);
    }
}
