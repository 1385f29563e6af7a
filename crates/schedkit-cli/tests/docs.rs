//! The docs' tables of simulated figures are what their commands print: the fast set of
//! `scripts/check-docs.py` (seconds) reruns each command with this build's binary and compares
//! every cell. `python3 scripts/check-docs.py --full` adds the tables whose runs take minutes and
//! the shape checks of the tables of machine-measured figures (`--shapes`), which run in real
//! time and are not part of this test.

use std::process::Command;

#[test]
fn the_docs_tables_are_what_their_commands_print() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = match Command::new("python3")
        .arg(format!("{root}/scripts/check-docs.py"))
        .args(["--schedkit", env!("CARGO_BIN_EXE_schedkit")])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            // The check is a Python script; say so in the log rather than pass in silence.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED the_docs_tables_are_what_their_commands_print: no python3 ({e})"
            );
            return;
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    assert!(
        out.status.success(),
        "the docs disagree with their commands:\n{err}"
    );
    assert!(err.contains(" 0 differences"), "{err}");
}
