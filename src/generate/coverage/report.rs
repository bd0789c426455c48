//! Coverage written out: as JSON (and read back, to merge shards) and as
//! the table `ctxgate gen --stats` prints.

use std::fmt;

use serde_json::{json, Map, Value};

use super::bins::{GROUPS, RESULTS};
use super::Coverage;

impl Coverage {
    pub fn to_json(&self) -> Value {
        let (body, messages) = self.means();
        let (trigger, ceiling, either) = self.boundary_shares();
        let mut groups = Map::new();
        for (g, (name, bins)) in GROUPS.iter().enumerate() {
            let bins: Map<String, Value> = bins
                .iter()
                .zip(&self.counts[g])
                .map(|(l, n)| ((*l).to_owned(), json!(n)))
                .collect();
            groups.insert((*name).to_owned(), Value::Object(bins));
        }
        let results: Map<String, Value> = RESULTS
            .iter()
            .zip(self.results)
            .map(|(l, n)| ((*l).to_owned(), json!(n)))
            .collect();
        let total = self.results_total().max(1) as f64;
        let mut v = json!({
            "cases": self.cases,
            "illFormed": self.ill_formed,
            "meanBodyBytes": body.round() as u64,
            "maxBodyBytes": self.body_max,
            "meanMessages": (messages * 10.0).round() / 10.0,
            "shares": {
                "atTrigger": (trigger * 1000.0).round() / 1000.0,
                "atCeiling": (ceiling * 1000.0).round() / 1000.0,
                "atBoundary": (either * 1000.0).round() / 1000.0,
                "compacted": (self.results[1] as f64 / total * 1000.0).round() / 1000.0,
                "cannotFit": (self.results[2] as f64 / total * 1000.0).round() / 1000.0,
            },
            "results": results,
            "groups": groups,
            "missing": self.missing(),
            "totals": {
                "bodyBytes": self.body_total,
                "messages": self.messages_total,
                "atTrigger": self.at_trigger,
                "atCeiling": self.at_ceiling,
                "atBoundary": self.at_either,
            },
        });
        // Only when there are some: the cases the subject faulted on
        // before it answered (in none of `results`).
        if self.unanswered > 0 {
            v["unanswered"] = json!(self.unanswered);
        }
        // Only when there are some: refusals no checked invariant judged.
        if self.unjudged_refusals > 0 {
            v["cannotFitUnjudged"] = json!(self.unjudged_refusals);
        }
        // Only under `--config`: the groups it pins (left out of `missing`).
        if self.pinned_by_config {
            v["pinnedByConfig"] = json!(self.pinned_groups());
        }
        v
    }

    /// Read back what [`Coverage::to_json`] wrote, so that the coverage of
    /// shards can be merged (`ctxgate report merge`).
    pub fn from_json(v: &Value) -> Option<Coverage> {
        let n = |x: Option<&Value>| x.and_then(Value::as_u64);
        let totals = v.get("totals")?;
        let mut c = Coverage {
            cases: n(v.get("cases"))?,
            ill_formed: n(v.get("illFormed"))?,
            body_total: n(totals.get("bodyBytes"))?,
            body_max: n(v.get("maxBodyBytes"))?,
            messages_total: n(totals.get("messages"))?,
            at_trigger: n(totals.get("atTrigger"))?,
            at_ceiling: n(totals.get("atCeiling"))?,
            at_either: n(totals.get("atBoundary"))?,
            ..Coverage::default()
        };
        for (g, (name, bins)) in GROUPS.iter().enumerate() {
            let group = v.get("groups")?.get(*name)?;
            for (b, label) in bins.iter().enumerate() {
                c.counts[g][b] = n(group.get(*label))?;
            }
        }
        for (k, label) in RESULTS.iter().enumerate() {
            c.results[k] = n(v.get("results")?.get(*label))?;
        }
        // Absent from the reports of ctxgate before it counted them.
        c.unanswered = n(v.get("unanswered")).unwrap_or(0);
        c.unjudged_refusals = n(v.get("cannotFitUnjudged")).unwrap_or(0);
        c.pinned_by_config = v.get("pinnedByConfig").is_some_and(|p| !p.is_null());
        Some(c)
    }
}

fn kib(bytes: f64) -> String {
    if bytes >= (1 << 20) as f64 {
        format!("{:.1} MiB", bytes / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes / 1024.0)
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (body, messages) = self.means();
        let (trigger, ceiling, either) = self.boundary_shares();
        let pct = |x: f64| format!("{:.1}%", 100.0 * x);
        writeln!(
            f,
            "coverage of {} cases: body mean {} (max {}), {:.1} messages mean{}",
            self.cases,
            kib(body),
            kib(self.body_max as f64),
            messages,
            if self.ill_formed > 0 {
                format!(", {} ill formed", self.ill_formed)
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "at a boundary: {} (estimate within ±1 token of the trigger {}, body within ±1 byte of the ceiling {})",
            pct(either),
            pct(trigger),
            pct(ceiling)
        )?;
        let total = self.results_total();
        let unanswered = match self.unanswered {
            0 => String::new(),
            n => format!("; {n} case(s) had no answer (the subject faulted)"),
        };
        if total > 0 {
            let r = |k: usize| pct(self.results[k] as f64 / total as f64);
            writeln!(
                f,
                "results of {total}: {} unchanged, {} compacted, {} cannot_fit{unanswered}",
                r(0),
                r(1),
                r(2)
            )?;
        } else if self.unanswered > 0 {
            writeln!(f, "results: none{unanswered}")?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<28} {:<40} {:>7} {:>7}",
            "knob / class", "range", "cases", "share"
        )?;
        for (g, (name, bins)) in GROUPS.iter().enumerate() {
            for (b, label) in bins.iter().enumerate() {
                let n = self.counts[g][b];
                let group = if b == 0 { *name } else { "" };
                let mark = match (n, self.pinned(g)) {
                    (0, true) => "  ← pinned by --config",
                    (0, false) => "  ← never reached",
                    _ => "",
                };
                writeln!(
                    f,
                    "{group:<28} {label:<40} {n:>7} {:>7}{mark}",
                    pct(self.share(n))
                )?;
            }
        }
        let missing = self.missing();
        let pinned = self.pinned_groups();
        match (missing.is_empty(), pinned.is_empty()) {
            (true, true) => writeln!(f, "\nevery class and knob range reached")?,
            (true, false) => writeln!(f, "\nevery class and knob range not pinned reached")?,
            (false, _) => writeln!(f, "\nnever reached: {}", missing.join("; "))?,
        }
        if !pinned.is_empty() {
            writeln!(
                f,
                "pinned by --config (every case has its one value): {}",
                pinned.join(", ")
            )?;
        }
        Ok(())
    }
}
