//! The ceiling probe: a case played again with one tool result grown so
//! that the request carrying it is exactly one byte over the transport
//! ceiling, had the agent not compacted.
//!
//! A generated case lands a request within a few bytes of the ceiling
//! about never, so an agent whose limit is off by one — a size that leaves
//! out the newline its client adds, `<=` where the gateway refuses at `>`
//! — held every case. The probe aims at that byte. It takes the largest
//! request of a case that carried a whole turn's results and was not
//! refused, and grows a text result of that turn until the same request,
//! played again, would be `transportMaxBodyBytes + 1` bytes. An agent that
//! measures its body to the byte compacts first, and the probe holds; one
//! that sends it is refused with `413`, and `request-under-ceiling` fails
//! on a case that is then confirmed, shrunk and saved like any other.
//!
//! The agent's request is not ctxgate's to size: it shows a result its
//! own way (line numbers, tags, a JSON observation), and a request carries
//! its system prompt and tools. So the probe measures instead of
//! predicting: each attempt plays the grown case, reads the size of the
//! request that carried the turn, and corrects the growth by what it
//! missed, at most [`ATTEMPTS`] times. The growth is ASCII letters that no
//! JSON escapes: appended to the result's last line, one byte of them is
//! one byte of the body, whatever the agent's view; whole lines, for
//! growths too long for one line, cost what the first attempt measures.

use std::sync::Arc;
use std::time::Instant;

use super::case::{self, Launch};
use super::judge::{judge, Judged};
use super::play::Stage;
use super::script::{turn_messages, Script};
use super::settings::Settings;
use super::trace::{Answer, Kind, Recorded, Trace};
use crate::generate::Case;
use crate::model::{Content, Role};

/// Attempts at one probe: the first, from the bytes the case's request
/// carried, and corrections from what each attempt measured.
pub const ATTEMPTS: usize = 4;

/// The most bytes the probe appends to a result's last line; more goes
/// into whole lines after it (a line past 2,000 characters is cut by some
/// agents' read tools).
const LINE_GROWTH: usize = 1_000;

/// A full line of growth, without its newline.
const LINE: usize = 71;

/// Where a probe grows a case, and by how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// The script turn whose result is grown, and that result's call.
    pub turn: usize,
    pub call: usize,
    /// Letters appended to the result's last line.
    pub tail: usize,
    /// Whole lines of letters after them (71 each, and a newline).
    pub lines: usize,
}

impl Growth {
    /// The bytes this growth adds to the result's text.
    pub fn bytes(&self) -> usize {
        self.tail + self.lines * (LINE + 1)
    }
}

/// The request of `trace` that carried turn `turn`'s results: the first
/// model request of the tool loop after the one answered with the turn's
/// every call, when it was read and carries the result of `call` whole
/// (`shown` is the end of that result's text, as ctxgate wrote it).
pub fn carrier<'t>(
    trace: &'t Trace,
    script: &Script,
    turn: usize,
    call: usize,
    shown: &str,
) -> Option<&'t Recorded> {
    let calls = script.turns.get(turn)?.calls.len();
    let answered = trace.requests.iter().position(|r| {
        r.answer
            == Answer::Turn {
                turn,
                first_call: 0,
                calls,
            }
    })?;
    let next = (trace.requests[answered + 1..].iter()).find(|r| r.kind == Kind::Loop)?;
    let id = &script.turns[turn].calls[call].id;
    let carried = next.messages().iter().any(|m| {
        m.role == Role::Tool
            && m.tool_call_id.as_deref() == Some(id.as_str())
            && m.content.text().contains(shown)
    });
    carried.then_some(next)
}

/// The probe's first growth of a case whose trace held the ceiling: the
/// largest request that carried a turn's results, not refused, grown to
/// one byte over the ceiling through a text result of that turn with room
/// under `toolOutputMaxBytes` (which the agent may cut at). None when no
/// request came within `earlyTolerance` of the ceiling (an agent that
/// keeps that far from it has no boundary to miss by a byte, and
/// `no-premature-compaction` already allows it), or no result has room.
pub fn first_growth(trace: &Trace, script: &Script, settings: &Settings) -> Option<Growth> {
    let ceiling = settings.config.transport_max_body_bytes;
    let near = (1.0 - settings.early_tolerance) * ceiling as f64;
    let mut best: Option<(u64, Growth)> = None;
    for (turn, t) in script.turns.iter().enumerate() {
        // The last text result of the turn that its request carried whole
        // and that has room.
        for (call, c) in t.calls.iter().enumerate().rev() {
            if c.image.is_some() || c.content.trim_end().is_empty() {
                continue;
            }
            let Some(r) = carrier(trace, script, turn, call, tail_of(&c.content)) else {
                continue;
            };
            if r.refused() || r.body_len > ceiling || (r.body_len as f64) < near {
                break;
            }
            let growth = aim(turn, call, (ceiling + 1 - r.body_len) as usize, LINE + 2);
            let room = (settings.tool_output_max_bytes).map_or(usize::MAX, |cap| {
                (cap as usize).saturating_sub(c.content.len())
            });
            if growth.bytes() <= room {
                if best.is_none_or(|(b, _)| r.body_len > b) {
                    best = Some((r.body_len, growth));
                }
                break;
            }
        }
    }
    best.map(|(_, g)| g)
}

/// The next growth after an attempt whose carrying request was `got`
/// bytes, where `ceiling + 1` was wanted; `from` is what the request
/// weighed without growth. None when the attempt's request did not move
/// as growth moves it (the agent cut or compacted the result) or no
/// growth reaches the byte.
pub fn corrected(g: Growth, from: u64, got: u64, ceiling: u64) -> Option<Growth> {
    let want = ceiling + 1;
    let added = got.checked_sub(from)?;
    if added < g.tail as u64 {
        return None;
    }
    let miss = want as i64 - got as i64;
    let tail = g.tail as i64 + miss;
    if (0..=LINE_GROWTH as i64).contains(&tail) {
        return Some(Growth {
            tail: tail as usize,
            ..g
        });
    }
    // The lines cost what they were measured to: the rest of what was
    // added, a line at a time.
    let per_line = match g.lines {
        0 => LINE as u64 + 2,
        n => ((added - g.tail as u64) / n as u64).max(1),
    };
    let next = aim(g.turn, g.call, (want - from) as usize, per_line as usize);
    (next != g).then_some(next)
}

/// A growth of `want` body bytes: whole lines of `per_line` bytes each
/// (as the body carries them), and the rest on the last line.
fn aim(turn: usize, call: usize, want: usize, per_line: usize) -> Growth {
    let lines = want.saturating_sub(LINE_GROWTH / 2) / per_line.max(1);
    Growth {
        turn,
        call,
        tail: want - lines * per_line,
        lines,
    }
    .clamped()
}

impl Growth {
    fn clamped(self) -> Growth {
        Growth {
            tail: self.tail.min(LINE_GROWTH),
            ..self
        }
    }
}

/// The last characters of a result's text: what a request that carries
/// it whole shows, however the agent frames it.
pub fn tail_of(text: &str) -> &str {
    let text = text.trim_end();
    let mut start = text.len().saturating_sub(24);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The growth's text: letters and spaces, never a character JSON escapes.
pub fn growth_text(g: &Growth) -> String {
    const WORDS: &[u8] = b"ceiling probe one byte over the limit ";
    let letter = |i: usize| WORDS[i % WORDS.len()] as char;
    let mut s = String::with_capacity(g.bytes());
    s.extend((0..g.tail).map(letter));
    for _ in 0..g.lines {
        s.push('\n');
        s.extend((0..LINE).map(letter));
    }
    s
}

/// `case` with the growth appended to the result of script turn
/// `g.turn`'s call `g.call` (the result message it came from).
pub fn grown(case: &Case, g: &Growth) -> Option<Case> {
    let turns = turn_messages(&case.messages);
    let &result = turns.get(g.turn)?.1.get(g.call)?;
    let mut case = case.clone();
    let m = &mut case.messages[result];
    let mut text = m.content.text().into_owned();
    text.push_str(&growth_text(g));
    m.content = Content::Text(text);
    Some(case)
}

/// What a probe played.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probed {
    /// The agent runs it took.
    pub attempts: usize,
    /// The agent compacted (or cut the grown result) rather than send the
    /// request over the ceiling: the probe held.
    pub compacted: bool,
    /// The bytes the last attempt grew the result by.
    pub grown_by: usize,
}

/// A case played by a probe: the grown case, its script, its trace and
/// how it was judged.
pub struct ProbeRun {
    pub case: Case,
    pub script: Arc<Script>,
    pub trace: Trace,
    pub judged: Judged,
    pub probed: Probed,
}

/// Whether a judged case leaves the ceiling to probe: nothing failed (a
/// failing case is confirmed and shrunk as it is), and
/// `request-under-ceiling` held.
pub fn wanted(judged: &Judged) -> bool {
    use super::invariants::AgentInvariant as Inv;
    use super::judge::Verdict;
    judged.failed().next().is_none()
        && judged.verdicts.get(&Inv::RequestUnderCeiling) == Some(&Verdict::Pass)
}

/// How a probe plays a case: the agent, its stage, the case's number, the
/// script of a case (its summaries and folders as the case's), and the
/// run's deadline.
pub struct Player<'a> {
    pub runtime: &'a tokio::runtime::Handle,
    pub stage: &'a Arc<Stage>,
    pub launch: &'a Launch,
    pub index: u64,
    pub script_of: &'a dyn Fn(&Case) -> Script,
    pub deadline: Option<Instant>,
}

/// Probe the ceiling on `case`, whose `script` was played as `trace` and
/// held (see the module). None when there is nothing to probe; else the
/// last attempt — a failing one as soon as one fails.
pub fn probe(player: &Player, case: &Case, script: &Script, trace: &Trace) -> Option<ProbeRun> {
    let settings = &player.stage.settings;
    let ceiling = settings.config.transport_max_body_bytes;
    let mut g = first_growth(trace, script, settings)?;
    let c = &script.turns[g.turn].calls[g.call];
    let from = carrier(trace, script, g.turn, g.call, tail_of(&c.content))?.body_len;
    let mut probed = Probed::default();
    let mut last = None;
    while probed.attempts < ATTEMPTS && player.deadline.is_none_or(|d| Instant::now() < d) {
        let case = grown(case, &g)?;
        let script = Arc::new((player.script_of)(&case));
        let trace = case::run(
            player.runtime,
            player.stage,
            &script,
            player.launch,
            player.index,
        );
        let judged = judge(&trace, &script, settings);
        probed.attempts += 1;
        probed.grown_by = g.bytes();
        let failed = judged.failed().next().is_some();
        let grown_call = &script.turns[g.turn].calls[g.call];
        let next = match carrier(
            &trace,
            &script,
            g.turn,
            g.call,
            tail_of(&grown_call.content),
        ) {
            _ if failed => None,
            Some(r) if r.body_len != ceiling + 1 => corrected(g, from, r.body_len, ceiling),
            _ => None,
        };
        probed.compacted = !failed && next.is_none();
        last = Some(ProbeRun {
            case,
            script,
            trace,
            judged,
            probed: probed.clone(),
        });
        match next {
            Some(n) => g = n,
            None => break,
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_text_is_as_long_as_it_says_and_never_escaped() {
        for (tail, lines) in [(0, 0), (1, 0), (37, 0), (1_000, 0), (0, 3), (12, 40)] {
            let g = Growth {
                turn: 0,
                call: 0,
                tail,
                lines,
            };
            let s = growth_text(&g);
            assert_eq!(s.len(), g.bytes());
            let json = serde_json::to_string(&s).unwrap();
            // Two quotes, and a `\n` for each line's newline.
            assert_eq!(json.len(), s.len() + 2 + lines);
            assert!(!s.ends_with('\n'));
        }
    }

    #[test]
    fn a_correction_moves_the_tail_by_what_was_missed() {
        let g = aim(2, 1, 300, 73);
        assert_eq!((g.tail, g.lines), (300, 0));
        // The request came 5 bytes short: 5 more letters.
        let next = corrected(g, 100_000, 100_396, 100_400).unwrap();
        assert_eq!((next.tail, next.lines), (305, 0));
        // The agent compacted: the request shrank, no correction.
        assert_eq!(corrected(g, 100_000, 40_000, 100_400), None);
        // A long growth: lines measured at 80 bytes (a line number, a
        // newline escaped), the rest on the tail.
        let g = aim(0, 0, 20_000, 73);
        assert!(g.lines > 0 && g.tail <= LINE_GROWTH, "{g:?}");
        let got = 60_000 + (g.tail + g.lines * 80) as u64;
        let next = corrected(g, 60_000, got, 80_000).unwrap();
        let landed = 60_000 + (next.tail + next.lines * 80) as u64;
        assert_eq!(landed, 80_001, "{next:?}");
    }
}
