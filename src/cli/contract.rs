//! `ctxgate contract`: print the contract this binary implements
//! (docs/contract.md, built in), so that a user of a release — the wheel,
//! the npm package, a binary alone — reads the very words it judges by.

use clap::Args as ClapArgs;

use super::common::CliError;

/// The contract, as built into this binary.
pub const CONTRACT: &str = include_str!("../../docs/contract.md");

#[derive(Debug, ClapArgs)]
pub struct Args {}

pub fn run(_: Args) -> Result<(), CliError> {
    out!("{CONTRACT}");
    Ok(())
}
