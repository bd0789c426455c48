//! `cargo +nightly fuzz run body_size`: glue only; the logic and its contract
//! are `ctxgate::fuzzing::body_size_target` (smoke-tested on stable by
//! tests/fuzz_smoke.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxgate::fuzzing::body_size_target(data));
