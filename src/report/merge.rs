//! `report merge`: one report from the JSON reports of a seed's shards
//! (`check --shard K/N --report json`, or a baseline gate's), as one run
//! over all their cases would have written it. Only reports of this very
//! ctxgate (`ctxgateVersion`) merge, and never the report of one case
//! rerun alone (`check --case N`). Every refusal names the report it is
//! about; the caller reads the files and prints.

use serde_json::Value;

use super::render::Outcome;
use super::ReplayHint;
use crate::baseline::report::Hints;
use crate::baseline::suite::SuiteGate;
use crate::baseline::BaselineReport;
use crate::check::{CheckReport, Shard};
use crate::suite::SuiteReport;

/// One report to merge: the name to cite it by (its path) and its JSON.
pub struct ShardReport {
    pub name: String,
    pub json: Value,
}

impl ShardReport {
    /// Read a JSON report from `path`, at most `cap` bytes; errors name the
    /// file and the problem.
    pub fn read(path: &std::path::Path, cap: u64) -> Result<ShardReport, crate::InputError> {
        let name = path.display().to_string();
        let bytes = crate::input::read_file(path, "the report", cap)?;
        let expected = "a report of `ctxgate check --report json`, a JSON object";
        let json = crate::model::parse_json_expecting(&bytes, expected).map_err(|mut e| {
            // A report is no history: an index the history parser found
            // means nothing here.
            e.message = None;
            e.in_file(&name)
        })?;
        Ok(ShardReport { name, json })
    }
}

/// Merge `reports`, all of one kind (check or gate) and together all the
/// shards of one run, each once (or one whole run's report, to write it
/// again in another form). `subject` and `baseline` override the replay
/// flags the shards recorded.
pub fn merge(
    reports: Vec<ShardReport>,
    subject: Option<&str>,
    baseline: Option<&str>,
) -> Result<Outcome, String> {
    let is_gate = |v: &Value| v.get("baseline").is_some() && v.get("failOn").is_some();
    let first_is_gate = is_gate(&reports.first().ok_or("no report to merge")?.json);
    // Each is a report at all (a history or a fixture given by mistake is
    // named as what it is, not blamed on the others' version); then, what
    // a field means may change between versions: the reports are of this
    // ctxgate.
    reports.iter().try_for_each(is_a_report)?;
    one_version(&reports)?;
    no_case_alone(&reports)?;
    if let Some(r) = reports.iter().find(|r| is_gate(&r.json) != first_is_gate) {
        let (this, that) = match first_is_gate {
            false => ("a `check --baseline` report", "`check` reports"),
            true => ("a `check` report", "`check --baseline` reports"),
        };
        return Err(format!(
            "{}: {this}, among {that}: shards of one run are all one kind",
            r.name
        ));
    }
    // Reports that do not merge say so first; then, whether they are all
    // of the run's shards.
    let shards = whole_set_of_shards(&reports);
    if first_is_gate {
        let hints = recorded_hint(subject, &reports, |v| v.pointer("/replayWith/subject"))
            .and_then(|subject| {
                let baseline =
                    recorded_hint(baseline, &reports, |v| v.pointer("/replayWith/baseline"))?;
                Ok(Hints { subject, baseline })
            });
        let suite = suite_of_shards(&reports, SuiteGate::from_json);
        let report = fold(
            reports,
            "a ctxgate baseline gate's report",
            crate::baseline::json::from_json,
            BaselineReport::consistent,
            BaselineReport::merge,
        )?;
        shards?;
        let report = BaselineReport {
            suite: suite?,
            ..report
        };
        Ok(Outcome::Gate {
            report,
            hints: hints?,
        })
    } else {
        let hint = recorded_hint(subject, &reports, |v| v.get("replayWith"));
        let suite = suite_of_shards(&reports, SuiteReport::from_json);
        let report = fold(
            reports,
            "a ctxgate check report",
            super::from_json,
            CheckReport::consistent,
            CheckReport::merge,
        )?;
        shards?;
        let report = CheckReport {
            suite: suite?,
            ..report
        };
        Ok(Outcome::Check {
            report,
            hint: hint?,
        })
    }
}

/// `r` is a ctxgate report: a JSON object with `ctxgateVersion`, or, from a
/// ctxgate too old to write that, the `seed` and `failures` every report
/// has. Anything else is named as what it looks like.
fn is_a_report(r: &ShardReport) -> Result<(), String> {
    let looks = match &r.json {
        Value::Object(o) if o.contains_key("ctxgateVersion") => return Ok(()),
        Value::Object(o) if o.contains_key("seed") && o.contains_key("failures") => return Ok(()),
        Value::Object(o)
            if o.contains_key("ctxgate")
                && o.get("op").and_then(Value::as_str) == Some("agent") =>
        {
            "an agent fixture (`ctxgate agent replay` plays it)".to_owned()
        }
        Value::Object(o) if o.contains_key("ctxgate") => {
            "a fixture (`ctxgate replay` plays it)".to_owned()
        }
        Value::Object(o) if o.contains_key("messages") => "a history".to_owned(),
        Value::Object(_) => {
            "a JSON object without `ctxgateVersion`, `seed` or `failures`".to_owned()
        }
        Value::Array(_) => "a JSON array (a history?)".to_owned(),
        other => crate::error::json_type(other).to_owned(),
    };
    Err(format!(
        "{}: not a ctxgate report: {looks}; `report merge` takes the JSON reports of `ctxgate check --report json`",
        r.name
    ))
}

/// Every report was written by this version of ctxgate (its
/// `ctxgateVersion`). Reports of two versions are named with theirs; a
/// report without the field is of a ctxgate older than it, and reports of
/// another version than this one are merged by the ctxgate that wrote
/// them, for the merged report says which ctxgate ran its cases.
fn one_version(reports: &[ShardReport]) -> Result<(), String> {
    fn version(r: &ShardReport) -> Option<&str> {
        r.json.get("ctxgateVersion").and_then(Value::as_str)
    }
    let shown = |v: Option<&str>| match v {
        Some(v) => format!("ctxgate {}", crate::model::one_line(v)),
        None => "a ctxgate too old to record its version (no `ctxgateVersion`)".to_owned(),
    };
    let first = &reports[0];
    if let Some(other) = reports.iter().find(|r| version(r) != version(first)) {
        return Err(format!(
            "{}: written by {}, but {} by {}: the reports of one run are of one ctxgate",
            other.name,
            shown(version(other)),
            first.name,
            shown(version(first))
        ));
    }
    if version(first) != Some(super::json::VERSION) {
        let all = if reports.len() > 1 {
            ", as the others"
        } else {
            ""
        };
        return Err(format!(
            "{}: written by {}{all}, and this is ctxgate {}: merge reports with the ctxgate \
             that wrote them (a field's meaning may differ between versions)",
            first.name,
            shown(version(first)),
            super::json::VERSION,
        ));
    }
    Ok(())
}

/// No report is of one case rerun alone (`check --case N`, its `case`):
/// that is no shard of a run, and a merge of it, alone or with others,
/// would answer for cases it did not run.
fn no_case_alone(reports: &[ShardReport]) -> Result<(), String> {
    let case = |r: &ShardReport| r.json.get("case").filter(|c| !c.is_null()).cloned();
    match reports.iter().find_map(|r| Some((r, case(r)?))) {
        Some((r, case)) => Err(format!(
            "{}: the report of case {} rerun alone (`check --case`), not of a shard \
             (`--shard K/N`): it says nothing of the run's other cases, and merges with none",
            r.name,
            crate::model::one_line(&case.to_string())
        )),
        None => Ok(()),
    }
}

/// The reports are the shards of one run, each once, all of them: a
/// merge of some would be a report of part of the seed's cases that says
/// nothing of the rest; one shard twice, its cases counted twice.
fn whole_set_of_shards(reports: &[ShardReport]) -> Result<(), String> {
    if let [only] = reports {
        // A whole run's report writes `"shard": null`.
        if only.json.get("shard").is_none_or(Value::is_null) {
            return Ok(()); // a whole run's report, written again in another form
        }
    }
    let mut seen: Vec<(u64, &str)> = Vec::new();
    let mut of: Option<(u64, &str)> = None;
    for ShardReport { name, json } in reports {
        let shard = match json.get("shard").and_then(Value::as_str) {
            Some(s) => Shard::parse(s).map_err(|e| format!("{name}: `shard`: {e}"))?,
            None => {
                return Err(format!(
                    "{name}: the report of a whole run, not of a shard (`--shard K/N`): \
                     there is nothing to merge it with"
                ))
            }
        };
        match of {
            Some((n, first)) if n != shard.n => {
                return Err(format!(
                    "{name}: shard {}/{}, but {first} is a shard of {n}: the shards of one run \
                     share their N",
                    shard.k, shard.n
                ))
            }
            None => of = Some((shard.n, name)),
            Some(_) => {}
        }
        if let Some((_, other)) = seen.iter().find(|(k, _)| *k == shard.k) {
            return Err(format!(
                "{name}: shard {}/{} again (also {other}): its cases would count twice",
                shard.k, shard.n
            ));
        }
        seen.push((shard.k, name));
    }
    let (n, first) = of.expect("two reports or more");
    // Shards of N cover a run of at least N cases: each shard has one.
    let cases = reports
        .iter()
        .map(|r| r.json.get("cases").and_then(Value::as_u64).unwrap_or(0))
        .try_fold(0u64, u64::checked_add)
        .unwrap_or(u64::MAX);
    if n > cases {
        return Err(format!(
            "{first}: a shard of {n}, but the reports hold {cases} case(s) in all: a run of \
             {cases} case(s) has at most {cases} shard(s)"
        ));
    }
    // Named, at most ten: N may be large.
    let missing = n - seen.len() as u64;
    if missing > 0 {
        let named: Vec<String> = (1..=n)
            .filter(|k| !seen.iter().any(|(s, _)| s == k))
            .take(10)
            .map(|k| format!("{k}/{n}"))
            .collect();
        let more = match missing > named.len() as u64 {
            true => format!(" and {} more", missing - named.len() as u64),
            false => String::new(),
        };
        return Err(format!(
            "shard(s) {}{more} missing: the merged report would cover part of the seed's cases \
             and say nothing of the rest",
            named.join(", ")
        ));
    }
    Ok(())
}

/// The suite's outcome (`check --with-suite`, read by `read`: a plain
/// run's or a gate's), from the one report that has it — shard 1's, which
/// alone replays the suite — so that the merged report shows it and fails
/// as the run did.
fn suite_of_shards<S>(
    reports: &[ShardReport],
    read: fn(&Value) -> Result<S, String>,
) -> Result<Option<S>, String> {
    let mut found: Option<(&str, S)> = None;
    for ShardReport { name, json } in reports {
        let Some(v) = json.get("suite") else {
            continue;
        };
        if let Some((first, _)) = &found {
            return Err(format!(
                "{name}: a suite's outcome, and so has {first}: only shard 1 of a run replays \
                 the suite (`--with-suite`), and its fixtures would count twice"
            ));
        }
        let suite = read(v).map_err(|e| format!("{name}: not a ctxgate report: `suite`: {e}"))?;
        found = Some((name, suite));
    }
    Ok(found.map(|(_, s)| s))
}

/// How the merged report's replay lines choose the subject: `given`
/// (`--subject`, or `--baseline`) if there is one, else as every shard
/// recorded it — shards that disagree are of different runs.
fn recorded_hint(
    given: Option<&str>,
    reports: &[ShardReport],
    recorded: impl Fn(&Value) -> Option<&Value>,
) -> Result<ReplayHint, String> {
    if let Some(cmd) = given {
        return Ok(ReplayHint::subject(cmd));
    }
    let mut found: Option<(&str, ReplayHint)> = None;
    for ShardReport { name, json } in reports {
        let Some(hint) = ReplayHint::from_json(recorded(json)) else {
            return Err(format!(
                "{name}: no `replayWith` (a report of an older ctxgate): give --subject \
                 (and --baseline) so that the replay lines name the subject"
            ));
        };
        match &found {
            Some((first, h)) if *h != hint => {
                return Err(format!(
                    "{name}: replays with {:?}, {first} with {:?}: shards of one run have \
                     one subject",
                    hint.flags, h.flags
                ))
            }
            Some(_) => {}
            None => found = Some((name, hint)),
        }
    }
    Ok(found.map(|(_, h)| h).unwrap_or_default())
}

/// Each report read and checked, and merged into the first; errors name
/// the file.
fn fold<R>(
    reports: Vec<ShardReport>,
    kind: &str,
    read: fn(&Value) -> Result<R, String>,
    consistent: fn(&R) -> Result<(), String>,
    merge: fn(&mut R, R) -> Result<(), String>,
) -> Result<R, String> {
    let mut merged: Option<R> = None;
    let mut first = String::new();
    for ShardReport { name, json } in reports {
        let one = read(&json)
            .and_then(|r| consistent(&r).map(|()| r))
            .map_err(|e| format!("{name}: not {kind}: {e}"))?;
        match merged.as_mut() {
            None => {
                merged = Some(one);
                first = name;
            }
            Some(m) => {
                merge(m, one).map_err(|e| format!("{name}: cannot merge with {first}: {e}"))?
            }
        }
    }
    Ok(merged.expect("at least one report"))
}
