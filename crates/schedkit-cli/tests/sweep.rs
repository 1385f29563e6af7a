//! `schedkit sweep`: a grid run on several cores gives one row per point, in grid order, equal
//! to what `schedkit sim` gives for that point; a sweep killed part way resumes from its
//! journal without running a point twice; a bad grid is refused with its line.

use serde_json::{Map, Value};
use std::path::Path;
use std::process::Command;

fn schedkit(args: &[&str], dir: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedkit"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

const GRID: &str = r#"
policies = ["goodness", "o1"]
machines = ["smp2-2002"]
workloads = ["yield:instances={2,4}", "chat:rooms=2,messages=20"]
seeds = "1..=3"
duration = "50ms"
"#;

fn journal(dir: &Path, name: &str) -> Vec<Map<String, Value>> {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The row without the host's wall time.
fn comparable(mut r: Map<String, Value>) -> Map<String, Value> {
    r.remove("metrics.sim.wall_s");
    r
}

#[test]
fn a_sweep_writes_every_point_and_resumes_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("grid.toml"), GRID).unwrap();
    let (code, err) = schedkit(
        &[
            "sweep",
            "grid.toml",
            "-o",
            "all.parquet",
            "--jobs",
            "2",
            "--quiet",
        ],
        d,
    );
    assert_eq!(code, 0, "{err}");
    let csv = std::fs::read_to_string(d.join("all.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 3 * 3, "header and 18 rows");
    let parquet = std::fs::read(d.join("all.parquet")).unwrap();
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
    // Grid order: policies outermost, seeds innermost.
    let second = csv.lines().nth(2).unwrap();
    assert!(
        second.contains("goodness,smp2-2002,yield:instances=2,2,"),
        "{second}"
    );

    // A sweep stopped after 7 points, the 8th cut short mid-line.
    let full = journal(d, "all.jsonl");
    let text = std::fs::read_to_string(d.join("all.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut cut = lines[..7].join("\n");
    cut.push('\n');
    cut.push_str(&lines[7][..lines[7].len() / 2]);
    std::fs::write(d.join("part.jsonl"), cut).unwrap();
    let (code, err) = schedkit(
        &[
            "sweep",
            "grid.toml",
            "-o",
            "part.csv",
            "--jobs",
            "2",
            "--quiet",
        ],
        d,
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("resuming: 7 of 18"), "{err}");
    assert!(err.contains("cut short"), "{err}");
    assert!(err.contains("(11 this time)"), "{err}");
    let resumed = journal(d, "part.jsonl");
    // The cut line was repaired: every row once, and each equal to the uninterrupted sweep's.
    let mut keys: Vec<&str> = resumed.iter().map(|r| r["key"].as_str().unwrap()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 18);
    assert_eq!(resumed.len(), 18);
    let by_key = |rows: &[Map<String, Value>], k: &str| {
        comparable(rows.iter().find(|r| r["key"] == k).unwrap().clone())
    };
    for k in keys {
        assert_eq!(by_key(&full, k), by_key(&resumed, k), "{k}");
    }
    // The resumed table has the same columns and rows, in grid order.
    let a = std::fs::read_to_string(d.join("part.csv")).unwrap();
    assert_eq!(a.lines().next(), csv.lines().next());
    let first_fields = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split(",0.05,").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(first_fields(&a), first_fields(&csv));
}

#[test]
fn a_journal_row_without_its_newline_or_with_edited_inputs_does_not_corrupt_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("grid.toml"),
        "policies = \"o1\"\nmachines = \"up-2002\"\nworkloads = \"yield:instances=2\"\nseeds = \"1..=3\"\nduration = \"20ms\"\n",
    )
    .unwrap();
    let run = || {
        schedkit(
            &[
                "sweep",
                "grid.toml",
                "-o",
                "t.csv",
                "--quiet",
                "--jobs",
                "1",
            ],
            d,
        )
    };
    let (code, err) = run();
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(d.join("t.jsonl")).unwrap();
    let seed1 = text.lines().find(|l| l.contains("\"seed\":1,")).unwrap();
    let seed2 = text.lines().find(|l| l.contains("\"seed\":2,")).unwrap();
    // Killed between a whole row and its newline (an older version wrote them apart), with
    // seed 1's row edited to another seed.
    let edited = seed1.replace("\"seed\":1,", "\"seed\":7,");
    std::fs::write(d.join("t.jsonl"), format!("{edited}\n{seed2}")).unwrap();
    let (code, err) = run();
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("does not match its key") && err.contains("seed 7"),
        "{err}"
    );
    assert!(err.contains("(2 this time)"), "{err}");
    // Once more: the journal reads back whole (every line a row), no point runs again.
    let (code, err) = run();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(0 this time)"), "{err}");
    let csv = std::fs::read_to_string(d.join("t.csv")).unwrap();
    assert!(!csv.contains(",7,"), "{csv}");
    assert_eq!(csv.lines().count(), 4);
}

#[test]
fn a_sweep_row_is_what_sim_gives_for_its_point() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("grid.toml"), GRID).unwrap();
    let (code, err) = schedkit(&["sweep", "grid.toml", "-o", "s.csv", "--quiet"], d);
    assert_eq!(code, 0, "{err}");
    let rows = journal(d, "s.jsonl");
    let row = rows
        .iter()
        .find(|r| {
            r["policy"] == "o1" && r["workload"] == "chat:rooms=2,messages=20" && r["seed"] == 3
        })
        .unwrap();
    let (code, err) = schedkit(
        &[
            "sim",
            "--policy",
            "o1",
            "--machine",
            "smp2-2002",
            "--workload",
            "chat:rooms=2,messages=20",
            "--seed",
            "3",
            "--duration",
            "50ms",
            "--quiet",
            "--json",
            "one.json",
        ],
        d,
    );
    assert_eq!(code, 0, "{err}");
    let sim: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("one.json")).unwrap()).unwrap();
    fn flat(prefix: String, v: &Value, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(m) => m
                .iter()
                .for_each(|(k, x)| flat(format!("{prefix}.{k}"), x, out)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| flat(format!("{prefix}.{i}"), x, out)),
            x => out.push((prefix, x.clone())),
        }
    }
    let mut all = Vec::new();
    flat("metrics".into(), &sim["metrics"], &mut all);
    let mut checked = 0;
    for (k, v) in all {
        if k == "metrics.sim.wall_s" {
            continue;
        }
        if let Some(x) = row.get(&k) {
            assert_eq!(x, &v, "{k}");
            checked += 1;
        }
    }
    assert!(checked > 40, "{checked} columns compared");
    assert_eq!(
        row["metrics.throughput.value"],
        sim["metrics"]["throughput"]["value"]
    );
    assert_eq!(
        row["metrics.wakeup_latency_us.p99"],
        sim["metrics"]["wakeup_latency_us"]["p99"]
    );
    assert_eq!(row["simulated_s"], sim["simulated_s"]);
}

#[test]
fn a_bad_grid_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("bad.toml"),
        "policies = [\"o1\"]\nmachines = [\"smp2-2002\"]\nworkloads = [\n  \"yield\",\n  \"chat:rooms=x\",\n]\n",
    )
    .unwrap();
    let (code, err) = schedkit(&["sweep", "bad.toml", "-o", "x.parquet"], d);
    assert_ne!(code, 0);
    assert!(err.contains("line 5"), "{err}");
    assert!(err.contains("rooms"), "{err}");
    let (code, err) = schedkit(&["sweep", "bad.toml", "-o", "x.txt"], d);
    assert_ne!(code, 0);
    assert!(err.contains(".parquet or .csv"), "{err}");
    assert!(
        !d.join("x.jsonl").exists(),
        "nothing written for a refused grid"
    );
}
