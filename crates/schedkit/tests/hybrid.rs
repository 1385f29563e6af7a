//! Scenarios on the hybrid profiles: eevdf:era=6.18's capacity- and energy-aware rules as the
//! simulator runs them (the rules themselves are pinned by hand in `policy/asym/tests.rs`),
//! and every built-in workload under every class on both hybrid profiles.

use schedkit::machine::Machine;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::workload::Workload;

/// Runs `program` as `count` tasks for 3 s and returns each core type's share of the busy
/// time and whether it is the biggest type.
fn shares(policy: &str, machine: &str, count: usize, program: &str) -> Vec<(String, f64, bool)> {
    let dir = std::env::temp_dir().join(format!("schedkit-hybrid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("w{}.toml", program.len() + count));
    std::fs::write(
        &path,
        format!(
            "name = \"scenario\"\nthroughput = \"units/s\"\n[[group]]\nname = \"t\"\ncount = {count}\nprogram = {program}\n"
        ),
    )
    .unwrap();
    let m = Machine::load(machine).unwrap();
    let w = Workload::parse(path.to_str().unwrap()).unwrap();
    let cfg = SimConfig {
        duration_ns: 3_000_000_000,
        seed: 1,
        ..Default::default()
    };
    let r = PolicyKind::parse(policy)
        .unwrap()
        .simulate(&m, &w, cfg)
        .unwrap();
    let p = r.metrics.power.expect("a hybrid profile has power figures");
    p.by_core_type
        .iter()
        .map(|t| (t.name.clone(), t.busy_share, t.biggest))
        .collect()
}

fn big_share(s: &[(String, f64, bool)]) -> f64 {
    s.iter().filter(|t| t.2).map(|t| t.1).sum()
}

const ALL8: &str = "affinity 0,1,2,3,4,5,6,7";

/// Small periodic tasks, started on the A15s, end up on the A7s under EAS: an A7 at a low
/// OPP costs less energy for the same work (`find_energy_efficient_cpu`).
#[test]
fn small_periodic_tasks_stay_on_little_cores_under_eas() {
    let s = shares(
        "eevdf:era=6.18",
        "exynos5422",
        4,
        &format!(
            r#"["affinity 4,5,6,7", "compute 100us", "{ALL8}", "loop forever", "sleep 16ms", "compute 500us", "end"]"#
        ),
    );
    assert_eq!(s.len(), 2, "{s:?}");
    assert!(big_share(&s) < 0.1, "small tasks ran on the A15s: {s:?}");
}

/// A hog started on an A7 outgrows it (misfit: its utilisation no longer fits 377 with the
/// 20 % margin) and moves to an A15, at a wakeup (a short sleep between bursts) ...
#[test]
fn a_hog_that_sleeps_moves_to_a_big_core() {
    let s = shares(
        "eevdf:era=6.18",
        "exynos5422",
        1,
        &format!(
            r#"["affinity 0", "compute 100us", "{ALL8}", "loop forever", "compute 30ms", "sleep 1ms", "end"]"#
        ),
    );
    assert!(big_share(&s) > 0.8, "the hog stayed on an A7: {s:?}");
}

/// ... and, never sleeping, through the misfit balance: an idle A15 finds the A7's misfit
/// load, cannot detach the running task and has the A7's stopper push it (active balance).
#[test]
fn a_hog_that_never_sleeps_is_pushed_to_a_big_core() {
    let hog = format!(
        r#"["affinity 0", "compute 100us", "{ALL8}", "loop forever", "compute 100ms", "end"]"#
    );
    let s = shares("eevdf:era=6.18", "exynos5422", 1, &hog);
    assert!(big_share(&s) > 0.8, "the hog stayed on an A7: {s:?}");
    // The 6.6 era has none of it: the hog stays where it started.
    let s = shares("eevdf", "exynos5422", 1, &hog);
    assert!(big_share(&s) < 0.01, "{s:?}");
}

/// Alder Lake (ITMT, SMT on): a lone task on an E-core is pulled to an idle P-core by asym
/// packing (an idle CPU of higher priority, `asym_active_balance`).
#[test]
fn asym_packing_moves_a_task_from_an_e_core_to_a_p_core() {
    let all: Vec<String> = (0..24).map(|c| c.to_string()).collect();
    let s = shares(
        "eevdf:era=6.18",
        "alderlake-12900k",
        1,
        &format!(
            r#"["affinity 16", "compute 100us", "affinity {}", "loop forever", "compute 100ms", "end"]"#,
            all.join(",")
        ),
    );
    assert!(big_share(&s) > 0.8, "it stayed on the E-core: {s:?}");
}

/// Every built-in at its defaults (a background-only one beside `loops`), under every class,
/// on both hybrid profiles, for 20 ms of simulated time: it runs without an error (the
/// invariants are audited at the end of each run) and its tasks get CPU time.
#[test]
fn every_builtin_runs_under_every_class_on_both_hybrids() {
    for machine in ["alderlake-12900k", "exynos5422"] {
        let m = Machine::load(machine).unwrap();
        for b in schedkit::workload::builtin::BUILTINS {
            // A background-only built-in is refused alone (the run would end at once).
            let w = Workload::parse(b.name)
                .or_else(|_| Workload::parse(&format!("loops:n=4+{}", b.name)))
                .unwrap();
            for &policy in PolicyKind::ALL {
                let cfg = SimConfig {
                    duration_ns: 20_000_000,
                    seed: 3,
                    ..SimConfig::default()
                };
                let r = policy
                    .simulate(&m, &w, cfg)
                    .unwrap_or_else(|e| panic!("{} on {machine} / {}: {e}", policy.name(), w.name));
                assert!(r.metrics.sim.events > 0, "{} / {}", policy.name(), w.name);
                assert!(
                    r.metrics.idle_fraction < 1.0,
                    "{} on {machine} / {}: no CPU time",
                    policy.name(),
                    w.name
                );
            }
        }
    }
}
