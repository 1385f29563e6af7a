//! `eevdf:era=6.18` on one CPU (base slice 0.70 ms, HZ=1000: a 1 ms tick), against cases worked
//! by hand from fair.c of v6.18 (line numbers of that file). All tasks are nice 0 (weight 1024),
//! so virtual time is real time and vslice = slice; `V` is the plain mean of the queued
//! vruntimes, the running task's included.
//! (The 6.6 cases are in `tests/mod.rs`; the eras are split to keep each file readable in
//! one sitting.)

use super::*;

impl ClassFixture<Eevdf> {
    /// 6.18's fair class alone: the fair server (the deadline class's, pinned in
    /// `policy/deadline/server/tests.rs`) is left out, since the fixture's clock starts at
    /// 1 s, exactly its boot deadline, where the CBS wakeup rule leaves it no runtime and its
    /// timer fires at the first tick.
    fn new_618() -> Fx {
        Fx::with(Eevdf {
            fair_server: None,
            ..Eevdf::v6_18(1)
        })
    }
    fn vprot(&self, t: TaskId) -> u64 {
        self.tasks[t].data.vprot
    }
    /// A nice-0 task asking for `slice_ns` through `sched_attr.sched_runtime`, queued.
    fn spawn_sliced(&mut self, slice_ns: u64) -> TaskId {
        let t = self.tasks.spawn();
        self.tasks[t].slice_ns = std::num::NonZeroU64::new(slice_ns);
        let (mut c, rq, s) = self.ctx();
        s.class.task_fork(&mut c, rq, 0, None, t);
        s.enqueue(&mut c, rq, 0, t, EnqueueKind::New);
        c.tasks[t].state = crate::task::TaskState::Queued;
        t
    }
    /// `ttwu_runnable` of `t`: whether the class still held it (delayed) and requeued it.
    fn requeue(&mut self, t: TaskId) -> bool {
        let (mut c, rq, s) = self.ctx();
        let r = s.class.requeue_delayed(&mut c, rq, 0, t);
        if r {
            c.tasks[t].state = crate::task::TaskState::Queued;
        }
        r
    }
    /// `check_preempt_wakeup_fair` for `t`, already queued.
    fn preempts(&mut self, t: TaskId) -> bool {
        let (mut c, rq, s) = self.ctx();
        s.class.check_preempt_wakeup(&mut c, rq, 0, t, false)
    }
    /// `__pick_eevdf(cfs_rq, protect)` as it stands.
    fn pick_eevdf(&mut self, protect: bool) -> Option<TaskId> {
        let view = self.tasks.view();
        self.s
            .class
            .pick_eevdf_protect(&view, &self.rq.class, protect)
    }
}

#[test]
fn v6_18_base_slice_is_0_70_ms_times_the_log_factor_capped_at_8_cpus() {
    // sysctl_sched_base_slice = 700 000 (L79) × (1 + ilog2(min(ncpus, 8))) (L194-206).
    let slice = |n| Eevdf::v6_18(n).base_slice;
    assert_eq!(slice(1), 700 * US);
    assert_eq!(slice(2), 1_400 * US);
    assert_eq!(slice(3), 1_400 * US, "ilog2 rounds down");
    assert_eq!(slice(4), 2_100 * US);
    assert_eq!(slice(7), 2_100 * US);
    assert_eq!(slice(8), 2_800 * US);
    assert_eq!(slice(16), 2_800 * US, "min(ncpus, 8): 16 CPUs scale as 8");
    assert_eq!(slice(64), 2_800 * US);
    // normalized_sysctl_sched_base_slice, set_protect_slice's minimum quantum, is unscaled.
    assert_eq!(Eevdf::v6_18(16).normalized_base_slice, 700 * US);
}

#[test]
fn v6_18_a_custom_slice_is_clamped_to_0_1_to_100_ms_and_6_6_ignores_it() {
    // __setparam_fair: slice = clamp(sched_runtime, NSEC_PER_MSEC/10, NSEC_PER_MSEC*100).
    let mut fx = Fx::new_618();
    for (asked, got) in [
        (10 * US, 100 * US),
        (300 * US, 300 * US),
        (1_000 * MS, 100 * MS),
    ] {
        let t = fx.spawn_sliced(asked);
        assert!(fx.tasks[t].data.custom_slice);
        assert_eq!(fx.tasks[t].data.slice, got, "asked {asked}");
    }
    let mut fx = Fx::new();
    let t = fx.spawn_sliced(300 * US);
    assert!(!fx.tasks[t].data.custom_slice);
    assert_eq!(
        fx.tasks[t].data.slice,
        750 * US,
        "6.6 has no per-task slice"
    );
}

/// a and b forked side by side, a run 2 ms and put to sleep while not eligible (the state
/// every DELAY_DEQUEUE case below starts from), then b picked. Returns (a, b).
fn a_delayed_beside_b(fx: &mut Fx) -> (TaskId, TaskId) {
    let a = fx.spawn(0);
    let b = fx.spawn(0);
    // Both at V = 0 with half a slice to their deadlines (PLACE_DEADLINE_INITIAL).
    assert_eq!((fx.v(a), fx.d(a)), (0, 350 * US));
    assert_eq!((fx.v(b), fx.d(b)), (0, 350 * US));
    assert_eq!(fx.pick(), Some(a));
    // 2 ms: past the deadline (update_deadline: d = 2 ms + 0.7 ms), with b waiting.
    assert!(fx.run_for(2 * MS));
    assert_eq!((fx.v(a), fx.d(a)), (2 * MS, 2_700 * US));
    // V = (2 ms + 0) / 2 = 1 ms < 2 ms: a's lag is -1 ms, it is not eligible.
    assert_eq!(fx.avg_v(), MS);
    assert_eq!(fx.rq.nr_running, 2);
    fx.sleep(a);
    // dequeue_entity (L5394-5397): DELAY_DEQUEUE, a sleep, not eligible: set_delayed, stays.
    let se = &fx.tasks[a].data;
    assert!(se.on_rq && se.sched_delayed, "a stays queued, delayed");
    assert_eq!(fx.rq.class.nr_queued, 2, "nr_queued counts it still");
    assert_eq!(fx.rq.class.nr_delayed, 1);
    assert_eq!(fx.rq.nr_running, 1, "the core counts only b as runnable");
    // Still in V: with a gone V would be b's 0.
    assert_eq!(fx.avg_v(), MS);
    // schedule(): put back into the tree, b (deadline 0.35 ms, eligible) is picked.
    assert_eq!(fx.pick(), Some(b));
    assert!(fx.tasks[a].data.sched_delayed);
    assert_eq!(fx.avg_v(), MS, "a's 2 ms still weighs in V");
    (a, b)
}

#[test]
fn v6_18_delay_dequeue_keeps_an_ineligible_sleeper_and_dequeues_an_eligible_one() {
    let mut fx = Fx::new_618();
    let (a, b) = a_delayed_beside_b(&mut fx);
    // b, at 0 against V = 1 ms, is eligible: its sleep dequeues it at once, keeping its lag
    // V - v = +1 ms (within the clamp; not clipped: only a delayed dequeue clips).
    fx.sleep_curr();
    let se = &fx.tasks[b].data;
    assert!(!se.on_rq && !se.sched_delayed);
    assert_eq!(se.vlag, MS as i64);
    assert_eq!(fx.rq.nr_running, 0);
    assert_eq!(fx.rq.class.nr_queued, 1, "a, delayed");
    // pick_task_fair → pick_next_entity (L5514): the only entity is a, delayed: it is
    // dequeued (DEQUEUE_SLEEP | DEQUEUE_DELAYED) and the pick finds nothing: the CPU idles
    // with nothing delayed left on it.
    assert_eq!(fx.pick(), None);
    let se = &fx.tasks[a].data;
    assert!(!se.on_rq && !se.sched_delayed);
    assert_eq!((fx.rq.class.nr_queued, fx.rq.class.nr_delayed), (0, 0));
    assert_eq!(fx.rq.nr_running, 0);
    // Alone, V was its own vruntime: lag 0.
    assert_eq!(se.vlag, 0);
}

#[test]
fn v6_18_a_cpu_run_dry_dequeues_its_delayed_tasks_before_it_balances_new_idle() {
    let mut fx = Fx::new_618();
    let (a, b) = a_delayed_beside_b(&mut fx);
    // b sleeps eligible (0 against V = 1 ms) and leaves: nothing runnable, a still queued.
    fx.sleep_curr();
    assert!(!fx.tasks[b].data.on_rq);
    assert_eq!(fx.rq.nr_running, 0);
    assert_eq!((fx.rq.class.nr_queued, fx.rq.class.nr_delayed), (1, 1));
    // pick_next_task_fair (fair.c of 6.18.35, 9033) balances new-idle only once
    // pick_task_fair (8996) found nothing, and that pick dequeues each delayed entity it
    // picks (pick_next_entity, 5582): before the balance, a leaves as the first test's pick
    // had it leave, alone in V, so with lag 0.
    let (mut c, rq, s) = fx.ctx();
    s.class.drain_before_newidle(&mut c, rq, 0);
    let se = &fx.tasks[a].data;
    assert!(!se.on_rq && !se.sched_delayed);
    assert_eq!(se.vlag, 0);
    assert_eq!((fx.rq.class.nr_queued, fx.rq.class.nr_delayed), (0, 0));
    assert_eq!(fx.rq.nr_running, 0);
    assert_eq!(fx.pick(), None, "nothing left for the pick");
}

#[test]
fn v6_18_a_delayed_task_picked_is_dequeued_with_its_positive_lag_clipped() {
    let mut fx = Fx::new_618();
    let (a, b) = a_delayed_beside_b(&mut fx);
    // b runs 3 ms: v = 3 ms, d = 3.7 ms; V = (2 + 3) / 2 = 2.5 ms. a (v 2 ms, d 2.7 ms) is
    // now eligible with the earliest deadline: the pick chooses it, finds it delayed and
    // dequeues it; its lag V - v = +0.5 ms is clipped to 0 (DELAY_ZERO,
    // finish_delayed_dequeue_entity); the pick repeats and finds b.
    assert!(fx.run_for(3 * MS));
    assert_eq!((fx.v(b), fx.d(b)), (3 * MS, 3_700 * US));
    assert_eq!(fx.avg_v(), 2_500 * US);
    assert_eq!(fx.pick(), Some(b));
    let se = &fx.tasks[a].data;
    assert!(!se.on_rq && !se.sched_delayed);
    assert_eq!(se.vlag, 0, "+0.5 ms clipped by DELAY_ZERO");
    assert_eq!((fx.rq.class.nr_queued, fx.rq.class.nr_delayed), (1, 0));
    assert_eq!(fx.rq.nr_running, 1);
    assert_eq!(fx.avg_v(), 3 * MS, "V is b's alone");
}

#[test]
fn v6_18_a_delayed_task_woken_keeps_its_place_and_negative_lag() {
    let mut fx = Fx::new_618();
    let (a, b) = a_delayed_beside_b(&mut fx);
    // b runs 1.9 ms (a tick charges it): v = 1.9 ms, V = (2 + 1.9) / 2 = 1.95 ms. Then 0.2
    // ms more that no tick has charged yet.
    fx.run_for(1_900 * US);
    assert_eq!(fx.v(b), 1_900 * US);
    fx.now += 200 * US;
    // requeue_delayed_entity (L6884): update_entity_lag with V as it stands, the running
    // task's vruntime as last charged (nothing calls update_curr on this path): vlag =
    // 1.95 - 2 = -50 us <= 0, so a stays where it is, vruntime and deadline untouched.
    // (Charging b's 0.2 ms first would make V 2.05 ms, the lag +50 us, and re-place a.)
    assert!(fx.requeue(a));
    let se = &fx.tasks[a].data;
    assert!(se.on_rq && !se.sched_delayed);
    assert_eq!((se.vruntime, se.deadline), (2 * MS, 2_700 * US));
    assert_eq!(se.vlag, -50 * US as i64);
    assert_eq!((fx.rq.class.nr_queued, fx.rq.class.nr_delayed), (2, 0));
    assert_eq!(fx.rq.nr_running, 2, "runnable again");
    // The tick at 1.9 ms found b past its protection (vprot = its pick-time deadline, 0.35
    // ms) with a still queued, and asked to reschedule (TIF_NEED_RESCHED): the preemption
    // check returns at once ("We can come here with TIF_NEED_RESCHED already set"), charging
    // nothing, and the CPU is rescheduled.
    assert!(fx.rq.class.need_resched);
    assert!(fx.preempts(a));
    assert_eq!(fx.v(b), 1_900 * US);
    // Not delayed any more: a second wakeup finds nothing to requeue.
    assert!(!fx.requeue(a));
}

#[test]
fn v6_18_a_delayed_task_whose_lag_turned_positive_is_replaced_at_zero_lag() {
    let mut fx = Fx::new_618();
    let (a, b) = a_delayed_beside_b(&mut fx);
    // b runs 3 ms: V = (2 + 3) / 2 = 2.5 ms, a's lag +0.5 ms. DELAY_ZERO: it leaves the
    // tree and is placed with vlag 0 at V of the others (b alone: 3 ms), a fresh slice to
    // its deadline: v = 3 ms, d = 3.7 ms.
    assert!(fx.run_for(3 * MS));
    assert!(fx.requeue(a));
    let se = &fx.tasks[a].data;
    assert!(se.on_rq && !se.sched_delayed);
    assert_eq!(se.vlag, 0);
    assert_eq!((se.vruntime, se.deadline), (3 * MS, 3_700 * US));
    assert_eq!((fx.rq.class.nr_queued, fx.rq.class.nr_delayed), (2, 0));
    assert_eq!(fx.rq.nr_running, 2);
    let _ = b;
}

#[test]
fn v6_18_run_to_parity_protects_up_to_vprot() {
    // Equal slices: vprot is the deadline the task is picked with (set_protect_slice, L892).
    let mut fx = Fx::new_618();
    let a = fx.spawn(0);
    let _b = fx.spawn(0);
    assert_eq!(fx.pick(), Some(a));
    assert_eq!(fx.vprot(a), 350 * US);
    assert_eq!(fx.vprot(a), fx.d(a));
    assert!(!fx.run_for(200 * US), "v 0.2 ms < vprot 0.35 ms");
    assert!(fx.run_for(200 * US), "v 0.4 ms: past the deadline");

    // A shorter slice queued: c asks for 0.2 ms (deadline 0.1 ms, so it runs first).
    let mut fx = Fx::new_618();
    let a = fx.spawn(0);
    let c = fx.spawn_sliced(200 * US);
    assert_eq!((fx.v(c), fx.d(c)), (0, 100 * US));
    assert_eq!(fx.pick(), Some(c));
    // 1 ms: its custom slice survives update_deadline: d = 1 ms + 0.2 ms.
    assert!(fx.run_for(MS));
    assert_eq!((fx.v(c), fx.d(c)), (MS, 1_200 * US));
    // V = 0.5 ms; a (v 0, d 0.35 ms) is picked fresh with c queued: cfs_rq_min_slice = 0.2 ms
    // < a's 0.7 ms, so vprot = min(d, v + 0.2 ms) = min(0.35, 0.2) ms = 0.2 ms.
    assert_eq!(fx.pick(), Some(a));
    assert_eq!(fx.vprot(a), 200 * US);
    assert!(!fx.run_for(100 * US), "v 0.1 ms: protected");
    // schedule() again (a spurious resched): a is picked again (V = 0.55 ms, d 0.35 ms the
    // earliest), which is no fresh pick (put_prev_set_next_task returns when next == prev):
    // vprot stays 0.2 ms. A fresh set_protect_slice would say min(0.35, 0.1 + 0.2) = 0.3 ms.
    assert_eq!(fx.pick(), Some(a));
    assert_eq!(fx.vprot(a), 200 * US);
    // update_curr (L1251): past vprot with c queued, before its deadline: reschedule.
    assert!(fx.run_for(150 * US), "v 0.25 ms > vprot 0.2 ms");
    assert!(fx.v(a) < fx.d(a), "the deadline is not what ended it");
}

/// b, c and a forked (in that order); b runs 3 ms; c is picked and sleeps at once with lag
/// +1 ms; a runs 6 ms; b is picked fresh. Returns (a, b, c) with c asleep.
fn b_protected_with_c_asleep_owed_1_ms(fx: &mut Fx) -> (TaskId, TaskId, TaskId) {
    let b = fx.spawn(0);
    let c = fx.spawn(0);
    let a = fx.spawn(0);
    assert_eq!(fx.pick(), Some(b));
    assert!(fx.run_for(3 * MS));
    // V = (3 + 0 + 0) / 3 = 1 ms; c (deadline 0.35 ms, ahead of a's equal one) is picked and
    // sleeps at once: eligible (0 <= 1 ms), so dequeued with vlag = +1 ms.
    assert_eq!(fx.pick(), Some(c));
    fx.sleep_curr();
    assert!(!fx.tasks[c].data.on_rq);
    assert_eq!(fx.tasks[c].data.vlag, MS as i64);
    assert_eq!(fx.pick(), Some(a));
    assert!(fx.run_for(6 * MS));
    // a: v 6 ms, d 6.7 ms; b: v 3 ms, d 3.7 ms; V = 4.5 ms: b is picked fresh, all slices
    // equal, so vprot = its deadline, 3.7 ms.
    assert_eq!(fx.pick(), Some(b));
    assert_eq!(
        (fx.v(b), fx.d(b), fx.vprot(b)),
        (3 * MS, 3_700 * US, 3_700 * US)
    );
    assert_eq!(fx.avg_v(), 4_500 * US);
    (a, b, c)
}

#[test]
fn v6_18_an_equal_slice_wakee_does_not_preempt_a_protected_runner() {
    let mut fx = Fx::new_618();
    let (_a, b, c) = b_protected_with_c_asleep_owed_1_ms(&mut fx);
    // c wakes: placed at V - vlag * (W + w) / W = 4.5 - 1 * 3/2 = 3 ms, d = 3.7 ms; V then
    // (6 + 3 + 3) / 3 = 4 ms: b and c both eligible, equal deadlines.
    assert!(!fx.wake(c));
    assert_eq!((fx.v(c), fx.d(c)), (3 * MS, 3_700 * US));
    // Without b's protection the pick would be c (curr wins only on a strictly earlier
    // deadline); RUN_TO_PARITY keeps b until vprot.
    assert_eq!(fx.pick_eevdf(false), Some(c));
    assert_eq!(fx.pick_eevdf(true), Some(b));
    // update_protect_slice (if the kernel calls it here) cuts nothing: min slice 0.7 ms.
    assert_eq!(fx.vprot(b), 3_700 * US);
}

#[test]
fn v6_18_preempt_short_lets_a_shorter_slice_through_the_protection_and_cancels_it() {
    for preempt_short in [true, false] {
        let mut fx = Fx::with(Eevdf {
            features: Features {
                preempt_short,
                ..Features::V6_18
            },
            ..Eevdf::v6_18(1)
        });
        let (_a, b, c) = b_protected_with_c_asleep_owed_1_ms(&mut fx);
        // sched_setattr(c, sched_runtime = 0.2 ms) while it sleeps (__setparam_fair).
        fx.tasks[c].data.slice = 200 * US;
        fx.tasks[c].data.custom_slice = true;
        // c wakes at 3 ms as above, its deadline 3 + 0.2 = 3.2 ms, before b's 3.7 ms. Its
        // slice is shorter: __pick_eevdf(cfs_rq, false) ignores b's protection and picks c.
        let preempts = fx.wake(c);
        assert_eq!((fx.v(c), fx.d(c)), (3 * MS, 3_200 * US));
        assert_eq!(fx.pick_eevdf(false), Some(c));
        assert_eq!(preempts, preempt_short, "preempt_short={preempt_short}");
        if preempt_short {
            // cancel_protect_slice(b): vprot = vruntime, so the next update_curr reschedules.
            assert_eq!(fx.vprot(b), fx.v(b));
            assert_eq!(fx.vprot(b), 3 * MS);
        }
    }
}

#[test]
fn v6_18_a_shorter_wakee_that_loses_shortens_the_runners_protection() {
    let mut fx = Fx::new_618();
    let y = fx.spawn(0);
    let a = fx.spawn(0);
    assert_eq!(fx.pick(), Some(y));
    assert!(fx.run_for(2 * MS));
    // V = 1 ms; a (v 0, d 0.35 ms) is picked fresh; slices equal: vprot = 0.35 ms.
    assert_eq!(fx.pick(), Some(a));
    assert_eq!(fx.vprot(a), 350 * US);
    assert!(!fx.run_for(100 * US));
    // c, asking for 0.2 ms, arrives at V = (2 + 0.1) / 2 = 1.05 ms, deadline 1.05 + 0.1 =
    // 1.15 ms. Shorter than a's slice, so a's protection is ignored, but a is eligible
    // (0.1 <= V) with the earlier deadline (0.35 ms): a stays, and update_protect_slice
    // cuts its protection to v + vslice(min slice) = 0.1 + 0.2 = 0.3 ms.
    let c = fx.spawn_sliced(200 * US);
    assert_eq!((fx.v(c), fx.d(c)), (1_050 * US, 1_150 * US));
    assert!(!fx.preempts(c));
    assert_eq!(fx.vprot(a), 300 * US);
    assert!(!fx.run_for(150 * US), "v 0.25 ms: still protected");
    assert!(
        fx.run_for(60 * US),
        "v 0.31 ms: past the shortened protection"
    );
    assert!(fx.v(a) < fx.d(a));
}

#[test]
fn v6_18_place_rel_deadline_keeps_the_relative_deadline_across_a_non_sleep_dequeue() {
    let wakeup = EnqueueKind::Wakeup {
        uninterruptible: false,
        sync: false,
        irq: false,
    };
    for (out, back, want_d) in [
        // d = v + (d - v at dequeue) = 0.2 + 0.35 ms.
        (DequeueKind::Migrate, EnqueueKind::Migrate, 550 * US),
        (DequeueKind::Save, EnqueueKind::Restore, 550 * US),
        // A sleep keeps no relative deadline: d = v + vslice = 0.2 + 0.7 ms.
        (DequeueKind::Sleep, wakeup, 900 * US),
    ] {
        let mut fx = Fx::new_618();
        let a = fx.spawn(0);
        let b = fx.spawn(0);
        assert_eq!(fx.pick(), Some(a));
        assert!(!fx.run_for(200 * US));
        // V = 0.1 ms: b (v 0, d 0.35 ms) leaves with vlag +0.1 ms (eligible: no delay).
        {
            let (mut cx, rq, s) = fx.ctx();
            s.dequeue(&mut cx, rq, 0, b, out);
        }
        assert!(!fx.tasks[b].data.on_rq, "{out:?}");
        assert_eq!(fx.tasks[b].data.vlag, 100 * US as i64);
        // a alone 0.2 ms more: V = 0.4 ms. b comes back at V - 0.1 * 2048 / 1024 = 0.2 ms.
        fx.run_for(200 * US);
        {
            let (mut cx, rq, s) = fx.ctx();
            s.enqueue(&mut cx, rq, 0, b, back);
        }
        assert_eq!(fx.v(b), 200 * US, "{out:?}");
        assert_eq!(fx.d(b), want_d, "{out:?}");
        assert!(!fx.tasks[b].data.rel_deadline);
    }
}

#[test]
fn v6_18_yield_forfeits_the_rest_of_the_slice_only_when_eligible() {
    // Eligible: b runs 2 ms, then a (v 0, d 0.35 ms) runs 0.3 ms; V = (2 + 0.3) / 2 = 1.15
    // ms >= 0.3 ms. yield_task_fair: vruntime = deadline = 0.35 ms, deadline += vslice.
    let mut fx = Fx::new_618();
    let b = fx.spawn(0);
    let a = fx.spawn(0);
    assert_eq!(fx.pick(), Some(b));
    fx.run_for(2 * MS);
    assert_eq!(fx.pick(), Some(a));
    fx.run_for(300 * US);
    {
        let (mut c, rq, s) = fx.ctx();
        s.class.yield_task(&mut c, rq, 0, a);
    }
    assert_eq!((fx.v(a), fx.d(a)), (350 * US, 1_050 * US));
    // Not eligible: a runs 0.1 ms beside b at 0: V = 0.05 ms < 0.1 ms. Nothing changes
    // (6.6 would have pushed the deadline to 1.05 ms).
    let mut fx = Fx::new_618();
    let a = fx.spawn(0);
    let _b = fx.spawn(0);
    assert_eq!(fx.pick(), Some(a));
    fx.run_for(100 * US);
    {
        let (mut c, rq, s) = fx.ctx();
        s.class.yield_task(&mut c, rq, 0, a);
    }
    assert_eq!((fx.v(a), fx.d(a)), (100 * US, 350 * US));
}

#[test]
fn wake_wide_wants_both_flip_counts_past_the_llc_size() {
    // wake_wide (L7307): master = the larger, slave = the smaller; wide iff slave >= llc
    // and master >= slave * llc.
    for (waker, wakee, llc, wide) in [
        (0, 0, 2, false),
        (1, 50, 2, false), // slave 1 < 2
        (3, 2, 2, false),  // master 3 < 2 * 2
        (4, 2, 2, true),   // 2 >= 2, 4 >= 4
        (2, 4, 2, true),   // symmetric
        (10, 3, 2, true),
        (5, 3, 2, false), // 5 < 6
        (1, 1, 1, true),  // a 1-CPU LLC: any flip on both sides
        (0, 9, 1, false),
        (15, 4, 4, false), // 15 < 16
        (16, 4, 4, true),
    ] {
        assert_eq!(
            wake_wide(waker, wakee, llc),
            wide,
            "wake_wide({waker}, {wakee}, {llc})"
        );
    }
}

#[test]
fn record_wakee_counts_changes_of_wakee_and_halves_once_a_second() {
    let w = WakeeFlips::default();
    let (x, y) = (TaskId(3), TaskId(4));
    let s = 1_000_000_000;
    w.record(x, s / 2);
    assert_eq!(w.flips(), 1, "a first wakee is a change");
    w.record(x, s / 2 + 1);
    assert_eq!(w.flips(), 1, "the same wakee again is not");
    w.record(y, s / 2 + 2);
    w.record(x, s / 2 + 3);
    assert_eq!(w.flips(), 3);
    // time_after(jiffies, decay_ts + HZ): strictly more than a second after the last decay
    // (0 here): 1.5 s halves 3 to 1 and restarts the second; x again adds nothing.
    w.record(x, 3 * s / 2);
    assert_eq!(w.flips(), 1);
    // 2.5 s is not after 1.5 s + 1 s: no decay; y is a change.
    w.record(y, 5 * s / 2);
    assert_eq!(w.flips(), 2);
    // One ns later it is: 2 halves to 1; y again adds nothing.
    w.record(y, 5 * s / 2 + 1);
    assert_eq!(w.flips(), 1);
}

#[test]
fn v6_18_select_cpu_records_the_wakee_and_goes_wide_on_many_partners() {
    use crate::class::{CpuStatus, CpuView, Cpus};
    use crate::ds::work::{OpCounter, Work};
    use crate::machine::{Topology, TopologySpec};
    use crate::task::Tasks;
    // Two CPUs sharing a cache (sd_llc_size 2). The waker w runs alone on CPU 0; p last ran
    // on CPU 1, which is busy. A sync wakeup: wake_affine_idle takes the waker's CPU (it runs
    // only the waker), unless wake_wide says no affine wakeup at all.
    let topo = Topology::from_spec(&TopologySpec {
        cpus: 2,
        threads_per_core: 1,
        cpus_per_cache: 2,
        cpus_per_node: None,
        cpus_per_l2: None,
        cpus_per_package: None,
    });
    let class = Eevdf::v6_18(2);
    let select_with = |waker_flips: u32, pinned: Option<CpuId>| {
        let mut tasks: Tasks<EevdfTask> = Tasks::new();
        let w = tasks.spawn();
        let p = tasks.spawn();
        let other = tasks.spawn();
        tasks[p].cpu = 1;
        if let Some(c) = pinned {
            tasks[p].cpus_allowed = crate::task::CpuMask::single(c);
        }
        // p has woken two partners in turn: 2 flips. w has had `waker_flips` changes.
        tasks[p].data.wakee.record(TaskId(10), 1);
        tasks[p].data.wakee.record(TaskId(11), 2);
        for i in 0..waker_flips {
            tasks[w].data.wakee.record(TaskId(20 + i), 3);
        }
        let st = [
            CpuStatus {
                curr: Some(w),
                nr_running: 1,
                load: 1024,
                nr_delayed: 0,
                sched_idle: false,
                last_schedule_ns: 0,
            },
            CpuStatus {
                curr: Some(other),
                nr_running: 2,
                load: 2048,
                nr_delayed: 0,
                sched_idle: false,
                last_schedule_ns: 0,
            },
        ];
        let view = CpuView {
            cpus: Cpus::Snapshot(&st),
            topology: &topo,
            now: 4,
            hz: 1000,
            overloaded: None,
        };
        let mut ops = OpCounter::default();
        let cpu = tasks.with_view(|tv| {
            class.select_cpu(
                tv,
                &view,
                &mut Work::new(&mut ops),
                p,
                0,
                WakeKind::Wakeup { sync: true },
            )
        });
        (cpu, tasks[w].data.wakee.flips())
    };
    let select = |waker_flips: u32| select_with(waker_flips, None);
    // w: 2 flips, +1 for p (a new wakee) = 3 < 2 * 2: not wide, affine: CPU 0.
    assert_eq!(select(2), (0, 3));
    // w: 3 + 1 = 4 >= 2 * 2 and p's 2 >= 2: wide, p stays with its previous CPU 1.
    assert_eq!(select(3), (1, 4));
    // p allowed on CPU 1 only: core.c's select_task_rq does not ask the class
    // (`nr_cpus_allowed == 1`), so the affine CPU 0 is not taken and w records no flip.
    assert_eq!(select_with(2, Some(1)), (1, 2));
}

#[test]
fn v6_18_a_hackbench_run_keeps_the_simulators_invariants() {
    use crate::machine::Machine;
    use crate::registry::PolicyKind;
    use crate::sim::SimConfig;
    use crate::workload::Workload;
    // Many short sleeps beside runnable tasks: delayed dequeues, picks of delayed tasks and
    // requeues in place all happen; the full audit runs every 16 events.
    let m = Machine::load("host").expect("shipped profile");
    let w = Workload::parse("hackbench:groups=2,loops=20").expect("built-in workload");
    let cfg = SimConfig {
        duration_ns: 2_000_000_000,
        audit_every: 16,
        ..Default::default()
    };
    let r = PolicyKind::Eevdf618(Default::default())
        .simulate(&m, &w, cfg)
        .unwrap_or_else(|e| panic!("eevdf:era=6.18 under hackbench: {e}"));
    assert!(r.completed, "stopped: {}", r.stop_reason);
    assert!(r.metrics.context_switches > 0);
}

#[test]
fn v6_18_a_delayed_sleeper_is_woken_where_it_is_queued() {
    use crate::class::RtBalance;
    use crate::machine::TopologySpec;
    use crate::sched_core::scripted::{Scripted, TaskSpecT};
    use crate::sched_core::{attr, schedule, with_rq, Host, Leave, Sched};
    use crate::task::CpuMask;
    // Two CPUs sharing a cache, HZ=1000, costs zero. x and y are forked onto CPU 0 (bound
    // there, then let loose); x runs 2 ms and sleeps, not eligible (V = 1 ms); CPU 1 is idle
    // and wakes it. A delayed x is requeued on CPU 0 by ttwu_runnable, with no CPU
    // selection; without DELAY_DEQUEUE, x was dequeued, and select_task_rq_fair takes the
    // idle waker's CPU (wake_affine_idle: an idle CPU sharing the cache, CPU 0 busy).
    fn run(class: Eevdf) -> (bool, CpuId) {
        let m = crate::sim::scripted::costless_machine(&TopologySpec {
            cpus: 2,
            threads_per_core: 1,
            cpus_per_cache: 2,
            cpus_per_node: None,
            cpus_per_l2: None,
            cpus_per_package: None,
        });
        let sched = Sched::new(class, RtBalance::Passive, 2);
        crate::sim::scripted::run(sched, &m, |h| {
            let spec = TaskSpecT {
                policy: SchedPolicy::Normal,
                nice: 0,
                rt_priority: 0,
                allowed: CpuMask::single(0),
            };
            h.at(10 * MS);
            let x = h.add_task(&spec, None);
            let y = h.add_task(&spec, None);
            attr::fork(h, 0, None, x, None)?;
            attr::fork(h, 0, None, y, None)?;
            assert!(h.take_need_resched(0));
            let sw = schedule::schedule(h, 0, None, Leave::Runnable)?;
            assert_eq!(sw.next, Some(x));
            with_rq(h, 0, |_, ctx, _, _| {
                ctx.tasks[x].cpus_allowed = CpuMask::all();
                ctx.tasks[y].cpus_allowed = CpuMask::all();
            });
            h.at(12 * MS);
            let leave = h.begin_sleep(x);
            let sw = schedule::schedule(h, 0, Some(x), leave)?;
            assert_eq!(sw.next, Some(y));
            let delayed = with_rq(h, 0, |_, ctx, _, _| ctx.tasks[x].data.sched_delayed);
            h.at(12 * MS + 100 * US);
            h.wake(x, 1)?;
            assert_eq!(h.task_state(x), crate::task::TaskState::Queued);
            Ok((delayed, h.task_cpu(x)))
        })
        .expect("the script runs")
    }
    assert_eq!(
        run(Eevdf::v6_18(2)),
        (true, 0),
        "delayed: requeued in place"
    );
    let no_delay = Eevdf {
        features: Features {
            delay_dequeue: false,
            ..Features::V6_18
        },
        ..Eevdf::v6_18(2)
    };
    assert_eq!(
        run(no_delay),
        (false, 1),
        "dequeued: woken onto the idle CPU"
    );
}

/// Per-entity PELT (fair.c of v6.18): a task queued 1 ms in every 20 weighs about 5 % of its
/// weight (`task_h_load`, what `wake_affine_weight` and `detach_tasks` compare), where 6.6 here
/// weighs it 1 024; its runqueue's signal is the same sum. Woken on another CPU, it takes its
/// signal along: attached there, and taken off the old runqueue at that one's next update
/// (`remove_entity_load_avg`, `update_cfs_rq_load_avg`).
#[test]
fn v6_18_a_task_weighs_its_own_signal_and_takes_it_along_when_woken_elsewhere() {
    let class = Eevdf::v6_18(2);
    // Two CPUs' worth of `removed` slots (the fixture's own runqueue is for one).
    class.new_rq(0, &crate::machine::Topology::flat(2));
    let mut fx = Fx::with(class);
    let a = fx.spawn(0);
    // A new task starts at its full weight (init_entity_runnable_average).
    assert_eq!(fx.tasks[a].data.avg.load_avg, 1024);
    for _ in 0..400 {
        assert_eq!(fx.pick(), Some(a));
        fx.run_for(MS);
        fx.sleep_curr();
        fx.now += 19 * MS;
        fx.wake(a);
    }
    let avg = fx.tasks[a].data.avg.load_avg;
    assert!((40..=70).contains(&avg), "queued 5 % of the time: {avg}");
    assert_eq!(fx.s.class.task_h_load(&fx.tasks[a].data), avg);
    assert_eq!(Eevdf::v6_6(2).task_h_load(&fx.tasks[a].data), 1024);
    let rq0 = fx.rq.class.pelt.load_avg;
    assert!(
        rq0.abs_diff(avg) <= 3,
        "runqueue {rq0}, its only task {avg}"
    );
    // It runs once more, sleeps 10 ms and is woken on CPU 1.
    assert_eq!(fx.pick(), Some(a));
    fx.run_for(MS);
    fx.sleep_curr();
    fx.now += 10 * MS;
    let mut rq1 = fx.s.new_rq(1, &crate::machine::Topology::flat(2));
    crate::sched_core::lockdep::acquire(1);
    // set_task_cpu: the task belongs to the runqueue it is queued on.
    fx.tasks[a].cpu = 1;
    let mut c = Ctx::new(fx.now, 1000, 2, fx.tasks.view(), &mut fx.ops);
    let wakeup = EnqueueKind::Wakeup {
        uninterruptible: false,
        sync: false,
        irq: false,
    };
    fx.s.class.enqueue(&mut c, &mut rq1, 1, a, wakeup);
    let moved = c.tasks[a].data.avg.load_avg;
    assert!(moved > 20, "decayed over the sleep only: {moved}");
    assert_eq!(rq1.class.pelt.load_avg, moved, "attached to CPU 1");
    // CPU 0's signal still holds it until its next update, which takes it off: a task
    // queued there now finds about nothing left of a's history.
    assert!(fx.rq.class.pelt.load_avg > moved);
    let b = fx.spawn(0);
    let left = fx.rq.class.pelt.load_avg - fx.tasks[b].data.avg.load_avg;
    assert!(left <= 3, "CPU 0 kept {left} of the {moved} that left");
}

#[test]
fn v6_18_a_forked_task_starts_with_its_parents_wakee_flips() {
    // dup_task_struct copies wakee_flips, wakee_flip_decay_ts and last_wakee; nothing in
    // sched_fork resets them. 6.6's class keeps no flips (no wake_wide) and copies nothing.
    for (class, inherits) in [(Eevdf::v6_18(1), true), (Eevdf::v6_6(1), false)] {
        let mut fx = Fx::with(Eevdf {
            fair_server: None,
            ..class
        });
        let parent = fx.spawn(0);
        for (i, at) in [(10, 1), (11, 2), (12, 3)] {
            fx.tasks[parent].data.wakee.record(TaskId(i), at);
        }
        assert_eq!(fx.tasks[parent].data.wakee.flips(), 3);
        let child = fx.tasks.spawn();
        let (mut c, rq, s) = fx.ctx();
        s.class.task_fork(&mut c, rq, 0, Some(parent), child);
        let flips = c.tasks[child].data.wakee.flips();
        assert_eq!(flips, if inherits { 3 } else { 0 });
        // The copy is the child's own: the parent's next wakee does not count for it.
        c.tasks[parent].data.wakee.record(TaskId(13), 4);
        assert_eq!(c.tasks[child].data.wakee.flips(), flips);
        if inherits {
            // Its last wakee is the parent's (12): waking 12 is no change of wakee.
            c.tasks[child].data.wakee.record(TaskId(12), 5);
            assert_eq!(c.tasks[child].data.wakee.flips(), 3);
        }
    }
}
