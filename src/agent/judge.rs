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
use crate::model::text::{collapse, collapse_tail};
use crate::model::{Content, Image, ImageData, ImageSource, Message, Part, Role};

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
        let over: Vec<(usize, u64, u64, bool)> = self
            .model_requests()
            .map(|r| (r.index, r.body_len, r.tokens, r.chunked_past_cap()))
            .collect();
        for &(i, bytes, _, past) in &over {
            if bytes > config.transport_max_body_bytes {
                // A chunked body past the receive cap: more than was read.
                let (more, bytes) = match past {
                    true => ("more than ", bytes - 1),
                    false => ("", bytes),
                };
                self.find(
                    Inv::RequestUnderCeiling,
                    Some(i),
                    format!(
                        "request #{i}: body {more}{} bytes > transportMaxBodyBytes {}",
                        group(bytes),
                        group(config.transport_max_body_bytes)
                    ),
                );
            }
        }
        for &(i, _, tokens, _) in &over {
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
            // Sent again unchanged (said first: it is why nothing after it
            // fit, when it is): the same messages, read; or, for a body
            // that could not be read, the same bytes.
            let resent = |a: &&&Recorded| match (&r.request, &a.request) {
                (Some(_), Some(_)) => messages_hash(a.messages()) == messages_hash(r.messages()),
                (None, None) => !r.body.is_empty() && a.body == r.body,
                _ => false,
            };
            if let Some(again) = after.iter().find(resent) {
                self.find(
                    Inv::RecoversAfterRefusal,
                    Some(again.index),
                    format!(
                        "request #{} resends request #{}'s messages unchanged after it was refused ({what})",
                        again.index, r.index
                    ),
                );
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
        // Each loop request's messages, hashed: a request that sends the
        // last one's again is a retry, or the turn between them dropped.
        let hashes: Vec<Option<u64>> = requests
            .iter()
            .map(|q| {
                (q.kind == Kind::Loop && q.request.is_some()).then(|| messages_hash(q.messages()))
            })
            .collect();
        for (k, r) in requests.iter().enumerate() {
            if r.kind != Kind::Loop || r.request.is_none() {
                if let Answer::Turn { .. } | Answer::Final = r.answer {
                    conv.push_answered(self.answered_message(r));
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
            let prev = requests[..k]
                .iter()
                .rev()
                .position(|q| q.kind == Kind::Loop)
                .map(|back| k - 1 - back);
            // The last loop request sent again, and answered the same turn
            // again (an SDK's retry after a timeout, a limiter that drops
            // the turn): the conversation holds that turn once.
            let again = prev.is_some_and(|p| {
                hashes[p] == hashes[k]
                    && match (&requests[p].answer, &r.answer) {
                        (
                            Answer::Turn {
                                turn: a,
                                first_call: x,
                                ..
                            },
                            Answer::Turn {
                                turn: b,
                                first_call: y,
                                ..
                            },
                        ) => a == b && x == y,
                        (Answer::Final, Answer::Final) => true,
                        _ => false,
                    }
            });
            // order-preserved and no-premature-compaction: a request sent
            // again is the one before it, judged there (the turn answered
            // to that one is not "left out" of its copy).
            let before = conv.entries.len();
            let matched = match again {
                true => Default::default(),
                false => conv.take(msgs),
            };
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
            if let Some(p) = prev {
                if let Answer::Turn {
                    turn,
                    first_call,
                    calls,
                } = requests[p].answer
                {
                    let calls = &self.script.turns[turn].calls[first_call..first_call + calls];
                    if hashes[p] != hashes[k] {
                        results_judged = true;
                        for call in calls {
                            self.delivered(r, call);
                        }
                    } else if self.dropped_turn(k, p, &hashes, calls) {
                        results_judged = true;
                    }
                }
            }
            if let Answer::Turn { .. } | Answer::Final = r.answer {
                if !again {
                    conv.push_answered(self.answered_message(r));
                }
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

    /// Request `k` sends loop request `p`'s messages again, after ctxgate
    /// answered `p` with a turn of `calls`. A retry (the agent never took
    /// the answer) is answered the same turn again, and a later request
    /// carries its results: it is judged there. When no later loop request
    /// sends anything else, the turn was taken and left out every time
    /// (a limiter that drops the newest turn when its results are over its
    /// budget: the model is asked the same question again, and the agent
    /// loops): `results-delivered` fails at the first request sent again.
    /// Whether it was judged.
    fn dropped_turn(
        &mut self,
        k: usize,
        p: usize,
        hashes: &[Option<u64>],
        calls: &[ScriptCall],
    ) -> bool {
        let same = hashes[k];
        let before_p = hashes[..p]
            .iter()
            .rev()
            .find(|h| h.is_some())
            .copied()
            .flatten();
        if before_p == same {
            // Not the first time: judged at the first.
            return false;
        }
        let later: Vec<Option<u64>> = hashes[k + 1..]
            .iter()
            .filter(|h| h.is_some())
            .copied()
            .collect();
        if later.iter().any(|&h| h != same) {
            return false;
        }
        let requests = &self.trace.requests;
        let (r, at) = (&requests[k], requests[p].index);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        let bytes: usize = calls.iter().map(|c| c.file_len()).sum();
        let f = self.find(
            Inv::ResultsDelivered,
            Some(r.index),
            format!(
                "request #{}: request #{at}'s messages again, without the turn ctxgate answered there (calls {}, reading {} bytes) or its results — the agent left out the turn it was just given, and sent the same messages {} time(s), to the end of the case",
                r.index,
                ids.join(", "),
                group(bytes as u64),
                later.len() + 2
            ),
        );
        f.expected = Some(format!(
            "the turn calling {} and its results, e.g. {}",
            ids.join(", "),
            calls
                .first()
                .map(|c| excerpt(&c.content))
                .unwrap_or_default()
        ));
        f.received = Some(shape(r.messages()));
        true
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
        let text = result.content.text();
        let want = normalise(&call.content);
        let views = result_views(&text, &want);
        if views.iter().any(|got| got.contains(want.as_str())) {
            return;
        }
        let got = &views[0];
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
            if views.iter().any(|got| shares_piece(&want, got, n)) {
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
        f.received = Some(excerpt(&text));
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
            if let Some(cap) = &exit.capped {
                problems.push(format!("the agent was {cap}"));
            }
            if requests > budget {
                problems.push(format!(
                    "{requests} model requests for a script of {} turn(s) (at most {budget}: a loop?)",
                    self.script.turns.len()
                ));
            }
            match (fits, self.facts.final_reached, exit.succeeded()) {
                (true, true, true) => {}
                (true, false, _) if requests == 0 => problems.push(self.no_request_read()),
                (true, false, _) => problems.push(format!(
                    "the agent {} before the final answer ({} of {} turn(s) answered)",
                    if exit.stopped() { "was stopped" } else { "exited" },
                    self.facts.turns_answered,
                    self.script.turns.len()
                )),
                (true, true, false) if !exit.stopped() => problems.push(format!(
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
        // Requests ctxgate answered 400 because it could not read them (a
        // body cut mid-character, not JSON) are most often why an agent
        // gave up: said, with the first one's reason, whenever some came.
        let unreadable: Vec<&str> = (self.trace.requests.iter())
            .filter(|r| r.is_model_request() && matches!(r.answer, Answer::BadRequest))
            .filter_map(|r| r.unreadable.as_deref())
            .collect();
        if !problems.is_empty() && requests > 0 && !unreadable.is_empty() {
            problems.push(format!(
                "ctxgate could not read {} of its model requests and answered them 400 (the first: {})",
                unreadable.len(),
                collapse(unreadable[0], 200)
            ));
        }
        if !problems.is_empty() {
            let f = self.find(Inv::Finishes, None, problems.join("; "));
            f.received = Some(format!(
                "{}; stderr: {}",
                exit.shown(),
                collapse_tail(&exit.stderr_tail, 300)
            ));
        }
        self.settle(Inv::Finishes, true, "");
    }

    /// Why `finishes` failed with no model request read: none came, or
    /// what did was unreadable or not a model request.
    fn no_request_read(&self) -> String {
        let ended = if self.trace.exit.stopped() {
            "was stopped"
        } else {
            "exited"
        };
        let requests = &self.trace.requests;
        if let Some(first) = requests.iter().find_map(|r| r.unreadable.as_deref()) {
            let n = requests.iter().filter(|r| r.unreadable.is_some()).count();
            return format!(
                "the agent {ended} after {n} model request(s) ctxgate could not read (the first: {}) and none it could",
                collapse(first, 200)
            );
        }
        if let Some(r) = requests.first() {
            return format!(
                "the agent {ended} having sent {} request(s), none to the model's endpoints (the first: {} {}); ctxgate plays the model at POST /v1/chat/completions, /v1/responses and /v1/messages",
                requests.len(),
                collapse(&r.method, 20),
                collapse(&r.path, 120)
            );
        }
        format!(
            "the agent {ended} without sending ctxgate a request (is it pointed at OPENAI_BASE_URL or ANTHROPIC_BASE_URL?)"
        )
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
                f.unbound
                    .get_or_insert_with(|| format!("request #{}: {why}", r.index));
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
/// control characters other than newline and tab removed, `\r\n` and a
/// lone `\r` as `\n`, trailing whitespace trimmed and blank lines dropped
/// — what tools legitimately do to what they read (`result_views` adds
/// line numbers, JSON escapes and lines cut with a marker).
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
    lines
}

/// The ways a tool's result may show the file `want` (normalised), each
/// normalised: as it came; with JSON's string escapes decoded, when it
/// holds JSON strings (mini-swe-agent's `{"returncode": 0, "output":
/// "…"}`); each of those with the numbers of its numbered lines taken off
/// (`cat -n`, opencode's `read`), wrapper lines and all; and each of
/// those with the lines the tool cut and said it cut (`… (line truncated
/// to 2000 chars)`) read as the file's lines they begin. The result as it
/// came is first.
pub fn result_views(result: &str, want: &str) -> Vec<String> {
    let mut views = Vec::new();
    let decoded = json_unescaped(result);
    for text in std::iter::once(result).chain(decoded.as_deref()) {
        let plain = normalise(text);
        let unnumbered = unnumber(&plain);
        for view in std::iter::once(plain).chain(unnumbered) {
            let mended = mend_cut_lines(&view, want);
            views.push(view);
            views.extend(mended);
        }
    }
    views
}

/// A line shown with its number: `N: text`, `N\ttext`, `   N→text`,
/// `N|text` (leading whitespace allowed), or a blank line so shown, the
/// separator's space trimmed with the line's end (`N:`, `N`). Its number,
/// the text after the separator, and the separator (none for a bare `N`).
fn numbered(line: &str) -> Option<(u64, &str, Option<char>)> {
    let t = line.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 12 {
        return None;
    }
    let n = t[..digits].parse().ok()?;
    let rest = &t[digits..];
    for (sep, c) in [("→", '→'), ("\t", '\t'), (": ", ':'), ("|", '|')] {
        if let Some(text) = rest.strip_prefix(sep) {
            return Some((n, text, Some(c)));
        }
    }
    match rest {
        ":" => Some((n, "", Some(':'))),
        "→" => Some((n, "", Some('→'))),
        "|" => Some((n, "", Some('|'))),
        "" => Some((n, "", None)),
        _ => None,
    }
}

/// `s` with the numbers of its numbered lines taken off — every run of
/// consecutively numbered lines (a file from its first line or from an
/// offset), whatever wrapper lines stand around it (opencode's `<path>`,
/// `<content>` and "(End of file - total N lines)"). A run is one line
/// with a separator, or more; a blank line so shown is dropped. `None`
/// when there is none. A file may hold numbered lines of its own: the
/// result as it came is compared too.
fn unnumber(s: &str) -> Option<String> {
    let lines: Vec<&str> = s.split('\n').collect();
    let parsed: Vec<_> = lines.iter().map(|l| numbered(l)).collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut any = false;
    let mut i = 0;
    while i < lines.len() {
        let Some((first, _, sep)) = parsed[i] else {
            out.push(lines[i]);
            i += 1;
            continue;
        };
        let mut end = i + 1;
        while end < lines.len()
            && parsed[end].is_some_and(|(n, _, _)| Some(n) == first.checked_add((end - i) as u64))
        {
            end += 1;
        }
        if end - i == 1 && sep.is_none() {
            out.push(lines[i]);
            i += 1;
            continue;
        }
        any = true;
        let run: Vec<(u64, &str, Option<char>)> =
            parsed[i..end].iter().flatten().copied().collect();
        // `00001| text` (opencode's earlier `read`): the space is the
        // separator's.
        let pipe_space = run.iter().all(|&(_, text, sep)| {
            sep != Some('\t')
                && sep != Some(':')
                && sep != Some('→')
                && (text.is_empty() || text.starts_with(' '))
        });
        for (_, text, _) in run {
            let text = if pipe_space {
                text.strip_prefix(' ').unwrap_or(text)
            } else {
                text
            };
            if !text.trim_end().is_empty() {
                out.push(text);
            }
        }
        i = end;
    }
    any.then(|| out.join("\n"))
}

/// The text a line keeps before a marker that says the tool cut it there
/// (opencode's `… (line truncated to 2000 chars)`, `[truncated]`,
/// `…[truncated 300 chars]`): a bracketed note at the line's end that
/// says "truncat…", and an ellipsis before it.
fn cut_line_prefix(line: &str) -> Option<&str> {
    let close = line.chars().last()?;
    let open = match close {
        ')' => '(',
        ']' => '[',
        _ => return None,
    };
    let at = line.rfind(open)?;
    if !line[at..].to_ascii_lowercase().contains("truncat") {
        return None;
    }
    let kept = line[..at]
        .trim_end()
        .trim_end_matches("...")
        .trim_end_matches('…')
        .trim_end()
        // A cut inside a UTF-16 surrogate pair (JavaScript's `slice`).
        .trim_end_matches('\u{fffd}');
    (!kept.is_empty()).then_some(kept)
}

/// `got` with each line the tool cut and marked as cut (`cut_line_prefix`)
/// replaced by the line of `want` it begins — the next line of `want`
/// after the last one matched, or, before any matched, the first that
/// begins so. The model was told the line goes on; what the tool showed
/// of it is delivered. `None` when no line was mended.
///
/// Linear in `got` and `want` but for a sort of `want`'s lines and a
/// binary search per line: a result of many cut lines that begin no line
/// of the file (an agent's own output, or a hostile one's) is not a scan
/// of the file for each.
fn mend_cut_lines(got: &str, want: &str) -> Option<String> {
    if !got.to_ascii_lowercase().contains("truncat") {
        return None;
    }
    let want_lines: Vec<&str> = want.split('\n').collect();
    // Where each line of `want` stands, in order.
    let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, l) in want_lines.iter().enumerate() {
        at.entry(l).or_default().push(i);
    }
    // The lines of `want` in byte order, sorted when first asked: those
    // that begin with a text are a run of them, from the first not less
    // than it — so whether any does is a binary search.
    let mut sorted: Option<Vec<&str>> = None;
    let mut next: Option<usize> = None;
    let mut mended = false;
    let mut out: Vec<&str> = Vec::new();
    for line in got.split('\n') {
        if let Some(kept) = cut_line_prefix(line) {
            // (The line may be the kept text itself: only trailing
            // whitespace was cut.)
            let begins = |w: &str| w.starts_with(kept);
            let found = match next {
                Some(k) => want_lines.get(k).filter(|w| begins(w)).map(|_| k),
                None => {
                    let sorted = sorted.get_or_insert_with(|| {
                        let mut s = want_lines.clone();
                        s.sort_unstable();
                        s
                    });
                    looked_at(sorted.len().max(1).ilog2() as u64 + 1);
                    let i = sorted.partition_point(|w| *w < kept);
                    // Some line begins so: the scan for the first finds
                    // it, and sets `next` — it runs once.
                    match sorted.get(i) {
                        Some(w) if begins(w) => want_lines.iter().position(|w| {
                            looked_at(1);
                            begins(w)
                        }),
                        _ => None,
                    }
                }
            };
            if let Some(k) = found {
                out.push(want_lines[k]);
                next = Some(k + 1);
                mended = true;
                continue;
            }
        } else if let Some(ps) = at.get(line) {
            // The first at or after `next`, else the first.
            let from = next.unwrap_or(0);
            looked_at(ps.len().max(1).ilog2() as u64 + 1);
            next = ps
                .get(ps.partition_point(|&p| p < from))
                .or(ps.first())
                .map(|p| p + 1);
        }
        out.push(line);
    }
    mended.then(|| out.join("\n"))
}

#[cfg(test)]
thread_local! {
    /// How many lines of a file `mend_cut_lines` has looked at in this
    /// thread (a binary search counts its steps): tests bound its work.
    static LOOKED_AT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Count `n` lines looked at (`LOOKED_AT`, in tests; nothing otherwise).
#[inline(always)]
fn looked_at(n: u64) {
    #[cfg(test)]
    LOOKED_AT.with(|c| c.set(c.get() + n));
    #[cfg(not(test))]
    let _ = n;
}

/// `s` with the escapes of its JSON strings decoded — a tool that shows a
/// command's output as a JSON document (`{"returncode": 0, "output":
/// "…\n…"}`), or a text that holds one — or `None` when it has no string
/// with an escape. Text outside strings is kept; an escape JSON does not
/// know is kept as written, and a lone UTF-16 surrogate becomes U+FFFD.
fn json_unescaped(s: &str) -> Option<String> {
    if !s.contains('"') || !s.contains('\\') {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut in_string = false;
    let mut decoded = false;
    let mut chars = s.chars().peekable();
    let hex4 = |chars: &mut std::iter::Peekable<std::str::Chars>| -> Option<u32> {
        let mut look = chars.clone();
        let mut v = 0;
        for _ in 0..4 {
            v = v * 16 + look.next()?.to_digit(16)?;
        }
        *chars = look;
        Some(v)
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_string = !in_string;
                out.push(c);
            }
            '\\' if in_string => {
                let Some(&e) = chars.peek() else {
                    out.push(c);
                    break;
                };
                let simple = match e {
                    'n' => Some('\n'),
                    't' => Some('\t'),
                    'r' => Some('\r'),
                    'b' => Some('\u{8}'),
                    'f' => Some('\u{c}'),
                    '"' | '\\' | '/' => Some(e),
                    _ => None,
                };
                if let Some(d) = simple {
                    chars.next();
                    out.push(d);
                    decoded = true;
                    continue;
                }
                if e != 'u' {
                    out.push(c);
                    continue;
                }
                chars.next();
                let Some(hi) = hex4(&mut chars) else {
                    out.push_str("\\u");
                    continue;
                };
                decoded = true;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    let mut look = chars.clone();
                    let lo = (look.next() == Some('\\') && look.next() == Some('u'))
                        .then(|| hex4(&mut look))
                        .flatten()
                        .filter(|lo| (0xDC00..0xE000).contains(lo));
                    match lo {
                        Some(lo) => {
                            chars = look;
                            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                        }
                        None => 0xFFFD,
                    }
                } else {
                    hi
                };
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            _ => out.push(c),
        }
    }
    decoded.then_some(out)
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
            folders: Vec::new(),
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

    /// A request sent twice (an SDK's retry after a timeout) and answered
    /// the same turn twice is one turn of the conversation: the copy is
    /// not a compaction, and nothing is left out of the requests after.
    /// The turn was held twice, and every later request "left out" one.
    #[test]
    fn a_request_sent_again_is_one_turn_not_a_compaction() {
        let all = [head(), vec![call(0), result(0, "first file")]].concat();
        let last = [all.clone(), vec![call(1), result(1, "second file")]].concat();
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, head(), 500, turn(0)),
                loop_request(2, all.clone(), 600, turn(1)),
                loop_request(3, all, 600, turn(1)),
                loop_request(4, last.clone(), 700, Answer::Final),
                loop_request(5, last, 700, Answer::Final),
            ],
            0,
        );
        assert!(j.findings.is_empty(), "{:?}", j.findings);
        assert_eq!(j.facts.compactions, 0);
        assert_eq!(verdict(&j, Inv::NoPrematureCompaction), &Verdict::Pass);
    }

    /// An agent that answers every 413 by sending the same body again is
    /// told so first, not only that nothing after the refusal fit.
    #[test]
    fn a_body_resent_on_every_refusal_is_named_first() {
        let big = [head(), vec![call(0), result(0, "first file")]].concat();
        let mut requests = vec![loop_request(0, head(), 500, turn(0))];
        for i in 1..=RECOVERY_REQUESTS + 1 {
            requests.push(loop_request(i, big.clone(), 20_000, Answer::TooLarge));
        }
        let j = judged(requests, 1);
        let first = j
            .findings
            .iter()
            .find(|f| f.invariant == Inv::RecoversAfterRefusal)
            .unwrap();
        assert!(
            first
                .detail
                .contains("resends request #1's messages unchanged"),
            "{}",
            first.detail
        );
        assert!(j.findings.iter().any(|f| f.detail.contains("none of the")));
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

    /// A refused body that could not be read has no messages: a later
    /// request with none (an empty list) or other bytes is not it sent
    /// again; the same bytes are.
    #[test]
    fn an_unreadable_refused_body_is_resent_only_by_the_same_bytes() {
        let unreadable = |index: usize, body: &[u8]| {
            let mut r = loop_request(index, Vec::new(), 20_000, Answer::TooLarge);
            r.request = None;
            r.kind = Kind::Side;
            r.body = body.to_vec();
            r.unreadable = Some("JSON nested deeper than 128 levels".into());
            r
        };
        let all = [head(), vec![call(0), result(0, "first file")]].concat();
        let mut empty = loop_request(1, Vec::new(), 100, Answer::BadRequest);
        empty.answer = Answer::Side;
        let j = judged(
            vec![
                unreadable(0, b"[[[["),
                empty,
                loop_request(2, head(), 500, turn(0)),
                loop_request(3, all.clone(), 600, turn(1)),
            ],
            0,
        );
        assert!(
            !j.findings.iter().any(|f| f.detail.contains("unchanged")),
            "{:?}",
            j.findings
        );
        let j = judged(
            vec![
                unreadable(0, b"[[[["),
                unreadable(1, b"[[[["),
                loop_request(2, head(), 500, turn(0)),
            ],
            0,
        );
        assert!(
            j.findings
                .iter()
                .any(|f| f.detail.contains("resends request #0's messages unchanged")),
            "{:?}",
            j.findings
        );
    }

    /// An agent that sent nothing ctxgate could read is told what came —
    /// unreadable bodies, or requests to other paths — not asked whether
    /// it is pointed at the base URL, which it was.
    #[test]
    fn finishes_says_what_came_when_no_request_could_be_read() {
        let finishes = |requests: Vec<Recorded>| {
            let j = judged(requests, 1);
            assert_eq!(verdict(&j, Inv::Finishes), &Verdict::Fail);
            let f = j.findings.iter().find(|f| f.invariant == Inv::Finishes);
            f.unwrap().detail.clone()
        };
        let mut cut = loop_request(0, Vec::new(), 300, Answer::BadRequest);
        cut.request = None;
        cut.kind = Kind::Side;
        cut.unreadable = Some("the connection ended 120 bytes into a 300-byte body".into());
        let said = finishes(vec![cut.clone(), cut]);
        assert!(
            said.contains(
                "after 2 model request(s) ctxgate could not read (the first: the connection ended"
            ),
            "{said}"
        );
        let mut elsewhere = loop_request(0, Vec::new(), 2, Answer::Other);
        elsewhere.request = None;
        elsewhere.kind = Kind::Other;
        elsewhere.path = "/v1/completions".into();
        let said = finishes(vec![elsewhere]);
        assert!(
            said.contains("none to the model's endpoints (the first: POST /v1/completions)"),
            "{said}"
        );
        let said = finishes(Vec::new());
        assert!(said.contains("without sending ctxgate a request"), "{said}");
    }

    /// An agent ctxgate stopped at a request cap is told so — not that it
    /// exited — and the stderr excerpt is its end, where a traceback's
    /// exception is.
    #[test]
    fn finishes_names_a_cap_that_stopped_the_agent_and_shows_the_end_of_stderr() {
        let mut get = loop_request(0, Vec::new(), 0, Answer::Other);
        get.request = None;
        get.kind = Kind::Other;
        get.method = "GET".into();
        get.path = "/v1/models".into();
        let traceback = format!(
            "Traceback (most recent call last):\n{}ValueError: the real cause",
            "  File \"agent.py\", line 1, in <module>\n".repeat(20)
        );
        let trace = Trace {
            requests: vec![get; 3],
            exit: Exit {
                signal: Some(15),
                capped: Some(
                    "stopped by ctxgate after 1001 request(s), 0 of them to the model: the cap on all requests is 1000".into(),
                ),
                stderr_tail: traceback,
                ..Exit::default()
            },
        };
        let j = judge(&trace, &script(), &Settings::default());
        assert_eq!(verdict(&j, Inv::Finishes), &Verdict::Fail);
        let f = j.findings.iter().find(|f| f.invariant == Inv::Finishes);
        let f = f.unwrap();
        assert!(
            f.detail
                .contains("the agent was stopped by ctxgate after 1001 request(s)")
                && f.detail.contains("the cap on all requests is 1000")
                && f.detail
                    .contains("the agent was stopped having sent 3 request(s)")
                && !f.detail.contains("exited"),
            "{}",
            f.detail
        );
        let received = f.received.as_deref().unwrap();
        assert!(
            received.starts_with("stopped by ctxgate after 1001 request(s)")
                && received.contains("; stderr: …")
                && received.ends_with("ValueError: the real cause"),
            "{received}"
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
        let early = judge_with(vec![loop_request(0, head(), 500, turn(0))], 3);
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
        let unnumbered = |s: &str| unnumber(&normalise(s));
        assert_eq!(
            unnumbered("     1→fn main()\n     2→}").as_deref(),
            Some("fn main()\n}")
        );
        // A bare number after a numbered line is no run: a file's text.
        assert_eq!(unnumbered("1\t2\n3").as_deref(), Some("2\n3"));
        assert_eq!(unnumbered("12\n13"), Some(String::new()));
        assert_eq!(unnumbered("plain\ntext"), None);
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
        delivers(&content, sent, Some(50))
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

    /// Whether a result `sent` for a file `content` holds it, as
    /// `results-delivered` reads it, with a cap of `cap` bytes.
    fn delivers(content: &str, sent: &str, cap: Option<u64>) -> bool {
        let script = Script {
            task: "Task: read".into(),
            turns: vec![ScriptTurn {
                text: String::new(),
                calls: vec![ScriptCall {
                    id: "call_0_0".into(),
                    file: "t000-0.txt".into(),
                    content: content.into(),
                    image: None,
                }],
            }],
            final_answer: "done".into(),
            summaries: vec![50],
            folders: Vec::new(),
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
            tool_output_max_bytes: cap,
            ..Settings::default()
        };
        let j = judge(&trace, &script, &settings);
        j.verdicts[&Inv::ResultsDelivered] == Verdict::Pass
    }

    /// opencode's `read`: the file's lines numbered `N: ` from `from`,
    /// each cut at `max` characters with its marker, between its tags.
    fn opencode_read(content: &str, from: usize, max: usize) -> String {
        let lines: Vec<String> = content
            .lines()
            .enumerate()
            .skip(from - 1)
            .map(|(i, l)| {
                let l = if l.chars().count() > max {
                    let kept: String = l.chars().take(max).collect();
                    format!("{kept}... (line truncated to {max} chars)")
                } else {
                    l.to_owned()
                };
                format!("{}: {l}", i + 1)
            })
            .collect();
        format!(
            "<path>/w/t000-0.txt</path>\n<type>file</type>\n<content>\n{}\n\n(End of file - total {} lines)\n</content>",
            lines.join("\n"),
            content.lines().count()
        )
    }

    #[test]
    fn numbered_lines_inside_a_tools_wrapper_are_the_file() {
        let file = "fn main() {\n\n    println!(\"3: not a number\");\n}\n";
        // opencode's `read`, the blank line shown as "2: " (trimmed to "2:").
        assert!(delivers(file, &opencode_read(file, 1, 2000), None));
        // cat -n (a blank line is "     2\t"), Claude Code's arrow, and
        // opencode's earlier "00001| ".
        let cat_n: String = file
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:6}\t{l}\n", i + 1))
            .collect();
        assert!(delivers(
            file,
            &format!("$ cat -n f\n{cat_n}[exit 0]"),
            None
        ));
        let arrow: String = file
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:6}→{l}\n", i + 1))
            .collect();
        assert!(delivers(file, &format!("<file>\n{arrow}</file>"), None));
        let piped: String = file
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{:05}| {l}\n", i + 1))
            .collect();
        assert!(delivers(
            file,
            &format!("<file>\n{piped}(End of file)"),
            None
        ));
        // A file of numbered lines of its own, shown as it is and numbered.
        let own = "1: one\n2: two\n3: three\n";
        assert!(delivers(own, own, None));
        assert!(delivers(own, &opencode_read(own, 1, 2000), None));
        // Numbers taken off do not make up a line the tool did not show.
        let cut = opencode_read(file, 1, 2000).replace("3:     println", "3:     print");
        assert!(!delivers(file, &cut, None));
        // From an offset, within a cap: a piece of the file, numbered.
        let long: String = (0..200)
            .map(|i| format!("line {i:03} of the file\n"))
            .collect();
        assert!(delivers(
            &long,
            &opencode_read(&long, 101, 2000),
            Some(2000)
        ));
        assert!(!delivers(&long, &opencode_read(&long, 101, 2000), None));
    }

    #[test]
    fn mending_cut_lines_looks_at_each_line_a_few_times_not_the_file_for_each() {
        // The lines of `mend_cut_lines`' file looked at for (got, want).
        let work = |got: &str, want: &str| {
            LOOKED_AT.with(|c| c.set(0));
            let mended = mend_cut_lines(got, want);
            (mended, LOOKED_AT.with(|c| c.get()))
        };
        let n = 100_000;
        // A file of 100,000 lines, and a result with 100,000 cut lines
        // in front of it that begin none of them (each line 17 steps of a
        // binary search; a scan of the file for each was 10^10 lines).
        let file: Vec<String> = (0..n).map(|i| format!("line {i:06} of the file")).collect();
        let want = file.join("\n");
        let junk: Vec<String> = (0..n).map(|i| format!("abc{i} [truncated]")).collect();
        let mut shown = file.clone();
        shown[n / 2] = "line 050000 of... (line truncated to 12 chars)".into();
        let got = format!("{}\n{}", junk.join("\n"), shown.join("\n"));
        let (mended, looked) = work(&got, &want);
        assert_eq!(
            mended.as_deref(),
            Some(format!("{}\n{want}", junk.join("\n")).as_str())
        );
        assert!(looked <= 40 * 2 * n as u64, "{looked}");
        // A file of one line again and again, shown whole after a cut
        // line: each line finds where it stands by a binary search, not
        // by a walk from the file's first line (10^10 / 2 steps).
        let want = vec!["}"; n].join("\n");
        let got = format!("}} [truncated]\n{}\nlast", vec!["}"; n - 1].join("\n"));
        let (mended, looked) = work(&got, &want);
        assert_eq!(mended, Some(format!("{want}\nlast")));
        assert!(looked <= 40 * n as u64, "{looked}");
    }

    #[test]
    fn a_line_cut_with_a_marker_is_delivered_and_a_silent_cut_is_not() {
        let long = "x".repeat(30) + &"é".repeat(40);
        let file = format!("first line\n{long}\nthird line\n{long}y\nlast line\n");
        assert!(delivers(&file, &opencode_read(&file, 1, 50), None));
        assert!(delivers(&file, &opencode_read(&file, 1, 10), None));
        // The same cut without a marker, or a marker on a line the file
        // does not begin so, is not the file.
        let silent = opencode_read(&file, 1, 50).replace("... (line truncated to 50 chars)", "");
        assert!(!delivers(&file, &silent, None));
        let wrong = opencode_read(&file, 1, 50).replace("2: xxx", "2: zzz");
        assert!(!delivers(&file, &wrong, None));
        // Other markers: `[truncated]`, `…[truncated 12 chars]`; and a cut
        // inside a UTF-16 pair (JavaScript's slice) leaves U+FFFD.
        let kept: String = long.chars().take(35).collect();
        for marker in [
            " [truncated]",
            "…[truncated 12 chars]",
            "\u{fffd}... (line truncated)",
        ] {
            let sent = format!("first line\n{kept}{marker}\nthird line\n{long}y\nlast line");
            assert!(delivers(&file, &sent, None), "{marker}");
        }
    }

    #[test]
    fn a_result_shown_as_a_json_document_is_read_decoded() {
        let file = "naïve <b>\"quoted\"</b> \\n stays\n👍 emoji\n\ttab\n";
        let observation = |output: &str| {
            format!(
                "{{\n  \"returncode\": 0,\n  \"output\": {}\n}}",
                serde_json::to_string(output).unwrap()
            )
        };
        // Python's json.dumps (ensure_ascii, Jinja's tojson escapes < > &).
        let ascii = observation(file)
            .replace('ï', "\\u00ef")
            .replace('👍', "\\ud83d\\udc4d")
            .replace('<', "\\u003c")
            .replace('>', "\\u003e");
        assert!(!ascii.contains('👍') && ascii.contains("\\n"));
        assert!(delivers(file, &ascii, None));
        // Held in a text besides: a result that holds a JSON document.
        assert!(delivers(
            file,
            &format!("Observation:\n{ascii}\nnext step?"),
            None
        ));
        // Decoding makes up nothing: a JSON string of another text fails.
        assert!(!delivers(file, &observation("naïve <b>other</b>"), None));
        // mini-swe-agent's head and tail, 60 characters each of a longer
        // output: a piece as long as the cap (60 bytes) is delivered...
        let long: String = (0..20).map(|i| format!("row {i:02} → ünïcode\n")).collect();
        let chars: Vec<char> = long.chars().collect();
        let head: String = chars[..60].iter().collect();
        let tail: String = chars[chars.len() - 60..].iter().collect();
        let split =
            format!(
            "{{\"returncode\": 0, \"output_head\": {}, \"output_tail\": {}, \"elided_chars\": {}}}",
            serde_json::to_string(&head).unwrap().replace('ü', "\\u00fc"),
            serde_json::to_string(&tail).unwrap().replace('ü', "\\u00fc"),
            chars.len() - 120
        );
        assert!(delivers(&long, &split, Some(60)));
        // ...but not without a cap, nor with a larger one than it keeps.
        assert!(!delivers(&long, &split, None));
        assert!(!delivers(&long, &split, Some(200)));
        // Escapes JSON does not know, and a lone surrogate, are kept or
        // replaced, never a panic.
        assert_eq!(
            json_unescaped("\"a\\qb\\ud800c\\u12\"").as_deref(),
            Some("\"a\\qb\u{fffd}c\\u12\"")
        );
        assert_eq!(json_unescaped("no strings \\n here"), None);
    }

    #[test]
    fn a_turn_dropped_from_every_request_after_it_fails_and_a_retry_does_not() {
        let all = [head(), vec![call(0), result(0, "first file")]].concat();
        // A retry: the same request again, answered the same turn, then
        // its results.
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, head(), 500, turn(0)),
                loop_request(2, all.clone(), 600, turn(1)),
                loop_request(
                    3,
                    [all.clone(), vec![call(1), result(1, "second file")]].concat(),
                    700,
                    Answer::Final,
                ),
            ],
            0,
        );
        assert_eq!(
            verdict(&j, Inv::ResultsDelivered),
            &Verdict::Pass,
            "{:?}",
            j.findings
        );
        // Mastra's limiter: turn 1 taken, its results over the budget,
        // the turn left out of every request after it.
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, all.clone(), 600, turn(1)),
                loop_request(2, all.clone(), 600, turn(1)),
                loop_request(3, all.clone(), 600, turn(1)),
                loop_request(4, all, 600, turn(1)),
            ],
            0,
        );
        assert_eq!(verdict(&j, Inv::ResultsDelivered), &Verdict::Fail);
        let found: Vec<_> = j
            .findings
            .iter()
            .filter(|f| f.invariant == Inv::ResultsDelivered)
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].request, Some(2));
        assert!(
            found[0].detail.contains("request #1's messages again")
                && found[0].detail.contains("call_1_0")
                && found[0].detail.contains("4 time(s), to the end"),
            "{}",
            found[0].detail
        );
        // One request that leaves the turn out and moves on is judged as
        // any request after a turn.
        let j = judged(
            vec![
                loop_request(0, head(), 500, turn(0)),
                loop_request(1, head(), 500, turn(0)),
                loop_request(
                    2,
                    [head(), vec![Message::user("go on")]].concat(),
                    500,
                    Answer::Final,
                ),
            ],
            0,
        );
        assert!(
            j.findings
                .iter()
                .any(|f| f.request == Some(2) && f.detail.contains("no result for call call_0_0")),
            "{:?}",
            j.findings
        );
    }
}
