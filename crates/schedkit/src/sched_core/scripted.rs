//! The face a host shows to be driven step by step from one thread (`Scripted`): the
//! simulator's (`sim::scripted`) and the runtime's (`runtime/scripted.rs`), with no event loop
//! and no worker threads. The conformance suite (`crate::conformance`) drives both through it
//! and the core; the core's and the classes' own tests use it too.

use super::{CoreError, Host, Leave, Wakee};
use crate::task::{CpuId, CpuMask, SchedPolicy, TaskId, TaskState};

/// A host the tests drive by hand, one step at a time.
pub(crate) trait Scripted: Host {
    /// A task the host creates (state `New`, on no runqueue), child of `parent` if given.
    fn add_task(&mut self, spec: &TaskSpecT, parent: Option<TaskId>) -> TaskId;
    /// Every section of the next step runs at `now`.
    fn at(&mut self, now: u64);
    /// The running `t` asks to block (it stays current until `schedule()` switches it out);
    /// returns how `schedule()` must be told if no wakeup comes first.
    fn begin_sleep(&mut self, t: TaskId) -> Leave;
    /// How `schedule()` must be told that `t`, which asked to block, switches out now (after
    /// a wakeup that found it still current, as runnable).
    fn sleep_leave(&mut self, t: TaskId) -> Leave;
    /// Wakes `t` from `waker` through the core's `try_to_wake_up`, as the host's own wakeup
    /// entry does; returns what the host found of `t`.
    fn wake(&mut self, t: TaskId, waker: CpuId) -> Result<Wakee, CoreError>;
    /// Reads and clears `need_resched` of `cpu`.
    fn take_need_resched(&mut self, cpu: CpuId) -> bool;
    fn task_state(&self, t: TaskId) -> TaskState;
    fn ntasks(&self) -> usize;
}

/// What a scripted task is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskSpecT {
    pub policy: SchedPolicy,
    pub nice: i32,
    pub rt_priority: u8,
    pub allowed: CpuMask,
}
