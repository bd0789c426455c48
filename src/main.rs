//! The `ctxgate` binary: see [`cli`] for the commands. Thin by design
//! (STYLE habit 10): everything a user might call from Rust is in the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
