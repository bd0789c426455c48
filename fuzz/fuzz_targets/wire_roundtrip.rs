//! `cargo +nightly fuzz run wire_roundtrip`: glue only; the logic and its contract
//! are `ctxgate::fuzzing::wire_roundtrip_target` (smoke-tested on stable by
//! tests/fuzz_smoke.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxgate::fuzzing::wire_roundtrip_target(data));
