//! Measuring a case after the fact, and what the subject did with it.

use std::collections::HashMap;

use serde_json::Value;

use super::bins::*;
use super::Coverage;
use crate::body::value_size;
use crate::config::EXPRESS_DEFAULT_LIMIT;
use crate::generate::history::map_size;
use crate::generate::{classify, Case, ContentClass, TOOL_RESULT_CAP};
use crate::model::{head_len, iterations, unanswered_calls, Content, Role, WireFormat};

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
        let mut ids_reused = false;
        for (n, r) in its.iter().enumerate() {
            let opener = &msgs[r.start];
            for call in opener.calls() {
                if *first_seen.entry(call.id.as_str()).or_insert(n) != n {
                    set(IDS, 0);
                    ids_reused = true;
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
        // trims-when-due's shape: over the trigger, with a message outside
        // the minimal output (head, pinned iterations, last iteration) —
        // and the same with call ids reused across iterations, where a
        // trimmer that pairs by a global id lookup gives up.
        if pressure.over_trigger && case.is_well_formed() {
            let minimal: usize = crate::contract::minimal_ranges(msgs, head)
                .iter()
                .map(|r| r.len())
                .sum();
            if minimal < msgs.len() {
                set(BUG_CLASS, 6);
                if ids_reused {
                    set(BUG_CLASS, 7);
                }
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
        if image_bytes > 0
            && body.abs_diff(ceiling) <= 1
            && crate::generate::images::image_results_in_a_run(msgs) >= 2
        {
            set(IMAGES, 12);
        }
        if image_bytes > 0 && body > ceiling && in_protected_band(case) {
            set(IMAGES, 13);
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

    /// The subject gave no answer to the last case: it faulted first.
    pub fn record_unanswered(&mut self) {
        self.unanswered += 1;
    }

    /// The subject's `cannot_fit` to the last case got no verdict.
    pub fn record_unjudged_refusal(&mut self) {
        self.unjudged_refusals += 1;
    }
}

/// Whether the case's ceiling lies in the band where only eliding a
/// protected image (the last iteration's, a pinned iteration's) keeps
/// `keepRecent` iterations, and at or over the smallest history the
/// contract allows: `reference::ElisionFloors`.
fn in_protected_band(case: &Case) -> bool {
    let c = &case.config;
    let head = crate::contract::Head::of(&case.messages).kept;
    let k = c.keep_recent.min(iterations(&case.messages[head..]).len());
    if k == 0 || !case.is_well_formed() {
        return false;
    }
    let ceiling = c.transport_max_body_bytes;
    crate::reference::Reference::default()
        .elision_floors(c, &case.messages, k)
        .is_some_and(|f| {
            f.band().contains(&ceiling)
                && crate::contract::minimal_body(c, &case.messages) <= ceiling
        })
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
