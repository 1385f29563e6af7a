//! rt-app input: the timer and condition-variable mechanisms it needs, checked in whole runs
//! against times worked out by hand, and the JSON translation (statements, defaults, errors
//! that name the key path).

use schedkit::machine::Machine;
use schedkit::metrics::RunResult;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::workload::{file, rtapp, Workload, WorkloadError};

fn run(w: &Workload, ms: u64) -> RunResult {
    let m = Machine::load("smp2-2002").unwrap();
    let cfg = SimConfig {
        duration_ns: ms * 1_000_000,
        audit_every: 1,
        ..Default::default()
    };
    PolicyKind::O1.simulate(&m, w, cfg).unwrap()
}

fn toml(text: &str) -> Workload {
    file::parse_str(text, "t.toml", "t").unwrap()
}

/// One task: timer (starts the timer at 0, sleeps to 10 ms), 25 ms of work (to ~35), timer
/// (expiry 20 is missed), 1 ms (~36), timer, 1 ms, timer. Relative mode restarts the period
/// at the miss (~35): expiries ~45 and ~55, the run ends ~55 ms. Absolute mode keeps the
/// schedule 10, 20, 30, 40: expiry 30 is missed too (no sleep), the last timer sleeps to 40.
fn timer_program(mode: &str) -> String {
    format!(
        r#"
[[channel]]
name = "t"
kind = "task-timer"
[[group]]
name = "p"
affinity = [0]
program = ["timer t 10ms {mode}", "compute 25ms", "timer t 10ms {mode}", "compute 1ms", "timer t 10ms {mode}", "compute 1ms", "timer t 10ms {mode}", "exit"]
"#
    )
}

#[test]
fn timer_modes_follow_rt_app() {
    let rel = run(&toml(&timer_program("relative")), 1000);
    let abs = run(&toml(&timer_program("absolute")), 1000);
    assert!(rel.completed && abs.completed);
    // Within 1 ms: system-call, wakeup and exit costs on top of the work.
    assert!(
        (rel.simulated_s * 1e3 - 55.0).abs() < 1.0,
        "relative: {}",
        rel.simulated_s
    );
    assert!(
        (abs.simulated_s * 1e3 - 40.0).abs() < 1.0,
        "absolute: {}",
        abs.simulated_s
    );
}

/// A timer measures its period from its last expiry, not from when the task asks (as sleep
/// does): 3 ms of work then `timer 10ms`, five times, starts the timer at 3 ms and ends at
/// its fifth expiry, ~53 ms; with `sleep 10ms` instead it would end at ~65 ms. Two tasks
/// sharing a named (not unique) timer advance one schedule, as rt-app shares a named timer
/// between threads: ten uses, ten periods.
#[test]
fn timer_period_runs_from_the_last_expiry_and_named_timers_are_shared() {
    let own = toml(
        r#"
[[channel]]
name = "t"
kind = "task-timer"
[[group]]
name = "p"
count = 2
program = ["loop 5", "compute 3ms", "timer t 10ms", "end"]
"#,
    );
    let r = run(&own, 1000);
    assert!(
        (r.simulated_s * 1e3 - 53.0).abs() < 1.0,
        "{}",
        r.simulated_s
    );
    let shared = toml(
        r#"
[[channel]]
name = "t"
kind = "timer"
[[group]]
name = "p"
count = 2
program = ["loop 5", "compute 3ms", "timer t 10ms", "end"]
"#,
    );
    let r = run(&shared, 1000);
    // Ten uses of one schedule: the last sleeps to its tenth expiry, ~100 ms after the first
    // use at ~3 ms.
    assert!(
        (r.simulated_s * 1e3 - 103.0).abs() < 1.5,
        "{}",
        r.simulated_s
    );
}

/// pthread condition variables: a signal with no waiter is lost (the waiter that comes later
/// sleeps for ever: a deadlock the run reports), and a signal sent after the waiter queued
/// wakes it, and it holds the mutex again when cond-wait returns.
#[test]
fn condvar_signals_are_lost_without_a_waiter() {
    let lost = toml(
        r#"
[[lock]]
name = "m"
kind = "mutex"
[[channel]]
name = "c"
kind = "condvar"
[[group]]
name = "signaller"
program = ["lock m", "cond-signal c", "unlock m", "exit"]
[[group]]
name = "waiter"
program = ["sleep 1ms", "lock m", "cond-wait c m", "unlock m", "exit"]
"#,
    );
    let r = run(&lost, 100);
    assert_eq!(r.stop_reason, "deadlock");
    let waits = r.deadlock.unwrap().join("\n");
    assert!(waits.contains("a signal on condition variable"), "{waits}");

    let found = toml(
        r#"
[[lock]]
name = "m"
kind = "mutex"
[[channel]]
name = "c"
kind = "condvar"
[[group]]
name = "signaller"
program = ["sleep 1ms", "lock m", "cond-signal c", "unlock m", "exit"]
[[group]]
name = "waiter"
program = ["lock m", "cond-wait c m", "unlock m", "exit"]
"#,
    );
    let r = run(&found, 100);
    assert!(r.completed, "{:?}", r.deadlock);
    assert!((r.simulated_s * 1e3 - 1.0).abs() < 0.5, "{}", r.simulated_s);
}

/// Broadcast wakes every waiter; signal one (the longest waiting).
#[test]
fn broadcast_wakes_all_signal_one() {
    let w = |verb: &str| {
        toml(&format!(
            r#"
[[lock]]
name = "m"
kind = "mutex"
[[channel]]
name = "c"
kind = "condvar"
[[group]]
name = "signaller"
program = ["sleep 1ms", "lock m", "{verb} c", "unlock m", "exit"]
[[group]]
name = "waiter"
count = 3
program = ["lock m", "cond-wait c m", "unlock m", "exit"]
"#
        ))
    };
    assert!(run(&w("cond-broadcast"), 100).completed);
    let one = run(&w("cond-signal"), 100);
    assert_eq!(one.stop_reason, "deadlock");
    assert_eq!(
        one.deadlock
            .unwrap()
            .iter()
            .filter(|l| l.contains("condition variable"))
            .count(),
        2,
        "one of three woken"
    );
}

const EXAMPLE: &str = include_str!("../../../examples/rt-app/periodic-mutex.json");

/// The translation of the shipped example, statement by statement.
#[test]
fn example_translates_to_the_documented_statements() {
    let t = rtapp::to_toml(EXAMPLE, "x.json", "x").unwrap();
    // Resources: the mutex, the condition variable, the per-thread timer.
    assert!(
        t.contains("[[lock]]\nname = \"frame\"\nkind = \"mutex\""),
        "{t}"
    );
    assert!(t.contains("name = \"ready\"\nkind = \"condvar\""), "{t}");
    assert!(
        t.contains("name = \"unique\"\nkind = \"task-timer\""),
        "{t}"
    );
    // video: FIFO 50, two instances, forever; events in file order; one activation a pass.
    assert!(
        t.contains("name = \"video\"\ncount = 2\npolicy = \"fifo\"\nrt_priority = 50"),
        "{t}"
    );
    assert!(
        t.contains(
            "  \"loop forever\",\n  \"compute 2000us\",\n  \"lock frame\",\n  \"compute 300us\",\n  \"cond-signal ready\",\n  \"unlock frame\",\n  \"timer unique 16667us\",\n  \"count\",\n  \"end\","
        ),
        "{t}"
    );
    // encoder: default policy, nice 0; phases with their loops; the task loops forever.
    assert!(
        t.contains("name = \"encoder\"\ncount = 1\npolicy = \"normal\"\nnice = 0"),
        "{t}"
    );
    assert!(t.contains("  \"loop 5\",\n  \"compute 1000us\",\n  \"sleep 4000us\",\n  \"count\",\n  \"end\",\n  \"loop 200\",\n  \"lock frame\",\n  \"cond-wait ready frame\","), "{t}");
    // background: SCHED_OTHER priority is the nice level.
    assert!(
        t.contains("name = \"background\"\ncount = 2\npolicy = \"normal\"\nnice = 10"),
        "{t}"
    );
    let w = rtapp::parse_str(EXAMPLE, "x.json", "x").unwrap();
    assert_eq!(w.tasks.len(), 5);
    let r = run(&w, 500);
    assert!(r.metrics.throughput.value > 0.0);
    assert_eq!(r.metrics.sleep_locks.len(), 1);
}

const PHASES: &str = r#"{"tasks": {
    "a": {"loop": 2, "phases": {
        "p1": {"policy": "SCHED_FIFO", "run": 10},
        "p2": {"priority": 30, "cpus": [1], "run1": 5, "run2": 6,
               "timer": {"ref": "tick", "period": 100, "mode": "absolute"}},
        "p3": {"policy": "SCHED_OTHER", "priority": -3, "sync": {"ref": "c", "mutex": "m"}, "fork": "b"}}},
    "b": {"instance": 0, "loop": 1, "delay": 7, "run": 1}}}"#;

/// Phase-level scheduling changes, `sync`, `fork` and the timer modes translate as rt-app
/// defines them.
#[test]
fn phases_sync_and_fork() {
    let t = rtapp::to_toml(PHASES, "x.json", "x").unwrap();
    for s in [
        "\"loop 2\",\n  \"policy fifo 10\",\n  \"loop 1\",\n  \"compute 10us\",",
        "\"policy fifo 30\",\n  \"affinity 1\",\n  \"loop 1\",\n  \"compute 5us\",\n  \"compute 6us\",\n  \"timer tick 100us absolute\",",
        "\"policy normal\",\n  \"nice -3\",\n  \"loop 1\",\n  \"lock m\",\n  \"cond-signal c\",\n  \"cond-wait c m\",\n  \"unlock m\",\n  \"thread b\",",
        "name = \"b\"\ncount = 0",
        "\"sleep 7us\",\n  \"loop 1\",",
        "name = \"tick\"\nkind = \"timer\"",
    ] {
        assert!(t.contains(s), "missing {s:?} in\n{t}");
    }
}

fn rt_err(json: &str) -> (String, String) {
    match rtapp::to_toml(json, "f.json", "f") {
        Err(WorkloadError::RtApp { at, problem, .. }) => (at, problem),
        other => panic!("expected an rt-app error, got {other:?}"),
    }
}

#[test]
fn unsupported_keys_are_refused_with_their_path() {
    let cases = [
        (
            r#"{"tasks": {"t": {"phases": {"p": {"barrier": "x"}}}}}"#,
            "tasks.t.phases.p.barrier",
            "not supported",
        ),
        (
            r#"{"tasks": {"t": {"runtime": 5}}}"#,
            "tasks.t.runtime",
            "wall-clock",
        ),
        (
            r#"{"tasks": {"t": {"policy": "SCHED_DEADLINE", "run": 1}}}"#,
            "tasks.t",
            "SCHED_DEADLINE",
        ),
        (
            r#"{"tasks": {"t": {"dl-runtime": 5}}}"#,
            "tasks.t.dl-runtime",
            "deadline",
        ),
        (
            r#"{"tasks": {"t": {"util_min": 5}}}"#,
            "tasks.t.util_min",
            "not supported",
        ),
        (
            r#"{"tasks": {"t": {"frobnicate": 5}}}"#,
            "tasks.t.frobnicate",
            "unknown key",
        ),
        (
            r#"{"global": {"pi_enabled": true}, "tasks": {"t": {"run": 1}}}"#,
            "global.pi_enabled",
            "priority-inheritance",
        ),
        (
            r#"{"global": {"colour": 1}, "tasks": {"t": {"run": 1}}}"#,
            "global.colour",
            "unknown global key",
        ),
        (r#"{"tasks": {"t": {"run": -4}}}"#, "tasks.t.run", "outside"),
        (
            r#"{"tasks": {"t": {"timer": {"ref": "x"}}}}"#,
            "tasks.t.timer",
            "period",
        ),
        (
            r#"{"tasks": {"t": {"lock": "m", "signal": "m"}}}"#,
            "tasks.t.signal",
            "used as a mutex",
        ),
        (
            r#"{"tasks": {"t": {"fork": "nobody"}}}"#,
            "tasks.t.fork",
            "not a task",
        ),
        (
            r#"{"tasks": {"t": {"priority": 120, "policy": "SCHED_FIFO"}}}"#,
            "tasks.t.priority",
            "outside",
        ),
        (
            r#"{"tasks": {"t": {"priority": 50, "policy": "SCHED_FIFO", "cpus": []}}}"#,
            "tasks.t.cpus",
            "empty",
        ),
        (r#"{"workload": {}}"#, "workload", "unknown top-level key"),
    ];
    for (json, path, words) in cases {
        let (at, problem) = rt_err(json);
        assert_eq!(at, path, "{json}: {problem}");
        assert!(problem.contains(words), "{json}: {problem}");
    }
    // Syntax errors name the line.
    match rtapp::to_toml("{\n\"tasks\": {\n  \"t\": [1,\n}", "f.json", "f") {
        Err(WorkloadError::File { line, .. }) => assert_eq!(line, 4),
        other => panic!("{other:?}"),
    }
    // Through Workload::parse, by extension.
    let dir = std::env::temp_dir().join(format!("schedkit-rtapp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.json");
    std::fs::write(&p, r#"{"tasks": {"t": {"mem": 4096}}}"#).unwrap();
    let e = Workload::parse(p.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.json: at tasks.t.mem: the 'mem' event is not supported"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A task name with a newline used to end its comment in the translated TOML and add
/// definitions: one task ran as eight.
const EVIL: &str = r#"{"tasks": {"a\n[[group]]\nname = \"evil\"\ncount = 7\nprogram = [\"compute 1ms\"]\n#": {"run": 1000}}, "global": {"duration": 1}}"#;
/// Names that are valid but look like generated ones ("t2", "r1"), beside names that need one
/// ("a b", "x.y"): every task and resource is its own.
const MIXED: &str = r#"{"tasks": {
    "t0": {"lock": "r0", "run": 100, "unlock": "r0"},
    "a b": {"lock": "x.y", "run": 100, "unlock": "x.y"},
    "t1": {"lock": "r1", "run": 100, "unlock": "r1"},
    "c d": {"lock": "r 1", "run": 100, "unlock": "r 1"}
    }, "global": {"duration": 1}}"#;

#[test]
fn names_cannot_inject_definitions_or_collide_with_generated_ones() {
    let w = rtapp::parse_str(EVIL, "e.json", "e").unwrap();
    assert_eq!(w.tasks.len(), 1);
    let t = rtapp::to_toml(MIXED, "m.json", "m").unwrap();
    let w = rtapp::parse_str(MIXED, "m.json", "m").unwrap();
    assert_eq!(w.tasks.len(), 4, "{t}");
    let locks = t.matches("[[lock]]").count();
    assert_eq!(locks, 4, "{t}");
}

#[test]
fn a_problem_found_after_translation_names_the_rt_app_task() {
    // The limit on all tasks together is checked when the workload is built: 20 tasks of
    // 100 000 instances pass the translation and pass the limit at the eleventh.
    let tasks: Vec<String> = (0..20)
        .map(|i| format!("\"w{i}\": {{\"run\": 100, \"instance\": 100000}}"))
        .collect();
    let json = format!(
        "{{\"tasks\": {{{}}}, \"global\": {{\"duration\": 1}}}}",
        tasks.join(", ")
    );
    match rtapp::parse_str(&json, "f.json", "f") {
        Err(WorkloadError::RtApp { at, problem, .. }) => {
            assert_eq!(at, "tasks.w10", "{problem}");
            assert!(problem.contains("limit"), "{problem}");
        }
        other => panic!("{:?}", other.map(|w| w.tasks.len())),
    }
    // A CPU beyond the simulator's, for the task or in a phase.
    for (json, path) in [
        (
            r#"{"tasks": {"t": {"cpus": [300], "run": 1}}}"#,
            "tasks.t.cpus",
        ),
        (
            r#"{"tasks": {"t": {"phases": {"p": {"cpus": [1, 256], "run": 1}}}}}"#,
            "tasks.t",
        ),
    ] {
        match rtapp::parse_str(json, "f.json", "f") {
            Err(WorkloadError::RtApp { at, problem, .. }) => {
                assert_eq!(at, path, "{problem}");
                assert!(problem.contains("outside 0..256"), "{problem}");
            }
            other => panic!("{:?}", other.map(|w| w.tasks.len())),
        }
    }
}

/// Where a statement or task came from: a line of the file when read from TOML, the rt-app
/// task when built as data. All else must be equal.
fn without_origins(mut w: Workload) -> Workload {
    for p in &mut w.programs {
        p.source = None;
    }
    for t in &mut w.tasks {
        t.origin = None;
    }
    w
}

/// The workload built as data from an rt-app file is the one its exported TOML reads back
/// into, for every fixture: the example, the fuzz corpus and this file's cases.
#[test]
fn the_workload_built_as_data_is_the_exported_toml_read_back() {
    let mut cases: Vec<(String, String)> = vec![
        ("example".into(), EXAMPLE.into()),
        ("phases".into(), PHASES.into()),
        ("evil".into(), EVIL.into()),
        ("mixed".into(), MIXED.into()),
    ];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/rt-app");
    let mut corpus: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    corpus.sort();
    for p in corpus {
        cases.push((
            p.display().to_string(),
            std::fs::read_to_string(&p).unwrap(),
        ));
    }
    assert!(cases.len() >= 6);
    for (name, json) in &cases {
        let built = rtapp::parse_str(json, "x.json", "x").unwrap();
        let text = rtapp::to_toml(json, "x.json", "x").unwrap();
        let read = file::parse_str(&text, "x.toml", "x").unwrap();
        assert_eq!(
            without_origins(built),
            without_origins(read),
            "{name}:\n{text}"
        );
    }
}
