//! The template's classes through schedkit's conformance checker and golden figures, as a
//! class of your own should be: `schedkit::conformance::check` runs the fixed script and
//! generated sequences of scheduling events on both hosts (the simulator, and the runtime
//! where it exists), audits the runqueues after every event and compares the two hosts'
//! decisions; `check_golden` keeps the class's figures on a fixed set of simulator runs in
//! `tests/golden/`. 64 sequences by default, to keep `cargo test` quick;
//! `SCHEDKIT_CONFORMANCE_CASES=10000 SCHEDKIT_CONFORMANCE_SEED=random cargo test --test
//! conformance` for a long pass.

use schedkit::conformance::{self, golden, Config};
use schedkit::registry::PolicyKind;
use schedkit_own_class::{fifo::Fifo, lottery::Lottery, FIFO};

fn config() -> Config {
    Config::default()
        .cases(64)
        .with_env()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn fifo_passes_the_conformance_suite() {
    let report = conformance::check::<Fifo>(&config()).unwrap_or_else(|f| panic!("{f}"));
    eprintln!("{report}");
    assert_eq!(report.classes, ["fifo"]);
    assert!(report.events_never_taken().is_empty(), "{report}");
}

#[test]
fn fifo_passes_it_registered_too() {
    // The same class reached through its registry entry (`PolicyKind::External`), as the
    // CLI and a sweep reach it.
    let report = conformance::check_policy(PolicyKind::External(&FIFO), &config().cases(16))
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(report.classes, ["fifo"]);
}

#[test]
fn lottery_passes_the_conformance_suite() {
    // Randomized, but each runqueue's generator is seeded from its CPU number and drawn only
    // under that runqueue's lock, in the order the core calls the hooks: both hosts draw the
    // same numbers, so they decide alike.
    let report = conformance::check::<Lottery>(&config()).unwrap_or_else(|f| panic!("{f}"));
    eprintln!("{report}");
    assert_eq!(report.classes, ["lottery"]);
}

#[test]
fn fifo_keeps_its_golden_figures() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/fifo.json");
    golden::check_golden(PolicyKind::External(&FIFO), path).unwrap_or_else(|e| panic!("{e}"));
}
