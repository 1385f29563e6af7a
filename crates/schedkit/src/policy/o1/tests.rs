//! Unit tests pinning each O(1) mechanism.

use super::*;
use crate::class::RtBalance;
use crate::policy::rt::PushTarget;
use crate::sched_core::{lockdep, Sched};
use crate::task::Tasks;
use crate::task::{CpuMask, SchedPolicy};

const HZ: u32 = 1000;

/// O(1) behind the stacked RT class, as the core runs it, on `ncpus` runqueues whose locks
/// the test thread holds throughout.
struct Fx {
    tasks: Tasks<O1Task>,
    ops: OpCounter,
    rqs: Vec<Rq<O1Rq>>,
    now: u64,
    s: Sched<O1>,
}

impl Fx {
    fn new(ncpus: usize) -> Fx {
        let topo = Topology::flat(ncpus);
        let o1 = O1::with_cache_decay_ticks(1);
        let s = Sched::new(o1, RtBalance::Passive, ncpus);
        // A fixture replaces the previous one of its test thread, locks and all.
        lockdep::forget_held();
        for d in 0..ncpus {
            lockdep::acquire(d);
        }
        Fx {
            tasks: Tasks::new(),
            ops: OpCounter::default(),
            rqs: (0..ncpus).map(|c| s.new_rq(c, &topo)).collect(),
            now: 1_000_000_000,
            s,
        }
    }
    fn set_rt_balance(&mut self, b: RtBalance) {
        self.s.rt.balance = b;
    }
}

impl Fx {
    fn ctx(&mut self, cpu: usize) -> (Ctx<'_, O1Task>, &mut Rq<O1Rq>, &Sched<O1>) {
        let n = self.rqs.len();
        (
            Ctx {
                now: self.now,
                hz: HZ,
                ncpus: n,
                tasks: self.tasks.view(),
                ops: &mut self.ops,
                lines: None,
            },
            &mut self.rqs[cpu],
            &self.s,
        )
    }
    fn spawn(&mut self, cpu: usize, nice: i32) -> TaskId {
        let t = self.tasks.spawn();
        self.tasks[t].nice = nice;
        self.tasks[t].cpu = cpu;
        let (mut c, rq, o1) = self.ctx(cpu);
        o1.class.task_fork(&mut c, rq, cpu, None, t);
        o1.enqueue(&mut c, rq, cpu, t, EnqueueKind::New);
        t
    }
    /// Gives queued task `t` a sleep history, re-queueing it at the priority that follows.
    fn set_sleep_avg(&mut self, t: TaskId, ns: u64) {
        let cpu = self.tasks[t].cpu;
        let j = Jiffies::new(HZ);
        let (mut c, rq, o1) = self.ctx(cpu);
        o1.dequeue(&mut c, rq, cpu, t, DequeueKind::Save);
        c.tasks[t].data.sleep_avg = ns;
        c.tasks[t].data.prio = effective_prio(&c.tasks[t], &j);
        o1.enqueue(&mut c, rq, cpu, t, EnqueueKind::Migrate);
    }
    fn pick(&mut self, cpu: usize) -> Option<TaskId> {
        let (mut c, rq, o1) = self.ctx(cpu);
        if let Some(p) = rq.curr() {
            o1.put_prev(&mut c, rq, cpu, p);
        }
        let next = o1.pick_next(&mut c, rq, cpu);
        rq.set_curr(cpu, next);
        next
    }
    /// The class's `move_tasks` from CPU 0 to `this_cpu`, with the RT class's part of the
    /// pass handed to it as the core hands it.
    fn move_tasks(&mut self, this_cpu: usize, idle: CpuIdle, imbalance: usize) -> PullOutcome {
        let n = self.rqs.len();
        let (src, rest) = self.rqs.split_at_mut(1);
        let mut c = Ctx {
            now: self.now,
            hz: HZ,
            ncpus: n,
            tasks: self.tasks.view(),
            ops: &mut self.ops,
            lines: None,
        };
        let this = &mut rest[this_cpu - 1];
        let o1 = &self.s.class;
        o1.move_tasks(
            &mut c,
            this,
            this_cpu,
            &mut src[0],
            0,
            idle,
            imbalance,
            &self.s.rt,
        )
    }
    fn tick(&mut self, cpu: usize) -> bool {
        self.now += 1_000_000;
        let curr = self.rqs[cpu].curr().unwrap();
        let (mut c, rq, o1) = self.ctx(cpu);
        o1.task_tick(&mut c, rq, cpu, curr)
    }
}

#[test]
fn timeslice_formula_by_static_priority() {
    // designs.md §2.3, 2.6.11 at HZ=1000: 800 / 100 / 5 ms, nice -10 600, +10 50.
    let j = Jiffies::new(1000);
    assert_eq!(j.task_timeslice(static_prio(-20)), 800);
    assert_eq!(j.task_timeslice(static_prio(-10)), 600);
    assert_eq!(j.task_timeslice(static_prio(0)), 100);
    assert_eq!(j.task_timeslice(static_prio(10)), 50);
    assert_eq!(j.task_timeslice(static_prio(19)), 5);
    // At HZ=100 the minimum is one jiffy (10 ms).
    assert_eq!(Jiffies::new(100).task_timeslice(static_prio(19)), 1);
}

#[test]
fn bonus_and_penalty_are_bounded_by_five_levels() {
    let j = Jiffies::new(HZ);
    let mut fx = Fx::new(1);
    let t = fx.spawn(0, 0);
    let p = &mut fx.tasks[t];
    p.data.sleep_avg = 0;
    assert_eq!(effective_prio(p, &j), 125, "a pure CPU hog loses 5 levels");
    p.data.sleep_avg = j.ns_max_sleep_avg();
    assert_eq!(effective_prio(p, &j), 115, "a pure sleeper gains 5 levels");
    p.nice = 19;
    p.data.sleep_avg = 0;
    assert_eq!(effective_prio(p, &j), 139, "clamped to MAX_PRIO-1");
}

#[test]
fn interactive_thresholds_follow_delta() {
    // Bonus needed: 7 at nice 0 (sleep_avg >= 700 ms); nice +19 can never be interactive.
    let j = Jiffies::new(HZ);
    let mut fx = Fx::new(1);
    let t = fx.spawn(0, 0);
    let p = &mut fx.tasks[t];
    p.data.sleep_avg = j.to_ns(699);
    p.data.prio = effective_prio(p, &j);
    assert!(!task_interactive(p, &j));
    p.data.sleep_avg = j.to_ns(700);
    p.data.prio = effective_prio(p, &j);
    assert!(task_interactive(p, &j));
    p.nice = 19;
    p.data.sleep_avg = j.ns_max_sleep_avg();
    p.data.prio = effective_prio(p, &j);
    assert!(!task_interactive(p, &j), "nice 19 is never interactive");
    assert_eq!(j.interactive_sleep(0), j.to_ns(799));
}

#[test]
fn sleeping_raises_sleep_avg_and_running_lowers_it() {
    let j = Jiffies::new(HZ);
    let mut fx = Fx::new(1);
    let t = fx.spawn(0, 0);
    let p = &mut fx.tasks[t];
    p.timestamp_ns = 0;
    recalc_task_prio(p, 100_000_000, &j);
    // 100 ms slept at bonus 0 counts ten-fold (MAX_BONUS - 0), up to the maximum.
    assert_eq!(p.data.sleep_avg, j.ns_max_sleep_avg());
    // A long uninterruptible sleep is capped at INTERACTIVE_SLEEP.
    p.data.sleep_avg = 0;
    p.data.activated = -1;
    recalc_task_prio(p, 500_000_000, &j);
    assert_eq!(p.data.sleep_avg, j.interactive_sleep(0));
}

#[test]
fn highest_priority_runs_first_and_equal_priorities_round_robin() {
    let mut fx = Fx::new(1);
    let a = fx.spawn(0, 5);
    let b = fx.spawn(0, -5);
    let c = fx.spawn(0, -5);
    assert_eq!(fx.pick(0), Some(b));
    // b yields: it goes to the expired array, c (same priority) runs next, then a.
    let (mut ctx, rq, o1) = fx.ctx(0);
    assert!(o1.yield_task(&mut ctx, rq, 0, b));
    assert_eq!(fx.pick(0), Some(c));
    let (mut ctx, rq, o1) = fx.ctx(0);
    o1.yield_task(&mut ctx, rq, 0, c);
    assert_eq!(fx.pick(0), Some(a));
    assert_eq!(fx.ops.bitmap_searches, 3, "each pick is one bitmap search");
}

#[test]
fn array_switch_when_active_empties() {
    let mut fx = Fx::new(1);
    let a = fx.spawn(0, 10); // 50 ms slice, never interactive at sleep_avg 0
    assert_eq!(fx.pick(0), Some(a));
    let mut expired = false;
    for _ in 0..50 {
        if fx.tick(0) {
            expired = true;
            break;
        }
    }
    assert!(expired, "the slice of 50 ticks ran out");
    assert_eq!(
        fx.tasks[a].data.array,
        Some(1 - fx.rqs[0].active as u8),
        "a hog expires"
    );
    assert_eq!(fx.rqs[0].active().nr_active, 0);
    assert_eq!(fx.pick(0), Some(a));
    assert_eq!(fx.rqs[0].array_switches, 1, "the arrays swapped");
    assert_eq!(
        fx.tasks[a].data.time_slice, 50,
        "the slice was refilled at expiry"
    );
}

#[test]
fn interactive_task_is_reinserted_into_active() {
    let j = Jiffies::new(HZ);
    let mut fx = Fx::new(1);
    let a = fx.spawn(0, 0);
    fx.set_sleep_avg(a, j.ns_max_sleep_avg());
    fx.tasks[a].data.time_slice = 1;
    assert_eq!(fx.pick(0), Some(a));
    assert_eq!(
        fx.tasks[a].data.prio, 115,
        "a full sleeper sits 5 levels up"
    );
    assert!(fx.tick(0));
    assert_eq!(fx.tasks[a].data.array, Some(fx.rqs[0].active as u8));
}

#[test]
fn starvation_limit_sends_interactive_tasks_to_expired() {
    let j = Jiffies::new(HZ);
    let mut fx = Fx::new(1);
    fx.now = 10_000_000_000;
    let a = fx.spawn(0, 0);
    let _hog = fx.spawn(0, 0);
    fx.set_sleep_avg(a, j.ns_max_sleep_avg());
    fx.tasks[a].data.time_slice = 1;
    assert_eq!(fx.pick(0), Some(a));
    assert!(task_interactive(&fx.tasks[a], &j));
    // The expired array has been waiting longer than STARVATION_LIMIT * nr_running.
    let now_j = (fx.now + 1_000_000) / j.tick_ns;
    fx.rqs[0].expired_timestamp = now_j - (j.starvation_limit() as u64 * 2 + 1);
    assert!(fx.tick(0));
    assert_eq!(
        fx.tasks[a].data.array,
        Some(1 - fx.rqs[0].active as u8),
        "starving: even interactive expires"
    );
}

#[test]
fn rt_tasks_preempt_and_rr_round_robins() {
    let mut fx = Fx::new(1);
    let normal = fx.spawn(0, -20);
    assert_eq!(fx.pick(0), Some(normal));
    let rt = fx.tasks.spawn();
    fx.tasks[rt].policy = SchedPolicy::Rr;
    fx.tasks[rt].rt_priority = 10;
    {
        let (mut c, rq, o1) = fx.ctx(0);
        o1.class.task_fork(&mut c, rq, 0, None, rt);
        o1.enqueue(
            &mut c,
            rq,
            0,
            rt,
            EnqueueKind::Wakeup {
                uninterruptible: false,
                sync: false,
                irq: false,
            },
        );
        assert_eq!(c.tasks[rt].data.prio, 89);
        assert!(o1.check_preempt(&mut c, rq, 0, rt, false));
    }
    assert_eq!(fx.pick(0), Some(rt));
    let rt2 = fx.tasks.spawn();
    fx.tasks[rt2].policy = SchedPolicy::Rr;
    fx.tasks[rt2].rt_priority = 10;
    {
        let (mut c, rq, o1) = fx.ctx(0);
        o1.class.task_fork(&mut c, rq, 0, None, rt2);
        o1.enqueue(
            &mut c,
            rq,
            0,
            rt2,
            EnqueueKind::Wakeup {
                uninterruptible: false,
                sync: false,
                irq: false,
            },
        );
        assert!(
            !o1.check_preempt(&mut c, rq, 0, rt2, false),
            "equal RT priority does not preempt"
        );
    }
    // RR: after its 100 ms slice the task goes to the tail of its list.
    let mut expired = false;
    for _ in 0..100 {
        if fx.tick(0) {
            expired = true;
            break;
        }
    }
    assert!(expired);
    assert_eq!(fx.pick(0), Some(rt2));
}

#[test]
fn child_runs_first_on_the_parents_cpu() {
    let mut fx = Fx::new(1);
    let parent = fx.spawn(0, 0);
    let _other = fx.spawn(0, 0);
    assert_eq!(fx.pick(0), Some(parent));
    fx.tasks[parent].data.time_slice = 40;
    let child = fx.tasks.spawn();
    fx.tasks[child].parent = Some(parent);
    fx.tasks[child].cpu = 0;
    let (mut c, rq, o1) = fx.ctx(0);
    assert!(!o1.class.task_fork(&mut c, rq, 0, Some(parent), child));
    assert_eq!(
        (
            c.tasks[parent].data.time_slice,
            c.tasks[child].data.time_slice
        ),
        (20, 20)
    );
    o1.enqueue(&mut c, rq, 0, child, EnqueueKind::New);
    assert!(
        o1.check_preempt(&mut c, rq, 0, child, false),
        "the parent is told to reschedule"
    );
    assert_eq!(
        fx.pick(0),
        Some(child),
        "the child is queued just before its parent"
    );
}

#[test]
fn balancer_needs_a_quarter_imbalance_and_respects_affinity() {
    let mut fx = Fx::new(2);
    // CPU 0: 5 tasks, CPU 1: 4 tasks: 20% imbalance, below the 25% threshold.
    for _ in 0..5 {
        fx.spawn(0, 0);
    }
    for _ in 0..4 {
        fx.spawn(1, 0);
    }
    fx.now += 1_000_000_000; // everyone is cache-cold
    let topo = Topology::flat(2);
    let status = |fx: &Fx| -> Vec<CpuStatus> {
        fx.rqs
            .iter()
            .map(|r| CpuStatus {
                curr: r.curr(),
                nr_running: r.nr_running,
                load: r.nr_running as u64 * 1024,
                nr_delayed: 0,
                sched_idle: false,
                last_schedule_ns: 0,
            })
            .collect()
    };
    let st = status(&fx);
    let view = CpuView {
        cpus: Cpus::Snapshot(&st),
        topology: &topo,
        now: fx.now,
        hz: HZ,
        overloaded: None,
    };
    let (mut c, rq, o1) = fx.ctx(1);
    // The first call only primes prev_cpu_load (smoothing): loads read low.
    let _ = o1
        .class
        .find_busiest(&mut c, rq, 1, &view, CpuIdle::NotIdle);
    assert_eq!(
        o1.class
            .find_busiest(&mut c, rq, 1, &view, CpuIdle::NotIdle),
        None,
        "20% is below the threshold"
    );

    // CPU 1 at 2 tasks: imbalance 3 of 5 - pull.
    let mut fx = Fx::new(2);
    let pinned: Vec<TaskId> = (0..5).map(|_| fx.spawn(0, 0)).collect();
    for &t in &pinned[..4] {
        fx.tasks[t].cpus_allowed = CpuMask::single(0);
    }
    fx.spawn(1, 0);
    fx.spawn(1, 0);
    fx.now += 1_000_000_000;
    let st = status(&fx);
    let view = CpuView {
        cpus: Cpus::Snapshot(&st),
        topology: &topo,
        now: fx.now,
        hz: HZ,
        overloaded: None,
    };
    let (mut c, rq1, o1) = fx.ctx(1);
    assert_eq!(
        o1.class
            .find_busiest(&mut c, rq1, 1, &view, CpuIdle::Idle)
            .map(|b| b.cpu),
        Some(0)
    );
    let out = fx.move_tasks(1, CpuIdle::NotIdle, 3);
    assert_eq!(out.moved, 1, "only the one task allowed on CPU 1 can move");
    assert_eq!(fx.tasks[pinned[4]].cpu, 1);
    assert!(
        pinned[..4].iter().all(|&t| fx.tasks[t].cpu == 0),
        "affinity respected"
    );
}

#[test]
fn cache_hot_tasks_stay_unless_idle() {
    let mut fx = Fx::new(2);
    for _ in 0..4 {
        fx.spawn(0, 0);
    }
    // Just enqueued: timestamps are "now", so all are cache-hot for a busy puller.
    assert_eq!(fx.move_tasks(1, CpuIdle::NotIdle, 4).moved, 0);
    assert_eq!(
        fx.move_tasks(1, CpuIdle::Idle, 4).moved,
        1,
        "an idle CPU takes one"
    );
}

#[test]
fn cache_decay_ticks_from_the_piii_profile() {
    let m = Machine::load("smp2-2002").unwrap();
    // (997000 >> 10) * (256 << 10) / 350 = 728,765 cycles: under a ms, so 0 + 1 tick.
    assert_eq!(O1::new(&m).cache_decay_ticks, 1);
}

// ----- RT class and push/pull (2.6.25) -----

fn rt_task(fx: &mut Fx, cpu: usize, rt_priority: u8, allowed: CpuMask) -> TaskId {
    let t = fx.tasks.spawn();
    fx.tasks[t].policy = SchedPolicy::Fifo;
    fx.tasks[t].rt_priority = rt_priority;
    fx.tasks[t].cpu = cpu;
    fx.tasks[t].cpus_allowed = allowed;
    let (mut c, rq, o1) = fx.ctx(cpu);
    o1.class.task_fork(&mut c, rq, cpu, None, t);
    o1.enqueue(&mut c, rq, cpu, t, EnqueueKind::New);
    t
}

fn pushpull(ncpus: usize) -> Fx {
    let mut fx = Fx::new(ncpus);
    fx.set_rt_balance(RtBalance::PushPull);
    fx
}

#[test]
fn rt_tasks_run_before_any_normal_task() {
    let mut fx = Fx::new(1);
    let normal = fx.spawn(0, -20);
    let rt = rt_task(&mut fx, 0, 1, CpuMask::all());
    assert!(fx.tasks[rt].rt.on_rq, "queued in the RT class");
    assert_eq!(fx.pick(0), Some(rt), "even RT priority 1 beats nice -20");
    let _ = normal;
}

#[test]
fn overload_is_flagged_and_push_targets_the_lowest_cpu() {
    let mut fx = pushpull(3);
    let all = CpuMask::first_n(3);
    // CPU 1 runs RT 50, CPU 2 a normal task: the lowest place for an RT task is CPU 2.
    rt_task(&mut fx, 1, 50, all);
    fx.spawn(2, 0);
    let high = rt_task(&mut fx, 0, 60, all);
    assert!(!fx.s.rt.rd.is_overloaded(0), "one RT task is no overload");
    let low = rt_task(&mut fx, 0, 40, all);
    assert!(fx.s.rt.rd.is_overloaded(0));
    assert_eq!(fx.pick(0), Some(high));
    let (mut c, rq, o1) = fx.ctx(0);
    assert_eq!(
        o1.rt.pick_push_target(&mut c, rq, 0, None),
        PushTarget::Move { task: low, to: 2 }
    );
    // Under both locks the push re-checks and moves the task.
    let (a, b) = fx.rqs.split_at_mut(2);
    let mut c = Ctx {
        now: fx.now,
        hz: HZ,
        ncpus: 3,
        tasks: fx.tasks.view(),
        ops: &mut fx.ops,
        lines: None,
    };
    assert!(fx
        .s
        .rt
        .push_rt_task_to(&mut c, &mut a[0], 0, &mut b[0], 2, low));
    assert_eq!(fx.tasks[low].cpu, 2);
    assert!(
        !fx.s.rt.rd.is_overloaded(0),
        "one RT task left: no longer overloaded"
    );
}

#[test]
fn push_recheck_fails_if_the_target_got_better_work() {
    let mut fx = pushpull(2);
    let all = CpuMask::first_n(2);
    let high = rt_task(&mut fx, 0, 60, all);
    let low = rt_task(&mut fx, 0, 40, all);
    assert_eq!(fx.pick(0), Some(high));
    // Meanwhile CPU 1 receives RT 70: the push of RT 40 there must be refused.
    rt_task(&mut fx, 1, 70, all);
    let (a, b) = fx.rqs.split_at_mut(1);
    let mut c = Ctx {
        now: fx.now,
        hz: HZ,
        ncpus: 2,
        tasks: fx.tasks.view(),
        ops: &mut fx.ops,
        lines: None,
    };
    assert!(!fx
        .s
        .rt
        .push_rt_task_to(&mut c, &mut a[0], 0, &mut b[0], 1, low));
    assert_eq!(fx.tasks[low].cpu, 0);
}

#[test]
fn a_better_queued_task_reschedules_instead_of_pushing() {
    let mut fx = pushpull(2);
    let all = CpuMask::first_n(2);
    let low = rt_task(&mut fx, 0, 10, all);
    assert_eq!(fx.pick(0), Some(low));
    rt_task(&mut fx, 0, 20, all);
    let (mut c, rq, o1) = fx.ctx(0);
    assert_eq!(
        o1.rt.pick_push_target(&mut c, rq, 0, None),
        PushTarget::ReschedSelf
    );
}

#[test]
fn pull_takes_the_best_allowed_task_unless_it_would_preempt_at_home() {
    let mut fx = pushpull(2);
    let all = CpuMask::first_n(2);
    let running = rt_task(&mut fx, 0, 80, all);
    let pinned = rt_task(&mut fx, 0, 70, CpuMask::single(0));
    let free = rt_task(&mut fx, 0, 60, all);
    assert_eq!(fx.pick(0), Some(running));
    let (a, b) = fx.rqs.split_at_mut(1);
    let mut c = Ctx {
        now: fx.now,
        hz: HZ,
        ncpus: 2,
        tasks: fx.tasks.view(),
        ops: &mut fx.ops,
        lines: None,
    };
    let out = fx.s.rt.pull_rt_task_from(&mut c, &mut b[0], 1, &mut a[0]);
    assert_eq!(out.moved, 1);
    assert_eq!(
        (fx.tasks[free].cpu, fx.tasks[pinned].cpu),
        (1, 0),
        "RT 70 is pinned; RT 60 comes over"
    );

    // A queued task better than the source's running one is about to run there: leave it.
    let mut fx = pushpull(2);
    let running = rt_task(&mut fx, 0, 30, all);
    assert_eq!(fx.pick(0), Some(running));
    let woken = rt_task(&mut fx, 0, 50, all);
    let _other = rt_task(&mut fx, 0, 20, all);
    let (a, b) = fx.rqs.split_at_mut(1);
    let mut c = Ctx {
        now: fx.now,
        hz: HZ,
        ncpus: 2,
        tasks: fx.tasks.view(),
        ops: &mut fx.ops,
        lines: None,
    };
    assert_eq!(
        fx.s.rt
            .pull_rt_task_from(&mut c, &mut b[0], 1, &mut a[0])
            .moved,
        0
    );
    assert_eq!(fx.tasks[woken].cpu, 0);
}

#[test]
fn passive_balancer_moves_rt_tasks_pushpull_balancer_does_not() {
    for (mode, expect) in [(RtBalance::Passive, 1), (RtBalance::PushPull, 0)] {
        let mut fx = Fx::new(2);
        fx.set_rt_balance(mode);
        let all = CpuMask::first_n(2);
        for p in [10, 20, 30] {
            rt_task(&mut fx, 0, p, all);
        }
        fx.pick(0);
        assert_eq!(fx.move_tasks(1, CpuIdle::Idle, 0).moved, expect, "{mode:?}");
    }
}

// ---- o1:era=2002, the announcement's O(1) (era2002.rs) ----

/// A fixture running the announcement's O(1).
fn fx_2002(ncpus: usize) -> Fx {
    let mut fx = Fx::new(ncpus);
    fx.s.class.era = O1Era::Announcement2002;
    fx
}

#[test]
fn era_2002_timeslices_run_from_10_to_300_ms() {
    // O1-25: MIN_TIMESLICE + (MAX - MIN) * (MAX_PRIO - 1 - static_prio) / (MAX_USER_PRIO - 1).
    let j = Jiffies::new(1000);
    assert_eq!(era2002::task_timeslice(&j, static_prio(-20)), 300);
    assert_eq!(
        era2002::task_timeslice(&j, static_prio(0)),
        10 + 290 * 19 / 39
    );
    assert_eq!(era2002::task_timeslice(&j, static_prio(18)), 10 + 290 / 39);
    // nice +19 is batch: the longest slice.
    assert_eq!(era2002::task_timeslice(&j, static_prio(19)), 300);
    // At HZ=100, in jiffies: 30 / 15 / 7 (nice 10) / 1 (nice 18).
    let j = Jiffies::new(100);
    assert_eq!(era2002::task_timeslice(&j, static_prio(-20)), 30);
    assert_eq!(era2002::task_timeslice(&j, static_prio(0)), 15);
    assert_eq!(era2002::task_timeslice(&j, static_prio(10)), 7);
    assert_eq!(era2002::task_timeslice(&j, static_prio(18)), 1);
}

#[test]
fn era_2002_penalty_is_the_share_of_four_seconds_run() {
    let j = Jiffies::new(HZ);
    let mut fx = fx_2002(1);
    let t = fx.spawn(0, 0);
    let now = 10_500_000_000; // second 10
    let p = &mut fx.tasks[t];
    p.data.hist_second = 10;
    p.data.load_hist = [0; 4];
    assert_eq!(
        era2002::effective_prio(p, now, &j),
        120,
        "no load, no penalty"
    );
    // One full second of the last four: 1000 / 4000 * 10 = 2.5 -> 2 levels.
    p.data.load_hist[(10 % 4) as usize] = 1000;
    assert_eq!(era2002::effective_prio(p, now, &j), 122);
    // Four full seconds: the maximum, 10 levels.
    p.data.load_hist = [1000; 4];
    assert_eq!(era2002::effective_prio(p, now, &j), 130);
    // Bounded relative to static priority, clamped at the lowest priority.
    p.nice = 15;
    assert_eq!(era2002::effective_prio(p, now, &j), 139);
    // Two seconds later two slots have been cleared; four seconds later all of them.
    p.nice = 0;
    assert_eq!(era2002::effective_prio(p, 12_000_000_000, &j), 125);
    assert_eq!(era2002::effective_prio(p, 14_000_000_000, &j), 120);
}

#[test]
fn era_2002_ticks_fill_the_ring_and_sleep_earns_nothing() {
    let mut fx = fx_2002(1);
    let a = fx.spawn(0, 0);
    assert_eq!(fx.pick(0), Some(a));
    for _ in 0..100 {
        fx.tick(0);
    }
    let ran: u16 = fx.tasks[a].data.load_hist.iter().sum();
    assert_eq!(ran, 100, "each tick counted once");
    // It sleeps 10 s and wakes: its history has rolled out, and no bonus beyond static.
    let (mut c, rq, o1) = fx.ctx(0);
    o1.dequeue(&mut c, rq, 0, a, DequeueKind::Sleep);
    rq.set_curr(0, None);
    fx.now += 10_000_000_000;
    let (mut c, rq, o1) = fx.ctx(0);
    o1.enqueue(
        &mut c,
        rq,
        0,
        a,
        EnqueueKind::Wakeup {
            uninterruptible: false,
            sync: false,
            irq: false,
        },
    );
    assert_eq!(fx.tasks[a].data.prio, 120, "punish, don't boost");
    assert_eq!(fx.tasks[a].data.sleep_avg, 0);
}

#[test]
fn era_2002_an_expired_slice_always_goes_to_the_expired_array() {
    let mut fx = fx_2002(1);
    let a = fx.spawn(0, 0);
    let _b = fx.spawn(0, 0);
    assert_eq!(fx.pick(0), Some(a));
    // Whatever its sleep history, a task that used its slice waits for the array switch
    // (2.6's interactive reinsertion would keep it in the active array).
    fx.tasks[a].data.sleep_avg = Jiffies::new(HZ).ns_max_sleep_avg();
    fx.tasks[a].data.time_slice = 1;
    assert!(fx.tick(0));
    assert_eq!(fx.tasks[a].data.array, Some(1 - fx.rqs[0].active as u8));
    assert_eq!(
        fx.tasks[a].data.time_slice, 151,
        "refilled with this era's slice"
    );
    // No timeslice-granularity round robin either: a running slice is not cut.
    let b = fx.pick(0).unwrap();
    for _ in 0..140 {
        assert!(!fx.tick(0), "runs its whole slice");
    }
    assert_eq!(fx.rqs[0].curr(), Some(b));
}

#[test]
fn era_2002_yield_lowers_the_priority_by_one_in_the_same_array() {
    let mut fx = fx_2002(1);
    let a = fx.spawn(0, 0);
    let b = fx.spawn(0, 0);
    let hi = fx.spawn(0, -5);
    assert_eq!(fx.pick(0), Some(hi));
    // 115 -> 116: still ahead of the nice 0 tasks, so it runs again.
    let (mut c, rq, o1) = fx.ctx(0);
    assert!(o1.yield_task(&mut c, rq, 0, hi));
    assert_eq!(fx.tasks[hi].data.prio, 116);
    assert_eq!(fx.tasks[hi].data.array, Some(fx.rqs[0].active as u8));
    assert_eq!(fx.pick(0), Some(hi));
    // A nice 0 task that yields drops to 121, behind its equal at 120.
    let (mut c, rq, o1) = fx.ctx(0);
    o1.dequeue(&mut c, rq, 0, hi, DequeueKind::Sleep);
    rq.set_curr(0, None);
    assert_eq!(fx.pick(0), Some(a));
    let (mut c, rq, o1) = fx.ctx(0);
    o1.yield_task(&mut c, rq, 0, a);
    assert_eq!(fx.tasks[a].data.prio, 121);
    assert_eq!(fx.pick(0), Some(b));
}

/// The balancer's walk, whose order decides which tasks go: the expired array first
/// (cache-cold, not about to run), then the RT tasks (under passive RT balancing; in 2.6.11
/// they sat at the top of the active array), best priority first, then the active array, each
/// list from its tail. Pinned one move at a time, alternating between two pullers so that the
/// source stays the busier.
#[test]
fn balancer_walks_expired_then_rt_then_active() {
    let mut fx = Fx::new(3);
    let all = CpuMask::first_n(3);
    let running = fx.spawn(0, 0);
    assert_eq!(fx.pick(0), Some(running));
    let expired = fx.spawn(0, 0);
    {
        let (mut c, rq, o1) = fx.ctx(0);
        let from = o1.class.dequeue_array(rq, &mut c.tasks, expired, c.ops);
        o1.class
            .enqueue_array(rq, &mut c.tasks, expired, 1 - from, c.ops);
    }
    let rt_low = rt_task(&mut fx, 0, 10, all);
    let rt_high = rt_task(&mut fx, 0, 20, all);
    let _active_head = fx.spawn(0, 0);
    let active_tail = fx.spawn(0, 0);
    // Everything cache-cold for a busy puller.
    fx.now += 10_000_000;
    let mut order = Vec::new();
    for puller in [1, 2, 1, 2] {
        let out = fx.move_tasks(puller, CpuIdle::NotIdle, 2);
        assert_eq!(out.moved, 1);
        order.push(
            [expired, rt_high, rt_low, active_tail]
                .into_iter()
                .find(|&t| fx.tasks[t].cpu == puller && !order.contains(&t))
                .expect("a known task moved"),
        );
    }
    assert_eq!(order, [expired, rt_high, rt_low, active_tail]);
}

proptest::proptest! {
    /// `Recip::div` is `/` for every dividend and divisor, the jiffy constants of the usual
    /// HZ values among them.
    #[test]
    fn reciprocal_division_is_exact(n in proptest::prelude::any::<u64>(), d in 1u64..) {
        proptest::prop_assert_eq!(Recip::new(d).div(n), n / d);
    }
}

/// `put_prev`'s charge divides by the bonus through a table of reciprocals: every entry, and
/// the divisors beyond it (a `sleep_avg` above NS_MAX_SLEEP_AVG), give C's quotient. A wrong
/// entry fails here (golden figures did not catch one).
#[test]
fn the_bonus_division_is_c_s_for_every_bonus() {
    for bonus in 1..=2 * MAX_BONUS as u64 + 3 {
        for n in [
            0,
            1,
            bonus - 1,
            bonus,
            bonus + 1,
            999_999_999,
            1_000_000_000,
            1_234_567_891_234,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(div_by_bonus(n, bonus), n / bonus, "{n} / {bonus}");
        }
    }
    // The charge itself, as 2.6.11 computes it, at several HZ and every sleep_avg step.
    for hz in [100, 250, 300, 1000, 1024] {
        let j = Jiffies::new(hz);
        let max = j.ns_max_sleep_avg();
        for k in 0..=40u64 {
            let sleep_avg = max / 40 * k + k;
            let bonus = j.current_bonus(sleep_avg).max(1) as u64;
            for run in [0, 1, 3_000_000, max] {
                assert_eq!(
                    div_by_bonus(run, bonus),
                    run / bonus,
                    "HZ {hz}, sleep_avg {sleep_avg}"
                );
            }
        }
    }
}

#[test]
fn reciprocal_division_is_exact_at_the_edges() {
    let ds = [
        1,
        2,
        3,
        7,
        10,
        100,
        250,
        1000,
        1_000_000,
        4_000_000,
        10_000_000,
        u64::MAX / 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    for d in ds {
        let r = Recip::new(d);
        for n in [
            0,
            1,
            d - 1,
            d,
            d.saturating_add(1),
            2 * (d / 2),
            u64::MAX - 1,
            u64::MAX,
            999_999_999,
        ] {
            assert_eq!(r.div(n), n / d, "{n} / {d}");
        }
    }
    // The constants O(1) divides by, for HZ 100, 250, 1000: sleep_avg and run times up to
    // NS_MAX_SLEEP_AVG and beyond.
    for hz in [100u32, 250, 1000] {
        let j = Jiffies::new(hz);
        for ns in (0..3_000_000_000u64).step_by(999_983) {
            assert_eq!(j.ns_to_jiffies(ns), (ns / j.tick_ns) as i64);
            assert_eq!(
                j.current_bonus(ns),
                (ns / j.tick_ns) as i64 * MAX_BONUS / j.max_sleep_avg
            );
        }
    }
}
