//! The `schedkit` binary: the command line of `lib.rs` with the built-in policies only.

fn main() -> std::process::ExitCode {
    schedkit_cli::main_with(&[])
}
