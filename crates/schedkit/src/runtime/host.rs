//! The runtime host's shared state, `Shared<P>`: the task table, locks, published CPU state,
//! timers, spawning and reaping, and the worker loop; and its entries into the scheduler core
//! (wakeup, tick, `schedule()`, fork, attribute changes). Every scheduling path is
//! `sched_core`'s, reached through `Shared::host`, the core's view of this state (`WorkerHost`,
//! in `core_host.rs`); task code and the worker threads reach it through `WorkerOps`
//! (`task_ops.rs`), which `Shared` implements in `task_side.rs`.
//!
//! One `std::sync::Mutex` per lock domain of the policy (one for 2.4's global runqueue, one
//! per CPU for O(1)) guards that domain's `Rq` and, by the kernel's rule, the scheduling
//! fields of the tasks on it. Hooks reach tasks through a [`TaskView`] made with
//! `TaskView::from_raw` over a fixed table that never moves. A task's other fields (its saved
//! stack pointer, its stack) are touched only by whoever owns the task: the worker running it,
//! or, between runqueues, the party that won the handshake in `handshake`.
//!
//! It imports nothing from `core_host`, `task_side` or `scripted`: they are faces of this state
//! and stand on it (the core's view is made by `Shared::host`, defined beside `WorkerHost`).
//! Must never depend on `sim`, the workload model or `metrics`.

use super::arch::{self, Stack};
use super::handshake;
use super::task_ops::{self, Reason, WorkerOps};
use super::timers::{self, Queue as _};
use super::worker::{self, Padded, Tick, WorkerSlot, WorkerTls};
use super::{RuntimeStats, TaskSpec};
use crate::class::{CpuView, Cpus, Ctx, LiveCpuStatus, LockLayout, Rq, SchedClass};
use crate::ds::work::OpCounter;
use crate::machine::Topology;
use crate::sched_core::{self as core, CoreError, Leave, Sched};
use crate::task::{CpuId, CpuMask, Task, TaskId, TaskState, TaskView};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// The most CPUs a runtime may have: the NO_HZ idle mask has one bit per CPU.
pub const MAX_CPUS: usize = 64;
const _: () = assert!(MAX_CPUS <= u64::BITS as usize);
/// Stacks kept for reuse (an mmap + mprotect costs ~6 µs; runtime-notes §4.2).
const STACK_POOL: usize = 1024;

/// The per-task state the host owns (the scheduling state is in `Task`). On its own pair of
/// cache lines: neighbouring slots belong to tasks of other workers, and `sp`, `saved_count`
/// and `state` are written at every switch of the task.
#[repr(align(128))]
pub(crate) struct TaskCtl {
    pub state: AtomicU8,
    pub(super) sp: UnsafeCell<*mut u8>,
    pub(super) stack: UnsafeCell<Option<Stack>>,
    pub(super) entry: UnsafeCell<Option<Box<dyn FnOnce() + Send>>>,
    /// `preempt_count` of the task when it switched out.
    pub(super) saved_count: UnsafeCell<u32>,
    /// Bumped each time the slot is reused, so a stale parent link is recognised.
    pub(super) gen: AtomicU32,
    pub(super) parent_gen: UnsafeCell<u32>,
    pub(super) last_cpu: UnsafeCell<usize>,
    /// Its class kept it queued when it last blocked (DELAY_DEQUEUE; the kernel's `p->on_rq`
    /// still set for a delayed task). Written by its worker under the runqueue lock before
    /// the handshake's `finish_block` hands the task to wakers, read by the waker that claims
    /// it after: a wakeup looks under the lock only when it is set.
    pub(super) queued_asleep: AtomicBool,
}

impl TaskCtl {
    fn new() -> TaskCtl {
        TaskCtl {
            state: AtomicU8::new(handshake::EXITED),
            sp: UnsafeCell::new(std::ptr::null_mut()),
            stack: UnsafeCell::new(None),
            entry: UnsafeCell::new(None),
            saved_count: UnsafeCell::new(1),
            gen: AtomicU32::new(0),
            parent_gen: UnsafeCell::new(0),
            last_cpu: UnsafeCell::new(usize::MAX),
            queued_asleep: AtomicBool::new(false),
        }
    }
}

/// Counters bumped by wakers and spawners that are not workers of this runtime (a worker, or
/// a task on it, bumps its own `WorkerSlot`'s: one shared counter bumped at every wakeup
/// bounced its cache line between the workers).
#[derive(Default)]
pub(crate) struct Counters {
    pub wakeups: AtomicU64,
    pub ipis: AtomicU64,
    pub spawned: AtomicU64,
    pub timer_wakeups: AtomicU64,
}

pub(crate) struct Config {
    pub ncpus: usize,
    pub hz: u32,
    pub max_tasks: usize,
    /// Bytes of each task stack for the task's own frames (`Builder::stack_size`).
    pub stack_size: usize,
    /// Bytes each task stack holds on top of that for one preemption
    /// (`SaveArea::stack_cost`; 0 without preemption).
    pub preempt_stack: usize,
    pub preempt: bool,
    /// How long an idle worker polls for work before it sleeps in the kernel.
    pub idle_spin_ns: u64,
}

/// A lock domain's runqueue behind its lock, alone on its cache lines.
type RqLock<P> = Padded<Mutex<Rq<<P as SchedClass>::Rq>>>;

pub(crate) struct Shared<P: SchedClass> {
    pub(super) sched: Sched<P>,
    pub(super) layout: LockLayout,
    /// One lock domain each, padded: the end of one runqueue's class data must not share a
    /// line with the next one's lock word.
    pub(super) rqs: Box<[RqLock<P>]>,
    pub(super) tasks: Box<[UnsafeCell<Task<P::TaskData>>]>,
    pub(super) ctl: Box<[TaskCtl]>,
    pub(super) high_water: AtomicUsize,
    /// Kicks a foreign waker holds back in `task_ops::defer_kicks`: the runtime is not freed while
    /// any is pending.
    pub(super) held_kicks: AtomicUsize,
    /// Threads that are no worker inside `wake_task` now.
    pub(super) foreign_wakers: AtomicUsize,
    /// Reusable slots, and the next never-used one.
    pub(super) free: Mutex<(Vec<u32>, usize)>,
    pub(crate) workers: Box<[WorkerSlot]>,
    /// What each CPU publishes for lock-free reads (`CpuView` reads it live).
    pub(super) status: Box<[LiveCpuStatus]>,
    /// The idle workers, one bit per CPU (NO_HZ's `nohz.idle_cpus_mask`): set and cleared
    /// as a worker enters and leaves [`Shared::idle`], read by the idle-balancer kick, so
    /// that a busy worker finds an idle one without reading every worker's slot. (A waker
    /// that already knows its target reads that worker's own `WorkerSlot::idle`, which the
    /// unpark protocol pairs with its polling flag.)
    pub(super) nohz_idle: Padded<AtomicU64>,
    pub(super) topology: Topology,
    pub(crate) cfg: Config,
    pub(super) tick_ns: u64,
    pub(super) clock: super::clock::Clock,
    pub(super) timers: super::timers::StdQueue,
    pub(super) live: Mutex<usize>,
    pub(super) live_cv: Condvar,
    pub(crate) shutdown: AtomicBool,
    pub(super) stacks: Mutex<Vec<Stack>>,
    pub(crate) counters: Counters,
    pub(crate) runtime_id: usize,
}

// SAFETY: every UnsafeCell is reached under the locking rule in the module docs.
unsafe impl<P: SchedClass> Sync for Shared<P> {}
// SAFETY: as above; the raw pointers inside are owned memory.
unsafe impl<P: SchedClass> Send for Shared<P> {}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A hook never panics while holding a runqueue lock in a correct policy; if one did, the
    // data is what it was, and continuing is what a kernel would do.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<P: SchedClass> Shared<P> {
    pub fn new(sched: Sched<P>, cfg: Config, runtime_id: usize) -> Shared<P> {
        let topology = Topology::flat(cfg.ncpus);
        Shared::with_topology(sched, cfg, topology, runtime_id)
    }

    /// A runtime whose CPUs have `topology` (of `cfg.ncpus` CPUs) for its policy to read; the
    /// runtime proper is flat, the core's tests give the simulator's machines.
    pub(super) fn with_topology(
        sched: Sched<P>,
        cfg: Config,
        topology: Topology,
        runtime_id: usize,
    ) -> Shared<P> {
        let n = cfg.ncpus;
        assert_eq!(topology.ncpus, n, "a topology of the runtime's CPUs");
        let layout = sched.layout();
        let rqs = (0..layout.domains(n))
            .map(|d| Padded(Mutex::new(sched.new_rq(d, &topology))))
            .collect();
        let tasks = (0..cfg.max_tasks)
            .map(|i| UnsafeCell::new(Task::new(TaskId(i as u32))))
            .collect();
        let ctl = (0..cfg.max_tasks).map(|_| TaskCtl::new()).collect();
        let status = (0..n).map(|_| LiveCpuStatus::default()).collect();
        Shared {
            sched,
            layout,
            rqs,
            tasks,
            ctl,
            high_water: AtomicUsize::new(0),
            held_kicks: AtomicUsize::new(0),
            foreign_wakers: AtomicUsize::new(0),
            free: Mutex::new((Vec::new(), 0)),
            workers: (0..n).map(|_| WorkerSlot::new()).collect(),
            status,
            nohz_idle: Padded(AtomicU64::new(0)),
            topology,
            tick_ns: 1_000_000_000 / cfg.hz as u64,
            cfg,
            clock: super::clock::Clock::new(),
            timers: Default::default(),
            live: Mutex::new(0),
            live_cv: Condvar::new(),
            shutdown: AtomicBool::new(false),
            stacks: Mutex::new(Vec::new()),
            counters: Counters::default(),
            runtime_id,
        }
    }

    pub fn now(&self) -> u64 {
        self.clock.now()
    }

    pub(super) fn ncpus(&self) -> usize {
        self.cfg.ncpus
    }

    pub(super) fn view(&self) -> TaskView<'_, P::TaskData> {
        let base = NonNull::new(self.tasks.as_ptr() as *mut Task<P::TaskData>)
            .expect("the task table is never empty");
        // SAFETY: the table is allocated once and never moves; UnsafeCell<Task> has Task's
        // layout; which tasks a hook touches is governed by the locks the caller holds.
        unsafe { TaskView::from_raw(base, self.high_water.load(Acquire)) }
    }

    /// A task's scheduling state, for the party that owns it (see module docs).
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn task(&self, t: TaskId) -> &mut Task<P::TaskData> {
        &mut *self.tasks[t.index()].get()
    }

    pub(super) fn publish(&self, rq: &Rq<P::Rq>, cpu: CpuId) {
        if self.layout == LockLayout::PerCpu {
            self.status[cpu]
                .nr_running
                .store(self.sched.nr_running(rq, cpu), Relaxed);
            self.status[cpu]
                .nr_delayed
                .store(self.sched.nr_delayed(rq, cpu), Relaxed);
            // Stored only when it changes (a class without SCHED_IDLE never does): the line
            // is read by wakers on other workers.
            let sched_idle = self.sched.sched_idle_cpu(rq, cpu);
            if self.status[cpu].sched_idle.load(Relaxed) != sched_idle {
                self.status[cpu].sched_idle.store(sched_idle, Relaxed);
            }
            self.status[cpu]
                .load
                .store(self.sched.load(rq, cpu), Relaxed);
        }
    }

    /// Runs `f` with `cpu`'s runqueue locked at time `now`.
    #[inline(always)]
    pub(super) fn with_rq_at<R>(
        &self,
        cpu: CpuId,
        now: u64,
        f: impl FnOnce(&Sched<P>, &mut Ctx<'_, P::TaskData>, &mut Rq<P::Rq>) -> R,
    ) -> R {
        let mut g = lock(&self.rqs[self.layout.domain_of(cpu)]);
        let mut ops = OpCounter::default();
        let mut ctx = Ctx::new(now, self.cfg.hz, self.ncpus(), self.view(), &mut ops);
        let r = f(&self.sched, &mut ctx, &mut g);
        self.publish(&g, cpu);
        r
    }

    /// A policy broke the class contract: nothing sensible can follow in a real process.
    fn fatal(&self, e: CoreError) -> ! {
        eprintln!(
            "schedkit runtime: {} broke the scheduler core's rules: {e}",
            self.sched.name()
        );
        std::process::abort()
    }

    /// Runs `f` with a view of this runtime's CPUs, at time `now`, that reads what each
    /// published when the policy asks.
    #[inline(always)]
    pub(super) fn with_cpu_view<R>(&self, now: u64, f: impl FnOnce(&CpuView) -> R) -> R {
        f(&CpuView {
            cpus: Cpus::Live(&self.status),
            topology: &self.topology,
            now,
            hz: self.cfg.hz,
            overloaded: None,
        })
    }

    // ----- wakeups -----

    /// A waker (task, worker or foreign thread) wakes `t`. The core's `try_to_wake_up` runs
    /// the handshake first (`WorkerHost::claim_wakee`): only a task this waker wins is queued.
    pub fn wake(&self, t: TaskId, waker_cpu: Option<CpuId>, sync: bool, irq: bool) {
        if let Err(e) = core::wake::try_to_wake_up(
            &mut self.waker_host(waker_cpu),
            t,
            waker_cpu,
            sync,
            irq,
            false,
        ) {
            self.fatal(e)
        }
    }

    /// Bumps a counter: that of worker `by` (the CPU of this runtime running the caller),
    /// else the shared one.
    #[inline]
    pub(super) fn count(
        &self,
        by: Option<CpuId>,
        own: fn(&WorkerSlot) -> &AtomicU64,
        shared: &AtomicU64,
    ) {
        match by {
            Some(c) => worker::bump(own(&self.workers[c])),
            None => {
                shared.fetch_add(1, Relaxed);
            }
        }
    }

    /// `resched_task`: mark `cpu` for rescheduling and make it notice.
    pub(super) fn resched(&self, cpu: CpuId, from: Option<CpuId>) {
        let slot = &self.workers[cpu];
        if Some(cpu) == from {
            // The CPU asking is the one running this code: it checks need_resched when it
            // leaves the runtime (no other thread is involved, so no fence).
            slot.need_resched.store(true, Relaxed);
            return;
        }
        // A foreign waker's batch holds the whole request, need_resched included, so that
        // nothing (a tick, a yield) reschedules the CPU with only part of the batch queued.
        if from.is_none()
            && task_ops::defer_kick(
                self as &dyn WorkerOps as *const dyn WorkerOps,
                &self.held_kicks,
                cpu,
            )
        {
            return;
        }
        let in_task_code = super::resched::request(slot);
        self.kick(cpu, from, in_task_code);
    }

    /// Makes `cpu`, asked to reschedule, notice: unpark it if idle, signal it if it runs task
    /// code.
    pub(super) fn kick(&self, cpu: CpuId, from: Option<CpuId>, in_task_code: bool) {
        let slot = &self.workers[cpu];
        if slot.idle.load(SeqCst) {
            worker::unpark(slot);
        } else if in_task_code && worker::kick_running(slot) {
            // Only the signal interrupts task code; runtime code there looks at the request
            // on its way out (`worker::leave_runtime`).
            self.count(from, |w| &w.ipis, &self.counters.ipis);
        }
    }

    /// NO_HZ-style kick: idle workers take no ticks, so the periodic idle balance that 2.6
    /// ran on an idle CPU's tick cannot happen there; instead the tick of a worker whose
    /// runqueue holds a waiting task wakes one idle worker to run its idle balance, as NO_HZ
    /// kernels do. A worker that takes no tick (preemption off) kicks when its runqueue gains
    /// the waiting task, there being no later moment. (Kicking at every enqueue with ticks on
    /// let an idle worker steal a just-spawned child within microseconds, where the kernels
    /// leave it to the next balancing tick: spawn+join bounced between workers.)
    #[inline(always)]
    pub(super) fn kick_idle_balancer(&self, busy: CpuId, at_tick: bool) {
        // Every `schedule()` of a busy runqueue asks: answered here without a call.
        if !at_tick && self.workers[busy].preemptible.load(Relaxed) {
            return;
        }
        self.kick_idle_balancer_now(busy)
    }

    #[inline(never)]
    fn kick_idle_balancer_now(&self, busy: CpuId) {
        // The lowest idle CPU, as the kernel's `find_new_ilb` takes the first of the mask.
        let others = self.nohz_idle.load(SeqCst) & !(1u64 << busy);
        if others != 0 {
            worker::unpark(&self.workers[others.trailing_zeros() as usize]);
        }
    }

    // ----- ticks and timers -----

    /// `n` ticks while `curr` ran on `cpu`, and the periodic balancer.
    pub(super) fn tick(&self, cpu: CpuId, curr: TaskId, n: u32, now: u64) {
        // SAFETY: this worker's own counter.
        let jiffies = unsafe { &mut *self.workers[cpu].jiffies.get() };
        *jiffies += n as u64;
        let j = *jiffies;
        // Idle workers take no ticks: a tick always finds a task here.
        if let Err(e) =
            core::tick::scheduler_tick(&mut self.host(Some(now)), cpu, Some(curr), false, n, j)
        {
            self.fatal(e)
        }
    }

    /// Wakes the sleepers whose deadline has passed (`timers::fire`). Run by worker `cpu` at
    /// each `schedule()` and at a preemption point after a tick or its timer's signal.
    #[inline(always)]
    pub(super) fn fire_timers(&self, cpu: CpuId, now: u64) {
        // The usual switch: no expiry signalled and nothing due (the test `timers::fire`
        // starts with), without a call.
        if !self.workers[cpu].timer_pending.load(Relaxed) && self.timers.hint() > now {
            return;
        }
        self.fire_due_timers(cpu, now)
    }

    #[inline(never)]
    fn fire_due_timers(&self, cpu: CpuId, now: u64) {
        let slot = &self.workers[cpu];
        let mut due = Vec::new();
        // SAFETY: the worker's own field, on its thread.
        let armed_at = unsafe { &mut *slot.hrtimer_at.get() };
        let fired = timers::fire(&self.timers, &slot.timer_pending, armed_at, now, &mut due);
        if let Some(at) = fired.rearm {
            self.arm_hrtimer(cpu, at);
        }
        if fired.expired && !due.is_empty() {
            self.counters
                .timer_wakeups
                .fetch_add(due.len() as u64, Relaxed);
        }
        for t in due {
            self.wake(TaskId(t), Some(cpu), false, true);
        }
    }

    /// Sets worker `cpu`'s high-resolution timer to expire at `at` (this runtime's clock).
    /// Call only on that worker's thread.
    pub(super) fn arm_hrtimer(&self, cpu: CpuId, at: u64) {
        // SAFETY: the worker's own field, on its thread (the worker, or a task running on it).
        if let Some(timer) = unsafe { &*self.workers[cpu].hrtimer.get() } {
            timer.arm_at(self.clock.to_monotonic(at));
        }
    }

    // ----- spawn and exit -----

    pub fn spawn(
        &self,
        spec: &TaskSpec,
        entry: Box<dyn FnOnce() + Send>,
    ) -> Result<TaskId, String> {
        spec.validate(self.ncpus())?;
        self.sched
            .check_policy(spec.policy)
            .map_err(|e| format!("{}: {e}", spec.name.as_deref().unwrap_or("task")))?;
        // Slots are handed out under `free`, which also serialises the high-water mark.
        let mut free = lock(&self.free);
        let (idx, fresh) = match free.0.pop() {
            Some(i) => (i as usize, false),
            None => {
                let i = free.1;
                if i >= self.cfg.max_tasks {
                    return Err(format!(
                        "the task table is full ({} live tasks; raise Builder::max_tasks)",
                        self.cfg.max_tasks
                    ));
                }
                free.1 += 1;
                (i, true)
            }
        };
        drop(free);
        let t = TaskId(idx as u32);
        let stack_len = self.cfg.stack_size + self.cfg.preempt_stack;
        let stack = match lock(&self.stacks).pop() {
            Some(s) if s.usable() >= stack_len => s,
            _ => match Stack::new(stack_len) {
                Ok(s) => s,
                Err(e) => {
                    lock(&self.free).0.push(idx as u32);
                    return Err(format!("cannot map a task stack: {e}"));
                }
            },
        };
        let parent = worker::current()
            .filter(|w| w.runtime_id == self.runtime_id)
            .and_then(|w| {
                let r = self.workers[w.cpu].running.load(Relaxed);
                (r != u32::MAX).then_some((TaskId(r), w.cpu))
            });
        let ctl = &self.ctl[idx];
        // SAFETY: the slot is free: no runqueue, timer or waiter refers to it.
        unsafe {
            *ctl.sp.get() = stack.init(task_entry, std::ptr::null_mut());
            *ctl.stack.get() = Some(stack);
            *ctl.entry.get() = Some(entry);
            *ctl.saved_count.get() = 1;
            *ctl.last_cpu.get() = usize::MAX;
            ctl.queued_asleep.store(false, Relaxed);
            *ctl.parent_gen.get() =
                parent.map_or(0, |(p, _)| self.ctl[p.index()].gen.load(Relaxed));
            ctl.gen.fetch_add(1, Relaxed);
            ctl.state.store(handshake::RUNNABLE, Release);
            let task = self.task(t);
            *task = Task::new(t);
            task.policy = spec.policy;
            task.nice = spec.nice;
            task.rt_priority = spec.rt_priority;
            task.slice_ns = spec.slice_ns.and_then(std::num::NonZeroU64::new);
            task.cpus_allowed = spec
                .affinity
                .unwrap_or(CpuMask::all())
                .and(&CpuMask::first_n(self.ncpus()));
            task.parent = parent.map(|(p, _)| p);
            task.mm = 1; // one address space: all tasks are threads of this process
            task.timestamp_ns = self.now();
        }
        if fresh {
            // Visible to hooks only once the task is initialised; a concurrent spawner that
            // took a fresh slot above ours publishes a mark that covers ours too.
            self.high_water.fetch_max(idx + 1, AcqRel);
        }
        *lock(&self.live) += 1;
        self.count(
            parent.map(|(_, c)| c),
            |w| &w.spawned,
            &self.counters.spawned,
        );
        let cpu = parent.map_or(0, |(_, c)| c);
        // SAFETY: still ours.
        unsafe { self.task(t).cpu = cpu };
        let r = core::attr::fork(
            &mut self.host(None),
            cpu,
            parent.map(|(p, _)| p),
            t,
            parent.map(|(_, c)| c),
        );
        if let Err(e) = r {
            self.fatal(e)
        }
        Ok(t)
    }

    /// The parent of the exited `x`, if it is still the task that spawned it.
    pub(super) fn live_parent(&self, x: TaskId) -> Option<TaskId> {
        let ctl = &self.ctl[x.index()];
        // SAFETY: x is dead and switched out; only this worker reaches it now.
        let (parent, pgen) = unsafe { (self.task(x).parent, *ctl.parent_gen.get()) };
        parent.filter(|p| {
            self.ctl[p.index()].gen.load(Relaxed) == pgen
                && self.ctl[p.index()].state.load(Acquire) != handshake::EXITED
        })
    }

    /// The exited `x` has switched out for good and its class was told: recycle its slot.
    pub(super) fn release(&self, x: TaskId) {
        let ctl = &self.ctl[x.index()];
        // SAFETY: x is dead and switched out; only this worker reaches it now.
        unsafe {
            self.task(x).state = TaskState::Dead;
            if let Some(s) = (*ctl.stack.get()).take() {
                let mut pool = lock(&self.stacks);
                if pool.len() < STACK_POOL {
                    pool.push(s);
                }
            }
        }
        ctl.state.store(handshake::EXITED, Release);
        lock(&self.free).0.push(x.0);
        let mut live = lock(&self.live);
        *live -= 1;
        if *live == 0 {
            self.live_cv.notify_all();
        }
    }

    /// Blocks the calling (non-worker) thread until no task is alive or `deadline` passes;
    /// returns the tasks still alive.
    pub fn wait_idle(&self, deadline: Option<Instant>) -> usize {
        let mut live = lock(&self.live);
        while *live > 0 {
            match deadline {
                None => live = self.live_cv.wait(live).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break;
                    }
                    live = self
                        .live_cv
                        .wait_timeout(live, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        *live
    }

    // ----- schedule() -----

    /// `schedule()` on `cpu` after `prev` switched out for `reason` (None: the CPU was idle).
    /// Returns the next task and the time the decision was taken.
    fn schedule(&self, cpu: CpuId, prev: Option<(TaskId, Reason)>) -> (Option<TaskId>, u64) {
        let slot = &self.workers[cpu];
        // Cleared only when set: an unconditional store would dirty the line wakers read.
        if slot.need_resched.load(Relaxed) {
            slot.need_resched.store(false, Relaxed);
        }
        let now = self.now();
        slot.clock_ns.store(now, Relaxed);
        // Only this thread's tick handler adds to the count: look before taking it, so that
        // the usual switch, with no tick pending, pays no locked exchange.
        let ticks = if slot.ticks_pending.load(Relaxed) > 0 {
            slot.ticks_pending.swap(0, Relaxed)
        } else {
            0
        };
        if let (Some((p, _)), true) = (prev, ticks > 0) {
            self.tick(cpu, p, ticks, now);
        }
        self.fire_timers(cpu, now);
        let leave = match prev.map(|(_, r)| r) {
            None | Some(Reason::Preempt) => Leave::Runnable,
            Some(Reason::Yield) => Leave::Yield,
            Some(Reason::Block) => Leave::MaybeSleep,
            Some(Reason::Exit) => Leave::Exit,
        };
        let prev = prev.map(|(p, _)| p);
        match core::schedule::schedule(&mut self.host(Some(now)), cpu, prev, leave) {
            Ok(sw) => (sw.next, now),
            Err(e) => self.fatal(e),
        }
    }

    /// Is there something this idle CPU could run? (Under the lock, like the kernel's idle
    /// loop re-checking `need_resched` with interrupts off.)
    fn has_work(&self, cpu: CpuId) -> bool {
        let d = self.layout.domain_of(cpu);
        let g = lock(&self.rqs[d]);
        let n = self.sched.nr_running(&g, cpu);
        let busy = match self.layout {
            LockLayout::PerCpu => usize::from(self.status[cpu].curr.load(Relaxed) != u32::MAX),
            LockLayout::Global => self
                .status
                .iter()
                .filter(|s| s.curr.load(Relaxed) != u32::MAX)
                .count(),
        };
        n > busy
    }

    /// Runs `t` on this worker until it switches back; returns why it did.
    fn run(&self, cpu: CpuId, t: TaskId, now: u64) -> Reason {
        let slot = &self.workers[cpu];
        let ctl = &self.ctl[t.index()];
        // SAFETY: t was just picked for this CPU: it is ours to run. Its saved sp and count
        // were written when it last switched out (or by spawn).
        unsafe {
            *slot.switched_in_ns.get() = now;
            slot.preempt_count.store(*ctl.saved_count.get(), Relaxed);
            slot.running.store(t.0, Release);
            arch::resume(slot.sched_sp.get(), *ctl.sp.get());
            slot.running.store(u32::MAX, Release);
            slot.preempt_count.store(1, Relaxed);
            *slot.reason.get()
        }
    }

    fn idle(&self, cpu: CpuId, tick: Option<&Tick>) {
        let slot = &self.workers[cpu];
        slot.park_word.store(0, SeqCst);
        slot.idle.store(true, SeqCst);
        self.nohz_idle.fetch_or(1u64 << cpu, SeqCst);
        if !self.has_work(cpu) && !slot.need_resched.load(SeqCst) && !self.shutdown.load(SeqCst) {
            let next = self.timers.hint();
            let mut timeout = (next != u64::MAX).then(|| next.saturating_sub(self.now()));
            // While some runqueue is overloaded, keep the idle balancer's own rhythm (2.6's
            // idle CPUs balanced every tick); with nothing to steal, sleep without a timeout.
            if self.layout == LockLayout::PerCpu
                && self.status.iter().any(|s| s.nr_running.load(Relaxed) >= 2)
            {
                let every = self
                    .sched
                    .class
                    .balance_interval_ticks(true, self.cfg.hz)
                    .unwrap_or(1)
                    .max(1);
                let t = every * self.tick_ns;
                timeout = Some(timeout.map_or(t, |x| x.min(t)));
            }
            if timeout != Some(0) {
                // Poll first, as a guest kernel's cpuidle-haltpoll does before it halts: a
                // wakeup within the window costs a store, not a futex wake and a thread
                // wakeup (tens of µs in a VM). Only then stop the tick and sleep.
                let spin = self.cfg.idle_spin_ns.min(timeout.unwrap_or(u64::MAX));
                if !worker::spin_for_unpark(slot, spin) {
                    if let Some(t) = tick {
                        t.disarm();
                    }
                    worker::park(slot, timeout.map(|t| t.saturating_sub(spin).max(1)));
                }
            }
        }
        self.nohz_idle.fetch_and(!(1u64 << cpu), SeqCst);
        slot.idle.store(false, SeqCst);
    }

    /// The body of worker thread `cpu`.
    pub fn worker_main(&self, cpu: CpuId, core: Option<usize>, host: *const dyn WorkerOps) {
        if let Some(c) = core {
            worker::pin_to(c);
        }
        let slot = &self.workers[cpu];
        // SAFETY: gettid has no preconditions.
        slot.tid.store(unsafe { libc::gettid() }, Release);
        let altstack = worker::setup_sigaltstack();
        let preemptible = self.cfg.preempt && altstack.is_some();
        slot.preemptible.store(preemptible, Release);
        let tick = if preemptible {
            Tick::new(self.tick_ns)
        } else {
            None
        };
        if preemptible {
            // SAFETY: the worker's own field, before any task runs here.
            unsafe { *slot.hrtimer.get() = worker::HrTimer::new() };
        }
        let tls = WorkerTls {
            host,
            cpu,
            slot,
            runtime_id: self.runtime_id,
        };
        worker::enter(&tls);
        let mut prev = None;
        loop {
            match self.schedule(cpu, prev.take()) {
                (Some(t), now) => {
                    if let Some(tk) = &tick {
                        tk.arm();
                    }
                    let reason = self.run(cpu, t, now);
                    if reason == Reason::Preempt {
                        worker::bump(&slot.preemptions);
                    }
                    prev = Some((t, reason));
                }
                (None, _) => {
                    if self.shutdown.load(SeqCst) {
                        break;
                    }
                    self.idle(cpu, tick.as_ref());
                }
            }
        }
        drop(tick);
        // SAFETY: the worker's own field; no task runs here any more.
        unsafe { *slot.hrtimer.get() = None };
        slot.preemptible.store(false, Release);
        slot.tid.store(0, Release);
        worker::leave();
        if altstack.is_some() {
            worker::teardown_sigaltstack();
        }
    }

    pub fn stats(&self) -> RuntimeStats {
        let sum = |f: fn(&WorkerSlot) -> &AtomicU64| -> u64 {
            self.workers.iter().map(|w| f(w).load(Relaxed)).sum()
        };
        RuntimeStats {
            context_switches: sum(|w| &w.switches),
            migrations: sum(|w| &w.migrations),
            preemptions: sum(|w| &w.preemptions),
            wakeups: sum(|w| &w.wakeups) + self.counters.wakeups.load(Relaxed),
            resched_signals: sum(|w| &w.ipis) + self.counters.ipis.load(Relaxed),
            spawned: sum(|w| &w.spawned) + self.counters.spawned.load(Relaxed),
            timer_wakeups: self.counters.timer_wakeups.load(Relaxed),
        }
    }

    /// Task side: the running task of `cpu`.
    pub(super) fn running(&self, cpu: CpuId) -> Option<TaskId> {
        let r = self.workers[cpu].running.load(Relaxed);
        (r != u32::MAX).then_some(TaskId(r))
    }

    pub fn change_attr(
        &self,
        cpu: CpuId,
        f: &mut AttrChange<'_, P::TaskData>,
    ) -> Result<(), String> {
        let t = self.running(cpu).ok_or("not called from a task")?;
        core::attr::change_attr(&mut self.host(None), cpu, t, |task| f(task))
            .map_err(|e| e.what().to_string())?
    }
}

/// A change to a task's attributes, applied between `dequeue(Save)` and `enqueue(Restore)`.
type AttrChange<'a, D> = dyn FnMut(&mut Task<D>) -> Result<(), String> + 'a;

/// First code of every task, on its own stack.
extern "C" fn task_entry(_arg: *mut u8) -> ! {
    let w = worker::current().expect("a task starts on a worker");
    // SAFETY: the host outlives its tasks.
    let host = unsafe { super::ops_of(w) };
    let f = host.take_entry(w.cpu);
    // Into task code (a reschedule asked for meanwhile runs first).
    worker::leave_runtime();
    f();
    // Into runtime code on the worker it runs on now (read and entered in one step: at
    // count 0 the task may move between a read and a separate store).
    let w = worker::enter_runtime_here().expect("a task ends on a worker");
    // SAFETY: as above.
    unsafe { (*w.slot).preempt_count.store(1, Relaxed) };
    // SAFETY: as above.
    let host = unsafe { super::ops_of(w) };
    worker::fatal_on_panic("task exit", || host.switch_out(w.cpu, Reason::Exit));
    // A dead task is never switched back in.
    std::process::abort();
}
