//! The generators (issue 3, items 2, 3 and 7): valid and well formed by
//! construction, deterministic, reachable from raw fuzz bytes, shrinking to
//! small well-formed cases, on the boundaries in the share the docs state,
//! and covering every content class and knob range.

use arbitrary::{Arbitrary, Unstructured};
use ctxgate::generate::{
    case_from_seed, cases, gen_lines, seeded, shrink, shrink_candidates, Case, ContentClass,
    Coverage, GenConfig, SplitMix64,
};
use ctxgate::model::{check_well_formed, iterations, Role};
use ctxgate::{compact, CompactError};

fn assert_valid(case: &Case, what: &str) {
    if let Err(e) = case.config.validate() {
        panic!("{what}: config does not validate: {e}\n{case:?}");
    }
    if let Err(e) = check_well_formed(&case.messages) {
        panic!("{what}: history is not well formed: {e}\n{case:?}");
    }
}

/// Size of a history as the shrinker sees it: its engine JSON plus the envelope.
fn history_size(case: &Case) -> u64 {
    let msgs = ctxgate::model::engine::write_messages(&case.messages);
    ctxgate::body::value_size(&serde_json::Value::Array(msgs))
        + ctxgate::body::value_size(&serde_json::Value::Object(case.config.envelope.clone()))
}

#[test]
fn generated_cases_validate_and_are_well_formed() {
    for (i, case) in seeded(1, 3_000) {
        assert_valid(&case, &format!("seed 1, case {i}"));
    }
}

#[test]
fn swarm_configs_and_raw_fuzz_bytes_make_valid_realistic_cases() {
    let mut rng = SplitMix64::new(99);
    let (mut messages, mut with_calls, n) = (0usize, 0usize, 400);
    for k in 0..n {
        // A few hundred bytes, as a fuzzer would hand over.
        let len = rng.range(0, 600) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let mut u = Unstructured::new(&bytes);
        let g = GenConfig::arbitrary(&mut u).unwrap();
        assert!(
            !g.allow_ill_formed,
            "Arbitrary must never opt into ill-formed input"
        );
        assert!(g.max_iterations <= 200 && g.max_parallel_calls <= 16 && g.max_head <= 3);
        assert!((1..=40).contains(&g.max_json_depth) && !g.content_classes.is_empty());
        let case = Case::arbitrary(&mut Unstructured::new(&bytes)).unwrap();
        assert_valid(&case, &format!("fuzz input {k} ({len} bytes)"));
        messages += case.messages.len();
        with_calls += case.messages.iter().any(|m| m.opens_iteration()) as usize;
    }
    assert!(
        messages / n >= 8,
        "fuzz inputs should make realistic histories, mean {} messages",
        messages / n
    );
    assert!(
        with_calls * 2 >= n,
        "only {with_calls} of {n} fuzz cases have tool calls"
    );
}

#[test]
fn case_from_seed_is_deterministic() {
    let g = GenConfig::default();
    for i in 0..50 {
        let a = case_from_seed(7, i, &g);
        let b = case_from_seed(7, i, &g);
        assert_eq!(a, b, "case {i}");
        assert_eq!(a.to_json().to_string(), b.to_json().to_string());
    }
    let distinct: std::collections::HashSet<String> = (0..50)
        .map(|i| case_from_seed(7, i, &g).to_json().to_string())
        .collect();
    assert_eq!(distinct.len(), 50, "different indexes give different cases");
    assert_ne!(case_from_seed(7, 0, &g), case_from_seed(8, 0, &g));
    let lines: Vec<String> = gen_lines(7, 5, &g).collect();
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(*line, case_from_seed(7, i as u64, &g).to_json().to_string());
    }
}

#[test]
fn case_json_round_trips() {
    let ill = GenConfig {
        allow_ill_formed: true,
        ..GenConfig::default()
    };
    let all = seeded(5, 500).chain((0..300).map(|i| (i, case_from_seed(5, i, &ill))));
    for (i, case) in all {
        let line = case.to_json().to_string();
        let value: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("case {i}: its JSON line does not parse: {e}"));
        assert_eq!(
            value.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["config", "messages"]
        );
        let back = Case::from_json(&value).unwrap_or_else(|e| panic!("case {i}: {e}"));
        assert_eq!(back, case, "case {i} changed through JSON");
    }
    assert!(Case::from_json(&serde_json::json!({"config": {}})).is_err());
    assert!(Case::from_json(&serde_json::json!({"messages": 3})).is_err());
    assert!(
        Case::from_json(&serde_json::json!({"config": {"threshold": 0}, "messages": []})).is_err()
    );
}

#[test]
fn ill_formed_histories_only_by_opt_in() {
    let g = GenConfig {
        allow_ill_formed: true,
        ill_formed_percent: 100,
        ..GenConfig::default()
    };
    for i in 0..500 {
        let case = case_from_seed(11, i, &g);
        assert!(case.config.validate().is_ok());
        assert!(
            check_well_formed(&case.messages).is_err(),
            "case {i} should be ill formed: {case:?}"
        );
    }
    let half = GenConfig {
        allow_ill_formed: true,
        ..GenConfig::default()
    };
    let ill = (0..400)
        .filter(|&i| !case_from_seed(12, i, &half).is_well_formed())
        .count();
    assert!((120..=280).contains(&ill), "{ill} of 400 ill formed at 50%");
}

fn has_big_result(case: &Case) -> bool {
    case.messages
        .iter()
        .any(|m| m.role == Role::Tool && m.content.text().len() > 1_000)
}

#[test]
fn shrinking_reaches_one_iteration_with_one_call() {
    let (i, case) = seeded(21, 2_000)
        .find(|(_, c)| {
            has_big_result(c)
                && iterations(&c.messages).len() >= 10
                && c.messages.iter().any(|m| m.calls().len() >= 2)
        })
        .expect("some default case has a long history with a big result");
    let mut steps = 0;
    let small = shrink(case.clone(), |c| {
        assert_valid(c, &format!("a shrink candidate of case {i}"));
        steps += 1;
        has_big_result(c)
    });
    assert!(has_big_result(&small));
    assert_eq!(
        small.messages.len(),
        2,
        "from {} messages: {small:?}",
        case.messages.len()
    );
    assert_eq!(small.messages[0].calls().len(), 1, "{small:?}");
    assert!(small.messages[0].content.is_empty(), "{small:?}");
    assert_eq!(
        *small.messages[0].calls()[0].arguments,
        serde_json::json!({})
    );
    let result = small.messages[1].content.text().len();
    assert!(
        (1_001..=1_004).contains(&result),
        "result trimmed to {result} bytes"
    );
    assert!(small.config.envelope.is_empty());
    assert_eq!(small.config.wire_format, ctxgate::WireFormat::Engine);
    println!(
        "case {i}: {} → {} messages in {steps} steps",
        case.messages.len(),
        small.messages.len()
    );
}

#[test]
fn shrink_candidates_are_smaller_valid_and_well_formed() {
    let mut checked = 0;
    for (i, case) in seeded(31, 400)
        .filter(|(_, c)| c.messages.len() <= 40)
        .take(60)
    {
        let before = history_size(&case);
        let candidates = shrink_candidates(&case);
        if !case.messages.is_empty() {
            assert!(!candidates.is_empty(), "case {i} has no candidates");
        }
        for c in &candidates {
            assert_valid(c, &format!("a candidate of case {i}"));
            assert_ne!(*c, case);
            let after = history_size(c);
            assert!(
                after < before
                    || (after == before && c.config != case.config)
                    || c.messages.len() < case.messages.len(),
                "case {i}: a candidate is not smaller ({before} → {after} bytes)"
            );
            checked += 1;
        }
    }
    assert!(checked > 1_000, "only {checked} candidates checked");
}

#[test]
fn anchored_shrinking_keeps_a_case_on_the_trigger() {
    let on_trigger = |c: &Case| c.estimate() == c.config.trigger();
    let (i, case) = seeded(41, 2_000)
        .find(|(_, c)| {
            on_trigger(c)
                && c.messages.len() >= 12
                && c.messages.iter().any(|m| m.opens_iteration())
        })
        .expect("boundary seeking puts default cases on the trigger");
    let small = shrink(case.clone(), |c| {
        on_trigger(c) && c.messages.iter().any(|m| m.opens_iteration())
    });
    assert!(on_trigger(&small));
    assert!(
        small.messages.len() <= 3,
        "case {i} stayed at {} messages: {small:?}",
        small.messages.len()
    );
}

#[test]
fn proptest_strategy_shrinks_with_the_history_shrinker() {
    use proptest::test_runner::{Config, TestError, TestRunner};
    let config = Config {
        cases: 256,
        failure_persistence: None,
        max_shrink_iters: 100_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let result = runner.run(&cases(GenConfig::default()), |case| {
        proptest::prop_assert!(!has_big_result(&case));
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, minimal)) => {
            assert_valid(&minimal, "proptest's minimal case");
            assert_eq!(minimal.messages.len(), 2, "{minimal:?}");
            assert_eq!(minimal.messages[0].calls().len(), 1);
        }
        other => panic!("the property should fail on a result over 1000 bytes: {other:?}"),
    }
}

/// Boundary seeking (25% of default cases) puts the estimate exactly on the
/// trigger in about 7% of cases and the body exactly on the ceiling in
/// about 8%; within ±1, one case in four or more is at a boundary.
#[test]
fn boundary_cases_hit_exactly_in_the_stated_share() {
    let share = |g: &GenConfig| {
        let (mut trigger, mut ceiling, mut either, n) = (0, 0, 0, 2_000u64);
        for i in 0..n {
            let c = case_from_seed(51, i, g);
            let dt = c.estimate() as i64 - c.config.trigger() as i64;
            let dc = c.body_bytes() as i64 - c.config.transport_max_body_bytes as i64;
            trigger += (dt == 0) as u64;
            ceiling += (dc == 0) as u64;
            either += (dt.abs() <= 1 || dc.abs() <= 1) as u64;
        }
        let pct = |x: u64| 100.0 * x as f64 / n as f64;
        (pct(trigger), pct(ceiling), pct(either))
    };
    let (t, c, e) = share(&GenConfig::default());
    println!(
        "default: estimate = trigger {t:.1}%, body = ceiling {c:.1}%, within ±1 of either {e:.1}%"
    );
    assert!(
        t >= 5.0 && c >= 5.0,
        "exact hits: trigger {t:.1}%, ceiling {c:.1}%"
    );
    assert!((20.0..=40.0).contains(&e), "boundary share {e:.1}%");
    let off = GenConfig {
        boundary_percent: 0,
        ..GenConfig::default()
    };
    let (t0, c0, _) = share(&off);
    assert!(
        t0 < 2.0 && c0 < 2.0,
        "without seeking: trigger {t0:.1}%, ceiling {c0:.1}%"
    );
    let all = GenConfig {
        boundary_percent: 100,
        ..GenConfig::default()
    };
    let (_, _, e100) = share(&all);
    assert!(
        e100 >= 90.0,
        "with every case seeking, only {e100:.1}% on a boundary"
    );
}

/// The figures `generate`'s module docs state for the default config:
/// cases without images are what they were before images existed (a few
/// tens of KB); about one case in eight carries screenshots, a megabyte
/// or a few.
#[test]
fn default_cases_are_a_few_tens_of_kb() {
    let (mut bytes, mut messages, mut big, n) = (0u64, 0u64, 0u64, 2_000u64);
    let (mut imaged, mut imaged_bytes) = (0u64, 0u64);
    for (_, c) in seeded(61, n) {
        let b = c.body_bytes();
        if c.messages.iter().any(|m| m.has_images()) {
            imaged += 1;
            imaged_bytes += b;
            continue;
        }
        bytes += b;
        messages += c.messages.len() as u64;
        big += (b >= 1 << 20) as u64;
    }
    let (mean, msgs) = (bytes / (n - imaged), messages / (n - imaged));
    let imaged_mean = imaged_bytes / imaged.max(1);
    println!(
        "without images: mean body {mean} bytes, {msgs} messages, {big} cases ≥ 1 MiB; \
         {imaged} cases with images, mean body {imaged_mean} bytes"
    );
    assert!((20_000..=60_000).contains(&mean), "mean body {mean} bytes");
    // imagesPercent 8: 160 expected of 2,000.
    assert!(
        (100..=220).contains(&imaged),
        "{imaged} of {n} cases with images"
    );
    assert!(
        (500_000..=12_000_000).contains(&imaged_mean),
        "mean body with images {imaged_mean} bytes"
    );
    assert!((15..=45).contains(&msgs), "mean {msgs} messages");
    assert!(
        big >= 4,
        "the big shapes should stay reachable: {big} of {n} ≥ 1 MiB"
    );
}

#[test]
fn coverage_of_default_cases_is_complete() {
    let mut cov = Coverage::new();
    for (i, case) in seeded(2026, 2_000) {
        cov.record_case(&case);
        match compact(&case.config, &case.messages) {
            Ok(out) => cov.record_answer(&case.messages, Some(&out), false),
            Err(CompactError::CannotFit { .. }) => cov.record_result(false, true),
            Err(e) => panic!("case {i}: the reference rejected a generated case: {e}"),
        }
    }
    println!("{cov}");
    assert_eq!(cov.missing(), Vec::<String>::new(), "{cov}");
    let json = cov.to_json();
    assert_eq!(json["cases"], 2_000);
    assert_eq!(json["missing"], serde_json::json!([]));
    let (trigger, ceiling, either) = cov.boundary_shares();
    assert!(trigger > 0.05 && ceiling > 0.05 && either > 0.2);
    for class in ContentClass::ALL {
        assert!(cov.count("content class", class.name()).unwrap() > 0);
    }
}

#[test]
fn coverage_names_what_a_run_never_reached() {
    let narrow = GenConfig {
        content_classes: vec![ContentClass::Prose],
        max_parallel_calls: 0,
        max_head: 0,
        ..GenConfig::default()
    };
    let mut cov = Coverage::new();
    for i in 0..300 {
        cov.record_case(&case_from_seed(3, i, &narrow));
    }
    let missing = cov.missing();
    for bin in [
        "content class: emoji",
        "parallel calls: 1",
        "head (system messages): 1",
        "tool result bytes: 32 KiB (cap)",
    ] {
        assert!(
            missing.iter().any(|m| m == bin),
            "{bin} should be missing: {missing:?}"
        );
    }
    assert!(!missing.iter().any(|m| m == "content class: prose"));
    assert!(cov.to_string().contains("never reached"));
    cov.record_result(true, false);
    assert!(cov.missing().iter().any(|m| m == "result: cannot_fit"));
}

/// A case the subject faulted on before answering is in none of the
/// results: a run where every case faulted once read "100.0% unchanged".
/// The count is kept apart, merged, and read back (0 from an older report).
#[test]
fn a_case_without_an_answer_is_not_counted_unchanged() {
    use ctxgate::generate::Coverage;
    let mut faulted = Coverage::new();
    faulted.record_unanswered();
    faulted.record_unanswered();
    let text = faulted.to_string();
    assert!(
        text.contains("results: none; 2 case(s) had no answer (the subject faulted)"),
        "{text}"
    );
    assert!(!text.contains("unchanged,"), "{text}");
    for result in ["unchanged", "compacted", "cannot_fit"] {
        let bin = format!("result: {result}");
        assert!(faulted.missing().contains(&bin), "{bin}");
    }
    let mut run = Coverage::new();
    run.record_result(false, false);
    run.record_result(true, false);
    run.merge(&faulted);
    let text = run.to_string();
    assert!(
        text.contains("results of 2: 50.0% unchanged, 50.0% compacted, 0.0% cannot_fit; 2 case(s) had no answer"),
        "{text}"
    );
    let json = run.to_json();
    assert_eq!(json["unanswered"], 2);
    assert_eq!(json["results"]["unchanged"], 1);
    assert_eq!(Coverage::from_json(&json).as_ref(), Some(&run));
    let mut older = json.clone();
    older.as_object_mut().unwrap().remove("unanswered");
    let read = Coverage::from_json(&older).unwrap();
    assert!(!read.to_string().contains("no answer"));
    assert!(Coverage::new().to_json().get("unanswered").is_none());
}

/// Numbers print the same in every JSON library (SPEC §5; `model::value`):
/// unless a subject claims exact numbers, every number the generator writes
/// — in arguments, extra fields and the envelope — is portable; and the
/// exotic share, when on, really holds numbers that are not.
#[test]
fn generated_numbers_are_portable_unless_exotic_numbers_are_asked_for() {
    use ctxgate::model::value::all_portable;
    fn numbers(v: &serde_json::Value, out: &mut u64) {
        match v {
            serde_json::Value::Number(_) => *out += 1,
            serde_json::Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
            _ => {}
        }
    }
    let portable = GenConfig {
        exotic_numbers_percent: 0,
        ..GenConfig::default()
    };
    let mut count = 0;
    for i in 0..600 {
        let case = case_from_seed(71, i, &portable);
        let json = case.to_json();
        numbers(&json["messages"], &mut count);
        numbers(&json["config"]["envelope"], &mut count);
        assert!(all_portable(&json["messages"]), "case {i}: {json}");
        assert!(all_portable(&json["config"]["envelope"]), "case {i}");
    }
    assert!(count > 10_000, "only {count} numbers");
    let exotic = GenConfig {
        exotic_numbers_percent: 100,
        ..GenConfig::default()
    };
    let mut with = 0;
    for i in 0..200 {
        let json = case_from_seed(71, i, &exotic).to_json();
        if !all_portable(&json) {
            with += 1;
        }
    }
    assert!(
        with >= 190,
        "only {with} of 200 exotic cases hold a non-portable number"
    );
}

#[test]
fn json_nesting_stays_within_max_json_depth() {
    fn depth(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            serde_json::Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    for max in [1, 3, 20] {
        let g = GenConfig {
            max_json_depth: max,
            ..GenConfig::default()
        };
        let mut deepest = 0;
        for i in 0..400 {
            let case = case_from_seed(81, i, &g);
            let envelope = serde_json::Value::Object(case.config.envelope.clone());
            let args = case
                .messages
                .iter()
                .flat_map(|m| m.calls())
                .map(|c| &*c.arguments);
            for v in args.chain([&envelope]) {
                let d = depth(v);
                assert!(
                    d <= max,
                    "case {i}: JSON {d} deep under max_json_depth {max}: {v}"
                );
                deepest = deepest.max(d);
            }
        }
        assert_eq!(deepest, max, "nothing reached max_json_depth {max}");
    }
}

/// Under `--config` every case has one config: the bins of the knobs it
/// decides that no case reached are pinned by it, not "never reached" —
/// in the table, the footer and the JSON (which merges and reads back) —
/// while the generator's own gaps are still called so.
#[test]
fn knobs_a_config_pins_are_said_pinned_not_never_reached() {
    use ctxgate::generate::{case_for_config, Coverage};
    let config = ctxgate::Config {
        context_window: 50_000,
        threshold: 0.5,
        keep_recent: 3,
        ..ctxgate::Config::default()
    };
    let gen = GenConfig {
        content_classes: vec![ContentClass::Prose],
        ..GenConfig::default()
    };
    let mut pinned = Coverage::new();
    pinned.pin_config();
    let mut plain = Coverage::new();
    for i in 0..200 {
        let case = case_for_config(9, i, &gen, &config);
        pinned.record_case(&case);
        plain.record_case(&case);
    }
    let config_bins = [
        "keepRecent: 1",
        "bytesPerToken: 1",
        "wire format: openai",
        "threshold: 0.7",
    ];
    for bin in config_bins {
        assert!(
            plain.missing().iter().any(|m| m == bin),
            "{bin}: {:?}",
            plain.missing()
        );
        assert!(!pinned.missing().iter().any(|m| m == bin), "{bin}");
    }
    // The generator's own gaps are gaps still.
    assert!(pinned.missing().iter().any(|m| m == "content class: emoji"));
    let text = pinned.to_string();
    assert!(text.contains("← pinned by --config"), "{text}");
    let keep_recent = text.lines().find(|l| l.starts_with("keepRecent")).unwrap();
    assert!(
        keep_recent.ends_with("← pinned by --config"),
        "{keep_recent}"
    );
    assert!(
        text.contains("pinned by --config (every case has its one value): wire format, bytesPerToken, keepRecent, threshold, transportMaxBodyBytes, contextWindow, effective window set by, summaryMaxBytes, envelope bytes"),
        "{text}"
    );
    let footer = text
        .lines()
        .find(|l| l.starts_with("never reached:"))
        .unwrap();
    assert!(
        !footer.contains("keepRecent") && !footer.contains("threshold"),
        "{footer}"
    );
    // Read back from a report, and merged, it is still pinned.
    let back = Coverage::from_json(&pinned.to_json()).unwrap();
    assert_eq!(back, pinned);
    let mut merged = Coverage::new();
    merged.merge(&back);
    assert_eq!(merged.missing(), pinned.missing());
    assert!(plain.to_json().get("pinnedByConfig").is_none());
}
