//! A baseline gate's JSON report as serde types: what `--report json`
//! writes, in the order its fields are declared, and what `report merge`
//! reads back. A failure, a subject and a run's facts are written as a
//! check's report writes them (`report/json.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::behaviour::{Behaviour, CaseChange, ClassDelta, Measures, Outcome};
use super::report::Hints;
use super::{
    BaselineFault, BaselineReport, FailOn, InvariantDelta, Regression, Shared, SubjectFault,
};
use crate::check::FaultRecord;
use crate::contract::Pressure;
use crate::oracle::Invariant;
use crate::report::json::{
    fixture, part, path, saved, shard, FactsJson, FailureJson, SubjectJson, VERSION,
};
use crate::subject::Fault;

#[derive(Serialize, Deserialize)]
struct ReplayWith {
    subject: Vec<String>,
    baseline: Vec<String>,
}

/// A subject fault kind: new (a regression, with its shrunk fixture) or
/// shared with a baseline fault on the same cases.
#[derive(Serialize, Deserialize)]
struct SubjectFaultJson {
    #[serde(flatten)]
    fault: Fault,
    case: u64,
    new: u64,
    shared: u64,
    #[serde(default)]
    regression: bool,
    #[serde(default)]
    fixture: Option<Value>,
    #[serde(default)]
    saved: Option<String>,
}

impl SubjectFaultJson {
    fn of(f: &SubjectFault) -> SubjectFaultJson {
        let r = &f.record;
        SubjectFaultJson {
            fault: r.fault.clone(),
            case: r.case_index,
            new: f.new,
            shared: f.shared,
            regression: f.new > 0,
            fixture: (f.new > 0).then(|| r.fixture.to_json()),
            saved: path(&r.saved),
        }
    }

    fn fault(self) -> Result<SubjectFault, String> {
        // Without a new case no fixture was shrunk, and none is written
        // back: the record holds an empty one that no report shows.
        let fixture = match self.fixture.filter(|_| self.new > 0) {
            Some(v) => fixture(v)?,
            None => crate::fixture::Fixture::new(
                crate::config::Config::default(),
                Vec::new(),
                crate::oracle::InvariantSet::empty(),
                "",
            ),
        };
        Ok(SubjectFault {
            record: FaultRecord {
                case_index: self.case,
                fault: self.fault,
                fixture,
                saved: saved(self.saved, None),
                count: self.new.saturating_add(self.shared),
            },
            new: self.new,
            shared: self.shared,
        })
    }
}

/// The sums the means are of: what `report merge` adds up.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sums {
    retention_ppm: u64,
    messages_kept: u64,
    iterations_kept: u64,
    summary_bytes: u64,
    estimated: u64,
    estimate_ppm: u64,
}

/// One side's behaviour over a class: the counts, the means (written for
/// the reader, not read back) and the sums.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MeasuresJson {
    answered: u64,
    compacted: u64,
    cannot_fit: u64,
    #[serde(skip_deserializing)]
    compaction_rate: Option<f64>,
    #[serde(skip_deserializing)]
    cannot_fit_rate: Option<f64>,
    #[serde(skip_deserializing)]
    retention: Option<f64>,
    #[serde(skip_deserializing, rename = "messagesKept")]
    mean_messages_kept: Option<f64>,
    #[serde(skip_deserializing, rename = "iterationsKept")]
    mean_iterations_kept: Option<f64>,
    #[serde(skip_deserializing, rename = "summaryBytes")]
    mean_summary_bytes: Option<f64>,
    #[serde(skip_deserializing)]
    estimate_vs_body: Option<f64>,
    /// Absent from a report of an older ctxgate, which cannot be merged.
    sums: Sums,
}

impl MeasuresJson {
    fn of(m: &Measures) -> MeasuresJson {
        MeasuresJson {
            answered: m.answered,
            compacted: m.compacted,
            cannot_fit: m.cannot_fit,
            compaction_rate: m.compaction_rate(),
            cannot_fit_rate: m.cannot_fit_rate(),
            retention: m.retention(),
            mean_messages_kept: m.messages_kept(),
            mean_iterations_kept: m.iterations_kept(),
            mean_summary_bytes: m.summary_bytes(),
            estimate_vs_body: m.estimate_vs_body(),
            sums: Sums {
                retention_ppm: m.retention_ppm,
                messages_kept: m.messages_kept,
                iterations_kept: m.iterations_kept,
                summary_bytes: m.summary_bytes,
                estimated: m.estimated,
                estimate_ppm: m.estimate_ppm,
            },
        }
    }

    fn measures(self) -> Measures {
        let s = self.sums;
        Measures {
            answered: self.answered,
            compacted: self.compacted,
            cannot_fit: self.cannot_fit,
            retention_ppm: s.retention_ppm,
            messages_kept: s.messages_kept,
            iterations_kept: s.iterations_kept,
            summary_bytes: s.summary_bytes,
            estimated: s.estimated,
            estimate_ppm: s.estimate_ppm,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Outcomes {
    subject: Outcome,
    baseline: Outcome,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChangeJson {
    case: u64,
    #[serde(skip_deserializing)]
    subject: String,
    #[serde(skip_deserializing)]
    baseline: String,
    #[serde(skip_deserializing)]
    sent_delta: f64,
    score_ppm: u64,
    outcomes: Outcomes,
}

/// A class's figures on both sides; the `all` row has no changes.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClassJson {
    cases: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    changed: Option<u64>,
    subject: MeasuresJson,
    baseline: MeasuresJson,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    changed_most: Option<Vec<ChangeJson>>,
}

impl ClassJson {
    fn of(d: &ClassDelta) -> ClassJson {
        let change = |ch: &CaseChange| ChangeJson {
            case: ch.case_index,
            subject: ch.subject.describe(),
            baseline: ch.baseline.describe(),
            sent_delta: ch.score_ppm as f64 / 1e6,
            score_ppm: ch.score_ppm,
            outcomes: Outcomes {
                subject: ch.subject,
                baseline: ch.baseline,
            },
        };
        ClassJson {
            cases: d.subject.answered,
            changed: Some(d.changed),
            subject: MeasuresJson::of(&d.subject),
            baseline: MeasuresJson::of(&d.baseline),
            changed_most: Some(d.changed_most.iter().map(change).collect()),
        }
    }

    fn delta(self, name: &str) -> Result<ClassDelta, String> {
        let changed_most = self
            .changed_most
            .ok_or(format!("{name}: no `changedMost`"))?;
        Ok(ClassDelta {
            subject: self.subject.measures(),
            baseline: self.baseline.measures(),
            changed_most: changed_most
                .into_iter()
                .map(|c| CaseChange {
                    case_index: c.case,
                    score_ppm: c.score_ppm,
                    subject: c.outcomes.subject,
                    baseline: c.outcomes.baseline,
                })
                .collect(),
            changed: self.changed.ok_or(format!("{name}: no `changed`"))?,
        })
    }
}

/// A gate's report.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GateJson {
    #[serde(default)]
    ok: bool,
    /// Absent from the reports of a ctxgate older than this field.
    #[serde(default)]
    ctxgate_version: Option<String>,
    fail_on: FailOn,
    #[serde(default)]
    gate_failures: Vec<String>,
    subject: SubjectJson,
    baseline: SubjectJson,
    seed: u64,
    #[serde(default)]
    replay_with: Option<ReplayWith>,
    #[serde(default)]
    shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    case: Option<u64>,
    cases: u64,
    #[serde(default)]
    compared: u64,
    baseline_faulted: u64,
    uncompared_failures: u64,
    seconds: f64,
    #[serde(flatten)]
    facts: FactsJson,
    invariants: BTreeMap<Invariant, InvariantDelta>,
    #[serde(default)]
    not_compared: Vec<String>,
    regressions: Vec<FailureJson>,
    known: Vec<Shared>,
    fixes: Vec<Shared>,
    subject_faults: Vec<SubjectFaultJson>,
    baseline_faults: Vec<BaselineFault>,
    behaviour: serde_json::Map<String, Value>,
}

/// The JSON report.
pub fn to_json(r: &BaselineReport, hints: &Hints) -> Value {
    let mut behaviour: serde_json::Map<String, Value> = r
        .behaviour
        .classes
        .iter()
        .map(|(c, d)| (c.name().to_owned(), json_of(ClassJson::of(d))))
        .collect();
    let (ts, tb) = r.behaviour.total();
    let all = ClassJson {
        cases: ts.answered,
        changed: None,
        subject: MeasuresJson::of(&ts),
        baseline: MeasuresJson::of(&tb),
        changed_most: None,
    };
    behaviour.insert("all".into(), json_of(all));
    let regression = |g: &Regression| {
        let baseline = Some((g.baseline.as_str(), &hints.baseline));
        FailureJson::of(&g.failure, &hints.subject, baseline)
    };
    let (shard, case) = part(r.shard);
    json_of(GateJson {
        ok: r.ok(),
        ctxgate_version: Some(VERSION.to_owned()),
        fail_on: r.fail_on,
        gate_failures: r.gate_failures(),
        subject: SubjectJson::of(&r.subject, false),
        baseline: SubjectJson::of(&r.baseline, false),
        seed: r.seed,
        replay_with: Some(ReplayWith {
            subject: hints.subject.flags.clone(),
            baseline: hints.baseline.flags.clone(),
        }),
        shard,
        case,
        cases: r.cases,
        compared: r.compared(),
        baseline_faulted: r.baseline_faulted,
        uncompared_failures: r.uncompared_failures,
        seconds: r.run.elapsed.as_secs_f64(),
        facts: FactsJson::of(&r.run),
        invariants: r.invariants.clone(),
        not_compared: r.not_compared(),
        regressions: r.regressions.iter().map(regression).collect(),
        known: r.known.iter().map(Shared::clone).collect(),
        fixes: r.fixes.iter().map(Shared::clone).collect(),
        subject_faults: r.subject_faults.iter().map(SubjectFaultJson::of).collect(),
        baseline_faults: r.baseline_faults.clone(),
        behaviour,
    })
}

fn json_of(x: impl Serialize) -> Value {
    serde_json::to_value(x).expect("a report is JSON")
}

/// Read a report back from what [`to_json`] wrote. Errors say which field
/// is missing or wrong.
pub fn from_json(v: &Value) -> Result<BaselineReport, String> {
    let r: GateJson = crate::input::from_value(v)?;
    let mut behaviour = Behaviour::default();
    for (name, c) in r.behaviour {
        if name == "all" {
            continue; // the classes' sum
        }
        let class = Pressure::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| format!("unknown case class {name:?}"))?;
        let c: ClassJson =
            crate::input::from_value(&c).map_err(|e| format!("`behaviour.{name}`: {e}"))?;
        behaviour.classes.insert(class, c.delta(&name)?);
    }
    Ok(BaselineReport {
        subject: r.subject.info()?,
        baseline: r.baseline.info()?,
        seed: r.seed,
        shard: shard(r.shard.as_deref(), r.case)?,
        cases: r.cases,
        baseline_faulted: r.baseline_faulted,
        uncompared_failures: r.uncompared_failures,
        run: r.facts.run(r.seconds),
        checked: r.invariants.keys().copied().collect(),
        invariants: r.invariants,
        regressions: r
            .regressions
            .into_iter()
            .map(|g| {
                let baseline = g.baseline.clone().unwrap_or_default();
                Ok(Regression {
                    failure: g.failure()?,
                    baseline,
                })
            })
            .collect::<Result<_, String>>()?,
        known: r.known,
        fixes: r.fixes,
        subject_faults: r
            .subject_faults
            .into_iter()
            .map(SubjectFaultJson::fault)
            .collect::<Result<_, _>>()?,
        baseline_faults: r.baseline_faults,
        behaviour,
        fail_on: r.fail_on,
        suite: None,
    })
}
