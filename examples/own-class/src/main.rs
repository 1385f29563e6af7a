//! schedkit's whole command line, with this crate's classes beside the built-in policies:
//! `own-class sim --policy fifo ...`, `own-class compare --policies fifo,lottery,o1 ...`.

fn main() -> std::process::ExitCode {
    schedkit_cli::main_with(&[&schedkit_own_class::FIFO, &schedkit_own_class::LOTTERY])
}
