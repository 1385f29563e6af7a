//! Sleep timers: one deadline-ordered queue for the whole runtime, and one high-resolution
//! one-shot timer per worker that makes sure someone looks at the queue when a deadline
//! passes, even while every worker runs a hog.
//!
//! The kernel keeps an hrtimer per sleeping task on the CPU where it slept (`hrtimer_nanosleep`
//! since 2.6.16) and the clock event device interrupts that CPU at the expiry. A user-space
//! worker has one POSIX timer (`timer_create` on CLOCK_MONOTONIC, signalling the worker's
//! thread), so it is armed at the earliest deadline it is responsible for, and responsibility
//! moves with the queue:
//!
//! - a task that sleeps arms its own worker's timer at its deadline (if earlier than armed);
//! - whoever takes expired entries off the queue, or whose timer expired, arms its timer at the
//!   queue's new earliest deadline.
//!
//! So every pending deadline always has an armed timer at or before it (checked under loom
//! below): no sleeper is woken late by more than the signal's delivery, none is lost. A timer
//! that fires early (the runtime's clock is the TSC, the timer's is CLOCK_MONOTONIC) finds
//! nothing due and re-arms. Workers that cannot take signals have no timer; then the idle
//! workers' futex timeouts and every `schedule()` fire the queue, as before this existed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The queue, behind whatever lock the host uses (std's in the runtime, loom's in the check).
pub trait Queue {
    /// Adds `id`'s deadline.
    fn push(&self, deadline: u64, id: u32);
    /// Removes every entry due at `now` into `due`; returns the earliest remaining deadline
    /// (u64::MAX: none) and publishes it as the hint.
    fn take_due(&self, now: u64, due: &mut Vec<u32>) -> u64;
    /// The earliest deadline, possibly stale but never later than a pending entry's deadline
    /// once the push that added it has returned.
    fn hint(&self) -> u64;
}

/// A worker's "my timer expired" flag, set by its signal handler.
pub trait Expired {
    fn take(&self) -> bool;
}

/// A task on this worker sleeps until `deadline`: queue it, and return the time this worker's
/// timer must be armed for if that is earlier than `armed_at` (which it updates).
pub fn sleep(q: &impl Queue, armed_at: &mut u64, deadline: u64, id: u32) -> Option<u64> {
    q.push(deadline, id);
    arm(armed_at, deadline)
}

/// What [`fire`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fired {
    /// Re-arm this worker's timer for this time.
    pub rearm: Option<u64>,
    /// This worker's own timer had expired (the sleepers it wakes were woken by it, not by a
    /// tick or a switch that happened to look).
    pub expired: bool,
}

/// The worker looks at the queue at `now` (at every `schedule()`, and at a preemption point
/// after its timer's signal): collects the due sleepers into `due` and says whether, and for
/// when, its timer must be re-armed.
pub fn fire(
    q: &impl Queue,
    expired: &impl Expired,
    armed_at: &mut u64,
    now: u64,
    due: &mut Vec<u32>,
) -> Fired {
    let mine = expired.take();
    if mine {
        *armed_at = u64::MAX;
    }
    if !mine && q.hint() > now {
        return Fired {
            rearm: None,
            expired: false,
        };
    }
    let before = due.len();
    let next = q.take_due(now, due);
    let rearm = if (mine || due.len() > before) && next != u64::MAX {
        arm(armed_at, next)
    } else {
        None
    };
    Fired {
        rearm,
        expired: mine,
    }
}

fn arm(armed_at: &mut u64, at: u64) -> Option<u64> {
    (at < *armed_at).then(|| {
        *armed_at = at;
        at
    })
}

/// The worker slot's flag, set by the timer signal's handler. A plain load first: `schedule()`
/// asks at every switch and the flag is almost always clear.
impl Expired for std::sync::atomic::AtomicBool {
    fn take(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.load(Relaxed) && self.swap(false, Relaxed)
    }
}

type Entries = (BinaryHeap<Reverse<(u64, u64, u32)>>, u64);

/// The runtime's queue: a binary heap of (deadline, sequence, task) under a mutex, and the
/// earliest deadline as an atomic hint so that `schedule()` skips the lock when nothing is due.
pub struct StdQueue {
    /// The entries (deadline, sequence for FIFO order among equal deadlines, task) and the
    /// next sequence number.
    heap: std::sync::Mutex<Entries>,
    next: std::sync::atomic::AtomicU64,
}

impl Default for StdQueue {
    fn default() -> Self {
        StdQueue {
            heap: std::sync::Mutex::new((BinaryHeap::new(), 0)),
            next: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }
}

impl StdQueue {
    fn locked(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.heap.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Queue for StdQueue {
    fn push(&self, deadline: u64, id: u32) {
        use std::sync::atomic::Ordering::*;
        let mut g = self.locked();
        let seq = g.1;
        g.1 += 1;
        g.0.push(Reverse((deadline, seq, id)));
        if deadline < self.next.load(Acquire) {
            self.next.store(deadline, Release);
        }
    }
    fn take_due(&self, now: u64, due: &mut Vec<u32>) -> u64 {
        use std::sync::atomic::Ordering::*;
        let mut g = self.locked();
        while let Some(Reverse((d, _, t))) = g.0.peek().copied() {
            if d > now {
                break;
            }
            g.0.pop();
            due.push(t);
        }
        let next = g.0.peek().map_or(u64::MAX, |Reverse((d, _, _))| *d);
        self.next.store(next, Release);
        next
    }
    fn hint(&self) -> u64 {
        self.next.load(std::sync::atomic::Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
    use loom::sync::{Arc, Mutex};

    /// The same queue on loom's primitives (a sorted Vec stands in for the heap).
    #[derive(Default)]
    struct LoomQueue {
        entries: Mutex<Vec<(u64, u32)>>,
        next: AtomicU64,
    }
    impl LoomQueue {
        fn new() -> LoomQueue {
            LoomQueue {
                entries: Mutex::new(Vec::new()),
                next: AtomicU64::new(u64::MAX),
            }
        }
    }
    impl Queue for LoomQueue {
        fn push(&self, deadline: u64, id: u32) {
            let mut g = self.entries.lock().unwrap();
            g.push((deadline, id));
            g.sort();
            if deadline < self.next.load(Acquire) {
                self.next.store(deadline, Release);
            }
        }
        fn take_due(&self, now: u64, due: &mut Vec<u32>) -> u64 {
            let mut g = self.entries.lock().unwrap();
            while g.first().is_some_and(|e| e.0 <= now) {
                due.push(g.remove(0).1);
            }
            let next = g.first().map_or(u64::MAX, |e| e.0);
            self.next.store(next, Release);
            next
        }
        fn hint(&self) -> u64 {
            self.next.load(Acquire)
        }
    }
    struct Flag(AtomicBool);
    impl Expired for Flag {
        fn take(&self) -> bool {
            self.0.swap(false, AcqRel)
        }
    }

    /// After the racing threads are done, the "hardware" delivers every armed timer that is
    /// due at `now`, and each worker runs `fire` for it, until no timer is due: every sleeper
    /// must then have been woken exactly once.
    fn deliver_until_quiet(
        q: &LoomQueue,
        armed: &mut [u64],
        flags: &[Flag],
        now: u64,
        woken: &mut Vec<u32>,
    ) {
        for _round in 0..8 {
            let mut any = false;
            for w in 0..armed.len() {
                if armed[w] <= now {
                    flags[w].0.store(true, Release);
                    any = true;
                    let mut a = armed[w];
                    let _ = fire(q, &flags[w], &mut a, now, woken);
                    armed[w] = a;
                }
            }
            if !any {
                return;
            }
        }
        panic!("timers kept firing");
    }

    /// A task sleeps on worker A while worker B, whose own timer has just expired for an older
    /// sleeper, takes expiries off the queue at a time when both deadlines have passed: every
    /// interleaving leaves each sleeper woken exactly once (none lost between B's look at the
    /// queue and A's push, none woken twice).
    #[test]
    fn loom_a_sleeper_racing_an_expiry_is_never_lost_or_doubled() {
        loom::model(|| {
            let q = Arc::new(LoomQueue::new());
            let flags: Arc<[Flag; 2]> =
                Arc::new([Flag(AtomicBool::new(false)), Flag(AtomicBool::new(false))]);
            // Before the race: task 7 slept on B with deadline 3; B's timer is armed for it and
            // has just expired.
            let mut armed_b = u64::MAX;
            assert_eq!(sleep(&*q, &mut armed_b, 3, 7), Some(3));
            flags[1].0.store(true, Release);
            let (q2, f2) = (q.clone(), flags.clone());
            let b = loom::thread::spawn(move || {
                let mut woken = Vec::new();
                let rearm = fire(&*q2, &f2[1], &mut armed_b, 10, &mut woken).rearm;
                (armed_b, rearm, woken)
            });
            // Worker A: task 9 sleeps until 5 (already past at B's `now`).
            let mut armed_a = u64::MAX;
            let _ = sleep(&*q, &mut armed_a, 5, 9);
            let (armed_b, _, mut woken) = b.join().unwrap();
            let mut armed = [armed_a, armed_b];
            deliver_until_quiet(&q, &mut armed, &flags[..], 10, &mut woken);
            woken.sort();
            assert_eq!(woken, vec![7, 9]);
        });
    }

    /// Two tasks sleep on two workers while neither deadline has passed; then time moves on.
    /// Whatever the interleaving, each deadline is covered by an armed timer and both wake.
    #[test]
    fn loom_concurrent_sleepers_are_both_covered() {
        loom::model(|| {
            let q = Arc::new(LoomQueue::new());
            let flags: Arc<[Flag; 2]> =
                Arc::new([Flag(AtomicBool::new(false)), Flag(AtomicBool::new(false))]);
            let (q2, f2) = (q.clone(), flags.clone());
            let b = loom::thread::spawn(move || {
                let mut armed = u64::MAX;
                let _ = sleep(&*q2, &mut armed, 6, 2);
                // B's scheduler runs before anything is due.
                let mut woken = Vec::new();
                let _ = fire(&*q2, &f2[1], &mut armed, 1, &mut woken);
                assert!(woken.is_empty());
                armed
            });
            let mut armed_a = u64::MAX;
            let _ = sleep(&*q, &mut armed_a, 4, 1);
            let armed_b = b.join().unwrap();
            let mut woken = Vec::new();
            let mut armed = [armed_a, armed_b];
            // At 5 only task 1 is due; at 10 task 2 too.
            deliver_until_quiet(&q, &mut armed, &flags[..], 5, &mut woken);
            assert_eq!(woken, vec![1]);
            deliver_until_quiet(&q, &mut armed, &flags[..], 10, &mut woken);
            assert_eq!(woken, vec![1, 2]);
        });
    }

    /// A timer that fires before its deadline by the runtime's clock finds nothing due and
    /// re-arms for the same deadline instead of dropping it.
    #[test]
    fn an_early_expiry_re_arms() {
        let q = StdQueue::default();
        let flag = std::sync::atomic::AtomicBool::new(false);
        let mut armed = u64::MAX;
        assert_eq!(sleep(&q, &mut armed, 100, 1), Some(100));
        // A second, later sleeper on the same worker does not re-arm.
        assert_eq!(sleep(&q, &mut armed, 200, 2), None);
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut due = Vec::new();
        assert_eq!(fire(&q, &flag, &mut armed, 99, &mut due).rearm, Some(100));
        assert!(due.is_empty());
        // Not expired and nothing due: no lock, nothing to do.
        assert_eq!(fire(&q, &flag, &mut armed, 99, &mut due).rearm, None);
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            fire(&q, &flag, &mut armed, 150, &mut due),
            Fired {
                rearm: Some(200),
                expired: true
            }
        );
        assert_eq!(due, vec![1]);
        // Another worker taking the last expiry arms its own timer for nothing: the queue is
        // empty.
        let mut other = u64::MAX;
        let idle = std::sync::atomic::AtomicBool::new(false);
        assert_eq!(
            fire(&q, &idle, &mut other, 250, &mut due),
            Fired {
                rearm: None,
                expired: false
            }
        );
        assert_eq!(due, vec![1, 2]);
        assert_eq!(q.hint(), u64::MAX);
    }
}
