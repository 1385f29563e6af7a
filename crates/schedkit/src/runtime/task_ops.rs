//! `WorkerOps`: the one trait through which a worker thread, the preemption trampoline and task
//! code (the public API, the sync primitives, futures, the I/O driver's wakeups) enter the
//! runtime's shared state. `host::Shared<P>` implements it for each policy (`task_side.rs`), and
//! everything above it holds a `*const dyn WorkerOps` or `Arc<dyn WorkerOps>`, so task code needs
//! no generic parameter. Also `Reason`, why a task switched out, which crosses that boundary.
//!
//! And `defer_kicks`, which holds back the reschedule kicks of a batch of wakeups from a thread
//! that is no worker (the I/O driver) and delivers them through `WorkerOps` when the batch is
//! queued.
//!
//! It must never depend on `host`, `core_host`, `task_side`, `worker` or the scheduler core:
//! being below all of them is what lets `worker` name the runtime it runs for without reaching
//! back into `host` (the two used to import each other).

use super::{RuntimeStats, TaskSpec};
use crate::task::{CpuId, CpuMask, SchedPolicy, TaskId};
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::time::Instant;

/// Why a task switched out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Reason {
    Yield,
    /// Asleep on something (its state is BLOCKING).
    Block,
    Exit,
    /// The tick or a wakeup preempted it, or it noticed `need_resched` itself.
    Preempt,
}

/// The operations a worker and the tasks on it ask of their runtime, type-erased over the
/// policy. "Task side": called by the task running on `cpu` (on its stack, in runtime code).
pub(crate) trait WorkerOps: Send + Sync {
    /// Task side: accounts pending ticks and switches out if a reschedule is due.
    fn preempt_point(&self, cpu: usize);
    /// Task side: switch to the worker's scheduler with `reason`.
    fn switch_out(&self, cpu: usize, reason: Reason);
    fn current_task(&self, cpu: usize) -> Option<TaskId>;
    /// The stack of the task running on `cpu`, for the fault handler (called on that worker's
    /// thread, in a signal handler: it only reads).
    fn running_stack(&self, cpu: usize) -> Option<StackInfo>;
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
    fn set_sched(&self, cpu: usize, policy: SchedPolicy, rt_priority: u8) -> Result<(), String>;
    fn set_affinity(&self, cpu: usize, mask: CpuMask) -> Result<(), String>;
    /// Nice, policy, RT priority and CPU time of the task running on `cpu`.
    fn task_info(&self, cpu: usize) -> Option<(i32, SchedPolicy, u8, u64)>;
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
    /// The body of worker thread `cpu`; `me` is this runtime as its workers' thread-local
    /// holds it.
    fn run_worker(&self, cpu: usize, core: Option<usize>, me: *const dyn WorkerOps);
}

/// A kick held back: the runtime, and its CPU to kick.
type HeldKick = (*const dyn WorkerOps, CpuId);

thread_local! {
    /// Kicks held back while this thread (no worker) wakes a batch.
    static DEFERRED: std::cell::RefCell<Option<Vec<HeldKick>>> =
        const { std::cell::RefCell::new(None) };
}

/// Holds back the kick of `cpu` of runtime `ops` if this thread is inside [`defer_kicks`],
/// counting it in the runtime's `held_kicks`.
pub(super) fn defer_kick(ops: *const dyn WorkerOps, held_kicks: &AtomicUsize, cpu: CpuId) -> bool {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(v) => {
            held_kicks.fetch_add(1, AcqRel);
            v.push((ops, cpu));
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

/// Where a running task's stack lies, for the fault handler's message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StackInfo {
    pub task: TaskId,
    /// The guard page, `[lo, hi)`.
    pub guard: (usize, usize),
    /// Bytes for the task's own frames (`Builder::stack_size`) and for one preemption.
    pub own: usize,
    pub preempt: usize,
}
