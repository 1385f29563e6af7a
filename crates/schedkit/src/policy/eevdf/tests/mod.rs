//! EEVDF's mechanisms against hand-computed cases (one CPU, base slice 0.75 ms, HZ=1000),
//! and the O(log n) pick against a brute-force reading of its definition; the 6.18 cases are
//! in `v6_18`.

use super::*;
use crate::policy::testkit::{ClassFixture, MS};
use crate::task::SchedPolicy;
use proptest::prelude::*;

const US: u64 = 1_000;

type Fx = ClassFixture<Eevdf>;

impl ClassFixture<Eevdf> {
    fn new() -> Fx {
        Fx::with(Eevdf::v6_6(1))
    }
    fn v(&self, t: TaskId) -> u64 {
        self.tasks[t].data.vruntime
    }
    fn d(&self, t: TaskId) -> u64 {
        self.tasks[t].data.deadline
    }
    fn avg_v(&mut self) -> u64 {
        let view = self.tasks.view();
        Eevdf::avg_vruntime(&view, &self.rq.class)
    }
}

#[test]
fn the_base_slice_scales_with_log_cpus() {
    // 0.75 ms * (1 + ilog2(ncpus)).
    let slice = |n| Eevdf::v6_6(n).base_slice;
    assert_eq!(slice(1), 750 * US);
    assert_eq!(slice(2), 1_500 * US);
    assert_eq!(slice(3), 1_500 * US, "ilog2 rounds down");
    assert_eq!(slice(4), 2_250 * US);
    assert_eq!(slice(8), 3 * MS);
}

#[test]
fn a_new_task_starts_at_v_with_half_a_slice() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    // Empty runqueue: V = min_vruntime = 0; deadline = vslice / 2.
    assert_eq!((fx.v(a), fx.d(a)), (0, 375 * US));
    assert_eq!(fx.pick(), Some(a));
    // 1 ms run: vruntime 1 ms, past the deadline, so update_deadline gives a full slice.
    // Alone on the runqueue it does not ask to reschedule.
    assert!(!fx.run_for(MS));
    assert_eq!((fx.v(a), fx.d(a)), (MS, MS + 750 * US));
    assert_eq!(fx.rq.class.min_vruntime, MS);
    // The newcomer lands at V = 1 ms with deadline 1.375 ms, earlier than the runner's 1.75
    // ms, and the runner has left the slice it was picked with (deadline 0.375 ms): preempt.
    let b = fx.tasks.spawn();
    {
        let (mut c, rq, s) = fx.ctx();
        s.class.task_fork(&mut c, rq, 0, None, b);
        s.enqueue(&mut c, rq, 0, b, EnqueueKind::New);
        assert!(s.class.check_preempt_wakeup(&mut c, rq, 0, b, false));
    }
    assert_eq!((fx.v(b), fx.d(b)), (MS, MS + 375 * US));
    assert_eq!(fx.pick(), Some(b));
}

#[test]
fn run_to_parity_keeps_the_slice_a_task_was_picked_with() {
    for run_to_parity in [true, false] {
        let mut fx = Fx::with(Eevdf {
            run_to_parity,
            ..Eevdf::v6_6(1)
        });
        let a = fx.spawn(0);
        fx.pick();
        fx.run_for(MS);
        let b = fx.spawn(0);
        assert_eq!(fx.pick(), Some(b), "as in the case above");
        // c arrives at V = 1 ms with deadline 1.375 ms: the same as b's, not earlier. b's
        // deadline is the one it was picked with, so RUN_TO_PARITY keeps b; without it the
        // tie goes to the queued task (the kernel prefers curr only if strictly earlier).
        let c = fx.spawn(0);
        assert_eq!(fx.d(c), fx.d(b));
        let (mut cx, rq, s) = fx.ctx();
        let preempt = s.class.check_preempt_wakeup(&mut cx, rq, 0, c, false);
        assert_eq!(preempt, !run_to_parity, "run_to_parity={run_to_parity}");
        let _ = a;
    }
}

#[test]
fn lag_survives_a_sleep_and_placement_compensates_for_the_newcomer() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    let b = fx.spawn(0);
    // Both at v = 0, deadline 0.375 ms; equal deadlines keep insertion order.
    assert_eq!(fx.pick(), Some(a));
    assert!(fx.run_for(2 * MS), "past its deadline with b waiting");
    assert_eq!((fx.v(a), fx.d(a)), (2 * MS, 2 * MS + 750 * US));
    // V = (0 + 2 ms) / 2 = 1 ms; a's lag is V - v = -1 ms (within 2 * slice = 1.5 ms).
    assert_eq!(fx.avg_v(), MS);
    fx.sleep(a);
    assert_eq!(fx.tasks[a].data.vlag, -(MS as i64));
    assert_eq!(fx.pick(), Some(b));
    assert!(!fx.run_for(MS), "alone");
    assert_eq!(fx.v(b), MS);
    // Wake a beside b (V = 1 ms, W = 1024): v = V - vlag * (W + w) / W = 1 + 2 = 3 ms, so
    // that once a is counted V becomes (1 + 3) / 2 = 2 ms and a's lag is -1 ms again.
    let preempts = fx.wake(a);
    assert_eq!(fx.v(a), 3 * MS);
    assert_eq!(fx.d(a), 3 * MS + 750 * US);
    assert_eq!(fx.avg_v(), 2 * MS);
    assert_eq!(fx.avg_v() as i64 - fx.v(a) as i64, -(MS as i64));
    assert!(!preempts, "a is not eligible: it owes 1 ms of virtual time");
    assert_eq!(fx.pick(), Some(b));
}

#[test]
fn lag_is_clamped_to_two_slices() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    let _b = fx.spawn(0);
    assert_eq!(fx.pick(), Some(a));
    fx.run_for(5 * MS);
    // V = 2.5 ms, lag -2.5 ms, limit calc_delta_fair(max(1.5 ms, 1 ms tick)) = 1.5 ms.
    assert_eq!(fx.avg_v(), 2_500 * US);
    fx.sleep(a);
    assert_eq!(fx.tasks[a].data.vlag, -1_500 * US as i64);
}

#[test]
fn vruntime_and_virtual_deadlines_scale_by_weight() {
    let mut fx = Fx::new();
    let a = fx.spawn(5);
    // A nice-5 task (weight 335, wmult 12820798): vslice = SRR(750 000 * 1024 * 12820798, 32)
    // = 2 292 537, half of it to the first deadline.
    assert_eq!(fx.d(a), 2_292_537 / 2);
    fx.pick();
    fx.run_for(MS);
    // 1 ms of nice-5 running is SRR(1e6 * 1024 * 12820798, 32) = 3 056 716 of vruntime.
    assert_eq!(fx.v(a), 3_056_716);
    assert_eq!(fx.d(a), 3_056_716 + 2_292_537);
}

#[test]
fn v_is_the_load_weighted_mean() {
    let mut fx = Fx::new();
    let a = fx.spawn(0); // 1024
    let b = fx.spawn(5); // 335
    fx.tasks[a].data.picked_deadline = None;
    // a runs first (deadline 0.375 ms < 1.146 ms) for 3 ms: v = 3 ms; b still at 0.
    assert_eq!(fx.pick(), Some(a));
    fx.run_for(3 * MS);
    // V = 3 ms * 1024 / 1359 = 2 260 485.6…, floored.
    assert_eq!(fx.avg_v(), 3 * MS * 1024 / 1359);
    let _ = b;
}

#[test]
fn a_nice_change_keeps_the_weighted_lag() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    let _b = fx.spawn(0);
    assert_eq!(fx.pick(), Some(a));
    fx.run_for(2 * MS);
    // As in the sleep case: V = 1 ms, a's lag -1 ms at weight 1024, i.e. w * lag = -1024e6.
    let (mut c, rq, s) = fx.ctx();
    s.dequeue(&mut c, rq, 0, a, DequeueKind::Save);
    assert_eq!(c.tasks[a].data.vlag, -(MS as i64));
    c.tasks[a].nice = 5;
    s.enqueue(&mut c, rq, 0, a, EnqueueKind::Restore);
    // reweight_entity: vlag = -1e6 * 1024 / 335 = -3 056 716 (truncated). Placement beside
    // b (V = 0, W = 1024): v = 0 + 3 056 716 * 1359 / 1024 = 4 056 715.
    assert_eq!(fx.tasks[a].data.vlag, -3_056_716);
    assert_eq!(fx.v(a), 4_056_715);
    // Counted in V again, a owes what it owed before the change: w * (V - v) = -1024e6.
    let v = fx.avg_v() as i64;
    let owed = 335 * (v - fx.v(a) as i64);
    assert!((owed + 1_024_000_000).abs() < 1_000_000, "w * lag = {owed}");
}

#[test]
fn yield_moves_the_deadline_one_slice_later() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    let _b = fx.spawn(0);
    assert_eq!(fx.pick(), Some(a));
    let d = fx.d(a);
    let (mut c, rq, s) = fx.ctx();
    s.class.yield_task(&mut c, rq, 0, a);
    assert_eq!(fx.d(a), d + 750 * US);
}

#[test]
fn weights_share_the_cpu_in_proportion() {
    // Two CPU hogs, nice 0 and nice 5, for 2 s of 1 ms ticks: the shares follow the weights
    // 1024 : 335 within a slice or two.
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    let b = fx.spawn(5);
    fx.pick();
    for _ in 0..2000 {
        if fx.run_for(MS) {
            fx.pick();
        }
    }
    let (ea, eb) = (
        fx.tasks[a].data.sum_exec as f64,
        fx.tasks[b].data.sum_exec as f64,
    );
    let want = 1024.0 / 335.0;
    assert!(
        (ea / eb - want).abs() < 0.05 * want,
        "nice 0 : nice 5 = {:.3}, expected {want:.3}",
        ea / eb
    );
    // Lag stays bounded: neither is more than a few slices of virtual time from V.
    let v = fx.avg_v() as i64;
    for t in [a, b] {
        assert!((v - fx.v(t) as i64).abs() < 10 * MS as i64);
    }
}

/// The definition, read literally: among the queued tasks and the running one, those with
/// `v <= V` (exactly, in rationals), the earliest deadline; the running task only when
/// strictly earlier than the best queued one.
fn brute_force_pick(fx: &mut Fx) -> Option<TaskId> {
    let rq = &fx.rq.class;
    let mut all: Vec<TaskId> = Vec::new();
    let view = fx.tasks.view();
    fx.s.class
        .for_each_queued(&fx.rq, &view, &mut |t| all.push(t));
    // vruntimes are compared as the kernel does, as signed distances (lag may place a task
    // left of min_vruntime, even below zero).
    let rel = |v: u64| v.wrapping_sub(rq.min_vruntime) as i64 as i128;
    let (sum, load): (i128, i128) = all.iter().fold((0, 0), |(s, l), &t| {
        let se = &view[t].data;
        (
            s + rel(se.vruntime) * se.load.weight as i128,
            l + se.load.weight as i128,
        )
    });
    let eligible = |t: TaskId| rel(view[t].data.vruntime) * load <= sum;
    let curr = rq.curr.filter(|&c| view[c].data.on_rq && eligible(c));
    let mut best: Option<TaskId> = None;
    let mut x = rq.tree.first();
    while let Some(t) = x {
        if eligible(t) && best.is_none() {
            best = Some(t);
        }
        x = rq.tree.next(&view, t);
    }
    match (best, curr) {
        (Some(b), Some(c))
            if (view[c].data.deadline.wrapping_sub(view[b].data.deadline) as i64) < 0 =>
        {
            Some(c)
        }
        (None, c) => c,
        (b, _) => b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Random spawns, runs, sleeps and wakeups of tasks of mixed nice: the heap walk picks
    /// what the definition picks, and V stays within the queued vruntimes.
    #[test]
    fn the_tree_walk_picks_what_the_definition_picks(
        ops in proptest::collection::vec((0u8..4, 0u64..3000, -5i32..10), 1..120)
    ) {
        let mut fx = Fx::with(Eevdf { run_to_parity: false, ..Eevdf::v6_6(1) });
        let mut asleep: Vec<TaskId> = Vec::new();
        for (op, x, nice) in ops {
            match op {
                0 => { fx.spawn(nice); }
                1 if fx.rq.curr().is_some() => {
                    fx.now += x * US;
                    let curr = fx.rq.curr().unwrap();
                    let (mut c, rq, s) = fx.ctx();
                    s.task_tick(&mut c, rq, 0, curr);
                }
                2 if fx.rq.curr().is_some() => {
                    let curr = fx.rq.curr().unwrap();
                    fx.sleep(curr);
                    asleep.push(curr);
                }
                3 if !asleep.is_empty() => {
                    let t = asleep.remove(x as usize % asleep.len());
                    fx.wake(t);
                }
                _ => {}
            }
            // Whatever the pick is about to choose, the definition chooses too.
            let want = brute_force_pick(&mut fx);
            let got = {
                let view = fx.tasks.view();
                fx.s.class.pick_eevdf(&view, &fx.rq.class)
            };
            if fx.rq.class.nr_queued > 1 {
                prop_assert_eq!(got, want);
            }
            prop_assert_eq!(got.is_some(), fx.rq.class.nr_queued > 0, "a queued task is never lost");
            fx.pick();
        }
    }
}

#[test]
fn sched_idle_weighs_3_is_preempted_by_normal_wakees_and_never_preempts() {
    let mut fx = Fx::new();
    let idle = fx.tasks.spawn();
    fx.tasks[idle].policy = SchedPolicy::Idle;
    {
        let (mut c, rq, s) = fx.ctx();
        s.class.task_fork(&mut c, rq, 0, None, idle);
        s.enqueue(&mut c, rq, 0, idle, EnqueueKind::New);
    }
    assert_eq!(fx.tasks[idle].data.load.weight, 3, "WEIGHT_IDLEPRIO");
    assert_eq!(fx.pick(), Some(idle));
    fx.run_for(100 * US);
    // The idle runner is still inside the slice it was picked with (its deadline is half
    // of 750 us * 1024 / 3 away), so RUN_TO_PARITY alone would keep it: only the SCHED_IDLE
    // rule preempts it.
    assert_eq!(fx.tasks[idle].data.picked_deadline, Some(fx.d(idle)));
    let normal = fx.spawn(0);
    let (mut c, rq, s) = fx.ctx();
    assert_eq!(s.class.pick_eevdf(&c.tasks, &rq.class), Some(idle));
    assert!(s.class.check_preempt_wakeup(&mut c, rq, 0, normal, false));
    // The other way round: an idle (or batch) wakee never preempts a normal runner, though
    // the batch one is eligible with the earlier deadline (the runner left its first slice).
    let mut fx = Fx::new();
    let runner = fx.spawn(0);
    assert_eq!(fx.pick(), Some(runner));
    fx.run_for(5 * MS);
    for policy in [SchedPolicy::Idle, SchedPolicy::Batch] {
        let t = fx.tasks.spawn();
        fx.tasks[t].policy = policy;
        let (mut c, rq, s) = fx.ctx();
        s.class.task_fork(&mut c, rq, 0, None, t);
        s.enqueue(&mut c, rq, 0, t, EnqueueKind::New);
        assert!(
            !s.class.check_preempt_wakeup(&mut c, rq, 0, t, false),
            "{policy:?}"
        );
        if policy == SchedPolicy::Batch {
            assert_eq!(
                s.class.pick_eevdf(&c.tasks, &rq.class),
                Some(t),
                "the pick wants it"
            );
        }
    }
}

mod v6_18;
