//! First come, first served: one FIFO list per CPU, no preemption, no balancing. A task runs
//! until it sleeps or yields (a yield sends it to the back of its list); a waking task goes back
//! to the CPU it last ran on, a new one to the allowed CPU with the fewest runnable tasks.
use schedkit::class::{
    CpuView, Ctx, DequeueKind, EnqueueKind, LockLayout, Rq, SchedClass, WakeKind,
};
use schedkit::ds::{list::Link, list::Linked, list::TaskList, work::Work};
use schedkit::external::FromEnv;
use schedkit::machine::Topology;
use schedkit::registry::BuildEnv;
use schedkit::task::{CpuId, TaskId, TaskView};

pub struct Fifo;

/// A task's part: its place in its CPU's list (the kernel's `run_list`).
#[derive(Clone, Debug, Default)]
pub struct FifoTask(Link);
impl Linked for FifoTask {
    fn link(&self) -> &Link {
        &self.0
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.0
    }
}

impl FromEnv for Fifo {
    fn from_env(_env: &BuildEnv) -> Self {
        Fifo
    }
}

type C<'a> = Ctx<'a, FifoTask>;

impl SchedClass for Fifo {
    type Rq = TaskList; // the running task stays at the front of its CPU's list
    type TaskData = FifoTask;

    fn name(&self) -> &'static str {
        "fifo"
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
    fn dequeue(&self, ctx: &mut C, rq: &mut Rq<TaskList>, _: CpuId, t: TaskId, _: DequeueKind) {
        rq.class.remove(&mut ctx.tasks, t, ctx.ops);
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
        if matches!(kind, WakeKind::Wakeup { .. }) && p.cpus_allowed.contains(p.cpu) {
            return p.cpu;
        }
        let allowed = p.cpus_allowed.iter(view.ncpus());
        allowed
            .min_by_key(|&c| view.cpu(c).nr_running)
            .unwrap_or(p.cpu)
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
