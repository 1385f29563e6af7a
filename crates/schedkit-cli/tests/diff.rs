//! `schedkit diff`: the first differing decision of two policies, and its errors.

use std::process::Command;

fn schedkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedkit"))
        .args(args)
        .output()
        .expect("schedkit runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn o1_against_its_2002_era_prints_the_first_differing_decision() {
    let dir = std::env::temp_dir().join(format!("schedkit-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("diff.json");
    let (code, out, err) = schedkit(&[
        "diff",
        "o1",
        "o1:era=2002",
        "yield:instances=4",
        "--duration",
        "300ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("First differing decision: #"), "{out}");
    // Both sides' decisions, each on its own line, and each side's state.
    let sides: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  o1 ") || l.starts_with("  o1:era=2002 "))
        .collect();
    assert_eq!(sides.len(), 2, "{out}");
    assert!(
        sides.iter().all(|l| l.contains(" s  pick on CPU ")
            || l.contains(" s  wakeup of ")
            || l.contains(" s  new task ")),
        "{out}"
    );
    assert!(out.contains("o1 at decision #"), "{out}");
    assert!(out.contains("o1:era=2002 at decision #"), "{out}");
    assert!(out.contains("the rule that chose: O(1)"), "{out}");
    assert!(out.contains("runqueue (nr_running"), "{out}");
    assert!(out.contains("Figures of both runs"), "{out}");
    assert!(out.contains("context switches/s"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let i = v["first"].as_u64().expect("a first difference in the JSON");
    assert_eq!(v["a"]["at"]["index"].as_u64(), Some(i));
    assert_eq!(v["b"]["at"]["index"].as_u64(), Some(i));
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(2));
    assert!(
        out.contains(&format!("First differing decision: #{i} ")),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_policy_against_itself_differs_nowhere() {
    let (code, out, err) = schedkit(&[
        "diff",
        "cfs",
        "cfs",
        "yield:instances=2",
        "--duration",
        "50ms",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("No decision differs"), "{out}");
}

#[test]
fn an_unknown_policy_is_named() {
    let (code, out, err) = schedkit(&["diff", "o1", "o2", "yield:instances=4"]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("B (the second policy)"), "{err}");
    assert!(err.contains("o2"), "{err}");
    assert!(out.is_empty(), "{out}");
}

#[test]
fn a_bad_workload_and_limit_are_named() {
    let (code, _, err) = schedkit(&["diff", "o1", "cfs", "nosuch:x=1"]);
    assert_eq!(code, 2);
    assert!(err.contains("WORKLOAD"), "{err}");
    let (code, _, err) = schedkit(&["diff", "o1", "cfs", "yield", "--limit", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--limit"), "{err}");
}

#[test]
fn a_trace_file_is_replayed_under_both() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces/pipe-vm.txt");
    let (code, out, err) = schedkit(&["diff", "cfs", "eevdf", trace, "--duration", "200ms"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("First differing decision: #"), "{out}");
    assert!(out.contains("workload: pipe-vm.txt"), "{out}");
    assert!(out.contains("the rule that chose: EEVDF"), "{out}");
}
