//! Seeds to cases: [`Seeds`], the [`CaseSource`] of `check --corpus`.
//!
//! Case `index` takes seed `index % n` (n histories), in round
//! `index / n`. Round 0 is the history as it is; later rounds mutate it
//! first, with one to three of: results grown (to 16 KiB + 1, the 32 KiB
//! cap, one byte past it, 40 KB, 64 KiB — the recent iterations most
//! often), content classes swapped (a text replaced by one of another
//! class of the same length), parallel calls added to an iteration, and
//! call ids reused (`call_0`, `call_1`, … in every iteration). Then the
//! config: the ceiling on the body of one of its prefixes (±1 byte, or a
//! few percent either way), the trigger on the estimate of another, so
//! that the ToolLoop crosses them part-way — or exactly the `--config`
//! given, which no case changes.

use serde_json::json;

use super::Seed;
use crate::body::body_bytes;
use crate::check::CaseSource;
use crate::config::Config;
use crate::estimate::{Adr0098, Estimator};
use crate::generate::text::{text, ContentClass};
use crate::generate::{mix, set_trigger, Case, SplitMix64, TOOL_RESULT_CAP};
use crate::model::{head_len, iterations, Content, Message, Role, ToolCall};

/// Real histories as a source of cases.
#[derive(Debug, Clone)]
pub struct Seeds {
    seeds: Vec<Seed>,
    /// The folder they were read from, for `see`.
    dir: String,
    /// Every case's config, when given (`--config`).
    fixed: Option<Config>,
}

/// A mutation of a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mutation {
    GrowResults,
    SwapClasses,
    AddParallelCalls,
    ReuseIds,
}

impl Mutation {
    const ALL: [Mutation; 4] = [
        Mutation::GrowResults,
        Mutation::SwapClasses,
        Mutation::AddParallelCalls,
        Mutation::ReuseIds,
    ];

    fn name(self) -> &'static str {
        match self {
            Mutation::GrowResults => "results grown",
            Mutation::SwapClasses => "content classes swapped",
            Mutation::AddParallelCalls => "parallel calls added",
            Mutation::ReuseIds => "call ids reused",
        }
    }
}

/// Result sizes a grown result takes: past the 16 KiB some compactors
/// cap at, on RN-150's 32 KiB cap, one byte past it, and beyond.
const GROWN: [usize; 6] = [
    16 * 1024 + 1,
    TOOL_RESULT_CAP - 1,
    TOOL_RESULT_CAP,
    TOOL_RESULT_CAP + 1,
    40_000,
    64 * 1024,
];

impl Seeds {
    /// `seeds` must not be empty ([`super::load`] makes sure).
    pub fn new(seeds: Vec<Seed>, dir: impl Into<String>, fixed: Option<Config>) -> Seeds {
        assert!(!seeds.is_empty(), "a corpus of no history");
        Seeds {
            seeds,
            dir: dir.into(),
            fixed,
        }
    }

    pub fn len(&self) -> usize {
        self.seeds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seeds.is_empty()
    }

    /// Case `index` and the mutations it went through; with
    /// `exact_numbers` false, every number in its portable spelling.
    fn make(&self, seed: u64, index: u64, exact_numbers: bool) -> (Case, Vec<Mutation>, &Seed) {
        let n = self.seeds.len() as u64;
        let s = &self.seeds[(index % n) as usize];
        let round = index / n;
        let rng = &mut SplitMix64::new(mix(seed ^ 0x00C0_5EED, index));
        let mut messages = s.messages.clone();
        crate::model::forget_spellings(&mut messages);
        if !exact_numbers {
            portable_numbers(&mut messages);
        }
        let mut done = Vec::new();
        if round > 0 {
            let count = rng.range(1, 3);
            for _ in 0..count {
                let m = *rng.pick(&Mutation::ALL);
                if !done.contains(&m) {
                    apply(m, &mut messages, rng);
                    done.push(m);
                }
            }
        }
        let config = match &self.fixed {
            Some(c) => c.clone(),
            None => place(s, &messages, rng),
        };
        (Case { config, messages }, done, s)
    }
}

impl CaseSource for Seeds {
    fn case(&self, seed: u64, index: u64, exact_numbers: bool) -> Case {
        self.make(seed, index, exact_numbers).0
    }

    fn provenance(&self, seed: u64, index: u64) -> String {
        let (_, done, s) = self.make(seed, index, true);
        let how = if done.is_empty() {
            "as it is".to_owned()
        } else {
            done.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
        };
        format!(
            "from the corpus file {} in {} ({how}; `ctxgate check --corpus {}`)",
            s.name, self.dir, self.dir
        )
    }
}

/// A config around the history's own sizes: the ceiling on the body of one
/// of its prefixes at an iteration boundary, the trigger on the estimate
/// of another, in the history's own wire format.
fn place(seed: &Seed, msgs: &[Message], rng: &mut SplitMix64) -> Config {
    let mut c = Config {
        wire_format: seed.format,
        ..Config::default()
    };
    let head = head_len(msgs);
    let ends: Vec<usize> = iterations(&msgs[head..])
        .iter()
        .map(|r| head + r.end)
        .collect();
    let prefix = |rng: &mut SplitMix64| -> &[Message] {
        match ends.len() {
            0 => msgs,
            n => &msgs[..ends[n / 3 + rng.below((n - n / 3) as u64) as usize]],
        }
    };
    let body = body_bytes(&c, prefix(rng)) as i64;
    let ceiling = match rng.below(4) {
        0 => body - 1,
        1 => body,
        2 => body + 1,
        _ => body * rng.range(90, 130) as i64 / 100,
    };
    c.transport_max_body_bytes = ceiling.max(1) as u64;
    c.context_window = c.context_window.max(c.transport_max_body_bytes);
    let tokens = Adr0098.tokens(&mut prefix(rng).iter(), &c);
    let target = (tokens as i64 + rng.range(0, 2) as i64 - 1).max(1) as u64;
    // The ceiling stays; the window and threshold move to put the trigger
    // on the target, when a valid config has it.
    set_trigger(&mut c, target, false, true, 0);
    c
}

/// Real histories hold numbers that stock JSON libraries re-spell (`12.50`,
/// `1e5` in call arguments): for a subject that does not keep numbers
/// exactly, each is sent in its portable spelling (the same value), and the
/// few with none (2^64, `1e400`) as 0 — else the subject's body would
/// differ from the one measured by a byte and fail for no fault of its own.
fn portable_numbers(msgs: &mut [Message]) {
    use crate::model::value::{make_messages_portable, portable};
    use serde_json::{Number, Value};
    if make_messages_portable(msgs) == 0 {
        return;
    }
    fn zero_unportable(v: &mut Value) {
        match v {
            Value::Number(n) if portable(n).is_none() => *n = Number::from(0),
            Value::Array(a) => a.iter_mut().for_each(zero_unportable),
            Value::Object(o) => o.values_mut().for_each(zero_unportable),
            _ => {}
        }
    }
    for m in msgs {
        m.extra.values_mut().for_each(zero_unportable);
        for c in m.tool_calls.iter_mut().flatten() {
            let mut args = (*c.arguments).clone();
            zero_unportable(&mut args);
            c.arguments = std::sync::Arc::new(args);
            c.extra.values_mut().for_each(zero_unportable);
        }
    }
}

fn apply(m: Mutation, msgs: &mut Vec<Message>, rng: &mut SplitMix64) {
    match m {
        Mutation::GrowResults => grow_results(msgs, rng),
        Mutation::SwapClasses => swap_classes(msgs, rng),
        Mutation::AddParallelCalls => add_parallel_calls(msgs, rng),
        Mutation::ReuseIds => reuse_ids(msgs),
    }
}

/// Indices of the tool results, the last iterations' first.
fn results(msgs: &[Message]) -> Vec<usize> {
    (0..msgs.len())
        .rev()
        .filter(|&i| msgs[i].role == Role::Tool)
        .collect()
}

/// Grow one to four results to a size of [`GROWN`], repeating their own
/// text (so they keep their class): mostly among the last few.
fn grow_results(msgs: &mut [Message], rng: &mut SplitMix64) {
    let tools = results(msgs);
    if tools.is_empty() {
        return;
    }
    for _ in 0..rng.range(1, 4) {
        let recent = tools.len().min(4) as u64;
        let k = if rng.chance(70) {
            rng.below(recent)
        } else {
            rng.below(tools.len() as u64)
        };
        let i = tools[k as usize];
        let n = *rng.pick(&GROWN);
        let old = msgs[i].content.text().into_owned();
        let grown = if old.is_empty() {
            text(rng, ContentClass::Json, n)
        } else {
            repeat_to(&old, n)
        };
        msgs[i].content = Content::Text(grown);
    }
}

/// `s` repeated, cut on a char boundary and padded with spaces to `n` bytes.
fn repeat_to(s: &str, n: usize) -> String {
    let mut out = String::with_capacity(n + s.len());
    while out.len() < n {
        out.push_str(s);
        out.push('\n');
    }
    let cut = crate::model::truncate_utf8(&out, n).len();
    out.truncate(cut);
    while out.len() < n {
        out.push(' ');
    }
    out
}

/// Replace one to three texts (results first) by texts of another class
/// of the same byte length.
fn swap_classes(msgs: &mut [Message], rng: &mut SplitMix64) {
    let texts: Vec<usize> = (0..msgs.len())
        .filter(|&i| !msgs[i].content.text().is_empty() && msgs[i].role != Role::System)
        .collect();
    if texts.is_empty() {
        return;
    }
    for _ in 0..rng.range(1, 3) {
        let i = *rng.pick(&texts);
        let n = msgs[i].content.text().len();
        let class = *rng.pick(&ContentClass::ALL);
        msgs[i].content = Content::Text(text(rng, class, n));
    }
}

/// Add one to four calls to an answered iteration, with their results
/// (copies of the iteration's own, or new text) after its last one.
fn add_parallel_calls(msgs: &mut Vec<Message>, rng: &mut SplitMix64) {
    let head = head_len(msgs);
    let openers: Vec<std::ops::Range<usize>> = iterations(&msgs[head..])
        .into_iter()
        .map(|r| head + r.start..head + r.end)
        .filter(|r| {
            msgs[r.start].opens_iteration()
                && crate::model::unanswered_calls(msgs, r.clone()).is_empty()
        })
        .collect();
    if openers.is_empty() {
        return;
    }
    let r = rng.pick(&openers).clone();
    let extra = rng.range(1, 4) as usize;
    let mut new_results = Vec::new();
    let calls = msgs[r.start].tool_calls.clone().unwrap_or_default();
    let mut added = Vec::new();
    for j in 0..extra {
        let id = format!("ctxgate_parallel_{}_{j}", r.start);
        let like = calls.get(j % calls.len().max(1));
        let (name, args) = match like {
            Some(c) => (c.name.clone(), (*c.arguments).clone()),
            None => ("read_file".to_owned(), json!({"path": "README.md"})),
        };
        added.push(ToolCall::new(id.clone(), name, args));
        let results: Vec<&Message> = msgs[r.start + 1..r.end].iter().collect();
        let content = match results.get(rng.below(results.len().max(1) as u64) as usize) {
            Some(m) if rng.chance(50) => m.content.text().into_owned(),
            _ => {
                let n = rng.range(16, 4_096) as usize;
                let class = *rng.pick(&ContentClass::ALL);
                text(rng, class, n)
            }
        };
        new_results.push(Message::tool(id, content));
    }
    if let Some(cs) = msgs[r.start].tool_calls.as_mut() {
        cs.extend(added);
    }
    let at = r.end;
    msgs.splice(at..at, new_results);
}

/// Rename every iteration's call ids to `call_0`, `call_1`, … (results
/// follow their calls), so that ids repeat from one iteration to the next.
fn reuse_ids(msgs: &mut [Message]) {
    let head = head_len(msgs);
    for r in iterations(&msgs[head..]) {
        let r = head + r.start..head + r.end;
        let Some(calls) = msgs[r.start].tool_calls.as_mut() else {
            continue;
        };
        let renames: Vec<(String, String)> = calls
            .iter_mut()
            .enumerate()
            .map(|(j, c)| {
                let new = format!("call_{j}");
                (std::mem::replace(&mut c.id, new.clone()), new)
            })
            .collect();
        for m in &mut msgs[r.start + 1..r.end] {
            if let Some(id) = m.tool_call_id.as_mut() {
                if let Some((_, new)) = renames.iter().find(|(old, _)| old == id) {
                    *id = new.clone();
                }
            }
        }
    }
}
