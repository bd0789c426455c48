//! `cargo +nightly fuzz run agent_request`: glue only; the logic and its contract
//! are `ctxgate::fuzzing::agent_request_target` (smoke-tested on stable by
//! tests/fuzz_smoke.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxgate::fuzzing::agent_request_target(data));
