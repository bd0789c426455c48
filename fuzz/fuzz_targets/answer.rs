//! `cargo +nightly fuzz run answer`: glue only; the logic and its contract
//! are `ctxgate::fuzzing::answer_target` (smoke-tested on stable by
//! tests/fuzz_smoke.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxgate::fuzzing::answer_target(data));
