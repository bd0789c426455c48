//! Reports of a check run: human (a table, coverage, throughput, each
//! failure with its minimal history and the command that replays it), JSON,
//! and JUnit XML (one test case per invariant) for CI systems.

pub mod diff;
pub mod file;
pub(crate) mod json;
pub mod junit;
pub mod merge;
pub mod render;
pub(crate) mod table;

pub use crate::oracle::{violation_lines, EDGE};
pub use json::{from_json, to_json};

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::body::body_bytes;

use crate::check::{CheckReport, Failure, FaultRecord, RunFacts, Saved};
use crate::model::{engine, one_line, Message};
use crate::subject::{Fault, SubjectInfo};

/// How to print the command that replays a fixture: the flags that chose
/// the subject (`--subject CMD`, `--defect NAME`, `--estimator NAME`; none:
/// the reference). The JSON reports record them (`replayWith`), so that
/// `report merge` prints the lines the shards would have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayHint {
    pub flags: Vec<String>,
}

impl ReplayHint {
    /// Replay against the external subject `cmd`.
    pub fn subject(cmd: impl Into<String>) -> ReplayHint {
        ReplayHint {
            flags: vec!["--subject".into(), cmd.into()],
        }
    }

    /// How to replay a check's failure `f`: this hint, and, for an
    /// invariant the subject does not claim (explored, `check --claim`),
    /// `--claim INV`, without which the replay judges nothing.
    pub fn for_failure(&self, r: &CheckReport, f: &Failure) -> ReplayHint {
        let mut hint = self.clone();
        if r.explored.contains(f.invariant) {
            hint.flags.push("--claim".into());
            hint.flags.push(f.invariant.name().into());
        }
        hint
    }

    pub fn command(&self, path: &str) -> String {
        let mut cmd = format!("ctxgate replay {}", shell_words::quote(path));
        for flag in &self.flags {
            cmd.push(' ');
            cmd.push_str(&shell_words::quote(flag));
        }
        cmd
    }

    /// What [`ReplayHint::to_json`] wrote, if it is there.
    pub fn from_json(v: Option<&Value>) -> Option<ReplayHint> {
        let flags = v?.as_array()?;
        Some(ReplayHint {
            flags: flags
                .iter()
                .map(|f| f.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
        })
    }

    pub fn to_json(&self) -> Value {
        json!(self.flags)
    }
}

/// The lines of a human report that say what a run did not send as drawn,
/// because of what the subject — in a gate, either side — declared in its
/// hello (SPEC §6) or `--wire-format`: image cases to a text-only subject,
/// cases re-aimed to its formats.
pub(crate) fn write_not_sent(out: &mut String, run: &RunFacts, sides: &[&SubjectInfo]) {
    let text_only = sides.iter().any(|s| !s.content_parts);
    if text_only || run.images_not_sent > 0 {
        let _ = writeln!(
            out,
            "contentParts: false — the subject takes text only: {} case(s) with images were not sent (generated ones went without their images; the coverage table's image rows stay unreached)",
            run.images_not_sent
        );
    }
    if run.own_aimed > 0 {
        let _ = writeln!(
            out,
            "own count: {} case(s) aimed at the subject's own point (its estimate on compactAt × trigger, or a token either side), {} on it",
            run.own_aimed, run.own_on_point
        );
    }
    if !run.wire_formats.is_all() || run.formats_re_aimed > 0 {
        // Every side measures every format: `--wire-format` chose them.
        let why = match sides.iter().all(|s| s.wire_formats.is_all()) {
            true => "--wire-format",
            false => "the subject's hello `wireFormats` measures these only",
        };
        let _ = writeln!(
            out,
            "wire formats: {} ({why}): {} case(s) drawn in another format were sent in one of these",
            run.wire_formats, run.formats_re_aimed
        );
    }
}

/// The line saying how many `cannot_fit` answers went unjudged: no
/// invariant the run checked judged them (`CaseResult::refusal_judged`) —
/// a token limiter that refuses a fifth of its cases is otherwise given no
/// word about it — and which claims would.
pub(crate) fn write_unjudged_refusals(
    out: &mut String,
    unjudged: u64,
    checked: &crate::oracle::InvariantSet,
) {
    use crate::oracle::Invariant::{BodyUnderCeiling, NoPrematureCompaction, Progress};
    if unjudged == 0 {
        return;
    }
    let mut would = vec![format!(
        "{BodyUnderCeiling} (a refusal is right only when head + pinned + last iteration is over the ceiling)"
    )];
    if !checked.contains(Progress) {
        would.push(format!("{Progress} (a refusal of a due history, on the subject's own terms: right when that minimal output is over the ceiling or, by its own estimate, over the effective window)"));
    }
    if !checked.contains(NoPrematureCompaction) {
        would.push(format!(
            "{NoPrematureCompaction} (a refusal where nothing was due)"
        ));
    }
    let _ = writeln!(
        out,
        "cannot_fit: {unjudged} answer(s) not judged by any invariant this run checked; claim {} in the hello, or name it with --claim, to judge them",
        would.join(", or ")
    );
}

/// The line naming the invariants a run did not check, if any (a human
/// report's, of a check or a baseline gate).
pub(crate) fn write_not_checked(out: &mut String, checked: &crate::oracle::InvariantSet) {
    let unchecked: Vec<&str> = crate::oracle::Invariant::ALL
        .into_iter()
        .filter(|i| !checked.contains(*i))
        .map(|i| i.name())
        .collect();
    if !unchecked.is_empty() {
        let _ = writeln!(
            out,
            "not checked (not claimed by the subject or not asked): {}",
            unchecked.join(", ")
        );
    }
}

/// The human report.
pub fn human(r: &CheckReport, hint: &ReplayHint) -> String {
    human_with_suite(r, hint, &[])
}

/// The human report, its verdict joined by the problems of the run's suite.
pub(crate) fn human_with_suite(r: &CheckReport, hint: &ReplayHint, suite: &[String]) -> String {
    let mut out = String::new();
    let secs = r.run.elapsed.as_secs_f64().max(1e-9);
    let shard = match r.shard {
        Some(s) if s.one_case => format!(", case {} alone", s.case()),
        Some(s) => format!(
            ", shard {}/{} (the cases ≡ {} mod {})",
            s.k,
            s.n,
            s.k - 1,
            s.n
        ),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "ctxgate check — subject {} {} ({} format), seed {}{shard}",
        one_line(&r.subject.name),
        one_line(&r.subject.version),
        r.subject.format,
        r.seed
    );
    let _ = writeln!(
        out,
        "{} cases in {:.2} s: {} cases/s, {:.1} MB/s of request bodies{}",
        r.cases,
        secs,
        per_second(r.cases as f64 / secs),
        r.bytes as f64 / secs / 1e6,
        if r.run.stopped_by_time {
            " (time budget reached)"
        } else {
            ""
        }
    );
    write_not_sent(&mut out, &r.run, &[&r.subject]);
    if let Some(t) = r.traffic.filter(|t| t.requests > 0) {
        let per = |x: u64| x as f64 / r.cases.max(1) as f64;
        let _ = writeln!(
            out,
            "protocol: {} requests ({:.1} a case), {:.1} MB sent ({:.0} KB a case), {:.1} MB received",
            t.requests,
            per(t.requests),
            t.bytes_sent as f64 / 1e6,
            per(t.bytes_sent) / 1e3,
            t.bytes_received as f64 / 1e6
        );
    }
    let _ = writeln!(out);
    tally_table(r, false).text(&mut out);
    write_not_checked(&mut out, &r.checked);
    write_unjudged_refusals(&mut out, r.coverage.unjudged_refusals(), &r.checked);
    if !r.explored.is_empty() {
        let _ = writeln!(
            out,
            "explored beyond the subject's claims (--claim): {}; {EXPLORED}",
            r.explored.names().join(", ")
        );
    }
    for f in &r.failures {
        let _ = writeln!(out);
        let explored = match r.explored.contains(f.invariant) {
            true => " — explored: the subject does not claim it",
            false => "",
        };
        let _ = writeln!(
            out,
            "FAILED {} (case {}){explored}",
            f.invariant, f.case_index
        );
        let _ = writeln!(out, "  {}", f.violation);
        if r.distinct > 1 {
            let _ = writeln!(out, "  shape: {}", one_line(&f.shape()));
        }
        write_shrunk_case(&mut out, f, &hint.for_failure(r, f));
    }
    for f in &r.faults {
        let (kind, n, first) = (f.fault.kind.name(), f.count, f.case_index);
        let head = format!("FAULT {kind} ({n} case(s), first at case {first})");
        write_fault(&mut out, &head, f, Some(hint));
    }
    if let Some(line) = faulted_on_parts(r) {
        let _ = writeln!(out, "\n{line}");
    }
    // The coverage table is long (a row per shape); what failed comes
    // first, so that a reader sees it without scrolling past the table.
    // One case covers what it is: its coverage table would be all gaps.
    if r.cases > 0 && !r.one_case() {
        write_section(&mut out, "coverage:", r.coverage.to_string().lines());
    }
    let unchecked = r.not_checked();
    let head = "NOT CHECKED (a run that checked nothing cannot pass):";
    write_section(&mut out, head, &unchecked);
    let _ = writeln!(out);
    let verdict = if r.ok() && r.one_case() {
        let exercised = r.tally.values().filter(|t| t.exercised()).count();
        format!(
            "OK: the {exercised} of {} checked invariant(s) this one case exercised held",
            r.tally.len()
        )
    } else if r.ok() {
        format!(
            "OK: every checked invariant held on {} cases, and each was exercised{}",
            r.cases,
            explored_tail(r)
        )
    } else if r.failures.is_empty() && r.faults.is_empty() {
        format!(
            "NOT OK: nothing failed, but {} thing(s) were never checked; reproduce the run with --seed {}",
            unchecked.len(),
            r.seed
        )
    } else {
        format!(
            "FAILED: {} invariant(s) broken{}, {} fault kind(s); reproduce the run with --seed {}",
            r.broken().len(),
            explored_tail(r),
            r.faults.len(),
            r.seed
        )
    };
    let _ = writeln!(out, "{}", human_verdict(&verdict, suite));
    out
}

/// What every report form says of the invariants a run explored beyond
/// the subject's claims (`check --claim`).
pub const EXPLORED: &str = "a failure of an explored invariant is a finding beyond what the subject promises, and fails the run as asked";

/// The end of a human verdict line, naming how many of the checked
/// invariants were explored beyond the claims, if any.
fn explored_tail(r: &CheckReport) -> String {
    let n = r.explored.len();
    let broken = r.broken().intersect(r.explored).len();
    match (n, r.ok()) {
        (0, _) => String::new(),
        (_, true) => format!(" ({n} of them explored beyond the subject's claims)"),
        _ if broken == 0 => String::new(),
        _ => format!(" ({broken} of them explored beyond the subject's claims)"),
    }
}

/// The part of the seed's cases a report is of, for its head line:
/// `, shard K/N`, or `, case N alone` (`check --case N`), or nothing.
pub(crate) fn part_line(shard: Option<crate::check::Shard>) -> String {
    match shard {
        Some(s) if s.one_case => format!(", case {} alone", s.case()),
        Some(s) => format!(", shard {}/{}", s.k, s.n),
        None => String::new(),
    }
}

/// A rate of cases: whole above 10 a second, else to a tenth (a slow
/// subject's 0.5 a second is not "0").
fn per_second(rate: f64) -> String {
    match rate < 10.0 {
        true => format!("{rate:.1}"),
        false => format!("{rate:.0}"),
    }
}

/// A section of a human report, when it has lines: a blank line, `head`,
/// and the lines, indented, each on one line ([`one_line`]: an item that
/// holds a newline cannot forge a line of its own).
pub(crate) fn write_section<T: std::fmt::Display>(
    out: &mut String,
    head: &str,
    lines: impl IntoIterator<Item = T>,
) {
    let mut lines = lines.into_iter().peekable();
    if lines.peek().is_some() {
        let _ = writeln!(out, "\n{head}");
    }
    for line in lines {
        let _ = writeln!(out, "  {}", one_line(&line.to_string()));
    }
}

/// A failure's minimal case in a human report: its size before and after
/// shrinking, its config, its messages (capped), what the compactor
/// answered, and the command that replays it.
pub(crate) fn write_shrunk_case(out: &mut String, f: &Failure, hint: &ReplayHint) {
    let _ = writeln!(
        out,
        "  shrunk from {} messages / {} bytes to {} messages / {} bytes:",
        f.original_size.0,
        f.original_size.1,
        f.fixture.messages.len(),
        body_bytes(&f.fixture.config, &f.fixture.messages)
    );
    let _ = writeln!(out, "  config: {}", f.fixture.config.to_value());
    failure_lines(out, f, hint);
}

/// A failure's messages, the compactor's answer and the replay line.
fn failure_lines(out: &mut String, f: &Failure, hint: &ReplayHint) {
    write_history(out, &f.fixture.messages);
    write_answer(out, f);
    replay_line(out, &f.saved, hint);
}

/// A fault kind in a human report: `head`, the fault, and, given how to
/// replay it, its case (capped) and the replay line.
pub(crate) fn write_fault(
    out: &mut String,
    head: &str,
    f: &FaultRecord,
    hint: Option<&ReplayHint>,
) {
    write_section(out, head, f.fault.to_string().lines());
    if let Some(hint) = hint {
        write_history(out, &f.fixture.messages);
        replay_line(out, &f.saved, hint);
    }
}

/// A JUnit failure's text: `head`, then the failure's case, the answer
/// and the replay line.
pub(crate) fn failure_text(mut head: String, f: &Failure, hint: &ReplayHint) -> String {
    failure_lines(&mut head, f, hint);
    head
}

/// A failure in a Markdown report: its line (`tail` after the violation),
/// what the compactor answered (folded), and the commands that replay it,
/// each with its note.
pub(crate) fn markdown_failure(
    out: &mut String,
    f: &Failure,
    tail: &str,
    replays: &[(&ReplayHint, &str)],
) {
    let (inv, case, detail) = (f.invariant, f.case_index, md(&f.violation.detail));
    let _ = writeln!(out, "\n**{inv}** (case {case}): {detail}{tail}");
    write_answer_details(out, f);
    if let Some(p) = f.saved.path() {
        let p = p.display().to_string();
        let lines: Vec<String> = (replays.iter())
            .map(|(hint, note)| format!("{}{note}", crate::model::one_line(&hint.command(&p))))
            .collect();
        let _ = writeln!(out, "{}", md_code("sh", &lines.join("\n")));
    }
}

/// A fault kind's line in a Markdown report.
pub(crate) fn markdown_fault(out: &mut String, fault: &Fault, counted: &str, first: u64) {
    let (kind, detail) = (fault.kind.name(), md(&fault.detail));
    let _ = writeln!(
        out,
        "\n**fault {kind}** ({counted}, first at case {first}): {detail}"
    );
}

/// [`write_answer`] in a Markdown report: a folded block.
fn write_answer_details(out: &mut String, f: &crate::check::Failure) {
    let mut answer = String::new();
    write_answer(&mut answer, f);
    if !answer.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>what the compactor answered</summary>\n\n{}\n</details>",
            md_code("text", &answer)
        );
    }
}

/// What the subject answered on a failure's minimal case, and how it
/// differs from what it was sent (`report::diff`), capped like a case.
pub(crate) fn write_answer(out: &mut String, f: &crate::check::Failure) {
    let Some(answer) = &f.answer else { return };
    let lines = diff::answer_lines(&f.fixture.messages, answer);
    let n = lines.len();
    for (i, line) in lines.iter().enumerate() {
        if n > 2 * EDGE + 2 && (EDGE + 1..n - EDGE).contains(&i) {
            if i == EDGE + 1 {
                let _ = writeln!(out, "    … {} more line(s)", n - 2 * EDGE - 1);
            }
            continue;
        }
        let _ = writeln!(out, "  {line}");
    }
}

/// A case's messages, one line each, capped: a long case shows its first
/// and last [`EDGE`] messages and how many it leaves out (the whole case
/// is in its fixture).
pub(crate) fn write_history(out: &mut String, msgs: &[Message]) {
    const SHOW: usize = 160;
    for (i, m) in msgs.iter().enumerate() {
        if msgs.len() > 2 * EDGE + 1 && (EDGE..msgs.len() - EDGE).contains(&i) {
            if i == EDGE {
                let more = msgs.len() - 2 * EDGE;
                let _ = writeln!(
                    out,
                    "    … {more} more message(s): the whole case is in its fixture"
                );
            }
            continue;
        }
        let mut line = engine::message_to_value(m).to_string();
        if line.len() > SHOW {
            let cut = crate::model::truncate_utf8(&line, SHOW).len();
            line = format!("{}… ({} bytes)", &line[..cut], line.len());
        }
        let _ = writeln!(out, "    [{i}] {line}");
    }
}

pub(crate) fn replay_line(out: &mut String, saved: &Saved, hint: &ReplayHint) {
    match saved {
        Saved::At(p) => {
            let command = hint.command(&p.display().to_string());
            let _ = writeln!(out, "  replay: {}", one_line(&command));
        }
        Saved::NotAsked => {
            let _ = writeln!(
                out,
                "  (not saved: run with --save DIR to keep it as a fixture)"
            );
        }
        Saved::Failed(why) => {
            let _ = writeln!(out, "  NOT SAVED: {}", one_line(why));
        }
    }
}

/// Markdown, for `$GITHUB_STEP_SUMMARY` or a pull-request comment: the
/// verdict, the table, and each failure with its replay command.
pub fn markdown(r: &CheckReport, hint: &ReplayHint) -> String {
    markdown_with_suite(r, hint, &[])
}

/// Markdown, its verdict joined by the problems of the run's suite.
pub(crate) fn markdown_with_suite(r: &CheckReport, hint: &ReplayHint, suite: &[String]) -> String {
    let mut out = String::new();
    let verdict = if r.ok() && r.one_case() {
        "✅ what this one case exercised held"
    } else if r.ok() {
        "✅ every checked invariant held, and each was exercised"
    } else if r.failures.is_empty() && r.faults.is_empty() {
        "⚠️ nothing failed, but something was never checked"
    } else {
        "❌ failed"
    };
    let _ = writeln!(
        out,
        "### ctxgate check: {} {} — {}\n",
        md(&r.subject.name),
        md(&r.subject.version),
        markdown_mark(verdict, suite)
    );
    let _ = writeln!(
        out,
        "{} cases, seed {}{} · {:.1} s\n",
        r.cases,
        r.seed,
        part_line(r.shard),
        r.run.elapsed.as_secs_f64()
    );
    tally_table(r, true).markdown(&mut out);
    if !r.explored.is_empty() {
        let names: Vec<String> = r.explored.iter().map(|i| format!("`{i}`")).collect();
        let _ = writeln!(
            out,
            "\n🔎 explored beyond the subject's claims (`--claim`): {}; {}",
            names.join(", "),
            md(EXPLORED)
        );
    }
    for line in r.not_checked() {
        let _ = writeln!(out, "\n⚠️ {}", md(&line));
    }
    for f in &r.failures {
        let mut tail = match r.explored.contains(f.invariant) {
            true => " — *explored*: the subject does not claim it".to_owned(),
            false => String::new(),
        };
        if r.distinct > 1 {
            tail.push_str(&format!(" (shape: {})", md(&f.shape())));
        }
        markdown_failure(&mut out, f, &tail, &[(&hint.for_failure(r, f), "")]);
    }
    for f in &r.faults {
        markdown_fault(
            &mut out,
            &f.fault,
            &format!("{} case(s)", f.count),
            f.case_index,
        );
    }
    if let Some(line) = faulted_on_parts(r) {
        let _ = writeln!(out, "\n⚠️ {}", md(&line));
    }
    out
}

/// The run's word on the cases a subject faulted on that held content
/// parts it was sent without its hello saying `contentParts`: how many of
/// all it faulted on, and the hello field that opts out.
pub(crate) fn faulted_on_parts(r: &CheckReport) -> Option<String> {
    let n = r.run.faulted_on_parts;
    if n == 0 {
        return None;
    }
    let faulted: u64 = r.faults.iter().map(|f| f.count).sum();
    Some(format!(
        "content parts: {n} of the {faulted} case(s) the subject faulted on held content parts (images), and its hello does not say `contentParts`, so it was sent them (the default). A compactor that takes text content only says \"contentParts\": false in its hello and is sent none (docs/protocol.md, §5 \"Content parts and images\")."
    ))
}

/// A check's table: each invariant's pass, fail and n/a counts, marked
/// when it failed or was never exercised (`md`: as Markdown marks it).
fn tally_table(r: &CheckReport, md: bool) -> table::Table<'static> {
    let columns = vec![
        ("invariant", 28, 0),
        ("pass", 8, 1),
        ("fail", 8, 1),
        ("n/a", 8, 1),
    ];
    let mut table = table::Table::new(columns, true);
    for (inv, t) in &r.tally {
        let mark = match (md, t.fail > 0, !t.exercised()) {
            (false, true, _) => "FAIL",
            (false, _, true) if !r.one_case() => "NEVER EXERCISED",
            (true, true, _) => "❌",
            (true, _, true) => "⚠️ never exercised",
            _ => "",
        };
        let name = if md {
            format!("`{inv}`")
        } else {
            inv.to_string()
        };
        let counts = [t.pass, t.fail, t.not_applicable].map(|n| n.to_string());
        table.row([vec![name], counts.to_vec()].concat(), mark);
    }
    table
}

/// The Markdown sink, for a value in a line or a table cell of a
/// Markdown report (a subject's name, a fixture's `see`, a fault's
/// detail): on one line ([`one_line`](crate::model::one_line): no control
/// character, no newline), with every character that means something to
/// Markdown or HTML there escaped — a table's `|`, HTML's `<`, `>` and
/// `&` as entities, and the backslash, code, emphasis, strike-through,
/// link, image and heading marks with a backslash — so that it reads as
/// the text it is and can neither close a cell, open an HTML element, nor
/// forge a link, a heading or emphasis. A code block's lines are
/// [`md_code`]'s.
pub(crate) fn md(s: &str) -> String {
    let line: Vec<char> = crate::model::one_line(s).chars().collect();
    let mut out = String::with_capacity(line.len() + 8);
    let alnum = |i: Option<usize>| {
        i.and_then(|i| line.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    };
    for (i, &c) in line.iter().enumerate() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // Inside a word (`cannot_fit`) an underscore can neither open
            // nor close emphasis (CommonMark's flanking rules): kept as is.
            '_' if alnum(i.checked_sub(1)) && alnum(Some(i + 1)) => out.push(c),
            '\\' | '|' | '`' | '*' | '_' | '~' | '[' | ']' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The Markdown sink for a code block: `text` (lines, control characters
/// shown as escapes) fenced in `lang`, with a fence longer than any run of
/// backticks in it, so that nothing in it can close the block early.
pub(crate) fn md_code(lang: &str, text: &str) -> String {
    let text = crate::model::text::lines(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let end = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{lang}\n{text}{end}{fence}")
}

/// The JUnit `<testsuite>` of a run: one test case per checked invariant,
/// one per fault kind, and one `run` case when nothing was checked.
pub fn junit(r: &CheckReport, hint: &ReplayHint) -> junit::Suite {
    let class = format!("ctxgate.{}", r.subject.name);
    let mut cases = Vec::new();
    for (inv, t) in &r.tally {
        let mut case = junit::Case::new(&class, inv.name());
        let explored = r.explored.contains(*inv);
        if explored {
            case.out = Some(format!(
                "explored beyond the subject's claims (--claim): {EXPLORED}"
            ));
        }
        let failed: Vec<&Failure> = r.failures.iter().filter(|f| f.invariant == *inv).collect();
        cases.push(match failed.first() {
            // One test case an invariant: its first failure, then any
            // other of a distinct shape (`--save-distinct`).
            Some(first) => {
                let mut body = String::new();
                for f in &failed {
                    let mut head = format!("{}\n", f.violation);
                    if explored {
                        head.push_str(&format!("(explored: the subject does not claim {inv})\n"));
                    }
                    if failed.len() > 1 {
                        head = format!("case {}, shape: {}\n{head}", f.case_index, f.shape());
                    }
                    if !body.is_empty() {
                        body.push('\n');
                    }
                    body.push_str(&failure_text(head, f, &hint.for_failure(r, f)));
                }
                case.failed(inv.name(), &first.violation.detail, &body)
            }
            // A gate that checked nothing has not passed: a failure, not a skip.
            None if !t.exercised() => {
                let why = format!(
                    "never exercised in {} case(s): {}",
                    r.cases,
                    t.reasons_line()
                );
                case.failed("not-exercised", &why, &why)
            }
            None => case,
        });
    }
    if r.checked.is_empty() || r.cases == 0 {
        let why = r.not_checked().join("\n");
        cases.push(junit::Case::new(&class, "run").failed("not-checked", &why, &why));
    }
    for f in &r.faults {
        let name = format!("fault:{}", f.fault.kind.name());
        let case = junit::Case::new(&class, &name);
        cases.push(case.failed("fault", &f.fault.detail, &f.fault.to_string()));
    }
    junit::Suite {
        name: format!("ctxgate check (seed {})", r.seed),
        seconds: Some(r.run.elapsed.as_secs_f64()),
        cases,
    }
}

/// A human report's last line: the run's verdict, or, when its suite
/// failed, that first (a run whose suite failed must not end on "OK").
pub(crate) fn human_verdict(verdict: &str, suite: &[String]) -> String {
    match suite {
        [] => verdict.to_owned(),
        _ => format!(
            "FAILED: {}; the generated cases: {verdict}",
            one_line(&suite.join("; "))
        ),
    }
}

/// A Markdown report's mark in its head line, with the suite's failure.
pub(crate) fn markdown_mark(mark: &str, suite: &[String]) -> String {
    let why = md(&suite.join("; "));
    match mark {
        _ if suite.is_empty() => mark.to_owned(),
        _ if mark.starts_with('❌') => format!("{mark}; {why}"),
        _ => format!("❌ {why} (the generated cases: {mark})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::{Invariant, Violation};

    #[test]
    fn a_slow_rate_is_not_printed_as_zero() {
        assert_eq!(per_second(0.495), "0.5");
        assert_eq!(per_second(9.94), "9.9");
        assert_eq!(per_second(10.0), "10");
        assert_eq!(per_second(1234.6), "1235");
    }

    /// A long case prints its ends and a count, never every message (a
    /// timeout's unshrunk case once printed 1,020 lines of a report).
    #[test]
    fn a_long_case_prints_its_ends_and_a_count() {
        let msgs: Vec<Message> = (0..200).map(|i| Message::user(format!("m{i}"))).collect();
        let mut out = String::new();
        write_history(&mut out, &msgs);
        assert_eq!(out.lines().count(), 2 * EDGE + 1, "{out}");
        assert!(out.contains("[0] ") && out.contains("[199] "), "{out}");
        assert!(out.contains(&format!("… {} more message(s)", 200 - 2 * EDGE)));
        let mut short = String::new();
        write_history(&mut short, &msgs[..2 * EDGE + 1]);
        assert_eq!(short.lines().count(), 2 * EDGE + 1);
        assert!(!short.contains("more message"));
    }

    #[test]
    fn many_violations_of_one_fixture_print_a_few_and_a_count() {
        let vs: Vec<Violation> = (0..25)
            .map(|i| Violation::new(Invariant::ToolPairing, format!("orphan {i}")))
            .collect();
        let lines = violation_lines(&vs);
        assert_eq!(lines.len(), EDGE + 1);
        assert_eq!(lines[EDGE], format!("… {} more violation(s)", 25 - EDGE));
        assert_eq!(violation_lines(&vs[..2]).len(), 2);
    }

    #[test]
    fn replay_lines_name_the_subject_as_chosen() {
        let defect = ReplayHint {
            flags: vec!["--defect".into(), "drops-system-prompt".into()],
        };
        assert_eq!(
            defect.command("f.json"),
            "ctxgate replay f.json --defect drops-system-prompt"
        );
        let back = ReplayHint::from_json(Some(&defect.to_json())).unwrap();
        assert_eq!(back, defect);
        assert_eq!(
            ReplayHint::subject("python3 my compactor.py").command("f.json"),
            "ctxgate replay f.json --subject 'python3 my compactor.py'"
        );
    }
}
