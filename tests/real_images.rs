//! The reference compactor on real agent histories with real screenshots
//! (issue 26 item 7; SPEC §1.4, §3, §4 step 4, §5).
//!
//! `tests/real-images/` holds small derived fixtures of public
//! browser-agent runs (provenance and licence in its SOURCES.md): 2560 ×
//! 1600 JPEG screenshots kept byte for byte. Each is read as the OpenAI
//! Chat Completions history it is, its images are checked to be seen
//! (pixels from the real header, the coverage rows), and the reference is
//! run on it at several configs — three wire formats, ceilings from 8 MiB
//! down to ones that force elision or `cannot_fit`, and a small window that
//! forces compaction by tokens — with every SPEC §5 invariant judged. The
//! figures that matter (elisions, the body under the ceiling) are also
//! computed here, not only by the library's oracles.

use std::path::{Path, PathBuf};

use ctxgate::body::body_bytes;
use ctxgate::config::Config;
use ctxgate::estimate::images::{image_tokens, MAX_ANTHROPIC};
use ctxgate::generate::{Case, Coverage};
use ctxgate::harness::run_case;
use ctxgate::model::{iterations, Document, Message, Part, WireFormat};
use ctxgate::oracle::{InvariantSet, Verdict};
use ctxgate::subject::{CompactAnswer, InProcess, Subject};
use serde_json::Value;

const FORMATS: [WireFormat; 3] = [
    WireFormat::Engine,
    WireFormat::Openai,
    WireFormat::Anthropic,
];

struct Fixture {
    name: &'static str,
    messages: Vec<Message>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real-images")
}

fn load(name: &'static str) -> Fixture {
    let path = dir().join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(value["format"], "openai", "{name}");
    assert_eq!(value["license"], "Apache-2.0", "{name}");
    assert!(
        value["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("bytedance/UI-TARS-desktop@")),
        "{name}: {}",
        value["source"]
    );
    let doc = Document::from_value(value, Some(WireFormat::Openai))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    Fixture {
        name,
        messages: doc.messages,
    }
}

fn fixtures() -> [Fixture; 2] {
    [
        load("agent-tars-browser.json"),
        load("agent-tars-nvidia-stock.json"),
    ]
}

/// Every fixture named in SOURCES.md is a file here, and every file is named there.
#[test]
fn sources_md_lists_every_fixture() {
    let sources = std::fs::read_to_string(dir().join("SOURCES.md")).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["agent-tars-browser.json", "agent-tars-nvidia-stock.json"]
    );
    for f in &files {
        assert!(
            sources.contains(&format!("| {f} |")),
            "{f} not in the table"
        );
        assert!(sources.contains(&format!("→ `{f}`")), "{f} has no source");
    }
}

/// (message index, payload bytes) of every image, each checked to be a
/// 2560 × 1600 JPEG read from its real header.
fn screenshots(f: &Fixture) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    for (i, m) in f.messages.iter().enumerate() {
        for img in m.content.images() {
            assert_eq!(img.media_type(), "image/jpeg", "{} message {i}", f.name);
            assert_eq!(img.pixels(), Some((2560, 1600)), "{} message {i}", f.name);
            out.push((i, img.payload_bytes()));
        }
    }
    out
}

#[test]
fn the_screenshots_are_read_from_their_real_headers() {
    let [browser, nvidia] = fixtures();
    let shots = screenshots(&browser);
    // Base64 lengths as SOURCES.md records them.
    assert_eq!(shots, [(1, 102_496), (4, 103_688), (7, 109_812)]);
    assert_eq!(screenshots(&nvidia), [(6, 398_792)]);
    // Tokens by pixels (SPEC §3), never by base64: 2560 × 1600 scales to
    // 1356 × 847 under the 1.15 MP cap (anthropic, engine: 1,532 tokens) and
    // to 1228 × 768 under openai's rule (three by two tiles: 1,105).
    let img = nvidia.messages[6].content.images().next().unwrap();
    assert_eq!(image_tokens(img, WireFormat::Anthropic), 1_532);
    assert!(image_tokens(img, WireFormat::Anthropic) <= MAX_ANTHROPIC);
    assert_eq!(image_tokens(img, WireFormat::Openai), 85 + 170 * 6);
}

#[test]
fn the_image_coverage_rows_see_them() {
    let [browser, nvidia] = fixtures();
    let mut cov = Coverage::new();
    cov.record_case(&Case {
        config: Config::default(),
        messages: browser.messages.clone(),
    });
    let row = |cov: &Coverage, group: &str, label: &str| {
        cov.count(group, label)
            .unwrap_or_else(|| panic!("no coverage row {group} / {label}"))
    };
    assert_eq!(row(&cov, "image header", "jpeg"), 1);
    assert_eq!(row(&cov, "images", "in user messages"), 1);
    // Chat Completions carries a tool's screenshot in the user message after its results.
    assert_eq!(
        row(&cov, "images", "after results (openai user message)"),
        1
    );
    assert_eq!(row(&cov, "images", "computer-use run (≥ 3 turns)"), 1);
    // The nvidia request's last iteration is its screenshot: at Express's
    // 102,400-byte limit its own image is over the ceiling.
    cov.record_case(&Case {
        config: Config {
            transport_max_body_bytes: 102_400,
            ..Config::default()
        },
        messages: nvidia.messages.clone(),
    });
    assert_eq!(row(&cov, "image header", "jpeg"), 2);
    assert_eq!(
        row(&cov, "images", "last iteration's images over the ceiling"),
        1
    );
}

/// The configs each fixture is compacted at, in every wire format.
fn configs() -> Vec<(String, Config)> {
    let mut out = Vec::new();
    for format in FORMATS {
        let base = Config {
            wire_format: format,
            ..Config::default()
        };
        for ceiling in [8 * 1024 * 1024, 250_000, 102_400, 32_768] {
            out.push((
                format!("{format}, ceiling {ceiling}"),
                Config {
                    transport_max_body_bytes: ceiling,
                    ..base.clone()
                },
            ));
        }
        // A window small enough that the screenshots' tokens alone make
        // compaction due, with the body far under its ceiling.
        out.push((
            format!("{format}, contextWindow 4000"),
            Config {
                context_window: 4_000,
                ..base.clone()
            },
        ));
        // keepRecent 1 summarises every screenshot away; keepRecent 4 keeps
        // two screenshot iterations, whose images must be elided, oldest
        // first, before any iteration is dropped.
        for (ceiling, keep_recent) in [(150_000, 1), (150_000, 4), (100_000, 4)] {
            out.push((
                format!("{format}, ceiling {ceiling}, keepRecent {keep_recent}"),
                Config {
                    transport_max_body_bytes: ceiling,
                    keep_recent,
                    ..base.clone()
                },
            ));
        }
    }
    out
}

/// How many image parts of `input` are elided in `output`, each checked to
/// be the SPEC §4 step 4 placeholder of its image.
fn elided(input: &[Message], output: &[Message]) -> usize {
    let placeholders: Vec<String> = output
        .iter()
        .flat_map(|m| m.content.parts())
        .filter_map(|p| match p {
            Part::Text(t) if t.text.starts_with("[image elided:") => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    for p in &placeholders {
        assert!(p.len() <= 200, "{p}");
        assert!(
            p.starts_with("[image elided: image/jpeg, 2560×1600, "),
            "{p}"
        );
        assert!(
            input
                .iter()
                .flat_map(|m| m.content.images())
                .any(|img| p.contains(&format!("{} bytes", img.payload_bytes()))),
            "{p} names no image of the input"
        );
    }
    placeholders.len()
}

#[test]
fn the_reference_holds_every_invariant_on_them() {
    let mut subject = InProcess::reference();
    let mut exercised = InvariantSet::empty();
    let (mut elisions, mut cannot_fit, mut compacted) = (0, 0, 0);
    let mut failures = Vec::new();
    let mut cov = Coverage::new();
    for f in fixtures() {
        for (label, config) in configs() {
            let result = run_case(&mut subject, &config, &f.messages, InvariantSet::all());
            if !result.ok() {
                let found: Vec<String> = result.violations().map(|v| v.to_string()).collect();
                failures.push(format!(
                    "{} at {label}: {:?} {}",
                    f.name,
                    result.fault,
                    found.join("; ")
                ));
                continue;
            }
            for (inv, verdict) in &result.verdicts {
                if matches!(verdict, Verdict::Pass) {
                    exercised.insert(*inv);
                }
            }
            let body_in = body_bytes(&config, &f.messages);
            match result.answer.as_ref().expect("compact was asked") {
                CompactAnswer::Messages(out) => {
                    let body_out = body_bytes(&config, out);
                    assert!(
                        body_out <= config.transport_max_body_bytes,
                        "{} at {label}: body {body_out} over the ceiling",
                        f.name
                    );
                    let n = elided(&f.messages, out);
                    cov.record_answer(&f.messages, Some(out), false);
                    elisions += n;
                    compacted += usize::from(result.compacted);
                    // Over the ceiling, something had to go.
                    if body_in > config.transport_max_body_bytes {
                        assert!(result.compacted, "{} at {label}: unchanged", f.name);
                    }
                    // With four iterations kept under 150,000 bytes, only
                    // the older of the two kept screenshots goes; under
                    // 100,000, both, and still no iteration is dropped.
                    if f.name == "agent-tars-browser.json" && config.keep_recent == 4 {
                        let expected = if config.transport_max_body_bytes == 150_000 {
                            1
                        } else {
                            2
                        };
                        assert_eq!(n, expected, "{} at {label}", f.name);
                        assert_eq!(out.len(), 7, "{} at {label}: summary + 6", f.name);
                        let kept: Vec<u64> = out
                            .iter()
                            .flat_map(|m| m.content.images())
                            .map(|i| i.payload_bytes())
                            .collect();
                        let expected_kept: &[u64] = if expected == 1 { &[109_812] } else { &[] };
                        assert_eq!(kept, expected_kept, "{} at {label}", f.name);
                    }
                    eprintln!(
                        "{} at {label}: {} → {} messages, body {body_in} → {body_out}, {n} elided",
                        f.name,
                        f.messages.len(),
                        out.len()
                    );
                    // The last iteration is kept verbatim, its image included.
                    let last = iterations(&f.messages).last().unwrap().clone();
                    assert_eq!(
                        &out[out.len() - last.len()..],
                        &f.messages[last],
                        "{} at {label}",
                        f.name
                    );
                }
                CompactAnswer::CannotFit { .. } => {
                    // Only when the last iteration's own screenshot is over the ceiling.
                    let last = iterations(&f.messages).last().unwrap().clone();
                    let own: u64 = f.messages[last]
                        .iter()
                        .flat_map(|m| m.content.images())
                        .map(|i| i.payload_bytes())
                        .sum();
                    assert!(
                        own > config.transport_max_body_bytes / 2,
                        "{} at {label}: cannot_fit with {own} bytes of own images",
                        f.name
                    );
                    eprintln!("{} at {label}: cannot_fit (own images {own} bytes)", f.name);
                    cannot_fit += 1;
                }
                other => panic!("{} at {label}: {other:?}", f.name),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Both directions were reached: images elided to fit, and the honest
    // cannot_fit of a last iteration whose own screenshot is over the ceiling.
    assert!(elisions >= 12, "{elisions} elisions");
    assert!(cannot_fit >= 9, "{cannot_fit} cannot_fit answers");
    assert!(compacted >= 12, "{compacted} compacted answers");
    // The coverage code sees the reference's elisions as a subject's.
    let elided_answers = cov.count("images", "elided by the subject").unwrap();
    assert!(
        elided_answers >= 12,
        "{elided_answers} answers with elisions"
    );
    for name in [
        "body-under-ceiling",
        "estimate-covers-images",
        "single-bounded-summary",
        "order-preserved",
        "verbatim-suffix",
        "no-premature-compaction",
    ] {
        let inv = ctxgate::oracle::Invariant::parse(name).unwrap();
        assert!(exercised.contains(inv), "{name} was never exercised");
    }
    assert!(subject.info().content_parts);
}
