//! The groups of bins a case is counted in, in display order, and the
//! index of each group.

pub(super) const ITERATIONS: usize = 0;
pub(super) const MESSAGES: usize = 1;
pub(super) const BODY: usize = 2;
pub(super) const HEAD: usize = 3;
pub(super) const CLASS: usize = 4;
pub(super) const CONTENT: usize = 5;
pub(super) const PARALLEL: usize = 6;
pub(super) const RESULT_BYTES: usize = 7;
pub(super) const ARGUMENTS: usize = 8;
pub(super) const PINNED: usize = 9;
pub(super) const IDS: usize = 10;
pub(super) const PENDING: usize = 11;
pub(super) const EXTRA: usize = 12;
pub(super) const FORMAT: usize = 13;
pub(super) const BPT: usize = 14;
pub(super) const KEEP: usize = 15;
pub(super) const THRESHOLD: usize = 16;
pub(super) const CEILING: usize = 17;
pub(super) const WINDOW: usize = 18;
pub(super) const WINDOW_BY: usize = 19;
pub(super) const SUMMARY: usize = 20;
pub(super) const ENVELOPE: usize = 21;
pub(super) const PRESSURE: usize = 22;
pub(super) const AT_TRIGGER: usize = 23;
pub(super) const AT_CEILING: usize = 24;
pub(super) const BUG_CLASS: usize = 25;
pub(super) const IMAGES: usize = 26;
pub(super) const IMAGE_HEADER: usize = 27;

/// The `images` group's bin the subject's answers reach (not the case).
pub(super) const ELIDED_BIN: usize = 11;

/// The bins, group by group, in display order.
pub(super) const GROUPS: [(&str, &[&str]); 28] = [
    (
        "iterations",
        &["0", "1", "2–5", "6–15", "16–30", "31–60", "> 60"],
    ),
    ("messages", &["0", "1–9", "10–49", "50–149", "≥ 150"]),
    (
        "body bytes",
        &[
            "< 1 KiB",
            "1–16 KiB",
            "16–128 KiB",
            "128 KiB–1 MiB",
            "≥ 1 MiB",
        ],
    ),
    ("head (system messages)", &["0", "1", "2", "3"]),
    (
        "content class",
        &[
            "prose",
            "code",
            "json",
            "cjk",
            "multilingual",
            "emoji",
            "escapes",
        ],
    ),
    ("content", &["null", "absent", "empty", "text and calls"]),
    ("parallel calls", &["0 (toolCalls: [])", "1", "2–3", "4–8"]),
    (
        "tool result bytes",
        &[
            "empty",
            "1 B–1 KiB",
            "1–8 KiB",
            "8–32 KiB",
            "32 KiB (cap)",
            "> 32 KiB",
        ],
    ),
    (
        "arguments",
        &[
            "{}",
            "< 256 B",
            "256 B–4 KiB",
            "≥ 4 KiB",
            "nested ≥ 10 deep",
        ],
    ),
    (
        "pinned",
        &["system", "user", "assistant", "tool", "pinned: false"],
    ),
    (
        "ids",
        &["reused across iterations", "results out of call order"],
    ),
    (
        "pending last iteration",
        &["none answered", "partly answered"],
    ),
    ("extra fields", &["on messages", "on calls"]),
    ("wire format", &["engine", "openai", "anthropic"]),
    ("bytesPerToken", &["1", "2", "3", "4", "5", "6", "7", "8"]),
    ("keepRecent", &["1", "2", "3", "4", "5"]),
    (
        "threshold",
        &[
            "(0, 0.25]",
            "(0.25, 0.5]",
            "(0.5, 0.7)",
            "0.7",
            "(0.7, 1)",
            "1",
        ],
    ),
    (
        "transportMaxBodyBytes",
        &[
            "< 1 KiB",
            "1 KiB–100 KiB",
            "102,400 (Express)",
            "100 KiB–8 MiB",
            "8 MiB (engine)",
            "> 8 MiB",
        ],
    ),
    (
        "contextWindow",
        &[
            "< 100",
            "100–9,999",
            "10,000–127,999",
            "128,000",
            "> 128,000",
        ],
    ),
    (
        "effective window set by",
        &["contextWindow", "transport ceiling"],
    ),
    (
        "summaryMaxBytes",
        &["0", "1–255", "256–4,095", "4,096", "> 4,096"],
    ),
    ("envelope bytes", &["{}", "< 1 KiB", "1–16 KiB", "≥ 16 KiB"]),
    ("pressure", &crate::contract::Pressure::NAMES),
    ("estimate − trigger (tokens)", &["−1", "0", "+1"]),
    ("body − ceiling (bytes)", &["−1", "0", "+1"]),
    // The shapes the known-bugs suite's classes need (suites/known-bugs/
    // README.md names the row each class is reached by); the other classes
    // have rows above (ids reused, content null, pressure, …).
    (
        "bug class",
        &[
            "due, results before last",
            "due, ≥2 results before last",
            "due, with a head",
            "summary after the head",
            "calls, empty content",
            "non-ASCII arguments",
            "over trigger, more than minimal",
            "… and ids reused across iterations",
        ],
    ),
    // SPEC §1.4: where images sit, how big, and the shapes the reports
    // of issue 26 name (a run of screenshots, the body at the ceiling with
    // images as its bulk, a last iteration whose own images are over it),
    // and two that the blind audits of 2026-12-06 found rare: a run of
    // image results whose per-message overhead decides the body, and a
    // ceiling in `reference::ElisionFloors::band`.
    (
        "images",
        &[
            "in user messages",
            "in tool results",
            "after results (openai user message)",
            "remote URL",
            "detail: low",
            "computer-use run (≥ 3 turns)",
            "icon (≤ 128 px)",
            "4K or larger",
            "≥ 1 MiB payload",
            "body at ceiling ±1, images ≥ ½ of it",
            "last iteration's images over the ceiling",
            "elided by the subject",
            "run of ≥ 2 image results at ceiling ±1",
            "ceiling only a protected elision meets",
        ],
    ),
    (
        "image header",
        &["png", "jpeg", "gif", "webp", "unknown size"],
    ),
];

pub(super) const RESULTS: [&str; 3] = ["unchanged", "compacted", "cannot_fit"];
