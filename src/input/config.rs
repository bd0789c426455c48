//! The small JSON objects a user hands over beside a history: a config
//! (SPEC §2), a generator config and a request envelope. Each is read under
//! the input cap and must be one JSON object; errors name the file (or the
//! flag, for inline JSON), then the problem.

use std::path::Path;

use serde_json::{Map, Value};

use crate::config::Config;
use crate::error::{json_type, InputError, InputErrorKind};
use crate::generate::GenConfig;
use crate::model::parse_json;

/// A config file: the SPEC §2 config in it, fields it leaves out at their
/// defaults (not yet validated: flags may still change it), and whether it
/// set `wireFormat` itself.
pub struct ConfigFile {
    pub config: Config,
    pub sets_wire_format: bool,
}

/// Read a config file under `cap` bytes.
pub fn read_config(path: &Path, cap: u64) -> Result<ConfigFile, InputError> {
    let name = path.display().to_string();
    let bytes = read_named(path, &name, "the config", cap)?;
    let value = parse_object(&bytes, &name, "config")?;
    let sets_wire_format = value.contains_key("wireFormat");
    let config = Config::from_value(Value::Object(value)).map_err(|e| e.in_file(name.as_str()))?;
    Ok(ConfigFile {
        config,
        sets_wire_format,
    })
}

/// Read a config file and validate it, as a command that takes it alone
/// (`check --config`, `gen --config`) does.
pub fn read_valid_config(path: &Path, cap: u64) -> Result<Config, InputError> {
    let config = read_config(path, cap)?.config;
    config
        .validate()
        .map_err(|e| e.in_file(path.display().to_string()))?;
    Ok(config)
}

/// Read a generator config (`--gen-config`): every field optional, unknown
/// fields rejected.
pub fn read_gen_config(path: &Path, cap: u64) -> Result<GenConfig, InputError> {
    let name = path.display().to_string();
    let bytes = read_named(path, &name, "the gen-config", cap)?;
    GenConfig::from_json(&bytes).map_err(|e| e.in_file(name.as_str()))
}

/// An envelope (`--envelope`): inline JSON when it looks like JSON, else
/// the name of a file holding it.
pub fn read_envelope(arg: &str, cap: u64) -> Result<Map<String, Value>, InputError> {
    // Inline JSON — and an empty argument, which is no file's name: "empty,
    // expected a JSON object", not a file "" that cannot be read.
    if arg.trim_start().starts_with(['{', '[']) || arg.trim().is_empty() {
        parse_object(arg.as_bytes(), "--envelope", "envelope")
    } else {
        let bytes = read_named(Path::new(arg), arg, "the envelope", cap)?;
        parse_object(&bytes, arg, "envelope")
    }
}

/// Read a whole file under the cap, its errors naming it `name`; `what`
/// says which input it is ("the config").
fn read_named(path: &Path, name: &str, what: &str, cap: u64) -> Result<Vec<u8>, InputError> {
    super::read_file(path, what, cap).map_err(|mut e| {
        e.file = Some(name.to_owned());
        e
    })
}

/// Parse `bytes` as one JSON object, naming `name` in errors.
fn parse_object(bytes: &[u8], name: &str, what: &str) -> Result<Map<String, Value>, InputError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(InputError::new(
            InputErrorKind::Empty,
            format!("{what}: empty, expected a JSON object"),
        )
        .in_file(name));
    }
    let value = parse_json(bytes).map_err(|mut e| {
        // A config or an envelope has no messages to point at.
        e.message = None;
        e.problem = format!("{what}: {}", e.problem);
        e.in_file(name)
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(InputError::shape(format!(
            "{what}: expected a JSON object, found {}",
            json_type(&other)
        ))
        .in_file(name)),
    }
}
