//! Small counterexamples under a pinned production config (issue 28,
//! item 4). Under `--config` the shrinker may not move the ceiling, so a
//! body just over it used to stay as generated — 29 messages at Express's
//! 100 KB, 83 at nginx's 1 MiB — because removing any message took the
//! body under. The fold moves keep the body's bytes while they remove
//! messages; these tests hold the result to at most five messages, within
//! the default shrink budget.

use ctxgate::check::{self, CheckOptions};
use ctxgate::config::Config;
use ctxgate::generate::{case_for_config, GenConfig};
use ctxgate::oracle::{Invariant, InvariantSet};
use ctxgate::subject::defects::Defect;

const SEED: u64 = 1;
const CASES: u64 = 200;
const MAX_MESSAGES: usize = 5;

fn example(name: &str) -> Config {
    let path = format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    Config::from_value(value).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The first case of `SEED` under `config` on which `defect` breaks
/// `inv`, run and shrunk as `check --config` does; the shrunk fixture's
/// messages, after checking it still breaks `inv` under that very config.
fn shrunk(defect: Defect, config_file: &str, inv: Invariant) -> usize {
    let config = example(config_file);
    let gen = GenConfig::default();
    let mut subject = defect.subject();
    let set = InvariantSet::from_iter([inv]);
    let first = (0..CASES)
        .find(|&i| {
            let case = case_for_config(SEED, i, &gen, &config);
            ctxgate::harness::run_case(&mut subject, &case.config, &case.messages, set)
                .failed()
                .contains(&inv)
        })
        .unwrap_or_else(|| panic!("{} never breaks {inv} under {config_file}", defect.name()));
    let opts = CheckOptions {
        cases: first + 1,
        seed: SEED,
        invariants: set,
        config: Some(config.clone()),
        ..CheckOptions::default()
    };
    let report = check::run(&mut subject, &opts, &mut |_| {});
    let f = report
        .failures
        .iter()
        .find(|f| f.invariant == inv)
        .expect("check finds the failure run_case found");
    let fx = &f.fixture;
    assert_eq!(fx.config, config, "shrinking kept the pinned config");
    ctxgate::model::check_well_formed(&fx.messages).expect("the shrunk case is well formed");
    let again = ctxgate::harness::run_case(&mut subject, &fx.config, &fx.messages, set);
    assert!(again.failed().contains(&inv), "the shrunk case still fails");
    let msgs = fx.messages.len();
    println!(
        "{} {config_file} {inv}: case {first}, {} messages / {} bytes shrunk to {msgs} / {}",
        defect.name(),
        f.original_size.0,
        f.original_size.1,
        ctxgate::body::body_bytes(&fx.config, &fx.messages),
    );
    assert!(
        msgs <= MAX_MESSAGES,
        "{} under {config_file}: {inv} shrank to {msgs} messages: {}",
        defect.name(),
        fx.to_json()
    );
    msgs
}

#[test]
fn a_body_failure_at_1_mib_shrinks_to_five_messages() {
    shrunk(
        Defect::WindowIgnoresCeiling,
        "nginx-1mib.config.json",
        Invariant::BodyUnderCeiling,
    );
}

#[test]
fn a_body_failure_at_100_kb_shrinks_to_five_messages() {
    shrunk(
        Defect::WindowIgnoresCeiling,
        "express-100kb.config.json",
        Invariant::BodyUnderCeiling,
    );
}

#[test]
fn a_session_failure_at_1_mib_shrinks_to_five_messages() {
    shrunk(
        Defect::WindowIgnoresCeiling,
        "nginx-1mib.config.json",
        Invariant::SessionNeverOverflows,
    );
}

// Its own test, so that the two slow session shrinks run side by side.
#[test]
fn a_session_failure_at_100_kb_shrinks_to_five_messages() {
    shrunk(
        Defect::CharsNotBytes,
        "express-100kb.config.json",
        Invariant::SessionNeverOverflows,
    );
}
