//! The judges of SPEC §9: pure functions of a case's trace, its script and
//! the agent's settings, one per agent invariant, each giving pass, fail
//! (with findings that name the request and say what was expected and what
//! came) or not applicable. Like the oracles of `check`, a judge can be
//! tested on a trace written by hand.
//!
//! Every request is judged from its exact bytes as received: its body's
//! length is the body size, its messages are what the dialect's reader
//! made of those bytes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::conversation::{is_summary, Conversation, Matched};
use super::dialect::{Call, Turn};
use super::image_file::ImageFile;
use super::invariants::AgentInvariant as Inv;
use super::play::{messages_hash, turn_message};
use super::script::{Script, ScriptCall, ScriptTurn};
use super::settings::Settings;
use super::trace::{Answer, Kind, Recorded, Trace};
use crate::estimate::tokenizer::Encoding;
use crate::estimate::{Adr0098, Estimator};
use crate::model::{text::collapse, Content, Image, ImageData, ImageSource, Message, Part, Role};

/// A verdict of one invariant on one case.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass,
    Fail,
    NotApplicable(&'static str),
}

/// What failed, where, and what was expected instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub invariant: Inv,
    /// The request it is about (its index in the case), if one.
    pub request: Option<usize>,
    pub detail: String,
    /// What the agent should have sent, and what it sent (excerpts).
    pub expected: Option<String>,
    pub received: Option<String>,
}

/// What a case reached: the coverage of agent mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub requests: usize,
    pub loop_requests: usize,
    pub summary_requests: usize,
    pub side_requests: usize,
    pub refused_too_large: usize,
    pub refused_over_window: usize,
    /// Refusals followed by a request that fit within three.
    pub recoveries: usize,
    /// Loop requests that left part of the conversation out.
    pub compactions: usize,
    pub turns_answered: usize,
    /// Answers with more than one call.
    pub parallel_answers: usize,
    pub final_reached: bool,
    pub max_body_bytes: u64,
    pub max_tokens: u64,
    pub unreadable: usize,
    /// Image results answered (a call that read an image file), and how
    /// the request after them carried each: the file's own bytes as an
    /// image, another image (resized, re-encoded), or no image at all (a
    /// tool that reads images as text, or says it cannot).
    pub image_results: usize,
    pub images_as_sent: usize,
    pub images_reencoded: usize,
    pub images_as_text: usize,
    /// Why the script could not be played: no advertised tool reads a file.
    pub unbound: Option<String>,
}

/// A case judged.
#[derive(Debug, Clone)]
pub struct Judged {
    pub verdicts: BTreeMap<Inv, Verdict>,
    pub findings: Vec<Finding>,
    pub facts: Facts,
}

impl Judged {
    pub fn failed(&self) -> impl Iterator<Item = Inv> + '_ {
        self.verdicts
            .iter()
            .filter(|(_, v)| **v == Verdict::Fail)
            .map(|(i, _)| *i)
    }
}

/// How many requests a refusal must be recovered within (SPEC §9).
pub const RECOVERY_REQUESTS: usize = 3;

/// Judge one case.
pub fn judge(trace: &Trace, script: &Script, settings: &Settings) -> Judged {
    let images = script
        .calls()
        .filter_map(|(_, c)| Some((c.id.clone(), c.image?)))
        .map(|(id, img)| (id, ImageData::new(ImageFile::MEDIA_TYPE, img.base64())))
        .collect();
    let mut j = Judge {
        trace,
        script,
        settings,
        images,
        findings: Vec::new(),
        verdicts: BTreeMap::new(),
        facts: facts(trace),
    };
    j.ceiling_and_window();
    j.recovery();
    j.conversation();
    j.finishes();
    Judged {
        verdicts: j.verdicts,
        findings: j.findings,
        facts: j.facts,
    }
}

struct Judge<'a> {
    trace: &'a Trace,
    script: &'a Script,
    settings: &'a Settings,
    /// The base64 of each image file, by call id.
    images: HashMap<String, Arc<ImageData>>,
    findings: Vec<Finding>,
    verdicts: BTreeMap<Inv, Verdict>,
    facts: Facts,
}

impl<'a> Judge<'a> {
    fn model_requests(&self) -> impl Iterator<Item = &'a Recorded> {
        let trace: &'a Trace = self.trace;
        trace.requests.iter().filter(|r| r.is_model_request())
    }

    fn find(&mut self, inv: Inv, request: Option<usize>, detail: String) -> &mut Finding {
        self.findings.push(Finding {
            invariant: inv,
            request,
            detail,
            expected: None,
            received: None,
        });
        self.findings.last_mut().expect("just pushed")
    }

    /// Pass, or fail when a finding of `inv` was made; not applicable when
    /// nothing judged it.
    fn settle(&mut self, inv: Inv, judged: bool, why_not: &'static str) {
        let verdict = if self.findings.iter().any(|f| f.invariant == inv) {
            Verdict::Fail
        } else if judged {
            Verdict::Pass
        } else {
            Verdict::NotApplicable(why_not)
        };
        self.verdicts.insert(inv, verdict);
    }

    fn ceiling_and_window(&mut self) {
        let config = &self.settings.config;
        let over: Vec<(usize, u64, u64)> = self
            .model_requests()
            .map(|r| (r.index, r.body_len, r.tokens))
            .collect();
        for &(i, bytes, _) in &over {
            if bytes > config.transport_max_body_bytes {
                self.find(
                    Inv::RequestUnderCeiling,
                    Some(i),
                    format!(
                        "request #{i}: body {} bytes > transportMaxBodyBytes {}",
                        group(bytes),
                        group(config.transport_max_body_bytes)
                    ),
                );
            }
        }
        for &(i, _, tokens) in &over {
            if tokens > config.context_window {
                self.find(
                    Inv::RequestWithinWindow,
                    Some(i),
                    format!(
                        "request #{i}: {} tokens (adr-0098 estimate) > contextWindow {}",
                        group(tokens),
                        group(config.context_window)
                    ),
                );
            }
        }
        let any = !over.is_empty();
        self.settle(Inv::RequestUnderCeiling, any, "no model request");
        self.settle(Inv::RequestWithinWindow, any, "no model request");
    }

    fn recovery(&mut self) {
        let model: Vec<&Recorded> = self.model_requests().collect();
        let mut refusals = 0;
        for (k, r) in model.iter().enumerate() {
            if !r.refused() {
                continue;
            }
            refusals += 1;
            let after = &model[k + 1..];
            let what = match r.answer {
                Answer::TooLarge => "413",
                _ => "a context-length error",
            };
            let fit = after
                .iter()
                .take(RECOVERY_REQUESTS)
                .position(|a| !a.refused());
            if fit.is_some() {
                self.facts.recoveries += 1;
            }
            if fit.is_none() && after.len() >= RECOVERY_REQUESTS {
                self.find(
                    Inv::RecoversAfterRefusal,
                    Some(r.index),
                    format!(
                        "request #{} was refused ({what}), and none of the {RECOVERY_REQUESTS} requests after it fit",
                        r.index
                    ),
                );
            }
            let same = messages_hash(r.messages());
            if let Some(again) = after
                .iter()
                .find(|a| a.request.is_some() && messages_hash(a.messages()) == same)
            {
                self.find(
                    Inv::RecoversAfterRefusal,
                    Some(again.index),
                    format!(
                        "request #{} resends request #{}'s messages unchanged after it was refused ({what})",
                        again.index, r.index
                    ),
                );
            }
            if after.iter().all(|a| a.refused()) && after.len() < RECOVERY_REQUESTS {
                let minimal = self.minimal(self.last_turn_before(r.index));
                {
                    if self.fits_with_margin(minimal) {
                        let f = self.find(
                            Inv::RecoversAfterRefusal,
                            Some(r.index),
                            format!(
                                "after request #{} was refused ({what}) the agent stopped ({}), though the system prompt, the task and the last turn's results would fit with room to spare",
                                r.index,
                                self.trace.exit.shown()
                            ),
                        );
                        f.expected = Some(format!(
                            "a request of about {} bytes and {} tokens",
                            group(minimal.0),
                            group(minimal.1)
                        ));
                    }
                }
            }
        }
        self.settle(
            Inv::RecoversAfterRefusal,
            refusals > 0,
            "no request was refused",
        );
    }

    /// The smallest request the agent could send for `turn`: its system
    /// prompt, the task and that turn's results (cut to
    /// `toolOutputMaxBytes`), with the overhead its first loop request
    /// carried besides its messages (tool definitions, the envelope): its
    /// bytes and its tokens. `None` before any loop request.
    fn minimal(&self, turn: Option<&ScriptTurn>) -> (u64, u64) {
        let first = self
            .trace
            .requests
            .iter()
            .find(|r| r.kind == Kind::Loop && r.request.is_some());
        let sized = |ms: &[Message]| ms.iter().map(crate::body::openai_message_size).sum::<u64>();
        let (mut minimal, overhead) = match first {
            Some(r) => {
                let msgs = r.messages();
                let system: Vec<Message> = msgs
                    .iter()
                    .filter(|m| m.role == Role::System)
                    .cloned()
                    .collect();
                (system, r.body_len.saturating_sub(sized(msgs)))
            }
            None => (Vec::new(), 0),
        };
        minimal.push(Message::user(self.script.task.as_str()));
        if let Some(t) = turn {
            let mut opener = script_turn_message(t.calls.iter());
            opener.content = crate::model::Content::Text(t.text.clone());
            minimal.push(opener);
            for c in &t.calls {
                minimal.push(match self.images.get(&c.id) {
                    Some(data) => Message {
                        content: Content::Parts(vec![Part::Image(Image {
                            source: ImageSource::Inline(data.clone()),
                            extra: Default::default(),
                            wire: None,
                        })]),
                        ..Message::tool(c.id.as_str(), "")
                    },
                    None => Message::tool(c.id.as_str(), self.cut(&c.content)),
                });
            }
        }
        let bytes = overhead + sized(&minimal);
        let tokens = Adr0098.tokens(&mut minimal.iter(), &self.settings.config);
        (bytes, tokens)
    }

    /// Whether a request of `(bytes, tokens)` fits with the room an agent
    /// may keep: within (1 − `earlyTolerance`) of the ceiling and of the
    /// window.
    fn fits_with_margin(&self, (bytes, tokens): (u64, u64)) -> bool {
        let keep = 1.0 - self.settings.early_tolerance;
        let config = &self.settings.config;
        bytes as f64 <= keep * config.transport_max_body_bytes as f64
            && tokens as f64 <= keep * config.context_window as f64
    }

    /// A result as the agent may shorten it (`toolOutputMaxBytes`).
    fn cut(&self, content: &str) -> String {
        match self.settings.tool_output_max_bytes {
            Some(max) => crate::model::truncate_utf8(content, max as usize).to_owned(),
            None => content.to_owned(),
        }
    }

    fn conversation(&mut self) {
        let mut conv = Conversation::default();
        let mut system: Option<Vec<String>> = None;
        let (mut loops, mut pairing_judged, mut results_judged) = (0, false, false);
        let trace: &'a Trace = self.trace;
        let requests = &trace.requests;
        for (k, r) in requests.iter().enumerate() {
            if r.kind != Kind::Loop || r.request.is_none() {
                if let Answer::Turn { .. } | Answer::Final = r.answer {
                    conv.push(self.answered_message(r));
                }
                continue;
            }
            loops += 1;
            let msgs = r.messages();
            // tool-pairing, by the dialect's rules.
            if msgs
                .iter()
                .any(|m| m.role == Role::Tool || m.opens_iteration())
            {
                pairing_judged = true;
                if let Err(e) = crate::model::check_well_formed(msgs) {
                    let f = self.find(
                        Inv::ToolPairing,
                        Some(r.index),
                        format!(
                            "request #{}: {}",
                            r.index,
                            crate::model::one_line(&e.to_string())
                        ),
                    );
                    f.received = Some(shape(msgs));
                }
            }
            // pinned-kept: the first loop request's system prompt, in all.
            let texts: Vec<String> = msgs
                .iter()
                .filter(|m| m.role == Role::System && !is_summary(m))
                .map(|m| m.content.text().into_owned())
                .filter(|t| !t.trim().is_empty())
                .collect();
            match &system {
                None => system = Some(texts),
                Some(first) => {
                    let all = texts.join("\n");
                    if let Some(lost) = first.iter().find(|t| !all.contains(t.as_str())) {
                        let f = self.find(
                            Inv::PinnedKept,
                            Some(r.index),
                            format!(
                                "request #{}: the system prompt ({} bytes) is not in it verbatim",
                                r.index,
                                group(lost.len() as u64)
                            ),
                        );
                        f.expected = Some(excerpt(lost));
                        f.received = Some(if all.is_empty() {
                            "no system prompt".into()
                        } else {
                            excerpt(&all)
                        });
                    }
                }
            }
            // order-preserved and no-premature-compaction.
            let before = conv.entries.len();
            let matched = conv.take(msgs);
            if let Some(&(earlier, later)) = matched.out_of_order.first() {
                let f = self.find(
                    Inv::OrderPreserved,
                    Some(r.index),
                    format!(
                        "request #{}: message {later} of the conversation comes after message {earlier}",
                        r.index
                    ),
                );
                f.expected = Some(format!(
                    "{} before {}",
                    describe(&conv.entries[later].message),
                    describe(&conv.entries[earlier].message)
                ));
            }
            if matched.compacted() && before > 0 {
                self.facts.compactions += 1;
                self.premature(r, &conv, &matched);
            }
            // results-delivered: the request after a turn holds its results.
            if let Some(prev) = requests[..k].iter().rev().find(|q| q.kind == Kind::Loop) {
                if let Answer::Turn {
                    turn,
                    first_call,
                    calls,
                } = prev.answer
                {
                    let retry = prev.request.is_some()
                        && messages_hash(prev.messages()) == messages_hash(msgs);
                    if !retry {
                        results_judged = true;
                        let script_turn = &self.script.turns[turn];
                        for call in &script_turn.calls[first_call..first_call + calls] {
                            self.delivered(r, call);
                        }
                    }
                }
            }
            if let Answer::Turn { .. } | Answer::Final = r.answer {
                conv.push(self.answered_message(r));
            }
        }
        self.settle(
            Inv::ToolPairing,
            pairing_judged,
            "no request carried tool calls",
        );
        self.settle(Inv::PinnedKept, loops > 1, "fewer than two loop requests");
        self.settle(
            Inv::OrderPreserved,
            loops > 1,
            "fewer than two loop requests",
        );
        // A request that carries the whole conversation holds it too.
        self.settle(
            Inv::NoPrematureCompaction,
            loops > 1,
            "fewer than two loop requests",
        );
        self.settle(
            Inv::ResultsDelivered,
            results_judged,
            "no model turn was answered before a loop request",
        );
    }

    /// The message an answered request put into the conversation.
    fn answered_message(&self, r: &Recorded) -> Message {
        match r.answer {
            Answer::Turn {
                turn,
                first_call,
                calls,
            } => {
                let t = &self.script.turns[turn];
                let mut m = script_turn_message(t.calls[first_call..first_call + calls].iter());
                if first_call == 0 {
                    m.content = crate::model::Content::Text(t.text.clone());
                }
                m
            }
            _ => Message::assistant(self.script.final_answer.as_str()),
        }
    }

    fn delivered(&mut self, r: &Recorded, call: &ScriptCall) {
        let Some(result) = r
            .messages()
            .iter()
            .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call.id.as_str()))
        else {
            let f = self.find(
                Inv::ResultsDelivered,
                Some(r.index),
                format!(
                    "request #{}: no result for call {} (it read {}, {} bytes)",
                    r.index,
                    call.id,
                    call.file,
                    group(call.file_len() as u64)
                ),
            );
            f.expected = Some(excerpt(&call.content));
            return;
        };
        if let Some(sent) = self.images.get(&call.id).cloned() {
            self.image_delivered(r, result, sent.data());
            return;
        }
        let got = normalise(&result.content.text());
        let want = normalise(&call.content);
        if got.contains(want.as_str()) {
            return;
        }
        // A result cut to `toolOutputMaxBytes` keeps that many of the
        // file's bytes; after normalising, a piece of about as many as
        // the file's first or last that many bytes normalise to.
        let need = match self.settings.tool_output_max_bytes {
            Some(max) if (call.content.len() as u64) > max => {
                let max = max as usize;
                let head = crate::model::truncate_utf8(&call.content, max);
                let tail_at = (call.content.len() - max..call.content.len())
                    .find(|&i| call.content.is_char_boundary(i))
                    .unwrap_or(call.content.len());
                let tail = &call.content[tail_at..];
                // A tool may cut at a whole line within its cap (pi's
                // `read`): the piece is then its whole lines only.
                let head = match head.rfind('\n') {
                    Some(i) if i > 0 => &head[..i],
                    _ => head,
                };
                let tail = match tail.find('\n') {
                    Some(i) if i + 1 < tail.len() => &tail[i + 1..],
                    _ => tail,
                };
                let shortest = normalise(head).len().min(normalise(tail).len());
                Some(shortest.saturating_sub(4))
            }
            _ => None,
        };
        if let Some(n) = need {
            if shares_piece(&want, &got, n) {
                return;
            }
        }
        let what = match need {
            Some(n) => format!("no piece of {} bytes of it", group(n as u64)),
            None => "not all of it".into(),
        };
        let f = self.find(
            Inv::ResultsDelivered,
            Some(r.index),
            format!(
                "request #{}: call {}'s result holds {what}: {} of {} bytes came",
                r.index,
                call.id,
                group(got.len() as u64),
                group(want.len() as u64)
            ),
        );
        f.expected = Some(excerpt(&call.content));
        f.received = Some(excerpt(&result.content.text()));
    }

    /// How the request after an image result carries the image: in the
    /// result, or in a message after it (Chat Completions' tool messages
    /// hold text only, so agents add a user message with the image). An
    /// image read as text is the tool's business, not a failure: the
    /// result is there (the call above found it), and what it says of a
    /// PNG is whatever the agent's tool says.
    fn image_delivered(&mut self, r: &Recorded, result: &Message, sent: &str) {
        self.facts.image_results += 1;
        let msgs = r.messages();
        let at = msgs
            .iter()
            .position(|m| std::ptr::eq(m, result))
            .unwrap_or(msgs.len());
        let images = std::iter::once(result)
            .chain(msgs[at.min(msgs.len())..].iter().skip(1))
            .filter_map(|m| match &m.content {
                Content::Parts(parts) => Some(parts.iter().filter_map(Part::as_image)),
                _ => None,
            })
            .flatten()
            .collect::<Vec<_>>();
        if images
            .iter()
            .any(|i| i.data().is_some_and(|d| d.data() == sent))
        {
            self.facts.images_as_sent += 1;
        } else if images.is_empty() {
            self.facts.images_as_text += 1;
        } else {
            self.facts.images_reencoded += 1;
        }
    }

    fn premature(&mut self, r: &Recorded, conv: &Conversation, m: &Matched) {
        let config = &self.settings.config;
        let keep = 1.0 - self.settings.early_tolerance;
        let missing: Vec<usize> = m.left_out.iter().chain(&m.changed).copied().collect();
        let whole_bytes = r.body_len + missing.iter().map(|&i| conv.entries[i].bytes).sum::<u64>();
        let bytes_limit = (keep * config.transport_max_body_bytes as f64).floor() as u64;
        let token_limit = (keep * config.trigger() as f64).floor() as u64;
        let by_bytes = whole_bytes.div_ceil(config.bytes_per_token.max(1));
        if whole_bytes > bytes_limit || by_bytes > token_limit {
            return;
        }
        // The most generous count ctxgate knows: BPE tokens of the whole
        // conversation's JSON text as well.
        let mut text = String::from_utf8_lossy(&r.body).into_owned();
        for &i in &missing {
            let v = crate::model::openai::write_messages(std::slice::from_ref(
                &conv.entries[i].message,
            ));
            text.push_str(&serde_json::Value::Array(v).to_string());
        }
        let real = Encoding::ALL
            .map(|e| e.count(&text))
            .into_iter()
            .max()
            .unwrap_or(0);
        let tokens = by_bytes.max(real);
        if tokens > token_limit {
            return;
        }
        let f = self.find(
            Inv::NoPrematureCompaction,
            Some(r.index),
            format!(
                "request #{}: {} message(s) of the conversation left out or cut, while the whole conversation is {} bytes and {} tokens — under {:.0}% of the ceiling ({}) and of the trigger ({})",
                r.index,
                missing.len(),
                group(whole_bytes),
                group(tokens),
                keep * 100.0,
                group(config.transport_max_body_bytes),
                group(config.trigger())
            ),
        );
        f.expected = Some(format!(
            "every message of the conversation, e.g. {}",
            describe(&conv.entries[missing[0]].message)
        ));
    }

    fn finishes(&mut self) {
        let exit = &self.trace.exit;
        let budget = self.script.request_budget();
        let requests = self.facts.requests;
        // Whether the agent could have gone on from where it stopped: a
        // turn it never reached that cannot fit excuses nothing.
        let fits =
            self.fits_with_margin(self.minimal(self.last_turn_before(self.trace.requests.len())));
        let mut problems = Vec::new();
        if let Some(e) = &exit.spawn_error {
            problems.push(format!(
                "the agent could not be started: {}",
                crate::model::one_line(e)
            ));
        } else {
            if exit.timed_out {
                problems.push(format!(
                    "the case's deadline passed ({:.1} s)",
                    exit.elapsed.as_secs_f64()
                ));
            }
            if requests > budget {
                problems.push(format!(
                    "{requests} model requests for a script of {} turn(s) (at most {budget}: a loop?)",
                    self.script.turns.len()
                ));
            }
            match (fits, self.facts.final_reached, exit.succeeded()) {
                (true, true, true) => {}
                (true, false, _) if requests == 0 => problems.push(format!(
                    "the agent {} without sending ctxgate a request (is it pointed at OPENAI_BASE_URL or ANTHROPIC_BASE_URL?)",
                    if exit.timed_out { "was stopped" } else { "exited" },
                )),
                (true, false, _) => problems.push(format!(
                    "the agent {} before the final answer ({} of {} turn(s) answered)",
                    if exit.timed_out { "was stopped" } else { "exited" },
                    self.facts.turns_answered,
                    self.script.turns.len()
                )),
                (true, true, false) if !exit.timed_out => problems.push(format!(
                    "the agent got the final answer and then ended with {}",
                    exit.shown()
                )),
                (false, _, _) if exit.code == Some(0) && !self.facts.final_reached => {
                    problems.push(
                        "nothing fits (a turn's results alone are over the ceiling or the window), and the agent exited 0 without saying so"
                            .into(),
                    )
                }
                _ => {}
            }
        }
        if !problems.is_empty() {
            let f = self.find(Inv::Finishes, None, problems.join("; "));
            f.received = Some(format!(
                "{}; stderr: {}",
                exit.shown(),
                collapse(&exit.stderr_tail, 300)
            ));
        }
        self.settle(Inv::Finishes, true, "");
    }

    /// The last turn ctxgate answered before request `end`: the turn whose
    /// results the agent held then, and had to send next.
    fn last_turn_before(&self, end: usize) -> Option<&ScriptTurn> {
        self.trace.requests[..end]
            .iter()
            .rev()
            .find_map(|q| match q.answer {
                Answer::Turn { turn, .. } => self.script.turns.get(turn),
                _ => None,
            })
    }
}

fn facts(trace: &Trace) -> Facts {
    let mut f = Facts::default();
    for r in &trace.requests {
        if !r.is_model_request() {
            continue;
        }
        if r.unreadable.is_some() {
            f.unreadable += 1;
            continue;
        }
        f.requests += 1;
        match r.kind {
            Kind::Loop => f.loop_requests += 1,
            Kind::Summary => f.summary_requests += 1,
            _ => f.side_requests += 1,
        }
        f.max_body_bytes = f.max_body_bytes.max(r.body_len);
        f.max_tokens = f.max_tokens.max(r.tokens);
        match &r.answer {
            Answer::TooLarge => f.refused_too_large += 1,
            Answer::OverWindow => f.refused_over_window += 1,
            Answer::Turn { calls, .. } => {
                f.turns_answered += 1;
                if *calls > 1 {
                    f.parallel_answers += 1;
                }
            }
            Answer::Final => f.final_reached = true,
            Answer::Unbound(why) => {
                f.unbound.get_or_insert_with(|| why.clone());
            }
            _ => {}
        }
    }
    f
}

/// The engine message of a model turn over `calls` (tool names do not
/// matter to the conversation: calls are known by their ids).
fn script_turn_message<'a>(calls: impl Iterator<Item = &'a ScriptCall>) -> Message {
    turn_message(&Turn {
        text: String::new(),
        calls: calls
            .map(|c| Call {
                id: c.id.clone(),
                name: String::new(),
                arguments: serde_json::Value::Null,
            })
            .collect(),
    })
}

/// Text compared for `results-delivered`: terminal escape sequences and
/// control characters other than newline and tab removed, `\r\n` as `\n`,
/// trailing whitespace trimmed, and a line-number prefix on every line
/// (`cat -n`, `   12→`) taken off — what tools legitimately do to what
/// they read.
pub fn normalise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI (`ESC [ … final`) or OSC (`ESC ] … BEL|ESC \`).
                match chars.peek() {
                    Some('[') => {
                        chars.next();
                        for d in chars.by_ref() {
                            if ('\u{40}'..='\u{7e}').contains(&d) {
                                break;
                            }
                        }
                    }
                    Some(']') => {
                        chars.next();
                        while let Some(d) = chars.next() {
                            if d == '\u{7}' || (d == '\u{1b}' && chars.peek() == Some(&'\\')) {
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            // A lone CR is a line break to text-mode readers (Python's
            // universal newlines).
            '\r' => out.push('\n'),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    // Trailing whitespace, of every line (tools trim line ends), and the
    // lines left empty: a CR that Python reads as a line break JavaScript's
    // `trimEnd` removes as whitespace (Qwen Code), so blank lines are not
    // counted.
    let mut lines = String::with_capacity(out.len());
    for line in out.split('\n').map(str::trim_end).filter(|l| !l.is_empty()) {
        if !lines.is_empty() {
            lines.push('\n');
        }
        lines.push_str(line);
    }
    strip_line_numbers(&lines)
}

fn strip_line_numbers(s: &str) -> String {
    let numbered = |l: &str| {
        let t = l.trim_start();
        let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        digits > 0 && {
            let rest = &t[digits..];
            rest.starts_with('→')
                || rest.starts_with('\t')
                || rest.starts_with('|')
                || rest.starts_with(": ")
        }
    };
    let lines: Vec<&str> = s.lines().collect();
    if lines.len() < 2 || !lines.iter().all(|l| numbered(l)) {
        return s.to_owned();
    }
    lines
        .iter()
        .map(|l| {
            let t = l.trim_start();
            let t = t.trim_start_matches(|c: char| c.is_ascii_digit());
            t.strip_prefix('→')
                .or_else(|| t.strip_prefix('\t'))
                .or_else(|| t.strip_prefix('|'))
                .or_else(|| t.strip_prefix(": "))
                .unwrap_or(t)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `a` and `b` share a piece of at least `n` bytes (a rolling hash
/// of every window of `b`, then `a`'s windows looked up and compared).
pub fn shares_piece(a: &str, b: &str, n: usize) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if n == 0 {
        return true;
    }
    if a.len() < n || b.len() < n {
        return false;
    }
    const BASE: u64 = 1_000_003;
    let pow = (1..n).fold(1u64, |p, _| p.wrapping_mul(BASE));
    let windows = |s: &[u8]| {
        let mut h = s[..n]
            .iter()
            .fold(0u64, |h, &c| h.wrapping_mul(BASE).wrapping_add(c as u64));
        let mut out = vec![(h, 0usize)];
        for i in n..s.len() {
            h = h
                .wrapping_sub((s[i - n] as u64).wrapping_mul(pow))
                .wrapping_mul(BASE)
                .wrapping_add(s[i] as u64);
            out.push((h, i + 1 - n));
        }
        out
    };
    let mut in_b: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for (h, at) in windows(b) {
        in_b.entry(h).or_insert(at);
    }
    let seen: HashSet<u64> = in_b.keys().copied().collect();
    windows(a).into_iter().any(|(h, at)| {
        seen.contains(&h) && {
            let bt = in_b[&h];
            a[at..at + n] == b[bt..bt + n]
        }
    })
}

fn excerpt(s: &str) -> String {
    collapse(s, 160)
}

fn describe(m: &Message) -> String {
    if !m.calls().is_empty() {
        let ids: Vec<&str> = m.calls().iter().map(|c| c.id.as_str()).collect();
        return format!("the assistant turn calling {}", ids.join(", "));
    }
    if let Some(id) = &m.tool_call_id {
        return format!("the result of {id}");
    }
    format!(
        "the {} message \"{}\"",
        m.role,
        collapse(&m.content.text(), 60)
    )
}

/// A request's messages in one line: roles, calls and results.
fn shape(msgs: &[Message]) -> String {
    let parts: Vec<String> = msgs
        .iter()
        .map(|m| match (m.role, m.calls().is_empty(), &m.tool_call_id) {
            (Role::Assistant, false, _) => format!(
                "assistant[{}]",
                m.calls()
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            (Role::Tool, _, Some(id)) => format!("tool({id})"),
            (role, _, _) => role.to_string(),
        })
        .collect();
    collapse(&parts.join(" "), 300)
}

fn group(n: u64) -> String {
    crate::model::text::group(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::dialect::{Dialect, Request};
    use crate::agent::script::ScriptTurn;
    use crate::agent::trace::Exit;
    use crate::model::ToolCall;
    use serde_json::json;

    /// A script of two turns, one call each.
    fn script() -> Script {
        let turn = |t: usize, content: &str| ScriptTurn {
            text: String::new(),
            calls: vec![ScriptCall {
                id: format!("call_{t}_0"),
                file: format!("t{t:03}-0.txt"),
                content: content.into(),
                image: None,
            }],
        };
        Script {
            task: "Task: read".into(),
            turns: vec![turn(0, "first file"), turn(1, "second file")],
            final_answer: "done".into(),
            summaries: vec![50],
        }
    }

    fn call(t: usize) -> Message {
        Message::assistant_calls(
            "",
            vec![ToolCall::new(format!("call_{t}_0"), "read_file", json!({}))],
        )
    }

    fn result(t: usize, content: &str) -> Message {
        Message::tool(format!("call_{t}_0"), content)
    }

    /// A loop request of `msgs` (body `bytes` long), answered `answer`.
    fn loop_request(index: usize, msgs: Vec<Message>, bytes: u64, answer: Answer) -> Recorded {
        let mut request = Request {
            dialect: Dialect::OpenaiChat,
            model: "m".into(),
            stream: false,
            stream_usage: false,
            messages: msgs,
            tools: vec![crate::agent::dialect::Tool {
                name: "read_file".into(),
                schema: json!({}),
            }],
            max_tokens: None,
            previous_response_id: None,
            tools_allowed: true,
            parallel_calls: true,
        };
        request.model = "m".into();
        Recorded {
            index,
            at: Default::default(),
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            headers: Vec::new(),
            body: Vec::new(),
            body_len: bytes,
            dialect: Some(Dialect::OpenaiChat),
            request: Some(request),
            unreadable: None,
            kind: Kind::Loop,
            tokens: bytes / 4,
            status: 200,
            answer,
        }
    }

    fn turn(t: usize) -> Answer {
        Answer::Turn {
            turn: t,
            first_call: 0,
            calls: 1,
        }
    }

    fn head() -> Vec<Message> {
        vec![Message::system("sys prompt"), Message::user("Task: read")]
    }

    fn judged(requests: Vec<Recorded>, code: i32) -> Judged {
        let trace = Trace {
            requests,
            exit: Exit {
                code: Some(code),
                ..Exit::default()
            },
        };
        let mut settings = Settings::default();
        settings.config.transport_max_body_bytes = 10_000;
        judge(&trace, &script(), &settings)
    }

    fn verdict(j: &Judged, inv: Inv) -> &Verdict {
        &j.verdicts[&inv]
    }

    #[test]
    fn a_faithful_trace_holds_every_invariant() {
        let all = [head(), vec![call(0), result(0, "first file")]].concat();
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, all.clone(), 600, turn(1)),
                loop_request(
                    2,
                    [all, vec![call(1), result(1, "second file")]].concat(),
                    700,
                    Answer::Final,
                ),
            ],
            0,
        );
        assert!(j.findings.is_empty(), "{:?}", j.findings);
        for inv in Inv::ALL {
            let expected = match inv {
                Inv::RecoversAfterRefusal => Verdict::NotApplicable("no request was refused"),
                _ => Verdict::Pass,
            };
            assert_eq!(verdict(&j, inv), &expected, "{inv}");
        }
    }

    #[test]
    fn a_refused_body_sent_again_unchanged_fails_recovery() {
        let big = [head(), vec![call(0), result(0, "first file")]].concat();
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, big.clone(), 20_000, Answer::TooLarge),
                loop_request(2, big, 20_000, Answer::TooLarge),
            ],
            1,
        );
        assert_eq!(verdict(&j, Inv::RecoversAfterRefusal), &Verdict::Fail);
        assert!(j
            .findings
            .iter()
            .any(|f| f.detail.contains("resends request #1's messages unchanged")));
        assert_eq!(verdict(&j, Inv::RequestUnderCeiling), &Verdict::Fail);
        // The agent stopped while the smallest request would have fit.
        assert!(
            j.findings
                .iter()
                .any(|f| f.detail.contains("the agent stopped")),
            "{:?}",
            j.findings
        );
    }

    /// `finishes` excuses a stop only where the agent could not go on:
    /// the turn it reached does not fit. A later turn that cannot fit,
    /// which the agent never reached, excuses nothing (mini-swe-agent
    /// exited at turn 3 of a script whose turn 244 was over the ceiling,
    /// and passed).
    #[test]
    fn finishes_is_excused_by_the_turn_reached_not_by_a_later_one() {
        let mut s = script();
        s.turns[1].calls[0].content = "x".repeat(30_000); // over the 10,000-byte ceiling
        let judge_with = |requests: Vec<Recorded>, code: i32| {
            let trace = Trace {
                requests,
                exit: Exit {
                    code: Some(code),
                    ..Exit::default()
                },
            };
            let mut settings = Settings::default();
            settings.config.transport_max_body_bytes = 10_000;
            judge(&trace, &s, &settings)
        };
        let all = [head(), vec![call(0), result(0, "first file")]].concat();
        // Stopped holding turn 0's small result: it fits, no excuse.
        let early = judge_with(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, all.clone(), 600, turn(1)),
            ][..1]
                .to_vec(),
            3,
        );
        assert_eq!(
            verdict(&early, Inv::Finishes),
            &Verdict::Fail,
            "{:?}",
            early.findings
        );
        // No request at all: no excuse either.
        let none = judge_with(Vec::new(), 3);
        assert_eq!(
            verdict(&none, Inv::Finishes),
            &Verdict::Fail,
            "{:?}",
            none.findings
        );
        // Stopped holding turn 1's result, which cannot fit: excused.
        let stuck = judge_with(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, all, 600, turn(1)),
            ],
            3,
        );
        assert_eq!(
            verdict(&stuck, Inv::Finishes),
            &Verdict::Pass,
            "{:?}",
            stuck.findings
        );
    }

    #[test]
    fn a_lost_system_prompt_a_missing_result_and_a_swap_are_each_found() {
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                // No system prompt, call_0_0 answered by nothing, and the
                // task after the turn.
                loop_request(1, vec![call(0), Message::user("Task: read")], 600, turn(1)),
            ],
            0,
        );
        assert_eq!(verdict(&j, Inv::PinnedKept), &Verdict::Fail);
        assert_eq!(verdict(&j, Inv::ResultsDelivered), &Verdict::Fail);
        assert_eq!(verdict(&j, Inv::ToolPairing), &Verdict::Fail);
        assert_eq!(verdict(&j, Inv::OrderPreserved), &Verdict::Fail);
        assert_eq!(
            verdict(&j, Inv::Finishes),
            &Verdict::Fail,
            "no final answer"
        );
    }

    #[test]
    fn leaving_out_a_small_conversation_is_premature() {
        let all = [head(), vec![call(0), result(0, "first file")]].concat();
        let summary = Message::user(format!(
            "{} 1] read the first file",
            crate::agent::play::SUMMARY_MARK
        ));
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, all, 600, turn(1)),
                loop_request(
                    2,
                    vec![
                        Message::system("sys prompt"),
                        summary,
                        call(1),
                        result(1, "second file"),
                    ],
                    400,
                    Answer::Final,
                ),
            ],
            0,
        );
        assert_eq!(
            verdict(&j, Inv::NoPrematureCompaction),
            &Verdict::Fail,
            "{:?}",
            j.findings
        );
        assert_eq!(verdict(&j, Inv::OrderPreserved), &Verdict::Pass);
        assert_eq!(j.facts.compactions, 1);
    }

    #[test]
    fn shared_pieces_are_found_exactly() {
        let a = "0123456789abcdefghij";
        assert!(shares_piece(a, "xx456789abyy", 8));
        assert!(!shares_piece(a, "xx456789abyy", 9));
        assert!(shares_piece(a, a, a.len()));
        assert!(!shares_piece(a, "", 1));
    }

    #[test]
    fn normalising_drops_escapes_and_line_numbers_but_keeps_text() {
        assert_eq!(normalise("a\u{1b}[31mred\u{1b}[0m\r\nb  \n"), "ared\nb");
        assert_eq!(normalise("     1→fn main()\n     2→}"), "fn main()\n}");
        assert_eq!(normalise("1\t2\n3"), "1\t2\n3");
        assert_eq!(normalise("日本\u{7}語"), "日本語");
        // A lone CR is a line break (Python's universal newlines), and
        // every line's trailing whitespace goes (Qwen Code's read_file).
        assert_eq!(normalise("a\rb"), normalise("a\nb"));
        assert_eq!(normalise("x   \ny\t\nz"), "x\ny\nz");
        // Python's reading of `file\r \r\n` and JavaScript's trimEnd of it.
        assert_eq!(normalise("file\u{7f}\u{1b}[2K\r \r\nnext"), "file\nnext");
        assert_eq!(normalise("file\n\nnext"), "file\nnext");
    }

    /// A file of ten lines of 20 bytes, read by a tool capped at 50
    /// bytes that sends `sent`: is `results-delivered` held?
    fn delivered_with_cap(sent: &str) -> bool {
        let content: String = (0..10)
            .map(|i| format!("line {i:02} of the file\n"))
            .collect();
        assert_eq!(content.len(), 200);
        let script = Script {
            task: "Task: read".into(),
            turns: vec![ScriptTurn {
                text: String::new(),
                calls: vec![ScriptCall {
                    id: "call_0_0".into(),
                    file: "t000-0.txt".into(),
                    content,
                    image: None,
                }],
            }],
            final_answer: "done".into(),
            summaries: vec![50],
        };
        let trace = Trace {
            requests: vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(
                    1,
                    [head(), vec![call(0), result(0, sent)]].concat(),
                    600,
                    Answer::Final,
                ),
            ],
            exit: Exit {
                code: Some(0),
                ..Exit::default()
            },
        };
        let settings = Settings {
            tool_output_max_bytes: Some(50),
            ..Settings::default()
        };
        let j = judge(&trace, &script, &settings);
        j.verdicts[&Inv::ResultsDelivered] == Verdict::Pass
    }

    #[test]
    fn a_result_cut_at_whole_lines_within_the_cap_is_delivered() {
        // 50 bytes of lines 00–09 hold two whole lines (40 bytes).
        assert!(delivered_with_cap(
            "line 00 of the file\nline 01 of the file\n[cut]"
        ));
        assert!(delivered_with_cap(
            "line 00 of the file\nline 01 of the file\nline 0"
        ));
        // A line is not enough, nor half the cap.
        assert!(!delivered_with_cap("line 00 of the file\n[cut]"));
        assert!(!delivered_with_cap("line 00 of t"));
    }
}
