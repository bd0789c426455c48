//! Calibration against the real tokenizers (issue 7): the safe estimator
//! holds its invariant on the real corpus and on generated CJK and emoji
//! text under both encodings, and `calibrate` runs on the real corpus with
//! sane numbers. The corpus is read at run time from
//! `../shared/data/real-histories`; it is never copied into the repository.
//! Where it is missing, the tests that need it are skipped with a line that
//! says so — unless `CTXGATE_REQUIRE_DATA=1`, where they fail.
#![cfg(feature = "calibrate")]

use std::path::{Path, PathBuf};
use std::time::Instant;

use ctxgate::calibrate::{
    self, estimate_covers_real_tokens, estimator_covers_real_tokens, history_real_tokens,
    samples::samples, ContentClass, Encoding, Options, Report, REAL_HISTORIES,
};
use ctxgate::estimate::{self, Adr0098, ContentOnly, Estimator, SafeClasswise};
use ctxgate::Config;

mod common;

/// The shared corpus's folder; `None` (the test is skipped) where it is
/// missing, see [`common::data_dir`].
fn corpus_dir() -> Option<PathBuf> {
    common::data_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join(calibrate::DEFAULT_CORPUS))
}

/// The shared corpus's histories, read whole; `None` where it is missing.
fn corpus() -> Option<Vec<calibrate::History>> {
    let dir = corpus_dir()?;
    let corpus = calibrate::load_corpus(&dir, 256 << 20).expect("a readable corpus");
    Some(corpus.histories)
}

#[test]
fn safe_estimator_covers_every_real_history_under_both_encodings() {
    let config = Config::default();
    let Some(histories) = corpus() else { return };
    assert!(histories.len() >= 200, "{} histories", histories.len());
    for h in &histories {
        let short = estimator_covers_real_tokens(&SafeClasswise::default(), &h.messages, &config);
        assert!(short.is_empty(), "{}: {}", h.name, short[0]);
    }
}

#[test]
fn safe_estimator_covers_generated_text_of_every_class() {
    let config = Config::default();
    let est = SafeClasswise::default();
    // The calibration's own seed for every class; two seeds it was not
    // fitted on for CJK and emoji.
    let mut cases: Vec<(ContentClass, u64)> = ContentClass::ALL
        .into_iter()
        .map(|c| (c, calibrate::DEFAULT_SEED))
        .collect();
    for seed in [5, 6] {
        cases.push((ContentClass::Cjk, seed));
        cases.push((ContentClass::Emoji, seed));
    }
    for (class, seed) in cases {
        for (i, m) in samples(class, seed, calibrate::DEFAULT_SAMPLES)
            .into_iter()
            .enumerate()
        {
            let msgs = [m];
            let short = estimator_covers_real_tokens(&est, &msgs, &config);
            assert!(
                short.is_empty(),
                "{class} seed {seed} sample {i}: {}",
                short[0]
            );
        }
    }
}

#[test]
fn four_bytes_a_token_misses_cjk_and_emoji_and_the_check_says_so() {
    let config = Config::default();
    let msgs = samples(ContentClass::Cjk, calibrate::DEFAULT_SEED, 8);
    let tokens = Adr0098.tokens(&mut msgs.iter(), &config);
    let short = estimate_covers_real_tokens(&msgs, tokens, None, &Encoding::ALL);
    assert_eq!(short.len(), 2, "{short:?}");
    assert!(short
        .iter()
        .all(|s| s.message.is_none() && s.estimate < s.real));
    let (per, total) = Adr0098.per_message(&msgs, &config);
    let short = estimate_covers_real_tokens(&msgs, total, Some(&per), &[Encoding::Cl100kBase]);
    assert!(short.iter().any(|s| s.message.is_some()), "{short:?}");
}

#[test]
fn content_only_misses_the_tool_calls_that_adr_0098_counts() {
    // On every history with calls, content-only is below adr-0098; and
    // under the real tokenizers it falls below real on most of them (not
    // all: a history of long, whitespace-heavy results can run above 4
    // bytes a token on its content alone).
    let config = Config::default();
    let (mut with_calls, mut below) = (0, [0, 0]);
    let Some(histories) = corpus() else { return };
    for h in histories {
        if !h.messages.iter().any(|m| m.opens_iteration()) {
            continue;
        }
        with_calls += 1;
        let content_only = ContentOnly.tokens(&mut h.messages.iter(), &config);
        let adr = Adr0098.tokens(&mut h.messages.iter(), &config);
        assert!(content_only < adr, "{}", h.name);
        for (e, encoding) in Encoding::ALL.into_iter().enumerate() {
            if content_only < history_real_tokens(&h.messages, encoding) {
                below[e] += 1;
            }
        }
    }
    eprintln!("histories with calls: {with_calls}; content-only below real: {below:?}");
    assert!(with_calls > 150);
    assert!(
        below.iter().all(|&b| b * 10 > with_calls * 6),
        "{below:?} of {with_calls}"
    );
}

fn sane(report: &Report) {
    assert_eq!(report.rows.len(), 2 * (ContentClass::ALL.len() + 1));
    for encoding in Encoding::ALL {
        for class in ContentClass::ALL {
            let row = report
                .row(encoding, calibrate::samples::set_name(class))
                .unwrap();
            assert_eq!(row.samples, report.samples_per_class, "{encoding} {class}");
            let safe = row.estimator("safe-classwise").unwrap();
            assert_eq!(safe.below_share, 0.0, "{encoding} {class}");
            assert!(safe.worst_ratio >= 1.0);
            for e in &row.estimators {
                assert!(e.worst_ratio <= e.mean_ratio && e.mean_ratio <= e.max_ratio);
                assert!((0.0..=1.0).contains(&e.below_share));
            }
            let c = row.bytes_per_token;
            assert!(c.p100 <= c.p99 && c.integer_p100 <= c.integer_p99);
            assert!(c.integer_p100 >= 1 && (c.integer_p100 as f64) >= c.p100.floor());
        }
        // JSON arguments live in toolCalls: content-only sees nothing.
        let json = report.row(encoding, "json-arguments").unwrap();
        let content_only = json.estimator("content-only").unwrap();
        assert_eq!(
            (content_only.max_ratio, content_only.below_share),
            (0.0, 1.0)
        );
        // English prose is where 4 bytes a token was measured.
        let prose = report.row(encoding, "english-prose").unwrap();
        let adr = prose.estimator("adr-0098").unwrap();
        assert!(
            (0.8..1.4).contains(&adr.mean_ratio),
            "{encoding}: {}",
            adr.mean_ratio
        );
        // CJK and emoji: 4 bytes a token is short.
        for class in ["cjk", "emoji"] {
            let adr = report
                .row(encoding, class)
                .unwrap()
                .estimator("adr-0098")
                .unwrap();
            assert!(
                adr.mean_ratio < 1.0 && adr.below_share > 0.5,
                "{encoding} {class}"
            );
        }
        let real = report.row(encoding, REAL_HISTORIES).unwrap();
        assert_eq!(real.samples, report.histories);
        assert_eq!(real.estimator("safe-classwise").unwrap().below_share, 0.0);
        let (content_only, adr) = (
            real.estimator("content-only").unwrap(),
            real.estimator("adr-0098").unwrap(),
        );
        assert!(content_only.below_share > adr.below_share);
        assert!(content_only.mean_ratio < adr.mean_ratio);
    }
    // CJK is denser under cl100k than o200k.
    let cl = report.row(Encoding::Cl100kBase, "cjk").unwrap();
    let o = report.row(Encoding::O200kBase, "cjk").unwrap();
    assert!(cl.bytes_per_real_token() < o.bytes_per_real_token());
}

#[test]
fn calibrate_runs_on_the_real_corpus_with_sane_numbers() {
    let Some(dir) = corpus_dir() else { return };
    let options = Options {
        corpus: Some(dir),
        ..Options::default()
    };
    let start = Instant::now();
    let report = calibrate::calibrate(&options).expect("calibrate");
    let elapsed = start.elapsed();
    eprintln!("calibrate on the real corpus: {elapsed:?}");
    // The issue asks for under a minute in release; debug gets room.
    assert!(elapsed.as_secs() < 120, "{elapsed:?}");
    sane(&report);

    let text = report.to_string();
    for needle in [
        "cl100k_base",
        "o200k_base",
        "real-histories",
        "safe-classwise",
        "bpt 99%",
    ] {
        assert!(text.contains(needle), "{needle}\n{text}");
    }
    let json = report.to_json();
    assert_eq!(json["rows"].as_array().unwrap().len(), report.rows.len());
    assert_eq!(json["histories"], report.histories);
    assert!(json["rows"][0]["estimators"][1]["quantiles"]["p50"].is_number());
    let svg = calibrate::svg(&report);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("o200k_base") && svg.contains("real-histories"));
}

#[test]
fn calibrate_is_deterministic_and_reports_a_missing_corpus() {
    let err = calibrate::calibrate(&Options {
        corpus: Some("/nonexistent/real-histories".into()),
        ..Options::default()
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/real-histories"),
        "{err}"
    );
    let Some(histories) = corpus() else { return };
    let histories: Vec<_> = histories.into_iter().take(10).collect();
    let options = Options {
        samples_per_class: 20,
        ..Options::default()
    };
    let mut a = calibrate::calibrate_on(&histories, &options);
    let mut b = calibrate::calibrate_on(&histories, &options);
    a.elapsed = Default::default();
    b.elapsed = Default::default();
    assert_eq!(a, b);
}

#[test]
fn the_estimators_are_reachable_by_name() {
    for name in ["safe-classwise", "tiktoken-cl100k", "tiktoken-o200k"] {
        assert!(estimate::NAMES.contains(&name));
        assert_eq!(estimate::by_name(name).unwrap().name(), name);
    }
    let m = [ctxgate::Message::user("hello world")];
    let tk = estimate::by_name("tiktoken-o200k").unwrap();
    assert_eq!(tk.tokens(&mut m.iter(), &Config::default()), 2);
}
