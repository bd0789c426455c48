//! A run of agent mode: cases are generated (under the agent's own
//! config, aimed at its trigger and ceiling), each played by starting the
//! agent against a fresh endpoint, judged from its trace; the first
//! failure of each invariant is re-run to tell a real failure from a flaky
//! one, shrunk by re-running the agent on smaller scripts (through
//! `run::shrink`'s budget rule), and saved as an agent fixture.
//!
//! `replay` plays fixtures' scripts again and judges them the same way.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::case::{self, Launch};
use super::fixture::AgentFixture;
use super::invariants::AgentInvariant;
use super::judge::{judge, Facts, Finding, Judged, Verdict};
use super::play::Stage;
use super::probe;
use super::script::{deep_folders, Script};
use super::trace::Trace;
use crate::generate::{case_for_config, mix, Case, ContentClass, GenConfig};
use crate::run::Saved;

/// What to run.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub stage: Stage,
    pub launch: Launch,
    pub cases: u64,
    pub time: Option<Duration>,
    pub seed: u64,
    /// The invariants judged (all nine by default).
    pub invariants: Vec<AgentInvariant>,
    pub save: Option<PathBuf>,
    pub gen: GenConfig,
    /// At most this many agent runs while shrinking one failure.
    pub shrink_runs: usize,
    /// A failure is re-run this many times before it is shrunk; one that
    /// does not fail every time is flaky.
    pub confirm_runs: usize,
    /// At most this many cases are played again as ceiling probes
    /// ([`super::probe`]).
    pub ceiling_probes: usize,
}

/// The generator agent mode uses by default: `check`'s, without images
/// (a tool that reads text chokes on a PNG: `--gen-config` turns them on,
/// and an image result is then a PNG file, `agent::image_file`),
/// ill-formed histories or exotic numbers (which no model turn can
/// carry).
pub fn default_gen() -> GenConfig {
    let mut g = GenConfig::default().without_images();
    g.allow_ill_formed = false;
    g.exotic_numbers_percent = 0;
    g
}

/// Pass, fail and not-applicable counts of one invariant over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    pub pass: u64,
    pub fail: u64,
    #[serde(rename = "notApplicable")]
    pub not_applicable: u64,
}

/// The first failure of an invariant: confirmed, shrunk and saved.
#[derive(Debug, Clone)]
pub struct AgentFailure {
    pub invariant: AgentInvariant,
    pub case: u64,
    /// The finding on the shrunk script.
    pub finding: Finding,
    /// (turns, calls, result bytes) before and after shrinking.
    pub from: (usize, usize, usize),
    pub to: (usize, usize, usize),
    /// Agent runs spent shrinking.
    pub shrink_runs: usize,
    pub fixture: Saved,
}

/// A failure that did not repeat on every re-run.
#[derive(Debug, Clone)]
pub struct Flaky {
    pub invariant: AgentInvariant,
    pub case: u64,
    /// Of the re-runs, how many failed it again.
    pub failed_again: usize,
    pub reruns: usize,
    pub detail: String,
}

/// One failing case: its index, the invariant, a short detail.
#[derive(Debug, Clone)]
pub struct FailingCase {
    pub case: u64,
    pub invariant: AgentInvariant,
    pub detail: String,
}

/// The `agent` of a run whose cases the program that started ctxgate
/// played (`--driven`).
pub const DRIVEN: &str = "(driven)";

/// What a run came to.
#[derive(Debug, Clone)]
pub struct AgentReport {
    /// The agent's command as given, or [`DRIVEN`].
    pub agent: String,
    pub seed: u64,
    pub cases: u64,
    pub elapsed: Duration,
    pub checked: Vec<AgentInvariant>,
    pub tally: BTreeMap<AgentInvariant, Tally>,
    pub failures: Vec<AgentFailure>,
    pub flaky: Vec<Flaky>,
    pub failing_cases: Vec<FailingCase>,
    /// Facts summed over the cases.
    pub coverage: Facts,
    /// Dialects the agent spoke.
    pub dialects: Vec<String>,
    /// The script could not be played: why (no tool reads a file).
    pub unplayable: Option<String>,
    pub time_budget_reached: bool,
    /// Why the run stopped before `--cases`: the agent sent ctxgate no
    /// request until it was stopped, in a case and its re-runs, so every
    /// other case would wait out its deadline as well.
    pub stopped_early: Option<String>,
    /// CPU seconds: ctxgate's own (the endpoint, the judges), and the
    /// agents' (every process a case started, once reaped).
    pub cpu: Cpu,
    /// The ceiling probes played.
    pub probes: Probes,
}

/// The ceiling probes of a run ([`super::probe`]): the cases probed, the
/// agent runs they took, and how each ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Probes {
    pub cases: usize,
    pub runs: usize,
    /// The agent compacted rather than send the grown request.
    pub compacted: usize,
    /// A probe's case failed an invariant.
    pub failed: usize,
    /// The agent's tool did not show the grown lines.
    pub not_shown: usize,
    /// No request landed on the byte within the attempts.
    pub unlanded: usize,
    /// Probes whose last attempt grew ideographs, not letters.
    pub wide: usize,
    /// Whether the run asked for probes (`--ceiling-probes` above 0, and
    /// `request-under-ceiling` checked).
    pub asked: bool,
}

impl Probes {
    /// Count one probe.
    fn count(&mut self, p: &probe::Probed) {
        use probe::Ended;
        self.cases += 1;
        self.runs += p.attempts;
        self.wide += usize::from(p.fill == probe::Fill::Wide);
        let slot = match p.ended {
            Ended::Failed => &mut self.failed,
            Ended::Compacted => &mut self.compacted,
            Ended::NotShown => &mut self.not_shown,
            Ended::Unlanded => &mut self.unlanded,
        };
        *slot += 1;
    }
}

/// CPU time spent by a run, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cpu {
    pub ctxgate: f64,
    pub agents: f64,
}

impl Cpu {
    /// This process's CPU time so far, and its reaped children's.
    pub fn now() -> Cpu {
        let seconds = |who| {
            // SAFETY: getrusage(2) writes into the zeroed struct it is given.
            let mut u: libc::rusage = unsafe { std::mem::zeroed() };
            if unsafe { libc::getrusage(who, &mut u) } != 0 {
                return 0.0;
            }
            let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
            t(u.ru_utime) + t(u.ru_stime)
        };
        Cpu {
            ctxgate: seconds(libc::RUSAGE_SELF),
            agents: seconds(libc::RUSAGE_CHILDREN),
        }
    }

    /// The time spent since `earlier`.
    pub fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            ctxgate: (self.ctxgate - earlier.ctxgate).max(0.0),
            agents: (self.agents - earlier.agents).max(0.0),
        }
    }

    /// ctxgate's share of the run's CPU, in [0, 1].
    pub fn share(self) -> f64 {
        let all = self.ctxgate + self.agents;
        if all > 0.0 {
            self.ctxgate / all
        } else {
            0.0
        }
    }
}

impl AgentReport {
    /// Invariants checked and never exercised.
    pub fn never_exercised(&self) -> Vec<AgentInvariant> {
        self.checked
            .iter()
            .copied()
            .filter(|i| self.tally.get(i).is_none_or(|t| t.pass + t.fail == 0))
            .collect()
    }

    /// The never-exercised invariants that fail the run: all of them,
    /// but `recovers-after-refusal` when anything else was judged — it
    /// bites only when a request is refused, and an agent that never
    /// oversteps the ceiling or the window is never refused.
    pub fn unexercised_failing(&self) -> Vec<AgentInvariant> {
        let never = self.never_exercised();
        let others_judged = self.checked.iter().any(|i| !never.contains(i));
        never
            .into_iter()
            .filter(|i| !(others_judged && *i == AgentInvariant::RecoversAfterRefusal))
            .collect()
    }

    /// The run's verdict as SPEC §8's exit code: 0 all held and each was
    /// exercised, 1 a failure, a flaky failure or nothing judged, 2 the
    /// script could not be played (bad usage) and no failure was found
    /// before it stopped the run.
    pub fn exit_code(&self) -> u8 {
        if self.unplayable.is_some() && self.failures.is_empty() && self.flaky.is_empty() {
            2
        } else if !self.failures.is_empty()
            || !self.flaky.is_empty()
            || self.cases == 0
            || !self.unexercised_failing().is_empty()
            || self.tally.values().any(|t| t.fail > 0)
        {
            1
        } else {
            0
        }
    }
}

/// The case number `index` of a run: generated under the agent's config.
///
/// A generated history without one iteration that calls a tool makes a
/// script of a final answer alone, which tests nothing but `finishes`:
/// such a case is drawn again (from the same seed and index, so the run
/// stays the same every time), up to eight times.
pub fn case_of(opts: &AgentOptions, index: u64) -> Case {
    let config = &opts.stage.settings.config;
    let mut case = case_for_config(opts.seed, index, &opts.gen, config);
    for attempt in 1..8u64 {
        if case.messages.iter().any(|m| m.opens_iteration()) {
            break;
        }
        case = case_for_config(mix(opts.seed, attempt), index, &opts.gen, config);
    }
    super::script::grow(
        &mut case,
        &opts.gen.content_classes,
        mix(opts.seed ^ 0xa6e7, index),
    );
    case
}

/// Run the agent on `opts.cases` cases (or until `opts.time` is spent),
/// saying what happens through `say`.
pub fn run(opts: &AgentOptions, mut say: impl FnMut(&str)) -> Result<AgentReport, String> {
    let runtime = runtime()?;
    let stage = Arc::new(opts.stage.clone());
    let started = Instant::now();
    let deadline = opts.time.map(|t| started + t);
    let mut report = AgentReport {
        agent: opts.launch.argv.join(" "),
        seed: opts.seed,
        cases: 0,
        elapsed: Duration::ZERO,
        checked: opts.invariants.clone(),
        tally: opts
            .invariants
            .iter()
            .map(|i| (*i, Tally::default()))
            .collect(),
        failures: Vec::new(),
        flaky: Vec::new(),
        failing_cases: Vec::new(),
        coverage: Facts::default(),
        dialects: Vec::new(),
        unplayable: None,
        time_budget_reached: false,
        stopped_early: None,
        cpu: Cpu::default(),
        probes: Probes {
            asked: opts.ceiling_probes > 0
                && opts
                    .invariants
                    .contains(&AgentInvariant::RequestUnderCeiling),
            ..Probes::default()
        },
    };
    let cpu_at_start = Cpu::now();
    let mut claimed: Vec<AgentInvariant> = Vec::new();
    let out_of_time = || deadline.is_some_and(|d| Instant::now() >= d);
    for index in 0..opts.cases {
        if out_of_time() {
            report.time_budget_reached = true;
            break;
        }
        let case = case_of(opts, index);
        // Making a case counts against the budget too (a large window and
        // ceiling make a large one): a case made past it is not played.
        if out_of_time() {
            report.time_budget_reached = true;
            break;
        }
        let summaries = Script::summary_sizes(mix(opts.seed, index));
        let folders = deep_folders(mix(opts.seed ^ 0x666f_6c64, index));
        let script =
            Arc::new(Script::from_case(&case, summaries.clone()).with_folders(folders.clone()));
        let trace = case::run(runtime.handle(), &stage, &script, &opts.launch, index);
        if let Some(why) = &trace.exit.spawn_error {
            // Nothing was played: not the agent's failure to confirm,
            // shrink and save, but a command (or a folder, a port, a
            // driver) that does not work — bad usage, as `check` says of a
            // subject that does not start.
            report.unplayable = Some(format!("case {index}: {why}"));
            break;
        }
        let judged = judge(&trace, &script, &stage.settings);
        report.cases += 1;
        note_dialects(&mut report, &trace);
        add_facts(&mut report.coverage, &judged.facts);
        if let Some(why) = &judged.facts.unbound {
            // A request no tool of which reads a file cannot be played: its
            // case is unjudged and the run stops there — bad usage (2),
            // unless an earlier case's failure was confirmed, which the
            // run's exit still reports (1).
            say(&format!("case {index}: unjudged, the run stops: {why}"));
            report.unplayable = Some(format!("case {index}: {why}"));
            break;
        }
        // A case that held, played again one byte over the ceiling: when
        // that fails, it is the case confirmed, shrunk and saved.
        let (mut case, mut script, mut trace, mut judged) = (case, script, trace, judged);
        let mut probed = None;
        if report.probes.cases < opts.ceiling_probes
            && probe::wanted(&judged, &opts.invariants)
            && !out_of_time()
        {
            let script_of =
                |c: &Case| Script::from_case(c, summaries.clone()).with_folders(folders.clone());
            let player = probe::Player {
                runtime: runtime.handle(),
                stage: &stage,
                launch: &opts.launch,
                index,
                script_of: &script_of,
                deadline,
                checked: &opts.invariants,
                wide: (opts.gen.content_classes).contains(&ContentClass::Cjk),
            };
            if let Some(p) = probe::probe(&player, &case, &script, &trace) {
                report.probes.count(&p.probed);
                say(&format!(
                    "case {index}: ceiling probe, {} run(s): a result grown by {} bytes of {}; {}",
                    p.probed.attempts,
                    p.probed.grown_by,
                    p.probed.fill.said(),
                    p.probed.ended.said()
                ));
                if p.probed.ended == probe::Ended::Failed {
                    probed = Some(p.probed.turn);
                    (case, script, trace, judged) = (p.case, p.script, p.trace, p.judged);
                }
            }
        }
        let failed = tally(&mut report, opts, &judged, index);
        say(&case_line(index, &script, &trace, &judged, &failed));
        // An agent that sent nothing saw nothing of the script but its
        // task: no smaller script reaches it, and a case it waited out
        // says the next ones will be waited out too.
        let silent = trace.requests.is_empty();
        let mut silent_confirmed = false;
        for inv in failed {
            if claimed.contains(&inv) {
                continue;
            }
            claimed.push(inv);
            let finding = judged
                .findings
                .iter()
                .find(|f| f.invariant == inv)
                .cloned()
                .expect("a failed invariant has a finding");
            let again = (0..opts.confirm_runs)
                .filter(|_| {
                    let t = case::run(runtime.handle(), &stage, &script, &opts.launch, index);
                    judge(&t, &script, &stage.settings)
                        .failed()
                        .any(|i| i == inv)
                })
                .count();
            if again < opts.confirm_runs {
                say(&format!(
                    "  {inv}: failed again on {again} of {} re-runs — flaky, not shrunk",
                    opts.confirm_runs
                ));
                report.flaky.push(Flaky {
                    invariant: inv,
                    case: index,
                    failed_again: again,
                    reruns: opts.confirm_runs,
                    detail: finding.detail,
                });
                continue;
            }
            silent_confirmed |= silent;
            say(&match silent {
                true => format!(
                    "  {inv}: repeats; not shrunk: the agent sent ctxgate no request, so no smaller script would reach it"
                ),
                false => format!("  {inv}: repeats; shrinking by re-running the agent"),
            });
            let failure = shrink_and_save(
                opts,
                &runtime,
                &stage,
                &case,
                (&summaries, &folders),
                inv,
                index,
                deadline,
                (trace.clone(), finding),
                !silent,
                probed,
            );
            say(&format!(
                "  {inv}: {} {} turn(s), {} call(s){}{}",
                if silent {
                    "kept as it was:"
                } else {
                    "shrunk to"
                },
                failure.to.0,
                failure.to.1,
                match silent {
                    true => String::new(),
                    false => format!(" in {} run(s)", failure.shrink_runs),
                },
                match &failure.fixture {
                    Saved::At(p) => format!(
                        "; saved {}",
                        crate::model::one_line(&p.display().to_string())
                    ),
                    _ => String::new(),
                }
            ));
            report.failures.push(failure);
        }
        if silent_confirmed && trace.exit.stopped() && index + 1 < opts.cases {
            let why = format!(
                "case {index}: the agent sent ctxgate no request before it was stopped ({}), nor on its re-runs; the {} case(s) left would each wait as long (is the agent pointed at OPENAI_BASE_URL or ANTHROPIC_BASE_URL?)",
                trace.exit.shown(),
                opts.cases - index - 1
            );
            say(&format!("the run stops: {why}"));
            report.stopped_early = Some(why);
            break;
        }
    }
    report.elapsed = started.elapsed();
    report.cpu = Cpu::now().since(cpu_at_start);
    Ok(report)
}

/// The multi-threaded runtime the endpoints of a run live on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ctxgate-endpoint")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the endpoint's runtime: {e}"))
}

fn tally(
    report: &mut AgentReport,
    opts: &AgentOptions,
    judged: &Judged,
    index: u64,
) -> Vec<AgentInvariant> {
    let mut failed = Vec::new();
    for inv in &opts.invariants {
        let t = report.tally.entry(*inv).or_default();
        match judged.verdicts.get(inv) {
            Some(Verdict::Pass) => t.pass += 1,
            Some(Verdict::Fail) => {
                t.fail += 1;
                failed.push(*inv);
                if let Some(f) = judged.findings.iter().find(|f| f.invariant == *inv) {
                    report.failing_cases.push(FailingCase {
                        case: index,
                        invariant: *inv,
                        detail: f.detail.clone(),
                    });
                }
            }
            _ => t.not_applicable += 1,
        }
    }
    failed
}

fn note_dialects(report: &mut AgentReport, trace: &Trace) {
    for r in &trace.requests {
        if let Some(d) = r.dialect {
            if !report.dialects.iter().any(|s| s == d.name()) {
                report.dialects.push(d.name().to_owned());
            }
        }
    }
}

fn add_facts(sum: &mut Facts, f: &Facts) {
    sum.requests += f.requests;
    sum.loop_requests += f.loop_requests;
    sum.summary_requests += f.summary_requests;
    sum.side_requests += f.side_requests;
    sum.refused_too_large += f.refused_too_large;
    sum.refused_over_window += f.refused_over_window;
    sum.recoveries += f.recoveries;
    sum.compactions += f.compactions;
    sum.turns_answered += f.turns_answered;
    sum.parallel_answers += f.parallel_answers;
    sum.final_reached |= f.final_reached;
    sum.max_body_bytes = sum.max_body_bytes.max(f.max_body_bytes);
    sum.max_tokens = sum.max_tokens.max(f.max_tokens);
    sum.unreadable += f.unreadable;
    sum.image_results += f.image_results;
    sum.images_as_sent += f.images_as_sent;
    sum.images_reencoded += f.images_reencoded;
    sum.images_as_text += f.images_as_text;
}

fn case_line(
    index: u64,
    script: &Script,
    trace: &Trace,
    judged: &Judged,
    failed: &[AgentInvariant],
) -> String {
    let f = &judged.facts;
    format!(
        "case {index}: {} turn(s), {} request(s) ({} summary, {} refused), {}, {}",
        script.turns.len(),
        f.requests,
        f.summary_requests,
        f.refused_too_large + f.refused_over_window,
        trace.exit.shown(),
        if failed.is_empty() {
            "held".to_owned()
        } else {
            format!(
                "FAILED {}",
                failed
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    )
}

/// The size of a script: turns, calls, result bytes.
fn size(s: &Script) -> (usize, usize, usize) {
    (
        s.turns.len(),
        s.calls().count(),
        s.calls().map(|(_, c)| c.file_len()).sum(),
    )
}

#[allow(clippy::too_many_arguments)]
fn shrink_and_save(
    opts: &AgentOptions,
    runtime: &tokio::runtime::Runtime,
    stage: &Arc<Stage>,
    case: &Case,
    (summaries, folders): (&[u32], &[String]),
    inv: AgentInvariant,
    index: u64,
    deadline: Option<Instant>,
    first: (Trace, Finding),
    shrink: bool,
    probed: Option<usize>,
) -> AgentFailure {
    let original = Script::from_case(case, summaries.to_vec()).with_folders(folders.to_vec());
    // Candidates that differ only where a script does not look (a system
    // message, the envelope) play the same script: each is run once.
    let mut tried: HashMap<String, Option<(Trace, Finding)>> = HashMap::new();
    let mut last = first;
    let mut runs = 0;
    // A candidate is tried only when its script is smaller than the one
    // kept: fewer turns, or as many and fewer calls, or as many of both and
    // fewer result bytes (the history's shrinker keeps a body's size when it
    // folds messages away, which can move text into a result).
    let mut kept = size(&original);
    let mut still_fails = |candidate: &Case| {
        let script =
            Script::from_case(candidate, summaries.to_vec()).with_folders(folders.to_vec());
        let candidate_size = size(&script);
        if candidate_size >= kept {
            return false;
        }
        let key = serde_json::to_string(&script).unwrap_or_default();
        let outcome = match tried.get(&key) {
            Some(known) => known.clone(),
            None => {
                runs += 1;
                let script = Arc::new(script);
                let trace = case::run(runtime.handle(), stage, &script, &opts.launch, index);
                let judged = judge(&trace, &script, &stage.settings);
                let finding = judged.findings.into_iter().find(|f| f.invariant == inv);
                let outcome = finding.map(|f| (trace, f));
                tried.insert(key, outcome.clone());
                outcome
            }
        };
        match outcome {
            Some(failing) => {
                last = failing;
                kept = candidate_size;
                true
            }
            None => false,
        }
    };
    // A probe's case lands on the byte only with every byte before the
    // grown turn as it is: it loses the turns after that one, and nothing
    // else (any other step moves the request off the byte).
    let mut start = case.clone();
    if let Some(cut) = probed.and_then(|turn| probe::cut_after_turn(case, turn)) {
        if shrink && still_fails(&cut) {
            start = cut;
        }
    }
    let shrunk = crate::run::shrink::shrink_within(
        start,
        if shrink && probed.is_none() {
            opts.shrink_runs
        } else {
            0
        },
        deadline,
        Some(&opts.stage.settings.config),
        &mut still_fails,
    );
    let script = Script::from_case(&shrunk, summaries.to_vec()).with_folders(folders.to_vec());
    let (trace, finding) = last;
    let mut fixture = AgentFixture::new(
        opts.stage.settings.clone(),
        script.clone(),
        vec![inv],
        match shrink {
            true => format!(
                "found by ctxgate agent (seed {}, case {index}{}), shrunk from {} turn(s)",
                opts.seed,
                match probed {
                    Some(_) => ", a ceiling probe: a result grown to put a request one byte over",
                    None => "",
                },
                original.turns.len()
            ),
            false => format!(
                "found by ctxgate agent (seed {}, case {index}), not shrunk: the agent sent no request",
                opts.seed
            ),
        },
    );
    fixture.found = Some(finding.detail.clone());
    if let Some(r) = finding.request.and_then(|i| trace.requests.get(i)) {
        fixture = fixture.with_request(r);
    }
    let saved = match &opts.save {
        None => Saved::NotAsked,
        Some(dir) => match fixture.save(dir) {
            Ok(saved) => {
                if let Some(note) = saved.note() {
                    crate::fixture::say_saved(&note);
                }
                Saved::At(saved.path)
            }
            Err(e) => Saved::Failed(format!(
                "cannot save fixture {} in {}: {e}",
                fixture.name,
                dir.display()
            )),
        },
    };
    AgentFailure {
        invariant: inv,
        case: index,
        finding,
        from: size(&original),
        to: size(&script),
        shrink_runs: runs,
        fixture: saved,
    }
}

/// One fixture replayed: each of its invariants' verdicts, and the
/// findings.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub path: PathBuf,
    pub fixture: AgentFixture,
    pub judged: Judged,
    /// Why its script was not played at all (the agent did not start):
    /// nothing of it failed or held.
    pub not_played: Option<String>,
}

impl Replayed {
    /// The fixture's invariants that failed.
    pub fn failed(&self) -> Vec<AgentInvariant> {
        if self.not_played.is_some() {
            return Vec::new();
        }
        self.fixture
            .invariants
            .iter()
            .copied()
            .filter(|i| self.judged.verdicts.get(i) == Some(&Verdict::Fail))
            .collect()
    }

    /// Why the fixture holds though none of its invariants was judged:
    /// it records `recovers-after-refusal` and this time no request was
    /// refused — what fixing an agent that overstepped the ceiling looks
    /// like, as `check` counts it — while every invariant judged held.
    pub fn refusal_never_came(&self) -> Option<&'static str> {
        if self.not_played.is_some()
            || !self
                .fixture
                .invariants
                .contains(&AgentInvariant::RecoversAfterRefusal)
            || self.judged_any()
        {
            return None;
        }
        let verdicts = &self.judged.verdicts;
        let all_held = verdicts.values().all(|v| *v != Verdict::Fail)
            && verdicts.values().any(|v| *v == Verdict::Pass);
        match verdicts.get(&AgentInvariant::RecoversAfterRefusal) {
            Some(Verdict::NotApplicable(why)) if all_held => Some(why),
            _ => None,
        }
    }

    /// Why none of the fixture's invariants was judged: each one's reason,
    /// and how the agent's case ended when `finishes` (not the fixture's)
    /// failed — an agent stopped at a request cap, or one that exited
    /// early, sent nothing those invariants judge.
    pub fn why_unjudged(&self) -> String {
        let mut why: Vec<String> = (self.fixture.invariants.iter())
            .filter_map(|i| match self.judged.verdicts.get(i) {
                Some(Verdict::NotApplicable(w)) => Some(format!("{i}: {w}")),
                _ => None,
            })
            .collect();
        if let Some(f) =
            (self.judged.findings.iter()).find(|f| f.invariant == AgentInvariant::Finishes)
        {
            why.push(format!("the case: {}", crate::model::one_line(&f.detail)));
        }
        if why.is_empty() {
            "no verdict".into()
        } else {
            why.join("; ")
        }
    }

    /// Whether anything of the fixture was judged.
    pub fn judged_any(&self) -> bool {
        self.not_played.is_none()
            && self.fixture.invariants.iter().any(|i| {
                matches!(
                    self.judged.verdicts.get(i),
                    Some(Verdict::Pass | Verdict::Fail)
                )
            })
    }
}

/// Play each fixture's script with the agent and judge it under the
/// fixture's settings (the run's gateway, dialect, tools and matcher).
pub fn replay(
    fixtures: Vec<(PathBuf, AgentFixture)>,
    stage: &Stage,
    launch: &Launch,
) -> Result<Vec<Replayed>, String> {
    let runtime = runtime()?;
    Ok(fixtures
        .into_iter()
        .enumerate()
        .map(|(i, (path, fixture))| {
            let stage = Arc::new(Stage {
                settings: fixture.settings.clone(),
                ..stage.clone()
            });
            let script = Arc::new(fixture.script.clone());
            let trace = case::run(runtime.handle(), &stage, &script, launch, i as u64);
            let judged = judge(&trace, &script, &stage.settings);
            Replayed {
                path,
                fixture,
                judged,
                not_played: trace.exit.spawn_error,
            }
        })
        .collect())
}
