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
//! predicting. The growth is lines after the result's own: its first line
//! ASCII letters, which no JSON escapes, and its whole lines either
//! letters too or, when the run's `contentClasses` has `cjk`, CJK
//! ideographs ([`Fill::Wide`]). The first attempt counts the most a tool
//! and a JSON encoder may spend on each line (8 bytes before it, an
//! ideograph escaped as `\uXXXX` inside an escaped string), so it lands at
//! the byte or under it; each next one lengthens the growth's first line
//! by what the last one missed (a letter more is a byte more, whatever the
//! agent's view), or counts the lines again at the cost the last one
//! measured; at most [`ATTEMPTS`].
//!
//! Ideographs are three bytes each and one character, in UTF-8 as in
//! UTF-16: a request grown in them to one byte over the ceiling is some
//! thousands of characters under it, so an agent that sizes its body in
//! characters (`len(str)`, `.length`) sends it. Letters cannot show that
//! bug; ideographs show both. When the agent's tool does not show the
//! ideographs (it cut them, or mangled them), the probe goes on in letters.

use std::sync::Arc;
use std::time::Instant;

use super::case::{self, Launch};
use super::invariants::AgentInvariant;
use super::judge::{judge, Judged, Verdict};
use super::play::Stage;
use super::script::{turn_messages, Script};
use super::settings::Settings;
use super::trace::{Answer, Kind, Recorded, Trace};
use crate::generate::Case;
use crate::model::{Content, Role};

/// Attempts at one probe: the first, aimed at or under the byte, and
/// corrections from what each attempt measured.
pub const ATTEMPTS: usize = 4;

/// Letters on each whole line of growth.
const LINE: usize = 71;

/// The ideographs a wide line is made of, in turn: common ones, three
/// bytes each in UTF-8, unchanged by every Unicode normalisation.
const WIDE: &str = "上限探测一个字节超出请求体大小模型工具结果文本行数据";

/// Ideographs on each whole line of wide growth (72 bytes).
const WIDE_LINE: usize = 24;

/// The most a request is assumed to spend on one ideograph: `\uXXXX`
/// escaped once more inside a string (an observation that is itself JSON).
const WIDE_MOST: usize = 8;

/// What a growth's whole lines are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fill {
    /// ASCII letters and spaces.
    #[default]
    Letters,
    /// CJK ideographs: three bytes and one character each.
    Wide,
}

impl Fill {
    /// The bytes of a whole line, in UTF-8.
    pub fn line_bytes(self) -> usize {
        match self {
            Fill::Letters => LINE,
            Fill::Wide => WIDE_LINE * 3,
        }
    }

    /// The most a whole line's text may cost a request, for the first
    /// attempt (letters are never escaped).
    fn line_most(self) -> usize {
        match self {
            Fill::Letters => LINE,
            Fill::Wide => WIDE_LINE * WIDE_MOST,
        }
    }

    /// How a report names it.
    pub fn said(self) -> &'static str {
        match self {
            Fill::Letters => "letters",
            Fill::Wide => "CJK",
        }
    }
}

/// The most letters on the growth's first line, the one corrections
/// lengthen or shorten (some agents' read tools cut a line at 2,000
/// characters).
const TAIL_MAX: usize = 1_900;

/// The most bytes a tool is assumed to put before each line it shows (a
/// line number and a tab, `   123→`): the first attempt counts this many
/// for every line, so it lands at the byte or under it, never over.
const PREFIX_ROOM: usize = 8;

/// Where a probe grows a case, and by how much: one turn's text results,
/// the first of them getting a line of `tail` letters, and each its whole
/// lines (71 letters, or 24 ideographs), each line after a newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Growth {
    pub turn: usize,
    /// The results grown, the one with the tail first.
    pub calls: Vec<Grown>,
    /// Letters on the growth's first line.
    pub tail: usize,
    /// What the whole lines are made of.
    pub fill: Fill,
}

/// What each line of a growth is taken to cost a request: the tail line
/// besides its letters (its escaped newline, what a tool puts before it),
/// and a whole line, its text included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cost {
    first: usize,
    line: usize,
}

impl Cost {
    /// The first attempt's: the most a line may cost, so that it lands at
    /// the byte or under it.
    fn most(fill: Fill) -> Cost {
        Cost {
            first: 2 + PREFIX_ROOM,
            line: fill.line_most() + 2 + PREFIX_ROOM,
        }
    }

    /// The least: the text as it is, each newline escaped, nothing before
    /// a line.
    fn least(fill: Fill) -> Cost {
        Cost {
            first: 2,
            line: fill.line_bytes() + 2,
        }
    }
}

/// One result a growth adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grown {
    /// The call of the turn whose result it is.
    pub call: usize,
    /// The bytes it may grow by before `toolOutputMaxBytes` cuts it.
    pub room: usize,
    /// Whole lines added to it.
    pub lines: usize,
}

impl Growth {
    /// Whole lines, over every result.
    pub fn lines(&self) -> usize {
        self.calls.iter().map(|c| c.lines).sum()
    }

    /// The bytes this growth adds to the results' text, in UTF-8.
    pub fn bytes(&self) -> usize {
        1 + self.tail + self.lines() * (self.fill.line_bytes() + 1)
    }

    /// The bytes of its text no encoder shrinks: its letters and
    /// ideographs, without the newlines.
    fn text_bytes(&self) -> usize {
        self.tail + self.lines() * self.fill.line_bytes()
    }

    /// The growth of `calls` in `fill` that adds `want` bytes to the
    /// request when its lines cost what `cost` says, with as many letters
    /// on the first line as leave it room for corrections both ways; the
    /// lines go to the first result while it has room, then to the next.
    /// None when they do not fit.
    fn costing(
        turn: usize,
        calls: &[Grown],
        want: usize,
        cost: Cost,
        fill: Fill,
    ) -> Option<Growth> {
        // At least one letter: a growth of a newline alone is a last
        // line some tools do not show.
        let rest = want.checked_sub(cost.first).filter(|r| *r > 0)?;
        let mut left = rest.saturating_sub(TAIL_MAX / 2) / cost.line;
        let tail = rest - left * cost.line;
        let mut calls = calls.to_vec();
        let line = fill.line_bytes() + 1;
        for (i, c) in calls.iter_mut().enumerate() {
            // The result with the tail keeps room for the longest tail, so
            // that corrections can lengthen it.
            let room = match i {
                0 => c
                    .room
                    .checked_sub(1 + tail)?
                    .min(c.room.saturating_sub(1 + TAIL_MAX)),
                _ => c.room,
            };
            c.lines = left.min(room / line);
            left -= c.lines;
        }
        (left == 0).then_some(Growth {
            turn,
            calls,
            tail,
            fill,
        })
    }

    /// This growth with `tail` letters on its first line, if they fit.
    fn with_tail(&self, tail: usize) -> Option<Growth> {
        let first = self.calls.first()?;
        let lines = first.lines * (self.fill.line_bytes() + 1);
        (tail <= TAIL_MAX && 1 + tail + lines <= first.room).then(|| Growth {
            tail,
            ..self.clone()
        })
    }
}

/// The request of `trace` that carried turn `turn`'s results: the first
/// model request of the tool loop after the one answered with the turn's
/// every call.
pub fn after_turn<'t>(trace: &'t Trace, script: &Script, turn: usize) -> Option<&'t Recorded> {
    let calls = script.turns.get(turn)?.calls.len();
    let answered = trace.requests.iter().position(|r| {
        r.answer
            == Answer::Turn {
                turn,
                first_call: 0,
                calls,
            }
    })?;
    (trace.requests[answered + 1..].iter()).find(|r| r.kind == Kind::Loop)
}

/// The text of call `id`'s result in request `r`, when it carries one.
fn result_in(r: &Recorded, id: &str) -> Option<String> {
    (r.messages().iter())
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id))
        .map(|m| m.content.text().into_owned())
}

/// The probe's first growth of a case whose trace held the ceiling: the
/// largest request that carried a turn's results, not refused, grown to
/// one byte over the ceiling through the text results of that turn with
/// room under `toolOutputMaxBytes` (which the agent may cut at). None when
/// no request came within `earlyTolerance` of the ceiling (an agent that
/// keeps that far from it has no boundary to miss by a byte, and
/// `no-premature-compaction` already allows it), or the results have no
/// room for it in `fill`.
pub fn first_growth(
    trace: &Trace,
    script: &Script,
    settings: &Settings,
    fill: Fill,
) -> Option<Growth> {
    let ceiling = settings.config.transport_max_body_bytes;
    let near = (1.0 - settings.early_tolerance) * ceiling as f64;
    let mut best: Option<(u64, Growth)> = None;
    for (turn, t) in script.turns.iter().enumerate() {
        let Some(r) = after_turn(trace, script, turn) else {
            continue;
        };
        let mut calls: Vec<Grown> = (t.calls.iter().enumerate())
            .filter(|(_, c)| c.image.is_none() && !c.content.trim_end().is_empty())
            .filter(|(_, c)| result_in(r, &c.id).is_some())
            .map(|(call, c)| Grown {
                call,
                room: (settings.tool_output_max_bytes).map_or(1 << 30, |cap| {
                    (cap as usize).saturating_sub(c.content.len())
                }),
                lines: 0,
            })
            .collect();
        if r.refused() || r.body_len > ceiling || (r.body_len as f64) < near {
            continue;
        }
        // The result with the most room takes the tail (the last of them).
        let Some(i) = (0..calls.len()).max_by_key(|&i| (calls[i].room, i)) else {
            continue;
        };
        calls.swap(0, i);
        let want = (ceiling + 1 - r.body_len) as usize;
        // The first attempt costs each line the most it may; ideographs,
        // which may cost a request from 3 bytes to 8, must fit too when
        // they cost the least, or they would not reach the byte.
        let least = match fill {
            Fill::Letters => Some(()),
            Fill::Wide => Growth::costing(turn, &calls, want, Cost::least(fill), fill).map(drop),
        };
        let first = least.and(Growth::costing(turn, &calls, want, Cost::most(fill), fill));
        if let Some(growth) = first {
            if best.as_ref().is_none_or(|(b, _)| r.body_len > *b) {
                best = Some((r.body_len, growth));
            }
        }
    }
    best.map(|(_, g)| g)
}

/// What an attempt that carried the grown result leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Another attempt, with this growth.
    Again(Growth),
    /// The request did not grow by the growth's text: the agent compacted
    /// (or cut the result).
    Compacted,
    /// No growth the results have room for comes nearer the byte.
    Stuck,
}

/// The next growth after an attempt whose carrying request was `got`
/// bytes, where `ceiling + 1` was wanted; `from` is what the request
/// weighed without growth. The first line's length moves by what was
/// missed; when that would make it too long, the lines are counted again
/// at the cost the attempt measured.
pub fn corrected(g: &Growth, from: u64, got: u64, ceiling: u64) -> Next {
    let want = ceiling + 1;
    let Some(added) = got.checked_sub(from).map(|a| a as usize) else {
        return Next::Compacted;
    };
    if added < g.text_bytes() || got >= want {
        return Next::Compacted;
    }
    if let Some(next) = g.with_tail(g.tail + (want - got) as usize) {
        return Next::Again(next);
    }
    let cost = match g.fill {
        // What each line cost besides its letters: its escaped newline and
        // what the tool put before it.
        Fill::Letters => {
            let prefix = (added - g.text_bytes()) / (g.lines() + 1);
            Cost {
                first: prefix.max(2),
                line: LINE + prefix.max(2),
            }
        }
        // An ideograph's cost is the encoder's, a line's prefix the tool's:
        // one measure cannot part them. So the most each can be: the tail
        // line at most what a letters line may cost besides its letters,
        // a whole line at most what the lines cost with the least besides.
        Fill::Wide => match g.lines() {
            0 => return Next::Stuck,
            lines => Cost {
                first: 3 + PREFIX_ROOM,
                line: (added - g.tail - 2).div_ceil(lines),
            },
        },
    };
    match Growth::costing(g.turn, &g.calls, (want - from) as usize, cost, g.fill) {
        Some(n) if n != *g => Next::Again(n),
        _ => Next::Stuck,
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

/// The growth's text for its `i`th result, on lines of their own after
/// the result's last (the first result's first line holds the tail):
/// letters and spaces, or ideographs, never a character JSON escapes.
pub fn growth_text(g: &Growth, i: usize) -> String {
    const WORDS: &[u8] = b"ceiling probe one byte over the limit ";
    let letter = |i: usize| WORDS[i % WORDS.len()] as char;
    let wide: Vec<char> = WIDE.chars().collect();
    let mut s = String::new();
    if i == 0 {
        s.push('\n');
        s.extend((0..g.tail).map(letter));
    }
    for n in 0..g.calls.get(i).map_or(0, |c| c.lines) {
        s.push('\n');
        match g.fill {
            Fill::Letters => s.extend((0..LINE).map(letter)),
            Fill::Wide => s.extend((0..WIDE_LINE).map(|k| wide[(n + k) % wide.len()])),
        }
    }
    s
}

/// `case` with the growth appended to the results of script turn
/// `g.turn` it names (the result messages they came from).
pub fn grown(case: &Case, g: &Growth) -> Option<Case> {
    let turns = turn_messages(&case.messages);
    let results = &turns.get(g.turn)?.1;
    let mut case = case.clone();
    for (i, c) in g.calls.iter().enumerate() {
        let m = &mut case.messages[*results.get(c.call)?];
        let mut text = m.content.text().into_owned();
        text.push_str(&growth_text(g, i));
        m.content = Content::Text(text);
    }
    Some(case)
}

/// `case` without the iterations after script turn `turn` (its last
/// assistant message, the final answer, kept): a probe's case cut to what
/// its grown request needs. None when nothing follows the turn.
pub fn cut_after_turn(case: &Case, turn: usize) -> Option<Case> {
    let turns = turn_messages(&case.messages);
    let &(next, _) = turns.get(turn + 1)?;
    let mut messages = case.messages[..next].to_vec();
    if let Some(last) =
        (case.messages.iter().rev()).find(|m| m.role == Role::Assistant && m.calls().is_empty())
    {
        messages.push(last.clone());
    }
    Some(Case {
        messages,
        ..case.clone()
    })
}

/// What a probe played.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probed {
    /// The agent runs it took.
    pub attempts: usize,
    /// How the last run ended.
    pub ended: Ended,
    /// The bytes the last attempt grew the result by.
    pub grown_by: usize,
    /// The script turn whose results were grown.
    pub turn: usize,
    /// What the last attempt's whole lines were made of.
    pub fill: Fill,
}

/// How a probe's last run ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ended {
    /// An invariant failed (most often `request-under-ceiling`: the
    /// request was sent one byte over).
    Failed,
    /// The agent compacted rather than send the grown request: the probe
    /// held.
    Compacted,
    /// The request after the turn carried the result without the grown
    /// lines (the agent's tool cut the file): nothing to aim with.
    NotShown,
    /// The attempts ran out (or the run's time did) before a request
    /// landed on the byte.
    #[default]
    Unlanded,
}

impl Ended {
    pub fn said(self) -> &'static str {
        match self {
            Ended::Failed => "FAILED",
            Ended::Compacted => "the agent compacted first",
            Ended::NotShown => "the agent's tool did not show the grown lines",
            Ended::Unlanded => "no request landed on the byte",
        }
    }
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

/// Whether a judged case leaves the ceiling to probe: `request-under-ceiling`
/// is among the `checked` invariants and held, and none of them failed (a
/// failing case is confirmed and shrunk as it is).
pub fn wanted(judged: &Judged, checked: &[AgentInvariant]) -> bool {
    checked.contains(&AgentInvariant::RequestUnderCeiling)
        && !failed(judged, checked)
        && judged.verdicts.get(&AgentInvariant::RequestUnderCeiling) == Some(&Verdict::Pass)
}

/// Whether one of the `checked` invariants failed.
fn failed(judged: &Judged, checked: &[AgentInvariant]) -> bool {
    judged.failed().any(|i| checked.contains(&i))
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
    /// The invariants the run checks.
    pub checked: &'a [AgentInvariant],
    /// Whether the growth may be ideographs (the run's `contentClasses`
    /// has `cjk`).
    pub wide: bool,
}

/// Probe the ceiling on `case`, whose `script` was played as `trace` and
/// held (see the module). None when there is nothing to probe; else the
/// last attempt — a failing one as soon as one fails.
pub fn probe(player: &Player, case: &Case, script: &Script, trace: &Trace) -> Option<ProbeRun> {
    let settings = &player.stage.settings;
    let ceiling = settings.config.transport_max_body_bytes;
    let fills: &[Fill] = match player.wide {
        true => &[Fill::Wide, Fill::Letters],
        false => &[Fill::Letters],
    };
    let from = |g: &Growth| Some(after_turn(trace, script, g.turn)?.body_len);
    let mut fills = fills
        .iter()
        .filter_map(|&f| first_growth(trace, script, settings, f));
    let mut g = fills.next()?;
    let mut probed = Probed::default();
    let mut last = None;
    while probed.attempts < ATTEMPTS && player.deadline.is_none_or(|d| Instant::now() < d) {
        let main = g.calls.first()?.call;
        let id = script.turns[g.turn].calls[main].id.clone();
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
        probed.turn = g.turn;
        probed.fill = g.fill;
        let shown = tail_of(&script.turns[g.turn].calls[main].content).to_owned();
        let after = after_turn(&trace, &script, g.turn);
        let result = after.and_then(|r| result_in(r, &id));
        let (ended, next) = match (after, result) {
            _ if failed(&judged, player.checked) => (Ended::Failed, None),
            (Some(r), Some(text)) if text.contains(&shown) => {
                match corrected(&g, from(&g)?, r.body_len, ceiling) {
                    Next::Again(n) => (Ended::Unlanded, Some(n)),
                    Next::Compacted => (Ended::Compacted, None),
                    Next::Stuck => (Ended::Unlanded, None),
                }
            }
            // The result there, without its growth: the tool cut it (or,
            // ideographs, did not show them as they are): letters next.
            (_, Some(_)) => (Ended::NotShown, fills.next()),
            _ => (Ended::Compacted, None),
        };
        probed.ended = ended;
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

    fn one(room: usize) -> Vec<Grown> {
        vec![Grown {
            call: 0,
            room,
            lines: 0,
        }]
    }

    #[test]
    fn growth_text_is_as_long_as_it_says_and_never_escaped() {
        for fill in [Fill::Letters, Fill::Wide] {
            for (tail, lines) in [(1, 0), (37, 0), (1_900, 0), (1, 3), (12, 40)] {
                let g = Growth {
                    turn: 0,
                    calls: vec![
                        Grown {
                            call: 0,
                            room: 1 << 20,
                            lines: lines / 2,
                        },
                        Grown {
                            call: 1,
                            room: 1 << 20,
                            lines: lines - lines / 2,
                        },
                    ],
                    tail,
                    fill,
                };
                let (a, b) = (growth_text(&g, 0), growth_text(&g, 1));
                assert_eq!(a.len() + b.len(), g.bytes());
                let text = a.clone() + &b;
                let json = serde_json::to_string(&text).unwrap();
                // Two quotes, and a `\n` for each line's newline.
                assert_eq!(json.len(), g.bytes() + 2 + lines + 1);
                assert!(a.starts_with('\n') && !a.ends_with('\n'));
                assert!(b.is_empty() || (b.starts_with('\n') && !b.ends_with('\n')));
                // Ideographs: three bytes, one character (in UTF-16 too).
                let wide = text.chars().filter(|c| !c.is_ascii()).count();
                assert_eq!(
                    wide,
                    if fill == Fill::Wide {
                        lines * WIDE_LINE
                    } else {
                        0
                    }
                );
                assert!(text.chars().all(|c| c.is_ascii() || c.len_utf8() == 3));
                assert!(text.encode_utf16().count() == text.chars().count());
            }
        }
    }

    /// How an agent shows a growth in its request: `prefix` bytes before
    /// each line, its newline `newline` bytes, each ideograph `wide`
    /// bytes (3 as it is, 6 as `\uXXXX`, 7 escaped again).
    #[derive(Debug, Clone, Copy)]
    struct View {
        prefix: usize,
        newline: usize,
        wide: usize,
    }

    impl View {
        fn cost(self, g: &Growth) -> u64 {
            let line = match g.fill {
                Fill::Letters => LINE,
                Fill::Wide => WIDE_LINE * self.wide,
            };
            ((g.lines() + 1) * (self.newline + self.prefix) + g.tail + g.lines() * line) as u64
        }
    }

    #[test]
    fn a_probe_lands_on_the_byte_from_under_it_whatever_a_tool_puts_before_lines() {
        let ceiling = 102_400u64;
        // One result with all the room, or three that share it.
        let three = |room| {
            (0..3)
                .map(|call| Grown {
                    call,
                    room,
                    lines: 0,
                })
                .collect::<Vec<_>>()
        };
        // Plain, numbered, a JSON observation (newlines escaped twice),
        // ideographs as they are or escaped.
        let mut views = vec![];
        for (newline, wide) in [(2, 3), (2, 6), (3, 3), (3, 7)] {
            for prefix in [0, 3, 6, 8 + 2 - newline] {
                views.push(View {
                    prefix,
                    newline,
                    wide,
                });
            }
        }
        for fill in [Fill::Letters, Fill::Wide] {
            for (calls, wants) in [
                (one(1 << 20), &[1_000u64, 11, 12, 5_000, 16_000, 42_401][..]),
                (three(6_000), &[11, 5_000, 12_000][..]),
            ] {
                for &want in wants {
                    let from = ceiling + 1 - want;
                    for &view in &views {
                        let mut g =
                            Growth::costing(0, &calls, want as usize, Cost::most(fill), fill);
                        let mut attempts = 0;
                        let landed = loop {
                            let Some(now) = g else { break false };
                            let line = now.fill.line_bytes() + 1;
                            assert!(now.calls.iter().all(|c| c.lines * line <= c.room));
                            attempts += 1;
                            let got = from + view.cost(&now);
                            // No attempt is ever over.
                            assert!(got <= ceiling + 1, "{want} {view:?} {now:?}");
                            if got == ceiling + 1 {
                                break true;
                            }
                            g = match corrected(&now, from, got, ceiling) {
                                Next::Again(n) => Some(n),
                                other => panic!("{want} {view:?}: {other:?} after {now:?}"),
                            };
                        };
                        assert!(
                            landed && attempts <= ATTEMPTS,
                            "{fill:?}, want {want}, {view:?}: {attempts} attempt(s)"
                        );
                    }
                }
            }
        }
        let letters = Cost::most(Fill::Letters);
        // Too little room for a line of one letter, numbered as a tool
        // may number it: no growth; nor more than the results can hold.
        assert_eq!(
            Growth::costing(0, &one(1 << 20), 10, letters, Fill::Letters),
            None
        );
        let plain = Cost { first: 2, line: 73 };
        assert_eq!(
            Growth::costing(0, &one(1 << 20), 2, plain, Fill::Letters),
            None
        );
        assert_eq!(
            Growth::costing(0, &three(6_000), 19_000, plain, Fill::Letters),
            None
        );
        // The agent compacted: the request shrank, no correction.
        let g = Growth::costing(2, &one(1 << 20), 300, letters, Fill::Letters).unwrap();
        assert_eq!(corrected(&g, 100_000, 40_000, 100_400), Next::Compacted);
        // Ideographs shown as they are need more room than the first
        // attempt takes: where the results have none, no nearer growth.
        let wide = Cost::most(Fill::Wide);
        let g = Growth::costing(0, &one(8_000), 10_000, wide, Fill::Wide).unwrap();
        let got = 90_401
            + View {
                prefix: 0,
                newline: 2,
                wide: 3,
            }
            .cost(&g);
        assert_eq!(corrected(&g, 90_401, got, 100_400), Next::Stuck);
    }

    #[test]
    fn a_probed_case_is_cut_after_its_grown_turn_and_keeps_its_final_answer() {
        use crate::model::{Message, ToolCall};
        let call = |id: &str| vec![ToolCall::new(id, "read", serde_json::json!({}))];
        let case = Case {
            config: Default::default(),
            messages: vec![
                Message::user("go"),
                Message::assistant_calls("", call("a")),
                Message::tool("a", "one"),
                Message::assistant_calls("", call("b")),
                Message::tool("b", "two"),
                Message::assistant_calls("", call("c")),
                Message::tool("c", "three"),
                Message::assistant("done"),
            ],
        };
        let cut = cut_after_turn(&case, 1).unwrap();
        assert_eq!(cut.messages.len(), 6);
        assert_eq!(cut.messages[4].content.text(), "two");
        assert_eq!(cut.messages[5].content.text(), "done");
        assert_eq!(turn_messages(&cut.messages).len(), 2);
        // Nothing follows the last turn.
        assert_eq!(cut_after_turn(&case, 2), None);
    }
}
