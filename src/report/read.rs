//! Reading a check report back from its JSON (`report merge`): every
//! field checked, errors naming the one that is missing or wrong. The
//! gate's report has its reader in `baseline/merge.rs`, on these parts.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::check::{CheckReport, Saved, Tally};

/// Read a report back from what [`super::to_json`] wrote: what `ctxgate report
/// merge` joins. Errors say which field is missing or wrong.
pub fn from_json(v: &Value) -> Result<CheckReport, String> {
    let field = |k: &str| v.get(k).ok_or_else(|| format!("no `{k}`"));
    let info = subject_from_json(field("subject")?)?;
    let tally: BTreeMap<_, Tally> = field_as(v, "invariants")?;
    let failures = field("failures")?
        .as_array()
        .ok_or("`failures` is not an array")?
        .iter()
        .map(failure_from_json)
        .collect::<Result<Vec<_>, _>>()?;
    let faults = field("faults")?
        .as_array()
        .ok_or("`faults` is not an array")?
        .iter()
        .map(fault_record_from_json)
        .collect::<Result<Vec<_>, _>>()?;
    let coverage = crate::generate::Coverage::from_json(field("coverage")?)
        .ok_or("`coverage` lacks its totals (a report from an older ctxgate?)")?;
    let shard = match v.get("shard").and_then(Value::as_str) {
        Some(s) => Some(crate::check::Shard::parse(s)?),
        None => None,
    };
    let traffic = field_as(v, "protocol").unwrap_or(None);
    Ok(CheckReport {
        subject: info,
        seed: count_of(field("seed")?, "seed")?,
        cases: count_of(field("cases")?, "cases")?,
        run: crate::run::RunFacts::from_json(v)?,
        bytes: count_of(field("bodyBytes")?, "bodyBytes")?,
        checked: tally.keys().copied().collect(),
        tally,
        failures,
        faults,
        coverage,
        traffic,
        shard,
    })
}

/// Member `k` of `v`, read by serde; errors name it.
pub(crate) fn field_as<T: serde::de::DeserializeOwned>(v: &Value, k: &str) -> Result<T, String> {
    let member = v.get(k).cloned().ok_or_else(|| format!("no `{k}`"))?;
    serde_json::from_value(member).map_err(|e| format!("`{k}`: {e}"))
}

fn count_of(x: &Value, what: &str) -> Result<u64, String> {
    x.as_u64().ok_or_else(|| format!("`{what}` is not a count"))
}

fn text_of(x: Option<&Value>) -> String {
    x.and_then(Value::as_str).unwrap_or("").to_owned()
}

pub(crate) fn invariant_from_name(name: &str) -> Result<crate::oracle::Invariant, String> {
    crate::oracle::Invariant::parse(name).ok_or_else(|| format!("unknown invariant {name:?}"))
}

/// A subject's `name`, `version`, `format`, `estimates`, `claims`.
pub(crate) fn subject_from_json(subject: &Value) -> Result<crate::subject::SubjectInfo, String> {
    let mut info = crate::subject::SubjectInfo::new(
        text_of(subject.get("name")),
        text_of(subject.get("version")),
    );
    info.format =
        crate::model::WireFormat::parse(&text_of(subject.get("format"))).unwrap_or_default();
    info.estimates = subject
        .get("estimates")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    info.exact_numbers = text_of(subject.get("numbers")) == "exact";
    info.content_parts = subject
        .get("contentParts")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    info.wire_formats = crate::model::WireFormats::from_names(subject.get("wireFormats"));
    if let Some(list) = subject.get("claims").and_then(Value::as_array) {
        let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
        info.invariants = Some(crate::oracle::InvariantSet::parse_list(&names.join(","))?);
    }
    Ok(info)
}

fn saved_from_json(f: &Value) -> Saved {
    match (
        f.get("saved").and_then(Value::as_str),
        f.get("saveError").and_then(Value::as_str),
    ) {
        (Some(p), _) => Saved::At(std::path::PathBuf::from(p)),
        (None, Some(e)) => Saved::Failed(e.to_owned()),
        _ => Saved::NotAsked,
    }
}

fn fixture_from_json(f: &Value) -> Result<crate::fixture::Fixture, String> {
    crate::fixture::Fixture::from_json(f.get("fixture").cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("a fixture: {e}"))
}

/// A failure as the reports write it: `invariant`, `case`, `violation`,
/// `original`, `fixture`, `saved`.
pub(crate) fn failure_from_json(f: &Value) -> Result<crate::check::Failure, String> {
    let inv = crate::oracle::Invariant::parse(&text_of(f.get("invariant")))
        .ok_or("a failure names no invariant")?;
    let original = f.get("original").cloned().unwrap_or(Value::Null);
    Ok(crate::check::Failure {
        invariant: inv,
        case_index: count_of(&f["case"], "case")?,
        violation: f
            .get("violation")
            .and_then(crate::oracle::Violation::from_json)
            .ok_or("a failure has no violation")?,
        original_size: (
            original
                .get("messages")
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize,
            original
                .get("bodyBytes")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        ),
        fixture: fixture_from_json(f)?,
        saved: saved_from_json(f),
        answer: f.get("answer").and_then(super::diff::answer_from_json),
    })
}

/// A fault's `kind`, `detail` and `stderr`.
pub(crate) fn fault_from_json(f: &Value) -> Result<crate::subject::Fault, String> {
    let kind = crate::subject::FaultKind::parse(&text_of(f.get("kind")))
        .ok_or("a fault of unknown kind")?;
    let mut fault = crate::subject::Fault::new(kind, text_of(f.get("detail")));
    fault.stderr = text_of(f.get("stderr"));
    Ok(fault)
}

/// A fault as the reports write it, with its `case`, `count` and fixture.
pub(crate) fn fault_record_from_json(f: &Value) -> Result<crate::check::FaultRecord, String> {
    Ok(crate::check::FaultRecord {
        case_index: count_of(&f["case"], "case")?,
        fault: fault_from_json(f)?,
        fixture: fixture_from_json(f)?,
        saved: saved_from_json(f),
        count: count_of(&f["count"], "count")?,
    })
}
