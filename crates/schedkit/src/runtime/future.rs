//! Async tasks: a `Future` run as a schedkit task.
//!
//! The future is polled on the task's own stack. When it returns `Pending` the task blocks
//! through the same park/wake handshake as every other sleep in the runtime, and its `Waker`
//! wakes it through the policy's wakeup path (`try_to_wake_up`): so a future gets its nice
//! level's share, an RT future preempts normal work when it becomes ready, and a future that
//! never awaits is still preempted by the tick — what an executor whose tasks are only
//! futures (Tokio, async-std) cannot give, since there a task runs until it returns
//! `Pending`.
//!
//! A future that wakes itself and returns `Pending` (`yield_now().await`) asks to let others
//! run, as in Tokio; here that is a `sched_yield` through the policy.

use super::task_ops::{Reason, WorkerOps};
use super::{current_ops, NoPreempt};
use crate::task::TaskId;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU8, Ordering::*};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// Nothing pending.
const EMPTY: u8 = 0;
/// Woken since the last poll began.
const NOTIFIED: u8 = 1;
/// Blocked, waiting for a wake.
const PARKED: u8 = 2;
/// The future finished: wakes are ignored (the task, and maybe its runtime, are gone).
const DONE: u8 = 3;

/// The waker of one async task.
struct TaskWaker {
    state: AtomicU8,
    host: *const dyn WorkerOps,
    id: TaskId,
}

// SAFETY: `host` is dereferenced only to wake a task that is PARKED, i.e. alive and blocked,
// so its runtime (which waits for all tasks before it is dropped) is alive too.
unsafe impl Send for TaskWaker {}
// SAFETY: as above; everything else is atomic.
unsafe impl Sync for TaskWaker {}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let mut s = self.state.load(Acquire);
        loop {
            if s == DONE || s == NOTIFIED {
                return;
            }
            match self.state.compare_exchange(s, NOTIFIED, AcqRel, Acquire) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        if s == PARKED {
            // We took it from PARKED: ours to wake, once. Called from a task, the wakeup is
            // runtime code on its behalf and takes runqueue locks: no preemption inside it.
            let _np = NoPreempt::new();
            // SAFETY: a parked task is alive, so is its host.
            unsafe { (*self.host).wake_task(self.id, false) };
        }
    }
}

impl TaskWaker {
    /// The task waits for a wake. Called by the task itself after a `Pending` poll.
    fn park(&self) {
        let _np = NoPreempt::new();
        // SAFETY: we are the task; its host is alive.
        let host = unsafe { &*self.host };
        let cpu = || {
            super::worker::current()
                .expect("a task runs on a worker")
                .cpu
        };
        if self
            .state
            .compare_exchange(NOTIFIED, EMPTY, AcqRel, Acquire)
            .is_ok()
        {
            // Woken during the poll (or by itself: a yield). Let the policy pick who runs.
            host.yield_now(cpu());
            return;
        }
        // Marked as going to sleep before any waker can see PARKED, so a wake that comes
        // while we are still switching out is not lost (the handshake keeps us runnable).
        host.prepare_block(self.id);
        match self.state.compare_exchange(EMPTY, PARKED, AcqRel, Acquire) {
            Ok(_) => {
                host.switch_out(cpu(), Reason::Block);
                // Only a waker that took PARKED wakes us, and it left NOTIFIED. Clear it
                // before the next poll, which sees everything woken before it.
                self.state.store(EMPTY, Release);
            }
            Err(_) => {
                // A wake came between the poll and now: stay runnable and poll again.
                host.cancel_block(self.id);
                self.state.store(EMPTY, Release);
            }
        }
    }
}

/// Runs `fut` to completion on the current task (the body of a task spawned by
/// `Runtime::spawn_future`).
pub(crate) fn run_on_task<F: Future>(fut: F) -> F::Output {
    // The worker and the task it runs are read in runtime code (preempt_count above 0): at
    // 0 the task could move to another worker between the two reads and take that worker's
    // task for its own. The host is one for all workers, so it stays valid after.
    let (ops, id) = {
        let _in_runtime = NoPreempt::new();
        let (ops, cpu) = current_ops().expect("spawn_future bodies run on a task");
        (ops, ops.current_task(cpu).expect("a task is running"))
    };
    let tw = Arc::new(TaskWaker {
        state: AtomicU8::new(EMPTY),
        host: ops as *const dyn WorkerOps,
        id,
    });
    let waker = Waker::from(tw.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            tw.state.store(DONE, Release);
            return v;
        }
        tw.park();
    }
}

/// Lets other tasks run, from async code: wakes itself and returns `Pending` once, which the
/// task turns into a `sched_yield` through the policy.
pub fn yield_now() -> impl Future<Output = ()> {
    struct YieldNow(bool);
    impl Future for YieldNow {
        type Output = ();
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
    YieldNow(false)
}
