//! Sleeping locks as the kernel implemented them (designs.md §4), as state machines both
//! hosts drive: who gets the lock, who is woken, and what each operation decided. The
//! simulator keys waiters by [`TaskId`]; the runtime by a pointer to the waiter's record.
//!
//! - Counting semaphore, `handoff` mode: 2.6.26's generic semaphore (64ac24e7388). `up()` with
//!   waiters dequeues the first, marks it `up`, and wakes it: the woken task owns the semaphore
//!   *before it runs*, the count never rises, nobody can take it meanwhile.
//! - Counting semaphore, `opportunistic` mode: Ingo Molnar's fix of 8 May 2008 (bf726eab3711,
//!   reverted two days later): `up()` always increments the count and wakes the first waiter
//!   without dequeuing it; whoever runs first takes the count; a woken waiter that finds it
//!   taken sleeps again, still queued.
//! - Mutex (2.6.16 `kernel/mutex.c`): FIFO waiters, unlock frees the lock and wakes the first
//!   waiter without hand-off, so a running task may take it first; optionally (2.6.30,
//!   0d66bf6d3514) a contender spins instead of sleeping while the owner is running.
//! - The big kernel lock of 2.6.26-rc1 is a semaphore of count 1 in whichever mode the run uses.
//!
//! [`LockMode`], the semaphore's discipline, lives here (the workload model and the runtime
//! re-export it). This module must never depend on a host (`sim`, `runtime`), the workload
//! model or `metrics`: both hosts and the workloads stand on it.

use crate::task::TaskId;
use std::collections::VecDeque;

/// How a semaphore passes itself on at `up()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LockMode {
    /// 2.6.26's generic semaphore: ownership passes to the woken waiter.
    #[default]
    Handoff,
    /// The May 2008 fix: wake one, but whoever runs first takes it.
    Opportunistic,
}

impl LockMode {
    pub fn parse(s: &str) -> Result<LockMode, String> {
        match s.trim() {
            "handoff" => Ok(LockMode::Handoff),
            "opportunistic" => Ok(LockMode::Opportunistic),
            o => Err(format!(
                "unknown lock mode '{o}' (handoff or opportunistic)"
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            LockMode::Handoff => "handoff",
            LockMode::Opportunistic => "opportunistic",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    Semaphore(LockMode),
    Mutex { spin: bool },
}

/// What a lock attempt decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The caller holds the lock now.
    Acquired,
    /// Spin and try again (adaptive mutex, owner running).
    Spin,
    /// The caller is queued (or stays queued) and must sleep.
    Sleep,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockCounters {
    pub acquisitions: u64,
    /// Acquisitions that had to sleep or spin first.
    pub contended: u64,
    /// `up()`s that passed ownership to a woken waiter (handoff mode).
    pub handoffs: u64,
    /// Acquisitions made while other tasks were already queued for the lock.
    pub steals: u64,
}

#[derive(Clone, Debug)]
pub struct SleepLock<W = TaskId> {
    pub kind: LockKind,
    /// Semaphore count; for a mutex 1 = free, 0 = held.
    pub count: u64,
    pub owner: Option<W>,
    /// FIFO of sleeping or woken-but-not-yet-running contenders.
    pub waiters: VecDeque<W>,
    /// Handoff mode: waiters dequeued by `up()` that own a unit but have not run yet.
    granted: Vec<W>,
    pub counters: LockCounters,
}

impl<W: Copy + PartialEq> SleepLock<W> {
    pub fn semaphore(count: u64, mode: LockMode) -> SleepLock<W> {
        SleepLock::new(LockKind::Semaphore(mode), count)
    }

    pub fn mutex(spin: bool) -> SleepLock<W> {
        SleepLock::new(LockKind::Mutex { spin }, 1)
    }

    fn new(kind: LockKind, count: u64) -> SleepLock<W> {
        SleepLock {
            kind,
            count,
            owner: None,
            waiters: VecDeque::new(),
            granted: Vec::new(),
            counters: LockCounters::default(),
        }
    }

    /// Is a unit free for the taking right now?
    pub fn is_free(&self) -> bool {
        self.count > 0
    }

    fn take(&mut self, t: W, waited: bool) -> Attempt {
        self.count -= 1;
        if matches!(self.kind, LockKind::Mutex { .. }) {
            self.owner = Some(t);
        }
        let was_queued = self.dequeue(t);
        if !was_queued && !self.waiters.is_empty() {
            self.counters.steals += 1;
        }
        self.counters.acquisitions += 1;
        self.counters.contended += u64::from(waited);
        Attempt::Acquired
    }

    fn dequeue(&mut self, t: W) -> bool {
        match self.waiters.iter().position(|&w| w == t) {
            Some(i) => {
                self.waiters.remove(i);
                true
            }
            None => false,
        }
    }

    /// `down()` / `mutex_lock()` by `t`. `waited` says whether this attempt follows an earlier
    /// sleep or spin; `owner_running` whether the mutex owner is on a CPU (adaptive spinning).
    pub fn lock(&mut self, t: W, waited: bool, owner_running: bool) -> Attempt {
        match self.kind {
            LockKind::Semaphore(LockMode::Handoff) => {
                if let Some(i) = self.granted.iter().position(|&g| g == t) {
                    // `waiter.up` was set: the semaphore is ours, the count was never raised.
                    self.granted.swap_remove(i);
                    self.counters.acquisitions += 1;
                    self.counters.contended += 1;
                    return Attempt::Acquired;
                }
                if self.count > 0 {
                    return self.take(t, waited);
                }
                if !self.waiters.contains(&t) {
                    self.waiters.push_back(t);
                }
                Attempt::Sleep
            }
            LockKind::Semaphore(LockMode::Opportunistic) => {
                if self.count > 0 {
                    return self.take(t, waited);
                }
                if !self.waiters.contains(&t) {
                    self.waiters.push_back(t);
                }
                Attempt::Sleep
            }
            LockKind::Mutex { spin } => {
                if self.count > 0 {
                    return self.take(t, waited);
                }
                if spin && owner_running && !self.waiters.contains(&t) {
                    return Attempt::Spin;
                }
                if !self.waiters.contains(&t) {
                    self.waiters.push_back(t);
                }
                Attempt::Sleep
            }
        }
    }

    /// `up()` / `mutex_unlock()` by `t`: returns the task to wake, if any.
    pub fn unlock(&mut self, _t: W) -> Option<W> {
        match self.kind {
            LockKind::Semaphore(LockMode::Handoff) => match self.waiters.pop_front() {
                None => {
                    self.count += 1;
                    None
                }
                Some(w) => {
                    self.granted.push(w);
                    self.counters.handoffs += 1;
                    Some(w)
                }
            },
            LockKind::Semaphore(LockMode::Opportunistic) => {
                self.count += 1;
                self.waiters.front().copied()
            }
            LockKind::Mutex { .. } => {
                self.count = 1;
                self.owner = None;
                self.waiters.front().copied()
            }
        }
    }

    /// Tasks queued but asleep while a unit is free: what the audit calls "left waiting on a
    /// free lock". `sleeping(t)` says whether `t` is asleep on this lock.
    pub fn stranded(&self, sleeping: impl Fn(W) -> bool) -> bool {
        self.is_free() && !self.waiters.is_empty() && self.waiters.iter().all(|&w| sleeping(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: TaskId = TaskId(1);
    const B: TaskId = TaskId(2);
    const C: TaskId = TaskId(3);
    const D: TaskId = TaskId(4);

    #[test]
    fn handoff_gives_the_semaphore_to_the_woken_waiter_before_it_runs() {
        let mut s = SleepLock::semaphore(1, LockMode::Handoff);
        assert_eq!(s.lock(A, false, false), Attempt::Acquired);
        assert_eq!(s.lock(B, false, false), Attempt::Sleep);
        assert_eq!(s.unlock(A), Some(B));
        assert_eq!(s.count, 0, "the count never rises: B owns it");
        // A (or anyone) trying again before B has run must wait behind B.
        assert_eq!(s.lock(A, false, false), Attempt::Sleep);
        assert_eq!(s.lock(B, true, false), Attempt::Acquired);
        assert_eq!(s.counters.handoffs, 1);
        assert_eq!(s.counters.steals, 0);
    }

    #[test]
    fn opportunistic_lets_a_running_task_take_it_first() {
        let mut s = SleepLock::semaphore(1, LockMode::Opportunistic);
        s.lock(A, false, false);
        assert_eq!(s.lock(B, false, false), Attempt::Sleep);
        assert_eq!(s.unlock(A), Some(B), "wake one");
        assert_eq!(s.count, 1);
        assert_eq!(
            s.lock(C, false, false),
            Attempt::Acquired,
            "C runs first and takes it"
        );
        assert_eq!(s.counters.steals, 1);
        assert_eq!(
            s.lock(B, true, false),
            Attempt::Sleep,
            "B finds it taken and sleeps again, still queued"
        );
        assert_eq!(s.waiters, VecDeque::from([B]));
        assert_eq!(s.unlock(C), Some(B));
        assert_eq!(s.lock(B, true, false), Attempt::Acquired);
        assert!(s.waiters.is_empty());
    }

    #[test]
    fn waiters_are_served_in_fifo_order() {
        for mode in [LockMode::Handoff, LockMode::Opportunistic] {
            let mut s = SleepLock::semaphore(1, mode);
            s.lock(A, false, false);
            for t in [B, C, D] {
                assert_eq!(s.lock(t, false, false), Attempt::Sleep);
            }
            let mut order = Vec::new();
            let mut holder = A;
            for _ in 0..3 {
                let w = s.unlock(holder).expect("a waiter is woken");
                assert_eq!(s.lock(w, true, false), Attempt::Acquired, "{mode:?}");
                order.push(w);
                holder = w;
            }
            assert_eq!(order, vec![B, C, D], "{mode:?}");
        }
    }

    #[test]
    fn the_opportunistic_fix_can_strand_a_waiter_on_a_counting_semaphore() {
        // Two up()s before the first woken waiter runs both wake that same waiter (it is not
        // dequeued), so the second waiter sleeps on while a unit is free - the kind of missed
        // wakeup the revert (00b41ec2611d) names.
        let mut s = SleepLock::semaphore(2, LockMode::Opportunistic);
        s.lock(A, false, false);
        s.lock(B, false, false);
        s.lock(C, false, false);
        s.lock(D, false, false);
        assert_eq!(s.unlock(A), Some(C));
        assert_eq!(s.unlock(B), Some(C), "the same waiter again");
        assert_eq!(s.lock(C, true, false), Attempt::Acquired);
        let asleep = |t: TaskId| t == D;
        assert!(s.stranded(asleep), "D sleeps while a unit is free");
        // The hand-off semaphore cannot do this: each up() dequeues a different waiter.
        let mut h = SleepLock::semaphore(2, LockMode::Handoff);
        for t in [A, B, C, D] {
            h.lock(t, false, false);
        }
        assert_eq!(h.unlock(A), Some(C));
        assert_eq!(h.unlock(B), Some(D));
        assert!(!h.stranded(|_| true));
    }

    #[test]
    fn mutex_has_no_handoff_and_spins_only_while_the_owner_runs() {
        let mut m = SleepLock::mutex(true);
        assert_eq!(m.lock(A, false, true), Attempt::Acquired);
        assert_eq!(m.owner, Some(A));
        assert_eq!(m.lock(B, false, true), Attempt::Spin, "owner running: spin");
        assert_eq!(
            m.lock(B, true, false),
            Attempt::Sleep,
            "owner not running: queue and sleep"
        );
        assert_eq!(m.unlock(A), Some(B));
        assert_eq!(m.owner, None);
        assert_eq!(
            m.lock(C, false, false),
            Attempt::Acquired,
            "a running task may steal"
        );
        assert_eq!(m.counters.steals, 1);
        let mut plain = SleepLock::mutex(false);
        plain.lock(A, false, true);
        assert_eq!(
            plain.lock(B, false, true),
            Attempt::Sleep,
            "no spinning unless enabled"
        );
    }
}
