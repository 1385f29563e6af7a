//! The runtime host: the same scheduler core and class stack the simulator drives, driven by
//! real worker threads with real locks. This file is the host's side only (the task table,
//! locks, published CPU state, timers, spawning and reaping, the worker loop); every
//! scheduling path (wakeup, `schedule()`, tick, balancing, push/pull, fork, exit, attribute
//! changes) is `sched_core`'s, reached through [`WorkerHost`].
//!
//! One `std::sync::Mutex` per lock domain of the policy (one for 2.4's global runqueue, one
//! per CPU for O(1)) guards that domain's `Rq` and, by the kernel's rule, the scheduling
//! fields of the tasks on it. Hooks reach tasks through a [`TaskView`] made with
//! `TaskView::from_raw` over a fixed table that never moves. A task's other fields (its saved
//! stack pointer, its stack) are touched only by whoever owns the task: the worker running it,
//! or, between runqueues, the party that won the handshake in `handshake`.

use super::arch::{self, Stack};
use super::handshake::{self, Wake};
use super::timers::{self, Queue as _};
use super::worker::{self, Host, Padded, Reason, Tick, WorkerSlot, WorkerTls};
use super::{RuntimeStats, TaskSpec};
use crate::class::{CpuView, Cpus, Ctx, EnqueueKind, LiveCpuStatus, LockLayout, Rq, SchedClass};
use crate::ds::work::{OpCounter, Work};
use crate::machine::Topology;
use crate::sched_core::{
    self as core, ClassRq, CoreError, Host as CoreHost, Leave, Sched, TaskData,
};
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
    sp: UnsafeCell<*mut u8>,
    stack: UnsafeCell<Option<Stack>>,
    entry: UnsafeCell<Option<Box<dyn FnOnce() + Send>>>,
    /// `preempt_count` of the task when it switched out.
    saved_count: UnsafeCell<u32>,
    /// Bumped each time the slot is reused, so a stale parent link is recognised.
    gen: AtomicU32,
    parent_gen: UnsafeCell<u32>,
    last_cpu: UnsafeCell<usize>,
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
    pub stack_size: usize,
    pub preempt: bool,
    /// How long an idle worker polls for work before it sleeps in the kernel.
    pub idle_spin_ns: u64,
}

/// A lock domain's runqueue behind its lock, alone on its cache lines.
type RqLock<P> = Padded<Mutex<Rq<<P as SchedClass>::Rq>>>;

pub(crate) struct Shared<P: SchedClass> {
    sched: Sched<P>,
    layout: LockLayout,
    /// One lock domain each, padded: the end of one runqueue's class data must not share a
    /// line with the next one's lock word.
    rqs: Box<[RqLock<P>]>,
    tasks: Box<[UnsafeCell<Task<P::TaskData>>]>,
    ctl: Box<[TaskCtl]>,
    high_water: AtomicUsize,
    /// Kicks a foreign waker holds back in [`defer_kicks`]: the runtime is not freed while
    /// any is pending.
    held_kicks: AtomicUsize,
    /// Threads that are no worker inside `wake_task` now.
    foreign_wakers: AtomicUsize,
    /// Reusable slots, and the next never-used one.
    free: Mutex<(Vec<u32>, usize)>,
    pub(crate) workers: Box<[WorkerSlot]>,
    /// What each CPU publishes for lock-free reads (`CpuView` reads it live).
    status: Box<[LiveCpuStatus]>,
    /// The idle workers, one bit per CPU (NO_HZ's `nohz.idle_cpus_mask`): set and cleared
    /// as a worker enters and leaves [`Shared::idle`], read by the idle-balancer kick, so
    /// that a busy worker finds an idle one without reading every worker's slot. (A waker
    /// that already knows its target reads that worker's own `WorkerSlot::idle`, which the
    /// unpark protocol pairs with its polling flag.)
    nohz_idle: Padded<AtomicU64>,
    topology: Topology,
    pub(crate) cfg: Config,
    tick_ns: u64,
    clock: super::clock::Clock,
    timers: super::timers::StdQueue,
    live: Mutex<usize>,
    live_cv: Condvar,
    pub(crate) shutdown: AtomicBool,
    stacks: Mutex<Vec<Stack>>,
    pub(crate) counters: Counters,
    pub(crate) runtime_id: usize,
}

// SAFETY: every UnsafeCell is reached under the locking rule in the module docs.
unsafe impl<P: SchedClass> Sync for Shared<P> {}
// SAFETY: as above; the raw pointers inside are owned memory.
unsafe impl<P: SchedClass> Send for Shared<P> {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A hook never panics while holding a runqueue lock in a correct policy; if one did, the
    // data is what it was, and continuing is what a kernel would do.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<P: SchedClass> Shared<P> {
    pub fn new(sched: Sched<P>, cfg: Config, runtime_id: usize) -> Shared<P> {
        let n = cfg.ncpus;
        let topology = Topology::flat(n);
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

    fn ncpus(&self) -> usize {
        self.cfg.ncpus
    }

    fn view(&self) -> TaskView<'_, P::TaskData> {
        let base = NonNull::new(self.tasks.as_ptr() as *mut Task<P::TaskData>)
            .expect("the task table is never empty");
        // SAFETY: the table is allocated once and never moves; UnsafeCell<Task> has Task's
        // layout; which tasks a hook touches is governed by the locks the caller holds.
        unsafe { TaskView::from_raw(base, self.high_water.load(Acquire)) }
    }

    /// A task's scheduling state, for the party that owns it (see module docs).
    #[allow(clippy::mut_from_ref)]
    unsafe fn task(&self, t: TaskId) -> &mut Task<P::TaskData> {
        &mut *self.tasks[t.index()].get()
    }

    fn publish(&self, rq: &Rq<P::Rq>, cpu: CpuId) {
        if self.layout == LockLayout::PerCpu {
            self.status[cpu]
                .nr_running
                .store(self.sched.nr_running(rq, cpu), Relaxed);
            self.status[cpu]
                .load
                .store(self.sched.load(rq, cpu), Relaxed);
        }
    }

    /// Runs `f` with `cpu`'s runqueue locked at time `now`.
    #[inline(always)]
    fn with_rq_at<R>(
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

    /// The core's view of this host, for a path run by `cpu`'s worker or any other thread;
    /// `now`: the time already read for the whole path (one clock read per `schedule()`).
    fn host(&self, now: Option<u64>) -> WorkerHost<'_, P> {
        WorkerHost { sh: self, now }
    }

    /// A policy broke the class contract: nothing sensible can follow in a real process.
    fn fatal(&self, e: CoreError) -> ! {
        eprintln!(
            "schedkit runtime: {} broke the scheduler core's rules: {e}",
            self.sched.name()
        );
        std::process::abort()
    }

    /// Runs `f` with a view of this runtime's CPUs that reads what each published when the
    /// policy asks.
    #[inline(always)]
    fn with_cpu_view<R>(&self, f: impl FnOnce(&CpuView) -> R) -> R {
        f(&CpuView {
            cpus: Cpus::Live(&self.status),
            topology: &self.topology,
            now: self.now(),
            hz: self.cfg.hz,
        })
    }

    // ----- wakeups -----

    /// A waker (task, worker or foreign thread) wakes `t`.
    pub fn wake(&self, t: TaskId, waker_cpu: Option<CpuId>, sync: bool, irq: bool) {
        if handshake::wake(&self.ctl[t.index()].state) != Wake::Enqueue {
            return;
        }
        self.count(waker_cpu, |w| &w.wakeups, &self.counters.wakeups);
        // We won the handshake: the task is ours until the core enqueues it.
        if let Err(e) =
            core::wake::try_to_wake_up(&mut self.host(None), t, waker_cpu, sync, irq, false)
        {
            self.fatal(e)
        }
    }

    /// Bumps a counter: that of worker `by` (the CPU of this runtime running the caller),
    /// else the shared one.
    #[inline]
    fn count(&self, by: Option<CpuId>, own: fn(&WorkerSlot) -> &AtomicU64, shared: &AtomicU64) {
        match by {
            Some(c) => worker::bump(own(&self.workers[c])),
            None => {
                shared.fetch_add(1, Relaxed);
            }
        }
    }

    /// `resched_task`: mark `cpu` for rescheduling and make it notice.
    fn resched(&self, cpu: CpuId, from: Option<CpuId>) {
        let slot = &self.workers[cpu];
        if Some(cpu) == from {
            // The CPU asking is the one running this code: it checks need_resched when it
            // leaves the runtime (no other thread is involved, so no fence).
            slot.need_resched.store(true, Relaxed);
            return;
        }
        // A foreign waker's batch holds the whole request, need_resched included, so that
        // nothing (a tick, a yield) reschedules the CPU with only part of the batch queued.
        if from.is_none() && defer_kick(self, cpu) {
            return;
        }
        let in_task_code = super::resched::request(slot);
        self.kick(cpu, from, in_task_code);
    }

    /// Makes `cpu`, asked to reschedule, notice: unpark it if idle, signal it if it runs task
    /// code.
    fn kick(&self, cpu: CpuId, from: Option<CpuId>, in_task_code: bool) {
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
    fn kick_idle_balancer(&self, busy: CpuId, at_tick: bool) {
        if !at_tick && self.workers[busy].preemptible.load(Relaxed) {
            return;
        }
        // The lowest idle CPU, as the kernel's `find_new_ilb` takes the first of the mask.
        let others = self.nohz_idle.load(SeqCst) & !(1u64 << busy);
        if others != 0 {
            worker::unpark(&self.workers[others.trailing_zeros() as usize]);
        }
    }

    // ----- ticks and timers -----

    /// `n` ticks while `curr` ran on `cpu`, and the periodic balancer.
    fn tick(&self, cpu: CpuId, curr: TaskId, n: u32, now: u64) {
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
    fn fire_timers(&self, cpu: CpuId, now: u64) {
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
    fn arm_hrtimer(&self, cpu: CpuId, at: u64) {
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
        let stack = match lock(&self.stacks).pop() {
            Some(s) if s.usable() >= self.cfg.stack_size => s,
            _ => match Stack::new(self.cfg.stack_size) {
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
    fn live_parent(&self, x: TaskId) -> Option<TaskId> {
        let ctl = &self.ctl[x.index()];
        // SAFETY: x is dead and switched out; only this worker reaches it now.
        let (parent, pgen) = unsafe { (self.task(x).parent, *ctl.parent_gen.get()) };
        parent.filter(|p| {
            self.ctl[p.index()].gen.load(Relaxed) == pgen
                && self.ctl[p.index()].state.load(Acquire) != handshake::EXITED
        })
    }

    /// The exited `x` has switched out for good and its class was told: recycle its slot.
    fn release(&self, x: TaskId) {
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
            arch::switch(slot.sched_sp.get(), *ctl.sp.get());
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
    pub fn worker_main(&self, cpu: CpuId, core: Option<usize>, host: *const dyn TaskOps) {
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
    fn running(&self, cpu: CpuId) -> Option<TaskId> {
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
    }
}

impl<P: SchedClass> Host for Shared<P> {
    fn preempt_point(&self, cpu: usize) {
        let slot = &self.workers[cpu];
        let n = if slot.ticks_pending.load(Relaxed) > 0 {
            slot.ticks_pending.swap(0, Relaxed)
        } else {
            0
        };
        if n > 0 || slot.timer_pending.load(Relaxed) {
            let now = self.now();
            if let (Some(t), true) = (self.running(cpu), n > 0) {
                self.tick(cpu, t, n, now);
            }
            self.fire_timers(cpu, now);
        }
        if slot.need_resched.load(Relaxed) {
            self.switch_out(cpu, Reason::Preempt);
        }
    }

    fn switch_out(&self, cpu: usize, reason: Reason) {
        let slot = &self.workers[cpu];
        let t = self.running(cpu).expect("switch_out outside a task");
        let ctl = &self.ctl[t.index()];
        // SAFETY: we are the running task of this worker; the worker's context is suspended
        // in `run` and resumes there.
        unsafe {
            *slot.reason.get() = reason;
            *ctl.saved_count.get() = slot.preempt_count.load(Relaxed);
            arch::switch(ctl.sp.get(), *slot.sched_sp.get());
        }
    }

    fn current_task(&self, cpu: usize) -> Option<TaskId> {
        self.running(cpu)
    }
}

/// A change to a task's attributes, applied between `dequeue(Save)` and `enqueue(Restore)`.
type AttrChange<'a, D> = dyn FnMut(&mut Task<D>) -> Result<(), String> + 'a;

/// Task-side operations the public API needs, type-erased over the policy.
pub(crate) trait TaskOps: Host {
    fn take_entry(&self, cpu: usize) -> Box<dyn FnOnce() + Send>;
    fn prepare_block(&self, t: TaskId);
    /// The task found its condition true after `prepare_block`: it stays runnable.
    fn cancel_block(&self, t: TaskId);
    /// Wakes `t` from whatever thread calls: a task or worker of this runtime wakes from its
    /// CPU, anything else (an OS thread, a task of another runtime) as a foreign waker.
    fn wake_task(&self, t: TaskId, sync: bool);
    fn sleep_until(&self, cpu: usize, deadline_ns: u64);
    fn now_ns(&self) -> u64;
    fn spawn_erased(
        &self,
        spec: &TaskSpec,
        entry: Box<dyn FnOnce() + Send>,
    ) -> Result<TaskId, String>;
    fn set_nice(&self, cpu: usize, nice: i32) -> Result<(), String>;
    fn set_sched(
        &self,
        cpu: usize,
        policy: crate::task::SchedPolicy,
        rt_priority: u8,
    ) -> Result<(), String>;
    fn set_affinity(&self, cpu: usize, mask: CpuMask) -> Result<(), String>;
    /// Nice, policy, RT priority and CPU time of the task running on `cpu`.
    fn task_info(&self, cpu: usize) -> Option<(i32, crate::task::SchedPolicy, u8, u64)>;
    fn yield_now(&self, cpu: usize);
    fn wait_idle_for(&self, deadline: Option<Instant>) -> usize;
    fn begin_shutdown(&self);
    /// Delivers a kick [`defer_kicks`] held back, and lets the runtime go (it waits for
    /// held kicks before it frees itself).
    fn deferred_kick(&self, cpu: usize);
    /// Drops a held kick of a CPU already asked.
    fn deferred_kick_dup(&self);
    /// Waits until no thread that is no worker is inside a wakeup of this runtime or holds a
    /// kick of it: the last step before the runtime is freed.
    fn wait_foreign_wakers(&self);
    fn runtime_stats(&self) -> RuntimeStats;
    fn run_worker(&self, cpu: usize, core: Option<usize>, me: *const dyn TaskOps);
}

/// A kick held back: the runtime, and its CPU to kick.
type HeldKick = (*const dyn TaskOps, CpuId);

thread_local! {
    /// Kicks held back while this thread (no worker) wakes a batch.
    static DEFERRED: std::cell::RefCell<Option<Vec<HeldKick>>> =
        const { std::cell::RefCell::new(None) };
}

/// Holds back the kick of `cpu` if this thread is inside [`defer_kicks`].
fn defer_kick<P: SchedClass>(sh: &Shared<P>, cpu: CpuId) -> bool {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(v) => {
            sh.held_kicks.fetch_add(1, AcqRel);
            v.push((sh as &dyn TaskOps as *const dyn TaskOps, cpu));
            true
        }
        None => false,
    })
}

/// Runs `f`, a batch of wakeups from a thread that is no worker (the I/O driver), holding
/// back the kicks of the CPUs it asks to reschedule until `f` returns: as an interrupt
/// handler wakes every task it has to before its CPU reschedules at the interrupt's exit, so
/// that the policy chooses among all the tasks the batch made ready, not the first one woken.
/// The request waits whole (`need_resched` and the unpark or signal): a CPU that reschedules
/// on its own meanwhile (a tick, a yield) still sees part of the batch.
pub(crate) fn defer_kicks<R>(f: impl FnOnce() -> R) -> R {
    /// Delivers the held kicks when `f` returns, or unwinds: a runtime waits for them.
    struct Flush(Option<Option<Vec<HeldKick>>>);
    impl Drop for Flush {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                flush(outer);
            }
        }
    }
    let outer = DEFERRED.with(|d| d.borrow_mut().replace(Vec::new()));
    let guard = Flush(Some(outer));
    let r = f();
    drop(guard);
    r
}

fn flush(outer: Option<Vec<HeldKick>>) {
    let mut held = DEFERRED
        .with(|d| std::mem::replace(&mut *d.borrow_mut(), outer))
        .unwrap_or_default();
    held.sort_by_key(|&(h, c)| (h as *const () as usize, c));
    let mut last = None;
    for (h, c) in held {
        let key = (h as *const () as usize, c);
        // SAFETY: the runtime counted this kick in `held_kicks` and is not freed before the
        // count drops to zero (`Runtime::drop` waits), which `deferred_kick` does last.
        unsafe {
            if last == Some(key) {
                // A second kick of the same CPU: only the count.
                (*h).deferred_kick_dup();
            } else {
                (*h).deferred_kick(c);
            }
        }
        last = Some(key);
    }
}

impl<P: SchedClass> TaskOps for Shared<P> {
    fn take_entry(&self, cpu: usize) -> Box<dyn FnOnce() + Send> {
        let t = self.running(cpu).expect("a new task runs on a worker");
        // SAFETY: the running task's own entry, taken once.
        unsafe { (*self.ctl[t.index()].entry.get()).take() }.expect("a task starts once")
    }

    fn prepare_block(&self, t: TaskId) {
        handshake::prepare_block(&self.ctl[t.index()].state);
    }
    fn cancel_block(&self, t: TaskId) {
        handshake::cancel_block(&self.ctl[t.index()].state);
    }

    fn wake_task(&self, t: TaskId, sync: bool) {
        // Task-side code (a `Waker`, a primitive's unlock) may call this with preemption
        // enabled; the wakeup takes runqueue locks, which a preemption signal on this worker
        // must not interrupt (its tick would take the same lock again and never return).
        let _np = super::NoPreempt::new();
        let waker_cpu = worker::current()
            .filter(|w| w.runtime_id == self.runtime_id)
            .map(|w| w.cpu);
        if waker_cpu.is_none() {
            // A foreign waker (the I/O driver, a helper, another runtime's task) uses this
            // runtime until `wake` returns, after the woken task may have run and ended: the
            // runtime is not freed while it is inside (`wait_foreign_wakers`).
            self.foreign_wakers.fetch_add(1, AcqRel);
            self.wake(t, None, sync, false);
            self.foreign_wakers.fetch_sub(1, Release);
        } else {
            self.wake(t, waker_cpu, sync, false);
        }
    }

    fn sleep_until(&self, cpu: usize, deadline_ns: u64) {
        if deadline_ns <= self.now() {
            return;
        }
        let t = self.running(cpu).expect("sleep from a task");
        self.prepare_block(t);
        let slot = &self.workers[cpu];
        // This worker's high-resolution timer wakes the sleeper at its deadline even if every
        // worker is busy. Without one (no signals), an idle worker sleeping past this deadline
        // must re-arm its timeout.
        // SAFETY: our own worker's fields, on its thread.
        let has_timer = unsafe { (*slot.hrtimer.get()).is_some() };
        let armed_at = unsafe { &mut *slot.hrtimer_at.get() };
        if let Some(at) = timers::sleep(&self.timers, armed_at, deadline_ns, t.0) {
            self.arm_hrtimer(cpu, at);
        }
        if !has_timer {
            let idle = self.nohz_idle.load(SeqCst);
            if idle != 0 {
                worker::unpark(&self.workers[idle.trailing_zeros() as usize]);
            }
        }
        self.switch_out(cpu, Reason::Block);
    }

    fn now_ns(&self) -> u64 {
        self.now()
    }

    fn spawn_erased(
        &self,
        spec: &TaskSpec,
        entry: Box<dyn FnOnce() + Send>,
    ) -> Result<TaskId, String> {
        // Also reached from a task through `Runtime::spawn`: no preemption inside (as above).
        let _np = super::NoPreempt::new();
        self.spawn(spec, entry)
    }

    fn set_nice(&self, cpu: usize, nice: i32) -> Result<(), String> {
        super::check_nice(nice)?;
        self.change_attr(cpu, &mut |t| {
            t.nice = nice;
            Ok(())
        })
    }

    fn set_sched(
        &self,
        cpu: usize,
        policy: crate::task::SchedPolicy,
        rt_priority: u8,
    ) -> Result<(), String> {
        super::check_rt(policy, rt_priority)?;
        self.sched.check_policy(policy)?;
        self.change_attr(cpu, &mut |t| {
            t.policy = policy;
            t.rt_priority = if policy.is_rt() { rt_priority } else { 0 };
            Ok(())
        })
    }

    fn set_affinity(&self, cpu: usize, mask: CpuMask) -> Result<(), String> {
        let m = mask.and(&CpuMask::first_n(self.ncpus()));
        if m.is_empty() {
            return Err(format!(
                "affinity {mask:?} names none of this runtime's {} CPUs",
                self.ncpus()
            ));
        }
        self.change_attr(cpu, &mut |t| {
            t.cpus_allowed = m;
            Ok(())
        })
    }

    fn task_info(&self, cpu: usize) -> Option<(i32, crate::task::SchedPolicy, u8, u64)> {
        let t = self.running(cpu)?;
        // The running task belongs to this CPU's runqueue lock.
        Some(self.with_rq_at(cpu, self.now(), |_, ctx, _| {
            let task = &ctx.tasks[t];
            (task.nice, task.policy, task.rt_priority, task.sum_exec_ns)
        }))
    }

    fn yield_now(&self, cpu: usize) {
        self.switch_out(cpu, Reason::Yield);
    }

    fn wait_idle_for(&self, deadline: Option<Instant>) -> usize {
        self.wait_idle(deadline)
    }

    fn begin_shutdown(&self) {
        self.shutdown.store(true, SeqCst);
        for s in self.workers.iter() {
            s.need_resched.store(true, SeqCst);
            worker::unpark(s);
        }
    }

    fn deferred_kick(&self, cpu: usize) {
        let in_task_code = super::resched::request(&self.workers[cpu]);
        self.kick(cpu, None, in_task_code);
        self.held_kicks.fetch_sub(1, Release);
    }

    fn deferred_kick_dup(&self) {
        self.held_kicks.fetch_sub(1, Release);
    }

    fn wait_foreign_wakers(&self) {
        while self.foreign_wakers.load(Acquire) > 0 || self.held_kicks.load(Acquire) > 0 {
            std::thread::yield_now();
        }
    }

    fn runtime_stats(&self) -> RuntimeStats {
        self.stats()
    }

    fn run_worker(&self, cpu: usize, core: Option<usize>, me: *const dyn TaskOps) {
        self.worker_main(cpu, core, me)
    }
}

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

/// The scheduler core's view of the runtime: `Shared` seen from one path (a worker's
/// `schedule()` or tick, or any thread's wakeup, spawn or attribute change).
pub(crate) struct WorkerHost<'a, P: SchedClass> {
    sh: &'a Shared<P>,
    /// The time read once for the whole path, or `None` to read the clock per section.
    now: Option<u64>,
}

impl<P: SchedClass> WorkerHost<'_, P> {
    fn now(&self) -> u64 {
        self.now.unwrap_or_else(|| self.sh.now())
    }
}

impl<P: SchedClass> CoreHost for WorkerHost<'_, P> {
    type Class = P;
    type Inside = Shared<P>;

    fn sched(&self) -> &Sched<P> {
        &self.sh.sched
    }

    fn ncpus(&self) -> usize {
        self.sh.ncpus()
    }

    fn hz(&self) -> u32 {
        self.sh.cfg.hz
    }

    #[inline(always)]
    fn lock_rq<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(&Sched<P>, &mut Ctx<'_, TaskData<Self>>, &mut Rq<ClassRq<Self>>, &Shared<P>) -> R,
    ) -> R {
        let sh = self.sh;
        sh.with_rq_at(cpu, self.now(), |s, ctx, rq| f(s, ctx, rq, sh))
    }

    fn lock_rq_viewing<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(&Sched<P>, &mut Ctx<'_, TaskData<Self>>, &mut Rq<ClassRq<Self>>, &CpuView) -> R,
    ) -> R {
        let sh = self.sh;
        let now = self.now();
        sh.with_cpu_view(|view| sh.with_rq_at(cpu, now, |s, ctx, rq| f(s, ctx, rq, view)))
    }

    /// Both runqueues locked in domain order, as the kernel's `double_rq_lock` does, so two
    /// CPUs locking the same pair cannot deadlock.
    fn lock_two_rqs<R>(
        &mut self,
        _caller: CpuId,
        a: CpuId,
        b: CpuId,
        f: impl FnOnce(
            &Sched<P>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &mut Rq<ClassRq<Self>>,
        ) -> R,
    ) -> R {
        let sh = self.sh;
        let (da, db) = (sh.layout.domain_of(a), sh.layout.domain_of(b));
        assert_ne!(da, db, "lock_two_rqs needs two lock domains");
        let (mut ga, mut gb) = if da < db {
            let ga = lock(&sh.rqs[da]);
            (ga, lock(&sh.rqs[db]))
        } else {
            let gb = lock(&sh.rqs[db]);
            (lock(&sh.rqs[da]), gb)
        };
        let mut ops = OpCounter::default();
        let mut ctx = Ctx::new(self.now(), sh.cfg.hz, sh.ncpus(), sh.view(), &mut ops);
        let r = f(&sh.sched, &mut ctx, &mut ga, &mut gb);
        sh.publish(&ga, a);
        sh.publish(&gb, b);
        r
    }

    fn select_view<R>(
        &mut self,
        f: impl FnOnce(&Sched<P>, &TaskView<'_, TaskData<Self>>, &CpuView, &mut Work<'_>) -> R,
    ) -> R {
        let sh = self.sh;
        sh.with_cpu_view(|view| {
            let mut ops = OpCounter::default();
            f(&sh.sched, &sh.view(), view, &mut Work::new(&mut ops))
        })
    }

    fn task_allowed(&self, t: TaskId) -> CpuMask {
        // SAFETY: the caller owns `t` (it is on no runqueue).
        unsafe { self.sh.task(t).cpus_allowed }
    }

    fn task_cpu(&self, t: TaskId) -> CpuId {
        // SAFETY: a racy read, re-checked under the lock where it matters (task_rq_lock).
        unsafe { std::ptr::read_volatile(&self.sh.task(t).cpu) }
    }

    fn published_nr_running(&self, cpu: CpuId) -> usize {
        self.sh.status[cpu].nr_running.load(Relaxed)
    }

    fn resched(&mut self, cpu: CpuId, from: Option<CpuId>) {
        self.sh.resched(cpu, from);
    }

    fn set_need_resched(&mut self, cpu: CpuId) {
        self.sh.workers[cpu].need_resched.store(true, Relaxed);
    }

    fn kick_idle_balancer(&mut self, busy: CpuId, at_tick: bool) {
        self.sh.kick_idle_balancer(busy, at_tick);
    }

    fn task_queued(&mut self, _t: TaskId, _kind: EnqueueKind) {}

    fn switched(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
        next: Option<TaskId>,
    ) -> Result<(), CoreError> {
        if next != prev {
            if let Some(n) = next {
                let slot = &self.sh.workers[cpu];
                worker::bump(&slot.switches);
                // SAFETY: n is ours to run now.
                let last = unsafe { &mut *self.sh.ctl[n.index()].last_cpu.get() };
                if *last != cpu {
                    if *last != usize::MAX {
                        worker::bump(&slot.migrations);
                    }
                    *last = cpu;
                }
            }
        }
        Ok(())
    }

    fn live_parent(&self, x: TaskId) -> Option<TaskId> {
        self.sh.live_parent(x)
    }

    fn release_task(
        &mut self,
        _cpu: CpuId,
        x: TaskId,
        _parent: Option<TaskId>,
    ) -> Result<(), CoreError> {
        self.sh.release(x);
        Ok(())
    }

    fn commit_block(inside: &Shared<P>, t: TaskId) -> bool {
        handshake::commit_block(&inside.ctl[t.index()].state)
    }

    fn finish_block(inside: &Shared<P>, t: TaskId) -> bool {
        handshake::finish_block(&inside.ctl[t.index()].state)
    }

    fn prev_stopped(inside: &Shared<P>, cpu: CpuId, task: &mut Task<P::TaskData>, now: u64) {
        // SAFETY: this worker's own cell.
        let since = unsafe { *inside.workers[cpu].switched_in_ns.get() };
        task.sum_exec_ns += now.saturating_sub(since);
        task.last_ran_ns = now;
    }

    fn publish_curr(
        inside: &Shared<P>,
        cpu: CpuId,
        next: Option<TaskId>,
        switched: bool,
        now: u64,
    ) {
        let s = &inside.status[cpu];
        s.curr.store(next.map_or(u32::MAX, |t| t.0), Relaxed);
        if switched {
            s.last_schedule_ns.store(now, Relaxed);
        }
    }
}

/// The runtime host driven step by step by the core's tests (`sched_core::tests`): the task
/// table, locks and published state of a real runtime, with no worker threads and no stacks;
/// the test is the only thread and the clock.
#[cfg(test)]
pub(crate) mod scripted {
    use super::*;
    use crate::sched_core::tests::{Scripted, TaskSpecT};

    pub(crate) fn run<P: SchedClass, R>(
        sched: Sched<P>,
        ncpus: usize,
        hz: u32,
        f: impl FnOnce(&mut WorkerHost<'_, P>) -> Result<R, CoreError>,
    ) -> Result<R, CoreError> {
        let cfg = Config {
            ncpus,
            hz,
            max_tasks: 256,
            stack_size: 64 * 1024,
            preempt: false,
            idle_spin_ns: 0,
        };
        let sh = Shared::new(sched, cfg, 0);
        let mut h = sh.host(Some(0));
        f(&mut h)
    }

    impl<P: SchedClass> Scripted for WorkerHost<'_, P> {
        fn add_task(&mut self, spec: &TaskSpecT, parent: Option<TaskId>) -> TaskId {
            let sh = self.sh;
            let idx = {
                let mut free = lock(&sh.free);
                free.1 += 1;
                free.1 - 1
            };
            let t = TaskId(idx as u32);
            let ctl = &sh.ctl[idx];
            // SAFETY: a fresh slot; this test thread is the only thread.
            unsafe {
                *ctl.parent_gen.get() = parent.map_or(0, |p| sh.ctl[p.index()].gen.load(Relaxed));
                ctl.gen.fetch_add(1, Relaxed);
                ctl.state.store(handshake::RUNNABLE, Release);
                let task = sh.task(t);
                *task = Task::new(t);
                task.policy = spec.policy;
                task.nice = spec.nice;
                task.rt_priority = spec.rt_priority;
                task.cpus_allowed = spec.allowed;
                task.parent = parent;
                task.mm = t.0;
            }
            sh.high_water.fetch_max(idx + 1, AcqRel);
            *lock(&sh.live) += 1;
            t
        }
        fn at(&mut self, now: u64) {
            self.now = Some(now);
        }
        fn begin_sleep(&mut self, t: TaskId) -> Leave {
            handshake::prepare_block(&self.sh.ctl[t.index()].state);
            Leave::MaybeSleep
        }
        fn wake(&mut self, t: TaskId, waker: CpuId) -> Result<(), CoreError> {
            if handshake::wake(&self.sh.ctl[t.index()].state) != Wake::Enqueue {
                return Err(CoreError::new(format!("{t} was not asleep")));
            }
            core::wake::try_to_wake_up(self, t, Some(waker), false, false, false)
        }
        fn take_need_resched(&mut self, cpu: CpuId) -> bool {
            self.sh.workers[cpu].need_resched.swap(false, Relaxed)
        }
        fn task_state(&self, t: TaskId) -> TaskState {
            // SAFETY: the only thread.
            unsafe { self.sh.task(t).state }
        }
        fn ntasks(&self) -> usize {
            self.sh.high_water.load(Acquire)
        }
    }
}
