//! The reports of a seed's shards of a baseline gate joined into the one
//! a run over all their cases writes: what `ctxgate report merge` does
//! with `check --baseline --shard K/N` (the reports are read by
//! `baseline/json.rs`).

use super::{BaselineReport, Shared};
use crate::check::{add_count, join_first_of_kind};

impl BaselineReport {
    /// The report is one a gate could have written: each side's counts of
    /// every invariant add up to the cases, the cases not compared are
    /// among them, and an invariant has a regression, known failure or fix
    /// on record exactly when its count of them is not zero. Checked on a
    /// report read back from a file, before it is merged.
    pub fn consistent(&self) -> Result<(), String> {
        if self.baseline_faulted > self.cases {
            return Err(format!(
                "{} case(s) not compared in a gate of {}",
                self.baseline_faulted, self.cases
            ));
        }
        for (inv, d) in &self.invariants {
            let name = inv.name();
            let at = |side| format!("invariants.{name}.{side}");
            d.subject.adds_up_to(self.cases, &at("subject"))?;
            if let Some(b) = &d.baseline {
                b.adds_up_to(self.cases, &at("baseline"))?;
            }
            if d.compared > self.cases {
                return Err(format!(
                    "`invariants.{name}.compared` is {}, in a gate of {} case(s)",
                    d.compared, self.cases
                ));
            }
            for (what, n, on_record) in [
                (
                    "regressed",
                    d.regressed,
                    self.regressions.iter().any(|r| r.failure.invariant == *inv),
                ),
                (
                    "known",
                    d.known,
                    self.known.iter().any(|k| k.invariant == *inv),
                ),
                (
                    "fixed",
                    d.fixed,
                    self.fixes.iter().any(|f| f.invariant == *inv),
                ),
            ] {
                if (n > 0) != on_record {
                    return Err(format!(
                        "`invariants.{name}.{what}` is {n}, but the report {} of {name} on record",
                        if on_record { "has one" } else { "has none" }
                    ));
                }
            }
        }
        Ok(())
    }

    /// Join the report of another shard of the same gate (same subject,
    /// baseline, seed and `--fail-on`): counts add up, and what is kept of
    /// each invariant and fault kind is that of the lowest case index, as
    /// one run would have kept. The time is the longest shard's.
    pub fn merge(&mut self, other: BaselineReport) -> Result<(), String> {
        if other.seed != self.seed {
            return Err(format!("seeds differ ({} and {})", self.seed, other.seed));
        }
        for (side, a, b) in [
            ("subjects", &self.subject, &other.subject),
            ("baselines", &self.baseline, &other.baseline),
        ] {
            if (&a.name, &a.version) != (&b.name, &b.version) {
                return Err(format!(
                    "{side} differ ({} {} and {} {})",
                    a.name, a.version, b.name, b.version
                ));
            }
        }
        if other.fail_on != self.fail_on {
            return Err(format!(
                "--fail-on differs ({} and {})",
                self.fail_on.name(),
                other.fail_on.name()
            ));
        }
        crate::run::same_invariants(&self.invariants, &other.invariants)?;
        add_count(&mut self.cases, other.cases, "cases")?;
        add_count(
            &mut self.baseline_faulted,
            other.baseline_faulted,
            "baselineFaulted",
        )?;
        add_count(
            &mut self.uncompared_failures,
            other.uncompared_failures,
            "uncomparedFailures",
        )?;
        self.run.merge(&other.run)?;
        self.shard = None;
        // Only shard 1 replays the suite.
        self.suite = self.suite.take().or(other.suite);
        for (inv, d) in other.invariants {
            self.checked.insert(inv);
            let mine = self.invariants.entry(inv).or_default();
            mine.subject.add(&d.subject);
            mine.baseline = match (mine.baseline.take(), d.baseline) {
                (Some(mut a), Some(b)) => {
                    a.add(&b);
                    Some(a)
                }
                (a, b) => a.or(b),
            };
            mine.compared += d.compared;
            mine.regressed += d.regressed;
            mine.known += d.known;
            mine.fixed += d.fixed;
        }
        join_first_of_kind(
            &mut self.regressions,
            other.regressions,
            |g| g.failure.invariant,
            |g| g.failure.case_index,
            |_, _| {},
        );
        self.regressions
            .sort_by_key(|r| (r.failure.case_index, r.failure.invariant));
        for (mine, theirs) in [
            (&mut self.known, other.known),
            (&mut self.fixes, other.fixes),
        ] {
            let add = |kept: &mut Shared, other: &Shared| kept.count += other.count;
            join_first_of_kind(mine, theirs, |s| s.invariant, |s| s.case_index, add);
            mine.sort_by_key(|s| s.invariant);
        }
        // Of a subject fault kind, the record of the first new case when
        // there is one (its fixture was shrunk), else of the first case.
        join_first_of_kind(
            &mut self.subject_faults,
            other.subject_faults,
            |f| f.record.fault.kind.clone(),
            |f| (f.new == 0, f.record.case_index),
            |kept, other| {
                kept.new += other.new;
                kept.shared += other.shared;
                kept.record.count = kept.new + kept.shared;
            },
        );
        self.subject_faults.sort_by_key(|f| f.record.case_index);
        join_first_of_kind(
            &mut self.baseline_faults,
            other.baseline_faults,
            |f| f.fault.kind.clone(),
            |f| f.case_index,
            |kept, other| kept.count += other.count,
        );
        self.baseline_faults.sort_by_key(|f| f.case_index);
        self.behaviour.merge(&other.behaviour);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::json::from_json;
    use serde_json::{json, Value};

    /// A gate's report with only subject faults: (kind, first case, new,
    /// shared), and one baseline fault kind (first case, count).
    fn gate(
        subject_faults: &[(&str, u64, u64, u64)],
        baseline_fault: (u64, u64),
    ) -> BaselineReport {
        let side = json!({"name": "s", "version": "1", "format": "engine", "estimates": true});
        let faults: Vec<Value> = subject_faults
            .iter()
            .map(|&(kind, case, new, shared)| {
                json!({"kind": kind, "detail": format!("{kind} at {case}"), "stderr": "",
                       "case": case, "new": new, "shared": shared,
                       "fixture": if new > 0 { empty_fixture() } else { Value::Null }})
            })
            .collect();
        let v = json!({
            "failOn": "regressions", "subject": side, "baseline": side, "seed": 1,
            "cases": 10, "baselineFaulted": baseline_fault.1, "uncomparedFailures": 0,
            "seconds": 1.0, "stoppedByTime": false, "invariants": {},
            "regressions": [], "known": [], "fixes": [],
            "subjectFaults": faults,
            "baselineFaults": [{"kind": "crash", "detail": format!("at {}", baseline_fault.0),
                                "stderr": "", "case": baseline_fault.0, "count": baseline_fault.1}],
            "behaviour": {},
        });
        from_json(&v).expect("reads")
    }

    fn empty_fixture() -> Value {
        let config = crate::config::Config::default();
        let none = crate::oracle::InvariantSet::empty();
        crate::fixture::Fixture::new(config, Vec::new(), none, "").to_json()
    }

    /// A fault kind keeps the record of its first new case when either
    /// shard had one (the one a whole run shrinks), else its first case;
    /// counts add up. A baseline fault kind keeps its first case.
    #[test]
    fn fault_kinds_keep_the_record_a_whole_run_keeps() {
        let mut a = gate(&[("crash", 4, 0, 2), ("timeout", 9, 1, 0)], (7, 2));
        let b = gate(&[("crash", 6, 1, 1), ("timeout", 2, 0, 1)], (3, 1));
        a.merge(b).expect("merges");
        let got: Vec<(String, u64, u64, u64, u64)> = a
            .subject_faults
            .iter()
            .map(|f| {
                let kind = f.record.fault.kind.name().to_string();
                (kind, f.record.case_index, f.new, f.shared, f.record.count)
            })
            .collect();
        // crash: shard b's case 6 is the first new one; timeout: shard a's 9.
        let want = [("crash", 6, 1, 3, 4), ("timeout", 9, 1, 1, 2)];
        let want: Vec<_> = want
            .map(|(k, c, n, s, t)| (k.to_string(), c, n, s, t))
            .into();
        assert_eq!(got, want);
        assert_eq!(a.baseline_faults.len(), 1);
        assert_eq!(
            (a.baseline_faults[0].case_index, a.baseline_faults[0].count),
            (3, 3)
        );
        assert_eq!(a.baseline_faulted, 3);
        assert_eq!(a.cases, 20);
    }
}
