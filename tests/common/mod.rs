//! What the integration tests share. Each test file takes what it needs
//! with `mod common;` (unused parts are allowed: not every file uses all).
#![allow(dead_code)]

pub mod netns;
pub mod process;
