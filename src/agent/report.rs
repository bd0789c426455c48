//! An agent run's report in the four forms `check` writes: human text,
//! Markdown, JSON and JUnit — through `report`'s table and JUnit writer,
//! with every string that came from the agent (its command, its output, the
//! requests it sent) escaped for the form it is written in.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::invariants::AgentInvariant;
use super::run::{AgentReport, Replayed, DRIVEN};
use super::tools::shell_word;
use crate::model::one_line;
use crate::model::text::group;
use crate::report::render::ReportKind;
use crate::report::{junit, md, md_code, table::Table};
use crate::run::Saved;

impl AgentReport {
    /// The report in `kind`'s form.
    pub fn render(&self, kind: ReportKind) -> String {
        match kind {
            ReportKind::Human => self.human(),
            ReportKind::Markdown => self.markdown(),
            ReportKind::Json => {
                let mut s = crate::report::json::pretty(&self.to_json());
                s.push('\n');
                s
            }
            ReportKind::Junit => junit::document(&[self.junit()]),
        }
    }

    fn table(&self, markdown: bool) -> Table<'static> {
        let mut t = Table::new(
            vec![
                ("invariant", 26, 0),
                ("pass", 7, 1),
                ("fail", 7, 1),
                ("n/a", 7, 1),
            ],
            true,
        );
        for (inv, tally) in &self.tally {
            let never = tally.pass + tally.fail == 0;
            let excused = never && !self.unexercised_failing().contains(inv);
            let mark = match (tally.fail > 0, never, markdown) {
                (true, _, false) => "FAIL",
                (true, _, true) => "❌",
                (_, true, _) if excused => "(no request was refused)",
                (_, true, false) => "NEVER EXERCISED",
                (_, true, true) => "⚠️ never exercised",
                _ => "",
            };
            let name = if markdown {
                format!("`{inv}`")
            } else {
                inv.to_string()
            };
            t.row(
                vec![
                    name,
                    tally.pass.to_string(),
                    tally.fail.to_string(),
                    tally.not_applicable.to_string(),
                ],
                mark,
            );
        }
        t
    }

    fn coverage_line(&self) -> String {
        let c = &self.coverage;
        // Images only when a case read one (a generator config turned them on).
        let images = if c.image_results == 0 {
            String::new()
        } else {
            format!(
                "; {} image result(s): {} sent on as read, {} re-encoded, {} as text",
                c.image_results, c.images_as_sent, c.images_reencoded, c.images_as_text
            )
        };
        let p = &self.probes;
        let probes = match p.cases {
            0 if p.asked => "; no ceiling probe: no case that held had a request within earlyTolerance of the ceiling and results with room to grow it".to_owned(),
            0 => String::new(),
            n => format!(
                "; {n} ceiling probe(s) in {} run(s), {} in CJK: {} compacted first, {} failed, {} not shown by the tool, {} never on the byte",
                p.runs, p.wide, p.compacted, p.failed, p.not_shown, p.unlanded
            ),
        };
        format!(
            "{} request(s): {} loop, {} summary, {} side; {} answered 413, {} context-length errors, {} recovered; {} compaction(s) seen; {} parallel answer(s); largest body {} bytes, {} tokens{}{}",
            c.requests,
            c.loop_requests,
            c.summary_requests,
            c.side_requests,
            c.refused_too_large,
            c.refused_over_window,
            c.recoveries,
            c.compactions,
            c.parallel_answers,
            group(c.max_body_bytes),
            group(c.max_tokens),
            images,
            probes
        )
    }

    fn replay_line(&self, saved: &Saved) -> Option<String> {
        let p = saved.path()?;
        // A driven run's agent is the driving program's: it replays with
        // `--driven` (Python's `ctxgate.agent.replay`, the npm helper's
        // `replay`), never with a command to run.
        let agent = match self.agent.as_str() {
            DRIVEN => "--driven".to_string(),
            cmd => format!("--run {}", shell_word(cmd)),
        };
        Some(format!(
            "ctxgate agent replay {} {agent}",
            shell_word(&p.display().to_string()),
        ))
    }

    fn verdict_line(&self) -> String {
        if let Some(why) = self.unplayable.as_ref().filter(|_| self.exit_code() == 2) {
            return format!("ERROR: the script cannot be played: {}", one_line(why));
        }
        let never = self.unexercised_failing();
        match self.exit_code() {
            0 => format!(
                "OK: every checked invariant held on {} case(s), and each was exercised",
                self.cases
            ),
            _ if self.cases == 0 => "FAILED: no case ran".into(),
            _ if self.failures.is_empty() && self.flaky.is_empty() && !never.is_empty() => format!(
                "FAILED: never exercised: {}",
                never
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => format!(
                "FAILED: {} invariant(s) failed, {} flaky{}",
                self.failures.len(),
                self.flaky.len(),
                match &self.unplayable {
                    Some(why) => format!(
                        "; then the run stopped, that case unjudged: {}",
                        one_line(why)
                    ),
                    None => String::new(),
                }
            ),
        }
    }

    fn human(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "ctxgate agent — agent {}, seed {}, dialect(s): {}",
            one_line(&self.agent),
            self.seed,
            if self.dialects.is_empty() {
                "none seen".into()
            } else {
                self.dialects.join(", ")
            }
        );
        let _ = writeln!(
            out,
            "{} case(s) in {:.1} s{}; CPU: the agent {:.1} s, ctxgate {:.1} s ({:.0}%)",
            self.cases,
            self.elapsed.as_secs_f64(),
            if self.time_budget_reached {
                " (time budget reached)"
            } else {
                ""
            },
            self.cpu.agents,
            self.cpu.ctxgate,
            100.0 * self.cpu.share()
        );
        if let Some(why) = &self.stopped_early {
            let _ = writeln!(out, "The run stopped early: {}", one_line(why));
        }
        let _ = writeln!(out, "{}\n", self.coverage_line());
        self.table(false).text(&mut out);
        for f in &self.failures {
            let shrunk = match f.shrink_runs {
                0 => format!("{} turn(s), {} call(s), not shrunk", f.from.0, f.from.1),
                runs => format!(
                    "shrunk from {} turn(s), {} call(s) to {}, {} in {runs} agent run(s)",
                    f.from.0, f.from.1, f.to.0, f.to.1
                ),
            };
            let _ = writeln!(out, "\nFAILED {} (case {}; {shrunk})", f.invariant, f.case);
            let _ = writeln!(out, "  {}", one_line(&f.finding.detail));
            // An empty text (a file of 0 bytes) is said, not left blank.
            let shown = |t: &str| match t.is_empty() {
                true => "(empty)".to_owned(),
                false => one_line(t),
            };
            if let Some(e) = &f.finding.expected {
                let _ = writeln!(out, "  expected: {}", shown(e));
            }
            if let Some(r) = &f.finding.received {
                let _ = writeln!(out, "  received: {}", shown(r));
            }
            match &f.fixture {
                Saved::At(p) => {
                    let _ = writeln!(out, "  fixture: {}", one_line(&p.display().to_string()));
                }
                Saved::Failed(why) => {
                    let _ = writeln!(out, "  fixture NOT saved: {}", one_line(why));
                }
                Saved::NotAsked => {}
            }
            if let Some(line) = self.replay_line(&f.fixture) {
                let _ = writeln!(out, "  replay: {}", one_line(&line));
            }
        }
        for f in &self.flaky {
            let _ = writeln!(
                out,
                "\nFLAKY {} (case {}): failed again on {} of {} re-runs: {}",
                f.invariant,
                f.case,
                f.failed_again,
                f.reruns,
                one_line(&f.detail)
            );
        }
        let _ = writeln!(out, "\n{}", self.verdict_line());
        out
    }

    fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "### ctxgate agent — {}\n\nagent: {}; seed {}, {} case(s) in {:.1} s\n\n{}\n",
            if self.exit_code() == 0 {
                "✅ every invariant held"
            } else {
                "❌ failed"
            },
            md(&self.agent),
            self.seed,
            self.cases,
            self.elapsed.as_secs_f64(),
            md(&self.coverage_line())
        );
        self.table(true).markdown(&mut out);
        for f in &self.failures {
            let _ = writeln!(
                out,
                "\n**{}** (case {}): {}",
                f.invariant,
                f.case,
                md(&f.finding.detail)
            );
            if let Some(line) = self.replay_line(&f.fixture) {
                // A fenced block: escapes and entities are not read inside
                // inline code, so an escaped command would not paste.
                let _ = writeln!(out, "\n{}", md_code("sh", &line));
            }
        }
        for f in &self.flaky {
            let _ = writeln!(
                out,
                "\n**flaky {}** (case {}): {}",
                f.invariant,
                f.case,
                md(&f.detail)
            );
        }
        let _ = writeln!(out, "\n{}", md(&self.verdict_line()));
        out
    }

    fn junit(&self) -> junit::Suite {
        let class = "ctxgate.agent";
        let mut cases = Vec::new();
        for (inv, t) in &self.tally {
            let case = junit::Case::new(class, inv.name());
            cases.push(match self.failures.iter().find(|f| f.invariant == *inv) {
                Some(f) => {
                    let mut text = f.finding.detail.clone();
                    if let Some(line) = self.replay_line(&f.fixture) {
                        text.push_str("\nreplay: ");
                        text.push_str(&line);
                    }
                    case.failed(inv.name(), &f.finding.detail, &text)
                }
                None if t.fail > 0 => {
                    case.failed(inv.name(), "failed (flaky)", "failed, not on every re-run")
                }
                None if self.unexercised_failing().contains(inv) => {
                    case.failed("not-exercised", "never exercised", "never exercised")
                }
                None => case,
            });
        }
        if let Some(why) = &self.unplayable {
            cases.push(junit::Case::new(class, "run").failed("unplayable", why, why));
        }
        junit::Suite {
            name: format!("ctxgate agent (seed {})", self.seed),
            seconds: Some(self.elapsed.as_secs_f64()),
            cases,
        }
    }

    pub fn to_json(&self) -> Value {
        let c = &self.coverage;
        json!({
            "ctxgate": env!("CARGO_PKG_VERSION"),
            "agent": self.agent,
            "seed": self.seed,
            "cases": self.cases,
            "seconds": self.elapsed.as_secs_f64(),
            "timeBudgetReached": self.time_budget_reached,
            "dialects": self.dialects,
            "checked": self.checked.iter().map(|i| i.name()).collect::<Vec<_>>(),
            "tally": self.tally.iter().map(|(i, t)| (i.name().to_owned(), serde_json::to_value(t).expect("serialises"))).collect::<serde_json::Map<_, _>>(),
            "failures": self.failures.iter().map(|f| json!({
                "invariant": f.invariant.name(), "case": f.case, "detail": f.finding.detail,
                "request": f.finding.request, "expected": f.finding.expected,
                "received": f.finding.received,
                "shrunk": {"from": {"turns": f.from.0, "calls": f.from.1, "resultBytes": f.from.2},
                    "to": {"turns": f.to.0, "calls": f.to.1, "resultBytes": f.to.2}, "runs": f.shrink_runs},
                "fixture": f.fixture.path().map(|p| p.display().to_string()),
                "replay": self.replay_line(&f.fixture),
            })).collect::<Vec<_>>(),
            "flaky": self.flaky.iter().map(|f| json!({"invariant": f.invariant.name(), "case": f.case,
                "failedAgain": f.failed_again, "reruns": f.reruns, "detail": f.detail})).collect::<Vec<_>>(),
            "failingCases": self.failing_cases.iter().map(|f| json!({"case": f.case,
                "invariant": f.invariant.name(), "detail": f.detail})).collect::<Vec<_>>(),
            "coverage": {"requests": c.requests, "loopRequests": c.loop_requests,
                "summaryRequests": c.summary_requests, "sideRequests": c.side_requests,
                "refusedTooLarge": c.refused_too_large, "refusedOverWindow": c.refused_over_window,
                "recoveries": c.recoveries, "compactions": c.compactions,
                "turnsAnswered": c.turns_answered, "parallelAnswers": c.parallel_answers,
                "maxBodyBytes": c.max_body_bytes, "maxTokens": c.max_tokens,
                "unreadableRequests": c.unreadable, "imageResults": c.image_results,
                "imagesAsSent": c.images_as_sent, "imagesReencoded": c.images_reencoded,
                "imagesAsText": c.images_as_text},
            "ceilingProbes": {"cases": self.probes.cases, "runs": self.probes.runs,
                "compacted": self.probes.compacted, "failed": self.probes.failed,
                "notShown": self.probes.not_shown, "unlanded": self.probes.unlanded,
                "wide": self.probes.wide},
            "cpu": {"ctxgateSeconds": self.cpu.ctxgate, "agentSeconds": self.cpu.agents,
                "ctxgateShare": self.cpu.share()},
            "neverExercised": self.never_exercised().iter().map(|i| i.name()).collect::<Vec<_>>(),
            "unplayable": self.unplayable,
            "stoppedEarly": self.stopped_early,
            "exitCode": self.exit_code(),
        })
    }
}

/// A replay of agent fixtures, as text: a line a fixture, then the verdict.
pub fn replay_text(replayed: &[Replayed], expect_failures: bool) -> (String, u8) {
    let mut out = String::new();
    let (mut held, mut failed, mut unjudged, mut not_played) = (0, 0, 0, 0);
    for r in replayed {
        let name = one_line(&r.path.display().to_string());
        let failed_now = r.failed();
        if let Some(why) = &r.not_played {
            not_played += 1;
            let _ = writeln!(out, "ERROR  {name}: not played: {}", one_line(why));
        } else if !failed_now.is_empty() {
            failed += 1;
            let _ = writeln!(
                out,
                "FAILED {name}: {}",
                failed_now
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for f in r
                .judged
                .findings
                .iter()
                .filter(|f| failed_now.contains(&f.invariant))
            {
                let _ = writeln!(out, "  {}: {}", f.invariant, one_line(&f.detail));
            }
        } else if r.judged_any() {
            held += 1;
            let _ = writeln!(out, "held   {name}");
        } else if let Some(why) = r.refusal_never_came() {
            held += 1;
            let _ = writeln!(
                out,
                "held   {name}: recovers-after-refusal not exercised ({why}); every invariant judged held"
            );
        } else {
            unjudged += 1;
            let _ = writeln!(
                out,
                "SKIP   {name}: nothing of it was judged: {}",
                r.why_unjudged()
            );
        }
    }
    let ok = if expect_failures {
        failed == replayed.len()
    } else {
        failed == 0 && held > 0
    };
    let _ = writeln!(
        out,
        "agent replay: {held} held, {failed} failed, {unjudged} not judged, of {}{}",
        replayed.len(),
        if expect_failures {
            " (every one expected to fail)"
        } else {
            ""
        }
    );
    // A fixture not played is bad usage (a command that does not start),
    // whatever was expected of it.
    let code = match (not_played > 0, ok) {
        (true, _) => 2,
        (false, true) => 0,
        (false, false) => 1,
    };
    (out, code)
}

/// The invariants' names and what each means: `agent --list-invariants`.
pub fn invariant_list() -> String {
    AgentInvariant::ALL
        .iter()
        .map(|i| format!("{:<26} {}\n", i.name(), i.description()))
        .collect()
}
