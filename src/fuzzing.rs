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
use crate::generate::{Case, SplitMix64};
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

/// Every target by name, as `fuzz/fuzz_targets/<name>.rs` calls it.
pub const TARGETS: [(&str, Target); 5] = [
    ("compact", compact_target),
    ("estimate", estimate_target),
    ("parse", parse_target),
    ("wire_roundtrip", wire_roundtrip_target),
    ("body_size", body_size_target),
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
