//! Fixtures (SPEC §7): one case per JSON file, language-neutral, replayable
//! against any subject, each with its provenance in `see`.
//!
//! ```json
//! {"ctxgate": 1, "name": "tool-pairing-3f2a9c01d4e5b677",
//!  "see": "why this case exists", "op": "compact", "config": {…},
//!  "messages": […], "invariants": ["tool-pairing"], "found": "what went wrong"}
//! ```
//!
//! Messages are in the engine format unless a `format` field names another.
//! Shrunk counterexamples are saved in this form, values not seeds, named
//! from their content, so a failure found once is replayed for ever by
//! `ctxgate replay` and by `cargo test`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::Config;
use crate::error::{json_type, InputError, InputErrorKind};
use crate::harness::judge_case;
use crate::input::Walked;
use crate::model::value::{make_messages_portable, make_portable};
use crate::model::{parse_json_expecting, read_messages, write_messages, Message, WireFormat};
use crate::oracle::{Invariant, InvariantSet, Verdict, Violation};
use crate::subject::{Fault, Subject};

pub const FIXTURE_VERSION: u64 = 1;

/// The fields of a compactor fixture (SPEC §7, with `expect` and the
/// messages' `format` and `system`). Any other is an error naming it, as
/// in `config`: a misspelt `confg` or `invariant`, ignored, left the
/// fixture judged under defaults it does not say.
pub const FIELDS: [&str; 11] = [
    "ctxgate",
    "name",
    "see",
    "op",
    "config",
    "format",
    "system",
    "messages",
    "invariants",
    "found",
    "expect",
];

/// An unknown fixture field: its name, the known field it is likely a
/// misspelling of, and the fields there are.
fn unknown_field(key: &str) -> InputError {
    let shown = crate::model::one_line(crate::model::truncate_utf8(key, 64));
    let hint = crate::model::text::closest(key, &FIELDS)
        .map(|k| format!("did you mean `{k}`? "))
        .unwrap_or_default();
    InputError::new(
        InputErrorKind::Fixture,
        format!(
            "unknown field `{shown}`: {hint}a fixture's fields are {}",
            FIELDS.map(|k| format!("`{k}`")).join(", ")
        ),
    )
}

/// One fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    pub name: String,
    pub see: String,
    /// `compact` or `estimate`: which op the case exercises.
    pub op: String,
    pub config: Config,
    pub messages: Vec<Message>,
    /// The invariants the case checks.
    pub invariants: InvariantSet,
    /// What a subject did wrong, when the fixture records a finding.
    pub found: Option<String>,
    /// What a correct compactor must answer, where the contract leaves one
    /// answer only (an extension of SPEC §7's format, optional:
    /// docs/contract-notes.md note 43). Replay judges the answer against
    /// it, so that a fixed compactor's right answer is a pass, not a SKIP.
    pub expect: Option<Expect>,
}

/// A fixture's `expect`: the one answer a correct compactor gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// `cannot_fit`: even the minimal output (head + pinned + last
    /// iteration, no summary) is over the ceiling (SPEC §4 step 6), so any
    /// history returned is over it or lacks what must be kept.
    CannotFit,
}

impl Expect {
    pub fn name(self) -> &'static str {
        match self {
            Expect::CannotFit => "cannot_fit",
        }
    }

    /// What a correct compactor must answer to `messages` under `config`,
    /// when the contract leaves one answer only: `cannot_fit` for a
    /// well-formed history whose minimal output is over the ceiling.
    pub fn of(config: &Config, messages: &[Message]) -> Option<Expect> {
        let forced = crate::model::check_well_formed(messages).is_ok()
            && crate::contract::cannot_fit_justified(config, messages);
        forced.then_some(Expect::CannotFit)
    }
}

/// A fixture's `"ctxgate": 1`, compactor's or agent's: the error says what
/// was there instead — nothing, or its JSON type and value (`"1"`, `1.0`
/// and `true` are not the whole number 1).
pub(crate) fn check_version(obj: &Map<String, Value>) -> Result<(), String> {
    let found = match obj.get("ctxgate") {
        Some(v) if v.as_u64() == Some(FIXTURE_VERSION) => return Ok(()),
        None => "nothing (no `ctxgate` field)".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => format!("{} {v}", json_type(v)),
        Some(Value::String(s)) => format!(
            "a string, {:?}",
            crate::model::one_line(&s.chars().take(40).collect::<String>())
        ),
        Some(v) => json_type(v).to_owned(),
    };
    Err(format!(
        "not a ctxgate fixture: `ctxgate` must be the number {FIXTURE_VERSION}, found {found}"
    ))
}

impl Fixture {
    /// A fixture for `messages` under `config`, named from its content:
    /// `<first invariant>-<16 hex digits of a hash of config and messages>`.
    pub fn new(
        config: Config,
        messages: Vec<Message>,
        invariants: InvariantSet,
        see: impl Into<String>,
    ) -> Self {
        let expect = Expect::of(&config, &messages);
        let mut f = Fixture {
            name: String::new(),
            see: see.into(),
            op: if invariants.iter().all(Invariant::needs_estimate) && !invariants.is_empty() {
                "estimate".into()
            } else {
                "compact".into()
            },
            config,
            messages,
            invariants,
            found: None,
            expect: None,
        };
        if f.op == "compact" {
            f.expect = expect;
        }
        f.name = f.content_name();
        f
    }

    /// `<first invariant>-<hash>`, stable for the same config and messages.
    pub fn content_name(&self) -> String {
        let prefix = self
            .invariants
            .iter()
            .next()
            .map(Invariant::name)
            .unwrap_or("case");
        let body = serde_json::to_vec(&(
            self.config.to_value(),
            Value::Array(write_messages(WireFormat::Engine, &self.messages).1),
        ))
        .expect("serialises");
        format!("{prefix}-{:016x}", fnv1a(&body))
    }

    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("ctxgate".into(), FIXTURE_VERSION.into());
        obj.insert("name".into(), self.name.clone().into());
        obj.insert("see".into(), self.see.clone().into());
        obj.insert("op".into(), self.op.clone().into());
        obj.insert("config".into(), self.config.to_value());
        obj.insert(
            "messages".into(),
            Value::Array(write_messages(WireFormat::Engine, &self.messages).1),
        );
        obj.insert(
            "invariants".into(),
            serde_json::json!(self.invariants.names()),
        );
        if let Some(found) = &self.found {
            obj.insert("found".into(), found.clone().into());
        }
        if let Some(expect) = self.expect {
            obj.insert("expect".into(), expect.name().into());
        }
        Value::Object(obj)
    }

    /// Read a fixture from its JSON value. Errors name the field and, for
    /// messages, the index.
    pub fn from_json(value: Value) -> Result<Fixture, InputError> {
        let Value::Object(obj) = value else {
            return Err(InputError::new(
                InputErrorKind::Fixture,
                format!("a fixture is a JSON object, found {}", json_type(&value)),
            ));
        };
        check_version(&obj).map_err(|e| InputError::new(InputErrorKind::Fixture, e))?;
        let text = |k: &str| -> Result<Option<String>, InputError> {
            match obj.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(InputError::new(
                    InputErrorKind::Fixture,
                    format!("`{k}` must be a string, found {}", json_type(other)),
                )),
            }
        };
        let op = text("op")?.unwrap_or_else(|| "compact".into());
        if op == "agent" {
            return Err(InputError::new(
                InputErrorKind::AgentFixture,
                "an agent fixture (`\"op\": \"agent\"`): play it with `ctxgate agent replay FILE --run CMD`",
            ));
        }
        if op != "compact" && op != "estimate" {
            return Err(InputError::new(
                InputErrorKind::Fixture,
                format!("`op` must be \"compact\" or \"estimate\", found {op:?}"),
            ));
        }
        if let Some(key) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(unknown_field(key));
        }
        let config = match obj.get("config") {
            None => Config::default(),
            Some(c) => Config::from_value(c.clone())?,
        };
        let format = match text("format")? {
            None => WireFormat::Engine,
            Some(f) => WireFormat::parse(&f).ok_or_else(|| {
                InputError::new(InputErrorKind::Fixture, format!("unknown `format` {f:?}"))
            })?,
        };
        let raw = match obj.get("messages") {
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(InputError::new(
                    InputErrorKind::Fixture,
                    format!("`messages` must be an array, found {}", json_type(other)),
                ))
            }
            None => {
                return Err(InputError::new(
                    InputErrorKind::Fixture,
                    "a fixture needs `messages`",
                ))
            }
        };
        let messages = read_messages(format, obj.get("system"), raw)?;
        let invariants = match obj.get("invariants") {
            None => InvariantSet::all(),
            Some(Value::Array(names)) => {
                let list: Vec<&str> = names.iter().map(|n| n.as_str().unwrap_or("?")).collect();
                InvariantSet::parse_list(&list.join(","))
                    .map_err(|p| InputError::new(InputErrorKind::Fixture, p))?
            }
            Some(other) => {
                return Err(InputError::new(
                    InputErrorKind::Fixture,
                    format!(
                        "`invariants` must be an array of names, found {}",
                        json_type(other)
                    ),
                ))
            }
        };
        let expect = match text("expect")?.as_deref() {
            None => None,
            Some("cannot_fit") if op == "compact" => Some(Expect::CannotFit),
            Some("cannot_fit") => {
                return Err(InputError::new(
                    InputErrorKind::Fixture,
                    format!("`expect` is an answer to `compact`, and this fixture's `op` is {op:?}"),
                ))
            }
            Some(other) => {
                return Err(InputError::new(
                    InputErrorKind::Fixture,
                    format!(
                        "`expect` must be \"cannot_fit\" (the one answer a correct compactor gives), found {:?}",
                        crate::model::one_line(crate::model::truncate_utf8(other, 64))
                    ),
                ))
            }
        };
        if let Some(expect) = expect {
            expect_consistent(expect, &config, &messages)?;
        }
        Ok(Fixture {
            name: text("name")?.unwrap_or_default(),
            see: text("see")?.unwrap_or_default(),
            op,
            config,
            messages,
            invariants,
            found: text("found")?,
            expect,
        })
    }

    /// Load a fixture file (at most `input::DEFAULT_MAX_INPUT_BYTES`);
    /// errors name the file.
    pub fn load(path: &Path) -> Result<Fixture, InputError> {
        Fixture::load_capped(path, crate::input::DEFAULT_MAX_INPUT_BYTES)
    }

    /// Load a fixture file of at most `cap` bytes; errors name the file.
    pub fn load_capped(path: &Path, cap: u64) -> Result<Fixture, InputError> {
        let shown = path.display().to_string();
        let bytes = crate::input::read_file(path, "the fixture", cap)?;
        let value = parse_json_expecting(&bytes, "a ctxgate fixture, a JSON object")
            .map_err(|e| e.in_file(&shown))?;
        Fixture::from_json(value).map_err(|e| e.in_file(&shown))
    }

    /// Save as `<dir>/<name>.json` (pretty-printed, one case a file),
    /// never replacing a file: see [`save_fixture`].
    pub fn save(&self, dir: &Path) -> std::io::Result<SavedFile> {
        // Safe to `cat`: a subject's or an agent's text may hold terminal
        // controls, written as `\u` escapes that read back the same.
        let mut text = crate::model::text::pretty(&self.to_json());
        text.push('\n');
        save_fixture(dir, &self.name, text.as_bytes())
    }
}

/// Where [`save_fixture`] put a fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedFile {
    /// The fixture's file.
    pub path: PathBuf,
    /// It was there already, byte for byte: left as it was.
    pub unchanged: bool,
    /// Files of the fixture's name found there with other content (a
    /// fixture saved by another version, a `see` note a user added), each
    /// left as it was.
    pub kept: Vec<PathBuf>,
}

impl SavedFile {
    /// What a run says of a fixture saved under another name than its
    /// own, because a file of its name holds something else.
    pub fn note(&self) -> Option<String> {
        let first = self.kept.first()?;
        let shown = |p: &Path| crate::model::one_line(&p.display().to_string());
        Some(format!(
            "{} is there with other content (edited?): left as it is; {} {}",
            shown(first),
            if self.unchanged {
                "this fixture is already saved as"
            } else {
                "this fixture saved as"
            },
            shown(&self.path)
        ))
    }
}

/// Say on stderr a [`SavedFile::note`] (`ctxgate: note: …`).
pub fn say_saved(note: &str) {
    use std::io::Write as _;
    let line = format!("ctxgate: note: {note}\n");
    let _ = std::io::stderr()
        .lock()
        .write_all(crate::model::text::for_log(&line).as_bytes());
}

/// The most names `<name>-K.json` a fixture is tried under.
const SAVE_NAMES: u32 = 1000;

/// Save `bytes` as `<dir>/<name>.json` without ever replacing a file: a
/// file of that name with the same bytes is left as it is (the fixture is
/// saved); one with other bytes (a user's `see` note, say) is kept, and the
/// fixture goes to `<name>-2.json`, `-3`, … — the first that is free or
/// already holds these bytes. Written to a new temporary file in `dir`
/// (created exclusively: never an existing file or a planted symlink),
/// then linked to its name, which fails rather than replace anything there;
/// a symlink at a name counts as other content and is never followed.
pub fn save_fixture(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<SavedFile> {
    crate::subject::reaper::wait_if_interrupted();
    std::fs::create_dir_all(dir)?;
    let mut kept = Vec::new();
    let mut k = 1;
    while k <= SAVE_NAMES {
        let path = if k == 1 {
            dir.join(format!("{name}.json"))
        } else {
            dir.join(format!("{name}-{k}.json"))
        };
        let free = match std::fs::symlink_metadata(&path) {
            Ok(_) => false,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(e),
        };
        if free {
            match write_new_no_replace(dir, &path, bytes) {
                Ok(()) => {
                    return Ok(SavedFile {
                        path,
                        unchanged: false,
                        kept,
                    })
                }
                // Taken since: looked at as any file there is.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        if holds(&path, bytes)? {
            return Ok(SavedFile {
                path,
                unchanged: true,
                kept,
            });
        }
        kept.push(path);
        k += 1;
    }
    Err(std::io::Error::other(format!(
        "{name}.json and {} more names taken by other content",
        SAVE_NAMES - 1
    )))
}

/// Whether `path` is a regular file (not a symlink) of exactly `bytes`.
fn holds(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() || meta.len() != bytes.len() as u64 {
        return Ok(false);
    }
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(_) => return Ok(false),
    };
    let mut have = Vec::with_capacity(bytes.len());
    (&mut file)
        .take(bytes.len() as u64 + 1)
        .read_to_end(&mut have)?;
    Ok(have == bytes)
}

/// Write `bytes` to a fresh file in `dir`, then give it the name `path`
/// without replacing anything there (`AlreadyExists` if the name is
/// taken): a hard link, then the temporary name removed. On a file system
/// without hard links, the file is created at `path` exclusively instead.
pub(crate) fn write_new_no_replace(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let write_new = |p: &Path| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)?;
        let written = file.write_all(bytes).and_then(|_| file.sync_all());
        if written.is_err() {
            let _ = std::fs::remove_file(p);
        }
        written
    };
    for _ in 0..100 {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(".ctxgate-{}-{n}.tmp", std::process::id()));
        match write_new(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        return match linked {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
            // No hard links here (a FAT or some network file system):
            // created in place, exclusively — never replacing either.
            Err(_) => write_new(path),
        };
    }
    Err(std::io::Error::other(
        "no free temporary name in the folder",
    ))
}

/// `--save DIR` can hold fixtures, checked before the first case by doing
/// what saving does: the folder is made, a file is created in it and
/// removed, and the folders this check made are removed again. Asking
/// (`access(2)`) is not enough: root is allowed everything it asks about,
/// and `/proc` refuses new files whatever the permission bits say.
pub fn check_save_dir(dir: &Path) -> std::io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    // The folders this check must make, deepest first.
    let mut made = Vec::new();
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder",
                    at.display()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                made.push(at.to_path_buf());
                at = match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
            }
            Err(e) => return Err(e),
        }
    }
    let tried = std::fs::create_dir_all(dir).and_then(|()| {
        let probe = dir.join(format!(".ctxgate-save-probe-{}", std::process::id()));
        let written = std::fs::File::create_new(&probe)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{}"));
        let _ = std::fs::remove_file(&probe);
        written
    });
    for d in &made {
        let _ = std::fs::remove_dir(d);
    }
    tried
}

/// What replaying one fixture against a subject gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Replayed {
    /// Every invariant judged held; how many were judged.
    Held { judged: usize },
    /// Some invariant failed.
    Failed(Vec<Violation>),
    /// The subject faulted.
    Fault(Fault),
    /// Nothing was judged, and why: no invariant both asked for and
    /// claimed, or none applied. A replay that judged nothing is not a pass.
    Skipped { why: String },
}

impl Replayed {
    /// The fixture still shows a problem: an invariant failed or the subject faulted.
    pub fn reproduces(&self) -> bool {
        matches!(self, Replayed::Failed(_) | Replayed::Fault(_))
    }
}

/// Replay `fixture` against `subject`. A subject that does not claim exact
/// numbers is sent the fixture's numbers in their portable spelling where
/// the value has one (`1.50` as `1.5`: the same value, and the spelling its
/// JSON library writes back); `unportable` says how many had none (2^64,
/// `1e400`), which such a subject's library may change.
pub fn replay(subject: &mut dyn Subject, fixture: &Fixture) -> (Replayed, usize) {
    replay_claiming(subject, fixture, InvariantSet::empty())
}

/// How many times a replay runs a fixture whose judged invariants include
/// `deterministic` or `idempotent`, stopping at the first run that fails.
/// `check` judges those by one second run (the same input again; the output
/// compacted again), so a subject that differs only some of the time is
/// caught on some cases and not others, and a replay that ran the pair once
/// reproduced its fixture only as often as the subject differs: 3 of 6
/// replays of a subject that differs half the time. Eight runs miss a
/// difference that shows half the time once in 256; a subject that is
/// deterministic pays eight runs of one small fixture.
pub const REPEAT_TRIES: usize = 8;

/// [`replay`], judging the fixture's invariants of `explore` too where the
/// subject does not claim them but can be judged on them (`replay --claim`,
/// `check --claim` with `--with-suite`): a fixture saved by an exploration
/// replays with the same `--claim`.
pub fn replay_claiming(
    subject: &mut dyn Subject,
    fixture: &Fixture,
    explore: InvariantSet,
) -> (Replayed, usize) {
    let mut config = fixture.config.clone();
    let mut messages = fixture.messages.clone();
    let mut unportable = 0;
    if !subject.info().exact_numbers {
        unportable += make_messages_portable(&mut messages);
        unportable += config
            .envelope
            .values_mut()
            .map(make_portable)
            .sum::<usize>();
    }
    let asked = fixture.invariants;
    let info = subject.info();
    let explored = explore.iter().filter(|i| info.unjudgeable(*i).is_none());
    let claimed = info.claimed().union(explored.collect());
    if !subject.info().content_parts && messages.iter().any(|m| !m.content.parts().is_empty()) {
        let why = "the fixture's history holds content parts (images), and the subject takes text only (its hello's `contentParts: false`)".to_owned();
        return (Replayed::Skipped { why }, unportable);
    }
    let formats = subject.info().wire_formats;
    if !formats.contains(config.wire_format) {
        let why = format!(
            "the fixture's body is measured in {}, and the subject measures only {} (its hello's `wireFormats`)",
            config.wire_format, formats
        );
        return (Replayed::Skipped { why }, unportable);
    }
    let unjudgeable = asked.iter().find_map(|i| Some((i, info.unjudgeable(i)?)));
    if let (true, Some((inv, why))) = (asked.intersect(claimed).is_empty(), unjudgeable) {
        let why = format!("the subject cannot be judged on {inv}: {why}");
        return (Replayed::Skipped { why }, unportable);
    }
    if asked.intersect(claimed).is_empty() {
        let why = match asked.is_empty() {
            true => "the subject claims none of the fixture's invariants (the fixture names none)"
                .to_owned(),
            false => format!(
                "the subject claims none of the fixture's invariants ({names}); `--claim {names}` judges them anyway",
                names = asked.names().join(",")
            ),
        };
        return (Replayed::Skipped { why }, unportable);
    }
    let judged = asked.intersect(claimed);
    let tries =
        match judged.contains(Invariant::Deterministic) || judged.contains(Invariant::Idempotent) {
            true => REPEAT_TRIES,
            false => 1,
        };
    let mut result = judge_case(subject, &config, &messages, judged);
    for _ in 1..tries {
        if result.fault.is_some() || result.violations().next().is_some() {
            break;
        }
        result = judge_case(subject, &config, &messages, judged);
    }
    if let Some(fault) = result.fault {
        return (Replayed::Fault(fault), unportable);
    }
    let mut violations: Vec<Violation> = result.violations().cloned().collect();
    // The fixture's `expect`, judged on the answer: the expected answer
    // counts as judged; another one fails where the subject is judged on
    // the invariant whose rule it is (body-under-ceiling).
    let expected = fixture
        .expect
        .and_then(|e| expect_met(e, &config, &messages, &result));
    if let Some(Err(v)) = &expected {
        if claimed.contains(Invariant::BodyUnderCeiling)
            && !violations
                .iter()
                .any(|x| x.invariant == Invariant::BodyUnderCeiling)
        {
            violations.push(v.clone());
        }
    }
    if !violations.is_empty() {
        return (Replayed::Failed(violations), unportable);
    }
    let judged = result
        .verdicts
        .iter()
        .filter(|(_, v)| *v == Verdict::Pass)
        .count()
        + matches!(expected, Some(Ok(()))) as usize;
    if judged == 0 {
        let mut reasons: Vec<String> = result
            .verdicts
            .iter()
            .filter_map(|(i, v)| match v {
                Verdict::NotApplicable(why) => Some(format!("{i}: {why}")),
                _ => None,
            })
            .collect();
        reasons.dedup();
        return (
            Replayed::Skipped {
                why: format!("no invariant applied ({})", reasons.join("; ")),
            },
            unportable,
        );
    }
    (Replayed::Held { judged }, unportable)
}

/// Whether the answer in `result` is the one `expect` names; if not, the
/// violation that says so (under `body-under-ceiling`, whose rule it is).
/// `None` when no `compact` was answered.
fn expect_met(
    expect: Expect,
    config: &Config,
    messages: &[Message],
    result: &crate::harness::CaseResult,
) -> Option<Result<(), Violation>> {
    use crate::subject::CompactAnswer;
    let Expect::CannotFit = expect;
    let minimal = crate::contract::minimal_body(config, messages);
    let ceiling = config.transport_max_body_bytes;
    let answered = match result.answer.as_ref()? {
        CompactAnswer::CannotFit { .. } => return Some(Ok(())),
        CompactAnswer::Messages(o) => format!(
            "a history of {} message(s), {} bytes of body",
            o.len(),
            crate::body::body_bytes(config, o)
        ),
        CompactAnswer::InvalidInput { message } => format!("invalid_input ({message})"),
    };
    Some(Err(Violation::new(
        Invariant::BodyUnderCeiling,
        format!(
            "the fixture expects cannot_fit (`expect`): its minimal output (head + pinned + last iteration) is {minimal} bytes, over the ceiling {ceiling}, so any history is over the ceiling or lacks what must be kept; the subject answered {answered}"
        ),
    )
    .number("minimal", minimal)
    .number("ceiling", ceiling)))
}

/// A fixture's `expect` agrees with its own config and history: `cannot_fit`
/// is the one right answer only to a well-formed history whose minimal
/// output (head + pinned + last iteration, no summary) is over the ceiling
/// ([`Expect::of`], which `check` writes it by). A fixture that says so of
/// one that fits is bad input: replayed, it would fail a correct compactor
/// with a false message, and `--expect-failures` (or a suite of known
/// bugs) would count that as a bug still there.
fn expect_consistent(
    expect: Expect,
    config: &Config,
    messages: &[Message],
) -> Result<(), InputError> {
    let Expect::CannotFit = expect;
    let inconsistent = |why: String| {
        InputError::new(
            InputErrorKind::Fixture,
            format!(
                "the fixture is inconsistent: expect is {}, but {why}",
                expect.name()
            ),
        )
    };
    if let Err(e) = crate::model::check_well_formed(messages) {
        let at = e
            .message
            .map(|i| format!("message {i}: "))
            .unwrap_or_default();
        return Err(inconsistent(format!(
            "its history is not well-formed ({at}{}), to which the one right answer is invalid_input (SPEC §4 takes a well-formed history)",
            e.problem
        )));
    }
    let minimal = crate::contract::minimal_body(config, messages);
    let ceiling = config.transport_max_body_bytes;
    if minimal <= ceiling {
        let relation = match minimal == ceiling {
            true => "at",
            false => "under",
        };
        return Err(inconsistent(format!(
            "its minimal output (head, pinned, last iteration) is {minimal} bytes, {relation} the ceiling {ceiling}: a correct compactor returns a history that fits (remove `expect`, or correct `config`)"
        )));
    }
    Ok(())
}

/// The compactor fixtures among `files` (each parsed, or the first error),
/// and the agent fixtures set aside: a folder such as the known-bugs suite
/// may hold both, and each command plays its own.
#[allow(clippy::type_complexity)]
pub fn load_compactor_fixtures(
    files: Vec<PathBuf>,
    cap: u64,
) -> Result<(Vec<(PathBuf, Fixture)>, Vec<PathBuf>), InputError> {
    let (mut fixtures, mut agents) = (Vec::new(), Vec::new());
    for p in files {
        match Fixture::load_capped(&p, cap) {
            Ok(f) => fixtures.push((p, f)),
            Err(e) if e.kind == InputErrorKind::AgentFixture => agents.push(p),
            Err(e) => return Err(e),
        }
    }
    Ok((fixtures, agents))
}

/// Every fixture file under `paths`, sorted: files as given, folders
/// searched recursively for `*.json` by the one folder walker
/// ([`mod@crate::input::walk`]: regular files only, symlinks followed and named,
/// loops, FIFOs and devices skipped and named in [`Walked::notes`]).
pub fn collect(paths: &[PathBuf]) -> Result<Walked, InputError> {
    crate::input::walk(paths, &["json"])
}

/// FNV-1a, 64 bits: a stable content hash for names (not for security).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture is never saved over a file: the same bytes are left as
    /// they are, other bytes (or a symlink) kept and the fixture saved
    /// under the next free `-K` name; no temporary file is left.
    #[test]
    fn save_fixture_never_replaces_a_file() {
        let dir = std::env::temp_dir().join(format!("ctxgate-save-fixture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = save_fixture(&dir, "f", b"one").unwrap();
        assert_eq!((a.path.clone(), a.unchanged), (dir.join("f.json"), false));
        assert!(save_fixture(&dir, "f", b"one").unwrap().unchanged);
        let b = save_fixture(&dir, "f", b"two").unwrap();
        assert_eq!(b.path, dir.join("f-2.json"));
        assert_eq!(b.kept, [dir.join("f.json")]);
        assert_eq!(std::fs::read(dir.join("f.json")).unwrap(), b"one");
        std::os::unix::fs::symlink(dir.join("f.json"), dir.join("f-3.json")).unwrap();
        let c = save_fixture(&dir, "f", b"three").unwrap();
        assert_eq!(c.path, dir.join("f-4.json"));
        assert_eq!(std::fs::read(dir.join("f.json")).unwrap(), b"one");
        assert!(std::fs::symlink_metadata(dir.join("f-3.json"))
            .unwrap()
            .file_type()
            .is_symlink());
        let again = save_fixture(&dir, "f", b"two").unwrap();
        assert_eq!((again.path, again.unchanged), (dir.join("f-2.json"), true));
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["f-2.json", "f-3.json", "f-4.json", "f.json"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A wrong `ctxgate` says what it found: its type and value (the blind
    /// audit's F10: `"1"`, `1.0` and `true` were "found nothing").
    #[test]
    fn a_wrong_version_names_what_was_found() {
        let found = |v: Value| {
            let problem = Fixture::from_json(serde_json::json!({"ctxgate": v, "messages": []}))
                .unwrap_err()
                .problem;
            problem.split("found ").nth(1).unwrap().to_owned()
        };
        assert_eq!(found("1".into()), r#"a string, "1""#);
        assert_eq!(found(serde_json::json!(1.0)), "a number 1.0");
        assert_eq!(found(true.into()), "a boolean true");
        assert_eq!(found(2.into()), "a number 2");
        assert_eq!(found(Value::Null), "null");
        assert_eq!(found(serde_json::json!([1])), "an array");
        let absent = Fixture::from_json(serde_json::json!({"messages": []})).unwrap_err();
        assert!(absent
            .problem
            .ends_with("found nothing (no `ctxgate` field)"));
    }

    #[cfg(feature = "agent")]
    #[test]
    fn an_agent_fixture_names_its_wrong_version_too() {
        assert!(
            crate::agent::AgentFixture::from_json(serde_json::json!({"ctxgate": "1"}))
                .unwrap_err()
                .problem
                .ends_with(r#"found a string, "1""#)
        );
    }

    /// A saved fixture is safe to `cat`: DEL, C1 and bidirectional
    /// controls in its text are `\u` escapes, which read back the same (a
    /// blind audit found an agent's results saved with them raw).
    #[test]
    fn a_saved_fixture_holds_no_raw_control_and_reads_back_the_same() {
        let hostile = "ok\u{7f}\u{9b}2J\u{202e}gnp.exe\u{2066}\u{1b}]0;x\u{7}";
        let msgs = vec![Message::system("s"), Message::user(hostile)];
        let set = InvariantSet::parse_list("tool-pairing").unwrap();
        let f = Fixture::new(Config::default(), msgs, set, hostile);
        let dir = std::env::temp_dir().join(format!("ctxgate-fixture-raw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let saved = f.save(&dir).unwrap();
        let text = std::fs::read_to_string(&saved.path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            !text
                .chars()
                .any(|c| crate::model::text::is_control(c) && c != '\n'),
            "{text}"
        );
        assert!(text.contains("\\u009b2J\\u202egnp.exe"), "{text}");
        let back = Fixture::from_json(serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn round_trip_and_stable_name() {
        let msgs = vec![Message::system("s"), Message::user("hi")];
        let set = InvariantSet::parse_list("tool-pairing").unwrap();
        let f = Fixture::new(Config::default(), msgs.clone(), set, "a test");
        assert!(f.name.starts_with("tool-pairing-"));
        assert_eq!(
            f.name,
            Fixture::new(Config::default(), msgs, set, "other").name
        );
        let back = Fixture::from_json(f.to_json()).unwrap();
        assert_eq!(back, f);
    }

    /// An unknown top-level field is an error naming it and the field it
    /// is likely a misspelling of, as an unknown field in `config` is: a
    /// `confg` ignored left the fixture judged under the default config,
    /// an `invariant` under every invariant (the blind audit's F6).
    #[test]
    fn unknown_fields_are_errors_that_suggest_the_field_meant() {
        let with = |key: &str| {
            let mut v =
                serde_json::json!({"ctxgate": 1, "messages": [{"role": "user", "content": "u"}]});
            v[key] = serde_json::json!({});
            Fixture::from_json(v).map(|_| ()).map_err(|e| e.problem)
        };
        for (typo, meant) in [
            ("confg", "config"),
            ("invariant", "invariants"),
            ("Invariants", "invariants"),
            ("massages", "messages"),
            ("expects", "expect"),
        ] {
            let problem = with(typo).unwrap_err();
            assert!(
                problem.starts_with(&format!("unknown field `{typo}`: did you mean `{meant}`?")),
                "{problem}"
            );
        }
        let problem = with("extraField").unwrap_err();
        assert!(
            problem.starts_with("unknown field `extraField`: a fixture's fields are `ctxgate`, "),
            "{problem}"
        );
        assert!(with("config").is_ok());
        // An agent fixture's own fields are agent replay's to read.
        let agent =
            Fixture::from_json(serde_json::json!({"ctxgate": 1, "op": "agent", "script": {}}));
        assert_eq!(agent.unwrap_err().kind, InputErrorKind::AgentFixture);
    }

    #[test]
    fn bad_fixtures_are_errors() {
        assert!(Fixture::from_json(serde_json::json!({"name": "x"})).is_err());
        let e =
            Fixture::from_json(serde_json::json!({"ctxgate": 1, "messages": [{"role": "bot"}]}))
                .unwrap_err();
        assert_eq!(e.message, Some(0));
        let e = Fixture::from_json(
            serde_json::json!({"ctxgate": 1, "messages": [], "invariants": ["nope"]}),
        )
        .unwrap_err();
        assert!(e.problem.contains("nope"));
    }
}
