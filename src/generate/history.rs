//! The generation core, shared by the `Arbitrary` impls, the proptest
//! strategy and `case_from_seed`: [`gen_case`].
//!
//! Order of work: the case's own limits (swarm), the history, the config
//! (sized against the history it goes with), optional ill-formedness, then
//! boundary seeking (which needs the final history and config).

use arbitrary::{Arbitrary, Unstructured};
use std::sync::Arc;

use serde_json::{json, Map, Number, Value};

use super::rng::{mix, Draw, SplitMix64};
use super::text::{self, ContentClass};
use super::{anthropic_ready, Case, GenConfig};
use crate::body::{string_size, value_size};
use crate::config::Config;
use crate::contract::SUMMARY_PREFIX;
use crate::estimate::{Adr0098, Estimator};
use crate::model::{check_well_formed, iterations, Content, Message, Role, ToolCall, WireFormat};

const SHAPE_STREAM: u64 = 0x0053_4841_5045; // "SHAPE"
const TEXT_STREAM: u64 = 0x5445_5854; // "TEXT"

/// RN-150's individual cap on one tool result, which a share of results hit.
pub const TOOL_RESULT_CAP: usize = 32 * 1024;

/// Generate one case under `g`. The first eight bytes of `u` seed the bulk
/// text; the rest of `u` steers the shape, and a PRNG takes over when it
/// runs out. Every config validates; every history is well formed unless
/// `g.allow_ill_formed` is set.
pub fn gen_case(u: &mut Unstructured, g: &GenConfig) -> arbitrary::Result<Case> {
    gen_case_in(u, g, None)
}

/// [`gen_case`] for one given config (`--config`: the user's production
/// values): every case has exactly `config`, and the boundary share of
/// cases is aimed at *its* trigger and ceiling by growing or trimming the
/// history (`generate::aim`) instead of by moving the config.
pub fn gen_case_for(
    u: &mut Unstructured,
    g: &GenConfig,
    config: &Config,
) -> arbitrary::Result<Case> {
    gen_case_in(u, g, Some(config))
}

fn gen_case_in(
    u: &mut Unstructured,
    g: &GenConfig,
    fixed: Option<&Config>,
) -> arbitrary::Result<Case> {
    let seed = u64::arbitrary(u)?;
    let mut d = Draw::new(u, mix(seed, SHAPE_STREAM));
    let shape = Shape::draw(&mut d, g);
    let mut gen = Gen {
        d,
        t: SplitMix64::new(mix(seed, TEXT_STREAM)),
        g,
        counter: 0,
        s: shape,
    };
    let mut messages = gen.history();
    let mut images = super::images::ImageGen::for_case(seed, g);
    if let Some(images) = &mut images {
        images.add(&mut messages);
    }
    let config = match fixed {
        Some(c) => c.clone(),
        None => gen.config(&messages),
    };
    if let Some(images) = &mut images {
        images.for_format(&mut messages, config.wire_format);
    }
    let mut case = Case { config, messages };
    if let (Some(images), None) = (&mut images, fixed) {
        images.aim_at_elision(&mut case);
    }
    if gen.s.ill_formed {
        gen.corrupt(&mut case.messages);
    }
    if gen.s.exotic_numbers {
        gen.exotic_numbers(&mut case);
        if let Some(c) = fixed {
            case.config = c.clone(); // the user's envelope stays as written
        }
    }
    if gen.s.boundary {
        match fixed {
            Some(_) => gen.aim(&mut case),
            None => gen.seek_boundary(&mut case),
        }
    }
    debug_assert!(case.config.validate().is_ok(), "{:?}", case.config);
    Ok(case)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdStyle {
    /// `call_1`, `call_2`, … unique over the history.
    Sequential,
    /// `call_0`, `call_1`, … restarting every iteration: ids reused.
    Reused,
    /// `call_` + 24 random characters, as OpenAI models make them.
    OpenAi,
    /// `toolu_01` + 22 random characters, as Anthropic models make them.
    Anthropic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    User,
    Assistant,
    Tools,
    System,
}

/// One case's own limits and flags (swarm testing).
pub(super) struct Shape {
    iterations: usize,
    head: usize,
    max_parallel: usize,
    pub(super) result_tier: usize,
    arg_tier: usize,
    text_max: usize,
    pub(super) classes: Vec<ContentClass>,
    ids: IdStyle,
    pinned: bool,
    pending: bool,
    extras: bool,
    out_of_order: bool,
    empty_calls: bool,
    ill_formed: bool,
    boundary: bool,
    /// Numbers that stock JSON libraries re-spell or round (see
    /// [`GenConfig::exotic_numbers_percent`]).
    exotic_numbers: bool,
}

/// Iteration-count tiers: (lowest, highest, weight). Mostly 2–30; 61 and
/// up (past ADR 0098's 60-iteration gate) in 3% of cases.
const ITERATION_TIERS: [(usize, usize, u32); 7] = [
    (0, 0, 3),
    (1, 1, 4),
    (2, 5, 27),
    (6, 15, 36),
    (16, 30, 21),
    (31, 60, 7),
    (61, usize::MAX, 3),
];

impl Shape {
    fn draw(d: &mut Draw, g: &GenConfig) -> Shape {
        let weights: Vec<u32> = ITERATION_TIERS.iter().map(|t| t.2).collect();
        let (lo, hi, _) = ITERATION_TIERS[d.weighted(&weights)];
        let hi = hi.min(g.max_iterations);
        let iterations = d.range(lo.min(hi) as u64, hi as u64) as usize;
        // An empty history (no head, no iterations) is an edge of its own.
        let head = if iterations == 0 {
            d.weighted(&[50, 30, 10, 10])
        } else {
            d.weighted(&[20, 55, 15, 10])
        }
        .min(g.max_head);
        let max_parallel = match g.max_parallel_calls {
            0 => 0,
            m => match d.weighted(&[30, 40, 30]) {
                0 => 1,
                1 => d.range(2, 3) as usize,
                _ => d.range(4, m.max(4) as u64) as usize,
            }
            .min(m),
        };
        // Results: tiny, small, medium, at the cap, past it. Long
        // histories lean to big results: ADR 0098's gate had 60 iterations
        // with 32 KiB results.
        let result_tier = if iterations > 60 {
            d.weighted(&[20, 25, 20, 20, 15])
        } else if iterations >= 40 {
            d.weighted(&[32, 38, 18, 8, 4])
        } else {
            d.weighted(&[40, 45, 12, 2, 1])
        };
        let arg_tier = d.weighted(&[76, 19, 5]);
        let text_max = match d.weighted(&[65, 28, 7]) {
            0 => 300,
            1 => 2_048,
            _ => g.max_text_bytes,
        }
        .min(g.max_text_bytes);
        // Text classes only: `images` is drawn on a stream of its own
        // (`generate::images`), so the draws here are what they were.
        let text_classes: Vec<ContentClass> = g
            .content_classes
            .iter()
            .copied()
            .filter(|c| c.is_text())
            .collect();
        let mut classes: Vec<ContentClass> = text_classes
            .iter()
            .copied()
            .filter(|_| d.chance(60))
            .collect();
        if classes.is_empty() && !text_classes.is_empty() {
            classes.push(*d.pick(&text_classes));
        }
        if classes.is_empty() {
            classes.push(ContentClass::Prose);
        }
        let ids = if d.chance(g.reused_ids_percent as u32) {
            IdStyle::Reused
        } else {
            *d.pick(&[IdStyle::Sequential, IdStyle::OpenAi, IdStyle::Anthropic])
        };
        Shape {
            iterations,
            head,
            max_parallel,
            result_tier,
            arg_tier,
            text_max,
            classes,
            ids,
            pinned: d.chance(g.pinned_percent as u32),
            pending: d.chance(g.pending_percent as u32),
            extras: d.chance(g.extra_fields_percent as u32),
            out_of_order: d.chance(15),
            empty_calls: d.chance(10),
            ill_formed: g.allow_ill_formed && d.chance(g.ill_formed_percent as u32),
            boundary: d.chance(g.boundary_percent as u32),
            exotic_numbers: g.exotic_numbers_percent > 0
                && d.chance(g.exotic_numbers_percent as u32),
        }
    }
}

const TOOLS: [&str; 10] = [
    "read_file",
    "search_workspace",
    "run_terminal",
    "list_dir",
    "get_pr_diff",
    "post_review_comment",
    "write_file",
    "edit_file",
    "http_request",
    "query_db",
];

const PATHS: [&str; 6] = [
    "apps/api/src/main.ts",
    "apps/engine/lib/engine/harness/context_manager/default.ex",
    "apps/engine/config/runtime.exs",
    "docker/docker-compose.yml",
    "apps/engine/lib/engine/actions/terminal_executor.ex",
    "apps/engine/lib/engine/agents/qa_automacao_agent.ex",
];

pub(super) struct Gen<'u, 'a, 'g> {
    pub(super) d: Draw<'u, 'a>,
    pub(super) t: SplitMix64,
    pub(super) g: &'g GenConfig,
    counter: u64,
    pub(super) s: Shape,
}

impl Gen<'_, '_, '_> {
    // ----- history -------------------------------------------------------

    fn history(&mut self) -> Vec<Message> {
        let mut msgs = Vec::new();
        // Now and then the head ends in the reference's summary of an
        // earlier turn, where SPEC §4's two readings of the head part
        // (`contract::Head`): the oracles must accept both.
        let carried_summary = self.s.head >= 2 && self.d.chance(8);
        for i in 0..self.s.head {
            let mut content = self.text_content(true);
            if carried_summary && i + 1 == self.s.head {
                content = format!("{SUMMARY_PREFIX} {content}");
            }
            let m = self.decorate(Message::system(content));
            msgs.push(m);
        }
        let n = self.s.iterations;
        let mut prev = None;
        for i in 0..n {
            let last = i + 1 == n;
            let turn = if last && self.s.pending && self.s.max_parallel > 0 {
                Turn::Tools
            } else {
                self.turn(prev)
            };
            match turn {
                Turn::User => {
                    let content = self.text_content(true);
                    let m = self.decorate(Message::user(content));
                    msgs.push(m);
                }
                Turn::Assistant => {
                    let m = self.assistant_text();
                    msgs.push(m);
                }
                Turn::System => {
                    let mut content = self.text_content(true);
                    if self.d.chance(50) {
                        content = format!("{SUMMARY_PREFIX} {content}");
                    }
                    let m = self.decorate(Message::system(content));
                    msgs.push(m);
                }
                Turn::Tools => self.tool_iteration(&mut msgs, last && self.s.pending),
            }
            prev = Some(turn);
        }
        msgs
    }

    fn turn(&mut self, prev: Option<Turn>) -> Turn {
        let tools = if self.s.max_parallel > 0 { 1 } else { 0 };
        // Weights: user, assistant, tools, system (never first: it would
        // join the head).
        let w: [u32; 4] = match prev {
            None => [85, 5, 10 * tools, 0],
            Some(Turn::User) => [4, 25, 70 * tools, 1],
            Some(Turn::Tools) => [18, 20, 60 * tools, 2],
            Some(Turn::Assistant | Turn::System) => [60, 8, 30 * tools, 2],
        };
        [Turn::User, Turn::Assistant, Turn::Tools, Turn::System][self.d.weighted(&w)]
    }

    /// A text for a system, user or assistant message; prose when the case
    /// has it and `prefer_prose`, mostly.
    fn text_content(&mut self, prefer_prose: bool) -> String {
        let n = if self.d.chance(2) {
            0
        } else {
            self.d.log_range(1, self.s.text_max.max(1) as u64) as usize
        };
        let n = n.min(self.s.text_max);
        let class =
            if prefer_prose && self.s.classes.contains(&ContentClass::Prose) && self.d.chance(60) {
                ContentClass::Prose
            } else {
                *self.d.pick(&self.s.classes)
            };
        text::text(&mut self.t, class, n)
    }

    fn assistant_text(&mut self) -> Message {
        let content = match self.d.weighted(&[93, 3, 2, 2]) {
            0 => Content::Text(self.text_content(true)),
            1 => Content::Null,
            2 => Content::Absent,
            _ => Content::Text(String::new()),
        };
        let mut m = Message::assistant(content);
        if self.s.empty_calls && self.d.chance(20) {
            m.tool_calls = Some(Vec::new());
        }
        self.decorate(m)
    }

    pub(super) fn tool_iteration(&mut self, msgs: &mut Vec<Message>, pending: bool) {
        let max = self.s.max_parallel.max(1);
        let n = match self.d.weighted(&[55, 20, 25]) {
            0 => 1,
            1 => 2,
            _ => self.d.range(3, max.max(3) as u64) as usize,
        }
        .min(max);
        let mut calls: Vec<ToolCall> = Vec::with_capacity(n);
        for j in 0..n {
            let id = self.call_id(j, &calls);
            let budget = self.argument_budget();
            let name = if budget > 300 {
                *self.d.pick(&TOOLS[6..])
            } else {
                *self.d.pick(&TOOLS)
            };
            let arguments = self.arguments(name, budget);
            let mut call = ToolCall::new(id, name, arguments);
            if self.s.extras && self.d.chance(20) {
                let (k, v) = self.extra_field(&["x_origin", "metadata", "approval"]);
                call.extra.insert(k, v);
            }
            calls.push(call);
        }
        let content = match self.d.weighted(&[30, 20, 20, 30]) {
            0 => Content::Text(String::new()),
            1 => Content::Absent,
            2 => Content::Null,
            _ => {
                let n = self.d.log_range(1, 300.min(self.s.text_max.max(1)) as u64) as usize;
                let class = *self.d.pick(&self.s.classes);
                Content::Text(text::text(&mut self.t, class, n))
            }
        };
        let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        let opener = self.decorate(Message::assistant_calls(content, calls));
        msgs.push(opener);
        let mut order: Vec<usize> = (0..n).collect();
        if self.s.out_of_order && self.d.chance(50) {
            for k in (1..n).rev() {
                let r = self.d.below(k as u64 + 1) as usize;
                order.swap(k, r);
            }
        }
        let answered = if pending {
            self.d.below(n as u64) as usize
        } else {
            n
        };
        for &j in &order[..answered] {
            let content = match self.d.weighted(&[96, 2, 2]) {
                0 => Content::Text(self.tool_result()),
                1 => Content::Null,
                _ => Content::Absent,
            };
            let m = self.decorate(Message::tool(ids[j].clone(), content));
            msgs.push(m);
        }
    }

    fn tool_result(&mut self) -> String {
        let max = self.g.max_tool_result_bytes as u64;
        let cap = TOOL_RESULT_CAP as u64;
        let n = if self.d.chance(5) {
            0
        } else {
            match self.s.result_tier {
                0 => self.d.log_range(1, 256),
                1 => self.d.log_range(1, 2_048),
                2 => self.d.log_range(64, 8_192),
                3 => match self.d.weighted(&[25, 75]) {
                    0 => cap,
                    _ => self.d.log_range(1_024, cap),
                },
                _ => match self.d.weighted(&[25, 30, 45]) {
                    0 => cap,
                    1 => self.d.range(cap + 1, max.max(cap + 1)),
                    _ => self.d.log_range(1_024, max.max(1_024)),
                },
            }
        }
        .min(max) as usize;
        let json_first = self.s.classes.contains(&ContentClass::Json) && self.d.chance(35);
        let class = if json_first {
            ContentClass::Json
        } else {
            *self.d.pick(&self.s.classes)
        };
        text::text(&mut self.t, class, n)
    }

    pub(super) fn call_id(&mut self, j: usize, made: &[ToolCall]) -> String {
        loop {
            let id = match self.s.ids {
                IdStyle::Sequential => {
                    self.counter += 1;
                    format!("call_{}", self.counter)
                }
                IdStyle::Reused => format!("call_{j}"),
                IdStyle::OpenAi => format!("call_{}", self.alnum(24)),
                IdStyle::Anthropic => format!("toolu_01{}", self.alnum(22)),
            };
            if !made.iter().any(|c| c.id == id) {
                return id;
            }
        }
    }

    fn alnum(&mut self, n: usize) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| *self.t.pick(A) as char).collect()
    }

    /// Bytes of JSON to aim at for one call's arguments; 0 means `{}`.
    fn argument_budget(&mut self) -> u64 {
        let max = self.g.max_argument_bytes as u64;
        if self.d.chance(7) {
            return 0;
        }
        let tier = match self.s.arg_tier {
            0 => 0,
            1 => self.d.weighted(&[70, 30]),
            _ => self.d.weighted(&[50, 25, 25]),
        };
        match tier {
            0 => self.d.log_range(8, 200),
            1 => self.d.log_range(256, 4_096),
            _ => self.d.log_range(4_096, max.max(4_096)),
        }
        .min(max)
    }

    fn arguments(&mut self, name: &str, budget: u64) -> Value {
        if budget < 8 {
            return json!({});
        }
        let depth = self.g.max_json_depth;
        let t = &mut self.t;
        let path = |t: &mut SplitMix64| -> String {
            if t.chance(50) {
                (*t.pick(&PATHS)).to_owned()
            } else {
                format!(
                    "apps/{}/src/{}/{}.ts",
                    t.pick(text::WORDS),
                    t.pick(text::WORDS),
                    t.pick(text::WORDS)
                )
            }
        };
        let mut v = match name {
            "read_file" => {
                let mut o = json!({"path": path(t)});
                if t.chance(40) {
                    o["startLine"] = json!(t.range(1, 400));
                    o["endLine"] = json!(t.range(400, 2_000));
                }
                o
            }
            "search_workspace" => {
                let q = text::text(t, ContentClass::Prose, (budget / 3).clamp(3, 60) as usize);
                json!({"query": q.trim(), "maxResults": t.range(1, 50)})
            }
            "run_terminal" => json!({
                "command": format!("mix test test/engine/{}_test.exs --seed {}", t.pick(text::WORDS), t.range(0, 99_999)),
                "timeoutMs": 60_000,
                "cwd": "apps/engine",
            }),
            "list_dir" => json!({"path": "apps/", "depth": t.range(1, 4)}),
            "get_pr_diff" => json!({"pr": t.range(1, 999), "repo": "org/monorepo"}),
            "post_review_comment" => json!({
                "pr": t.range(1, 999),
                "body": text::text(t, ContentClass::Prose, (budget / 2) as usize).trim_end(),
            }),
            "write_file" => {
                let class = if t.chance(60) {
                    ContentClass::Code
                } else {
                    *t.pick(&ContentClass::ALL)
                };
                let content = text::text(t, class, budget.saturating_sub(40) as usize);
                json!({"path": path(t), "content": content})
            }
            "edit_file" => {
                let mut edits = Vec::new();
                let mut used = 40;
                while used < budget {
                    let n = (budget - used).min(600) as usize / 2;
                    let old = text::text(t, ContentClass::Code, n);
                    let class = *t.pick(&ContentClass::ALL);
                    let new = text::text(t, class, n);
                    let e = json!({"oldText": old, "newText": new});
                    used += value_size(&e) + 1;
                    edits.push(e);
                }
                json!({"path": path(t), "edits": edits})
            }
            "http_request" => {
                let body = text::bulk_value(t, depth.saturating_sub(1), budget.saturating_sub(120));
                json!({
                    "method": "POST",
                    "url": format!("http://api:3000/internal/sessions/{}/llm-turn", t.range(1, 9_999)),
                    "headers": {"content-type": "application/json", "x-request-id": t.range(1, 1 << 40)},
                    "body": body,
                })
            }
            _ => {
                // Deep nesting on purpose in a share of the large ones.
                if budget >= 1_024 && depth >= 10 && t.chance(35) {
                    let levels = t.range(8, depth as u64 - 2) as usize;
                    let inner = text::value(t, depth - levels - 1, budget / 2);
                    let mut v = inner;
                    for _ in 0..levels {
                        let mut o = Map::new();
                        o.insert(text::json_key(t), v);
                        v = Value::Object(o);
                    }
                    json!({"filter": v})
                } else {
                    match text::bulk_value(t, depth, budget) {
                        Value::Object(o) => Value::Object(o),
                        other => json!({"input": other}),
                    }
                }
            }
        };
        prune(&mut v, depth.max(1));
        v
    }

    fn extra_field(&mut self, keys: &[&str]) -> (String, Value) {
        let key = (*self.d.pick(keys)).to_owned();
        let t = &mut self.t;
        let v = match key.as_str() {
            "timestamp" => json!(format!(
                "2026-08-19T12:{:02}:{:02}Z",
                t.below(60),
                t.below(60)
            )),
            "x_trace_id" => json!(format!("{:016x}", t.next_u64())),
            "approval" => json!(*t.pick(&["pending", "granted", "denied"])),
            "cacheControl" => json!({"type": "ephemeral"}),
            _ => text::value(t, self.g.max_json_depth.min(3), 64),
        };
        (key, v)
    }

    /// Pins and extra fields, when the case has them.
    fn decorate(&mut self, mut m: Message) -> Message {
        if self.s.pinned {
            match self.d.weighted(&[89, 8, 3]) {
                1 => m.pinned = Some(true),
                2 => m.pinned = Some(false),
                _ => {}
            }
        }
        if self.s.extras && self.d.chance(25) {
            for _ in 0..self.d.range(1, 2) {
                let (k, v) = self.extra_field(&[
                    "metadata",
                    "timestamp",
                    "x_trace_id",
                    "annotations",
                    "cacheControl",
                ]);
                m.extra.insert(k, v);
            }
        }
        m
    }

    // ----- config --------------------------------------------------------

    fn config(&mut self, msgs: &[Message]) -> Config {
        let g = self.g;
        let mut c = Config::default();
        let engine = 100u32.saturating_sub(g.openai_percent as u32 + g.anthropic_percent as u32);
        c.wire_format =
            match self
                .d
                .weighted(&[engine, g.openai_percent as u32, g.anthropic_percent as u32])
            {
                1 => WireFormat::Openai,
                2 if anthropic_ready() => WireFormat::Anthropic,
                _ => WireFormat::Engine,
            };
        c.envelope = self.envelope();
        c.bytes_per_token = if self.d.chance(40) {
            4
        } else {
            self.d.range(1, 8)
        };
        c.keep_recent = self.d.weighted(&[20, 40, 20, 10, 10]) + 1;
        let max_summary = g.max_summary_bytes as u64;
        c.summary_max_bytes = match self.d.weighted(&[5, 15, 25, 40, 15]) {
            0 => 0,
            1 => self.d.range(1, 255),
            2 => self.d.range(256, 4_095),
            3 => 4_096,
            _ => self.d.range(4_097, max_summary.max(4_097)),
        }
        .min(max_summary) as usize;
        c.threshold = match self.d.weighted(&[40, 10, 50]) {
            0 => 0.7,
            1 => 1.0,
            _ => self.d.range(1, 99) as f64 / 100.0,
        };
        let real = g.real_config_percent as u32;
        let tiny = (g.tiny_config_percent as u32).min(100 - real.min(100));
        match self
            .d
            .weighted(&[real, tiny, 100u32.saturating_sub(real + tiny)])
        {
            0 => {
                c.context_window =
                    [128_000, 200_000, 32_000, 1_000_000][self.d.weighted(&[70, 10, 10, 10])];
                c.transport_max_body_bytes = [
                    8 << 20,
                    crate::config::EXPRESS_DEFAULT_LIMIT,
                    10 << 20,
                    16 << 20,
                ][self.d.weighted(&[40, 40, 10, 10])];
                if self.d.chance(70) {
                    c.threshold = 0.7;
                }
                if self.d.chance(70) {
                    c.bytes_per_token = 4;
                }
                if self.d.chance(60) {
                    c.keep_recent = 2;
                }
                if self.d.chance(60) {
                    c.summary_max_bytes = 4_096.min(g.max_summary_bytes);
                }
            }
            1 => {
                c.transport_max_body_bytes = self.d.range(100, 1_023);
                c.context_window = self.d.range(10, 99);
            }
            _ => {
                // Sizing is relative, so the engine form's size will do
                // (cheaper than writing openai or anthropic values).
                let body = (map_size(&c.envelope)
                    + msgs.iter().map(crate::body::message_size).sum::<u64>())
                    as f64;
                let tokens = Adr0098.tokens(&mut msgs.iter(), &c) as f64;
                let f = 2f64.powf((self.d.range(0, 400) as f64 - 200.0) / 100.0);
                c.transport_max_body_bytes = ((body * f) as u64).max(1);
                if self.d.chance(25) {
                    // The ceiling decides the effective window.
                    c.context_window = (c.ceiling_window() + self.d.range(0, 1_000)).max(128_000);
                } else {
                    let f = 2f64.powf((self.d.range(0, 400) as f64 - 200.0) / 100.0);
                    c.context_window = ((tokens * f / c.threshold) as u64).max(1);
                }
            }
        }
        c
    }

    /// Respell or replace some of the case's JSON numbers (tool-call
    /// arguments, extra fields, the envelope) with spellings that stock
    /// JSON libraries change: `1.50`, `12.0`, `1e5`, `-0`, 2^64, `1e400`,
    /// `0.00001`. Only for subjects that keep numbers exactly.
    fn exotic_numbers(&mut self, case: &mut Case) {
        let t = &mut self.t;
        let mut touched = 0;
        for m in &mut case.messages {
            for c in m.tool_calls.iter_mut().flatten() {
                let mut args = (*c.arguments).clone();
                touched += exoticise(t, &mut args);
                if touched == 0 {
                    if let Value::Object(o) = &mut args {
                        o.insert("limit".into(), Value::Number(exotic(t, None)));
                        touched += 1;
                    }
                }
                c.arguments = Arc::new(args);
            }
            for v in m.extra.values_mut() {
                touched += exoticise(t, v);
            }
        }
        for v in case.config.envelope.values_mut() {
            touched += exoticise(t, v);
        }
        if touched == 0 {
            case.config
                .envelope
                .insert("topP".into(), Value::Number(exotic(t, None)));
        }
    }

    fn envelope(&mut self) -> Map<String, Value> {
        let max = self.g.max_envelope_bytes as u64;
        let mut env = Map::new();
        let tier = self.d.weighted(&[40, 36, 19, 5]);
        if tier == 0 {
            return env;
        }
        let t = &mut self.t;
        let small = [
            (
                "model",
                json!(*t.pick(&["gpt-4o", "claude-sonnet-4", "qwen2.5-coder-32b"])),
            ),
            (
                "sessionId",
                json!(format!("sess_{:012x}", t.next_u64() >> 16)),
            ),
            ("stream", json!(t.chance(50))),
            ("temperature", text::decimal(t.range(0, 10), 10)),
            ("maxTokens", json!(t.range(256, 8_192))),
            (
                "metadata",
                json!({"pr": t.range(1, 999), "agent": "qa_automacao_agent"}),
            ),
        ];
        for (k, v) in small {
            if self.d.chance(50) {
                env.insert(k.to_owned(), v);
            }
        }
        if env.is_empty() {
            env.insert("model".into(), json!("gpt-4o"));
        }
        let target = match tier {
            1 => 0,
            2 => self.d.log_range(1_024, 8_192),
            _ => self.d.log_range(8_192, max.max(8_192)),
        }
        .min(max);
        let mut tools = Vec::new();
        let mut size = map_size(&env) + 10;
        while size < target {
            let tool = self.tool_schema();
            let s = value_size(&tool) + 1;
            if size + s > max {
                break;
            }
            size += s;
            tools.push(tool);
        }
        if !tools.is_empty() {
            env.insert("tools".into(), Value::Array(tools));
        }
        let mut v = Value::Object(env);
        prune(&mut v, self.g.max_json_depth.max(1));
        let Value::Object(mut env) = v else {
            unreachable!("pruning keeps the top object")
        };
        // Drop fields until it fits the maximum (a tiny maximum allows only {}).
        while map_size(&env) > max && !env.is_empty() {
            let last = env.keys().next_back().cloned().unwrap_or_default();
            env.shift_remove(&last);
        }
        env
    }

    /// A tool schema from a pool written once, under a name of its own.
    fn tool_schema(&mut self) -> Value {
        let mut schema = self.t.pick(tool_schemas()).clone();
        let name = format!("{}_{}", self.t.pick(&TOOLS), self.t.range(0, 999));
        schema["function"]["name"] = Value::String(name);
        schema
    }

    // ----- ill-formed (opt-in) ------------------------------------------

    fn corrupt(&mut self, msgs: &mut Vec<Message>) {
        let kind = self.d.weighted(&[30, 25, 25, 20]);
        let iters = iterations(msgs);
        let openers: Vec<usize> = iters
            .iter()
            .filter(|r| msgs[r.start].opens_iteration())
            .map(|r| r.start)
            .collect();
        match kind {
            1 => {
                // Duplicate answer: one result twice in its iteration.
                let tools: Vec<usize> = (0..msgs.len())
                    .filter(|&i| msgs[i].role == Role::Tool)
                    .collect();
                if !tools.is_empty() {
                    let i = *self.d.pick(&tools);
                    let dup = msgs[i].clone();
                    msgs.insert(i + 1, dup);
                }
            }
            2 => {
                // A call left unanswered mid-history.
                let mid: Vec<_> = iters[..iters.len().saturating_sub(1)]
                    .iter()
                    .filter(|r| r.len() > 1)
                    .cloned()
                    .collect();
                if !mid.is_empty() {
                    let r = self.d.pick(&mid).clone();
                    let i = self.d.range(r.start as u64 + 1, r.end as u64 - 1) as usize;
                    msgs.remove(i);
                }
            }
            3 if !openers.is_empty() => {
                // Two calls with one id in one assistant message.
                let i = *self.d.pick(&openers);
                let calls = msgs[i].tool_calls.as_mut().expect("an opener has calls");
                let dup = calls[0].clone();
                calls.push(dup);
            }
            _ => {}
        }
        if check_well_formed(msgs).is_ok() {
            // Orphan: a result whose call no assistant message makes.
            let at = self.d.range(0, msgs.len() as u64) as usize;
            let content = self.tool_result();
            msgs.insert(
                at,
                Message::tool(format!("orphan_{}", self.alnum(8)), content),
            );
        }
    }

    // ----- boundary seeking ---------------------------------------------

    /// Size the case so that the estimate is on the trigger (±1 token), the
    /// body on the ceiling (±1 byte), or both: by moving the config, or by
    /// padding a text.
    fn seek_boundary(&mut self, case: &mut Case) {
        let kind = self.d.weighted(&[45, 45, 10]); // trigger, ceiling, both
        let offsets = [-1i64, 0, 1];
        let off = offsets[self.d.weighted(&[25, 50, 25])];
        let off2 = offsets[self.d.weighted(&[25, 50, 25])];
        let pad = self.d.chance(25);
        let window_arm = self.d.chance(60);
        let slack = self.d.weighted(&[50, 50]) as u64;
        if kind != 0 {
            let padded = kind == 1 && pad && self.pad_to_ceiling(case, off);
            if !padded {
                let body = case.body_bytes() as i64;
                case.config.transport_max_body_bytes = (body + off).max(1) as u64;
            }
        }
        if kind != 1 {
            let off = if kind == 2 { off2 } else { off };
            let padded = kind == 0 && pad && self.pad_to_trigger(case, off);
            if !padded {
                let target = case.estimate() as i64 - off;
                if target >= 0 {
                    set_trigger(
                        &mut case.config,
                        target as u64,
                        kind == 0,
                        window_arm,
                        slack,
                    );
                }
            }
        }
    }

    /// A message with a text to pad by `extra` bytes: a tool result only
    /// when it stays within `max_tool_result_bytes`.
    pub(super) fn text_messages(&mut self, case: &Case, extra: usize) -> Option<usize> {
        let max = self.g.max_tool_result_bytes;
        let idx: Vec<usize> = (0..case.messages.len())
            .filter(|&i| {
                let m = &case.messages[i];
                matches!(m.content, Content::Text(_))
                    && (m.role != Role::Tool || m.content.text().len() + extra <= max)
            })
            .collect();
        (!idx.is_empty()).then(|| *self.d.pick(&idx))
    }

    pub(super) fn pad_to_ceiling(&mut self, case: &mut Case, off: i64) -> bool {
        let want = case.config.transport_max_body_bytes as i64 + off;
        let n = want - case.body_bytes() as i64;
        if !(0..=262_144).contains(&n) {
            return false;
        }
        let Some(i) = self.text_messages(case, n as usize) else {
            return false;
        };
        let saved = case.messages[i].content.clone();
        let pad = text::text(&mut self.t, ContentClass::Prose, n as usize);
        if let Content::Text(s) = &mut case.messages[i].content {
            s.push_str(&pad);
        }
        if case.body_bytes() as i64 == want {
            return true;
        }
        case.messages[i].content = saved;
        false
    }

    pub(super) fn pad_to_trigger(&mut self, case: &mut Case, off: i64) -> bool {
        let want = case.config.trigger() as i64 + off;
        let deficit = want - case.estimate() as i64;
        let bpt = case.config.bytes_per_token as i64;
        if deficit < 0 || deficit * bpt > 262_144 {
            return false;
        }
        let Some(i) = self.text_messages(case, ((deficit + 1) * bpt) as usize) else {
            return false;
        };
        let saved = case.messages[i].content.clone();
        let a = case.messages[i].content.text().len() as i64;
        let old = (a + bpt - 1) / bpt;
        let n = (old + deficit) * bpt - a;
        let pad = text::text(&mut self.t, ContentClass::Prose, n as usize);
        if let Content::Text(s) = &mut case.messages[i].content {
            s.push_str(&pad);
        }
        if case.estimate() as i64 == want {
            return true;
        }
        case.messages[i].content = saved;
        false
    }
}

/// Tool schemas for envelopes (JSON-schema `parameters`, prose
/// descriptions), written once from a fixed seed.
fn tool_schemas() -> &'static [Value] {
    static POOL: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let t = &mut SplitMix64::new(0x0098_7001);
        (0..64)
            .map(|_| {
                let mut props = Map::new();
                let mut required = Vec::new();
                for _ in 0..t.range(1, 6) {
                    let k = text::json_key(t);
                    let ty = *t.pick(&["string", "integer", "boolean", "array", "object"]);
                    let n = t.range(10, 160) as usize;
                    let desc = text::text(t, ContentClass::Prose, n);
                    props.insert(k.clone(), json!({"type": ty, "description": desc.trim()}));
                    if t.chance(50) {
                        required.push(Value::String(k));
                    }
                }
                let n = t.range(40, 500) as usize;
                let description = text::text(t, ContentClass::Prose, n);
                json!({"type": "function", "function": {
                    "name": "",
                    "description": description.trim(),
                    "parameters": {"type": "object", "properties": props, "required": required},
                }})
            })
            .collect()
    })
}

/// Serialised size of a JSON object, without building a `Value` of it.
pub(crate) fn map_size(m: &Map<String, Value>) -> u64 {
    let members: u64 = m
        .iter()
        .map(|(k, v)| string_size(k) + 1 + value_size(v))
        .sum();
    2 + members + m.len().saturating_sub(1) as u64
}

/// Replace the containers nested deeper than `max` levels by `null`, so
/// that no generated JSON passes `GenConfig::max_json_depth`.
fn prune(v: &mut Value, max: usize) {
    match v {
        Value::Array(_) | Value::Object(_) if max == 0 => *v = Value::Null,
        Value::Array(a) => a.iter_mut().for_each(|x| prune(x, max - 1)),
        Value::Object(o) => o.values_mut().for_each(|x| prune(x, max - 1)),
        _ => {}
    }
}

/// Candidate windows `w` with `round(threshold * w) == target`, nearest first.
fn window_candidates(target: u64, threshold: f64) -> impl Iterator<Item = u64> {
    let base = (target as f64 / threshold).round() as i64;
    [0i64, -1, 1, -2, 2, -3, 3]
        .into_iter()
        .map(move |d| base + d)
        .filter(|&w| w >= 1)
        .map(|w| w as u64)
}

/// Move the config so that its trigger is exactly `target` tokens, keeping
/// the threshold where it can. With `may_move_ceiling`, either the context
/// window (`window_arm`) or the transport ceiling decides the effective
/// window; without, only the context window and threshold move. `slack`
/// (0 or 1) leaves the other arm equal (0) or above (1). Returns false and
/// leaves the config unchanged when no valid config has that trigger.
pub(crate) fn set_trigger(
    c: &mut Config,
    target: u64,
    may_move_ceiling: bool,
    window_arm: bool,
    slack: u64,
) -> bool {
    let saved = c.clone();
    let ok = |c: &Config| c.trigger() == target && c.validate().is_ok();
    let bpt = c.bytes_per_token.max(1);
    if target == 0 {
        c.threshold = c.threshold.min(0.25);
        c.context_window = 1;
        if ok(c) {
            return true;
        }
        *c = saved;
        return false;
    }
    if window_arm || !may_move_ceiling {
        for w in window_candidates(target, c.threshold) {
            c.context_window = w;
            if may_move_ceiling && c.ceiling_window() < w {
                c.transport_max_body_bytes = w * bpt + slack * (w * bpt / 4 + bpt);
            }
            if ok(c) {
                return true;
            }
        }
        *c = saved.clone();
        if !may_move_ceiling {
            // The ceiling decides: find the threshold instead, as a short
            // decimal (two to six places), which every JSON library prints
            // the same way.
            let w = c.ceiling_window();
            if w >= target {
                c.context_window = c.context_window.max(w);
                for places in 2..=6 {
                    let scale = 10f64.powi(places);
                    c.threshold = (target as f64 / w as f64 * scale).round() / scale;
                    if ok(c) {
                        return true;
                    }
                }
            }
        }
    } else {
        for w in window_candidates(target, c.threshold) {
            c.transport_max_body_bytes = w * bpt + (target % bpt);
            c.context_window = c.context_window.max(w + slack * (w / 4 + 1));
            if ok(c) {
                return true;
            }
        }
    }
    *c = saved;
    false
}

/// Replace about a third of the numbers in `v` by exotic spellings;
/// returns how many were replaced.
fn exoticise(t: &mut SplitMix64, v: &mut Value) -> usize {
    match v {
        Value::Number(n) if t.chance(35) => {
            *n = exotic(t, Some(n));
            1
        }
        Value::Array(a) => a.iter_mut().map(|x| exoticise(t, x)).sum(),
        Value::Object(o) => o.values_mut().map(|x| exoticise(t, x)).sum(),
        _ => 0,
    }
}

/// A number spelled as stock JSON libraries would not write it back: the
/// same value as `like` respelled (`653.5` → `653.50`, `12` → `12.0` or
/// `1.2e1`, `0` → `-0`), or a value they cannot keep (2^64, `1e400`).
fn exotic(t: &mut SplitMix64, like: Option<&Number>) -> Number {
    const VALUES: [&str; 9] = [
        "18446744073709551616",
        "9007199254740993",
        "1e400",
        "-1e400",
        "0.00001",
        "0.1000000000000000055511151231257827",
        "5e-324",
        "123456789012345678901234567890.5",
        "-0",
    ];
    let text = match like {
        Some(n) if t.chance(60) => {
            let s = n.as_str();
            match t.below(3) {
                0 if s.contains('.') => format!("{s}0"),
                0 | 1 if !s.contains(['.', 'e', 'E']) => {
                    if s == "0" {
                        "-0".to_owned()
                    } else {
                        format!("{s}.0")
                    }
                }
                _ => format!("{s}e0"),
            }
        }
        _ => (*t.pick(&VALUES)).to_owned(),
    };
    serde_json::from_str(&text).expect("exotic numbers are JSON numbers")
}
