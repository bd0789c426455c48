//! `--jobs` and `--shard` change how a run is spread, never what it finds:
//! the same seed gives the same verdict table and the same fixtures
//! whatever the number of subjects; the shards of a seed together run
//! exactly its cases, each once; and `report merge` of the shards is the
//! report of the whole run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ctxgate::check::{run, run_parallel, CheckOptions, Shard};
use ctxgate::fixture::Fixture;
use ctxgate::oracle::InvariantSet;
use ctxgate::report::{from_json, to_json, ReplayHint};
use ctxgate::subject::defects::Defect;
use ctxgate::subject::{answer, estimator_fn, InProcess, Subject, SubjectInfo};
use serde_json::Value;

/// A report's JSON without what depends on the machine: timings, paths.
fn verdicts(report: &ctxgate::check::CheckReport) -> Value {
    let mut v = to_json(report, &ReplayHint::default());
    let obj = v.as_object_mut().unwrap();
    for k in ["seconds", "casesPerSecond", "protocol", "shard"] {
        obj.remove(k);
    }
    v
}

fn subjects(defect: Option<Defect>, n: usize) -> Vec<Box<dyn Subject + Send>> {
    (0..n)
        .map(|_| -> Box<dyn Subject + Send> {
            match defect {
                Some(d) => Box::new(d.subject()),
                None => Box::new(InProcess::reference()),
            }
        })
        .collect()
}

#[test]
fn the_number_of_jobs_changes_nothing_but_the_time() {
    for defect in [
        None,
        Some(Defect::CutByMessageCount),
        Some(Defect::NoFallbackBelowKeepRecent),
    ] {
        let opts = CheckOptions {
            cases: 300,
            seed: 41,
            shrink_runs: 300,
            ..CheckOptions::default()
        };
        let one = run_parallel(&mut subjects(defect, 1), &opts, &mut |_| {});
        let three = run_parallel(&mut subjects(defect, 3), &opts, &mut |_| {});
        assert_eq!(one.cases, 300);
        assert_eq!(verdicts(&one), verdicts(&three), "{defect:?}");
        let names = |r: &ctxgate::check::CheckReport| -> Vec<String> {
            r.failures.iter().map(|f| f.fixture.name.clone()).collect()
        };
        assert_eq!(names(&one), names(&three));
        if defect.is_some() {
            assert!(!one.failures.is_empty(), "{defect:?} was caught");
        }
    }
}

/// A reference that notes the input of every `compact` it is asked.
fn recording(seen: Arc<Mutex<HashMap<String, u64>>>) -> InProcess {
    InProcess::new(
        SubjectInfo::new("recording-reference", "0"),
        move |config, msgs| {
            let name = Fixture::new(config.clone(), msgs.to_vec(), InvariantSet::all(), "").name;
            *seen.lock().unwrap().entry(name).or_default() += 1;
            answer(ctxgate::compact(config, msgs))
        },
        Some(estimator_fn(ctxgate::estimate::Adr0098)),
    )
}

#[test]
fn shards_run_exactly_the_seeds_cases_and_merge_into_its_report() {
    let opts = CheckOptions {
        cases: 203,
        seed: 8,
        invariants: InvariantSet::parse_list("tool-pairing,no-premature-compaction").unwrap(),
        ..CheckOptions::default()
    };
    let whole_seen = Arc::new(Mutex::new(HashMap::new()));
    let whole = run(&mut recording(whole_seen.clone()), &opts, &mut |_| {});
    let mut merged: Option<ctxgate::check::CheckReport> = None;
    let shards_seen = Arc::new(Mutex::new(HashMap::new()));
    let mut total = 0;
    for k in 1..=4 {
        let shard = CheckOptions {
            shard: Some(Shard {
                k,
                n: 4,
                one_case: false,
            }),
            ..opts.clone()
        };
        let report = run(&mut recording(shards_seen.clone()), &shard, &mut |_| {});
        total += report.cases;
        // Through JSON, as `ctxgate report merge` reads them.
        let back = from_json(&to_json(&report, &ReplayHint::default())).unwrap();
        match merged.as_mut() {
            None => merged = Some(back),
            Some(m) => m.merge(back).unwrap(),
        }
    }
    assert_eq!(total, 203, "each case once");
    // The same histories were asked for, as often, as in the whole run.
    assert_eq!(*whole_seen.lock().unwrap(), *shards_seen.lock().unwrap());
    assert_eq!(verdicts(&merged.unwrap()), verdicts(&whole));
}

#[test]
fn shard_indices_partition_the_cases() {
    assert!(Shard::parse("0/4").is_err());
    assert!(Shard::parse("5/4").is_err());
    assert!(Shard::parse("1/0").is_err());
    assert!(Shard::parse("x").is_err());
    assert_eq!(
        Shard::parse("2/4").unwrap(),
        Shard {
            k: 2,
            n: 4,
            one_case: false
        }
    );
    // The shards of a seed run the whole run's cases between them: every
    // history the subject is sent in the whole run is sent by some shard,
    // nothing else is, and the case counts add up.
    use ctxgate::config::Config;
    use ctxgate::model::Message;
    use std::collections::BTreeSet;
    let seen_by = |shard: Option<Shard>| {
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let log = Arc::clone(&seen);
        let compact = move |c: &Config, m: &[Message]| {
            log.lock().unwrap().insert(format!("{:?}", (c, m)));
            ctxgate::subject::answer(ctxgate::reference::compact(c, m))
        };
        let mut subject = ctxgate::testing::Compactor::new("logger", "0", compact).into_subject();
        let opts = ctxgate::check::CheckOptions {
            cases: 30,
            seed: 113,
            shard,
            ..Default::default()
        };
        let report = ctxgate::testing::check(&mut subject, &opts);
        let seen = seen.lock().unwrap().clone();
        (report.cases, seen)
    };
    let (whole_cases, whole) = seen_by(None);
    let mut union = BTreeSet::new();
    let mut cases = 0;
    for k in 1..=3 {
        let (n, seen) = seen_by(Some(Shard {
            k,
            n: 3,
            one_case: false,
        }));
        assert!((9..=11).contains(&n), "shard {k}/3 ran {n} of 30 cases");
        cases += n;
        union.extend(seen);
    }
    assert_eq!(cases, whole_cases);
    assert!(whole.len() > 30, "{}", whole.len());
    assert_eq!(union, whole);
}
