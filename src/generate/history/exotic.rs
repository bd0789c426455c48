//! Exotic numbers: JSON numbers that stock JSON libraries re-spell or
//! round (`GenConfig::exotic_numbers_percent`).

use std::sync::Arc;

use serde_json::{Number, Value};

use super::Gen;
use crate::generate::rng::SplitMix64;
use crate::generate::Case;

impl Gen<'_, '_, '_> {
    /// Respell or replace some of the case's JSON numbers (tool-call
    /// arguments, extra fields, the envelope) with spellings that stock
    /// JSON libraries change: `1.50`, `12.0`, `1e5`, `-0`, 2^64, `1e400`,
    /// `0.00001`. Only for subjects that keep numbers exactly.
    pub(super) fn exotic_numbers(&mut self, case: &mut Case) {
        let t = &mut self.text;
        let mut touched = 0;
        for m in &mut case.messages {
            for c in m.tool_calls.iter_mut().flatten() {
                let mut args = (*c.arguments).clone();
                touched += exoticise(t, &mut args);
                if touched == 0 {
                    if let Value::Object(o) = &mut args {
                        o.insert("limit".into(), Value::Number(exotic(t, None)));
                        touched += 1;
                    }
                }
                c.arguments = Arc::new(args);
            }
            for v in m.extra.values_mut() {
                touched += exoticise(t, v);
            }
        }
        for v in case.config.envelope.values_mut() {
            touched += exoticise(t, v);
        }
        if touched == 0 {
            case.config
                .envelope
                .insert("topP".into(), Value::Number(exotic(t, None)));
        }
    }
}

/// Replace about a third of the numbers in `v` by exotic spellings;
/// returns how many were replaced.
fn exoticise(t: &mut SplitMix64, v: &mut Value) -> usize {
    match v {
        Value::Number(n) if t.chance(35) => {
            *n = exotic(t, Some(n));
            1
        }
        Value::Array(a) => a.iter_mut().map(|x| exoticise(t, x)).sum(),
        Value::Object(o) => o.values_mut().map(|x| exoticise(t, x)).sum(),
        _ => 0,
    }
}

/// A number spelled as stock JSON libraries would not write it back: the
/// same value as `like` respelled (`653.5` → `653.50`, `12` → `12.0` or
/// `1.2e1`, `0` → `-0`), or a value they cannot keep (2^64, `1e400`).
fn exotic(t: &mut SplitMix64, like: Option<&Number>) -> Number {
    const VALUES: [&str; 9] = [
        "18446744073709551616",
        "9007199254740993",
        "1e400",
        "-1e400",
        "0.00001",
        "0.1000000000000000055511151231257827",
        "5e-324",
        "123456789012345678901234567890.5",
        "-0",
    ];
    let text = match like {
        Some(n) if t.chance(60) => {
            let s = n.as_str();
            match t.below(3) {
                0 if s.contains('.') => format!("{s}0"),
                0 | 1 if !s.contains(['.', 'e', 'E']) => {
                    if s == "0" {
                        "-0".to_owned()
                    } else {
                        format!("{s}.0")
                    }
                }
                _ => format!("{s}e0"),
            }
        }
        _ => (*t.pick(&VALUES)).to_owned(),
    };
    serde_json::from_str(&text).expect("exotic numbers are JSON numbers")
}
