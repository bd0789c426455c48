//! A baseline comparison's reports: human, JSON, JUnit XML and Markdown
//! (for `$GITHUB_STEP_SUMMARY` or a pull-request comment). Each says the
//! gate's verdict under its `--fail-on`, the regressions with their
//! fixtures and the commands that replay them on both sides, the known
//! failures and the fixes, the baseline's faults, and the behaviour deltas
//! per case class (baseline → subject).

use std::fmt::Write as _;

use super::behaviour::change_line;
use super::{BaselineReport, FailOn, Shared};
use crate::model::one_line;
use crate::report::junit::{Case as TestCase, Suite as TestSuite};
use crate::report::table::Table;
use crate::report::{
    failure_text, human_verdict, markdown_failure, markdown_fault, markdown_mark, md, md_code,
    write_fault, write_section, write_shrunk_case, ReplayHint,
};

/// How to replay a fixture on each side.
#[derive(Debug, Clone, Default)]
pub struct Hints {
    pub subject: ReplayHint,
    pub baseline: ReplayHint,
}

impl Hints {
    /// The command that reruns case `N` of the gate at `seed`: what a
    /// table that cites case numbers prints beside them.
    fn rerun(&self, seed: u64) -> String {
        let mut cmd = format!("ctxgate check --seed {seed} --case N");
        for flag in &self.subject.flags {
            cmd.push(' ');
            cmd.push_str(&shell_words::quote(flag));
        }
        // The baseline was started as `--subject CMD`; a gate names it
        // with `--baseline CMD`.
        if let [flag, baseline] = &self.baseline.flags[..] {
            if flag == "--subject" {
                cmd.push_str(" --baseline ");
                cmd.push_str(&shell_words::quote(baseline));
            }
        }
        cmd
    }
}

/// The verdict in a line, for every form.
fn verdict(r: &BaselineReport) -> (bool, String) {
    let why = r.gate_failures();
    let not_compared = r.not_compared();
    let regressions = r.regressions.len() + r.fault_regressions().count();
    let tail = format!(
        "{} known failure(s) shared with the baseline, {} fix(es); --fail-on {}",
        r.known.len(),
        r.fixes.len(),
        r.fail_on.name()
    );
    if why.is_empty() {
        let lead = if regressions > 0 {
            format!("{regressions} regression(s), not failing the gate")
        } else {
            "no regression".to_owned()
        };
        return (
            true,
            format!("OK: {lead} in {} compared case(s) ({tail})", r.compared()),
        );
    }
    if !not_compared.is_empty() && why.len() == not_compared.len() {
        return (
            false,
            format!(
                "NOT OK: {} thing(s) were never compared; reproduce the run with --seed {}",
                not_compared.len(),
                r.seed
            ),
        );
    }
    (
        false,
        format!(
            "FAILED: {}; reproduce the run with --seed {} ({tail})",
            why.join("; "),
            r.seed
        ),
    )
}

fn shared_line(s: &Shared) -> String {
    let mut line = format!(
        "{}: {} case(s), first at case {}",
        s.invariant, s.count, s.case_index
    );
    match &s.subject {
        Some(v) if v.detail == s.baseline.detail => {
            let _ = write!(line, " — both: {}", v.detail);
        }
        Some(v) => {
            let _ = write!(
                line,
                " — subject: {} — baseline: {}",
                v.detail, s.baseline.detail
            );
        }
        None => {
            let _ = write!(line, " — baseline: {}", s.baseline.detail);
        }
    }
    line
}

/// A gate's table: each invariant's regressions, known failures, fixes
/// and compared cases, and (in text) each side's pass/fail/n-a counts;
/// marked when it regressed, was never compared, or is known (`md`: or
/// fixed, as Markdown marks it).
fn delta_table(r: &BaselineReport, md: bool) -> Table<'static> {
    let mut columns = vec![
        ("invariant", 28, 0),
        ("regressed", 9, 1),
        ("known", 6, 1),
        ("fixed", 6, 1),
        ("compared", 9, 1),
    ];
    if !md {
        columns.extend([("subject p/f/na", 17, 2), ("baseline p/f/na", 17, 2)]);
    }
    let mut table = Table::new(columns, true);
    let pfn = |t: &crate::check::Tally| format!("{}/{}/{}", t.pass, t.fail, t.not_applicable);
    for (inv, d) in &r.invariants {
        let mark = match (md, d.regressed > 0, d.compared == 0, d.known > 0) {
            (false, true, ..) => "REGRESSED",
            (false, _, true, _) => "NEVER COMPARED",
            (true, true, ..) => "❌",
            (true, _, true, _) => "⚠️ never compared",
            (_, _, _, true) => "known",
            (true, ..) if d.fixed > 0 => "fixed",
            _ => "",
        };
        let name = if md {
            format!("`{inv}`")
        } else {
            inv.to_string()
        };
        let mut cells = vec![name];
        cells.extend([d.regressed, d.known, d.fixed, d.compared].map(|n| n.to_string()));
        if !md {
            let baseline = d.baseline.as_ref().map(pfn);
            cells.extend([
                pfn(&d.subject),
                baseline.unwrap_or_else(|| "not claimed".into()),
            ]);
        }
        table.row(cells, mark);
    }
    table
}

/// A baseline fault kind in a line (its detail as the subject wrote it:
/// each form escapes the line its way).
fn baseline_fault_line(f: &super::BaselineFault) -> String {
    let (kind, n, first, detail) = (f.fault.kind.name(), f.count, f.case_index, &f.fault.detail);
    format!("{kind}: {n} case(s), first at case {first}: {detail}")
}

/// A Markdown section, when it has items: its heading, then an item a
/// bullet, escaped.
fn markdown_list(out: &mut String, head: &str, items: impl IntoIterator<Item = String>) {
    let mut items = items.into_iter().peekable();
    if items.peek().is_some() {
        let _ = writeln!(out, "\n#### {head}\n");
    }
    for item in items {
        let _ = writeln!(out, "- {}", md(&item));
    }
}

/// The human report.
pub fn human(r: &BaselineReport, hints: &Hints) -> String {
    human_with_suite(r, hints, &[])
}

/// The human report, its verdict joined by the problems of the run's suite.
pub(crate) fn human_with_suite(r: &BaselineReport, hints: &Hints, suite: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ctxgate check --baseline — subject {} {} ({} format) against baseline {} {} ({} format), seed {}{}",
        one_line(&r.subject.name),
        one_line(&r.subject.version),
        r.subject.format,
        one_line(&r.baseline.name),
        one_line(&r.baseline.version),
        r.baseline.format,
        r.seed,
crate::report::part_line(r.shard)
    );
    let _ = writeln!(
        out,
        "{} cases in {:.2} s, {} compared{}{}",
        r.cases,
        r.run.elapsed.as_secs_f64(),
        r.compared(),
        if r.baseline_faulted > 0 {
            format!(" ({} not: the baseline faulted)", r.baseline_faulted)
        } else {
            String::new()
        },
        if r.run.stopped_by_time {
            " (time budget reached)"
        } else {
            ""
        }
    );
    crate::report::write_not_sent(&mut out, &r.run, &[&r.subject, &r.baseline]);
    let _ = writeln!(out);
    delta_table(r, false).text(&mut out);
    crate::report::write_not_checked(&mut out, &r.checked);
    for g in &r.regressions {
        let f = &g.failure;
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "REGRESSION {} (case {}; {} case(s) in all)",
            f.invariant,
            f.case_index,
            r.invariants.get(&f.invariant).map_or(1, |d| d.regressed)
        );
        let _ = writeln!(out, "  subject: {}", f.violation);
        let baseline = one_line(&g.baseline);
        let _ = writeln!(out, "  baseline: {baseline} on the shrunk case");
        write_shrunk_case(&mut out, f, &hints.subject);
        if let Some(p) = f.saved.path() {
            let command = hints.baseline.command(&p.display().to_string());
            let _ = writeln!(out, "  the baseline holds: {}", one_line(&command));
        }
    }
    for f in &r.subject_faults {
        let rec = &f.record;
        let head = format!(
            "{} {} ({} new case(s), {} shared with a baseline fault, first at case {})",
            if f.new > 0 {
                "REGRESSION fault"
            } else {
                "KNOWN fault"
            },
            rec.fault.kind.name(),
            f.new,
            f.shared,
            rec.case_index
        );
        write_fault(&mut out, &head, rec, (f.new > 0).then_some(&hints.subject));
    }
    let known = match r.fail_on {
        FailOn::AnyFailure => {
            "KNOWN (both sides fail on the same case; failing the gate: --fail-on any-failure):"
        }
        _ => "KNOWN (both sides fail on the same case; not failing the gate):",
    };
    write_section(&mut out, known, r.known.iter().map(shared_line));
    let fixed = "FIXED (the baseline failed, the subject holds):";
    write_section(&mut out, fixed, r.fixes.iter().map(shared_line));
    let faults = r.baseline_faults.iter().map(baseline_fault_line);
    let head = "BASELINE FAULTS (reported, not the subject's; those cases are not compared):";
    write_section(&mut out, head, faults);
    if r.uncompared_failures > 0 {
        let _ = writeln!(
            out,
            "  the subject failed {} invariant verdict(s) on those cases",
            r.uncompared_failures
        );
    }
    if !r.behaviour.classes.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "behaviour, baseline → subject, per case class (the cases both answered):"
        );
        r.behaviour.table("all").text(&mut out);
        let changed = r.behaviour.changed();
        if !changed.is_empty() {
            let rerun = one_line(&hints.rerun(r.seed));
            let _ = writeln!(out, "changed most (rerun case N: {rerun}):");
            for (c, d) in changed {
                let _ = writeln!(
                    out,
                    "  {} ({} of {} case(s) answered differently):",
                    c.name(),
                    d.changed,
                    d.subject.answered
                );
                for ch in &d.changed_most {
                    let _ = writeln!(out, "    {}", change_line(ch));
                }
            }
        }
    }
    let head = "NOT COMPARED (a run that compared nothing cannot pass):";
    write_section(&mut out, head, r.not_compared());
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", human_verdict(&verdict(r).1, suite));
    out
}

/// JUnit XML: one test case per checked invariant (a regression fails it;
/// a known failure fails it only under `--fail-on any-failure`, and is
/// otherwise in its `system-out`), one per subject fault kind and per
/// baseline fault kind (never failing), one `run` case when nothing was
/// compared.
pub fn junit(r: &BaselineReport, hints: &Hints) -> TestSuite {
    let class = format!("ctxgate.baseline.{}", r.subject.name);
    let any = r.fail_on == FailOn::AnyFailure;
    let mut cases = Vec::new();
    let mut case = |name: &str, failure: Option<(&str, String, String)>, out: Vec<String>| {
        let mut case = TestCase::new(&class, name);
        if let Some((kind, message, text)) = failure {
            case = case.failed(kind, &message, &text);
        }
        case.out = (!out.is_empty()).then(|| out.join("\n"));
        cases.push(case);
    };
    for (inv, d) in &r.invariants {
        let mut out = Vec::new();
        let known = r.known.iter().find(|s| s.invariant == *inv);
        let fixed = r.fixes.iter().find(|s| s.invariant == *inv);
        if let Some(s) = known {
            out.push(format!(
                "known (shared with the baseline): {}",
                shared_line(s)
            ));
        }
        if let Some(s) = fixed {
            out.push(format!("fixed: {}", shared_line(s)));
        }
        let failure = if let Some(g) = r.regressions.iter().find(|g| g.failure.invariant == *inv) {
            let f = &g.failure;
            let head = format!("{}\nbaseline: {}\n", f.violation, g.baseline);
            let body = failure_text(head, f, &hints.subject);
            Some(("regression", f.violation.detail.clone(), body))
        } else if d.compared == 0 {
            let why = format!("{inv} was never compared in {} case(s)", r.compared());
            Some(("not-compared", why.clone(), why))
        } else {
            known
                .filter(|_| any)
                .map(|s| ("known", shared_line(s), shared_line(s)))
        };
        case(inv.name(), failure, out);
    }
    for f in &r.subject_faults {
        let name = format!("fault:{}", f.record.fault.kind.name());
        let text = f.record.fault.to_string();
        let failure = if f.new > 0 {
            Some(("fault", f.record.fault.detail.clone(), text.clone()))
        } else if any {
            Some(("known-fault", f.record.fault.detail.clone(), text.clone()))
        } else {
            None
        };
        case(&name, failure, vec![text]);
    }
    for f in &r.baseline_faults {
        let name = format!("baseline-fault:{}", f.fault.kind.name());
        let line = format!(
            "the baseline faulted on {} case(s), first at case {} (not compared): {}",
            f.count, f.case_index, f.fault
        );
        case(&name, None, vec![line]);
    }
    if r.checked.is_empty() || r.cases == 0 || r.compared() == 0 {
        let why = r.not_compared().join("\n");
        case("run", Some(("not-compared", why.clone(), why)), Vec::new());
    }
    TestSuite {
        name: format!("ctxgate check --baseline (seed {})", r.seed),
        seconds: Some(r.run.elapsed.as_secs_f64()),
        cases,
    }
}

/// Markdown, for `$GITHUB_STEP_SUMMARY` or a pull-request comment.
pub fn markdown(r: &BaselineReport, hints: &Hints) -> String {
    markdown_with_suite(r, hints, &[])
}

/// Markdown, its verdict joined by the problems of the run's suite.
pub(crate) fn markdown_with_suite(r: &BaselineReport, hints: &Hints, suite: &[String]) -> String {
    let mut out = String::new();
    let (ok, line) = verdict(r);
    let regressions = r.regressions.len() + r.fault_regressions().count();
    let mark = if !r.not_compared().is_empty() {
        "⚠️ not everything was compared".to_owned()
    } else if regressions > 0 {
        format!("❌ {regressions} regression(s)")
    } else if ok {
        "✅ no regression".to_owned()
    } else {
        "❌ failed".to_owned()
    };
    let _ = writeln!(
        out,
        "### ctxgate check: {} {} against baseline {} {} — {}\n",
        md(&r.subject.name),
        md(&r.subject.version),
        md(&r.baseline.name),
        md(&r.baseline.version),
        markdown_mark(&mark, suite)
    );
    let _ = writeln!(
        out,
        "{} cases, seed {}{}, {} compared · {:.1} s · `--fail-on {}`\n",
        r.cases,
        r.seed,
        crate::report::part_line(r.shard),
        r.compared(),
        r.run.elapsed.as_secs_f64(),
        r.fail_on.name()
    );
    let _ = writeln!(out, "{}\n", md(&line));
    delta_table(r, true).markdown(&mut out);
    for line in r.not_compared() {
        let _ = writeln!(out, "\n⚠️ {}", md(&line));
    }
    if regressions > 0 {
        let _ = writeln!(out, "\n#### Regressions");
    }
    for g in &r.regressions {
        let tail = format!(" — the baseline: {}", md(&g.baseline));
        let replays = [(&hints.subject, ""), (&hints.baseline, "  # holds")];
        markdown_failure(&mut out, &g.failure, &tail, &replays);
    }
    for f in r.fault_regressions() {
        let counted = format!("{} new case(s)", f.new);
        markdown_fault(&mut out, &f.record.fault, &counted, f.record.case_index);
    }
    let items = |list: &[Shared]| list.iter().map(shared_line).collect::<Vec<_>>();
    markdown_list(
        &mut out,
        "Known failures (shared with the baseline)",
        items(&r.known),
    );
    let fixes = "Fixes (the baseline failed, the subject holds)";
    markdown_list(&mut out, fixes, items(&r.fixes));
    let faults = r.baseline_faults.iter().map(baseline_fault_line);
    markdown_list(&mut out, "Baseline faults (not compared)", faults);
    if !r.behaviour.classes.is_empty() {
        let _ = writeln!(out, "\n#### Behaviour, baseline → subject\n");
        r.behaviour.table("**all**").markdown(&mut out);
        let changed = r.behaviour.changed();
        if !changed.is_empty() {
            let _ = writeln!(
                out,
                "\n<details><summary>The cases that changed most</summary>\n\nRerun case N:\n\n{}\n",
                md_code("sh", &one_line(&hints.rerun(r.seed)))
            );
            for (c, d) in changed {
                let _ = writeln!(
                    out,
                    "- **{}** ({} of {} answered differently)",
                    c.name(),
                    d.changed,
                    d.subject.answered
                );
                for ch in &d.changed_most {
                    let _ = writeln!(out, "  - {}", md(&change_line(ch)));
                }
            }
            let _ = writeln!(out, "\n</details>");
        }
    }
    out
}
