//! `cargo +nightly fuzz run conformance`: libFuzzer's bytes as ctxgate
//! cases, every invariant checked on the trimmer; a violation panics with
//! the SPEC §7 fixture to save.
#![no_main]

#[path = "../../tests/support/adapter.rs"]
mod adapter;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ctxgate::testing::fuzz_case(&mut adapter::subject(), data);
});
