//! The backend-neutral scheduler interface, in the spirit of the kernel's `struct sched_class`.
//!
//! A policy owns its runqueue type ([`SchedClass::Rq`]) and a private per-task block
//! ([`SchedClass::TaskData`]); a host (the simulator in `sim`, later a real runtime) owns the
//! CPUs, the tasks, the clock and the locks. The policy declares its lock layout: one global
//! runqueue lock (2.4, BFS) or one per CPU (O(1), CFS). The host keeps one `Rq` per lock domain
//! and calls each hook with exactly that domain's `Rq`, i.e. with that lock held; balancing
//! hooks get two `Rq`s, i.e. both locks held. A hook therefore cannot touch another domain's
//! queue without the host having taken its lock, which is what lets a real-threaded host run
//! the same code with real locks.
//!
//! Every hook reports the work it did in an [`OpCounter`] (tasks scanned, bitmap searches,
//! list operations, ...). The simulator turns those counts into CPU time with the machine's
//! costs, so an O(n) loop costs O(n) simulated time because it really ran n iterations.

use crate::machine::Topology;
use crate::task::{CpuId, TaskId, TaskView};

/// How a policy's runqueues are locked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockLayout {
    /// One runqueue and one lock for the whole machine (2.4 `runqueue_lock`, BFS `grq.lock`).
    Global,
    /// One runqueue and lock per CPU (O(1), CFS, EEVDF).
    PerCpu,
}

impl LockLayout {
    /// Number of lock domains (runqueues) on a machine with `ncpus` CPUs.
    pub fn domains(self, ncpus: usize) -> usize {
        match self {
            LockLayout::Global => 1,
            LockLayout::PerCpu => ncpus,
        }
    }

    /// The lock domain that covers `cpu`'s runqueue.
    pub fn domain_of(self, cpu: CpuId) -> usize {
        match self {
            LockLayout::Global => 0,
            LockLayout::PerCpu => cpu,
        }
    }
}

/// Work a hook did, in units the host prices (see `sim::cost`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounter {
    /// Runnable tasks examined by a selection loop (2.4 `goodness()` calls, BFS deadline scan).
    pub scanned: u64,
    /// Tasks visited by a whole-system loop over cold task structures (2.4 recalculation).
    pub recalc: u64,
    /// Find-first-bit searches of a priority bitmap.
    pub bitmap_searches: u64,
    /// Insertions into / removals from a list or array slot.
    pub list_ops: u64,
    /// Balanced-tree steps (CFS/EEVDF rbtree levels).
    pub tree_steps: u64,
    /// Cache lines read from another CPU's runqueue (balancer scans, migrations).
    pub remote_touches: u64,
}

/// What every hook may use besides its runqueue: the clock, the task table and the op counter.
pub struct Ctx<'a, D> {
    /// Host time in ns.
    pub now: u64,
    /// Timer interrupts per second of this machine (for jiffy-based designs).
    pub hz: u32,
    pub ncpus: usize,
    /// The task table, as the host's locks allow it to be reached (see [`TaskView`]).
    pub tasks: TaskView<'a, D>,
    pub ops: &'a mut OpCounter,
}

impl<'a, D> Ctx<'a, D> {
    pub fn new(
        now: u64,
        hz: u32,
        ncpus: usize,
        tasks: TaskView<'a, D>,
        ops: &'a mut OpCounter,
    ) -> Self {
        Ctx {
            now,
            hz,
            ncpus,
            tasks,
            ops,
        }
    }

    /// Nanoseconds per jiffy.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.hz as u64
    }
}

/// What the host publishes about a CPU for lock-free reads (the kernel reads `rq->nr_running`,
/// `rq->curr` and `aligned_data[cpu]` of other CPUs without their locks in the same way).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuStatus {
    /// The task running there, `None` when the CPU runs its idle task.
    pub curr: Option<TaskId>,
    /// Runnable tasks on that CPU's runqueue, the running one included (per-CPU layouts).
    pub nr_running: usize,
    /// Host time of that CPU's last context switch (2.4 `last_schedule`).
    pub last_schedule_ns: u64,
}

/// Read-only view of all CPUs plus the machine topology.
pub struct CpuView<'a> {
    pub cpus: &'a [CpuStatus],
    pub topology: &'a Topology,
    pub now: u64,
    pub hz: u32,
}

impl CpuView<'_> {
    pub fn ncpus(&self) -> usize {
        self.cpus.len()
    }
    pub fn is_idle(&self, cpu: CpuId) -> bool {
        self.cpus[cpu].curr.is_none()
    }
}

/// Why a task is being enqueued.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EnqueueKind {
    /// A sleeper woke; `uninterruptible` if it slept in TASK_UNINTERRUPTIBLE, `sync` if the
    /// waker is about to sleep (WF_SYNC) *and* the task is being queued on the waker's own
    /// CPU, `irq` if the wakeup runs in interrupt context (a timer expiring).
    Wakeup {
        uninterruptible: bool,
        sync: bool,
        irq: bool,
    },
    /// A task created by fork (or spawned by the host), enqueued for the first time.
    New,
    /// Moved here from another runqueue by the balancer or an affinity change.
    Migrate,
    /// Re-inserted after a change of nice level or policy.
    Restore,
}

/// Why a task is being dequeued.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DequeueKind {
    /// Going to sleep (blocked).
    Sleep,
    /// Taken off to be moved elsewhere.
    Migrate,
    /// Taken off for a nice/policy change and re-enqueued right after.
    Save,
    /// Exiting.
    Exit,
}

/// Why a CPU is being chosen for a task.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WakeKind {
    Wakeup { sync: bool },
    Fork,
}

/// What a runqueue should do after a context switch or a wakeup, in an active-balancing design
/// (RT push, 2.6.25 `push_rt_task`'s first steps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushDecision {
    /// Nothing to push.
    None,
    /// The best queued task beats the running one: reschedule this CPU instead of pushing.
    ReschedSelf,
    /// Move `task` to `to`; the host locks `to`'s runqueue and calls `push_task`, which
    /// re-checks everything under both locks.
    Move { task: TaskId, to: CpuId },
}

/// Outcome of a balancing pull.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullOutcome {
    pub moved: usize,
    /// The pulling CPU's current task should be preempted (a better task arrived).
    pub resched: bool,
}

/// The scheduler-class interface. All hooks run with the lock of the `Rq` they receive held.
pub trait SchedClass: Send + Sync + 'static {
    /// The state one runqueue lock protects.
    type Rq: Send;
    /// The policy's private per-task state.
    type TaskData: Default + Clone + Send + std::fmt::Debug;

    fn name(&self) -> &'static str;
    fn lock_layout(&self) -> LockLayout;
    /// Builds the runqueue of lock domain `domain`.
    fn new_rq(&self, domain: usize, topology: &Topology) -> Self::Rq;

    /// Initialises a new task's scheduling state. `parent` is the forking task, running on
    /// `cpu` whose runqueue is `rq`, or `None` for a task the host creates from nothing.
    /// Returns true if the parent should reschedule (its share of the slice ran out).
    fn task_fork(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        cpu: CpuId,
        parent: Option<TaskId>,
        child: TaskId,
    ) -> bool;
    /// A task leaves the system; `rq` is the runqueue of its parent (O(1) gives the unused
    /// slice back to the parent), or of the child itself when there is no parent.
    fn task_exit(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        child: TaskId,
        parent: Option<TaskId>,
    );

    fn enqueue(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    );
    fn dequeue(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        cpu: CpuId,
        t: TaskId,
        kind: DequeueKind,
    );
    /// `prev` stops running on `cpu` (it may still be queued).
    fn put_prev(&self, ctx: &mut Ctx<Self::TaskData>, rq: &mut Self::Rq, cpu: CpuId, prev: TaskId);
    /// Chooses the next task for `cpu`, or `None` for idle. The chosen task stays owned by the
    /// policy (queued or marked running, as the design does it).
    fn pick_next(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        cpu: CpuId,
    ) -> Option<TaskId>;
    /// Timer tick while `curr` runs on `cpu`; returns true to request a reschedule.
    fn task_tick(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool;
    /// `sched_yield()` by `curr`; returns true if the CPU should reschedule.
    fn yield_task(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool;
    /// Should `woken`, just enqueued on `cpu`'s runqueue, preempt `curr` running there?
    /// `sync` is set when the waker runs on `cpu` and is about to sleep.
    #[allow(clippy::too_many_arguments)]
    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Self::Rq,
        cpu: CpuId,
        curr: TaskId,
        woken: TaskId,
        sync: bool,
    ) -> bool;
    /// Chooses the runqueue (per-CPU layouts) or the CPU to kick (global layouts) for a waking
    /// or new task, from lock-free reads of the machine. `waker_cpu` is where the wakeup runs.
    fn select_cpu(
        &self,
        tasks: &TaskView<'_, Self::TaskData>,
        view: &CpuView,
        ops: &mut OpCounter,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId;
    /// Runnable tasks on `cpu` according to `rq` (published into [`CpuStatus::nr_running`]).
    fn nr_running(&self, rq: &Self::Rq, cpu: CpuId) -> usize;
    /// Every task `rq` holds (queued or running), for the host's invariant audit.
    fn for_each_queued(
        &self,
        rq: &Self::Rq,
        tasks: &TaskView<'_, Self::TaskData>,
        f: &mut dyn FnMut(TaskId),
    );

    /// How often a CPU runs the periodic balancer, in ticks (`None`: this design has none).
    fn balance_interval_ticks(&self, _idle: bool, _hz: u32) -> Option<u64> {
        None
    }
    /// With `this_rq` locked, looks for a busier runqueue to pull from (lock-free reads of the
    /// others through `view`). Returns the CPU to pull from.
    fn find_busiest(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _this_rq: &mut Self::Rq,
        _this_cpu: CpuId,
        _view: &CpuView,
        _idle: bool,
    ) -> Option<CpuId> {
        None
    }
    /// With both runqueues locked, moves tasks from `src` to `this`.
    fn pull_tasks(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _this_rq: &mut Self::Rq,
        _this_cpu: CpuId,
        _src_rq: &mut Self::Rq,
        _src_cpu: CpuId,
        _idle: bool,
    ) -> PullOutcome {
        PullOutcome::default()
    }

    // ----- active balancing (RT push/pull) -----

    /// A lock-free test (the kernel reads `rq->rt.overloaded`): may `cpu`'s runqueue have
    /// something to push? The host calls `push_decision` only when this says yes.
    fn push_pending(&self, _cpu: CpuId) -> bool {
        false
    }
    /// `pre_schedule`: with `rq` locked, after `prev` left (or not), the CPUs whose runqueues
    /// this one should try to pull from before picking. Empty: no pull.
    fn pull_sources(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _rq: &mut Self::Rq,
        _cpu: CpuId,
        _prev: Option<TaskId>,
    ) -> Vec<CpuId> {
        Vec::new()
    }
    /// With both runqueues locked: pull from `src` what should run here instead.
    fn pull_from(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _this_rq: &mut Self::Rq,
        _this_cpu: CpuId,
        _src_rq: &mut Self::Rq,
        _src_cpu: CpuId,
    ) -> PullOutcome {
        PullOutcome::default()
    }
    /// After a context switch on `cpu` (`woken` = None) or a wakeup queued there (`woken` =
    /// the task): should `rq` push a task to another CPU?
    fn push_decision(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _rq: &mut Self::Rq,
        _cpu: CpuId,
        _woken: Option<TaskId>,
    ) -> PushDecision {
        PushDecision::None
    }
    /// With both runqueues locked: move `t` from `src` to `dst` if it is still queued and not
    /// running on `src`, allowed on `dst`, and still better than everything on `dst`.
    #[allow(clippy::too_many_arguments)]
    fn push_task(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _src_rq: &mut Self::Rq,
        _src_cpu: CpuId,
        _dst_rq: &mut Self::Rq,
        _dst_cpu: CpuId,
        _t: TaskId,
    ) -> bool {
        false
    }
}
