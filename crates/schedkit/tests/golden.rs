//! Golden figures: every registered policy on short runs of a few workloads over profiles of
//! each kind (UP, 4-way SMP, SMT, frequency-scaled with ondemand), every figure of each run's
//! result compared exactly with `tests/golden/figures.json`. The runs and the comparison are
//! `schedkit::conformance::golden`'s, which a class outside schedkit uses for its own file. The simulator is a pure function
//! of its inputs, so any difference is a change of behaviour: on purpose, rewrite the file
//! with `SCHEDKIT_BLESS=1 cargo test -p schedkit --test golden` and say in the commit what
//! moved and why; by accident, the failure names the run and the figures that moved.

use schedkit::conformance::golden::{self, figures, key, report, MACHINES, WORKLOADS};
use schedkit::registry::PolicyKind;
use serde_json::Value;
use std::collections::BTreeMap;

fn path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/figures.json")
}

#[test]
fn every_policy_keeps_its_golden_figures() {
    let mut now = BTreeMap::new();
    for &p in PolicyKind::ALL {
        for &(m, g) in MACHINES {
            for &w in WORKLOADS {
                now.insert(key(p, m, g, w), figures(p, m, g, w).unwrap());
            }
        }
    }
    let text = golden::to_text(&now);
    if std::env::var("SCHEDKIT_BLESS").is_ok() {
        std::fs::create_dir_all(path().parent().unwrap()).unwrap();
        std::fs::write(path(), &text).unwrap();
        eprintln!("blessed {} runs into {}", now.len(), path().display());
        return;
    }
    let golden: BTreeMap<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(path()).expect("tests/golden/figures.json (bless it first)"),
    )
    .unwrap();
    let report = report(&golden, &now);
    assert!(
        report.is_empty(),
        "{} differences from tests/golden/figures.json (rewrite it with SCHEDKIT_BLESS=1 if \
         the change is meant, and say why in the commit):\n{}",
        report.len(),
        report.join("\n")
    );
}

/// The library's golden figures of one policy (what `check_golden` keeps for a class of
/// another crate) are exactly that policy's part of the file above.
#[test]
fn the_library_golden_of_a_policy_is_its_part_of_the_file() {
    let kept: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(path()).unwrap()).unwrap();
    let part: BTreeMap<String, Value> = kept
        .into_iter()
        .filter(|(k, _)| k.starts_with("o1 | "))
        .collect();
    assert_eq!(part.len(), MACHINES.len() * WORKLOADS.len());
    assert_eq!(
        golden::golden(PolicyKind::O1).unwrap(),
        golden::to_text(&part)
    );
}

/// `check_golden` writes a missing file only when blessing, passes on its own output, and
/// names the run and the figure that moved.
#[test]
fn check_golden_names_what_moved() {
    if std::env::var_os("SCHEDKIT_BLESS").is_some() {
        return; // blessing writes instead of comparing
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("golden-check");
    let file = dir.join(format!("o1-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let e = golden::check_golden(PolicyKind::O1, &file).unwrap_err();
    assert!(e.contains("write it with SCHEDKIT_BLESS=1"), "{e}");
    std::fs::create_dir_all(&dir).unwrap();
    let text = golden::golden(PolicyKind::O1).unwrap();
    std::fs::write(&file, &text).unwrap();
    golden::check_golden(PolicyKind::O1, &file).unwrap();
    let mut runs: BTreeMap<String, Value> = serde_json::from_str(&text).unwrap();
    let k = "o1 | up-2002 | yield:instances=4";
    let m = runs.get_mut(k).unwrap()["metrics"].as_object_mut().unwrap();
    let cs = m["context_switches"].as_u64().unwrap();
    m.insert("context_switches".into(), Value::from(cs + 1));
    std::fs::write(&file, golden::to_text(&runs)).unwrap();
    let e = golden::check_golden(PolicyKind::O1, &file).unwrap_err();
    let _ = std::fs::remove_file(&file);
    assert!(
        e.contains(&format!(
            "{k}: .metrics.context_switches: golden {}, now {cs}",
            cs + 1
        )),
        "{e}"
    );
}
