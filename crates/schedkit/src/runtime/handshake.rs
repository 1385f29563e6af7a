//! The park/wake handshake between a task going to sleep, its worker, and a waker.
//!
//! A sleeping task must be neither lost (a wakeup that arrives while it is still switching
//! out must not be forgotten) nor run twice (a waker must never enqueue a task that is still
//! on a runqueue or still executing). The kernel solves this with the runqueue lock
//! (2.6 `try_to_wake_up` finds `p->array` still set and only marks the task running) and
//! later with `p->on_cpu`/`TASK_WAKING`. A user-space host cannot make every waker take the
//! sleeper's runqueue lock cheaply, so each task carries one atomic state byte and every
//! transition is a compare-and-swap; whoever wins a transition owns the next step:
//!
//! ```text
//!            prepare_block (task)            commit_block (worker, rq locked)
//!  RUNNABLE ───────────────────▶ BLOCKING ───────────────────────────▶ DEQUEUING
//!     ▲  ▲                          │ wake: cancel, the task                 │ wake: defer
//!     │  └──────────────────────────┘ never leaves its runqueue              ▼
//!     │                                                            DEQUEUING_WOKEN
//!     │ wake: the waker owns it and enqueues it     finish_block         │ finish_block:
//!     └──────────────────────────── BLOCKED ◀─────────── DEQUEUING       │ the worker owns
//!     └──────────────────────────────────────────────────────────────────┘ it and enqueues
//! ```
//!
//! Exactly one party enqueues a blocked task once per wakeup, and a task that is cancelled
//! never leaves its runqueue. `tests::loom_*` check every interleaving with loom.

/// On a runqueue (queued or running) or owned by whoever is about to enqueue it.
pub const RUNNABLE: u8 = 0;
/// Decided to sleep; still on its CPU and runqueue.
pub const BLOCKING: u8 = 1;
/// Its worker is taking it off the runqueue.
pub const DEQUEUING: u8 = 2;
/// A wakeup arrived while it was being taken off: its worker puts it back.
pub const DEQUEUING_WOKEN: u8 = 3;
/// Off every runqueue and switched out; the next waker owns it.
pub const BLOCKED: u8 = 4;
/// Finished.
pub const EXITED: u8 = 5;

/// The atomic the handshake runs on (std's in the runtime, loom's in the model check).
pub trait StateCell {
    fn load(&self) -> u8;
    fn store(&self, v: u8);
    fn cas(&self, current: u8, new: u8) -> Result<u8, u8>;
}

impl StateCell for std::sync::atomic::AtomicU8 {
    fn load(&self) -> u8 {
        self.load(std::sync::atomic::Ordering::Acquire)
    }
    fn store(&self, v: u8) {
        self.store(v, std::sync::atomic::Ordering::Release)
    }
    fn cas(&self, current: u8, new: u8) -> Result<u8, u8> {
        use std::sync::atomic::Ordering::*;
        self.compare_exchange(current, new, AcqRel, Acquire)
    }
}

/// What a waker must do after [`wake`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Nothing: the task was not asleep (already woken, running, or exited).
    None,
    /// The task had not switched out yet; it stays on its runqueue (the 2.6 "still on the
    /// runqueue" case of `try_to_wake_up`).
    Cancelled,
    /// Its worker is dequeuing it and will requeue it.
    Deferred,
    /// The caller owns the task and must enqueue it.
    Enqueue,
}

/// The task, before it checks its wait condition: it is about to block.
pub fn prepare_block(s: &impl StateCell) {
    s.store(BLOCKING);
}

/// The task found its condition already true after `prepare_block`: it stays runnable.
pub fn cancel_block(s: &impl StateCell) {
    // A waker may have cancelled it already; both write RUNNABLE.
    let _ = s.cas(BLOCKING, RUNNABLE);
}

/// A waker.
pub fn wake(s: &impl StateCell) -> Wake {
    loop {
        let cur = s.load();
        let (next, outcome) = match cur {
            BLOCKING => (RUNNABLE, Wake::Cancelled),
            DEQUEUING => (DEQUEUING_WOKEN, Wake::Deferred),
            BLOCKED => (RUNNABLE, Wake::Enqueue),
            _ => return Wake::None,
        };
        if s.cas(cur, next).is_ok() {
            return outcome;
        }
    }
}

/// The worker, after the task switched out asking to block: true if the worker must now
/// dequeue it (and then call [`finish_block`]); false if a wakeup got there first.
pub fn commit_block(s: &impl StateCell) -> bool {
    s.cas(BLOCKING, DEQUEUING).is_ok()
}

/// The worker, after dequeuing: true if the task is now asleep; false if a wakeup arrived
/// meanwhile and the worker must enqueue it again.
pub fn finish_block(s: &impl StateCell) -> bool {
    match s.cas(DEQUEUING, BLOCKED) {
        Ok(_) => true,
        Err(_) => {
            // Only DEQUEUING_WOKEN can be here: nobody else moves a DEQUEUING task.
            s.store(RUNNABLE);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
    use loom::sync::Arc;

    struct L(AtomicU8);
    impl StateCell for L {
        fn load(&self) -> u8 {
            self.0.load(Ordering::Acquire)
        }
        fn store(&self, v: u8) {
            self.0.store(v, Ordering::Release)
        }
        fn cas(&self, c: u8, n: u8) -> Result<u8, u8> {
            self.0
                .compare_exchange(c, n, Ordering::AcqRel, Ordering::Acquire)
        }
    }

    /// One sleeper (task + its worker) against one waker, every interleaving: the task ends
    /// runnable, enqueued exactly once if it ever left its runqueue, never if it did not.
    #[test]
    fn loom_one_wakeup_is_never_lost_or_doubled() {
        loom::model(|| {
            let s = Arc::new(L(AtomicU8::new(RUNNABLE)));
            let enqueues = Arc::new(AtomicUsize::new(0));
            let left_rq = Arc::new(AtomicUsize::new(0));
            prepare_block(&*s);
            let (s2, e2) = (s.clone(), enqueues.clone());
            let waker = loom::thread::spawn(move || {
                if wake(&*s2) == Wake::Enqueue {
                    e2.fetch_add(1, Ordering::SeqCst);
                }
            });
            // The worker side.
            if commit_block(&*s) {
                left_rq.fetch_add(1, Ordering::SeqCst);
                if !finish_block(&*s) {
                    enqueues.fetch_add(1, Ordering::SeqCst);
                }
            }
            waker.join().unwrap();
            assert_eq!(s.load(), RUNNABLE);
            assert_eq!(
                enqueues.load(Ordering::SeqCst),
                left_rq.load(Ordering::SeqCst)
            );
        });
    }

    /// Two wakers race for one sleeper: still exactly one enqueue. (Preemption-bounded to 3
    /// context switches, as Tokio bounds its loom runs; the state space is otherwise large.)
    #[test]
    fn loom_two_wakers_enqueue_once() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let s = Arc::new(L(AtomicU8::new(RUNNABLE)));
            let enqueues = Arc::new(AtomicUsize::new(0));
            prepare_block(&*s);
            let mut hs = Vec::new();
            for _ in 0..2 {
                let (s2, e2) = (s.clone(), enqueues.clone());
                hs.push(loom::thread::spawn(move || {
                    if wake(&*s2) == Wake::Enqueue {
                        e2.fetch_add(1, Ordering::SeqCst);
                    }
                }));
            }
            let mut left = 0;
            if commit_block(&*s) {
                left = 1;
                if !finish_block(&*s) {
                    enqueues.fetch_add(1, Ordering::SeqCst);
                }
            }
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(s.load(), RUNNABLE);
            assert_eq!(enqueues.load(Ordering::SeqCst), left);
        });
    }

    /// A task that finds its condition true cancels; a late waker then does nothing.
    #[test]
    fn cancel_then_wake_is_a_no_op() {
        let s = std::sync::atomic::AtomicU8::new(RUNNABLE);
        prepare_block(&s);
        cancel_block(&s);
        assert_eq!(wake(&s), Wake::None);
        assert!(!commit_block(&s));
    }
}
