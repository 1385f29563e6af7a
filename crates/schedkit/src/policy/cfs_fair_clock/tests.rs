//! 2.6.23's fair_clock / wait_runtime mechanisms against hand-computed cases.

use super::*;
use crate::policy::testkit::{ClassFixture, MS};

type Fx = ClassFixture<CfsFairClock>;

impl ClassFixture<CfsFairClock> {
    fn new() -> Fx {
        Fx::with(CfsFairClock::v2_6_23(1))
    }
    /// Runs the current task for `ns` and delivers the tick; whether it asks to reschedule.
    fn tick_after(&mut self, ns: u64) -> bool {
        self.run_for(ns)
    }
    fn se(&self, t: TaskId) -> &FairClockTask {
        &self.tasks[t].data
    }
}

#[test]
fn tunables_of_2_6_23() {
    let c = CfsFairClock::v2_6_23(1);
    assert_eq!(
        (
            c.latency,
            c.min_granularity,
            c.wakeup_granularity,
            c.runtime_limit
        ),
        (20 * MS, 2 * MS, MS, 20 * MS)
    );
    assert_eq!(c.batch_wakeup_granularity, 25 * MS);
    // Two CPUs: factor 1 + ilog2(2) = 2; the limit follows the latency.
    let c2 = CfsFairClock::v2_6_23(2);
    assert_eq!(
        (
            c2.latency,
            c2.min_granularity,
            c2.wakeup_granularity,
            c2.runtime_limit
        ),
        (40 * MS, 4 * MS, 2 * MS, 40 * MS)
    );
    // 64 CPUs: factor 7, latency capped at 100 ms.
    assert_eq!(CfsFairClock::v2_6_23(64).latency, 100 * MS);
    // sched_granularity: 20/2 - 20/4 = 5 ms for two tasks; 20/8 - 20/64 = 2.1875 ms;
    // 20/10 - 20/100 = 1.8 ms, raised to min_granularity.
    assert_eq!(c.sched_granularity(2), 5 * MS);
    assert_eq!(c.sched_granularity(8), 2_187_500);
    assert_eq!(c.sched_granularity(10), 2 * MS);
    assert_eq!(c.sched_granularity(1), 20 * MS);
}

#[test]
fn niced_granularity_and_key_scale_by_weight() {
    let nice1 = LoadWeight::of_nice(1);
    let nice_m1 = LoadWeight::of_nice(-1);
    // 820 * 5 ms >> 10; 5 ms * 3363326 >> 22.
    assert_eq!(CfsFairClock::niced_granularity(&nice1, 5 * MS), 4_003_906);
    assert_eq!(CfsFairClock::niced_granularity(&nice_m1, 5 * MS), 4_009_397);
    assert_eq!(
        CfsFairClock::niced_granularity(&LoadWeight::of_nice(0), 5 * MS),
        5 * MS
    );
    // A nice-1 task owing -1 ms sits 1 ms * 5237765 >> 22 right of the fair clock.
    let se = FairClockTask {
        load: nice1,
        wait_runtime: -(MS as i64),
        ..FairClockTask::default()
    };
    assert_eq!(CfsFairClock::key_of(100 * MS, &se), 100 * MS + 1_248_780);
    let se0 = FairClockTask {
        load: LoadWeight::of_nice(0),
        wait_runtime: 3 * MS as i64,
        ..FairClockTask::default()
    };
    assert_eq!(CfsFairClock::key_of(100 * MS, &se0), 97 * MS);
}

/// Two nice-0 loops on one CPU, ticks every 1 ms. Each ms the runner advances the fair
/// clock by 0.5 ms (1 ms * 1024 / 2048) and loses 0.5 ms of wait_runtime (entitled to half);
/// its key (fair_clock - wait_runtime) grows 1 ms per ms while the waiter's stays at 0. With
/// two tasks the tick granularity is 20/2 - 20/4 = 5 ms, so the lead must exceed 5 ms: the
/// runner is preempted at the 6th tick; the waiter is then credited the 3 ms the fair clock
/// moved while it waited.
#[test]
fn wait_runtime_and_fair_clock_after_a_known_sequence() {
    let mut f = Fx::new();
    let a = f.spawn(0);
    let b = f.spawn(0);
    assert_eq!((f.se(a).fair_key, f.se(b).fair_key), (0, 0));
    assert_eq!(f.pick(), Some(a));
    for ms in 1..=5 {
        assert!(!f.tick_after(MS), "preempted after {ms} ms");
        assert_eq!(f.rq.class.fair_clock, ms * MS / 2);
        assert_eq!(f.se(a).wait_runtime, -((ms * MS / 2) as i64));
        assert_eq!(f.se(a).fair_key, ms * MS);
    }
    assert!(f.tick_after(MS), "a 6 ms lead exceeds the 5 ms granularity");
    assert_eq!(f.rq.class.fair_clock, 3 * MS);
    assert_eq!(f.se(a).wait_runtime, -3 * MS as i64);
    assert_eq!(f.pick(), Some(b));
    assert_eq!(f.se(b).wait_runtime, 3 * MS as i64, "credited its wait");
    // Sum of wait_runtime is conserved between the two (what one lost the other gained).
    assert_eq!(f.se(a).wait_runtime + f.se(b).wait_runtime, 0);
}

/// Once the runner has had its ideal runtime (max(latency/nr, min_gran) = 10 ms for two),
/// the granularity drops to 0 and any lead preempts.
#[test]
fn granularity_vanishes_after_the_ideal_runtime() {
    let mut f = Fx::new();
    let a = f.spawn(0);
    let _b = f.spawn(0);
    assert_eq!(f.pick(), Some(a));
    // Keep b's key far right so the lead test fails until the ideal runtime is used up.
    f.tasks[_b].data.fair_key = 1_000 * MS;
    let (mut c, rq, _s) = f.ctx();
    let curr = c.tasks[a].data.clone();
    let mut lead = c.tasks[_b].data.clone();
    lead.fair_key = curr.fair_key.wrapping_sub(1);
    let cls = CfsFairClock::v2_6_23(1);
    assert!(!cls.should_preempt(&rq.class, &curr, &lead, 5 * MS));
    let mut ran = curr.clone();
    ran.sum_exec = ran.prev_sum_exec + 10 * MS + 1;
    assert!(cls.should_preempt(&rq.class, &ran, &lead, 5 * MS));
    let _ = &mut c;
}

/// Two nice-0 tasks: `s` runs first and goes to sleep with wait_runtime 0 at fair clock 0,
/// then `a` runs alone 30 ms (load 1024: the fair clock moves 1:1, a's wait_runtime stays).
/// Returns the fixture, `a` and `s` (asleep, not yet woken).
fn sleeper_after_30ms_alone() -> (Fx, TaskId, TaskId) {
    let mut f = Fx::new();
    let a = f.spawn(0);
    let s = f.spawn(0);
    f.tasks[s].data.fair_key = 0;
    f.tasks[a].data.fair_key = 1;
    f.rq.class.timeline = RbTree::default();
    let (mut c, rq, _) = f.ctx();
    rq.class.timeline.insert(&mut c.tasks, s, c.ops);
    rq.class.timeline.insert(&mut c.tasks, a, c.ops);
    assert_eq!(f.pick(), Some(s));
    f.sleep_curr();
    assert_eq!(f.se(s).sleep_start_fair, 0);
    assert_eq!(f.pick(), Some(a));
    for _ in 0..30 {
        f.tick_after(MS);
    }
    assert_eq!(f.rq.class.fair_clock, 30 * MS);
    assert_eq!(f.se(a).wait_runtime, 0);
    (f, a, s)
}

/// A sleeper is credited the fair time it slept, at most 2 * limit and within +limit, and
/// the credit given is tracked in sleeper_bonus; runners pay it back from delta_mine.
#[test]
fn sleeper_credit_and_bonus_payback() {
    let (mut f, a, s) = sleeper_after_30ms_alone();
    // s slept 30 ms of fair time: credit min(40, 30) = 30 ms, clamped to the 20 ms limit.
    assert!(f.wake(s), "a sleeper 20 ms ahead preempts");
    assert_eq!(f.se(s).wait_runtime, 20 * MS as i64);
    assert_eq!(f.rq.class.sleeper_bonus, 20 * MS);
    assert_eq!(f.se(s).fair_key, 10 * MS);
    // a keeps running 1 ms with s queued: entitled to 0.5 ms, all of which goes to paying
    // back the bonus, so a loses the full 1 ms of wait_runtime.
    f.tick_after(MS);
    assert_eq!(f.rq.class.sleeper_bonus, 20 * MS - MS / 2);
    assert_eq!(f.se(a).wait_runtime, -(MS as i64));
}

/// While more than `runtime_limit` of bonus is owed to sleepers, a waking task gets none
/// (`__enqueue_sleeper`'s "too much bonus 'in flight'" test), and its sleep start is reset.
#[test]
fn no_sleeper_credit_while_the_bonus_in_flight_exceeds_the_limit() {
    let (mut f, _, s) = sleeper_after_30ms_alone();
    let limit = f.s.class.runtime_limit;
    f.rq.class.sleeper_bonus = limit + 1;
    f.wake(s);
    assert_eq!(f.se(s).wait_runtime, 0, "no credit");
    assert_eq!(f.rq.class.sleeper_bonus, limit + 1);
    assert_eq!(f.se(s).sleep_start_fair, 0);
}

/// task_new_fair: the child's key is the parent's minus its granularity minus 1 (it runs
/// first), and START_DEBIT starts it at -gran/2.
#[test]
fn fork_runs_the_child_first_with_start_debit() {
    let mut f = Fx::new();
    let p = f.spawn(0);
    assert_eq!(f.pick(), Some(p));
    for _ in 0..4 {
        f.tick_after(MS);
    }
    let pkey = f.se(p).fair_key;
    let child = f.spawn_with(0, Some(p));
    // One task on the runqueue at the fork: sched_granularity(1) = latency = 20 ms.
    assert_eq!(pkey, 4 * MS, "alone: the fair clock runs at wall speed");
    assert_eq!(f.se(child).fair_key, pkey.wrapping_sub(20 * MS + 1));
    assert_eq!(f.se(child).wait_runtime, -10 * MS as i64);
    let (mut c, rq, s) = f.ctx();
    assert!(s.class.check_preempt_wakeup(&mut c, rq, 0, child, false));
}

/// A change of nice level starts wait_runtime over (set_load_weight).
#[test]
fn renice_resets_wait_runtime() {
    let mut f = Fx::new();
    let a = f.spawn(0);
    let b = f.spawn(0);
    assert_eq!(f.pick(), Some(a));
    f.tick_after(3 * MS);
    {
        let (mut c, rq, s) = f.ctx();
        s.dequeue(&mut c, rq, 0, b, DequeueKind::Save);
        // Dequeued while waiting: credited the 1.5 ms the fair clock moved.
        assert_eq!(c.tasks[b].data.wait_runtime, 3 * MS as i64 / 2);
        c.tasks[b].nice = 5;
        s.enqueue(&mut c, rq, 0, b, EnqueueKind::Restore);
    }
    assert_eq!(f.se(b).wait_runtime, 0);
    assert_eq!(f.se(b).load.weight, 335);
}
