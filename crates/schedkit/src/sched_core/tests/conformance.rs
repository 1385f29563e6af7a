//! The cross-host conformance suite: sequences of scheduling events fed through both hosts'
//! scripted faces ([`Scripted`]), for every registered class and both RT balancing modes. After
//! every event the CPUs settle and [`audit`] checks the invariants (every task in exactly one
//! place, `nr_running` true, affinity kept, RT before normal); the two hosts' decision logs
//! must then be equal line by line.
//!
//! Two sources of sequences: one fixed script on two flat CPUs ([`run_script`]), and the
//! sequences proptest generates (`sequences.rs`): 1 to 4 CPUs, flat, SMT or split between two caches;
//! tasks of every policy, nice level and affinity; ticks on any CPUs, yields, sleeps and
//! wakeups from any CPU (a wakeup of a task that has not switched out yet among them),
//! attribute changes by a task itself and from outside, affinity changes (evicting the running
//! task among them), forks, spawns and exits. `SCHEDKIT_CONFORMANCE_CASES` sets how many
//! sequences a run draws (256 by default), `SCHEDKIT_CONFORMANCE_SEED` which (a fixed seed by
//! default, so that `cargo test` draws the same ones every time); a failure prints the smallest sequence proptest
//! shrank it to, with the class, the machine, and the broken invariant or the first decision
//! the hosts disagree on.
//!
//! The runtime's half exists where the runtime does (`lib.rs` gates it to Linux x86-64);
//! elsewhere the simulator's half runs alone, audited all the same. Must never reach into a
//! host's internals: both hosts are driven through the core and [`Scripted`] only.

use super::sequences::{case, run_case, Case, Shape};
use super::*;
use crate::machine::{Machine, Topology};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

// ----- the fixed script -----

/// One scripted sequence on two CPUs: creation, ticks, yields, sleeps and wakeups, a nice
/// change, an affinity change that evicts the running task, an exit, a fork. Returns the log
/// of every decision (picks and where tasks are), checking conformance after every step.
pub(crate) fn run_script<H: Scripted>(h: &mut H) -> Result<Vec<String>, CoreError> {
    let mut log = Vec::new();
    let all = CpuMask::first_n(2);
    let specs = [
        spec(SchedPolicy::Normal, 0, 0, all),
        spec(SchedPolicy::Normal, 5, 0, all),
        spec(SchedPolicy::Normal, -5, 0, all),
        spec(SchedPolicy::Fifo, 0, 10, CpuMask::single(1)),
        spec(SchedPolicy::Normal, 0, 0, CpuMask::single(0)),
        spec(SchedPolicy::Rr, 0, 20, all),
        spec(SchedPolicy::Batch, 10, 0, all),
        spec(SchedPolicy::Normal, 19, 0, all),
    ];
    let tick_ns = 1_000_000_000 / h.hz() as u64;
    let mut now = 5 * tick_ns;
    h.at(now);
    for (i, sp) in specs.iter().enumerate() {
        let t = h.add_task(sp, None);
        let cpu = sp.allowed.iter(2).nth(i % sp.allowed.count()).unwrap_or(0);
        attr::fork(h, cpu, None, t, None)?;
        log.push(format!("new {t} on cpu{}", h.task_cpu(t)));
    }
    settle(h, &mut log)?;
    audit(h)?;
    let mut sleepers: Vec<TaskId> = Vec::new();
    let mut jiffies = now / tick_ns;
    for step in 1..=300u64 {
        now += tick_ns;
        jiffies += 1;
        h.at(now);
        for cpu in 0..2 {
            let curr = curr_of(h, cpu);
            tick::scheduler_tick(h, cpu, curr, curr.is_none(), 1, jiffies)?;
        }
        let c0 = curr_of(h, 0);
        let c1 = curr_of(h, 1);
        if step % 7 == 3 {
            if let Some(t) = c0 {
                let sw = schedule_on(h, 0, Some(t), Leave::Yield)?;
                log.push(format!("{step}: {t} yields on cpu0 -> {:?}", sw.next));
            }
        }
        if step % 11 == 5 {
            if let Some(t) = c1.filter(|_| sleepers.len() < 3) {
                let sw = sleep(h, 1, t)?;
                sleepers.push(t);
                log.push(format!("{step}: {t} sleeps on cpu1 -> {:?}", sw.next));
            }
        }
        if step % 17 == 8 {
            if let Some(t) = curr_of(h, 0).filter(|_| sleepers.len() < 4) {
                let sw = sleep(h, 0, t)?;
                sleepers.push(t);
                log.push(format!("{step}: {t} sleeps on cpu0 -> {:?}", sw.next));
            }
        }
        if step % 13 == 0 && !sleepers.is_empty() {
            let t = sleepers.remove(0);
            expect_woken(h.wake(t, 0)?, Wakee::Asleep, t)?;
            log.push(format!(
                "{step}: {t} woken from cpu0, queued on cpu{}",
                h.task_cpu(t)
            ));
        }
        if step == 50 {
            if let Some(t) = curr_of(h, 0) {
                attr::change_attr(h, 0, t, |p| p.nice = 10)?;
                log.push(format!("{step}: {t} nice 10"));
            }
        }
        if step == 90 {
            if let Some(t) = curr_of(h, 1).filter(|_| true) {
                attr::change_attr(h, 1, t, |p| p.cpus_allowed = CpuMask::single(0))?;
                log.push(format!("{step}: {t} bound to cpu0"));
            }
        }
        if step == 120 {
            if let Some(t) = curr_of(h, 0) {
                let sw = schedule_on(h, 0, Some(t), Leave::Exit)?;
                log.push(format!("{step}: {t} exits -> {:?}", sw.next));
            }
        }
        if step == 200 {
            // A change that changes nothing: dequeue SAVE and enqueue RESTORE are symmetric
            // (the audit after this step checks the runqueues hold what they held).
            for cpu in 0..2 {
                if let Some(t) = curr_of(h, cpu) {
                    attr::change_attr(h, cpu, t, |_| ())?;
                }
            }
        }
        if step == 140 {
            if let Some(p) = curr_of(h, 1) {
                let child = h.add_task(&spec(SchedPolicy::Normal, 0, 0, all), Some(p));
                attr::fork(h, 1, Some(p), child, Some(1))?;
                log.push(format!(
                    "{step}: {p} forks {child} onto cpu{}",
                    h.task_cpu(child)
                ));
            }
        }
        settle(h, &mut log)?;
        audit(h).map_err(|e| CoreError::new(format!("step {step}: {}", e.what())))?;
        log.push(format!(
            "{step}: running {:?} {:?}",
            curr_of(h, 0),
            curr_of(h, 1)
        ));
    }
    Ok(log)
}

/// Wakeups must find what the sequence knows the task to be.
pub(super) fn expect_woken(found: Wakee, expected: Wakee, t: TaskId) -> Result<(), CoreError> {
    if found == expected {
        Ok(())
    } else {
        Err(CoreError::new(format!(
            "the host found {t}, to be woken, {found:?} (expected {expected:?})"
        )))
    }
}

// ----- both hosts -----

/// What to run through the hosts.
#[derive(Clone, Copy)]
enum Script<'a> {
    Fixed,
    Generated(&'a Case),
}

impl Script<'_> {
    fn run<H: Scripted>(self, h: &mut H) -> Result<Vec<String>, CoreError> {
        match self {
            Script::Fixed => run_script(h),
            Script::Generated(case) => run_case(h, case),
        }
    }
}

/// Runs a script through the simulator and, where there is one, the runtime host, for one
/// class: their logs (the runtime's `None` where it does not exist).
struct BothHosts<'a> {
    machine: &'a Machine,
    script: Script<'a>,
}

type Logs = (Vec<String>, Option<Vec<String>>);

impl WithSched for BothHosts<'_> {
    type Out = Result<Logs, CoreError>;
    fn run_external(
        self,
        policy: &'static crate::registry::ExternalPolicy,
        _env: &crate::registry::BuildEnv,
    ) -> Self::Out {
        unreachable!(
            "the core's tests run built-in classes only, not {}",
            policy.name
        )
    }
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out {
        let name = sched.name();
        let balance = sched.rt.balance;
        let script = self.script;
        let sim = crate::sim::scripted::run(sched, self.machine, |h| script.run(h))
            .map_err(|e| CoreError::new(format!("in the simulator, {}", e.what())))?;
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        let rt = {
            let env = BuildEnv::of_machine(self.machine, balance);
            let runtime = RuntimeScript {
                machine: self.machine,
                script,
            };
            let rt = PolicyKind::parse(name)
                .expect("registered")
                .build(&env, runtime)
                .map_err(|e| CoreError::new(format!("in the runtime, {}", e.what())))?;
            Some(rt)
        };
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
        let rt = {
            let _ = (name, balance);
            None
        };
        Ok((sim, rt))
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
struct RuntimeScript<'a> {
    machine: &'a Machine,
    script: Script<'a>,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl WithSched for RuntimeScript<'_> {
    type Out = Result<Vec<String>, CoreError>;
    fn run_external(
        self,
        policy: &'static crate::registry::ExternalPolicy,
        _env: &crate::registry::BuildEnv,
    ) -> Self::Out {
        unreachable!(
            "the core's tests run built-in classes only, not {}",
            policy.name
        )
    }
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out {
        let (topology, hz) = (self.machine.topology.clone(), self.machine.hz());
        crate::runtime::scripted::run(sched, topology, hz, |h| self.script.run(h))
    }
}

/// A machine of `shape` whose every cost is zero (the scripted simulator's).
fn machine_of(shape: Shape) -> Machine {
    crate::sim::scripted::costless_machine(&shape.topology())
}

/// Two flat CPUs, every cost zero.
pub(super) fn costless_machine() -> Machine {
    machine_of(Shape::Flat(2))
}

/// The machine in words, for failure messages.
fn describe(t: &Topology) -> String {
    let caches = t.cache.iter().copied().max().map_or(0, |m| m + 1);
    format!("{} CPUs ({} cores, {caches} caches)", t.ncpus, t.ncores())
}

/// Runs `script` through both hosts for `kind` with `balance` on `machine`; returns the
/// simulator's log. The error names the class and the machine, then the broken invariant (or
/// the core's refusal) with the host and event where it happened, or the first decision the
/// hosts disagree on with the decisions before it.
fn conform(
    kind: PolicyKind,
    balance: crate::class::RtBalance,
    machine: &Machine,
    script: Script<'_>,
) -> Result<Vec<String>, String> {
    let env = BuildEnv::of_machine(machine, balance);
    let what = format!(
        "{} ({balance:?} RT balancing) on {}",
        kind.name(),
        describe(&machine.topology)
    );
    let (sim, rt) = kind
        .build(&env, BothHosts { machine, script })
        .map_err(|e| format!("{what}: {}", e.what()))?;
    if let Some(rt) = rt {
        compare(&sim, &rt).map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(sim)
}

/// The first difference of two hosts' logs, with what led to it.
fn compare(sim: &[String], rt: &[String]) -> Result<(), String> {
    let context = |upto: usize| {
        sim[upto.saturating_sub(8)..upto]
            .iter()
            .map(|l| format!("\n    {l}"))
            .collect::<String>()
    };
    match sim.iter().zip(rt).position(|(a, b)| a != b) {
        Some(i) => Err(format!(
            "the hosts' decision {i} differs\n  simulator: {}\n  runtime:   {}\n  after:{}",
            sim[i],
            rt[i],
            context(i)
        )),
        None if sim.len() != rt.len() => {
            let i = sim.len().min(rt.len());
            let extra = sim.get(i).or(rt.get(i)).expect("the longer one");
            Err(format!(
                "the simulator logged {} decisions, the runtime {}; the first unmatched: {extra}\n  after:{}",
                sim.len(),
                rt.len(),
                context(i)
            ))
        }
        None => Ok(()),
    }
}

const BALANCES: [crate::class::RtBalance; 2] = [
    crate::class::RtBalance::Passive,
    crate::class::RtBalance::PushPull,
];

#[test]
fn both_hosts_take_the_same_decisions_for_every_class() {
    let m = costless_machine();
    for &kind in PolicyKind::ALL {
        for balance in BALANCES {
            let log = conform(kind, balance, &m, Script::Fixed).unwrap_or_else(|e| panic!("{e}"));
            assert!(log.len() > 300, "{}: the script ran", kind.name());
        }
    }
}

#[test]
fn the_script_exercises_every_path() {
    // The log of one class shows each scripted event happened (so the comparison above
    // compares something).
    let m = costless_machine();
    let balance = crate::class::RtBalance::PushPull;
    let log = conform(PolicyKind::O1, balance, &m, Script::Fixed).unwrap();
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

/// A generated-style sequence of `tasks` (every CPU allowed, nice 0) and `events` on `shape`.
fn case_of(
    shape: Shape,
    tasks: &[(SchedPolicy, u8)],
    events: Vec<super::sequences::Event>,
) -> Case {
    let tasks = tasks
        .iter()
        .map(|&(policy, rt_priority)| super::sequences::NewTask {
            policy,
            nice: 0,
            rt_priority,
            allowed: 0,
        })
        .collect();
    Case {
        shape,
        tasks,
        events,
    }
}

/// What each CPU runs after event `i` of `case`, under `o1` with push/pull RT balancing,
/// once every class and balancing mode has run it through both hosts (audited).
fn o1_running_after(case: &Case, i: usize) -> String {
    conform_all(case).unwrap_or_else(|e| panic!("{e}"));
    let m = machine_of(case.shape);
    let pp = crate::class::RtBalance::PushPull;
    let log = conform(PolicyKind::O1, pp, &m, Script::Generated(case)).unwrap();
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
    use super::sequences::{AttrTo, Event};
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
    use super::sequences::{AttrTo, Event};
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

/// The open finding described at [`seed`] (shrunk from a random pass after the attribute
/// change fix): two CPUs; CPU 0 runs FIFO 9 task0; its child task4 is pushed to CPU 1, which a
/// FIFO 89 task pinned there then takes; task4 is raised to FIFO 10 from outside (queued, so
/// not pushed, as in 2.6.25); task0 forks again and binds itself to CPU 1. CPU 0 picks the FIFO
/// 9 child; task0's arrival on CPU 1 then pushes task4 to CPU 0. 2.6.25 would have CPU 0 pull
/// task4 before it picks.
///
/// Held as a reproducer that runs in every test pass: it asserts that the conformance check
/// still reports exactly this violation. When the core re-places an evicted task before the
/// CPU's pick (the fix described at [`seed`]), it fails: then assert `conform_all` passes.
#[test]
fn open_finding_an_evicting_cpu_picks_before_its_task_is_moved() {
    use super::sequences::{AttrTo, Event, NewTask};
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

/// How many sequences a run draws: `SCHEDKIT_CONFORMANCE_CASES`, else 256 (about 2 s).
fn cases() -> u32 {
    std::env::var("SCHEDKIT_CONFORMANCE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Which sequences a run draws: `SCHEDKIT_CONFORMANCE_SEED` (a number, or `random`), else the
/// same ones every run.
///
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
fn seed() -> proptest::test_runner::RngSeed {
    use proptest::test_runner::RngSeed;
    match std::env::var("SCHEDKIT_CONFORMANCE_SEED").ok().as_deref() {
        Some("random") => RngSeed::Random,
        Some(n) => RngSeed::Fixed(
            n.parse()
                .expect("SCHEDKIT_CONFORMANCE_SEED: a number or random"),
        ),
        None => RngSeed::Fixed(2026),
    }
}

/// What each kind of event logs when it does something (the coverage check below).
const EFFECTS: &[&str] = &[
    "take their ticks",
    "yields",
    " sleeps on",
    "while current",
    "woken from",
    "sets its nice",
    "from outside: changed true",
    "(evicted)",
    "forks",
    "spawned",
    "exits",
];

/// One sequence through both hosts for every class and RT balancing mode; returns the log of
/// the first class.
fn conform_all(case: &Case) -> Result<Vec<String>, TestCaseError> {
    let m = machine_of(case.shape);
    let mut first = None;
    for &kind in PolicyKind::ALL {
        for balance in BALANCES {
            let log =
                conform(kind, balance, &m, Script::Generated(case)).map_err(TestCaseError::fail)?;
            first.get_or_insert(log);
        }
    }
    Ok(first.unwrap_or_default())
}

#[test]
fn both_hosts_take_the_same_decisions_on_generated_sequences() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        // A sequence shrinks event by event: give it room.
        max_shrink_iters: 4096,
        rng_seed: seed(),
        ..Config::default()
    });
    let seen = std::cell::RefCell::new(vec![0u64; EFFECTS.len()]);
    let outcome = runner.run(&case(), |case| {
        let log = conform_all(&case)?;
        let mut seen = seen.borrow_mut();
        for (n, what) in seen.iter_mut().zip(EFFECTS) {
            *n += log.iter().filter(|l| l.contains(what)).count() as u64;
        }
        Ok(())
    });
    match outcome {
        Ok(()) => {}
        Err(TestError::Fail(_, case)) => {
            // Run again for the failure of the very sequence shown.
            let why = conform_all(&case).err().map(|e| e.to_string());
            let why = why.unwrap_or_else(|| "(it passes when run again)".into());
            panic!("{why}\n\nthe smallest failing sequence found:\n{case:#?}")
        }
        Err(TestError::Abort(why)) => panic!("{why}"),
    }
    // Every kind of event took effect somewhere (the comparisons compared something).
    let seen = seen.into_inner();
    eprintln!(
        "conformance: {} generated sequences; events that took effect: {:?}",
        cases(),
        EFFECTS.iter().zip(&seen).collect::<Vec<_>>()
    );
    if cases() >= 32 {
        for (what, n) in EFFECTS.iter().zip(&seen) {
            assert!(
                *n > 0,
                "no generated sequence had an event '{what}' take effect"
            );
        }
    }
}
