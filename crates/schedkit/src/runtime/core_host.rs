//! `WorkerHost`, the scheduler core's view of the runtime (`sched_core::Host`): `Shared` seen
//! from one path (a worker's `schedule()` or tick, or any thread's wakeup, spawn or attribute
//! change), with the time read once for that path. It locks runqueues (two in domain order,
//! as `double_rq_lock`), publishes what each CPU's policy state says, asks CPUs to reschedule,
//! kicks the NO_HZ idle balancer, counts switches and migrations, and runs the handshake's
//! commit and finish under the runqueue lock. `Shared::host` makes one.
//!
//! Stands on `host` (the state it lends); must never be depended on by `host`, `task_ops`,
//! `task_side` or `worker`, and never holds scheduling logic of its own: every path is the
//! core's.

use super::handshake::{self, Wake};
use super::host::{lock, Shared};
use super::worker;
use crate::class::{CpuView, Ctx, EnqueueKind, Rq, SchedClass};
use crate::ds::work::{OpCounter, Work};
use crate::sched_core::{ClassRq, CoreError, Host, Sched, TaskData, Wakee};
use crate::task::{CpuId, CpuMask, Task, TaskId, TaskView};
use std::sync::atomic::Ordering::*;

impl<P: SchedClass> Shared<P> {
    /// The core's view of this host, for a path run by `cpu`'s worker or any other thread;
    /// `now`: the time already read for the whole path (one clock read per `schedule()`).
    pub(super) fn host(&self, now: Option<u64>) -> WorkerHost<'_, P> {
        WorkerHost {
            sh: self,
            now,
            waker: None,
        }
    }

    /// The core's view for a wakeup from `waker`'s worker (None: a thread that is no worker
    /// of this runtime): the clock is read per section, under the runqueue lock, and the CPU
    /// selection sees the worker's last reading of it (`WorkerSlot::clock_ns`).
    pub(super) fn waker_host(&self, waker: Option<CpuId>) -> WorkerHost<'_, P> {
        WorkerHost {
            sh: self,
            now: None,
            waker,
        }
    }
}

/// The scheduler core's view of the runtime: `Shared` seen from one path (a worker's
/// `schedule()` or tick, or any thread's wakeup, spawn or attribute change).
pub(crate) struct WorkerHost<'a, P: SchedClass> {
    pub(super) sh: &'a Shared<P>,
    /// The time read once for the whole path, or `None` to read the clock per section.
    pub(super) now: Option<u64>,
    /// The worker a wakeup runs on: its CPU selection reads the time as of that worker's
    /// last clock reading, as the kernel's reads `jiffies`.
    pub(super) waker: Option<CpuId>,
}

impl<P: SchedClass> WorkerHost<'_, P> {
    fn now(&self) -> u64 {
        self.now.unwrap_or_else(|| self.sh.now())
    }

    /// The time a CPU selection sees: the path's, else the waker's worker's last reading
    /// (a tick or a `schedule()` ago at most, as `jiffies`), else the clock.
    fn view_now(&self) -> u64 {
        match (self.now, self.waker) {
            (Some(now), _) => now,
            (None, Some(cpu)) => self.sh.workers[cpu].clock_ns.load(Relaxed),
            (None, None) => self.sh.now(),
        }
    }
}

impl<P: SchedClass> Host for WorkerHost<'_, P> {
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
        sh.with_cpu_view(now, |view| {
            sh.with_rq_at(cpu, now, |s, ctx, rq| f(s, ctx, rq, view))
        })
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
        sh.with_cpu_view(self.view_now(), |view| {
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

    /// The handshake decides: a task that has not switched out yet (`BLOCKING`) stays where it
    /// is, running again; one its worker is taking off is queued again by that worker; a
    /// blocked one is the waker's, and its wakeup is counted.
    fn claim_wakee(&mut self, t: TaskId, waker_cpu: Option<CpuId>) -> Wakee {
        match handshake::wake(&self.sh.ctl[t.index()].state) {
            Wake::Enqueue => {
                let sh = self.sh;
                sh.count(waker_cpu, |w| &w.wakeups, &sh.counters.wakeups);
                Wakee::Asleep
            }
            Wake::Cancelled => Wakee::StillCurrent,
            Wake::Deferred => Wakee::Leaving,
            Wake::None => Wakee::NotAsleep,
        }
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

    /// Relaxed: ordered before the waker's read by the handshake (`finish_block`'s release,
    /// the claiming waker's acquire), or read by this same worker (a wakeup deferred to it).
    fn blocked_queued(inside: &Shared<P>, t: TaskId, kept: bool) {
        inside.ctl[t.index()].queued_asleep.store(kept, Relaxed);
    }

    fn may_be_queued(&self, t: TaskId) -> bool {
        self.sh.ctl[t.index()].queued_asleep.load(Relaxed)
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
