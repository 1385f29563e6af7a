//! The template's binary runs its classes under schedkit's own subcommands, with figures.

use std::process::Command;

fn own_class(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_own-class"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the own-class binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "own-class {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The value in `column` (0-based, after the metric's name) of the row starting with `metric`.
fn figure(table: &str, metric: &str, column: usize) -> f64 {
    let row = table
        .lines()
        .find(|l| l.starts_with(metric))
        .unwrap_or_else(|| panic!("no row '{metric}' in:\n{table}"));
    let cell = row[metric.len()..]
        .split_whitespace()
        .nth(column)
        .unwrap_or_else(|| panic!("no column {column} in '{row}'"));
    let (num, scale) = match cell.strip_suffix('M') {
        Some(n) => (n, 1e6),
        None => (cell, 1.0),
    };
    num.parse::<f64>()
        .unwrap_or_else(|e| panic!("'{cell}' in '{row}': {e}"))
        * scale
}

#[test]
fn sim_runs_fifo_with_figures() {
    let t = own_class(&[
        "sim",
        "--policy",
        "fifo",
        "--workload",
        "yield:instances=4",
        "--duration",
        "100ms",
        "--audit-every",
        "1",
    ]);
    assert!(t.lines().any(|l| l.trim_end().ends_with("fifo")), "{t}");
    assert!(figure(&t, "throughput (yields/s)", 0) > 0.0, "{t}");
    // Four yielders on two CPUs, each yield a switch to the next in line.
    assert!(figure(&t, "context switches/s", 0) > 0.0, "{t}");
    assert_eq!(
        figure(&t, "migrations", 0),
        0.0,
        "fifo never balances:\n{t}"
    );
}

#[test]
fn compare_runs_both_classes_beside_a_builtin() {
    let t = own_class(&[
        "compare",
        "--policies",
        "fifo,lottery,o1",
        "--workload",
        "hackbench:groups=1",
        "--duration",
        "200ms",
        "--audit-every",
        "1",
    ]);
    let header = t.lines().find(|l| l.starts_with("metric")).expect(&t);
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["metric", "fifo", "lottery", "o1"],
        "{t}"
    );
    for col in 0..3 {
        assert!(figure(&t, "throughput (messages/s)", col) > 0.0, "{t}");
    }
}

#[test]
fn replay_runs_a_recorded_trace_under_fifo() {
    let t = own_class(&[
        "replay",
        "../../traces/trace-cmd-pipe.txt.gz",
        "--policies",
        "recorded,fifo,lottery",
        "--machine",
        "smp2-2002",
    ]);
    let header = t.lines().find(|l| l.contains("recorded")).expect(&t);
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["recorded", "fifo", "lottery"],
        "{t}"
    );
    // The trace's tasks wake, switch and fork under the replaying classes too (how many
    // wakeups find their task still running depends on the machine, as it does for eevdf).
    for col in 1..3 {
        assert!(figure(&t, "wakeups", col) > 0.0, "{t}");
        assert!(figure(&t, "context switches", col) > 0.0, "{t}");
        assert!(figure(&t, "span (s)", col) > 0.0, "{t}");
    }
    let forks = t
        .lines()
        .find(|l| l.starts_with("forks / exits"))
        .expect(&t);
    assert_eq!(
        forks.matches("3 / ").count(),
        3,
        "three forks in every column: {forks}"
    );
}

#[test]
fn list_policies_shows_the_classes_after_the_builtins() {
    let t = own_class(&["list", "policies"]);
    let names: Vec<&str> = t
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let o1 = names.iter().position(|n| *n == "o1").expect(&t);
    let fifo = names.iter().position(|n| *n == "fifo").expect(&t);
    let lottery = names.iter().position(|n| *n == "lottery").expect(&t);
    assert!(o1 < fifo && fifo < lottery, "{t}");
}

#[test]
fn an_unknown_policy_names_the_classes_among_the_known() {
    let out = Command::new(env!("CARGO_BIN_EXE_own-class"))
        .args(["sim", "--policy", "fifo2", "--workload", "yield"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown policy 'fifo2'"), "{err}");
    assert!(err.contains("fifo, lottery"), "{err}");
}

/// The lottery's draws are seeded per CPU: a run is a pure function of its inputs, every figure
/// but the host's wall time the same twice.
#[test]
fn a_lottery_run_is_the_same_twice() {
    let run = || {
        own_class(&[
            "sim",
            "--policy",
            "lottery",
            "--machine",
            "smp4-2002",
            "--workload",
            "chat:rooms=4,messages=100+yield:instances=4,nice=5",
            "--duration",
            "300ms",
        ])
        .lines()
        .filter(|l| !l.starts_with("sim wall"))
        .map(str::to_string)
        .collect::<Vec<_>>()
    };
    let a = run();
    assert!(a.len() > 10, "{a:?}");
    assert_eq!(a, run());
}
