//! `--starve` and `--starve-stop` as a user meets them: the report after the figures, the
//! `starved` array in --json, the stop, nothing without the flag, and the errors.

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

/// A SCHED_FIFO hog that computes 2 s, then sleeps, beside an ordinary task on one CPU.
const HOG: &str = r#"
[[group]]
name = "hog"
policy = "fifo"
rt_priority = 50
program = ["loop forever", "compute 2s", "sleep 1s", "end"]

[[group]]
name = "victim"
program = ["loop forever", "compute 10ms", "count", "end"]
"#;

fn hog_file(dir: &tempfile::TempDir) -> String {
    let p = dir.path().join("hog.toml");
    std::fs::write(&p, HOG).unwrap();
    p.display().to_string()
}

fn json_of(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn sim_reports_the_starved_task_after_the_figures_and_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let w = hog_file(&dir);
    let j = dir.path().join("r.json");
    let (code, out, err) = schedkit(&[
        "sim",
        "--policy",
        "o1",
        "--machine",
        "up-2002",
        "--workload",
        &w,
        "--duration",
        "2500ms",
        "--starve",
        "1s",
        "--quiet",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let at = out.find("starvation watchdog").expect(&out);
    assert!(at > out.find("longest runnable wait").unwrap(), "{out}");
    let report = &out[at..];
    assert!(
        report.contains("1 task waited runnable 1.000 s or longer"),
        "{report}"
    );
    assert!(report.contains("victim[0]"), "{report}");
    assert!(
        report.contains("runnable since 0 s, waited 2.00"),
        "{report}"
    );
    assert!(report.contains("meanwhile on cpu0: hog[0]"), "{report}");
    let v = json_of(&j);
    let s = &v["starved"];
    assert_eq!(s.as_array().unwrap().len(), 1, "{s}");
    assert_eq!(s[0]["name"], "victim");
    assert_eq!(s[0]["still_waiting"], false);
    assert_eq!(s[0]["ran_meanwhile"][0]["top"][0]["name"], "hog");
    assert_eq!(v["starved_total"], 1);
    assert_eq!(v["starve_threshold_s"], 1.0);
}

#[test]
fn without_the_flag_there_is_no_watchdog() {
    let dir = tempfile::tempdir().unwrap();
    let w = hog_file(&dir);
    let j = dir.path().join("r.json");
    let (code, out, err) = schedkit(&[
        "sim",
        "--machine",
        "up-2002",
        "--workload",
        &w,
        "--duration",
        "2500ms",
        "--quiet",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("starvation watchdog"), "{out}");
    let v = json_of(&j);
    for k in ["starved", "starved_total", "starve_threshold_s"] {
        assert!(v.get(k).is_none(), "{k} in {v}");
    }
}

#[test]
fn starve_stop_ends_the_run_with_stop_reason_starved() {
    let dir = tempfile::tempdir().unwrap();
    let w = hog_file(&dir);
    let j = dir.path().join("r.json");
    let (code, out, err) = schedkit(&[
        "compare",
        "--policies",
        "o1,cfs",
        "--machine",
        "up-2002",
        "--workload",
        &w,
        "--duration",
        "2500ms",
        "--starve",
        "500ms",
        "--starve-stop",
        "--quiet",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("stopped at 0.50") && out.contains("(--starve-stop)"),
        "{out}"
    );
    let v = json_of(&j);
    for r in v.as_array().unwrap() {
        assert_eq!(r["stop_reason"], "starved", "{}", r["policy"]);
        let s = r["simulated_s"].as_f64().unwrap();
        assert!((0.5..0.52).contains(&s), "{} stopped at {s}", r["policy"]);
        assert_eq!(r["starved"][0]["name"], "victim");
        assert_eq!(r["starved"][0]["still_waiting"], true);
    }
    // Each policy's report follows its table.
    assert_eq!(out.matches("starvation watchdog (").count(), 2, "{out}");
}

#[test]
fn bad_thresholds_are_refused_with_the_flag_named() {
    for (arg, want) in [
        ("0", "must be longer than 0"),
        ("1x", "unknown unit 'x'"),
        ("-1s", "'--starve <DURATION>'"),
    ] {
        let (code, _, err) = schedkit(&["sim", "--starve", arg, "--duration", "10ms"]);
        assert_eq!(code, 2, "{arg}: {err}");
        assert!(
            err.contains("--starve") && err.contains(want),
            "{arg}: {err}"
        );
    }
    let (code, _, err) = schedkit(&["sim", "--starve-stop", "--duration", "10ms"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--starve <DURATION>"), "{err}");
}

#[test]
fn replay_reports_the_replays_starved_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces/messaging-vm.txt");
    let (code, out, err) = schedkit(&[
        "replay",
        trace,
        "--policies",
        "recorded,o1",
        "--machine",
        "host",
        "--starve",
        "2ms",
        "--json",
        j.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let at = out
        .find("starvation watchdog (o1, --starve 2.0 ms): ")
        .expect(&out);
    assert!(out[at..].contains("meanwhile on cpu0: "), "{}", &out[at..]);
    let v = json_of(&j);
    let cols = v["columns"].as_array().unwrap();
    assert!(
        cols[0].get("starved").is_none(),
        "the recorded column has no replay"
    );
    let s = cols[1]["starved"].as_array().unwrap();
    assert!(!s.is_empty());
    // Longest first, each at least the threshold.
    let waits: Vec<f64> = s.iter().map(|t| t["waited_s"].as_f64().unwrap()).collect();
    assert!(waits.windows(2).all(|w| w[0] >= w[1]), "{waits:?}");
    assert!(waits.iter().all(|&w| w >= 0.002), "{waits:?}");
}
