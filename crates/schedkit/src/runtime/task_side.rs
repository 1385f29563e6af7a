//! `Shared<P>`'s task side: its implementation of `WorkerOps` (`task_ops.rs`), what a worker
//! thread, the preemption trampoline and task code call on the runtime: preemption points
//! and switching out, blocking and waking, sleeping, spawning, attribute changes, shutdown, and
//! the kicks a foreign waker held back.
//!
//! Nothing names this file (a trait's impl needs no import): it stands on `host` and
//! `task_ops`, and must never be depended on by them, by `worker` or by `core_host`.

use super::arch;
use super::handshake;
use super::host::Shared;
use super::task_ops::{Reason, StackInfo, WorkerOps};
use super::timers;
use super::worker;
use super::{RuntimeStats, TaskSpec};
use crate::class::SchedClass;
use crate::task::{CpuMask, TaskId};
use std::sync::atomic::Ordering::*;
use std::time::Instant;

impl<P: SchedClass> WorkerOps for Shared<P> {
    fn preempt_point(&self, cpu: usize) {
        let slot = &self.workers[cpu];
        let n = if slot.ticks_pending.load(Relaxed) > 0 {
            slot.ticks_pending.swap(0, Relaxed)
        } else {
            0
        };
        if n > 0 || slot.timer_pending.load(Relaxed) {
            let now = self.now();
            slot.clock_ns.store(now, Relaxed);
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

    fn running_stack(&self, cpu: usize) -> Option<StackInfo> {
        let t = self.running(cpu)?;
        // SAFETY: a task's stack is set before it first runs and taken only after it exited;
        // we are on the worker that runs it, so it is there and nobody writes it.
        let stack = unsafe { (*self.ctl[t.index()].stack.get()).as_ref() }?;
        Some(StackInfo {
            task: t,
            guard: stack.guard(),
            own: self.cfg.stack_size,
            preempt: self.cfg.preempt_stack,
        })
    }

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

    fn run_worker(&self, cpu: usize, core: Option<usize>, me: *const dyn WorkerOps) {
        self.worker_main(cpu, core, me)
    }
}
