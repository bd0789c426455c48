//! Aiming at a given config's boundaries (`--config`, the user's
//! production values): the config stays exactly as given, so the history
//! moves instead. A boundary case is grown (whole tool iterations, then
//! one sized to what is left) or trimmed (whole iterations from the end)
//! until it is within a pad of the target, then padded to the byte: the
//! adr-0098 estimate on the trigger ±1 token, or the body on the ceiling
//! ±1 byte. A pending last iteration stays last. When no history of this
//! shape reaches the target (a head alone over it), the case is left as
//! it is — not on the boundary, and counted so by the coverage. A target
//! past `GenConfig::max_aimed_body_bytes` (64 MiB) is not aimed at: the
//! generator's memory and time stay bounded whatever the ceiling.

use serde_json::json;

use super::history::Gen;
use super::text::{self, ContentClass};
use super::{Case, TOOL_RESULT_CAP};
use crate::body::message_size_in;
use crate::estimate::{Adr0098, Estimator};
use crate::model::{head_len, iterations, unanswered_calls, Content, Message, ToolCall};

/// How close growing gets before the exact pad (which takes up to 256 KiB).
const PAD_BYTES: i64 = 128 * 1024;
/// Most iterations one case may gain while growing.
const MAX_GROWTH: usize = 20_000;

#[derive(Clone, Copy)]
enum Target {
    /// The body, in bytes.
    Ceiling,
    /// The adr-0098 estimate, in tokens.
    Trigger,
}

impl Gen<'_, '_, '_> {
    /// Put a case of the fixed config on its trigger or its ceiling.
    pub(super) fn aim(&mut self, case: &mut Case) {
        // A ceiling above the bound gets no case on it: growing a history to
        // it would take memory and time in proportion (a 1 GB ceiling took
        // 2 GB and 1.4 s a case). The draw is made all the same, so that
        // the cases that follow do not depend on the bound.
        // The same goes for a trigger whose bytes pass it (a window of
        // millions of tokens); a case neither fits is left as it is.
        let bound = self.settings.max_aimed_body_bytes;
        let ceiling_fits = case.config.transport_max_body_bytes <= bound;
        let trigger_fits = case
            .config
            .trigger()
            .saturating_mul(case.config.bytes_per_token.max(1))
            <= bound;
        let target = match (self.draw.chance(50), ceiling_fits, trigger_fits) {
            (true, true, _) | (false, true, false) => Target::Ceiling,
            (_, _, true) => Target::Trigger,
            (_, false, false) => return,
        };
        let off = [-1i64, 0, 1][self.draw.weighted(&[25, 50, 25])];
        if case.is_well_formed() {
            let want = match target {
                Target::Ceiling => case.config.transport_max_body_bytes as i64 + off,
                Target::Trigger => case.config.trigger() as i64 + off,
            };
            self.reach(case, target, want);
        }
        match target {
            Target::Ceiling => {
                let want = case.config.transport_max_body_bytes as i64 + off;
                self.pad_body(case, want)
            }
            Target::Trigger => self.pad_to_trigger(case, off),
        };
    }

    /// Pad one text so that the body is exactly `want` bytes: prose, then
    /// plain letters or a cut to settle what its escapes (a newline is two
    /// bytes in JSON) made it miss by. False, and the case unchanged, when
    /// the body is over `want` or more than 256 KiB under it.
    fn pad_body(&mut self, case: &mut Case, want: i64) -> bool {
        let n = want - case.body_bytes() as i64;
        if !(0..=262_144).contains(&n) {
            return false;
        }
        let Some(i) = self.text_messages(case, n as usize + 8) else {
            return false;
        };
        let saved = case.messages[i].content.clone();
        let base = saved.text().len();
        let pad = text::text(&mut self.text, ContentClass::Prose, n as usize);
        if let Content::Text(s) = &mut case.messages[i].content {
            s.push_str(&pad);
        }
        for _ in 0..8 {
            let miss = want - case.body_bytes() as i64;
            let Content::Text(s) = &mut case.messages[i].content else {
                break;
            };
            match miss {
                0 => return true,
                m if m > 0 => s.extend(std::iter::repeat_n('x', m as usize)),
                m => {
                    let keep = (s.len() as i64 + m).max(base as i64) as usize;
                    let cut = crate::model::truncate_utf8(s, keep).len();
                    s.truncate(cut);
                }
            }
        }
        case.messages[i].content = saved;
        false
    }

    /// Trim or grow `case` until `measure` is at most `want` and within a
    /// pad of it.
    fn reach(&mut self, case: &mut Case, target: Target, want: i64) {
        let config = case.config.clone();
        let bpt = config.bytes_per_token.max(1) as i64;
        let measure = |msgs: &[Message]| match target {
            Target::Ceiling => crate::body::body_bytes(&config, msgs) as i64,
            Target::Trigger => Adr0098.tokens(&mut msgs.iter(), &config) as i64,
        };
        // What a few messages add, near enough: the pad settles the rest.
        let delta = |msgs: &[Message]| match target {
            Target::Ceiling => msgs
                .iter()
                .map(|m| message_size_in(config.wire_format, m) as i64 + 1)
                .sum::<i64>(),
            Target::Trigger => Adr0098.tokens(&mut msgs.iter(), &config) as i64,
        };
        // The pad in the target's unit.
        let pad = match target {
            Target::Ceiling => PAD_BYTES,
            Target::Trigger => PAD_BYTES / bpt,
        };
        let msgs = &mut case.messages;
        let head = head_len(msgs);
        let tail = match iterations(&msgs[head..]).last() {
            Some(r) if !unanswered_calls(&msgs[head..], r.clone()).is_empty() => {
                msgs.split_off(head + r.start)
            }
            _ => Vec::new(),
        };
        let with_tail = |msgs: &[Message]| {
            let mut all = msgs.to_vec();
            all.extend_from_slice(&tail);
            all
        };
        let mut now = measure(&with_tail(msgs));
        while now > want {
            let Some(last) = iterations(&msgs[head..]).last().cloned() else {
                break;
            };
            msgs.truncate(head + last.start);
            now = measure(&with_tail(msgs));
        }
        let saved_tier = self.shape.result_tier;
        self.shape.result_tier = 3; // results up to the cap: growing is quick
        let mut grown = 0;
        while now <= want && want - now > pad && grown < MAX_GROWTH {
            let room = want - now;
            let mut new = Vec::new();
            self.tool_iteration(&mut new, false);
            let mut added = delta(&new);
            if added > room - pad / 2 {
                let bytes = match target {
                    Target::Ceiling => room - pad / 2,
                    Target::Trigger => (room - pad / 2) * bpt,
                };
                new = self.one_result(bytes.max(1) as usize);
                added = delta(&new);
            }
            msgs.extend(new);
            now += added;
            grown += 1;
        }
        self.shape.result_tier = saved_tier;
        msgs.extend(tail);
    }

    /// One iteration of one call whose result holds about `bytes` bytes
    /// (several results when that is past the 32 KiB cap).
    fn one_result(&mut self, bytes: usize) -> Vec<Message> {
        let per = TOOL_RESULT_CAP
            .min(self.settings.max_tool_result_bytes)
            .max(1);
        let parts = bytes.div_ceil(per).max(1);
        let mut calls = Vec::with_capacity(parts);
        for j in 0..parts {
            let id = self.call_id(j, &calls);
            calls.push(ToolCall::new(
                id,
                "read_file",
                json!({"path": "apps/engine/lib/engine/harness/context_manager/default.ex"}),
            ));
        }
        let mut out = vec![Message::assistant_calls("", calls.clone())];
        let mut left = bytes;
        for call in calls {
            let n = left.min(per).min(self.settings.max_tool_result_bytes);
            left -= n;
            let class = *self.draw.pick(&self.shape.classes);
            out.push(Message::tool(call.id, text::text(&mut self.text, class, n)));
        }
        out
    }
}
