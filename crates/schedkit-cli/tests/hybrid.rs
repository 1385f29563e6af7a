//! Hybrid machines from the command line: the profiles load, a run reports where the busy
//! time went by core type, and a bad `uclamp` names the file, the line and the problem.

use std::process::Command;

fn schedkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedkit"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_hybrid_run_reports_busy_time_and_energy_by_core_type() {
    let json =
        std::env::temp_dir().join(format!("schedkit-hybrid-cli-{}.json", std::process::id()));
    let (code, out, err) = schedkit(&[
        "sim",
        "--machine",
        "exynos5422",
        "--policy",
        "eevdf:era=6.18",
        "--workload",
        "examples/hybrid-mix.toml",
        "--duration",
        "1s",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("busy time on big/P cores"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let types = v["metrics"]["power"]["by_core_type"].as_array().unwrap();
    let names: Vec<&str> = types.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["LITTLE (Cortex-A7)", "big (Cortex-A15)"]);
    let share: f64 = types
        .iter()
        .map(|t| t["busy_share"].as_f64().unwrap())
        .sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    // A machine of one kind of core has no such row.
    let (_, out, _) = schedkit(&[
        "sim",
        "--machine",
        "i7-m620",
        "--policy",
        "eevdf:era=6.18",
        "--duration",
        "100ms",
    ]);
    assert!(!out.contains("big/P"), "{out}");
}

#[test]
fn a_bad_uclamp_names_the_file_line_and_problem() {
    let path = std::env::temp_dir().join(format!("schedkit-uclamp-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "name = \"x\"\n[[group]]\nname = \"g\"\nuclamp = [50, 20]\nprogram = [\"loop 2\", \"compute 1ms\", \"end\"]\n",
    )
    .unwrap();
    let (code, _, err) = schedkit(&[
        "sim",
        "--machine",
        "exynos5422",
        "--workload",
        path.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("line 4") && err.contains("uclamp [50, 20]") && err.contains("percent"),
        "{err}"
    );
}
