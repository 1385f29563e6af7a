//! The starvation watchdog (`SimConfig::starve`): a task kept off its CPU by design is named
//! with its wait and what ran meanwhile; a run without starvation reports none; `stop` ends the
//! run at about the threshold; and the watchdog changes no figure of the run.

use schedkit::machine::Machine;
use schedkit::metrics::RunResult;
use schedkit::registry::PolicyKind;
use schedkit::sim::watchdog::Starve;
use schedkit::sim::SimConfig;
use schedkit::workload::{file, Workload};

const MS: u64 = 1_000_000;

fn run(machine: &str, w: &Workload, ms: u64, starve: Option<Starve>) -> RunResult {
    let m = Machine::load(machine).unwrap();
    let cfg = SimConfig {
        duration_ns: ms * MS,
        starve,
        ..Default::default()
    };
    PolicyKind::O1.simulate(&m, w, cfg).unwrap()
}

fn starve(ms: u64, stop: bool) -> Option<Starve> {
    Some(Starve {
        threshold_ns: ms * MS,
        stop,
    })
}

/// On CPU 0: a SCHED_FIFO hog that computes 2 s and then sleeps, and an ordinary task that
/// can run only there; CPU 1 runs another ordinary task. The ordinary task on CPU 0 waits
/// from the start until the hog first sleeps.
const HOG: &str = r#"
[[group]]
name = "hog"
affinity = [0]
policy = "fifo"
rt_priority = 50
program = ["loop forever", "compute 2s", "sleep 1s", "end"]

[[group]]
name = "victim"
affinity = [0]
program = ["loop forever", "compute 10ms", "count", "end"]

[[group]]
name = "bystander"
affinity = [1]
program = ["loop forever", "compute 10ms", "end"]
"#;

#[test]
fn names_the_starved_task_its_wait_and_the_hog() {
    let w = file::parse_str(HOG, "hog.toml", "hog").unwrap();
    let r = run("smp2-2002", &w, 2500, starve(1000, false));
    assert_eq!(r.stop_reason, "time_limit");
    assert_eq!(r.starve_threshold_s, Some(1.0));
    let s = r.starved.as_ref().expect("a report");
    assert_eq!(r.starved_total, Some(1), "{s:#?}");
    assert_eq!(s.len(), 1, "{s:#?}");
    let v = &s[0];
    assert_eq!(v.name, "victim");
    assert_eq!(v.runnable_since_s, 0.0);
    // It waits for the hog's 2 s of computing (and the switch), then runs.
    assert!((2.0..2.01).contains(&v.waited_s), "waited {} s", v.waited_s);
    assert!(!v.still_waiting);
    // The same wait as the run's own starvation figure.
    assert!(
        (v.waited_s * 1e6 - r.metrics.longest_runnable_wait_us).abs() < 1e-3,
        "{} s against {} µs",
        v.waited_s,
        r.metrics.longest_runnable_wait_us
    );
    // Only the CPU it may use, and on it the hog, for about the whole wait.
    assert_eq!(v.cpus_allowed, vec![0]);
    assert_eq!(v.ran_meanwhile.len(), 1);
    let c0 = &v.ran_meanwhile[0];
    assert_eq!(c0.cpu, 0);
    assert_eq!(c0.top[0].name, "hog", "{c0:#?}");
    assert!(
        (1.99..=v.waited_s).contains(&c0.top[0].cpu_s),
        "the hog held CPU 0 for {} s of the {} s wait",
        c0.top[0].cpu_s,
        v.waited_s
    );
    assert!(c0.top.iter().all(|x| x.name != "bystander"), "{c0:#?}");
}

#[test]
fn a_run_without_starvation_reports_none() {
    // Two ordinary tasks on one CPU share it a slice at a time.
    let w = Workload::parse("yield:instances=2").unwrap();
    let r = run("up-2002", &w, 2000, starve(500, true));
    assert_eq!(r.stop_reason, "time_limit");
    assert_eq!(r.starved, Some(Vec::new()));
    assert_eq!(r.starved_total, Some(0));
    // A threshold below the longest wait catches it.
    let w = file::parse_str(HOG, "hog.toml", "hog").unwrap();
    let r = run("smp2-2002", &w, 2500, starve(1999, false));
    assert_eq!(r.starved_total, Some(1));
    let r = run("smp2-2002", &w, 2500, starve(2100, false));
    assert_eq!(r.starved_total, Some(0));
}

#[test]
fn stop_ends_the_run_at_the_first_starvation() {
    let w = file::parse_str(HOG, "hog.toml", "hog").unwrap();
    let r = run("smp2-2002", &w, 2500, starve(500, true));
    assert_eq!(r.stop_reason, "starved");
    assert!(!r.completed);
    // At the first event after the victim has waited 500 ms: within a tick (10 ms at HZ=100).
    assert!(
        (0.5..0.511).contains(&r.simulated_s),
        "stopped at {} s",
        r.simulated_s
    );
    let s = r.starved.as_ref().unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].name, "victim");
    assert!(s[0].still_waiting);
    assert!((s[0].waited_s - r.simulated_s).abs() < 1e-9);
}

#[test]
fn the_watchdog_changes_no_figure() {
    for (machine, spec) in [
        ("smp2-2002", None),
        ("smp4-2002", Some("chat:rooms=4,messages=200")),
        ("up-2002", Some("makej:jobs=4")),
    ] {
        let w = match spec {
            Some(s) => Workload::parse(s).unwrap(),
            None => file::parse_str(HOG, "hog.toml", "hog").unwrap(),
        };
        let mut a = run(machine, &w, 1500, None);
        let mut b = run(machine, &w, 1500, starve(100, false));
        assert!(a.starved.is_none() && a.starved_total.is_none());
        assert!(b.starved.is_some());
        (b.starved, b.starved_total, b.starve_threshold_s) = (None, None, None);
        a.metrics.sim.wall_s = 0.0;
        b.metrics.sim.wall_s = 0.0;
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap(),
            "{machine} {spec:?}"
        );
    }
}

#[test]
fn a_zero_threshold_is_refused() {
    let w = Workload::parse("yield:instances=2").unwrap();
    let m = Machine::load("up-2002").unwrap();
    let cfg = SimConfig {
        duration_ns: 10 * MS,
        starve: starve(0, false),
        ..Default::default()
    };
    let e = PolicyKind::O1
        .simulate(&m, &w, cfg)
        .unwrap_err()
        .to_string();
    assert!(e.contains("threshold is 0"), "{e}");
}
