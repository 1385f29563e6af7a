//! The server profiles as a user meets them: `list machines` grouped by era, a NUMA table
//! that is wrong named by its field, and `bench sim --cpus`'s errors.

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
fn list_machines_groups_them_by_era() {
    let (code, out, err) = schedkit(&["list", "machines"]);
    assert_eq!(code, 0, "{err}");
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("no '{s}' in\n{out}"));
    // Each heading, then its machines, indented, before the next heading.
    assert!(at("2002 SMP\n") < at("  smp8-2002 ") && at("  smp8-2002 ") < at("2007 (CFS)\n"));
    assert!(
        at("today's servers\n") < at("  epyc-7763-2s ")
            && at("  spr-8480-2s ") < at("this machine\n")
    );
    assert!(out.contains("256 CPUs in 2 NUMA nodes"), "{out}");
}

#[test]
fn a_bad_numa_table_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/epyc-7763-2s.toml"
    ))
    .unwrap()
    .replace(
        "distance = [[10, 32], [32, 10]]",
        "distance = [[10, 32], [31, 10]]",
    );
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, text).unwrap();
    let (code, _, err) = schedkit(&[
        "sim",
        "--machine",
        p.to_str().unwrap(),
        "--duration",
        "1ms",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("numa.distance[0][1]") && err.contains("the same both ways"),
        "{err}"
    );
}

#[test]
fn bench_sim_cpus_refuses_what_it_cannot_cut() {
    let (code, _, err) = schedkit(&["bench", "sim", "--cpus", "0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--cpus") && err.contains("between 1 and 256"),
        "{err}"
    );
    // 24 CPUs: a CCX and a half.
    let (code, _, err) = schedkit(&["bench", "sim", "--cpus", "24"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--cpus") && err.contains("cpus_per_cache"),
        "{err}"
    );
}
