//! The fuzz targets' logic (issue 5): one plain function per target in
//! `fuzz/fuzz_targets/`, so that the libFuzzer binaries are a line of glue
//! and `cargo test` (tests/fuzz_smoke.rs) runs the same code on stable.
//!
//! The contract: each function takes arbitrary bytes and **panics only on
//! a real bug** — a violated invariant, a reader that panics, a size that
//! disagrees with serde_json. Bytes that do not make a case are simply
//! ignored. A panic message says what went wrong and, for `compact`,
//! prints the SPEC §7 fixture to save under `tests/fixtures/fuzz/`.
//!
//! What it does not do: generate (that is [`crate::generate`]) or judge
//! compactions (that is [`crate::oracle`]); the targets only wire them.

use arbitrary::{Arbitrary, Unstructured};
use serde_json::Value;

use crate::body::{body_bytes, body_value, value_size};
use crate::config::Config;
use crate::estimate::{tokens, tokens_for_bytes, Adr0098, ContentOnly, Estimator};
use crate::fixture::Fixture;
use crate::generate::{mix, Case, SplitMix64};
use crate::harness::run_case;
use crate::model::{
    check_well_formed, engine, parse_json, read_messages, write_messages, Document, Message, Role,
    WireFormat,
};
use crate::oracle::InvariantSet;
use crate::subject::protocol::{parse_compact_answer, parse_estimate_answer, parse_hello};
use crate::subject::{CompactAnswer, InProcess, Subject};

/// A target's function: bytes in, a panic on a real bug.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/<name>.rs` calls it
/// (`agent_request` with the `agent` feature, which the fuzz crate turns on).
pub const TARGETS: &[(&str, Target)] = &[
    ("compact", compact_target),
    ("estimate", estimate_target),
    ("parse", parse_target),
    ("wire_roundtrip", wire_roundtrip_target),
    ("body_size", body_size_target),
    ("answer", answer_target),
    #[cfg(feature = "agent")]
    ("agent_request", agent_request_target),
];

fn case(data: &[u8]) -> Option<(Case, Unstructured<'_>)> {
    let mut u = Unstructured::new(data);
    let case = Case::arbitrary(&mut u).ok()?;
    Some((case, u))
}

/// `compact`: an arbitrary case through the reference and every oracle.
/// A violation or a fault panics with the fixture JSON (SPEC §7).
pub fn compact_target(data: &[u8]) {
    compact_against(&mut InProcess::reference(), data)
}

/// [`compact_target`] against any subject (the smoke tests check the
/// crash-to-fixture path with a defective one).
pub fn compact_against(subject: &mut dyn Subject, data: &[u8]) {
    let Some((case, _)) = case(data) else { return };
    let all = InvariantSet::default_run();
    let result = run_case(subject, &case.config, &case.messages, all);
    if result.ok() {
        return;
    }
    let mut found: Vec<String> = result.violations().map(|v| v.to_string()).collect();
    found.extend(result.fault.as_ref().map(|f| f.to_string()));
    let failed = result.failed();
    let set = if failed.is_empty() {
        all
    } else {
        let mut s = InvariantSet::empty();
        failed.iter().for_each(|i| s.insert(*i));
        s
    };
    let mut fixture = Fixture::new(
        case.config,
        case.messages,
        set,
        "found by the compact fuzz target: replace with what it shows and the fix",
    );
    fixture.found = Some(found.join("; "));
    panic!(
        "the reference fails {} on a fuzzed case: {}\nsave this SPEC §7 fixture as tests/fixtures/fuzz/{}.json (fill in `see`):\n{}",
        set.names().join(", "),
        fixture.found.as_deref().unwrap_or(""),
        fixture.name,
        serde_json::to_string_pretty(&fixture.to_json()).expect("serialises"),
    );
}

/// `estimate`: SPEC §3's bounds. Per message, adr-0098 is content-only plus
/// the tool-call tokens (the JSON of `toolCalls` as serde_json writes it),
/// and the estimate of a history is the sum over its messages (so it only
/// grows when a message is appended: per-message figures are ≥ 0).
pub fn estimate_target(data: &[u8]) {
    let Some((case, mut u)) = case(data) else {
        return;
    };
    let (config, mut msgs) = (case.config, case.messages);
    let extra: String = u.arbitrary().unwrap_or_default();
    msgs.push(Message::new(Role::User, extra));
    let bpt = config.bytes_per_token;
    let mut total = 0u64;
    for (i, m) in msgs.iter().enumerate() {
        let adr = Adr0098.message_tokens(m, &config);
        let content = ContentOnly.message_tokens(m, &config);
        let images = crate::estimate::images::content_image_tokens(&m.content, config.wire_format);
        assert_eq!(
            content,
            tokens(&m.content.text(), bpt) + images,
            "message {i}: text tokens plus image tokens"
        );
        let calls = match m.tool_calls.as_deref() {
            Some(c) if !c.is_empty() => {
                let json = serde_json::to_vec(&engine::tool_calls_to_value(c)).expect("json");
                tokens_for_bytes(json.len() as u64, bpt)
            }
            _ => 0,
        };
        assert!(
            adr >= content,
            "message {i}: adr-0098 {adr} < content-only {content}"
        );
        assert!(
            adr >= calls,
            "message {i}: adr-0098 {adr} < tool-call tokens {calls}"
        );
        assert_eq!(
            adr,
            content + calls,
            "message {i}: adr-0098 is not content + calls"
        );
        total += adr;
        // The history's estimate against the running sum, on prefixes of
        // 1, 2, 4, 8, … messages and the whole: linear, where every prefix
        // would be quadratic (histories here reach thousands of messages).
        if (i + 1).is_power_of_two() || i + 1 == msgs.len() {
            let prefix = Adr0098.tokens(&mut msgs[..=i].iter(), &config);
            assert_eq!(
                prefix, total,
                "the estimate of messages 0..={i} is not the sum of their estimates"
            );
        }
    }
    let (per, sum) = Adr0098.per_message(&msgs, &config);
    assert_eq!((per.iter().sum::<u64>(), sum), (total, total));
}

/// `parse`: arbitrary bytes as a history in each format, a config, a
/// fixture and a protocol answer: an error value or a valid history,
/// never a panic; what parses writes back and re-reads to the same JSON.
pub fn parse_target(data: &[u8]) {
    for format in [None].into_iter().chain(WireFormat::ALL.map(Some)) {
        let Ok(doc) = Document::parse(data, format) else {
            continue;
        };
        if let Err(e) = check_well_formed(&doc.messages) {
            panic!("Document::parse({format:?}) accepted an ill-formed history: {e}");
        }
        let written = doc.to_value();
        // SPEC §8: an object's other fields are kept (`system` is the
        // history's own only in the anthropic format).
        if let (Ok(Value::Object(input)), Value::Object(out)) = (parse_json(data), &written) {
            let lost = input.keys().find(|k| {
                !out.contains_key(*k)
                    && *k != "messages"
                    && !(*k == "system" && doc.format == WireFormat::Anthropic)
            });
            assert!(
                lost.is_none(),
                "{}: the document lost its field {lost:?}",
                doc.format
            );
        }
        let back = Document::from_value(written.clone(), Some(doc.format))
            .unwrap_or_else(|e| panic!("{} does not re-read what it wrote: {e}", doc.format));
        assert_eq!(
            back.to_value(),
            written,
            "{}: write→read→write moved",
            doc.format
        );
    }
    if let Ok(config) = Config::from_json(data) {
        let again = Config::from_value(config.to_value()).expect("a valid config re-reads");
        assert_eq!(again, config, "config round trip");
    }
    let Ok(value) = parse_json(data) else { return };
    let _ = parse_hello(&value);
    if let Ok(fixture) = Fixture::from_json(value.clone()) {
        let again = Fixture::from_json(fixture.to_json()).expect("a fixture re-reads");
        assert_eq!(
            again.messages.len(),
            fixture.messages.len(),
            "fixture round trip"
        );
    }
    let Value::Object(obj) = &value else { return };
    let _ = parse_estimate_answer(obj);
    for format in WireFormat::ALL {
        if let Ok(CompactAnswer::Messages(msgs)) = parse_compact_answer(obj, format) {
            let (system, arr) = write_messages(format, &msgs);
            read_messages(format, system.as_ref(), &arr)
                .unwrap_or_else(|e| panic!("{format}: an answer does not re-read: {e}"));
        }
    }
}

/// SPEC §1.3: roles, order, text, images, ids, names and arguments. Anthropic has
/// no system role after the head: there a system message reads back as user.
fn assert_same_history(a: &[Message], b: &[Message], anthropic: bool, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: message count");
    let head = a.iter().take_while(|m| m.role == Role::System).count();
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let role = match x.role {
            Role::System if anthropic && i >= head => Role::User,
            r => r,
        };
        assert_eq!(role, y.role, "{what}: role of message {i}");
        assert_eq!(x.content.text(), y.content.text(), "{what}: text of {i}");
        assert!(
            x.content.images().eq(y.content.images()),
            "{what}: images of {i}"
        );
        assert_eq!(x.tool_call_id, y.tool_call_id, "{what}: toolCallId of {i}");
        let calls = |m: &Message| -> Vec<(String, String, std::sync::Arc<Value>)> {
            let c = m.calls().iter();
            c.map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                .collect()
        };
        assert_eq!(calls(x), calls(y), "{what}: calls of message {i}");
    }
}

fn through(format: WireFormat, msgs: &[Message]) -> Vec<Message> {
    let (system, arr) = write_messages(format, msgs);
    let back = read_messages(format, system.as_ref(), &arr)
        .unwrap_or_else(|e| panic!("{format} does not read what it wrote: {e}"));
    let (system2, arr2) = write_messages(format, &back);
    assert_eq!(
        (system2, arr2),
        (system, arr),
        "{format}: write→read→write moved"
    );
    back
}

/// `wire_roundtrip`: engine → openai → anthropic → engine keeps what
/// SPEC §1.3 says at every step, and each format's write→read→write is a
/// fixed point (also on histories carrying another format's wire hints).
pub fn wire_roundtrip_target(data: &[u8]) {
    let Some((case, _)) = case(data) else { return };
    // A tool's images travel after the results in openai (SPEC §1.4): the
    // round trip starts from the history as that format carries it.
    let msgs = crate::model::openai::carry_tool_images(&case.messages);
    let openai = through(WireFormat::Openai, &msgs);
    assert_same_history(&msgs, &openai, false, "engine → openai");
    let anthropic = through(WireFormat::Anthropic, &openai);
    assert_same_history(&msgs, &anthropic, true, "openai → anthropic");
    let engine = through(WireFormat::Engine, &anthropic);
    assert_same_history(&anthropic, &engine, false, "anthropic → engine");
    for format in WireFormat::ALL {
        through(format, &engine);
    }
}

/// `body_size`: the exact body size equals the length of serde_json's
/// serialisation, in every format and with a fuzzed envelope — on the
/// case, on the case read back from each format (messages carrying that
/// format's wire hints: argument text as read, block layouts), and on the
/// rest of the bytes when they hold a history; and `value_size` agrees
/// with serde_json on any JSON the bytes hold.
pub fn body_size_target(data: &[u8]) {
    let Some((case, u)) = case(data) else { return };
    let rest = u.take_rest();
    let fuzzed = parse_json(rest).ok();
    if let Some(v) = &fuzzed {
        let len = serde_json::to_vec(v).expect("json").len() as u64;
        assert_eq!(value_size(v), len, "value_size of {v}");
    }
    let mut histories = vec![case.messages.clone()];
    for format in [WireFormat::Openai, WireFormat::Anthropic] {
        let (system, arr) = write_messages(format, &case.messages);
        if let Ok(back) = read_messages(format, system.as_ref(), &arr) {
            histories.push(back);
        }
    }
    let mut envelopes = vec![case.config.envelope.clone()];
    match fuzzed.map(|v| (Document::from_value(v.clone(), None), v)) {
        Some((Ok(doc), _)) => histories.push(doc.messages),
        Some((Err(_), Value::Object(obj))) => envelopes.push(obj),
        _ => {}
    }
    for format in WireFormat::ALL {
        for envelope in &envelopes {
            let config = Config {
                wire_format: format,
                envelope: envelope.clone(),
                ..case.config.clone()
            };
            for (h, msgs) in histories.iter().enumerate() {
                let len = serde_json::to_vec(&body_value(&config, msgs))
                    .expect("json")
                    .len();
                assert_eq!(
                    body_bytes(&config, msgs),
                    len as u64,
                    "body size in {format} of history {h}"
                );
            }
        }
    }
}

/// Which reader took an `answer` input's line (`subject::process`): the
/// echo of the history sent, the one-pass engine reader, serde_json's
/// `Value`, or none (not a JSON object line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerReader {
    Echo,
    Fast,
    Value,
    Nothing,
}

/// What one `answer` input exercised, for the smoke test's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerRun {
    /// The line was made from the request's own history (an echo, a
    /// compaction, the request line), mutated or not; else raw bytes.
    pub shaped: bool,
    /// The request was `compact` in the engine format: the echo and
    /// one-pass readers apply.
    pub engine_compact: bool,
    pub reader: AnswerReader,
    /// A reply, not a fault.
    pub replied: bool,
}

/// `answer`: arbitrary bytes as a subject's answer line to a request made
/// from a generated case, read as `ProcessSubject` reads it
/// (`subject::process::Exchange`: the request written by `Prepared`, the
/// echo fast path, the one-pass engine reader with the messages it wrote
/// known, then serde_json's `Value`). It never panics, gives a reply or a
/// fault, and agrees with the plain reading (the whole line a `Value`, the
/// id checked, then `parse_compact_reply` or `parse_estimate_answer`): the
/// same messages (`==` and written alike), or a fault of the same kind.
///
/// The bytes: four of choices (the format, `compact` or `estimate`, the
/// ids, how the line is made), the case (`Arbitrary`, from as many bytes
/// as twice the fourth), then the line — the rest as it is, or (7 in 8)
/// an answer made from the request's own history (its echo, the request
/// line itself, a compaction, the echo with its `id` last, an error, an
/// estimate) and a few mutations of it: whitespace, escapes spelled
/// otherwise (`\u0041`, `\/`), fields added or repeated (`null`, `error`,
/// a second `messages` or `id`), the id respelled, fuzz bytes spliced in,
/// a byte replaced, a cut, a string emptied.
pub fn answer_target(data: &[u8]) {
    let _ = answer_run(data);
}

/// [`answer_target`], saying what the input exercised (`None`: the bytes
/// made no case).
pub fn answer_run(data: &[u8]) -> Option<AnswerRun> {
    use crate::subject::{Exchange, ReadBy, Request};
    // Four bytes of choices, then the case's bytes (as many as the fourth
    // byte says, twice over), then the answer: the line itself, or what
    // makes it from the history (`seed_corpus.py` writes real lines).
    let head = |k: usize| data.get(k).copied().unwrap_or(0);
    let (pick, ids, mode) = (head(0), head(1), head(2));
    let case_end = (4 + 2 * head(3) as usize).min(data.len());
    let case =
        Case::arbitrary(&mut Unstructured::new(data.get(4..case_end).unwrap_or(&[]))).ok()?;
    let rest = data.get(case_end..).unwrap_or(&[]);
    // Bytes run out (zeros from here on): an engine `compact`, echoed.
    let format = match pick % 8 {
        6 => WireFormat::Openai,
        7 if crate::generate::anthropic_ready() => WireFormat::Anthropic,
        _ => WireFormat::Engine,
    };
    let compact = pick / 8 % 8 != 7;
    let first_id = 1 + u64::from(ids % 4);
    let id = first_id + u64::from(ids / 4 % 3);
    let (config, msgs) = (&case.config, &case.messages[..]);
    let req = match compact {
        true => Request::Compact(config, msgs),
        false => Request::Estimate(config, msgs),
    };
    let exchange = Exchange::new(format, &req, id, first_id);
    let shaped = mode % 8 != 7;
    let line = match shaped {
        false => rest.to_vec(),
        true => {
            // Few bytes left: the mutations are drawn from a generator
            // seeded by the input, so that every input still makes one.
            let mut program = rest.to_vec();
            if program.len() < 32 {
                let mut rng = SplitMix64::new(data.iter().fold(0xa25e, |h, &b| mix(h, b as u64)));
                program.extend((0..8).flat_map(|_| rng.next_u64().to_le_bytes()));
            }
            let mut u = Unstructured::new(&program);
            shaped_answer(mode / 8, &mut u, format, &req, id, &exchange.line)
        }
    };
    let (got, by) = exchange.reply(&req, &line);
    let want = answer_by_value(&line, format, &req, id, first_id);
    let shown = || String::from_utf8_lossy(&line[..line.len().min(600)]).into_owned();
    match (&got, &want) {
        (Ok(a), Ok(b)) => assert_same_reply(a, b, by, &shown),
        (Err(a), Err(b)) => assert_eq!(
            a.kind,
            b.kind,
            "read by {by:?}: fault {a} where the plain reading says {b} (line {:?})",
            shown()
        ),
        (Ok(a), Err(b)) => panic!(
            "read by {by:?}: a reply ({}) where the plain reading faults: {b} (line {:?})",
            describe_reply(a),
            shown()
        ),
        (Err(a), Ok(b)) => panic!(
            "read by {by:?}: fault {a} where the plain reading replies {} (line {:?})",
            describe_reply(b),
            shown()
        ),
    }
    let reader = match by {
        ReadBy::Echo => AnswerReader::Echo,
        ReadBy::Fast => AnswerReader::Fast,
        ReadBy::Value => AnswerReader::Value,
        ReadBy::Nothing => AnswerReader::Nothing,
    };
    Some(AnswerRun {
        shaped,
        engine_compact: compact && format == WireFormat::Engine,
        reader,
        replied: got.is_ok(),
    })
}

fn describe_reply(r: &crate::subject::Reply) -> String {
    match r {
        crate::subject::Reply::Compact(a) => a.describe(),
        crate::subject::Reply::Estimate(e) => format!("{e:?}"),
    }
}

fn assert_same_reply(
    a: &crate::subject::Reply,
    b: &crate::subject::Reply,
    by: crate::subject::ReadBy,
    shown: &dyn Fn() -> String,
) {
    use crate::subject::Reply;
    if let (
        Reply::Compact(CompactAnswer::Messages(x)),
        Reply::Compact(CompactAnswer::Messages(y)),
    ) = (a, b)
    {
        assert_eq!(
            x.len(),
            y.len(),
            "read by {by:?}: message count (line {:?})",
            shown()
        );
        for (i, (m, n)) in x.iter().zip(y).enumerate() {
            assert!(
                m == n && crate::model::engine_ser::written_alike(m, n),
                "read by {by:?}: message {i} is {m:?} where the plain reading has {n:?} (line {:?})",
                shown()
            );
        }
        return;
    }
    assert_eq!(a, b, "read by {by:?} (line {:?})", shown());
}

/// The plain reading of an answer line, for [`answer_run`]'s differential:
/// the whole line as a `Value`, its id checked as docs/protocol.md says
/// (the request's: a reply; an earlier one of the same process: an
/// unsolicited line; anything else: a wrong id), then the public readers.
fn answer_by_value(
    line: &[u8],
    format: WireFormat,
    req: &crate::subject::Request<'_>,
    id: u64,
    first_id: u64,
) -> Result<crate::subject::Reply, crate::subject::Fault> {
    use crate::subject::{EstimateReply, Fault, FaultKind, Reply, Request};
    let fields = match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(fields)) => fields,
        _ => return Err(Fault::new(FaultKind::MalformedLine, "not a JSON object")),
    };
    match fields.get("id").and_then(Value::as_u64) {
        Some(got) if got == id => {}
        Some(got) if got < id && got >= first_id => {
            return Err(Fault::new(FaultKind::UnsolicitedLine, "an earlier id"))
        }
        _ => return Err(Fault::new(FaultKind::WrongId, "another id")),
    }
    match req {
        Request::Compact(..) => {
            crate::subject::protocol::parse_compact_reply(Value::Object(fields), format)
                .map(Reply::Compact)
        }
        Request::Estimate(_, msgs) => {
            let reply = parse_estimate_answer(&fields)?;
            if let EstimateReply::Tokens(t) = &reply {
                if t.per_message
                    .as_ref()
                    .is_some_and(|p| p.len() != msgs.len())
                {
                    return Err(Fault::new(FaultKind::Protocol, "perMessage count"));
                }
            }
            Ok(Reply::Estimate(reply))
        }
    }
}

/// Where each byte of `line` is inside a JSON string (its quotes
/// included): scanned as JSON text, a `\` skipping the byte after it.
fn in_string(line: &[u8]) -> Vec<bool> {
    let (mut out, mut inside, mut escaped) = (Vec::with_capacity(line.len()), false, false);
    for &b in line {
        let quote = b == b'"' && !escaped;
        out.push(inside || quote);
        escaped = inside && !escaped && b == b'\\';
        if quote {
            inside = !inside;
        }
    }
    out
}

/// An answer made from the request's own history (`base` chooses which),
/// then mutated as the remaining bytes say.
fn shaped_answer(
    base: u8,
    u: &mut Unstructured<'_>,
    format: WireFormat,
    req: &crate::subject::Request<'_>,
    id: u64,
    request_line: &[u8],
) -> Vec<u8> {
    use crate::subject::protocol::{estimate_answer, write_compact_answer};
    use crate::subject::{EstimateAnswer, EstimateReply};
    let msgs = req.messages();
    let id_value = Value::from(id);
    let mut line = Vec::new();
    match base % 8 {
        // The history handed back, as the reference writes it (an echo).
        0..=2 => write_compact_answer(
            &mut line,
            &id_value,
            &CompactAnswer::Messages(msgs.to_vec()),
            format,
        ),
        // The request line itself: `op` and `config` beside the history.
        3 => line.extend_from_slice(request_line),
        // A compaction: some messages left out.
        4 => {
            let keep: Vec<Message> = msgs
                .iter()
                .filter(|_| !u.arbitrary::<u8>().unwrap_or(0).is_multiple_of(4))
                .cloned()
                .collect();
            write_compact_answer(&mut line, &id_value, &CompactAnswer::Messages(keep), format);
        }
        // An error, alone or beside the history.
        5 => {
            let answer = CompactAnswer::CannotFit {
                message: "too long".into(),
            };
            write_compact_answer(&mut line, &id_value, &answer, format);
        }
        // An estimate (a figure a message, or not).
        6 => {
            let per: Vec<u64> = msgs
                .iter()
                .map(|m| m.content.text_len() as u64 / 4)
                .collect();
            let reply = EstimateReply::Tokens(EstimateAnswer {
                tokens: per.iter().sum(),
                per_message: Some(per),
            });
            line = estimate_answer(&id_value, &reply).to_string().into_bytes();
        }
        // The echo with its `id` after the messages.
        _ => {
            write_compact_answer(
                &mut line,
                &id_value,
                &CompactAnswer::Messages(msgs.to_vec()),
                format,
            );
            if let Some(rest) = line.strip_prefix(format!("{{\"id\":{id},").as_bytes()) {
                let mut moved = b"{".to_vec();
                moved.extend_from_slice(rest.strip_suffix(b"\n").unwrap_or(rest));
                moved.truncate(moved.len() - 1);
                moved.extend_from_slice(format!(",\"id\":{id}}}").as_bytes());
                line = moved;
            }
        }
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let mutations = [0, 0, 1, 1, 1, 2, 2, 3][u.arbitrary::<u8>().unwrap_or(0) as usize % 8];
    for _ in 0..mutations {
        mutate_line(&mut line, u, id);
    }
    line
}

/// Fields put into an answer's objects: nulls, repeats, an `error`.
const ADDED_FIELDS: [&str; 12] = [
    "\"x\":null",
    "\"error\":null",
    "\"error\":{\"kind\":\"cannot_fit\",\"message\":\"m\"}",
    "\"messages\":[]",
    "\"messages\":null",
    "\"id\":0",
    "\"content\":null",
    "\"role\":\"user\"",
    "\"toolCalls\":null",
    "\"pinned\":false",
    "\"system\":\"s\"",
    "\"toolCallId\":\"t\"",
];

/// One mutation of an answer line, as `u` chooses.
fn mutate_line(line: &mut Vec<u8>, u: &mut Unstructured<'_>, id: u64) {
    let what = u.arbitrary::<u8>().unwrap_or(0);
    let strings = in_string(line);
    // The `n`-th position (mod their count) where `pred` holds.
    let nth = |u: &mut Unstructured<'_>, pred: &dyn Fn(usize) -> bool| -> Option<usize> {
        let at: Vec<usize> = (0..line.len()).filter(|&i| pred(i)).collect();
        let k = u.arbitrary::<u32>().unwrap_or(0) as usize;
        (!at.is_empty()).then(|| at[k % at.len()])
    };
    match what % 16 {
        // Whitespace between tokens.
        0 | 1 => {
            if let Some(at) = nth(u, &|i| !strings[i]) {
                let ws = [b" ".as_slice(), b"\t", b"\r", b"  \r\t"][what as usize / 16 % 4];
                line.splice(at..at, ws.iter().copied());
            }
        }
        // A character of a string spelled as an escape.
        2..=4 => {
            let escapable = |i: usize| {
                strings[i]
                    && line[i].is_ascii()
                    && line[i] != b'"'
                    && line[i] != b'\\'
                    && (i == 0 || line[i - 1] != b'\\' || !strings[i - 1])
                    && strings.get(i + 1) == Some(&true)
            };
            if let Some(at) = nth(u, &escapable) {
                let b = line[at];
                let escape = match (b, what / 16 % 3) {
                    (b'/', 0) => "\\/".to_owned(),
                    (_, 1) => format!("\\u{:04X}", b),
                    _ => format!("\\u{:04x}", b),
                };
                line.splice(at..=at, escape.bytes());
            }
        }
        // A field added at the start of an object.
        5 | 6 => {
            if let Some(at) = nth(u, &|i| !strings[i] && line[i] == b'{') {
                let field = ADDED_FIELDS[what as usize / 16 % ADDED_FIELDS.len()];
                let close = line.get(at + 1) == Some(&b'}');
                let text = format!("{field}{}", if close { "" } else { "," });
                line.splice(at + 1..at + 1, text.bytes());
            }
        }
        // A field added at the end of the line's object.
        7 | 8 => {
            if line.last() == Some(&b'}') {
                let field = ADDED_FIELDS[what as usize / 16 % ADDED_FIELDS.len()];
                let at = line.len() - 1;
                line.splice(at..at, format!(",{field}").bytes());
            }
        }
        // The id spelled otherwise.
        9 | 10 => {
            let from = format!("\"id\":{id}");
            if let Some(at) = line.windows(from.len()).position(|w| w == from.as_bytes()) {
                let spelled = [
                    format!("{id}.0"),
                    format!("{id}e0"),
                    format!("\"{id}\""),
                    format!("{}", id + 1),
                    format!("{}", id.saturating_sub(1)),
                    "null".into(),
                    format!("{id}0"),
                    format!(" {id} "),
                ][what as usize / 16 % 8]
                    .clone();
                line.splice(at + 5..at + from.len(), spelled.bytes());
            }
        }
        // Fuzz bytes spliced in.
        11 => {
            let n = u.arbitrary::<u8>().unwrap_or(0) as usize % 8 + 1;
            let bytes: Vec<u8> = (0..n).map(|_| u.arbitrary::<u8>().unwrap_or(0)).collect();
            let at = u.arbitrary::<u32>().unwrap_or(0) as usize % (line.len() + 1);
            line.splice(at..at, bytes);
        }
        // A byte replaced.
        12 if !line.is_empty() => {
            let at = u.arbitrary::<u32>().unwrap_or(0) as usize % line.len();
            line[at] = u.arbitrary::<u8>().unwrap_or(0);
        }
        // Cut.
        13 if !line.is_empty() => {
            let at = u.arbitrary::<u32>().unwrap_or(0) as usize % line.len();
            line.truncate(at);
        }
        // A string emptied: a value (or a key) changed, the shape kept.
        _ => {
            let opens = |i: usize| strings[i] && line[i] == b'"' && (i == 0 || !strings[i - 1]);
            if let Some(at) = nth(u, &opens) {
                let closes = |j: usize| line[j] == b'"' && strings.get(j + 1) != Some(&true);
                if let Some(end) = (at + 1..line.len()).find(|&j| closes(j)) {
                    line.drain(at + 1..end);
                }
            }
        }
    }
}

/// What one `agent_request` input exercised, for the smoke test's counts.
#[cfg(feature = "agent")]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentRun {
    /// The dialects whose reader took the body.
    pub read: usize,
    /// Model turns answered `200` (the body's own, and with `stream` flipped).
    pub answered: usize,
    /// Of those, streamed (SSE).
    pub streamed: usize,
    /// Answers appended to the body as the agent would and read back.
    pub read_back: usize,
    /// Requests refused: `413` or over the window.
    pub refused: usize,
    /// Summary requests (by the summary matcher).
    pub summaries: usize,
}

/// The script every `agent_request` input's model plays: two turns (two
/// parallel calls, then one), summaries under and over what is asked.
#[cfg(feature = "agent")]
fn agent_script() -> crate::agent::Script {
    serde_json::from_value(serde_json::json!({
        "task": "Task: read the notes and say what they hold",
        "final": "Done: every file was read.",
        "summaries": [40, 130],
        "turns": [
            {"text": "Reading two files.", "calls": [
                {"id": "call_0_0", "file": "t000-0.txt", "content": "alpha"},
                {"id": "call_0_1", "file": "t000-1.txt", "content": "beta"}]},
            {"calls": [{"id": "call_1_0", "file": "t001-0.txt", "content": "gamma"}]}
        ]
    }))
    .expect("the script reads")
}

/// `agent_request`: arbitrary bytes as the body of a request to agent
/// mode's endpoint (SPEC §9). The first byte chooses the stage (a window
/// and a ceiling small enough to refuse, declared or default tools, every
/// dialect or one, a declared summary pattern, the gateway); the rest is
/// the body, read by each dialect (`Dialect::read`) and, for each, played
/// as `agent::endpoint` plays it: `Play::answer` (recording, the summary
/// matcher, the size and token estimate, the ceiling and window, the
/// turn, rendering in the dialect), with the same body again (a retry),
/// the body with `stream` flipped (both renderings), Anthropic's token
/// count, then the judges over the trace (`agent::judge::judge`).
/// Nothing panics on any body, and:
///
/// - reading is deterministic, and a readable body re-serialised by
///   serde_json (what `read_body` made of it) reads to the same request;
/// - the endpoint reads a body exactly when its dialect's reader does
///   (`400` otherwise, or `413` over the ceiling);
/// - a JSON answer is JSON, an SSE answer is events whose data is JSON
///   (or `[DONE]`), and it is SSE exactly when the request asked to stream;
/// - the streamed answer carries the same turn (text, calls' ids, names
///   and arguments) as the JSON one;
/// - the JSON answer, appended to the body as an agent appends it, reads
///   back, its turn the last message;
/// - a retry of a loop request is answered the same turn;
/// - Anthropic's token count equals the estimate recorded for the request.
#[cfg(feature = "agent")]
pub fn agent_request_target(data: &[u8]) {
    let _ = agent_request_run(data);
}

/// [`agent_request_target`], saying what the input exercised.
#[cfg(feature = "agent")]
pub fn agent_request_run(data: &[u8]) -> AgentRun {
    use crate::agent::dialect::read_body;
    use crate::agent::play::{Play, Received, Stage, SummaryMatcher};
    use crate::agent::tools::ToolSpec;
    use crate::agent::{judge::judge, Dialect, Gateway, Settings};
    use std::sync::Arc;

    let (setup, body) = match data.split_first() {
        Some((s, rest)) => (*s, rest),
        None => (0, data),
    };
    let mut settings = Settings::default();
    if setup & 1 != 0 {
        settings.config.context_window = 64;
    }
    if setup & 2 != 0 {
        settings.config.transport_max_body_bytes = 256;
    }
    let tools: Vec<ToolSpec> = match setup & 4 {
        0 => Vec::new(),
        _ => vec!["bash:command=cat {path}".parse().expect("a tool spec")],
    };
    let only = (setup & 8 != 0).then_some(Dialect::ALL[(setup as usize >> 6) % 3]);
    let summary = SummaryMatcher::new((setup & 16 != 0).then_some("(?i)recap|notes"))
        .expect("the pattern compiles");
    let stage = Arc::new(Stage {
        settings,
        gateway: Gateway::ALL[(setup as usize >> 5) % 4],
        dialect: only,
        tools,
        summary,
        model: "m".into(),
    });
    let script = Arc::new(agent_script());
    let new_play = || Play::new(stage.clone(), script.clone(), "/workspace".into());
    let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    let mut run = AgentRun::default();

    for dialect in Dialect::ALL {
        let read = dialect.read(body);
        let again = dialect.read(body);
        assert_eq!(
            format!("{read:?}"),
            format!("{again:?}"),
            "{dialect}: reading the same body twice differs"
        );
        if let Ok(request) = &read {
            run.read += 1;
            let value = read_body(body).expect("a readable body is JSON");
            let rewritten = serde_json::to_vec(&value).expect("json");
            let back = dialect
                .read(&rewritten)
                .unwrap_or_else(|e| panic!("{dialect}: the body re-serialised does not read: {e}"));
            assert_eq!(
                format!("{request:?}"),
                format!("{back:?}"),
                "{dialect}: the body re-serialised reads otherwise"
            );
        }
        let path = match dialect {
            Dialect::OpenaiChat => "/v1/chat/completions",
            Dialect::OpenaiResponses => "/v1/responses",
            Dialect::Anthropic => "/v1/messages",
        };
        let mut play = new_play();
        let rendered = play.answer(
            "POST",
            path,
            headers.clone(),
            Received::Whole(body.to_vec()),
        );
        let retry = play.answer(
            "POST",
            path,
            headers.clone(),
            Received::Whole(body.to_vec()),
        );
        let count = play.answer(
            "POST",
            "/v1/messages/count_tokens",
            headers.clone(),
            Received::Whole(body.to_vec()),
        );
        let trace = play.into_trace();
        let (first, second) = (&trace.requests[0], &trace.requests[1]);
        if only.is_some_and(|d| d != dialect) {
            assert_eq!(
                rendered.status, 404,
                "{dialect} when only {only:?} is played"
            );
        } else {
            // The endpoint reads the body exactly when the reader does (a
            // fresh play knows no `previous_response_id`).
            let unknown_previous = read
                .as_ref()
                .is_ok_and(|r| r.previous_response_id.is_some());
            let readable = read.is_ok() && !unknown_previous;
            assert_eq!(
                (first.request.is_some(), first.unreadable.is_none()),
                (readable, readable),
                "{dialect}: the endpoint read the body ({:?}) where the reader says {:?}",
                first.unreadable,
                read.as_ref().err()
            );
            let allowed: &[u16] = match readable {
                true => &[200, 413, 400],
                false => &[400, 413],
            };
            assert!(
                allowed.contains(&rendered.status),
                "{dialect}: status {} (readable: {readable})",
                rendered.status
            );
            if rendered.status == 400 && readable {
                assert_eq!(first.answer, crate::agent::trace::Answer::OverWindow);
            }
        }
        check_rendered(dialect, &rendered);
        check_rendered(dialect, &retry);
        if first.refused() {
            run.refused += 1;
        }
        if first.kind == crate::agent::trace::Kind::Summary {
            run.summaries += 1;
        }
        if first.kind == crate::agent::trace::Kind::Loop && rendered.status == 200 {
            assert_eq!(
                first.answer, second.answer,
                "{dialect}: a retry is answered otherwise"
            );
        }
        let counted = parse_json(&count.body).expect("the token count is JSON");
        if first.request.is_some() && dialect == Dialect::Anthropic {
            assert_eq!(
                counted["input_tokens"].as_u64(),
                Some(first.tokens),
                "the token count is not the recorded estimate"
            );
        }
        judge(&trace, &script, &stage.settings);

        let Ok(request) = read else { continue };
        if rendered.status != 200 {
            continue;
        }
        run.answered += 1;
        // The same body with `stream` flipped, to a fresh play: the other
        // rendering of the same turn.
        let mut flipped = read_body(body).expect("a readable body is JSON");
        flipped["stream"] = Value::Bool(!request.stream);
        let flipped_bytes = serde_json::to_vec(&flipped).expect("json");
        let other = new_play().answer(
            "POST",
            path,
            headers.clone(),
            Received::Whole(flipped_bytes),
        );
        if other.status != 200 {
            // Over the ceiling by the bytes `stream` added.
            continue;
        }
        check_rendered(dialect, &other);
        run.answered += 1;
        run.streamed += 1;
        let (json, sse) = match request.stream {
            true => (&other, &rendered),
            false => (&rendered, &other),
        };
        let answer = parse_json(&json.body).expect("checked");
        let from_json = turn_of_answer(dialect, &answer);
        let from_sse = turn_of_events(dialect, &sse.body);
        assert_eq!(
            from_json, from_sse,
            "{dialect}: the streamed answer carries another turn"
        );
        // The answer appended as the agent appends it, read back.
        if request.previous_response_id.is_some() {
            continue;
        }
        let mut next = read_body(body).expect("a readable body is JSON");
        append_answer(dialect, &mut next, &answer);
        let next = dialect
            .read(&serde_json::to_vec(&next).expect("json"))
            .unwrap_or_else(|e| {
                panic!("{dialect}: the body with ctxgate's answer appended does not read: {e}")
            });
        run.read_back += 1;
        let last = next.messages.last().expect("the answer is a message");
        assert_eq!(
            last.role,
            Role::Assistant,
            "{dialect}: the answer read back"
        );
        let calls: Vec<(String, String, Value)> = last
            .calls()
            .iter()
            .map(|c| (c.id.clone(), c.name.clone(), (*c.arguments).clone()))
            .collect();
        assert!(
            calls.ends_with(&from_json.1),
            "{dialect}: the answer's calls {:?} read back as {calls:?}",
            from_json.1
        );
        assert!(
            last.content.text().contains(from_json.0.as_str()),
            "{dialect}: the answer's text read back as {:?}",
            last.content.text()
        );
    }
    run
}

/// A rendered answer is what its content type says: JSON, or SSE events
/// whose data is JSON (`[DONE]` aside).
#[cfg(feature = "agent")]
fn check_rendered(dialect: crate::agent::Dialect, r: &crate::agent::dialect::Rendered) {
    let kind = r
        .headers
        .iter()
        .find(|(k, _)| k == "content-type")
        .map_or("", |(_, v)| v.as_str());
    if kind.starts_with("application/json") {
        if let Err(e) = parse_json(&r.body) {
            panic!("{dialect}: a JSON answer ({}) is not JSON: {e}", r.status);
        }
    } else if kind.starts_with("text/event-stream") {
        assert_eq!(r.status, 200, "{dialect}: a streamed refusal");
        for (k, data) in sse_events(&r.body) {
            if data != "[DONE]" {
                if let Err(e) = parse_json(data.as_bytes()) {
                    panic!("{dialect}: event {k}'s data is not JSON: {e}");
                }
            }
        }
    }
}

/// The `data:` of each SSE event.
#[cfg(feature = "agent")]
fn sse_events(body: &[u8]) -> Vec<(usize, String)> {
    let text = std::str::from_utf8(body).expect("an SSE body is UTF-8");
    assert!(
        text.ends_with("\n\n"),
        "an SSE body ends with an empty line"
    );
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .enumerate()
        .map(|(k, event)| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect();
            assert_eq!(data.len(), 1, "event {k} has one data line: {event:?}");
            (k, data[0].to_owned())
        })
        .collect()
}

/// A turn as an answer carries it: its text and its calls (id, name,
/// arguments).
#[cfg(feature = "agent")]
type TurnSeen = (String, Vec<(String, String, Value)>);

#[cfg(feature = "agent")]
fn arguments_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("arguments {text:?} are not JSON: {e}"))
}

#[cfg(feature = "agent")]
fn turn_of_answer(dialect: crate::agent::Dialect, a: &Value) -> TurnSeen {
    use crate::agent::Dialect;
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    match dialect {
        Dialect::OpenaiChat => {
            let m = &a["choices"][0]["message"];
            let calls = m["tool_calls"].as_array().into_iter().flatten();
            let calls = calls
                .map(|c| {
                    let f = &c["function"];
                    (
                        s(&c["id"]),
                        s(&f["name"]),
                        arguments_of(f["arguments"].as_str().unwrap()),
                    )
                })
                .collect();
            (s(&m["content"]), calls)
        }
        Dialect::Anthropic => {
            let blocks = a["content"].as_array().expect("content blocks");
            let text = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .map(|b| s(&b["text"]));
            let calls = blocks.iter().filter(|b| b["type"] == "tool_use");
            let calls = calls.map(|b| (s(&b["id"]), s(&b["name"]), b["input"].clone()));
            (text.collect(), calls.collect())
        }
        Dialect::OpenaiResponses => {
            let items = a["output"].as_array().expect("output items");
            let text = items.iter().filter(|i| i["type"] == "message");
            let text = text.map(|i| s(&i["content"][0]["text"]));
            let calls = items.iter().filter(|i| i["type"] == "function_call");
            let calls = calls.map(|i| {
                let args = arguments_of(i["arguments"].as_str().unwrap());
                (s(&i["call_id"]), s(&i["name"]), args)
            });
            (text.collect(), calls.collect())
        }
    }
}

/// The turn a stream of events builds, as each provider's SDK builds it.
#[cfg(feature = "agent")]
fn turn_of_events(dialect: crate::agent::Dialect, body: &[u8]) -> TurnSeen {
    use crate::agent::Dialect;
    let events: Vec<Value> = sse_events(body)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(&d).expect("checked"))
        .collect();
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    match dialect {
        Dialect::OpenaiChat => {
            for e in &events {
                let Some(delta) = e["choices"].get(0).map(|c| &c["delta"]) else {
                    continue;
                };
                text.push_str(delta["content"].as_str().unwrap_or_default());
                for c in delta["tool_calls"].as_array().into_iter().flatten() {
                    let i = c["index"].as_u64().expect("an index") as usize;
                    if i == calls.len() {
                        calls.push((s(&c["id"]), s(&c["function"]["name"]), String::new()));
                    }
                    calls[i]
                        .2
                        .push_str(c["function"]["arguments"].as_str().unwrap_or_default());
                }
            }
        }
        Dialect::Anthropic => {
            for e in &events {
                match e["type"].as_str() {
                    Some("content_block_start") if e["content_block"]["type"] == "tool_use" => {
                        let b = &e["content_block"];
                        calls.push((s(&b["id"]), s(&b["name"]), String::new()));
                    }
                    Some("content_block_delta") => match e["delta"]["type"].as_str() {
                        Some("text_delta") => text.push_str(&s(&e["delta"]["text"])),
                        _ => {
                            let last = calls.last_mut().expect("a tool_use block");
                            last.2.push_str(&s(&e["delta"]["partial_json"]));
                        }
                    },
                    _ => {}
                }
            }
        }
        Dialect::OpenaiResponses => {
            for e in &events {
                match e["type"].as_str() {
                    Some("response.output_text.delta") => text.push_str(&s(&e["delta"])),
                    Some("response.output_item.added") if e["item"]["type"] == "function_call" => {
                        let i = &e["item"];
                        calls.push((s(&i["call_id"]), s(&i["name"]), String::new()));
                    }
                    Some("response.function_call_arguments.delta") => {
                        let last = calls.last_mut().expect("a function_call item");
                        last.2.push_str(&s(&e["delta"]));
                    }
                    _ => {}
                }
            }
        }
    }
    let calls = calls
        .into_iter()
        .map(|(id, name, args)| (id, name, arguments_of(&args)))
        .collect();
    (text, calls)
}

/// The answer appended to a request body as an agent appends it.
#[cfg(feature = "agent")]
fn append_answer(dialect: crate::agent::Dialect, body: &mut Value, answer: &Value) {
    use crate::agent::Dialect;
    match dialect {
        Dialect::OpenaiChat => push_item(body, "messages", answer["choices"][0]["message"].clone()),
        Dialect::Anthropic => push_item(
            body,
            "messages",
            serde_json::json!({"role": "assistant", "content": answer["content"]}),
        ),
        Dialect::OpenaiResponses => {
            if let Some(text) = body["input"].as_str() {
                body["input"] = serde_json::json!([{"role": "user", "content": text}]);
            }
            for item in answer["output"].as_array().expect("output items") {
                push_item(body, "input", item.clone());
            }
        }
    }
}

#[cfg(feature = "agent")]
fn push_item(body: &mut Value, key: &str, item: Value) {
    match &mut body[key] {
        Value::Array(items) => items.push(item),
        other => *other = Value::Array(vec![item]),
    }
}

/// Run `target` on `n` pseudo-random inputs of up to `max_len` bytes from
/// `seed` (wasm-tools' `test_n_times`): the stable-Rust smoke test.
pub fn run_n_times(target: Target, n: usize, max_len: usize, seed: u64) {
    let mut rng = SplitMix64::new(seed);
    let mut buf = Vec::with_capacity(max_len);
    for _ in 0..n {
        let len = rng.below(max_len as u64 + 1) as usize;
        buf.clear();
        while buf.len() < len {
            buf.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        buf.truncate(len);
        target(&buf);
    }
}
