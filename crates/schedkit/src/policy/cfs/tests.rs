//! CFS 2.6.24's mechanisms against hand-computed cases (numbers worked out with the
//! kernel's fixed point: see the comments).

use super::*;
use crate::policy::testkit::{ClassFixture, MS};

type Fx = ClassFixture<Cfs>;

impl ClassFixture<Cfs> {
    fn new() -> Fx {
        Fx::with(Cfs::v2_6_24(1))
    }
    fn v(&self, t: TaskId) -> u64 {
        self.tasks[t].data.vruntime
    }
}

#[test]
fn tunables_scale_with_the_cpus() {
    let c = Cfs::v2_6_24(1);
    assert_eq!(
        (c.latency, c.min_granularity, c.wakeup_granularity),
        (20 * MS, 4 * MS, 10 * MS)
    );
    // 1 + ilog2(4) = 3.
    assert_eq!(Cfs::v2_6_24(4).latency, 60 * MS);
    assert_eq!(c.period(5), 20 * MS);
    assert_eq!(
        c.period(10),
        40 * MS,
        "latency * nr / nr_latency past 5 tasks"
    );
}

#[test]
fn vruntime_advances_by_wall_time_over_weight() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    let b = fx.spawn(5);
    let first = fx.pick().unwrap();
    let (va, vb) = (fx.v(a), fx.v(b));
    fx.run_for(MS);
    if first == a {
        assert_eq!(fx.v(a) - va, MS, "nice 0: 1 ms of vruntime per ms");
    } else {
        // nice 5 (weight 335, wmult 12820798): SRR(1.024e9 * 12820798, 32) = 3 056 716.
        assert_eq!(fx.v(b) - vb, 3_056_716);
    }
    assert_eq!(fx.tasks[first].data.sum_exec, MS);
}

#[test]
fn start_debit_places_a_new_task_one_vslice_late() {
    let mut fx = Fx::new();
    // On an empty runqueue: vslice_add = period(1) * 1024 / 1024 = 20 ms past min_vruntime.
    let a = fx.spawn(0);
    assert_eq!(fx.v(a), 20 * MS);
    fx.pick();
    // Beside one running nice-0 task: vslice_add = period(2) * 1024 / 2048 = 10 ms past
    // min_vruntime, which update_curr has just brought up to the runner's 20 ms.
    let b = fx.spawn(0);
    assert_eq!(fx.rq.class.min_vruntime, 20 * MS);
    assert_eq!(fx.v(b), 30 * MS);
    // 2.6.24 moved min_vruntime only in __update_curr, i.e. with a task running: two tasks
    // forked onto an idle runqueue both start from its old min_vruntime, and the second,
    // placed with the smaller vslice, goes first.
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    let b = fx.spawn(0);
    assert_eq!((fx.v(a), fx.v(b)), (20 * MS, 10 * MS));
    assert_eq!(fx.pick(), Some(b));
}

#[test]
fn the_slice_is_the_weighted_share_of_the_period_and_the_tick_enforces_it() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    assert_eq!(fx.pick(), Some(a));
    let _b = fx.spawn(0);
    // Two nice-0 tasks: sched_slice = 20 ms * 1024 / 2048 = 10 ms.
    assert!(!fx.run_for(4 * MS));
    assert!(!fx.run_for(6 * MS), "exactly the slice is not past it");
    assert!(fx.run_for(MS), "past 10 ms the tick reschedules");
    // nice 0 beside nice 5 (1024 + 335): calc_delta_mine(20 ms, 1024, 1359) = 15 069 904.
    let mut rq = CfsRq {
        nr_running: 2,
        load: LoadWeight::new(1359),
        ..Default::default()
    };
    let c = Cfs::v2_6_24(1);
    assert_eq!(c.sched_slice(&mut rq, 1024), 15_069_904);
    assert_eq!(c.sched_slice(&mut rq, 335), 4_930_101);
}

#[test]
fn a_sleeper_is_placed_at_most_one_latency_behind() {
    let c = Cfs::v2_6_24(1);
    let rq = CfsRq {
        min_vruntime: 100 * MS,
        ..Default::default()
    };
    let mut long_sleeper = CfsTask {
        vruntime: 10 * MS,
        ..Default::default()
    };
    c.place_entity(&rq, &mut long_sleeper, false);
    assert_eq!(long_sleeper.vruntime, 80 * MS, "min_vruntime - latency");
    let mut short_sleeper = CfsTask {
        vruntime: 95 * MS,
        ..Default::default()
    };
    c.place_entity(&rq, &mut short_sleeper, false);
    assert_eq!(
        short_sleeper.vruntime,
        95 * MS,
        "sleeping never moves it back"
    );
}

#[test]
fn wakeup_preemption_needs_a_granularity_lead() {
    let mut fx = Fx::new();
    let curr = fx.spawn(0);
    assert_eq!(fx.pick(), Some(curr));
    let woken = fx.spawn(0);
    fx.tasks[woken].data.forked = false;
    let preempts = |fx: &mut Fx, vc: u64, vw: u64| {
        fx.tasks[curr].data.vruntime = vc;
        fx.tasks[woken].data.vruntime = vw;
        let (mut c, rq, s) = fx.ctx();
        s.class.check_preempt_wakeup(&mut c, rq, 0, woken, false)
    };
    // 15 + 10 < 30: preempt; 25 + 10 < 30: no.
    assert!(preempts(&mut fx, 30 * MS, 15 * MS));
    assert!(!preempts(&mut fx, 30 * MS, 25 * MS));
    // A nice-5 curr scales the granularity: calc_delta_fair(10 ms, nice 5) = 30 567 164.
    fx.tasks[curr].data.load = LoadWeight::of_nice(5);
    assert!(!preempts(&mut fx, 30 * MS, 15 * MS));
    assert!(preempts(&mut fx, 50 * MS, 15 * MS), "15 + 30.57 < 50");
    // SCHED_BATCH wakees never preempt.
    fx.tasks[woken].policy = SchedPolicy::Batch;
    assert!(!preempts(&mut fx, 500 * MS, 15 * MS));
}

#[test]
fn the_child_runs_first_by_taking_the_smaller_vruntime() {
    let mut fx = Fx::new();
    let parent = fx.spawn(0);
    assert_eq!(fx.pick(), Some(parent));
    fx.run_for(3 * MS);
    let pv = fx.v(parent);
    let child = fx.tasks.spawn();
    fx.tasks[child].parent = Some(parent);
    {
        let (mut c, rq, s) = fx.ctx();
        s.class.task_fork(&mut c, rq, 0, Some(parent), child);
        s.enqueue(&mut c, rq, 0, child, EnqueueKind::New);
        assert!(
            s.class.check_preempt_wakeup(&mut c, rq, 0, child, false),
            "the parent is rescheduled"
        );
    }
    assert_eq!(
        fx.v(child),
        pv,
        "the child got the parent's (smaller) vruntime"
    );
    assert!(before(fx.v(child), fx.v(parent)));
    assert_eq!(fx.pick(), Some(child));
}

#[test]
fn yield_picks_the_leftmost_which_may_be_the_yielder() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    assert_eq!(fx.pick(), Some(a));
    let b = fx.spawn(0);
    fx.run_for(2 * MS);
    {
        let (mut c, rq, s) = fx.ctx();
        assert!(s.class.yield_task(&mut c, rq, 0, a));
    }
    // a ran 2 ms (vruntime 22 ms), b waits at 30 ms (START_DEBIT): a stays leftmost.
    assert_eq!(fx.pick(), Some(a));
    fx.run_for(10 * MS);
    assert_eq!(fx.pick(), Some(b), "once a is past b, b is leftmost");
}

#[test]
fn min_vruntime_only_moves_forward() {
    let mut fx = Fx::new();
    let a = fx.spawn(0);
    fx.pick();
    fx.run_for(5 * MS);
    let m = fx.rq.class.min_vruntime;
    // A task queued far behind does not pull min_vruntime back.
    fx.tasks[a].data.vruntime = 0;
    {
        let (c, rq, _) = fx.ctx();
        Cfs::update_min_vruntime(&c, &mut rq.class);
    }
    assert_eq!(fx.rq.class.min_vruntime, m);
}

// ---- The 2.6.32 era ----

/// Re-queues a waiting task at a chosen vruntime (as a migration: no placement).
fn requeue_at(fx: &mut Fx, t: TaskId, v: u64) {
    let (mut c, rq, s) = fx.ctx();
    s.dequeue(&mut c, rq, 0, t, DequeueKind::Migrate);
    c.tasks[t].data.vruntime = v;
    s.enqueue(&mut c, rq, 0, t, EnqueueKind::Migrate);
}

#[test]
fn era_2_6_32_tunables() {
    let c = Cfs::v2_6_32(1);
    assert_eq!(
        (
            c.latency,
            c.min_granularity,
            c.wakeup_granularity,
            c.nr_latency
        ),
        (5 * MS, MS, MS, 5)
    );
    assert!(!c.child_runs_first);
    assert_eq!(Cfs::v2_6_32(2).latency, 10 * MS);
    // The factor stops growing at 8 CPUs: 1 + ilog2(8) = 4.
    assert_eq!(Cfs::v2_6_32(64).latency, 20 * MS);
    assert_eq!(c.idleprio.weight, 3);
}

#[test]
fn era_2_6_32_gentle_sleepers_get_half_a_latency() {
    let c = Cfs::v2_6_32(1);
    let rq = CfsRq {
        min_vruntime: 100 * MS,
        ..Default::default()
    };
    let mut long_sleeper = CfsTask {
        vruntime: 10 * MS,
        ..Default::default()
    };
    c.place_entity(&rq, &mut long_sleeper, false);
    assert_eq!(long_sleeper.vruntime, 100 * MS - 5 * MS / 2);
    // A new task is never placed before where it starts (its parent's vruntime).
    let mut child = CfsTask {
        vruntime: 200 * MS,
        ..Default::default()
    };
    c.place_entity(&rq, &mut child, true);
    assert_eq!(child.vruntime, 200 * MS);
}

#[test]
fn era_2_6_32_wakeup_granularity_is_in_the_wakees_virtual_time() {
    let c = Cfs::v2_6_32(1);
    let curr = CfsTask {
        vruntime: 100 * MS,
        load: LoadWeight::of_nice(0),
        ..Default::default()
    };
    let at = |v: u64, nice: i32| CfsTask {
        vruntime: v,
        load: LoadWeight::of_nice(nice),
        ..Default::default()
    };
    assert_eq!(c.wakeup_preempt_entity(&curr, &at(100 * MS, 0)), -1);
    assert_eq!(
        c.wakeup_preempt_entity(&curr, &at(99 * MS, 0)),
        0,
        "1 ms lead = gran"
    );
    assert_eq!(c.wakeup_preempt_entity(&curr, &at(98_900_000, 0)), 1);
    // A nice-5 wakee: calc_delta_fair(1 ms, 335) = 3 056 716 ns of lead needed.
    assert_eq!(
        c.wakeup_preempt_entity(&curr, &at(100 * MS - 3_056_716, 5)),
        0
    );
    assert_eq!(
        c.wakeup_preempt_entity(&curr, &at(100 * MS - 3_056_717, 5)),
        1
    );
}

#[test]
fn era_2_6_32_idle_and_batch_rules_and_the_last_buddy() {
    let mut fx = Fx::with(Cfs::v2_6_32(1));
    let spawned = [fx.spawn(0), fx.spawn(0), fx.spawn(0)];
    // START_DEBIT with a shrinking vslice puts the last-forked leftmost.
    let a = fx.pick().unwrap();
    assert_eq!(a, spawned[2]);
    let (b, c) = (spawned[0], spawned[1]);
    requeue_at(&mut fx, b, 0);
    fx.tasks[a].data.vruntime = 50 * MS;
    let preempts = |fx: &mut Fx, w: TaskId| {
        let (mut cx, rq, s) = fx.ctx();
        s.class.check_preempt_wakeup(&mut cx, rq, 0, w, false)
    };
    // Batch and idle wakees never preempt, whatever their lead.
    fx.tasks[b].policy = SchedPolicy::Batch;
    assert!(!preempts(&mut fx, b));
    fx.tasks[b].policy = SchedPolicy::Idle;
    assert!(!preempts(&mut fx, b));
    assert_eq!(fx.rq.class.last, None);
    // A normal wakee 50 ms ahead preempts, and the preempted task becomes the last buddy.
    fx.tasks[b].policy = SchedPolicy::Normal;
    assert!(preempts(&mut fx, b));
    assert_eq!(fx.rq.class.last, Some(a));
    // An idle curr is preempted by any normal wakee, even one behind it.
    fx.tasks[a].policy = SchedPolicy::Idle;
    requeue_at(&mut fx, b, 900 * MS);
    assert!(preempts(&mut fx, b));
    fx.tasks[a].policy = SchedPolicy::Normal;
    // Pick with a last buddy: a (10.5 ms) within 1 ms of the leftmost c (10 ms) gets the
    // CPU back; the favour is used once.
    requeue_at(&mut fx, c, 10 * MS);
    fx.tasks[a].data.vruntime = 10_500_000;
    fx.rq.class.last = Some(a);
    assert_eq!(fx.pick(), Some(a), "last buddy within the granularity");
    assert_eq!(fx.rq.class.last, None);
    // Out of range: the leftmost wins.
    fx.tasks[a].data.vruntime = 11_500_000;
    fx.rq.class.last = Some(a);
    assert_eq!(fx.pick(), Some(c));
}
