//! Boundary seeking: a case sized so that the adr-0098 estimate is on the
//! trigger (±1 token), the body on the ceiling (±1 byte), or both — by
//! moving the config, or by padding a text.

use super::Gen;
use crate::config::Config;
use crate::generate::text::{self, ContentClass};
use crate::generate::Case;
use crate::model::{Content, Role};

impl Gen<'_, '_, '_> {
    /// Size the case so that the estimate is on the trigger (±1 token), the
    /// body on the ceiling (±1 byte), or both: by moving the config, or by
    /// padding a text.
    pub(super) fn seek_boundary(&mut self, case: &mut Case) {
        let kind = self.draw.weighted(&[45, 45, 10]); // trigger, ceiling, both
        let offsets = [-1i64, 0, 1];
        let off = offsets[self.draw.weighted(&[25, 50, 25])];
        let off2 = offsets[self.draw.weighted(&[25, 50, 25])];
        let pad = self.draw.chance(25);
        let window_arm = self.draw.chance(60);
        let slack = self.draw.weighted(&[50, 50]) as u64;
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
    pub(in crate::generate) fn text_messages(
        &mut self,
        case: &Case,
        extra: usize,
    ) -> Option<usize> {
        let max = self.settings.max_tool_result_bytes;
        let idx: Vec<usize> = (0..case.messages.len())
            .filter(|&i| {
                let m = &case.messages[i];
                matches!(m.content, Content::Text(_))
                    && (m.role != Role::Tool || m.content.text().len() + extra <= max)
            })
            .collect();
        (!idx.is_empty()).then(|| *self.draw.pick(&idx))
    }

    pub(in crate::generate) fn pad_to_ceiling(&mut self, case: &mut Case, off: i64) -> bool {
        let want = case.config.transport_max_body_bytes as i64 + off;
        let n = want - case.body_bytes() as i64;
        if !(0..=262_144).contains(&n) {
            return false;
        }
        let Some(i) = self.text_messages(case, n as usize) else {
            return false;
        };
        self.pad_text(case, i, n as usize, |c| c.body_bytes() as i64 == want)
    }

    pub(in crate::generate) fn pad_to_trigger(&mut self, case: &mut Case, off: i64) -> bool {
        let want = case.config.trigger() as i64 + off;
        let deficit = want - case.estimate() as i64;
        let bpt = case.config.bytes_per_token as i64;
        if deficit < 0 || deficit * bpt > 262_144 {
            return false;
        }
        let Some(i) = self.text_messages(case, ((deficit + 1) * bpt) as usize) else {
            return false;
        };
        let a = case.messages[i].content.text().len() as i64;
        let old = (a + bpt - 1) / bpt;
        let n = (old + deficit) * bpt - a;
        self.pad_text(case, i, n as usize, |c| c.estimate() as i64 == want)
    }

    /// Pad message `i`'s text with `n` bytes of prose; keep the padding
    /// when the padded case is `on_target`, else put the text back.
    fn pad_text(
        &mut self,
        case: &mut Case,
        i: usize,
        n: usize,
        on_target: impl Fn(&Case) -> bool,
    ) -> bool {
        let saved = case.messages[i].content.clone();
        let pad = text::text(&mut self.text, ContentClass::Prose, n);
        if let Content::Text(s) = &mut case.messages[i].content {
            s.push_str(&pad);
        }
        if on_target(case) {
            return true;
        }
        case.messages[i].content = saved;
        false
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
