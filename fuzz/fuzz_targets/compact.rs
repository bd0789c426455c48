//! `cargo +nightly fuzz run compact`: glue only; the logic and its contract
//! are `ctxgate::fuzzing::compact_target` (smoke-tested on stable by
//! tests/fuzz_smoke.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxgate::fuzzing::compact_target(data));
