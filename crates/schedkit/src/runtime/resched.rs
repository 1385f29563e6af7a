//! The reschedule request between a waker and a busy worker, without a signal when the
//! worker is in runtime code.
//!
//! A reschedule signal (the runtime's IPI) costs a cross-CPU interrupt: 5-25 µs in a VM, more
//! than everything else in a cross-worker wakeup. It is needed only when the target runs task
//! code (`preempt_count` 0), which nothing else interrupts. Runtime code looks at
//! `need_resched` when it returns to task code, as the kernel's `preempt_enable()` does after
//! its decrement. The race — the waker reads the count just before the worker drops it to 0 —
//! is closed as in Dekker's algorithm: the waker writes the flag then reads the count, the
//! worker writes the count then reads the flag, each pair separated by a full barrier (SeqCst
//! store or locked RMW, then SeqCst load), so at least one side sees the other's write.
//! `tests::loom_*` check every interleaving with loom.
//!
//! The protocol only: it must never depend on `worker` or `host`. A worker's slot implements
//! [`Words`] in `worker.rs`, so the two files do not import each other.

/// A worker's two words the request runs on (std's atomics in the runtime, where
/// `worker::WorkerSlot` implements it, loom's in the model check).
pub(crate) trait Words {
    fn set_need_resched(&self);
    fn need_resched(&self) -> bool;
    fn preempt_count(&self) -> u32;
    /// Drops one level; returns the level before.
    fn preempt_dec(&self) -> u32;
}

/// Waker side: asks the worker to reschedule; true when it runs task code, which only the
/// signal interrupts.
pub(crate) fn request(w: &impl Words) -> bool {
    w.set_need_resched();
    w.preempt_count() == 0
}

/// What a worker leaving a level of runtime code must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leave {
    /// Still inside runtime code (an outer level looks when it leaves).
    Nested,
    /// Task code runs on; nothing was asked.
    Run,
    /// A reschedule was asked: act on it before task code goes on.
    Reschedule,
}

/// Worker side: drops one level of `preempt_count` and looks at the request.
pub(crate) fn leave(w: &impl Words) -> Leave {
    if w.preempt_dec() != 1 {
        Leave::Nested
    } else if w.need_resched() {
        Leave::Reschedule
    } else {
        Leave::Run
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering::SeqCst};
    use loom::sync::Arc;

    /// The two words on loom's atomics. Loom models a SeqCst access as AcqRel (tokio-rs/loom
    /// #180: it reports the store-buffering outcome of two SeqCst store/load pairs, which C++
    /// and Rust forbid), but models SeqCst fences exactly: so each write here is followed by
    /// the SeqCst fence that gives what the runtime's SeqCst store and locked RMW give (on
    /// x86 both are full barriers already, so the runtime adds none). Without these fences
    /// loom finds the lost request — the check can fail.
    struct Model {
        need_resched: AtomicBool,
        preempt_count: AtomicU32,
    }

    impl Words for Model {
        fn set_need_resched(&self) {
            self.need_resched.store(true, SeqCst);
            fence(SeqCst);
        }
        fn need_resched(&self) -> bool {
            self.need_resched.load(SeqCst)
        }
        fn preempt_count(&self) -> u32 {
            self.preempt_count.load(SeqCst)
        }
        fn preempt_dec(&self) -> u32 {
            let before = self.preempt_count.fetch_sub(1, SeqCst);
            fence(SeqCst);
            before
        }
    }

    /// A worker `levels` deep in runtime code leaves it while a waker asks for a reschedule:
    /// in every interleaving either the waker signals (it saw task code) or the worker, on
    /// its way out, sees the request — never neither, and the worker acts only at level 0.
    fn no_request_lost(levels: u32) {
        loom::model(move || {
            let m = Arc::new(Model {
                need_resched: AtomicBool::new(false),
                preempt_count: AtomicU32::new(levels),
            });
            let w = m.clone();
            let waker = loom::thread::spawn(move || request(&*w));
            let mut noticed = false;
            for level in (1..=levels).rev() {
                match leave(&*m) {
                    Leave::Nested => assert!(level > 1, "nested at the last level"),
                    Leave::Reschedule => {
                        assert_eq!(level, 1, "acted inside runtime code");
                        noticed = true;
                    }
                    Leave::Run => assert_eq!(level, 1),
                }
            }
            let signalled = waker.join().unwrap();
            assert!(signalled || noticed, "a reschedule request was lost");
        });
    }

    #[test]
    fn loom_a_request_racing_the_return_to_task_code_is_never_lost() {
        no_request_lost(1);
    }

    #[test]
    fn loom_a_request_racing_nested_runtime_code_is_never_lost() {
        no_request_lost(2);
    }
}
