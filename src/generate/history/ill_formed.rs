//! Ill-formed histories, opt-in (`GenConfig::allow_ill_formed`): a
//! duplicate answer, a call unanswered mid-history, a repeated id, an
//! orphan result.

use super::Gen;
use crate::model::{check_well_formed, iterations, Message, Role};

impl Gen<'_, '_, '_> {
    pub(super) fn corrupt(&mut self, msgs: &mut Vec<Message>) {
        let kind = self.draw.weighted(&[30, 25, 25, 20]);
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
                    let i = *self.draw.pick(&tools);
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
                    let r = self.draw.pick(&mid).clone();
                    let i = self.draw.range(r.start as u64 + 1, r.end as u64 - 1) as usize;
                    msgs.remove(i);
                }
            }
            3 if !openers.is_empty() => {
                // Two calls with one id in one assistant message.
                let i = *self.draw.pick(&openers);
                let calls = msgs[i].tool_calls.as_mut().expect("an opener has calls");
                let dup = calls[0].clone();
                calls.push(dup);
            }
            _ => {}
        }
        if check_well_formed(msgs).is_ok() {
            // Orphan: a result whose call no assistant message makes.
            let at = self.draw.range(0, msgs.len() as u64) as usize;
            let content = self.tool_result();
            msgs.insert(
                at,
                Message::tool(format!("orphan_{}", self.alnum(8)), content),
            );
        }
    }
}
