//! The reference compactor on real agent histories (SPEC §4, §5).
//!
//! Every history of the shared corpus (`../shared/data/real-histories/*/*.json`,
//! OpenAI Chat Completions messages, read at test time and never copied
//! here) is compacted at three ceilings — the engine's 8 MiB, Express's
//! 102,400 and a tight 16,384 — measured in the `engine` and `openai` wire
//! formats. Each answer is judged against the contract with figures this
//! file computes on its own (iterations, head, estimate, the minimal
//! output), not with the library's oracles. Where the corpus is missing,
//! the test is skipped with a line that says so — unless
//! `CTXGATE_REQUIRE_DATA=1`, where it fails.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

use ctxgate::body::{body_bytes, body_value};
use ctxgate::config::Config;
use ctxgate::model::{check_well_formed, iterations, Document, Message, Role, WireFormat};
use ctxgate::reference::compact;
use ctxgate::CompactError;
use serde_json::{json, Value};

const CEILINGS: [u64; 3] = [8 * 1024 * 1024, 102_400, 16_384];
const FORMATS: [WireFormat; 2] = [WireFormat::Engine, WireFormat::Openai];
const MIN_FILES: usize = 200;

struct History {
    /// Path relative to the corpus folder, for messages.
    name: String,
    messages: Vec<Message>,
}

mod common;

/// The corpus's folder; `None` (the test is skipped) where it is missing,
/// see [`common::data_dir`].
fn corpus_dir() -> Option<PathBuf> {
    common::data_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/real-histories"))
}

/// Every `*/*.json` of the corpus, sorted by path; `None` where the folder
/// is missing. Panics when it holds fewer than [`MIN_FILES`] histories:
/// this test must not pass by finding nothing.
fn corpus() -> Option<Vec<History>> {
    let dir = corpus_dir()?;
    let subdirs = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "the real-history corpus is unreadable at {}: {e}",
            dir.display()
        )
    });
    let mut paths: Vec<PathBuf> = Vec::new();
    for sub in subdirs {
        let sub = sub.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "json") {
                paths.push(f);
            }
        }
    }
    paths.sort();
    assert!(
        paths.len() >= MIN_FILES,
        "expected at least {MIN_FILES} histories in {}, found {}",
        dir.display(),
        paths.len()
    );
    let histories = paths
        .iter()
        .map(|p| {
            let name = p.strip_prefix(&dir).unwrap().display().to_string();
            let bytes = std::fs::read(p).unwrap();
            let value: Value =
                serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
            assert_eq!(value["format"], "openai", "{name}");
            assert!(value["messages"].is_array(), "{name}: no `messages`");
            let doc = Document::from_value(value, Some(WireFormat::Openai))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            History {
                name,
                messages: doc.messages,
            }
        })
        .collect();
    Some(histories)
}

// ---------------------------------------------------------------------------
// The contract's figures, computed here (SPEC §1.2, §3, §4).

/// The leading run of system messages.
fn head_len(h: &[Message]) -> usize {
    h.iter().take_while(|m| m.role == Role::System).count()
}

/// SPEC §1.2: an assistant message with non-empty `toolCalls` and the
/// consecutive tool messages right after it that answer its calls; every
/// other message is an iteration of its own.
fn iterations_of(h: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < h.len() {
        let start = i;
        i += 1;
        let calls = h[start].tool_calls.as_deref().unwrap_or(&[]);
        if h[start].role == Role::Assistant && !calls.is_empty() {
            while i < h.len()
                && h[i].role == Role::Tool
                && calls
                    .iter()
                    .any(|c| Some(c.id.as_str()) == h[i].tool_call_id.as_deref())
            {
                i += 1;
            }
        }
        out.push(start..i);
    }
    out
}

/// The iterations after the head, as ranges into `h`.
fn body_iterations(h: &[Message]) -> Vec<Range<usize>> {
    let head = head_len(h);
    iterations_of(&h[head..])
        .into_iter()
        .map(|r| r.start + head..r.end + head)
        .collect()
}

fn tokens(bytes: usize, config: &Config) -> u64 {
    (bytes as u64).div_ceil(config.bytes_per_token)
}

/// SPEC §3 `adr-0098`: tokens(content) + tokens(engine JSON of `toolCalls`).
fn estimate(h: &[Message], config: &Config) -> u64 {
    h.iter()
        .map(|m| {
            let calls = match m.tool_calls.as_deref() {
                Some(calls) if m.role == Role::Assistant && !calls.is_empty() => {
                    let array: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            let mut o =
                                json!({"id": c.id, "name": c.name, "arguments": *c.arguments});
                            for (k, v) in &c.extra {
                                o[k] = v.clone();
                            }
                            o
                        })
                        .collect();
                    tokens(serde_json::to_vec(&array).unwrap().len(), config)
                }
                _ => 0,
            };
            tokens(m.content.text().len(), config) + calls
        })
        .sum()
}

/// SPEC §4 step 6: head + pinned iterations + the last iteration, no summary.
fn minimal(h: &[Message]) -> Vec<Message> {
    let head = head_len(h);
    let iters = body_iterations(h);
    let mut out = h[..head].to_vec();
    if let Some((last, rest)) = iters.split_last() {
        for r in rest {
            if h[r.clone()].iter().any(|m| m.pinned == Some(true)) {
                out.extend_from_slice(&h[r.clone()]);
            }
        }
        out.extend_from_slice(&h[last.clone()]);
    }
    out
}

/// The messages of `o` that are not matched, in order, by messages of `h`
/// (a greedy subsequence match, which is exact for subsequence tests).
fn foreign<'o>(o: &'o [Message], h: &[Message]) -> Vec<&'o Message> {
    let mut j = 0;
    let mut out = Vec::new();
    for m in o {
        match h[j..].iter().position(|x| x == m) {
            Some(p) => j += p + 1,
            None => out.push(m),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The judgement of one answer.

#[derive(Default, Clone, Copy)]
struct Counts {
    compacted: usize,
    unchanged: usize,
    cannot_fit: usize,
    /// Histories whose minimal output (computed here) is over the ceiling.
    minimal_over: usize,
}

fn judge(h: &History, config: &Config, counts: &mut Counts) {
    let input = &h.messages;
    let ceiling = config.transport_max_body_bytes;
    let ctx = format!("{} at ceiling {ceiling} in {}", h.name, config.wire_format);

    // The body size is exact: it is the length of the serialised body.
    let exact = |msgs: &[Message]| serde_json::to_vec(&body_value(config, msgs)).unwrap().len();
    let body_in = body_bytes(config, input);
    assert_eq!(
        body_in,
        exact(input) as u64,
        "{ctx}: body_bytes of the input"
    );

    let due = estimate(input, config) > config.trigger() || body_in > ceiling;
    let min = minimal(input);
    let min_body = body_bytes(config, &min);
    if min_body > ceiling {
        counts.minimal_over += 1;
    }

    let answer = compact(config, input);
    assert_eq!(answer, compact(config, input), "{ctx}: not deterministic");
    let out = match answer {
        Err(CompactError::CannotFit {
            needed,
            ceiling: said,
            ..
        }) => {
            counts.cannot_fit += 1;
            assert!(due, "{ctx}: cannot_fit without compaction being due");
            assert!(
                min_body > ceiling,
                "{ctx}: cannot_fit, but head + pinned + last iteration is {min_body} bytes"
            );
            assert_eq!(needed, min_body, "{ctx}: `needed` is not the minimal body");
            assert_eq!(said, ceiling, "{ctx}");
            return;
        }
        Err(e) => panic!("{ctx}: {e}"),
        Ok(out) => out,
    };
    assert!(
        min_body <= ceiling,
        "{ctx}: the minimal output is {min_body} bytes, over the ceiling, yet an answer came back"
    );

    let body_out = body_bytes(config, &out);
    assert_eq!(
        body_out,
        exact(&out) as u64,
        "{ctx}: body_bytes of the output"
    );
    assert!(
        body_out <= ceiling,
        "{ctx}: body {body_out} over the ceiling"
    );

    if out == *input {
        counts.unchanged += 1;
    } else {
        counts.compacted += 1;
        assert!(
            due,
            "{ctx}: compacted although the estimate ({}) is under the trigger ({}) and the body ({body_in}) under the ceiling",
            estimate(input, config),
            config.trigger()
        );
    }
    if !due {
        assert!(out == *input, "{ctx}: output differs, compaction not due");
    }

    check_well_formed(&out).unwrap_or_else(|e| panic!("{ctx}: output not well formed: {e}"));

    let head = head_len(input);
    assert!(
        out.len() >= head && out[..head] == input[..head],
        "{ctx}: head not kept verbatim"
    );

    let iters = body_iterations(input);
    if let Some(last) = iters.last() {
        assert!(
            out.ends_with(&input[last.clone()]),
            "{ctx}: does not end with the input's last iteration"
        );
    }

    let added = foreign(&out, input);
    assert!(
        added.len() <= 1,
        "{ctx}: {} messages are not from the input (or out of order)",
        added.len()
    );
    for m in added {
        assert!(
            m.content.text().len() <= config.summary_max_bytes,
            "{ctx}: summary of {} bytes",
            m.content.text().len()
        );
    }

    assert_eq!(
        compact(config, &out).as_ref(),
        Ok(&out),
        "{ctx}: not idempotent"
    );
}

#[test]
fn the_reference_keeps_the_contract_on_every_real_history() {
    let Some(histories) = corpus() else { return };
    let n = histories.len();

    // The iteration structure computed here is the library's.
    for h in &histories {
        let head = head_len(&h.messages);
        let lib: Vec<Range<usize>> = iterations(&h.messages[head..])
            .into_iter()
            .map(|r| r.start + head..r.end + head)
            .collect();
        assert_eq!(body_iterations(&h.messages), lib, "{}", h.name);
    }

    let mut table =
        String::from("ceiling   format  compacted unchanged cannot_fit minimal>ceiling\n");
    let mut all = Vec::new();
    for ceiling in CEILINGS {
        for format in FORMATS {
            let config = Config {
                transport_max_body_bytes: ceiling,
                wire_format: format,
                ..Config::default()
            };
            let mut counts = Counts::default();
            for h in &histories {
                judge(h, &config, &mut counts);
            }
            writeln!(
                table,
                "{ceiling:>8} {format:>7} {:>10} {:>9} {:>10} {:>15}",
                counts.compacted, counts.unchanged, counts.cannot_fit, counts.minimal_over
            )
            .unwrap();
            all.push((ceiling, format, counts));
        }
    }
    eprintln!("{n} real histories\n{table}");

    for (ceiling, format, c) in &all {
        assert_eq!(
            c.compacted + c.unchanged + c.cannot_fit,
            n,
            "{ceiling} {format}\n{table}"
        );
        // cannot_fit exactly where the contract allows it.
        assert_eq!(c.cannot_fit, c.minimal_over, "{ceiling} {format}\n{table}");
    }
    for (ceiling, format, c) in &all {
        if *ceiling == 16_384 {
            assert!(
                c.compacted > 0,
                "nothing compacted at 16,384 ({format})\n{table}"
            );
            if c.minimal_over > 0 {
                assert!(c.cannot_fit >= 1, "{format}\n{table}");
            }
        }
    }
}
