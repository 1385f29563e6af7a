//! `rr-rust`: the round robin of `examples/python_rr.py`, written in Rust against the same
//! interface an external class uses, decision for decision the same (the Python package's
//! tests check that the two runs give the same figures). It is the reference against which
//! `scripts/figures/python-class-cost.py` measures what a hook written in Python costs.
//! Like the Python adapter it reports no work, so the two are priced alike.
use schedkit::class::{
    CpuView, Ctx, DequeueKind, EnqueueKind, LockLayout, Rq, SchedClass, WakeKind,
};
use schedkit::ds::work::Work;
use schedkit::external::{ExternalPolicy, FromEnv};
use schedkit::machine::Topology;
use schedkit::registry::BuildEnv;
use schedkit::task::{CpuId, TaskId, TaskView};
use std::collections::VecDeque;

/// Ticks of a slice, as `RoundRobin()`'s default `slice_ticks`.
const SLICE_TICKS: u32 = 10;

/// One queue per CPU, the running task at its head; a slice of `SLICE_TICKS` ticks.
pub struct RustRr;

pub static RR_RUST: ExternalPolicy = ExternalPolicy::new::<RustRr>(
    "rr-rust",
    "Round robin in Rust, examples/python_rr.py's algorithm (10-tick slices; schedkit-py only)",
);

impl FromEnv for RustRr {
    fn from_env(_env: &BuildEnv) -> Self {
        RustRr
    }
}

/// Ticks of its slice a task has used (`self.ticks[task]` in Python).
type C<'a> = Ctx<'a, u32>;

fn requeue(ctx: &mut C, rq: &mut Rq<VecDeque<TaskId>>, t: TaskId) {
    if let Some(i) = rq.class.iter().position(|&x| x == t) {
        rq.class.remove(i);
    }
    rq.class.push_back(t);
    ctx.tasks[t].data = 0;
}

impl SchedClass for RustRr {
    type Rq = VecDeque<TaskId>;
    type TaskData = u32;

    fn name(&self) -> &'static str {
        "rr-rust"
    }
    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }
    fn new_rq(&self, _: usize, _: &Topology) -> VecDeque<TaskId> {
        VecDeque::new()
    }
    fn task_fork(
        &self,
        _: &mut C,
        _: &mut Rq<Self::Rq>,
        _: CpuId,
        _: Option<TaskId>,
        _: TaskId,
    ) -> bool {
        false
    }
    fn task_exit(&self, _: &mut C, _: &mut Rq<Self::Rq>, _: TaskId, _: Option<TaskId>) {}
    fn enqueue(&self, ctx: &mut C, rq: &mut Rq<Self::Rq>, _: CpuId, t: TaskId, _: EnqueueKind) {
        rq.class.push_back(t);
        rq.nr_running += 1;
        ctx.tasks[t].data = 0;
    }
    fn dequeue(&self, _: &mut C, rq: &mut Rq<Self::Rq>, _: CpuId, t: TaskId, _: DequeueKind) {
        if let Some(i) = rq.class.iter().position(|&x| x == t) {
            rq.class.remove(i);
        }
        rq.nr_running -= 1;
    }
    fn put_prev(&self, _: &mut C, _: &mut Rq<Self::Rq>, _: CpuId, _: TaskId) {}
    fn pick_next(&self, _: &mut C, rq: &mut Rq<Self::Rq>, _: CpuId) -> Option<TaskId> {
        rq.class.front().copied()
    }
    fn task_tick(&self, ctx: &mut C, rq: &mut Rq<Self::Rq>, _: CpuId, t: TaskId) -> bool {
        ctx.tasks[t].data += 1;
        if ctx.tasks[t].data < SLICE_TICKS {
            return false;
        }
        requeue(ctx, rq, t);
        true
    }
    fn yield_task(&self, ctx: &mut C, rq: &mut Rq<Self::Rq>, _: CpuId, t: TaskId) -> bool {
        requeue(ctx, rq, t);
        true
    }
    fn check_preempt_wakeup(
        &self,
        _: &mut C,
        _: &mut Rq<Self::Rq>,
        _: CpuId,
        _: TaskId,
        _: bool,
    ) -> bool {
        false
    }
    /// `schedkit.Policy.select_cpu`'s default: a waking task's previous CPU if it may run
    /// there, else (and for a new task) the allowed CPU with the fewest runnable tasks.
    fn select_cpu(
        &self,
        tasks: &TaskView<'_, u32>,
        view: &CpuView,
        _: &mut Work<'_>,
        t: TaskId,
        _waker: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let p = &tasks[t];
        if kind != WakeKind::Fork && p.cpus_allowed.contains(p.cpu) {
            return p.cpu;
        }
        p.cpus_allowed
            .iter(view.ncpus())
            .min_by_key(|&c| view.cpu(c).nr_running)
            .unwrap_or(p.cpu)
    }
    fn for_each_queued(&self, rq: &Rq<Self::Rq>, _: &TaskView<'_, u32>, f: &mut dyn FnMut(TaskId)) {
        rq.class.iter().copied().for_each(f);
    }
}
