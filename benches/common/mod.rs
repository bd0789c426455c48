//! Deterministic histories shared by the benches (not part of the crate).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::Criterion;
use ctxgate::generate::text::ContentClass;
use ctxgate::generate::SplitMix64;
use ctxgate::{Document, Message, ToolCall, WireFormat};
use serde_json::json;

/// Short runs: `cargo bench` should finish in minutes on a two-core box.
pub fn criterion() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args()
}

/// `criterion_group!` named `benches`, with [`criterion`]'s short runs,
/// over the given targets: `criterion_main!(benches)`, or a bench's own
/// `main` calls `benches()`.
macro_rules! benches {
    ($($target:path),+ $(,)?) => {
        criterion::criterion_group! {
            name = benches;
            config = common::criterion();
            targets = $($target),+
        }
    };
}
pub(crate) use benches;

/// The three content classes of the targets, from the crate's one
/// vocabulary: ASCII prose, CJK (three UTF-8 bytes a character) and
/// escape-heavy text (quotes, backslashes, newlines, control characters:
/// JSON longer than the raw text).
pub const CLASSES: [ContentClass; 3] = [
    ContentClass::Prose,
    ContentClass::Cjk,
    ContentClass::Escapes,
];

/// `n` bytes of text of `class`: the crate's text generator.
pub fn text(rng: &mut SplitMix64, class: ContentClass, n: usize) -> String {
    ctxgate::generate::text::text(rng, class, n)
}

/// A ToolLoop history: a system prompt and a user request, then
/// `iterations` iterations of one assistant message making three calls and
/// the three tool results of `result_bytes` each.
pub fn toolloop(
    class: ContentClass,
    iterations: usize,
    result_bytes: usize,
    seed: u64,
) -> Vec<Message> {
    let mut rng = SplitMix64::new(seed);
    let mut msgs = vec![
        Message::system("You are a coding agent. Use the tools."),
        Message::user(text(&mut rng, class, 200)),
    ];
    for i in 0..iterations {
        msgs.extend(iteration(&mut rng, class, i, result_bytes));
    }
    msgs
}

/// A computer-use ToolLoop (issue 26): a system prompt and a request, then
/// `iterations` iterations of one `screenshot` call whose result is a line
/// of text and a `w` × `h` PNG screenshot of `image_bytes` bytes (base64 in
/// the body): images are the bulk of the body.
pub fn screenshot_loop(iterations: usize, image_bytes: usize, seed: u64) -> Vec<Message> {
    use ctxgate::generate::images::{inline_image, ImageFormat};
    use ctxgate::model::{Content, Part};
    let mut rng = SplitMix64::new(seed);
    let mut msgs = vec![
        Message::system("You drive a browser. Use the tools."),
        Message::user(text(&mut rng, ContentClass::Prose, 200)),
    ];
    for i in 0..iterations {
        let id = format!("call_{i}");
        msgs.push(Message::assistant_calls(
            text(&mut rng, ContentClass::Prose, 80),
            vec![ToolCall::new(
                id.clone(),
                "computer",
                json!({"action": "screenshot"}),
            )],
        ));
        let img = inline_image(&mut rng, ImageFormat::Png, 1920, 1080, image_bytes);
        msgs.push(Message::tool(
            id,
            Content::Parts(vec![
                Part::text(text(&mut rng, ContentClass::Prose, 120)),
                Part::Image(img),
            ]),
        ));
    }
    msgs
}

/// One iteration: the assistant's three calls and their results.
pub fn iteration(
    rng: &mut SplitMix64,
    class: ContentClass,
    i: usize,
    result_bytes: usize,
) -> Vec<Message> {
    let ids: Vec<String> = (0..3).map(|j| format!("call_{i}_{j}")).collect();
    let calls = ids
        .iter()
        .map(|id| {
            ToolCall::new(
                id.clone(),
                "read_file",
                json!({"path": format!("src/module_{}/file_{}.rs", rng.below(50), rng.below(1000)), "limit": 2000}),
            )
        })
        .collect();
    let mut out = vec![Message::assistant_calls(text(rng, class, 120), calls)];
    out.extend(
        ids.iter()
            .map(|id| Message::tool(id.clone(), text(rng, class, result_bytes))),
    );
    out
}

/// The raw text bytes of a history (contents, images' base64 and call
/// arguments as JSON):
/// what the memcpy baseline copies and the throughput is counted in.
pub fn raw_bytes(msgs: &[Message]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        out.extend_from_slice(m.content.text().as_bytes());
        for img in m.content.images() {
            if let Some(d) = img.data() {
                out.extend_from_slice(d.data().as_bytes());
            }
        }
        for c in m.calls() {
            out.extend_from_slice(c.id.as_bytes());
            out.extend_from_slice(c.name.as_bytes());
            if let Some(s) = c.arguments.as_str() {
                out.extend_from_slice(s.as_bytes());
            } else {
                out.extend_from_slice(&serde_json::to_vec(&*c.arguments).unwrap());
            }
        }
    }
    out
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/real-histories")
}

/// Every history of the shared real-history corpus (openai format, read
/// into the canonical model), sorted by path; `None` with a message on
/// stderr when the folder is absent.
pub fn real_histories() -> Option<Vec<(String, Vec<Message>)>> {
    real_histories_up_to(usize::MAX)
}

/// The first real histories, in path order, whose raw text
/// ([`raw_bytes`]) totals at most `text_bytes`: each read as in
/// [`real_histories`], so that their allocations lie as they do there.
pub fn real_histories_up_to(text_bytes: usize) -> Option<Vec<(String, Vec<Message>)>> {
    let dir = corpus_dir();
    let Ok(subdirs) = std::fs::read_dir(&dir) else {
        eprintln!(
            "real histories absent at {}: skipping those benches",
            dir.display()
        );
        return None;
    };
    let mut paths: Vec<PathBuf> = subdirs
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.is_dir())
        .flat_map(|sub| {
            std::fs::read_dir(sub)
                .into_iter()
                .flatten()
                .filter_map(|f| f.ok().map(|f| f.path()))
        })
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let histories: Vec<(String, Vec<Message>)> = paths
        .iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
            let doc = Document::from_value(value, Some(WireFormat::Openai)).ok()?;
            Some((p.display().to_string(), doc.messages))
        })
        .scan(0usize, |total, (path, messages)| {
            *total += raw_bytes(&messages).len();
            (*total <= text_bytes).then_some((path, messages))
        })
        .collect();
    if histories.is_empty() {
        eprintln!("no real histories read from {}: skipping", dir.display());
        return None;
    }
    Some(histories)
}
