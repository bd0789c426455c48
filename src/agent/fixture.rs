//! Agent fixtures: SPEC §7's form with `"op": "agent"`, the script in
//! place of `messages`, the agent's settings as `config`, and the failing
//! request as received (headers redacted; the body as JSON when it is JSON,
//! else as text). `ctxgate agent replay FIXTURE --run CMD` plays the script
//! again and judges it; the known-bugs suite can hold them.
//!
//! ```json
//! {"ctxgate": 1, "name": "results-delivered-3f2a9c01d4e5b677",
//!  "see": "found by ctxgate agent, seed 7, case 12", "op": "agent",
//!  "config": {…}, "script": {"task": …, "turns": […], "final": …, "summaries": […]},
//!  "invariants": ["results-delivered"], "found": "…",
//!  "request": {"index": 3, "method": "POST", "path": "/v1/chat/completions",
//!              "headers": {…}, "body": {…}}}
//! ```

use std::path::Path;

use serde_json::{json, Map, Value};

use super::invariants::AgentInvariant;
use super::script::Script;
use super::settings::Settings;
use super::trace::Recorded;
use crate::error::{json_type, InputError, InputErrorKind};
use crate::fixture::{fnv1a, save_fixture, SavedFile, FIXTURE_VERSION};

/// The largest request body a fixture keeps whole; a longer one keeps its
/// first and last bytes and says how many were left out.
const KEPT_BODY_BYTES: usize = 1 << 20;

/// One agent fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFixture {
    pub name: String,
    pub see: String,
    pub settings: Settings,
    pub script: Script,
    pub invariants: Vec<AgentInvariant>,
    pub found: Option<String>,
    /// The failing request, as a fixture keeps it.
    pub request: Option<Value>,
}

impl AgentFixture {
    /// A fixture for `script` under `settings`, named from its content.
    pub fn new(
        settings: Settings,
        script: Script,
        invariants: Vec<AgentInvariant>,
        see: String,
    ) -> Self {
        let mut f = AgentFixture {
            name: String::new(),
            see,
            settings,
            script,
            invariants,
            found: None,
            request: None,
        };
        let prefix = f.invariants.first().map_or("agent", |i| i.name());
        let body = serde_json::to_vec(&(f.settings.to_value(), &f.script)).expect("serialises");
        f.name = format!("{prefix}-{:016x}", fnv1a(&body));
        f
    }

    /// Keep `r` as the failing request.
    pub fn with_request(mut self, r: &Recorded) -> Self {
        let headers: Map<String, Value> = r
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let body = match crate::model::parse_json(&r.body) {
            Ok(v) if r.body.len() <= KEPT_BODY_BYTES => v,
            _ => Value::String(kept_text(&r.body)),
        };
        self.request = Some(json!({"index": r.index, "method": r.method, "path": r.path,
            "headers": headers, "bodyBytes": r.body_len, "body": body}));
        self
    }

    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("ctxgate".into(), FIXTURE_VERSION.into());
        obj.insert("name".into(), self.name.clone().into());
        obj.insert("see".into(), self.see.clone().into());
        obj.insert("op".into(), "agent".into());
        obj.insert("config".into(), self.settings.to_value());
        obj.insert(
            "script".into(),
            serde_json::to_value(&self.script).expect("serialises"),
        );
        obj.insert(
            "invariants".into(),
            self.invariants.iter().map(|i| i.name()).collect(),
        );
        if let Some(found) = &self.found {
            obj.insert("found".into(), found.clone().into());
        }
        if let Some(r) = &self.request {
            obj.insert("request".into(), r.clone());
        }
        Value::Object(obj)
    }

    /// Read an agent fixture; errors name the field.
    pub fn from_json(value: Value) -> Result<AgentFixture, InputError> {
        let bad = |p: String| InputError::new(InputErrorKind::Fixture, p);
        let Value::Object(mut obj) = value else {
            return Err(bad(format!(
                "a fixture is a JSON object, found {}",
                json_type(&value)
            )));
        };
        crate::fixture::check_version(&obj).map_err(bad)?;
        match obj.get("op").and_then(Value::as_str) {
            Some("agent") => {}
            other => {
                // The other mode's fixture: set aside by the caller, not an
                // error (`AgentFixture` names the mix either way round).
                let op = other.map_or("absent".into(), |o| {
                    format!("{:?}", crate::model::one_line(o))
                });
                return Err(InputError::new(
                    InputErrorKind::AgentFixture,
                    format!("not an agent fixture: `op` is {op} (replay it with `ctxgate replay`)"),
                ));
            }
        }
        let text = |obj: &Map<String, Value>, k: &str| -> Result<Option<String>, InputError> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(bad(format!(
                    "`{k}` must be a string, found {}",
                    json_type(other)
                ))),
            }
        };
        let settings = match obj.remove("config") {
            None => Settings::default(),
            Some(Value::Object(c)) => Settings::from_object(c)?,
            Some(other) => {
                return Err(bad(format!(
                    "`config` must be an object, found {}",
                    json_type(&other)
                )))
            }
        };
        let script: Script = match obj.remove("script") {
            Some(s) => crate::input::from_value_at(&s, "script.").map_err(bad)?,
            None => return Err(bad("an agent fixture needs a `script`".into())),
        };
        // Its files are written into the case's workspace: a name that
        // reaches outside it is refused before anything is written.
        script.check_files().map_err(bad)?;
        let invariants = match obj.get("invariants") {
            None => AgentInvariant::ALL.to_vec(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| {
                    n.as_str()
                        .ok_or_else(|| bad("`invariants` must be an array of names".into()))?
                        .parse::<AgentInvariant>()
                        .map_err(bad)
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(bad(format!(
                    "`invariants` must be an array of names, found {}",
                    json_type(other)
                )))
            }
        };
        Ok(AgentFixture {
            name: text(&obj, "name")?.unwrap_or_default(),
            see: text(&obj, "see")?.unwrap_or_default(),
            settings,
            script,
            invariants,
            found: text(&obj, "found")?,
            request: obj.get("request").cloned(),
        })
    }

    /// Load an agent fixture file of at most `cap` bytes; errors name it.
    pub fn load(path: &Path, cap: u64) -> Result<AgentFixture, InputError> {
        let shown = path.display().to_string();
        let bytes = crate::input::read_file(path, "the fixture", cap)?;
        let value =
            crate::model::parse_json_expecting(&bytes, "a ctxgate agent fixture, a JSON object")
                .map_err(|e| e.in_file(&shown))?;
        AgentFixture::from_json(value).map_err(|e| e.in_file(&shown))
    }

    /// Save as `<dir>/<name>.json`, never replacing a file (see
    /// `fixture::save_fixture`: a file of that name with other content is
    /// kept, and this one saved as `<name>-2.json`).
    pub fn save(&self, dir: &Path) -> std::io::Result<SavedFile> {
        // Safe to `cat`: a subject's or an agent's text may hold terminal
        // controls, written as `\u` escapes that read back the same.
        let mut text = crate::model::text::pretty(&self.to_json());
        text.push('\n');
        save_fixture(dir, &self.name, text.as_bytes())
    }
}

/// Whether a fixture's JSON is an agent fixture (`"op": "agent"`).
pub fn is_agent_fixture(v: &Value) -> bool {
    v.get("op").and_then(Value::as_str) == Some("agent")
}

/// A body that is not kept whole as JSON: its text, its middle left out
/// when long.
fn kept_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.len() <= KEPT_BODY_BYTES {
        return text.into_owned();
    }
    let head = crate::model::truncate_utf8(&text, KEPT_BODY_BYTES / 2);
    let tail_start = (text.len() - KEPT_BODY_BYTES / 2..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    format!(
        "{head}[… {} bytes left out …]{}",
        tail_start - head.len(),
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixture_reads_back_as_written() {
        let case = crate::generate::case_from_seed(3, 1, &Default::default());
        let script = Script::from_case(&case, vec![40, 120]);
        let mut f = AgentFixture::new(
            Settings::default(),
            script,
            vec![AgentInvariant::ResultsDelivered],
            "a test".into(),
        );
        f.found = Some("lost a result".into());
        let back = AgentFixture::from_json(f.to_json()).unwrap();
        assert_eq!(back, f);
        assert!(f.name.starts_with("results-delivered-"));
    }

    /// `agent … --save` never overwrites a fixture (the blind audit's
    /// F3): saved again unchanged it is left as it is; edited, the edit
    /// survives and the new one goes to `<name>-2.json`, which the note says.
    #[test]
    fn saving_again_keeps_an_edited_fixture_and_saves_beside_it() {
        let dir = std::env::temp_dir().join(format!("ctxgate-agent-resave-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let case = crate::generate::case_from_seed(3, 1, &Default::default());
        let f = AgentFixture::new(
            Settings::default(),
            Script::from_case(&case, vec![40]),
            vec![AgentInvariant::ResultsDelivered],
            "a test".into(),
        );
        let first = f.save(&dir).unwrap();
        assert_eq!((first.unchanged, first.kept.len()), (false, 0));
        assert_eq!(first.path, dir.join(format!("{}.json", f.name)));
        let again = f.save(&dir).unwrap();
        assert_eq!(
            (again.path.as_path(), again.unchanged),
            (first.path.as_path(), true)
        );
        assert_eq!(again.note(), None);
        let mut edited = std::fs::read_to_string(&first.path).unwrap();
        edited = edited.replace("\"see\": \"a test\"", "\"see\": \"MY CURATED NOTE\"");
        assert!(edited.contains("MY CURATED NOTE"));
        std::fs::write(&first.path, &edited).unwrap();
        let third = f.save(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(&first.path).unwrap(), edited);
        assert_eq!(third.path, dir.join(format!("{}-2.json", f.name)));
        assert_eq!(third.kept, std::slice::from_ref(&first.path));
        let note = third.note().unwrap();
        assert!(
            note.contains("other content") && note.ends_with(&third.path.display().to_string()),
            "{note}"
        );
        let back = AgentFixture::load(&third.path, 1 << 30).unwrap();
        assert_eq!(back, f);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_compactor_fixture_is_not_an_agent_fixture() {
        let e = AgentFixture::from_json(json!({"ctxgate": 1, "op": "compact", "messages": []}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an agent fixture"), "{e}");
    }
}
