//! The cross-host conformance suite on every built-in class, as thin callers of
//! [`crate::conformance`] (the script runner, the sequence generator, the audit and the
//! cross-host comparison live there, for any class): the fixed script and generated
//! sequences for every class of `PolicyKind::ALL` and both RT balancing modes, and the
//! regressions the random passes found, each a fixed sequence.
//!
//! `SCHEDKIT_CONFORMANCE_CASES` sets how many sequences a run draws (256 by default),
//! `SCHEDKIT_CONFORMANCE_SEED` which (2026 by default, so that `cargo test` draws the same ones
//! every time); a failure prints the smallest sequence proptest shrank it to, with the class,
//! the machine, and the broken invariant or the first decision the hosts disagree on.

use crate::conformance::{
    check_fixed, check_generated, conform, conform_all as conform_subjects, machine_of, AttrTo,
    Config, Event, NewTask, Script, Sequence, Shape, Subject,
};
use crate::registry::PolicyKind;
use crate::task::SchedPolicy;

/// Every built-in class.
fn every_class() -> Vec<Subject<'static>> {
    PolicyKind::ALL
        .iter()
        .map(|&k| Subject::policy(k))
        .collect()
}

/// The environment's configuration (`SCHEDKIT_CONFORMANCE_CASES`, `SCHEDKIT_CONFORMANCE_SEED`).
fn config() -> Config {
    Config::default()
        .with_env()
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn both_hosts_take_the_same_decisions_for_every_class() {
    let logs = check_fixed(&every_class(), &Config::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(logs.len(), PolicyKind::ALL.len() * 2);
    for (log, kind) in logs.iter().zip(PolicyKind::ALL.iter().flat_map(|k| [k, k])) {
        assert!(log.len() > 300, "{}: the script ran", kind.name());
    }
}

#[test]
fn the_script_exercises_every_path() {
    // The log of one class shows each scripted event happened (so the comparison above
    // compares something).
    let m = crate::conformance::costless_machine();
    let balance = crate::class::RtBalance::PushPull;
    let log = conform(&Subject::policy(PolicyKind::O1), balance, &m, Script::Fixed).unwrap();
    for what in [
        "yields",
        "sleeps",
        "woken",
        "nice 10",
        "bound to cpu0",
        "exits",
        "forks",
    ] {
        assert!(
            log.iter().any(|l| l.contains(what)),
            "no '{what}' in the log"
        );
    }
}

/// One sequence through both hosts for every built-in class and RT balancing mode; the log of
/// the first class.
fn conform_all(case: &Sequence) -> Result<Vec<String>, crate::conformance::Failure> {
    conform_subjects(&every_class(), &Config::default(), case)
}

/// A generated-style sequence of `tasks` (every CPU allowed, nice 0) and `events` on `shape`.
fn case_of(shape: Shape, tasks: &[(SchedPolicy, u8)], events: Vec<Event>) -> Sequence {
    let tasks = tasks
        .iter()
        .map(|&(policy, rt_priority)| NewTask {
            policy,
            nice: 0,
            rt_priority,
            allowed: 0,
        })
        .collect();
    Sequence {
        shape,
        tasks,
        events,
    }
}

/// What each CPU runs after event `i` of `case`, under `o1` with push/pull RT balancing,
/// once every class and balancing mode has run it through both hosts (audited).
fn o1_running_after(case: &Sequence, i: usize) -> String {
    conform_all(case).unwrap_or_else(|e| panic!("{e}"));
    let m = machine_of(case.shape);
    let pp = crate::class::RtBalance::PushPull;
    let log = conform(
        &Subject::policy(PolicyKind::O1),
        pp,
        &m,
        Script::Generated(case),
    )
    .unwrap();
    let at = format!("{i}: running ");
    let line = log
        .iter()
        .find(|l| l.starts_with(&at))
        .expect("the event ran");
    line[at.len()..].to_string()
}

/// The shrunk sequences of the random passes' rare failure (`o1` under push/pull, about once
/// in 100 000 sequences). The first: two CPUs; CPU 0 runs a FIFO 58 task ahead of a normal
/// task0, CPU 1 a FIFO 1 task. Task0 is made FIFO 2 from outside (`chrt -p`), on a runqueue
/// now overloaded while CPU 1 runs less important work; CPU 1's task forks a FIFO 1 child,
/// then binds itself to CPU 0. Its re-placement on CPU 0 pushed task0 to CPU 1 just after CPU
/// 1 had picked the child ("cpu1 picked task4, passing over the queued RT task0"). 2.6.25's
/// `__sched_setscheduler` pushes task0 at once (`check_class_changed` → `switched_to_rt` →
/// `push_rt_task`, v2.6.25:kernel/sched_rt.c:1069), so CPU 1 runs it from the change on.
#[test]
fn a_task_made_rt_from_outside_is_pushed_off_an_overloaded_runqueue() {
    use SchedPolicy::{Fifo, Normal};
    let case = case_of(
        Shape::Smt(1),
        &[(Normal, 1), (Normal, 1), (Fifo, 58), (Fifo, 1)],
        vec![
            Event::SetAttr {
                task: 0,
                to: AttrTo::Policy(Fifo, 2, 0),
            },
            Event::Fork { cpu: 1 },
            Event::Bind {
                cpu: 1,
                allowed: 0b101,
            },
        ],
    );
    assert_eq!(
        o1_running_after(&case, 0),
        "[Some(TaskId(2)), Some(TaskId(0))]"
    );
    // The second shrunk sequence (a FIFO 7 task0 made so while asleep, woken; a normal task3,
    // allowed on CPU 0 only, made FIFO 1 behind it; a fork on CPU 0; CPU 0's task bound to
    // CPU 1): conformance only.
    let case = case_of(
        Shape::Flat(2),
        &[(Normal, 1), (Normal, 1), (Fifo, 6), (Normal, 1), (Fifo, 6)],
        vec![
            Event::Sleep { cpu: 1 },
            Event::SetAttr {
                task: 33,
                to: AttrTo::Policy(Fifo, 7, 0),
            },
            Event::Wake { nth: 0, waker: 0 },
            Event::SetAttr {
                task: 3,
                to: AttrTo::Policy(Fifo, 1, 0),
            },
            Event::Fork { cpu: 2 },
            Event::Bind { cpu: 2, allowed: 6 },
        ],
    );
    conform_all(&case).unwrap_or_else(|e| panic!("{e}"));
}

/// The other two RT hooks of 2.6.25's `check_class_changed`: a running RT task that lowers
/// its priority below a task waiting on an overloaded runqueue pulls it (`prio_changed_rt`,
/// v2.6.25:kernel/sched_rt.c:1097), and so does the last RT task of a runqueue leaving the
/// class (`switched_from_rt`, :1049). CPU 0 runs a FIFO 50 task with a FIFO 40 one queued
/// behind it; CPU 1 runs a FIFO 60 task, which is changed from outside.
#[test]
fn a_running_rt_task_that_drops_its_priority_pulls() {
    use SchedPolicy::{Fifo, Normal};
    let tasks = [(Fifo, 50), (Fifo, 60), (Fifo, 40)];
    let lowered = case_of(
        Shape::Flat(2),
        &tasks,
        vec![Event::SetAttr {
            task: 1,
            to: AttrTo::Policy(Fifo, 30, 0),
        }],
    );
    let normal = case_of(
        Shape::Flat(2),
        &tasks,
        vec![Event::SetAttr {
            task: 1,
            to: AttrTo::Policy(Normal, 0, 0),
        }],
    );
    for case in [lowered, normal] {
        assert_eq!(
            o1_running_after(&case, 0),
            "[Some(TaskId(0)), Some(TaskId(2))]",
            "{case:?}"
        );
    }
}

/// The open finding described at `both_hosts_take_the_same_decisions_on_generated_sequences` (shrunk from a random pass after the attribute
/// change fix): two CPUs; CPU 0 runs FIFO 9 task0; its child task4 is pushed to CPU 1, which a
/// FIFO 89 task pinned there then takes; task4 is raised to FIFO 10 from outside (queued, so
/// not pushed, as in 2.6.25); task0 forks again and binds itself to CPU 1. CPU 0 picks the FIFO
/// 9 child; task0's arrival on CPU 1 then pushes task4 to CPU 0. 2.6.25 would have CPU 0 pull
/// task4 before it picks.
///
/// Held as a reproducer that runs in every test pass: it asserts that the conformance check
/// still reports exactly this violation. When the core re-places an evicted task before the
/// CPU's pick (the fix described at `both_hosts_take_the_same_decisions_on_generated_sequences`), it fails: then assert `conform_all` passes.
#[test]
fn open_finding_an_evicting_cpu_picks_before_its_task_is_moved() {
    use SchedPolicy::{Fifo, Normal};
    let pinned = NewTask {
        policy: Fifo,
        nice: 0,
        rt_priority: 89,
        allowed: 0b1010,
    };
    let case = case_of(
        Shape::Smt(1),
        &[(Fifo, 9), (Normal, 1), (Normal, 1), (Normal, 1)],
        vec![
            Event::Fork { cpu: 2 },
            Event::Spawn(pinned),
            Event::SetAttr {
                task: 10,
                to: AttrTo::Policy(Fifo, 10, 0),
            },
            Event::Fork { cpu: 0 },
            Event::Bind {
                cpu: 0,
                allowed: 0b110,
            },
        ],
    );
    let e = conform_all(&case)
        .expect_err("the open finding is fixed: assert it passes now")
        .to_string();
    assert!(
        e.contains("Bind { cpu: 0, allowed: 6 }: cpu0 picked Some(TaskId(6)), passing over the queued RT task4"),
        "another violation than the open finding: {e}"
    );
}

/// Found by long passes at a random seed (`SCHEDKIT_CONFORMANCE_SEED=random
/// SCHEDKIT_CONFORMANCE_CASES=10000 cargo test -p schedkit --lib sched_core`), about once in
/// 20 000 to 100 000 sequences, always `o1` under push/pull at a `Bind` that evicts the
/// running task (`o1` probably because its forks stay on the forking CPU, 2.6.0's `sched_fork`,
/// and so overload it, where the later classes balance them): the CPU picked, then its evicted
/// task's re-placement pushed a better RT task onto it. Fixed: the core's
/// attribute changes did none of the push and pull of 2.6.25's `check_class_changed`, so a
/// task made FIFO from outside stayed queued on an overloaded runqueue while another CPU ran
/// less important work; they now do ([`crate::policy::rt::RtClass::class_changed`];
/// `a_task_made_rt_from_outside_is_pushed_off_an_overloaded_runqueue`,
/// `a_running_rt_task_that_drops_its_priority_pulls`).
///
/// Open finding, left: the same symptom without an attribute change to blame, from a state
/// 2.6.25 reaches too (a queued RT task raised from outside, which `prio_changed_rt` does not
/// push): `open_finding_an_evicting_cpu_picks_before_its_task_is_moved`, a reproducer that
/// asserts the violation still happens, about once in 500 000
/// `o1` push/pull sequences. In 2.6.25 the evicted task leaves its CPU for the migration
/// thread (`set_cpus_allowed` → `migrate_task`, kernel/sched.c:5341), which moves it; the CPU
/// picks only when that RT thread schedules out, pulling first (`pre_schedule_rt`). Here
/// `schedule()` picks before the re-placement, whose push then lands on the CPU that just
/// picked (and reschedules it).
#[test]
fn both_hosts_take_the_same_decisions_on_generated_sequences() {
    let cfg = config();
    let report = check_generated(&every_class(), &cfg).unwrap_or_else(|e| panic!("{e}"));
    // Every kind of event took effect somewhere (the comparisons compared something).
    eprintln!("{report}");
    if cfg.cases >= 32 {
        let never = report.events_never_taken();
        assert!(
            never.is_empty(),
            "no generated sequence had these events take effect: {never:?}"
        );
    }
}
