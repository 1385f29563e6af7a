//! SCHED_DEADLINE from the command line: an rt-app file of deadline tasks runs, its figures are
//! in the JSON and the table, and an over-committed workload file is refused by admission
//! control with the group named.

use std::process::Command;

fn schedkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedkit"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn rtapp_deadline_example_runs_and_reports_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("dl.json");
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rt-app/deadline.json"
    );
    let (code, out, err) = schedkit(&[
        "sim",
        "--policy",
        "eevdf",
        "--machine",
        "smp2-2002",
        "--workload",
        example,
        "--duration",
        "1s",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("deadline jobs") && out.contains("past their deadline"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let d = &v["metrics"]["deadline"];
    assert_eq!(d["deadline_misses"], 0, "{d}");
    assert!(d["jobs"].as_u64().unwrap() > 300, "{d}");
    assert_eq!(d["tasks"].as_array().unwrap().len(), 3, "{d}");
}

#[test]
fn an_overcommitted_workload_file_is_refused_naming_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("over.toml");
    std::fs::write(
        &w,
        "[[group]]\nname = \"big\"\ncount = 2\npolicy = \"deadline\"\ndl_runtime = \"6ms\"\n\
         dl_deadline = \"10ms\"\nprogram = [\"compute 1ms\"]\n",
    )
    .unwrap();
    let (code, _, err) = schedkit(&[
        "sim",
        "--policy",
        "eevdf",
        "--machine",
        "up-2002",
        "--workload",
        w.to_str().unwrap(),
        "--duration",
        "100ms",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("group 'big'") && err.contains("-EBUSY"),
        "{err}"
    );
}
