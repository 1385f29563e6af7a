//! The conformance checker fails when it should: classes broken on purpose, written against
//! the public interface as a crate outside schedkit writes one, are caught, and the failure
//! names the class, the machine, the shrunk sequence and the broken invariant (or the
//! decision on which the hosts disagree). A correct class of the same shape passes, so each
//! failure is the bug's.

use schedkit::class::{
    CpuView, Ctx, DequeueKind, EnqueueKind, LockLayout, Rq, SchedClass, WakeKind,
};
use schedkit::conformance::{self, Config, HostKind, Problem, Shape};
use schedkit::ds::{list::Link, list::Linked, list::TaskList, work::Work};
use schedkit::external::FromEnv;
use schedkit::machine::Topology;
use schedkit::registry::BuildEnv;
use schedkit::task::{CpuId, TaskId, TaskView};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The bugs a [`Fifo`] may carry.
const CORRECT: u8 = 0;
/// `dequeue` for a sleep forgets to take the task off its list (it still counts it out of
/// `nr_running`).
const KEEPS_SLEEPERS: u8 = 1;
/// `select_cpu` places a woken task by a counter kept outside the runqueues, in a static, so
/// that the second host to run a sequence finds it where the first left it.
const GLOBAL_STATE: u8 = 2;
/// `select_cpu` sends a new task to the CPU after the one it would pick, allowed or not.
const IGNORES_AFFINITY: u8 = 3;
/// The same, on machines of three CPUs or more only (the fixed script's two CPUs miss it).
const IGNORES_AFFINITY_ON_3: u8 = 4;

/// First come, first served, as `examples/own-class/src/fifo.rs`, with bug `B`.
struct Fifo<const B: u8>;

#[derive(Clone, Debug, Default)]
struct FifoTask(Link);
impl Linked for FifoTask {
    fn link(&self) -> &Link {
        &self.0
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.0
    }
}

impl<const B: u8> FromEnv for Fifo<B> {
    fn from_env(_env: &BuildEnv) -> Self {
        Fifo
    }
}

static PLACEMENTS: AtomicUsize = AtomicUsize::new(0);

type C<'a> = Ctx<'a, FifoTask>;

impl<const B: u8> SchedClass for Fifo<B> {
    type Rq = TaskList;
    type TaskData = FifoTask;

    fn name(&self) -> &'static str {
        match B {
            KEEPS_SLEEPERS => "fifo-keeps-sleepers",
            GLOBAL_STATE => "fifo-global-state",
            IGNORES_AFFINITY => "fifo-ignores-affinity",
            IGNORES_AFFINITY_ON_3 => "fifo-ignores-affinity-on-3",
            _ => "fifo-correct",
        }
    }
    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }
    fn new_rq(&self, _domain: usize, _topology: &Topology) -> TaskList {
        TaskList::default()
    }
    fn task_fork(
        &self,
        _: &mut C,
        _: &mut Rq<TaskList>,
        _: CpuId,
        _: Option<TaskId>,
        _: TaskId,
    ) -> bool {
        false
    }
    fn task_exit(&self, _: &mut C, _: &mut Rq<TaskList>, _: TaskId, _: Option<TaskId>) {}
    fn enqueue(&self, ctx: &mut C, rq: &mut Rq<TaskList>, _: CpuId, t: TaskId, _: EnqueueKind) {
        rq.class.push_back(&mut ctx.tasks, t, ctx.ops);
        rq.nr_running += 1;
    }
    fn dequeue(&self, ctx: &mut C, rq: &mut Rq<TaskList>, _: CpuId, t: TaskId, k: DequeueKind) {
        if !(B == KEEPS_SLEEPERS && k == DequeueKind::Sleep) {
            rq.class.remove(&mut ctx.tasks, t, ctx.ops);
        }
        rq.nr_running -= 1;
    }
    fn put_prev(&self, _: &mut C, _: &mut Rq<TaskList>, _: CpuId, _: TaskId) {}
    fn pick_next(&self, _: &mut C, rq: &mut Rq<TaskList>, _: CpuId) -> Option<TaskId> {
        rq.class.front()
    }
    fn task_tick(&self, _: &mut C, _: &mut Rq<TaskList>, _: CpuId, _: TaskId) -> bool {
        false
    }
    fn yield_task(&self, ctx: &mut C, rq: &mut Rq<TaskList>, _: CpuId, t: TaskId) -> bool {
        rq.class.remove(&mut ctx.tasks, t, ctx.ops);
        rq.class.push_back(&mut ctx.tasks, t, ctx.ops);
        true
    }
    fn check_preempt_wakeup(
        &self,
        _: &mut C,
        _: &mut Rq<TaskList>,
        _: CpuId,
        _: TaskId,
        _: bool,
    ) -> bool {
        false
    }
    fn select_cpu(
        &self,
        tasks: &TaskView<'_, FifoTask>,
        view: &CpuView,
        _: &mut Work<'_>,
        t: TaskId,
        _waker: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let p = &tasks[t];
        let n = view.ncpus();
        if B == GLOBAL_STATE && matches!(kind, WakeKind::Wakeup { .. }) {
            let allowed: Vec<CpuId> = p.cpus_allowed.iter(n).collect();
            let i = PLACEMENTS.fetch_add(1, Ordering::Relaxed);
            return allowed
                .get(i % allowed.len().max(1))
                .copied()
                .unwrap_or(p.cpu);
        }
        if matches!(kind, WakeKind::Wakeup { .. }) && p.cpus_allowed.contains(p.cpu) {
            return p.cpu;
        }
        let best = p
            .cpus_allowed
            .iter(n)
            .min_by_key(|&c| view.cpu(c).nr_running)
            .unwrap_or(p.cpu);
        let buggy = B == IGNORES_AFFINITY || (B == IGNORES_AFFINITY_ON_3 && n >= 3);
        if buggy && matches!(kind, WakeKind::Fork) {
            (best + 1) % n
        } else {
            best
        }
    }
    fn for_each_queued(
        &self,
        rq: &Rq<TaskList>,
        tasks: &TaskView<'_, FifoTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
        rq.class.iter(tasks).for_each(f);
    }
}

fn config() -> Config {
    Config::default().cases(64)
}

#[test]
fn a_correct_fifo_passes() {
    let report = conformance::check::<Fifo<CORRECT>>(&config()).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(report.classes, ["fifo-correct"]);
    assert_eq!(report.cases, 64);
    assert_eq!(report.both_hosts, conformance::HAS_RUNTIME);
    assert!(report.decisions > 1000, "{report}");
    assert!(report.events_never_taken().is_empty(), "{report}");
}

#[test]
fn a_class_that_keeps_a_sleeper_queued_is_caught() {
    let f = conformance::check::<Fifo<KEEPS_SLEEPERS>>(&config())
        .expect_err("the class keeps sleeping tasks on its list");
    let text = f.to_string();
    assert_eq!(f.class, "fifo-keeps-sleepers", "{text}");
    assert!(
        text.starts_with(
            "conformance: class `fifo-keeps-sleepers` (Passive RT balancing) fails on "
        ),
        "{text}"
    );
    // The first sleep breaks it: the sleeper, still first on its list, is picked again, which
    // the core refuses (a pick must be a runnable task).
    let Problem::Broken { host, what } = &f.problem else {
        panic!("not an invariant: {text}")
    };
    assert_eq!(*host, HostKind::Simulator, "{text}");
    assert!(what.starts_with("at step "), "{text}");
    assert!(what.contains("fifo-keeps-sleepers picked task"), "{text}");
    assert!(what.contains("but it is Sleeping"), "{text}");
    // The fixed script sleeps too, but it runs first: the failure is its.
    assert!(f.sequence.is_none(), "{text}");
    assert!(text.contains("in the fixed script"), "{text}");
}

#[test]
fn a_generated_sequence_catches_it_too_and_shrinks_to_a_sleep() {
    // The generated sequences alone (`check_sequence` runs one; `check` runs the fixed script
    // first): a shrunk sequence ends at the sleep that breaks it.
    let cfg = config().shapes(&[Shape::Flat(1)]);
    let seq = conformance::Sequence {
        shape: Shape::Flat(1),
        tasks: vec![conformance::NewTask {
            policy: schedkit::task::SchedPolicy::Normal,
            nice: 0,
            rt_priority: 1,
            allowed: 0,
        }],
        events: vec![
            conformance::Event::Tick { cpus: 1 },
            conformance::Event::Sleep { cpu: 0 },
        ],
    };
    let f = conformance::check_sequence::<Fifo<KEEPS_SLEEPERS>>(&seq, &cfg)
        .expect_err("the sleep leaves the task queued");
    let text = f.to_string();
    assert!(text.contains("at event 1"), "{text}");
    assert!(
        text.contains("event 1: the task running on cpu0 sleeps"),
        "{text}"
    );
    assert!(
        text.contains("machine: 1 CPUs, each its own core and cache"),
        "{text}"
    );
    // The correct class runs the same sequence.
    let log = conformance::check_sequence::<Fifo<CORRECT>>(&seq, &cfg).unwrap();
    assert!(
        log.iter().any(|l| l.contains("task0 sleeps on cpu0")),
        "{log:?}"
    );
}

#[test]
fn a_class_that_places_a_task_outside_its_affinity_is_caught() {
    let f = conformance::check::<Fifo<IGNORES_AFFINITY>>(&config())
        .expect_err("new tasks land on a CPU they may not use");
    let text = f.to_string();
    assert_eq!(f.class, "fifo-ignores-affinity", "{text}");
    assert!(text.contains("outside the task's affinity"), "{text}");
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn a_class_that_decides_from_outside_its_runqueues_disagrees_between_hosts() {
    let f = conformance::check::<Fifo<GLOBAL_STATE>>(&config())
        .expect_err("the second host starts where the first left the counter");
    let text = f.to_string();
    assert_eq!(f.class, "fifo-global-state", "{text}");
    let Problem::Disagree {
        simulator, runtime, ..
    } = &f.problem
    else {
        panic!("not a disagreement: {text}")
    };
    assert_ne!(simulator, runtime, "{text}");
    assert!(
        text.contains("the simulator and the runtime decide differently at decision"),
        "{text}"
    );
}

#[test]
fn a_bug_the_fixed_script_misses_is_found_by_a_generated_sequence_and_shrunk() {
    let f = conformance::check::<Fifo<IGNORES_AFFINITY_ON_3>>(&config())
        .expect_err("a generated machine of 3 or 4 CPUs shows it");
    let text = f.to_string();
    eprintln!("{text}");
    let seq = f
        .sequence
        .as_ref()
        .unwrap_or_else(|| panic!("not a generated sequence: {text}"));
    assert!(seq.shape.topology().cpus >= 3, "{text}");
    assert!(text.contains("outside the task's affinity"), "{text}");
    assert!(
        text.contains("the smallest failing sequence found:"),
        "{text}"
    );
    // Shrunk: a task placed at creation or by one fork or spawn is enough.
    assert!(seq.tasks.len() <= 2 && seq.events.len() <= 1, "{text}");
    // Replayed, the shrunk sequence fails the same way; the correct class runs it.
    let cfg = config();
    let again = conformance::check_sequence::<Fifo<IGNORES_AFFINITY_ON_3>>(seq, &cfg).unwrap_err();
    assert_eq!(again.to_string(), text);
    assert!(text.contains("starting task0 from cpu"), "{text}");
    conformance::check_sequence::<Fifo<CORRECT>>(seq, &cfg).unwrap();
}
