//! The trimmer against ctxgate: a proptest property over ctxgate's
//! generated histories, a whole `ctxgate check` run in process, and the
//! fuzz target's body on stable.

#[path = "support/adapter.rs"]
mod adapter;

use ctxgate::check::CheckOptions;
use ctxgate::testing::{cases, check, check_case, fuzz_case};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256)
    ))]

    /// Every invariant the trimmer claims holds on every generated case; a
    /// failure is shrunk by ctxgate's shrinker and printed as a fixture.
    #[test]
    fn the_trimmer_conforms(case in cases()) {
        check_case(&mut adapter::subject(), &case)?;
    }
}

/// A whole run, as `ctxgate check` makes it: the run must have exercised
/// every invariant (a run that checked nothing is not ok).
#[test]
fn a_check_run_passes_and_exercises_every_invariant() {
    let opts = CheckOptions {
        cases: 300,
        seed: 7,
        ..CheckOptions::default()
    };
    let report = check(&mut adapter::subject(), &opts);
    assert!(
        report.ok(),
        "{}",
        ctxgate::report::human(&report, &Default::default())
    );
    assert!(
        report.not_checked().is_empty(),
        "{:?}",
        report.not_checked()
    );
}

/// The harness is not fooled: a trimmer that forgets the tool-call
/// arguments (the pre-ADR estimator) is caught by the same property.
#[test]
fn a_content_only_estimate_is_caught() {
    use ctxgate::subject::EstimateAnswer;
    let mut subject = ctxgate::testing::Compactor::new("content-only", "0", adapter::compact)
        .with_estimate(|config, msgs| {
            let per: Vec<u64> = msgs
                .iter()
                .map(|m| (m.content.text().len() as u64).div_ceil(config.bytes_per_token))
                .collect();
            EstimateAnswer {
                tokens: per.iter().sum(),
                per_message: Some(per),
            }
        })
        .into_subject();
    let opts = CheckOptions {
        cases: 200,
        seed: 7,
        shrink_runs: 50,
        ..CheckOptions::default()
    };
    let report = check(&mut subject, &opts);
    assert!(!report.ok());
    assert!(
        report
            .failures
            .iter()
            .any(|f| f.invariant.name() == "estimate-covers-tool-calls"),
        "{:?}",
        report
            .failures
            .iter()
            .map(|f| f.invariant.name())
            .collect::<Vec<_>>()
    );
}

/// The fuzz target's body runs on stable too: arbitrary bytes never make
/// the trimmer fail.
#[test]
fn the_fuzz_body_holds_on_random_bytes() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut subject = adapter::subject();
    for len in (0..4096).step_by(7) {
        let data: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        fuzz_case(&mut subject, &data);
    }
}
