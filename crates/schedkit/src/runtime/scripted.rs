//! The runtime host driven step by step by the conformance suite (`crate::conformance`) and
//! the core's tests: the task table, locks and published state of a real runtime, with no
//! worker threads and no stacks; the caller is the only thread and the clock. It stands on
//! `host` and `core_host`, and nothing of the runtime proper may depend on it.

use super::core_host::WorkerHost;
use super::handshake;
use super::host::{lock, Config, Shared};
use crate::class::SchedClass;
use crate::machine::Topology;
use crate::sched_core::scripted::{Scripted, TaskSpecT};
use crate::sched_core::{self as core, CoreError, Leave, Sched, Wakee};
use crate::task::{CpuId, Task, TaskId, TaskState};
use std::sync::atomic::Ordering::*;

/// Runs `f` on a runtime of `topology`'s CPUs ticking `hz` times a second, with no workers.
pub(crate) fn run<P: SchedClass, R>(
    sched: Sched<P>,
    topology: Topology,
    hz: u32,
    f: impl FnOnce(&mut WorkerHost<'_, P>) -> Result<R, CoreError>,
) -> Result<R, CoreError> {
    let cfg = Config {
        ncpus: topology.ncpus,
        hz,
        max_tasks: 256,
        stack_size: 64 * 1024,
        preempt_stack: 0,
        preempt: false,
        idle_spin_ns: 0,
    };
    let sh = Shared::with_topology(sched, cfg, topology, 0);
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
    /// `MaybeSleep` while the block is pending; once a wakeup has cancelled it, the task
    /// switches out runnable, as the simulator's does. (A worker passes `MaybeSleep` either
    /// way, and the handshake then keeps the task; the one difference is that `schedule()`
    /// runs the new-idle balance for a `MaybeSleep` prev alone on its runqueue.)
    fn sleep_leave(&mut self, t: TaskId) -> Leave {
        if self.sh.ctl[t.index()].state.load(Acquire) == handshake::BLOCKING {
            Leave::MaybeSleep
        } else {
            Leave::Runnable
        }
    }
    fn wake(&mut self, t: TaskId, waker: CpuId) -> Result<Wakee, CoreError> {
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
