//! Coverage statistics (issue 3, item 7): what a run's cases held, so that
//! a reviewer sees the space explored rather than assumed.
//!
//! [`Coverage::record_case`] measures a case after the fact (content
//! classes are recognised in the text, sizes measured, boundaries computed
//! with the adr-0098 estimator and the exact body size), so it judges any
//! case, generated or loaded. [`Coverage::record_result`] adds what the
//! subject did. Each bin counts the cases that reached it at least once;
//! [`Coverage::missing`] lists the bins no case reached.

use std::collections::HashMap;
use std::fmt;

use serde_json::{json, Map, Value};

use super::history::map_size;
use super::{anthropic_ready, classify, Case, ContentClass, TOOL_RESULT_CAP};
use crate::body::value_size;
use crate::config::EXPRESS_DEFAULT_LIMIT;
use crate::model::{head_len, iterations, unanswered_calls, Content, Role, WireFormat};

const ITERATIONS: usize = 0;
const MESSAGES: usize = 1;
const BODY: usize = 2;
const HEAD: usize = 3;
const CLASS: usize = 4;
const CONTENT: usize = 5;
const PARALLEL: usize = 6;
const RESULT_BYTES: usize = 7;
const ARGUMENTS: usize = 8;
const PINNED: usize = 9;
const IDS: usize = 10;
const PENDING: usize = 11;
const EXTRA: usize = 12;
const FORMAT: usize = 13;
const BPT: usize = 14;
const KEEP: usize = 15;
const THRESHOLD: usize = 16;
const CEILING: usize = 17;
const WINDOW: usize = 18;
const WINDOW_BY: usize = 19;
const SUMMARY: usize = 20;
const ENVELOPE: usize = 21;
const PRESSURE: usize = 22;
const AT_TRIGGER: usize = 23;
const AT_CEILING: usize = 24;
const BUG_CLASS: usize = 25;
const IMAGES: usize = 26;
const IMAGE_HEADER: usize = 27;

/// The `images` group's bin the subject's answers reach (not the case).
const ELIDED_BIN: usize = 11;

/// The bins, group by group, in display order.
const GROUPS: [(&str, &[&str]); 28] = [
    (
        "iterations",
        &["0", "1", "2–5", "6–15", "16–30", "31–60", "> 60"],
    ),
    ("messages", &["0", "1–9", "10–49", "50–149", "≥ 150"]),
    (
        "body bytes",
        &[
            "< 1 KiB",
            "1–16 KiB",
            "16–128 KiB",
            "128 KiB–1 MiB",
            "≥ 1 MiB",
        ],
    ),
    ("head (system messages)", &["0", "1", "2", "3"]),
    (
        "content class",
        &[
            "prose",
            "code",
            "json",
            "cjk",
            "multilingual",
            "emoji",
            "escapes",
        ],
    ),
    ("content", &["null", "absent", "empty", "text and calls"]),
    ("parallel calls", &["0 (toolCalls: [])", "1", "2–3", "4–8"]),
    (
        "tool result bytes",
        &[
            "empty",
            "1 B–1 KiB",
            "1–8 KiB",
            "8–32 KiB",
            "32 KiB (cap)",
            "> 32 KiB",
        ],
    ),
    (
        "arguments",
        &[
            "{}",
            "< 256 B",
            "256 B–4 KiB",
            "≥ 4 KiB",
            "nested ≥ 10 deep",
        ],
    ),
    (
        "pinned",
        &["system", "user", "assistant", "tool", "pinned: false"],
    ),
    (
        "ids",
        &["reused across iterations", "results out of call order"],
    ),
    (
        "pending last iteration",
        &["none answered", "partly answered"],
    ),
    ("extra fields", &["on messages", "on calls"]),
    ("wire format", &["engine", "openai", "anthropic"]),
    ("bytesPerToken", &["1", "2", "3", "4", "5", "6", "7", "8"]),
    ("keepRecent", &["1", "2", "3", "4", "5"]),
    (
        "threshold",
        &[
            "(0, 0.25]",
            "(0.25, 0.5]",
            "(0.5, 0.7)",
            "0.7",
            "(0.7, 1)",
            "1",
        ],
    ),
    (
        "transportMaxBodyBytes",
        &[
            "< 1 KiB",
            "1 KiB–100 KiB",
            "102,400 (Express)",
            "100 KiB–8 MiB",
            "8 MiB (engine)",
            "> 8 MiB",
        ],
    ),
    (
        "contextWindow",
        &[
            "< 100",
            "100–9,999",
            "10,000–127,999",
            "128,000",
            "> 128,000",
        ],
    ),
    (
        "effective window set by",
        &["contextWindow", "transport ceiling"],
    ),
    (
        "summaryMaxBytes",
        &["0", "1–255", "256–4,095", "4,096", "> 4,096"],
    ),
    ("envelope bytes", &["{}", "< 1 KiB", "1–16 KiB", "≥ 16 KiB"]),
    (
        "pressure",
        &[
            "under trigger and ceiling",
            "over trigger only",
            "over ceiling only",
            "over both",
        ],
    ),
    ("estimate − trigger (tokens)", &["−1", "0", "+1"]),
    ("body − ceiling (bytes)", &["−1", "0", "+1"]),
    // The shapes the known-bugs suite's classes need (suites/known-bugs/
    // README.md names the row each class is reached by); the other classes
    // have rows above (ids reused, content null, pressure, …).
    (
        "bug class",
        &[
            "due, results before last",
            "due, ≥2 results before last",
            "due, with a head",
            "summary after the head",
            "calls, empty content",
            "non-ASCII arguments",
        ],
    ),
    // SPEC §1.4: where images sit, how big, and the shapes the reports
    // of issue 26 name (a run of screenshots, the body at the ceiling with
    // images as its bulk, a last iteration whose own images are over it).
    (
        "images",
        &[
            "in user messages",
            "in tool results",
            "after results (openai user message)",
            "remote URL",
            "detail: low",
            "computer-use run (≥ 3 turns)",
            "icon (≤ 128 px)",
            "4K or larger",
            "≥ 1 MiB payload",
            "body at ceiling ±1, images ≥ ½ of it",
            "last iteration's images over the ceiling",
            "elided by the subject",
        ],
    ),
    (
        "image header",
        &["png", "jpeg", "gif", "webp", "unknown size"],
    ),
];

const RESULTS: [&str; 3] = ["unchanged", "compacted", "cannot_fit"];

/// What a run's cases covered. See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    cases: u64,
    ill_formed: u64,
    body_total: u64,
    body_max: u64,
    messages_total: u64,
    at_trigger: u64,
    at_ceiling: u64,
    at_either: u64,
    counts: Vec<Vec<u64>>,
    results: [u64; 3],
}

impl Default for Coverage {
    fn default() -> Self {
        Coverage {
            cases: 0,
            ill_formed: 0,
            body_total: 0,
            body_max: 0,
            messages_total: 0,
            at_trigger: 0,
            at_ceiling: 0,
            at_either: 0,
            counts: GROUPS.iter().map(|(_, bins)| vec![0; bins.len()]).collect(),
            results: [0; 3],
        }
    }
}

fn bucket(x: u64, upper_bounds: &[u64]) -> usize {
    upper_bounds
        .iter()
        .position(|&b| x < b)
        .unwrap_or(upper_bounds.len())
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

impl Coverage {
    pub fn new() -> Self {
        Coverage::default()
    }

    /// Number of cases recorded.
    pub fn cases(&self) -> u64 {
        self.cases
    }

    /// Measure one case.
    pub fn record_case(&mut self, case: &Case) {
        let mut hit = [0u64; GROUPS.len()];
        let mut set = |g: usize, b: usize| hit[g] |= 1 << b;
        let msgs = &case.messages;
        let c = &case.config;
        self.cases += 1;
        if !case.is_well_formed() {
            self.ill_formed += 1;
        }

        let head = head_len(msgs);
        let its = iterations(msgs);
        let after_head = its.iter().filter(|r| r.start >= head).count() as u64;
        set(ITERATIONS, bucket(after_head, &[1, 2, 6, 16, 31, 61]));
        set(MESSAGES, bucket(msgs.len() as u64, &[1, 10, 50, 150]));
        let body = case.body_bytes();
        self.body_total += body;
        self.body_max = self.body_max.max(body);
        self.messages_total += msgs.len() as u64;
        set(BODY, bucket(body, &[1 << 10, 16 << 10, 128 << 10, 1 << 20]));
        set(HEAD, head.min(3));

        self.record_images(case, &mut set, &its, body);
        let mut classes = 0u8;
        for m in msgs {
            classes |= classify(&m.content.text());
            match &m.content {
                Content::Null => set(CONTENT, 0),
                Content::Absent => set(CONTENT, 1),
                Content::Text(s) if s.is_empty() => set(CONTENT, 2),
                Content::Text(_) | Content::Parts(_) => {}
            }
            if !m.content.is_empty() && m.opens_iteration() {
                set(CONTENT, 3);
            }
            if let Some(calls) = &m.tool_calls {
                if !calls.is_empty() && m.content.is_empty() {
                    set(BUG_CLASS, 4);
                }
                if calls.iter().any(|c| !c.arguments.to_string().is_ascii()) {
                    set(BUG_CLASS, 5);
                }
                set(PARALLEL, bucket(calls.len() as u64, &[1, 2, 4]));
                for call in calls {
                    let size = value_size(&call.arguments);
                    let empty = call.arguments.as_object().is_some_and(|o| o.is_empty());
                    set(
                        ARGUMENTS,
                        if empty {
                            0
                        } else {
                            1 + bucket(size, &[256, 4_096])
                        },
                    );
                    if depth(&call.arguments) >= 10 {
                        set(ARGUMENTS, 4);
                    }
                    if !call.extra.is_empty() {
                        set(EXTRA, 1);
                    }
                }
            }
            if m.role == Role::Tool {
                let n = m.content.text().len() as u64;
                let cap = TOOL_RESULT_CAP as u64;
                let b = match n {
                    0 => 0,
                    n if n == cap => 4,
                    n if n > cap => 5,
                    n => 1 + bucket(n, &[1 << 10, 8 << 10]),
                };
                set(RESULT_BYTES, b);
            }
            match m.pinned {
                Some(true) => set(PINNED, m.role as usize),
                Some(false) => set(PINNED, 4),
                None => {}
            }
            if !m.extra.is_empty() {
                set(EXTRA, 0);
            }
        }
        for class in ContentClass::ALL {
            if classes & (1 << class as u8) != 0 {
                set(CLASS, class as usize);
            }
        }

        let mut first_seen: HashMap<&str, usize> = HashMap::new();
        for (n, r) in its.iter().enumerate() {
            let opener = &msgs[r.start];
            for call in opener.calls() {
                if *first_seen.entry(call.id.as_str()).or_insert(n) != n {
                    set(IDS, 0);
                }
            }
            let order: Vec<usize> = msgs[r.start + 1..r.end]
                .iter()
                .filter_map(|m| {
                    let id = m.tool_call_id.as_deref()?;
                    opener.calls().iter().position(|c| c.id == id)
                })
                .collect();
            if order.windows(2).any(|w| w[0] > w[1]) {
                set(IDS, 1);
            }
        }
        if let Some(last) = its.last() {
            if msgs[last.start].opens_iteration() {
                let unanswered = unanswered_calls(msgs, last.clone()).len();
                if unanswered > 0 {
                    let all = msgs[last.start].calls().len();
                    set(PENDING, if unanswered == all { 0 } else { 1 });
                }
            }
        }

        set(
            FORMAT,
            match c.wire_format {
                WireFormat::Engine => 0,
                WireFormat::Openai => 1,
                WireFormat::Anthropic => 2,
            },
        );
        if (1..=8).contains(&c.bytes_per_token) {
            set(BPT, c.bytes_per_token as usize - 1);
        }
        if (1..=5).contains(&c.keep_recent) {
            set(KEEP, c.keep_recent - 1);
        }
        let t = c.threshold;
        let bounds = [
            (0.25, true),
            (0.5, true),
            (0.7, false),
            (0.7, true),
            (1.0, false),
        ];
        let b = bounds
            .iter()
            .position(|&(x, inclusive)| t < x || (inclusive && t == x))
            .unwrap_or(5);
        set(THRESHOLD, b);
        let ceiling = c.transport_max_body_bytes;
        let eight_mib = 8 << 20;
        set(
            CEILING,
            match ceiling {
                x if x < 1 << 10 => 0,
                x if x < EXPRESS_DEFAULT_LIMIT => 1,
                x if x == EXPRESS_DEFAULT_LIMIT => 2,
                x if x < eight_mib => 3,
                x if x == eight_mib => 4,
                _ => 5,
            },
        );
        set(
            WINDOW,
            match c.context_window {
                x if x < 100 => 0,
                x if x < 10_000 => 1,
                x if x < 128_000 => 2,
                128_000 => 3,
                _ => 4,
            },
        );
        set(WINDOW_BY, c.window_set_by_ceiling() as usize);
        set(
            SUMMARY,
            match c.summary_max_bytes {
                0 => 0,
                x if x < 256 => 1,
                x if x < 4_096 => 2,
                4_096 => 3,
                _ => 4,
            },
        );
        let env = map_size(&c.envelope);
        set(ENVELOPE, bucket(env, &[3, 1 << 10, 16 << 10]));

        let estimate = case.estimate();
        let pressure = crate::contract::Pressure::of(c, estimate, body);
        set(PRESSURE, pressure.index());
        if pressure.due() {
            let before_last = &its[..its.len().saturating_sub(1)];
            let results = |r: &std::ops::Range<usize>| r.len().saturating_sub(1);
            if before_last
                .iter()
                .any(|r| msgs[r.start].opens_iteration() && results(r) >= 1)
            {
                set(BUG_CLASS, 0);
            }
            if before_last
                .iter()
                .any(|r| msgs[r.start].opens_iteration() && results(r) >= 2)
            {
                set(BUG_CLASS, 1);
            }
            if head > 0 {
                set(BUG_CLASS, 2);
            }
        }
        if msgs[head..].iter().any(|m| {
            m.role == Role::System
                && m.content
                    .text()
                    .starts_with(crate::contract::SUMMARY_PREFIX)
        }) {
            set(BUG_CLASS, 3);
        }
        let dt = estimate as i64 - c.trigger() as i64;
        let dc = body as i64 - ceiling as i64;
        if dt.abs() <= 1 {
            set(AT_TRIGGER, (dt + 1) as usize);
            self.at_trigger += 1;
        }
        if dc.abs() <= 1 {
            set(AT_CEILING, (dc + 1) as usize);
            self.at_ceiling += 1;
        }
        if dt.abs() <= 1 || dc.abs() <= 1 {
            self.at_either += 1;
        }

        for (g, bits) in hit.iter().enumerate() {
            for (b, count) in self.counts[g].iter_mut().enumerate() {
                if bits & (1 << b) != 0 {
                    *count += 1;
                }
            }
        }
    }

    /// The `images` and `image header` bins of a case.
    fn record_images(
        &mut self,
        case: &Case,
        set: &mut impl FnMut(usize, usize),
        its: &[std::ops::Range<usize>],
        body: u64,
    ) {
        let msgs = &case.messages;
        let c = &case.config;
        let mut image_bytes = 0u64;
        let mut turns_with_images = 0usize;
        for r in its {
            if msgs[r.clone()].iter().any(|m| m.has_images()) {
                turns_with_images += 1;
            }
        }
        for (i, m) in msgs.iter().enumerate() {
            if !m.has_images() {
                continue;
            }
            match m.role {
                Role::Tool => set(IMAGES, 1),
                Role::User if i > 0 && msgs[i - 1].role == Role::Tool => set(IMAGES, 2),
                Role::User => set(IMAGES, 0),
                _ => {}
            }
            for img in m.content.images() {
                image_bytes += img.payload_bytes();
                if img.detail() == Some("low") {
                    set(IMAGES, 4);
                }
                match &img.source {
                    crate::model::ImageSource::Url(_) => set(IMAGES, 3),
                    crate::model::ImageSource::Inline(d) => {
                        if d.data().len() as u64 >= (1 << 20) * 4 / 3 {
                            set(IMAGES, 8);
                        }
                    }
                }
                match img.pixels() {
                    Some((w, h)) => {
                        if w.max(h) <= 128 {
                            set(IMAGES, 6);
                        }
                        if w.max(h) >= 3840 {
                            set(IMAGES, 7);
                        }
                        let header = match img.data().map(|d| &d.data()[..d.data().len().min(4)]) {
                            Some("iVBO") => 0,
                            Some(s) if s.starts_with("/9j") => 1,
                            Some("R0lG") => 2,
                            Some("UklG") => 3,
                            _ => 4,
                        };
                        set(IMAGE_HEADER, header);
                    }
                    None => set(IMAGE_HEADER, 4),
                }
            }
        }
        if turns_with_images >= 3 {
            set(IMAGES, 5);
        }
        let ceiling = c.transport_max_body_bytes;
        if image_bytes > 0 && body.abs_diff(ceiling) <= 1 && image_bytes * 2 >= body {
            set(IMAGES, 9);
        }
        if let Some(last) = its.last() {
            let own: u64 = msgs[last.clone()]
                .iter()
                .flat_map(|m| m.content.images())
                .map(|i| i.payload_bytes())
                .sum();
            if own > 0 && own > ceiling {
                set(IMAGES, 10);
            }
        }
    }

    /// The subject elided images in its answer to the last case recorded
    /// (the `images` group's "elided by the subject" bin).
    pub fn record_elided(&mut self) {
        self.counts[IMAGES][ELIDED_BIN] += 1;
    }

    /// What the subject answered to `input`: [`Coverage::record_result`],
    /// and the elision bin when the output elided an image of the input.
    pub fn record_answer(
        &mut self,
        input: &[crate::model::Message],
        output: Option<&[crate::model::Message]>,
        cannot_fit: bool,
    ) {
        self.record_result(output.is_some_and(|o| o != input), cannot_fit);
        if output.is_some_and(|o| elided_images(input, o)) {
            self.record_elided();
        }
    }

    /// What the subject did with the last case: compacted it (output ≠
    /// input), or answered `cannot_fit`; neither means unchanged.
    pub fn record_result(&mut self, compacted: bool, cannot_fit: bool) {
        let k = if cannot_fit { 2 } else { compacted as usize };
        self.results[k] += 1;
    }

    /// Add another run's figures to these.
    /// Add another run's coverage (a shard's). Sums saturate: coverage
    /// read back from a report file is not trusted to add up.
    pub fn merge(&mut self, other: &Coverage) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.cases, other.cases);
        add(&mut self.ill_formed, other.ill_formed);
        add(&mut self.body_total, other.body_total);
        self.body_max = self.body_max.max(other.body_max);
        add(&mut self.messages_total, other.messages_total);
        add(&mut self.at_trigger, other.at_trigger);
        add(&mut self.at_ceiling, other.at_ceiling);
        add(&mut self.at_either, other.at_either);
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                add(a, *b);
            }
        }
        for (a, b) in self.results.iter_mut().zip(other.results) {
            add(a, b);
        }
    }

    fn share(&self, n: u64) -> f64 {
        if self.cases == 0 {
            0.0
        } else {
            n as f64 / self.cases as f64
        }
    }

    fn results_total(&self) -> u64 {
        self.results.iter().sum()
    }

    /// Mean body bytes and mean messages per case.
    pub fn means(&self) -> (f64, f64) {
        (self.share(self.body_total), self.share(self.messages_total))
    }

    /// Share of cases whose estimate is within ±1 token of the trigger,
    /// whose body is within ±1 byte of the ceiling, and either.
    pub fn boundary_shares(&self) -> (f64, f64, f64) {
        (
            self.share(self.at_trigger),
            self.share(self.at_ceiling),
            self.share(self.at_either),
        )
    }

    /// Number of cases in bin `label` of group `group` (None if no such bin).
    pub fn count(&self, group: &str, label: &str) -> Option<u64> {
        let g = GROUPS.iter().position(|(name, _)| *name == group)?;
        let b = GROUPS[g].1.iter().position(|l| *l == label)?;
        Some(self.counts[g][b])
    }

    /// The bins no case reached, as `"group: bin"`. The `anthropic` format
    /// counts only once it is implemented; results only once recorded.
    pub fn missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (g, (name, bins)) in GROUPS.iter().enumerate() {
            for (b, label) in bins.iter().enumerate() {
                if g == FORMAT && b == 2 && !anthropic_ready() {
                    continue;
                }
                // What the subject did, only once a subject was run.
                if g == IMAGES && b == ELIDED_BIN && self.results_total() == 0 {
                    continue;
                }
                if self.counts[g][b] == 0 {
                    out.push(format!("{name}: {label}"));
                }
            }
        }
        if self.results_total() > 0 {
            for (k, label) in RESULTS.iter().enumerate() {
                if self.results[k] == 0 {
                    out.push(format!("result: {label}"));
                }
            }
        }
        out
    }

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
        json!({
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
        })
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
        Some(c)
    }
}

/// Whether `output` elided an image of `input` (SPEC §4 step 4): some
/// output message is an input message with images elided.
pub fn elided_images(input: &[crate::model::Message], output: &[crate::model::Message]) -> bool {
    let imaged: Vec<&crate::model::Message> = input.iter().filter(|m| m.has_images()).collect();
    !imaged.is_empty()
        && output.iter().any(|m| {
            !m.content.parts().is_empty()
                && imaged.iter().any(|x| crate::contract::is_elision_of(m, x))
        })
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
        if total > 0 {
            let r = |k: usize| pct(self.results[k] as f64 / total as f64);
            writeln!(
                f,
                "results of {total}: {} unchanged, {} compacted, {} cannot_fit",
                r(0),
                r(1),
                r(2)
            )?;
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
                let mark = if n == 0 { "  ← never reached" } else { "" };
                writeln!(
                    f,
                    "{group:<28} {label:<40} {n:>7} {:>7}{mark}",
                    pct(self.share(n))
                )?;
            }
        }
        let missing = self.missing();
        if missing.is_empty() {
            writeln!(f, "\nevery class and knob range reached")
        } else {
            writeln!(f, "\nnever reached: {}", missing.join("; "))
        }
    }
}
