//! The history itself: the head, then user, assistant, system and tool
//! turns, each message with its pins and extra fields when the case has
//! them.

use serde_json::{json, Value};

use super::tools::TOOLS;
use super::{Gen, IdStyle, TOOL_RESULT_CAP};
use crate::contract::SUMMARY_PREFIX;
use crate::generate::text::{self, ContentClass};
use crate::model::{Content, Message, ToolCall};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    User,
    Assistant,
    Tools,
    System,
}

impl Gen<'_, '_, '_> {
    pub(super) fn history(&mut self) -> Vec<Message> {
        let mut msgs = Vec::new();
        // Now and then the head ends in the reference's summary of an
        // earlier turn, where SPEC §4's two readings of the head part
        // (`contract::Head`): the oracles must accept both.
        let carried_summary = self.shape.head >= 2 && self.draw.chance(8);
        for i in 0..self.shape.head {
            let mut content = self.text_content(true);
            if carried_summary && i + 1 == self.shape.head {
                content = format!("{SUMMARY_PREFIX} {content}");
            }
            let m = self.decorate(Message::system(content));
            msgs.push(m);
        }
        let n = self.shape.iterations;
        let mut prev = None;
        for i in 0..n {
            let last = i + 1 == n;
            let turn = if last && self.shape.pending && self.shape.max_parallel > 0 {
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
                    if self.draw.chance(50) {
                        content = format!("{SUMMARY_PREFIX} {content}");
                    }
                    let m = self.decorate(Message::system(content));
                    msgs.push(m);
                }
                Turn::Tools => self.tool_iteration(&mut msgs, last && self.shape.pending),
            }
            prev = Some(turn);
        }
        msgs
    }

    fn turn(&mut self, prev: Option<Turn>) -> Turn {
        let tools = if self.shape.max_parallel > 0 { 1 } else { 0 };
        // Weights: user, assistant, tools, system (never first: it would
        // join the head).
        let w: [u32; 4] = match prev {
            None => [85, 5, 10 * tools, 0],
            Some(Turn::User) => [4, 25, 70 * tools, 1],
            Some(Turn::Tools) => [18, 20, 60 * tools, 2],
            Some(Turn::Assistant | Turn::System) => [60, 8, 30 * tools, 2],
        };
        [Turn::User, Turn::Assistant, Turn::Tools, Turn::System][self.draw.weighted(&w)]
    }

    /// A text for a system, user or assistant message; prose when the case
    /// has it and `prefer_prose`, mostly.
    fn text_content(&mut self, prefer_prose: bool) -> String {
        let n = if self.draw.chance(2) {
            0
        } else {
            self.draw.log_range(1, self.shape.text_max.max(1) as u64) as usize
        };
        let n = n.min(self.shape.text_max);
        let class = if prefer_prose
            && self.shape.classes.contains(&ContentClass::Prose)
            && self.draw.chance(60)
        {
            ContentClass::Prose
        } else {
            *self.draw.pick(&self.shape.classes)
        };
        text::text(&mut self.text, class, n)
    }

    fn assistant_text(&mut self) -> Message {
        let content = match self.draw.weighted(&[93, 3, 2, 2]) {
            0 => Content::Text(self.text_content(true)),
            1 => Content::Null,
            2 => Content::Absent,
            _ => Content::Text(String::new()),
        };
        let mut m = Message::assistant(content);
        if self.shape.empty_calls && self.draw.chance(20) {
            m.tool_calls = Some(Vec::new());
        }
        self.decorate(m)
    }

    pub(in crate::generate) fn tool_iteration(&mut self, msgs: &mut Vec<Message>, pending: bool) {
        let max = self.shape.max_parallel.max(1);
        let n = match self.draw.weighted(&[55, 20, 25]) {
            0 => 1,
            1 => 2,
            _ => self.draw.range(3, max.max(3) as u64) as usize,
        }
        .min(max);
        let mut calls: Vec<ToolCall> = Vec::with_capacity(n);
        for j in 0..n {
            let id = self.call_id(j, &calls);
            let budget = self.argument_budget();
            let name = if budget > 300 {
                *self.draw.pick(&TOOLS[6..])
            } else {
                *self.draw.pick(&TOOLS)
            };
            let arguments = self.arguments(name, budget);
            let mut call = ToolCall::new(id, name, arguments);
            if self.shape.extras && self.draw.chance(20) {
                let (k, v) = self.extra_field(&["x_origin", "metadata", "approval"]);
                call.extra.insert(k, v);
            }
            calls.push(call);
        }
        let content = match self.draw.weighted(&[30, 20, 20, 30]) {
            0 => Content::Text(String::new()),
            1 => Content::Absent,
            2 => Content::Null,
            _ => {
                let n = self
                    .draw
                    .log_range(1, 300.min(self.shape.text_max.max(1)) as u64)
                    as usize;
                let class = *self.draw.pick(&self.shape.classes);
                Content::Text(text::text(&mut self.text, class, n))
            }
        };
        let ids: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
        let opener = self.decorate(Message::assistant_calls(content, calls));
        msgs.push(opener);
        let mut order: Vec<usize> = (0..n).collect();
        if self.shape.out_of_order && self.draw.chance(50) {
            for k in (1..n).rev() {
                let r = self.draw.below(k as u64 + 1) as usize;
                order.swap(k, r);
            }
        }
        let answered = if pending {
            self.draw.below(n as u64) as usize
        } else {
            n
        };
        for &j in &order[..answered] {
            let content = match self.draw.weighted(&[96, 2, 2]) {
                0 => Content::Text(self.tool_result()),
                1 => Content::Null,
                _ => Content::Absent,
            };
            let m = self.decorate(Message::tool(ids[j].clone(), content));
            msgs.push(m);
        }
    }

    pub(super) fn tool_result(&mut self) -> String {
        let max = self.settings.max_tool_result_bytes as u64;
        let cap = TOOL_RESULT_CAP as u64;
        let n = if self.draw.chance(5) {
            0
        } else {
            match self.shape.result_tier {
                0 => self.draw.log_range(1, 256),
                1 => self.draw.log_range(1, 2_048),
                2 => self.draw.log_range(64, 8_192),
                3 => match self.draw.weighted(&[25, 75]) {
                    0 => cap,
                    _ => self.draw.log_range(1_024, cap),
                },
                _ => match self.draw.weighted(&[25, 30, 45]) {
                    0 => cap,
                    1 => self.draw.range(cap + 1, max.max(cap + 1)),
                    _ => self.draw.log_range(1_024, max.max(1_024)),
                },
            }
        }
        .min(max) as usize;
        let json_first = self.shape.classes.contains(&ContentClass::Json) && self.draw.chance(35);
        let class = if json_first {
            ContentClass::Json
        } else {
            *self.draw.pick(&self.shape.classes)
        };
        text::text(&mut self.text, class, n)
    }

    pub(in crate::generate) fn call_id(&mut self, j: usize, made: &[ToolCall]) -> String {
        loop {
            let id = match self.shape.ids {
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

    pub(super) fn alnum(&mut self, n: usize) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| *self.text.pick(A) as char).collect()
    }

    fn extra_field(&mut self, keys: &[&str]) -> (String, Value) {
        let key = (*self.draw.pick(keys)).to_owned();
        let t = &mut self.text;
        let v = match key.as_str() {
            "timestamp" => json!(format!(
                "2026-08-19T12:{:02}:{:02}Z",
                t.below(60),
                t.below(60)
            )),
            "x_trace_id" => json!(format!("{:016x}", t.next_u64())),
            "approval" => json!(*t.pick(&["pending", "granted", "denied"])),
            "cacheControl" => json!({"type": "ephemeral"}),
            _ => text::value(t, self.settings.max_json_depth.min(3), 64),
        };
        (key, v)
    }

    /// Pins and extra fields, when the case has them.
    fn decorate(&mut self, mut m: Message) -> Message {
        if self.shape.pinned {
            match self.draw.weighted(&[89, 8, 3]) {
                1 => m.pinned = Some(true),
                2 => m.pinned = Some(false),
                _ => {}
            }
        }
        if self.shape.extras && self.draw.chance(25) {
            for _ in 0..self.draw.range(1, 2) {
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
}
