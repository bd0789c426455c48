//! A check report's JSON as serde types: what `--report json` writes, in
//! the order its fields are declared, and what `report merge` reads back
//! (serde's errors name the field that is missing or wrong). The gate's
//! report is `baseline/json.rs`, on the parts here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::check::{CheckReport, FailingCase, FailingCases, Failure, FaultRecord, Saved, Tally};
use crate::fixture::Fixture;
use crate::oracle::{Invariant, InvariantSet, Violation};
use crate::run::RunFacts;
use crate::subject::{Fault, SubjectInfo, Traffic};

use super::ReplayHint;

fn yes() -> bool {
    true
}

/// A subject as a report names it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SubjectJson {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    format: String,
    #[serde(default = "yes")]
    estimates: bool,
    #[serde(default)]
    claims: Option<Vec<String>>,
    /// `exact` or `portable`: a check's report says it, a gate's does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    numbers: Option<String>,
    #[serde(default = "yes")]
    content_parts: bool,
    #[serde(default)]
    wire_formats: Vec<String>,
}

impl SubjectJson {
    pub(crate) fn of(i: &SubjectInfo, with_numbers: bool) -> SubjectJson {
        let numbers = if i.exact_numbers { "exact" } else { "portable" };
        SubjectJson {
            name: i.name.clone(),
            version: i.version.clone(),
            format: i.format.as_str().to_owned(),
            estimates: i.estimates,
            claims: i.invariants.map(|s| owned(s.names())),
            numbers: with_numbers.then(|| numbers.to_owned()),
            content_parts: i.content_parts,
            wire_formats: owned(i.wire_formats.names()),
        }
    }

    pub(crate) fn info(self) -> Result<SubjectInfo, String> {
        let mut info = SubjectInfo::new(self.name, self.version);
        info.format = crate::model::WireFormat::parse(&self.format).unwrap_or_default();
        info.estimates = self.estimates;
        info.exact_numbers = self.numbers.as_deref() == Some("exact");
        info.content_parts = self.content_parts;
        info.wire_formats = crate::model::WireFormats::from_names(&self.wire_formats);
        if let Some(names) = self.claims {
            info.invariants = Some(InvariantSet::parse_list(&names.join(","))?);
        }
        Ok(info)
    }
}

pub(crate) fn owned(names: Vec<&str>) -> Vec<String> {
    names.into_iter().map(str::to_owned).collect()
}

/// What a failure's case was before it was shrunk.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Original {
    messages: u64,
    body_bytes: u64,
}

/// A failure, of a check (`saveError`) or a gate's regression
/// (`baseline`, `replayBaseline`).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FailureJson {
    invariant: Invariant,
    case: u64,
    /// A check's failure of an invariant the subject does not claim,
    /// judged because the run explored it (`--claim`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    explored: bool,
    /// A check's failure: the shape of its minimal case (`run::shape`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shape: Option<String>,
    violation: Violation,
    /// A regression's: what the baseline did on the shrunk case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) baseline: Option<String>,
    #[serde(default)]
    original: Original,
    fixture: Value,
    #[serde(default)]
    answer: Option<Value>,
    #[serde(default)]
    saved: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    save_error: Option<Option<String>>,
    #[serde(default)]
    replay: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replay_baseline: Option<Option<String>>,
}

impl FailureJson {
    /// A check's failure; a gate's regression when `baseline` is given
    /// (what the baseline did, and how it replays).
    pub(crate) fn of(
        f: &Failure,
        hint: &ReplayHint,
        baseline: Option<(&str, &ReplayHint)>,
    ) -> FailureJson {
        let saved = path(&f.saved);
        FailureJson {
            invariant: f.invariant,
            case: f.case_index,
            explored: false,
            shape: None,
            violation: f.violation.clone(),
            baseline: baseline.map(|(b, _)| b.to_owned()),
            original: Original {
                messages: f.original_size.0 as u64,
                body_bytes: f.original_size.1,
            },
            fixture: f.fixture.to_json(),
            answer: f
                .answer
                .as_ref()
                .map(|a| super::diff::answer_json(&f.fixture.messages, a)),
            save_error: baseline.is_none().then(|| save_error(&f.saved)),
            replay: saved.as_deref().map(|p| hint.command(p)),
            replay_baseline: baseline.map(|(_, h)| saved.as_deref().map(|p| h.command(p))),
            saved,
        }
    }

    pub(crate) fn failure(self) -> Result<Failure, String> {
        Ok(Failure {
            invariant: self.invariant,
            case_index: self.case,
            violation: self.violation,
            original_size: (self.original.messages as usize, self.original.body_bytes),
            fixture: fixture(self.fixture)?,
            saved: saved(self.saved, self.save_error.flatten()),
            answer: self.answer.as_ref().and_then(super::diff::answer_from_json),
        })
    }
}

pub(crate) fn fixture(v: Value) -> Result<Fixture, String> {
    Fixture::from_json(v).map_err(|e| format!("a fixture: {e}"))
}

pub(crate) fn path(saved: &Saved) -> Option<String> {
    saved.path().map(|p| p.display().to_string())
}

fn save_error(saved: &Saved) -> Option<String> {
    match saved {
        Saved::Failed(why) => Some(why.clone()),
        _ => None,
    }
}

pub(crate) fn saved(path: Option<String>, error: Option<String>) -> Saved {
    match (path, error) {
        (Some(p), _) => Saved::At(p.into()),
        (None, Some(e)) => Saved::Failed(e),
        (None, None) => Saved::NotAsked,
    }
}

/// A check's fault kind: its first case, its fixture, how many cases.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FaultJson {
    #[serde(flatten)]
    fault: Fault,
    count: u64,
    case: u64,
    fixture: Value,
    #[serde(default)]
    saved: Option<String>,
    #[serde(default)]
    save_error: Option<String>,
}

impl FaultJson {
    fn of(f: &FaultRecord) -> FaultJson {
        FaultJson {
            fault: f.fault.clone(),
            count: f.count,
            case: f.case_index,
            fixture: f.fixture.to_json(),
            saved: path(&f.saved),
            save_error: save_error(&f.saved),
        }
    }

    fn record(self) -> Result<FaultRecord, String> {
        Ok(FaultRecord {
            case_index: self.case,
            fault: self.fault,
            fixture: fixture(self.fixture)?,
            saved: saved(self.saved, self.save_error),
            count: self.count,
        })
    }
}

/// What a run as a whole did, as both reports write it, flattened among
/// their fields; its time is apart (`seconds`), for each report writes it
/// in a place of its own.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FactsJson {
    stopped_by_time: bool,
    #[serde(default)]
    image_cases_not_sent: u64,
    #[serde(default)]
    wire_formats: Vec<String>,
    #[serde(default)]
    cases_re_aimed_to_wire_formats: u64,
    #[serde(default)]
    cases_aimed_at_own_point: u64,
    #[serde(default)]
    cases_on_own_point: u64,
    /// Written when not 0 (and absent from the reports before it).
    #[serde(default, skip_serializing_if = "is_zero")]
    faulted_cases_with_content_parts: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl FactsJson {
    pub(crate) fn of(run: &RunFacts) -> FactsJson {
        FactsJson {
            stopped_by_time: run.stopped_by_time,
            image_cases_not_sent: run.images_not_sent,
            wire_formats: owned(run.wire_formats.names()),
            cases_re_aimed_to_wire_formats: run.formats_re_aimed,
            cases_aimed_at_own_point: run.own_aimed,
            cases_on_own_point: run.own_on_point,
            faulted_cases_with_content_parts: run.faulted_on_parts,
        }
    }

    pub(crate) fn run(self, seconds: f64) -> RunFacts {
        RunFacts {
            elapsed: std::time::Duration::from_secs_f64(seconds.max(0.0)),
            stopped_by_time: self.stopped_by_time,
            images_not_sent: self.image_cases_not_sent,
            formats_re_aimed: self.cases_re_aimed_to_wire_formats,
            own_aimed: self.cases_aimed_at_own_point,
            own_on_point: self.cases_on_own_point,
            wire_formats: crate::model::WireFormats::from_names(&self.wire_formats),
            faulted_on_parts: self.faulted_cases_with_content_parts,
        }
    }
}

/// The version of ctxgate that writes a report, as its JSON records it
/// (`ctxgateVersion`): `report merge` joins the reports of this version
/// only, for what a field means may change between versions.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The part of the seed's cases a report is of, as its JSON says it: a
/// shard's `shard` (`"K/N"`), or the one case `check --case N` reran
/// (`case`: N) — not a shard, so not written as one.
pub(crate) fn part(shard: Option<crate::check::Shard>) -> (Option<String>, Option<u64>) {
    match shard {
        Some(s) if s.one_case => (None, Some(s.case())),
        Some(s) => (Some(s.to_string()), None),
        None => (None, None),
    }
}

/// What [`part`] wrote.
pub(crate) fn shard(
    s: Option<&str>,
    case: Option<u64>,
) -> Result<Option<crate::check::Shard>, String> {
    match (s, case) {
        (Some(_), Some(_)) => Err("both `shard` and `case`: a run is a shard or one case".into()),
        (None, Some(n)) => crate::check::Shard::alone_case(n)
            .map(Some)
            .ok_or_else(|| format!("`case`: {n} is too large")),
        (s, None) => s.map(crate::check::Shard::parse).transpose(),
    }
}

/// A check's report.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CheckJson {
    #[serde(default)]
    ok: bool,
    /// Absent from the reports of a ctxgate older than this field.
    #[serde(default)]
    ctxgate_version: Option<String>,
    subject: SubjectJson,
    seed: u64,
    #[serde(default)]
    replay_with: Vec<String>,
    #[serde(default)]
    shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    case: Option<u64>,
    cases: u64,
    seconds: f64,
    #[serde(default)]
    cases_per_second: f64,
    body_bytes: u64,
    #[serde(flatten)]
    facts: FactsJson,
    #[serde(default)]
    protocol: Option<Traffic>,
    invariants: BTreeMap<Invariant, Tally>,
    /// Of `invariants`, those judged beyond the subject's claims
    /// (`--claim`): their failures are findings beyond what it promises.
    #[serde(default)]
    explored: Vec<Invariant>,
    #[serde(default)]
    not_checked: Vec<String>,
    /// How many failures of an invariant `failures` keeps, distinct by
    /// their shrunk shape (`--save-distinct`).
    #[serde(default = "one")]
    save_distinct: usize,
    failures: Vec<FailureJson>,
    /// Every failing case before shrinking, the first
    /// `check::FAILING_CASES_KEPT` of them.
    #[serde(default)]
    failing_cases: Vec<FailingCase>,
    /// The failing cases `failingCases` leaves out.
    #[serde(default)]
    failing_cases_left_out: u64,
    faults: Vec<FaultJson>,
    coverage: Value,
}

fn one() -> usize {
    1
}

/// The JSON report.
pub fn to_json(r: &CheckReport, hint: &ReplayHint) -> Value {
    let secs = r.run.elapsed.as_secs_f64().max(1e-9);
    let (shard, case) = part(r.shard);
    let json = CheckJson {
        ok: r.ok(),
        ctxgate_version: Some(VERSION.to_owned()),
        subject: SubjectJson::of(&r.subject, true),
        seed: r.seed,
        replay_with: hint.flags.clone(),
        shard,
        case,
        cases: r.cases,
        seconds: r.run.elapsed.as_secs_f64(),
        cases_per_second: r.cases as f64 / secs,
        body_bytes: r.bytes,
        facts: FactsJson::of(&r.run),
        protocol: r.traffic,
        invariants: r.tally.clone(),
        explored: r.explored.iter().collect(),
        not_checked: r.not_checked(),
        failures: r
            .failures
            .iter()
            .map(|f| {
                let explored = r.explored.contains(f.invariant);
                let mut json = FailureJson::of(f, &hint.for_failure(r, f), None);
                json.explored = explored;
                json.shape = Some(f.shape());
                json
            })
            .collect(),
        save_distinct: r.distinct,
        failing_cases: r.failing_cases.kept.clone(),
        failing_cases_left_out: r.failing_cases.left_out,
        faults: r.faults.iter().map(FaultJson::of).collect(),
        coverage: r.coverage.to_json(),
    };
    serde_json::to_value(json).expect("a report is JSON")
}

/// Read a report back from what [`to_json`] wrote: what `ctxgate report
/// merge` joins. Errors say which field is missing or wrong.
pub fn from_json(v: &Value) -> Result<CheckReport, String> {
    let r: CheckJson = crate::input::from_value(v)?;
    let coverage = crate::generate::Coverage::from_json(&r.coverage)
        .ok_or("`coverage` lacks its totals (a report from an older ctxgate?)")?;
    Ok(CheckReport {
        subject: r.subject.info()?,
        seed: r.seed,
        cases: r.cases,
        run: r.facts.run(r.seconds),
        bytes: r.body_bytes,
        checked: r.invariants.keys().copied().collect(),
        explored: explored(&r.explored, &r.invariants)?,
        tally: r.invariants,
        failures: r
            .failures
            .into_iter()
            .map(FailureJson::failure)
            .collect::<Result<_, _>>()?,
        distinct: r.save_distinct.max(1),
        failing_cases: FailingCases {
            kept: r.failing_cases,
            left_out: r.failing_cases_left_out,
        },
        faults: r
            .faults
            .into_iter()
            .map(FaultJson::record)
            .collect::<Result<_, _>>()?,
        coverage,
        traffic: r.protocol,
        suite: None,
        shard: shard(r.shard.as_deref(), r.case)?,
    })
}

/// A report's `explored`, read back: invariants of its `invariants`.
fn explored(
    names: &[Invariant],
    checked: &BTreeMap<Invariant, Tally>,
) -> Result<InvariantSet, String> {
    match names.iter().find(|i| !checked.contains_key(i)) {
        Some(i) => Err(format!(
            "`explored` names {i}, which is not among the report's `invariants`"
        )),
        None => Ok(names.iter().copied().collect()),
    }
}

/// The JSON sink, shared with the fixture writers: see
/// [`crate::model::text::pretty`].
pub use crate::model::text::pretty;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A report that does not read says which field is wrong, however deep.
    #[test]
    fn a_broken_report_names_the_field() {
        let mut v = json!({
            "subject": {"name": "s"}, "seed": 1, "cases": 1, "seconds": 0.5,
            "bodyBytes": 10, "stoppedByTime": false, "invariants": {},
            "failures": [{"invariant": "nope", "case": 0, "violation": {}, "fixture": {}}],
            "faults": [], "coverage": {},
        });
        let e = from_json(&v).unwrap_err();
        assert!(
            e.starts_with("`failures[0].invariant`: unknown invariant"),
            "{e}"
        );
        v["failures"] = json!([]);
        v["invariants"] = json!({"tool-pairing": {"pass": "many"}});
        let e = from_json(&v).unwrap_err();
        assert!(
            e.starts_with("`invariants.tool-pairing.pass`: invalid type"),
            "{e}"
        );
        v["invariants"] = json!({});
        v.as_object_mut().unwrap().remove("seed");
        assert_eq!(from_json(&v).unwrap_err(), "missing field `seed`");
    }

    /// The JSON sink escapes what a terminal or a CI log must not see raw,
    /// and reads back as the same value.
    #[test]
    fn pretty_json_is_safe_in_a_log_and_reads_back_the_same() {
        let v = json!({
            "name\u{1b}": "a\u{1b}]0;title\u{7}\n::error::x \u{9b}2J \u{202e}abc ##[error] ##vso[x] ###[y]",
        });
        let text = pretty(&v);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
        assert_eq!(crate::model::text::for_log(&text), text, "{text}");
        assert!(
            text.contains("#\\u0023[error]") && text.contains("\\u009b"),
            "{text}"
        );
        assert_eq!(
            pretty(&json!({"a": [1, "b"]})),
            serde_json::to_string_pretty(&json!({"a": [1, "b"]})).unwrap()
        );
    }
}
