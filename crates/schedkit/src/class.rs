//! The backend-neutral scheduler interface, in the spirit of the kernel's `struct sched_class`.
//!
//! A class owns its runqueue type ([`SchedClass::Rq`]) and a private per-task block
//! ([`SchedClass::TaskData`]). The scheduler core (`sched_core`, the kernel's `core.c`) keeps
//! one [`Rq`] per lock domain: the part of the kernel's `struct rq` every class shares (the
//! CPU, the current task, `nr_running`), the RT class's queue (`rq->rt`), and the class's own
//! queue (`rq->cfs` and friends), reached through `Deref`. A host (the simulator in `sim`, the
//! real-thread runtime in `runtime`) owns the CPUs, the tasks, the clock and the locks.
//!
//! Classes stack as the kernel's do: the RT class (`policy::rt`) comes first and the class a
//! policy names after it; the core walks them in that order for pick and routes each task's
//! hooks to the class its POSIX policy belongs to. A design that kept RT tasks in its own queue
//! (2.4's `goodness()` with `1000 + rt_priority`, BFS's 103 levels) says so with
//! [`SchedClass::OWNS_RT`], and then sees every task.
//!
//! The class declares its lock layout: one global runqueue lock (2.4, BFS) or one per CPU
//! (O(1), CFS). Each hook runs with exactly its `Rq`'s lock held; balancing hooks get two
//! `Rq`s, i.e. both locks held. A hook therefore cannot touch another domain's queue without
//! the core having taken its lock, which is what lets a real-threaded host run the same code
//! with real locks.
//!
//! Every hook reports the work it did in an [`OpCounter`] (tasks scanned, bitmap searches,
//! list operations, ...). The simulator turns those counts into CPU time with the machine's
//! costs, so an O(n) loop costs O(n) simulated time because it really ran n iterations. The
//! shared structures report their own work (every list insertion or removal of a
//! `TaskList`/`PrioArray`, every bitmap search takes the counter), so no path can forget it;
//! what a class still reports by hand is the length of its own loops (tasks scanned,
//! recalculation visits, remote cache lines read).

use crate::ds::rt_rq::RtRq;
use crate::ds::work::{Line, LineSink, OpCounter, Span, Work};
use crate::machine::Topology;
use crate::task::{CpuId, Task, TaskId, TaskView};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

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
    #[inline]
    pub fn domains(self, ncpus: usize) -> usize {
        match self {
            LockLayout::Global => 1,
            LockLayout::PerCpu => ncpus,
        }
    }

    /// The lock domain that covers `cpu`'s runqueue.
    #[inline]
    pub fn domain_of(self, cpu: CpuId) -> usize {
        match self {
            LockLayout::Global => 0,
            LockLayout::PerCpu => cpu,
        }
    }
}

/// Where a class's kernel keeps the task fields the host's own paths touch, for a class that
/// reports its lines field by field ([`Line::TaskBytes`]). With one, the host writes `state`
/// at a wakeup and the `fork` spans at a fork, and leaves the tick's and the context switch's
/// lines to the class (its `task_tick` and `pick_next` report them, as its kernel's paths
/// touch them).
#[derive(Debug)]
pub struct TaskStructLayout {
    /// `p->state`, which `try_to_wake_up` writes.
    pub state: Span,
    /// What a new task's structure puts in the forking CPU's cache (the spans any path of the
    /// class touches; the rest of the copy is not priced).
    pub fork: &'static [Span],
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
    /// Where to report kernel lines touched (a host that prices coherence; else `None`).
    pub lines: Option<&'a mut dyn LineSink>,
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
            lines: None,
        }
    }

    /// Reports a read of kernel line `l` (nothing on a host that does not price them).
    #[inline]
    pub fn read_line(&mut self, l: Line) {
        if let Some(s) = self.lines.as_deref_mut() {
            s.read(l);
        }
    }

    /// Reports a write of kernel line `l`.
    #[inline]
    pub fn write_line(&mut self, l: Line) {
        if let Some(s) = self.lines.as_deref_mut() {
            s.write(l);
        }
    }

    /// Reports a read of `l`, a line another CPU owns: priced as a line where the host tracks
    /// them, else counted as a remote touch (the older, unpriced account).
    #[inline]
    pub fn read_remote(&mut self, l: Line) {
        match self.lines.as_deref_mut() {
            Some(s) => s.read(l),
            None => self.ops.remote_touches += 1,
        }
    }

    /// Reports a write of `l`, a line another CPU owns (see [`Ctx::read_remote`]).
    #[inline]
    pub fn write_remote(&mut self, l: Line) {
        match self.lines.as_deref_mut() {
            Some(s) => s.write(l),
            None => self.ops.remote_touches += 1,
        }
    }

    /// Whether a host prices the lines reported (so a hook may skip building reports).
    #[inline]
    pub fn tracks_lines(&self) -> bool {
        self.lines.is_some()
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
    /// Tasks asleep but still queued there (6.12+ DELAY_DEQUEUE), not in `nr_running`; the
    /// kernel's `rq->nr_running` counts them ([`CpuStatus::rq_nr_running`]).
    pub nr_delayed: usize,
    /// Every task queued there is SCHED_IDLE (`sched_idle_cpu`, 5.4+: `rq->nr_running ==
    /// rq->cfs.h_nr_idle`, and not 0), as the class says ([`SchedClass::sched_idle_cpu`]).
    pub sched_idle: bool,
    /// The runqueue's weighted load as its class measures it (`rq->load.weight`; per-CPU
    /// layouts), for balancers that compare weights rather than counts.
    pub load: u64,
    /// Host time of that CPU's last context switch (2.4 `last_schedule`).
    pub last_schedule_ns: u64,
}

/// A CPU's [`CpuStatus`] as atomics, for a host whose CPUs run concurrently (the runtime):
/// written by that CPU (its `schedule()` and runqueue changes), read by any. One cache line
/// each, so that one CPU's switches do not invalidate another's.
#[derive(Debug)]
#[repr(align(64))]
pub struct LiveCpuStatus {
    /// The running task's id, `u32::MAX` when idle.
    pub curr: AtomicU32,
    pub nr_running: AtomicUsize,
    pub nr_delayed: AtomicUsize,
    pub sched_idle: std::sync::atomic::AtomicBool,
    pub load: AtomicU64,
    pub last_schedule_ns: AtomicU64,
}

impl Default for LiveCpuStatus {
    fn default() -> Self {
        LiveCpuStatus {
            curr: AtomicU32::new(u32::MAX),
            nr_running: AtomicUsize::new(0),
            nr_delayed: AtomicUsize::new(0),
            sched_idle: std::sync::atomic::AtomicBool::new(false),
            load: AtomicU64::new(0),
            last_schedule_ns: AtomicU64::new(0),
        }
    }
}

impl LiveCpuStatus {
    /// What the CPU published last (each field read on its own, as the kernel's unlocked
    /// reads of another runqueue are).
    #[inline]
    pub fn read(&self) -> CpuStatus {
        let c = self.curr.load(Relaxed);
        CpuStatus {
            curr: (c != u32::MAX).then_some(TaskId(c)),
            nr_running: self.nr_running.load(Relaxed),
            nr_delayed: self.nr_delayed.load(Relaxed),
            sched_idle: self.sched_idle.load(Relaxed),
            load: self.load.load(Relaxed),
            last_schedule_ns: self.last_schedule_ns.load(Relaxed),
        }
    }
}

impl CpuStatus {
    /// The kernel's `rq->nr_running`: since 6.12 a task asleep but still queued (delayed
    /// dequeue) stays counted until it is dequeued for good (`sub_nr_running` runs in
    /// `dequeue_entities` only then), where `nr_running` here counts the runnable ones, as
    /// `rq->cfs.h_nr_runnable` does for the fair class.
    pub fn rq_nr_running(&self) -> usize {
        self.nr_running + self.nr_delayed
    }
}

/// Where a [`CpuView`] reads the CPUs.
#[derive(Clone, Copy, Debug)]
pub enum Cpus<'a> {
    /// A snapshot the host took: the simulator, whose CPUs do not move while a hook runs.
    Snapshot(&'a [CpuStatus]),
    /// The host's published atomics, read when the policy asks: the runtime. Reading every
    /// CPU up front cost a cache miss per busy CPU on every wakeup, even for a policy that
    /// looks at none (2.6's O(1) waking a task on the CPU it last ran on).
    Live(&'a [LiveCpuStatus]),
}

/// Read-only view of all CPUs plus the machine topology.
pub struct CpuView<'a> {
    pub cpus: Cpus<'a>,
    pub topology: &'a Topology,
    /// The time as the kernel's CPU selection knows it, `jiffies` (only 6.18's
    /// `record_wakee` reads it): the simulator's clock; in the runtime, a wakeup's worker's
    /// last clock reading (its last `schedule()` or tick), the clock itself elsewhere.
    pub now: u64,
    pub hz: u32,
    /// How many CPUs publish two or more queued tasks (`rq_nr_running`, which counts delayed
    /// ones; so none has two runnable either when it is 0), where the host keeps that count
    /// with what it publishes (the simulator's snapshot); `None` where it does not (the
    /// runtime).
    /// A balancer may use it to skip a scan that could find nothing to pull; it must decide
    /// and report the same work as if it had scanned.
    pub overloaded: Option<usize>,
}

impl CpuView<'_> {
    pub fn ncpus(&self) -> usize {
        match self.cpus {
            Cpus::Snapshot(s) => s.len(),
            Cpus::Live(s) => s.len(),
        }
    }
    /// What `cpu` published.
    #[inline]
    pub fn cpu(&self, cpu: CpuId) -> CpuStatus {
        match self.cpus {
            Cpus::Snapshot(s) => s[cpu],
            Cpus::Live(s) => s[cpu].read(),
        }
    }
    pub fn is_idle(&self, cpu: CpuId) -> bool {
        self.cpu(cpu).curr.is_none()
    }
    /// The kernel's `idle_cpu()`: running its idle task with nothing queued, delayed tasks
    /// included (one read of what `cpu` published, so both facts are of the same moment).
    pub fn idle_cpu(&self, cpu: CpuId) -> bool {
        let s = self.cpu(cpu);
        s.curr.is_none() && s.rq_nr_running() == 0
    }

    /// `sched_idle_cpu(cpu)`: it runs SCHED_IDLE tasks only ([`CpuStatus::sched_idle`]).
    pub fn sched_idle_cpu(&self, cpu: CpuId) -> bool {
        self.cpu(cpu).sched_idle
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

/// Why a CPU balances (the kernel's `enum cpu_idle_type`): it is busy (the periodic balancer
/// at a tick), idle (the periodic balancer of an idle CPU, or the NO_HZ idle balancer it was
/// kicked to run), or about to go idle in `schedule()` (new-idle balance).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdle {
    NotIdle,
    Idle,
    NewlyIdle,
}

impl CpuIdle {
    /// Idle or newly idle: the CPU has nothing to run.
    pub fn is_idle(self) -> bool {
        self != CpuIdle::NotIdle
    }
}

/// Why a CPU is being chosen for a task.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WakeKind {
    Wakeup { sync: bool },
    Fork,
}

/// Outcome of a balancing pull.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PullOutcome {
    pub moved: usize,
    /// The pulling CPU's current task should be preempted (a better task arrived).
    pub resched: bool,
}

/// What `find_busiest` found: the runqueue to pull from and how many tasks would even the
/// load (2.6.0's `imbalance`), handed to `move_tasks` by the core rather than left in a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busiest {
    pub cpu: CpuId,
    pub imbalance: usize,
}

/// The stacked RT class's part of a periodic balancing pass, which the core hands to
/// [`SchedClass::move_tasks`] (2.6.23's per-class `load_balance` iterators, where the core's
/// `move_tasks` asked each class in turn to move its own tasks): under
/// [`RtBalance::Passive`] it moves RT tasks queued on `src` to `this`, best priority first and
/// each level from its tail, every one that `may_move` (the calling balancer's test, which
/// also reports what reading the task costs) allows, one off `budget` for each, stopping when
/// it reaches 0; under
/// [`RtBalance::PushPull`] it moves nothing (2.6.25's `load_balance_rt` returns 0). Neither
/// runqueue is published here: the core publishes both once `move_tasks` returns.
///
/// Through it a class moves RT tasks without naming the RT class or its queue (`rq.rt`).
pub trait PassiveRt<C, D> {
    fn pull_queued(
        &self,
        ctx: &mut Ctx<D>,
        this: &mut Rq<C>,
        this_cpu: CpuId,
        src: &mut Rq<C>,
        budget: &mut usize,
        may_move: &mut MayMove<'_, C, D>,
    ) -> PullOutcome;
}

/// A balancer's test of whether a queued task may move (and its report of reading it), as
/// [`PassiveRt::pull_queued`] takes it: the context, the source runqueue, the task.
pub type MayMove<'a, C, D> = dyn FnMut(&mut Ctx<D>, &Rq<C>, TaskId) -> bool + 'a;

/// A runqueue as the core keeps it: what the kernel's `struct rq` holds for every class, the RT
/// class's queue, and the class's own queue `C` (reached through `Deref`, so a class writes
/// `rq.arrays` for its own fields and `rq.nr_running` for the shared ones).
#[derive(Debug)]
pub struct Rq<C> {
    /// The CPU of a per-CPU runqueue (the first CPU of the domain for a global one).
    pub cpu: CpuId,
    /// Runnable tasks of every class on this runqueue, the running one included
    /// (`rq->nr_running`); each class adds and removes its own tasks, as the kernel's
    /// `add_nr_running` is called from the classes' enqueue paths.
    pub nr_running: usize,
    /// The RT class's queue (`rq->rt`); empty for a class that owns its RT tasks.
    pub rt: RtRq,
    /// The deadline class's queue (`rq->dl`); empty for a class that owns its RT tasks.
    pub dl: crate::ds::dl_rq::DlRq,
    /// The current task of each CPU this runqueue covers (`rq->curr`), set by the core when a
    /// pick completes; a class only reads it.
    curr: Currs,
    /// The class's own queue.
    pub class: C,
}

impl<C> Rq<C> {
    /// A runqueue covering `ncpus` CPUs starting at `cpu`.
    pub fn new(cpu: CpuId, ncpus: usize, class: C) -> Rq<C> {
        Rq {
            cpu,
            nr_running: 0,
            rt: RtRq::default(),
            dl: Default::default(),
            curr: if ncpus <= 1 {
                Currs::One([None])
            } else {
                Currs::Many(vec![None; ncpus].into_boxed_slice())
            },
            class,
        }
    }

    /// The current task of a per-CPU runqueue (of its first CPU for a global one).
    #[inline]
    pub fn curr(&self) -> Option<TaskId> {
        self.currs()[0]
    }

    /// The current task of `cpu`, one of the CPUs this runqueue covers.
    #[inline]
    pub fn curr_on(&self, cpu: CpuId) -> Option<TaskId> {
        self.currs()[cpu - self.cpu]
    }

    /// The current tasks of all CPUs this runqueue covers.
    #[inline]
    pub fn currs(&self) -> &[Option<TaskId>] {
        match &self.curr {
            Currs::One(c) => c,
            Currs::Many(c) => c,
        }
    }

    /// Only the core sets `curr` (the end of `schedule()`'s pick).
    #[inline]
    pub(crate) fn set_curr(&mut self, cpu: CpuId, t: Option<TaskId>) {
        let i = cpu - self.cpu;
        match &mut self.curr {
            Currs::One(c) => c[i] = t,
            Currs::Many(c) => c[i] = t,
        }
    }
}

/// `rq->curr` of the CPUs a runqueue covers. A per-CPU runqueue keeps its one entry inline:
/// a separate 8-byte heap block per runqueue would sit next to the other CPUs' blocks, and
/// every `schedule()` writing it would bounce a cache line shared with them.
#[derive(Debug)]
enum Currs {
    One([Option<TaskId>; 1]),
    Many(Box<[Option<TaskId>]>),
}

impl<C> Deref for Rq<C> {
    type Target = C;
    #[inline]
    fn deref(&self) -> &C {
        &self.class
    }
}

impl<C> DerefMut for Rq<C> {
    #[inline]
    fn deref_mut(&mut self) -> &mut C {
        &mut self.class
    }
}

/// One scheduling class: the hooks the core calls for the tasks that belong to it. All hooks
/// run with the lock of the `Rq` they receive held.
pub trait SchedClass: Send + Sync + 'static {
    /// The class's own part of a runqueue.
    type Rq: Send;
    /// The class's private per-task state.
    type TaskData: Default + Clone + Send + std::fmt::Debug;

    /// True for a design that queues SCHED_FIFO/RR tasks itself (2.4, BFS): the core then
    /// stacks no RT class in front of it and routes every task here.
    const OWNS_RT: bool = false;

    /// Whether `sched_yield()` gives the CPU to another runnable task of the same class and
    /// priority (2.4 when others wait; O(1), which moves the yielder to the expired array).
    /// CFS of 2.6.24 only re-picks the leftmost, which may be the yielder: false.
    const YIELD_GIVES_WAY: bool = true;

    /// Whether the design this class models has `SCHED_IDLE` (2.6.23 and later fair
    /// classes). Hosts refuse an idle task, or a change to the idle policy, under a class
    /// without it rather than quietly run it as a normal task.
    const HAS_SCHED_IDLE: bool = false;

    /// Whether the design has `SCHED_ISO` (BFS's unprivileged soft real time); hosts refuse
    /// it under the others.
    const HAS_SCHED_ISO: bool = false;

    /// Whether the class wants [`SchedClass::idle_tick`] on the ticks of idle CPUs (BFS
    /// decays its ISO window and notes `last_tick` there); the core takes no lock for the
    /// others.
    const TICKS_WHEN_IDLE: bool = false;

    fn name(&self) -> &'static str;
    /// The name with the options it was built with (`bfs:sticky=off`), for results.
    fn label(&self) -> String {
        self.name().to_string()
    }
    /// The fair server the kernel of this class's era runs on each CPU (`rq->fair_server`,
    /// Linux 6.12+: a deadline entity that serves this class's pick when RT tasks would
    /// starve it; `policy::deadline::server`), if any: the core stacks it in the deadline
    /// class. `None` (the default) for every era before 6.12.
    fn fair_server(&self) -> Option<crate::ds::dl_rq::DlServerParams> {
        None
    }
    fn lock_layout(&self) -> LockLayout;
    /// Builds the class's part of the runqueue of lock domain `domain`.
    fn new_rq(&self, domain: usize, topology: &Topology) -> Self::Rq;

    /// Initialises a new task's scheduling state (`sched_fork`), whatever class it will be
    /// queued in. `parent` is the forking task, running on `cpu` whose runqueue is `rq`, or
    /// `None` for a task the host creates from nothing. Returns true if the parent should
    /// reschedule (its share of the slice ran out).
    fn task_fork(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        parent: Option<TaskId>,
        child: TaskId,
    ) -> bool;
    /// A task leaves the system (`sched_exit`); `rq` is the runqueue of its parent (O(1) gives
    /// the unused slice back to the parent), or of the child itself when there is no parent.
    fn task_exit(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        child: TaskId,
        parent: Option<TaskId>,
    );

    /// Where this class's kernel keeps the task fields the host's paths touch, for hosts that
    /// price coherence line by line ([`TaskStructLayout`]). `None` (the default): one line per
    /// task ([`Line::Task`]) that the host writes at wakeups, ticks, forks and switches.
    fn task_struct_layout(&self) -> Option<&'static TaskStructLayout> {
        None
    }

    /// Whether a nice change from outside dequeues and requeues the task and checks for
    /// preemption (`set_user_nice` in 2.6 and later). 2.4's `sys_setpriority` only stores the
    /// new nice level (`p->nice = niceval`), which `goodness()` reads at the next pick.
    fn requeues_on_nice(&self) -> bool {
        true
    }

    /// A sleeping task's nice level or policy was changed from outside (`set_user_nice`,
    /// `sched_setscheduler` on a task on no runqueue); `rq` is the runqueue of its CPU, locked.
    /// A class that keeps what it derives from them (a load weight) updates it here, as
    /// `set_load_weight` does; one that still holds the task (a delayed dequeue) settles
    /// that. Default: nothing kept.
    fn attr_changed_asleep(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _rq: &mut Rq<Self::Rq>,
        _cpu: CpuId,
        _t: TaskId,
    ) {
    }

    /// Whether this class may keep a sleeping task queued (`DELAY_DEQUEUE`, Linux 6.12+):
    /// then every wakeup first asks [`requeue_delayed`](Self::requeue_delayed), under the
    /// lock of the task's runqueue, as `try_to_wake_up` calls `ttwu_runnable` for a task still
    /// `on_rq`.
    fn delays_dequeue(&self) -> bool {
        false
    }

    /// `ttwu_runnable` for `t`, asleep as far as the host knows: if the class still holds it
    /// queued (delayed) on `cpu`'s runqueue, it makes it runnable there and returns true (no
    /// CPU selection, no migration); else false and the wakeup goes on as usual. The class
    /// counts a delayed task out of `rq.nr_running` while it sleeps and back in here.
    fn requeue_delayed(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _rq: &mut Rq<Self::Rq>,
        _cpu: CpuId,
        _t: TaskId,
    ) -> bool {
        false
    }

    /// Whether `task`, asleep, is still queued by this class: the kernel's `p->on_rq` of a
    /// sleeping task, set only while DELAY_DEQUEUE keeps it queued as delayed and cleared when
    /// it is finally dequeued (at a pick, `pick_next_entity` → `dequeue_entities` →
    /// `__block_task`, or by a class change) or requeued by a wakeup. Read without the lock by
    /// a host that can ([`Host::may_be_queued`](crate::sched_core::Host::may_be_queued)); the
    /// default, for a class that delays dequeues, is "maybe", which looks under the lock.
    fn queued_asleep(&self, _task: &Task<Self::TaskData>) -> bool {
        self.delays_dequeue()
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    );
    fn dequeue(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        t: TaskId,
        kind: DequeueKind,
    );
    /// `prev`, of this class, stops running on `cpu` (it may still be queued).
    fn put_prev(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        prev: TaskId,
    );
    /// `cpu` has nothing runnable left and is about to balance new-idle: whatever the class
    /// still keeps queued asleep on it leaves first, as the kernel's pick has it leave before
    /// it gives up. 6.12+'s `pick_next_task_fair` calls `sched_balance_newidle` only once
    /// `pick_task_fair` returned nothing, and that pick dequeues each delayed entity it picks
    /// (`pick_next_entity`: DEQUEUE_DELAYED) until `cfs_rq->nr_queued` is 0 (fair.c of
    /// 6.18.35: `pick_next_task_fair` 9033-9107, `pick_task_fair` 8996, `pick_next_entity` 5582). Default: the class keeps nothing queued asleep.
    fn drain_before_newidle(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
    ) {
        let _ = (ctx, rq, cpu);
    }
    /// Chooses the next task of this class for `cpu`, or `None`. The chosen task stays owned
    /// by the class (queued or marked running, as the design does it); the core makes it
    /// `rq.curr`.
    fn pick_next(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
    ) -> Option<TaskId>;
    /// The task this class would most likely pick next from `rq` if asked now: a hint for a
    /// host that wants its records in the cache by then (the simulator prefetches them, which
    /// matters with thousands of runnable tasks). It changes nothing and may be wrong; the
    /// default knows none.
    fn next_in_line(&self, rq: &Rq<Self::Rq>) -> Option<TaskId> {
        let _ = rq;
        None
    }
    /// Timer tick while `curr` runs on `cpu`; returns true to request a reschedule.
    fn task_tick(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool;
    /// Active balancing (`active_load_balance_cpu_stop`, the CPU stopper): `curr`, preempted
    /// on `cpu` and still runnable, is to leave this CPU before the next pick, as a task whose
    /// affinity no longer holds it does; the core dequeues it and places it again through
    /// `select_cpu`. Default: never (every class but one whose balancer asks for it).
    fn push_running(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        let _ = (ctx, rq, cpu, curr);
        false
    }
    /// A timer tick on `cpu` while it runs no task (only for classes with
    /// [`SchedClass::TICKS_WHEN_IDLE`]).
    fn idle_tick(&self, ctx: &mut Ctx<Self::TaskData>, rq: &mut Rq<Self::Rq>, cpu: CpuId) {
        let _ = (ctx, rq, cpu);
    }
    /// The host's frequency governor throttled `cpu` below its maximum (`scaling`) or let it
    /// run at the maximum again: BFS's `cpu_scaling`/`cpu_nonscaling`, which the 2.6.38
    /// governors called. A lock-free flag; the default ignores it.
    fn cpu_scaling(&self, cpu: CpuId, scaling: bool) {
        let _ = (cpu, scaling);
    }
    /// `sched_yield()` by `curr`; returns true if the CPU should reschedule.
    fn yield_task(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool;
    /// Should `woken`, just enqueued on `cpu`'s runqueue, preempt `curr` running there? Both
    /// are of this class (the core decides between classes). `sync` is set when the waker
    /// runs on `cpu` and is about to sleep.
    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<Self::TaskData>,
        rq: &mut Rq<Self::Rq>,
        cpu: CpuId,
        woken: TaskId,
        sync: bool,
    ) -> bool;
    /// `select_task_rq`: for a per-CPU layout, the runqueue a waking or new task goes to; for
    /// a global layout, the CPU to offer it to (kick or preempt). Decided from lock-free reads
    /// of the machine; `waker_cpu` is where the wakeup runs. The core checks the answer.
    fn select_cpu(
        &self,
        tasks: &TaskView<'_, Self::TaskData>,
        view: &CpuView,
        ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId;
    /// Runnable tasks on `cpu` according to `rq` (published into [`CpuStatus::nr_running`]).
    fn nr_running(&self, rq: &Rq<Self::Rq>, _cpu: CpuId) -> usize {
        rq.nr_running
    }
    /// Published into [`CpuStatus::sched_idle`]: every task queued on `cpu` is SCHED_IDLE
    /// (`sched_idle_cpu`). False unless the class models it.
    fn sched_idle_cpu(&self, _rq: &Rq<Self::Rq>, _cpu: CpuId) -> bool {
        false
    }

    /// Tasks asleep but still queued on `cpu` (DELAY_DEQUEUE), published into
    /// [`CpuStatus::nr_delayed`]; none unless the class delays dequeues.
    fn nr_delayed(&self, _rq: &Rq<Self::Rq>, _cpu: CpuId) -> usize {
        0
    }
    /// The runqueue's weighted load, published into [`CpuStatus::load`] (default: 1024 per
    /// runnable task, every task at nice 0's weight).
    fn load(&self, rq: &Rq<Self::Rq>, cpu: CpuId) -> u64 {
        self.nr_running(rq, cpu) as u64 * 1024
    }
    /// Every task of this class `rq` holds (queued or running), for the invariant audit.
    fn for_each_queued(
        &self,
        rq: &Rq<Self::Rq>,
        tasks: &TaskView<'_, Self::TaskData>,
        f: &mut dyn FnMut(TaskId),
    );

    /// What this class's pick takes, in one line (`schedkit diff` prints it as the rule that
    /// chose a task); empty where the class does not say.
    fn pick_rule(&self) -> &'static str {
        ""
    }
    /// This class's own facts about `task` as `rq` holds it (its key in the queue: priority
    /// and array, vruntime, deadline), for `schedkit diff`'s state dumps; empty by default.
    /// Read-only, and asked only by a run that records decisions.
    fn describe_task(&self, _rq: &Rq<Self::Rq>, _task: &Task<Self::TaskData>) -> String {
        String::new()
    }

    /// The SCHED_RR timeslice of `task` in ticks, for the stacked RT class (2.6.25's
    /// `DEF_TIMESLICE`, 100 ms, unless the era gave RR tasks the class's own slices).
    fn rr_timeslice_ticks(&self, _task: &Task<Self::TaskData>, hz: u32) -> i64 {
        (100 * hz as i64 / 1000).max(1)
    }

    /// How often a CPU runs the periodic balancer, in ticks (`None`: this design has none).
    fn balance_interval_ticks(&self, _idle: bool, _hz: u32) -> Option<u64> {
        None
    }
    /// With `this_rq` locked, looks for a busier runqueue to pull from (lock-free reads of the
    /// others through `view`).
    fn find_busiest(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _this_rq: &mut Rq<Self::Rq>,
        _this_cpu: CpuId,
        _view: &CpuView,
        _idle: CpuIdle,
    ) -> Option<Busiest> {
        None
    }
    /// Whether the new-idle pass that `find_busiest` just ran on `rq` is to be closed by
    /// [`SchedClass::newidle_done`] (a class that times its new-idle passes, as 6.18 does
    /// for `max_newidle_lb_cost`).
    fn newidle_pass_open(&self, _rq: &Rq<Self::Rq>) -> bool {
        false
    }
    /// The new-idle pass ends at `ctx.now`, with this runqueue locked again (as
    /// `sched_balance_newidle` relocks it), having pulled a task or not.
    fn newidle_done(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _rq: &mut Rq<Self::Rq>,
        _cpu: CpuId,
        _pulled: bool,
    ) {
    }
    /// `move_tasks`: with both runqueues locked, moves up to what `imbalance` calls for from
    /// `src` to `this`. `rt` is the stacked RT class's part of the pass (see [`PassiveRt`]):
    /// a class whose kernel's balancer met RT tasks in its own queues (2.6's O(1), where they
    /// sat at the top of the active array) calls it at that point of its walk; the others
    /// ignore it.
    #[allow(clippy::too_many_arguments)]
    fn move_tasks(
        &self,
        _ctx: &mut Ctx<Self::TaskData>,
        _this_rq: &mut Rq<Self::Rq>,
        _this_cpu: CpuId,
        _src_rq: &mut Rq<Self::Rq>,
        _src_cpu: CpuId,
        _idle: CpuIdle,
        _imbalance: usize,
        _rt: &dyn PassiveRt<Self::Rq, Self::TaskData>,
    ) -> PullOutcome {
        PullOutcome::default()
    }
}

/// How the stacked RT class balances RT tasks between CPUs, a boot-time choice
/// ([`BuildEnv::rt_balance`]). Only the RT class reads it: under [`RtBalance::Passive`] a class
/// whose balancer moved RT tasks with its own (2.6's O(1)) reaches them through the
/// [`PassiveRt`] its `move_tasks` is handed, which moves nothing under push/pull.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RtBalance {
    /// Only through the periodic load balancer, as before 2.6.25.
    #[default]
    Passive,
    /// Active push/pull (2.6.25).
    PushPull,
}

impl RtBalance {
    pub fn parse(s: &str) -> Result<RtBalance, String> {
        match s.trim() {
            "passive" => Ok(RtBalance::Passive),
            "pushpull" | "push-pull" | "push_pull" => Ok(RtBalance::PushPull),
            o => Err(format!("unknown RT balancing '{o}' (passive or pushpull)")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RtBalance::Passive => "passive",
            RtBalance::PushPull => "pushpull",
        }
    }
}

/// What a class may need to know of the machine it is built for (boot-time facts).
#[derive(Clone, Copy, Debug)]
pub struct BuildEnv {
    pub ncpus: usize,
    /// Core clock, MHz.
    pub mhz: f64,
    /// Size of the cache a CPU's working set lives in, KB.
    pub cache_kb: u64,
    /// How the stacked RT class balances.
    pub rt_balance: RtBalance,
}

impl BuildEnv {
    pub fn of_machine(m: &crate::machine::Machine, rt_balance: RtBalance) -> BuildEnv {
        BuildEnv {
            ncpus: m.ncpus(),
            mhz: m.profile.clock.mhz,
            cache_kb: m.profile.cache.size_kb,
            rt_balance,
        }
    }
}
