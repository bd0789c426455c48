//! `cargo +nightly fuzz run parse`: glue only; the logic and its contract
//! are `ctxgate::fuzzing::parse_target` (smoke-tested on stable by
//! tests/fuzz_smoke.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxgate::fuzzing::parse_target(data));
